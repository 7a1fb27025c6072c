"""Milvus 2.4 filter expressions (vecgrid.cluster.proxy.milvus_expr): the plan.Expr shapes Milvus's parser emits,
evaluation by the engine (vecgrid.gpu.filter) against a numpy oracle, agreement with the Feathers query compiler
on random filters, refusals, template values and the caches."""

from __future__ import annotations

import functools
import json
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vecgrid import errors
from vecgrid.cluster.proxy.filters import compile_filter
from vecgrid.cluster.proxy.milvus_expr import compile_expression
from vecgrid.gpu import exprs, jsonkeys
from vecgrid.gpu.filter import evaluate
from vecgrid.proto import common_pb2, plan_pb2, schema_pb2

T = schema_pb2


def _field(fid, name, t, **kw):
    return T.FieldSchema(fieldID=fid, name=name, data_type=t, **kw)


_VARCHAR = [common_pb2.KeyValuePair(key="max_length", value="32")]
SCHEMA = T.CollectionSchema(name="books", enable_dynamic_field=True, fields=[
    _field(100, "id", T.Int64, is_primary_key=True),
    _field(101, "age", T.Int32),
    _field(102, "score", T.Double),
    _field(103, "ratio", T.Float),
    _field(104, "tag", T.VarChar, type_params=_VARCHAR),
    _field(105, "flag", T.Bool),
    _field(106, "meta", T.JSON),
    _field(107, "vec", T.FloatVector, type_params=[common_pb2.KeyValuePair(key="dim", value="4")]),
    _field(108, "arr", T.Array, element_type=T.Int64),
    _field(109, "$meta", T.JSON, is_dynamic=True),
    _field(110, "tiny", T.Int8),
])
STATIC = T.CollectionSchema(name="plain", fields=[
    _field(100, "id", T.Int64, is_primary_key=True),
    _field(101, "age", T.Int32),
    _field(104, "tag", T.VarChar, type_params=_VARCHAR),
])

ID = plan_pb2.ColumnInfo(field_id=100, data_type=T.Int64, is_primary_key=True)
AGE = exprs.column(101, T.Int32)
SCORE = exprs.column(102, T.Double)
TAG = exprs.column(104, T.VarChar)
FLAG = exprs.column(105, T.Bool)
TINY = exprs.column(110, T.Int8)


def key(name: str, field_id: int = 109) -> plan_pb2.ColumnInfo:
    return plan_pb2.ColumnInfo(field_id=field_id, data_type=T.JSON, nested_path=[name])


# --- data: a small random table, with JSON documents for "meta" and the dynamic field --------------

N = 400
rng = np.random.default_rng(2024)
TAGS = np.asarray(["red", "green", "blue", "cyan", "gold", 'say "hi"', "50%", "é"])
COLORS = ["red", "green", "blue", "teal"]


def _json_value(kind: int) -> object:
    return [None, int(rng.integers(-2, 12)), float(rng.integers(0, 24)) / 2, str(int(rng.integers(0, 10))),
            bool(rng.integers(0, 2)), "x" + str(int(rng.integers(0, 3)))][kind]


def _dynamic_doc() -> dict:
    doc: dict = {}
    kind = int(rng.integers(0, 7))
    if kind < 6:  # 6: no "n" at all
        doc["n"] = _json_value(kind)
    c = int(rng.integers(0, 6))
    if c < 4:
        doc["color"] = COLORS[c]
    elif c == 4:
        doc["color"] = int(rng.integers(0, 3))
    return doc


DYN_DOCS = [_dynamic_doc() for _ in range(N)]
META_DOCS = [{"a": _json_value(int(rng.integers(0, 6)))} if i % 5 else {} for i in range(N)]
DATA = {
    "id": np.arange(N, dtype=np.int64) * 3 + 1,
    "age": (np.arange(N) % 97).astype(np.int32),
    "score": np.round(rng.uniform(0, 1, N), 3),
    "ratio": rng.uniform(-1, 1, N).astype(np.float32),
    "tag": TAGS[rng.integers(0, len(TAGS), N)],
    "flag": rng.integers(0, 3, N) == 0,
    "tiny": rng.integers(-128, 128, N).astype(np.int8),
}
IDS = {f.name: f.fieldID for f in SCHEMA.fields}
COLUMNS = {IDS[name]: values for name, values in DATA.items()}
COLUMNS[106] = np.asarray([json.dumps(d) for d in META_DOCS], dtype=object)
COLUMNS[109] = np.asarray([json.dumps(d) for d in DYN_DOCS], dtype=object)


@functools.lru_cache(maxsize=None)
def _json_key(field_id: int, name: str) -> jsonkeys.KeyColumn:
    return jsonkeys.extract(COLUMNS[field_id], name)   # a segment's key cache: parse each key once


def run(expr: plan_pb2.Expr | None) -> np.ndarray:
    if expr is None:
        return np.ones(N, dtype=bool)
    return np.asarray(evaluate(expr, COLUMNS, N, json_keys=_json_key))


def mask_of(text: str, params=None) -> np.ndarray:
    return run(compile_expression(text, SCHEMA, params=params))


def refusal(text: str, schema=SCHEMA, params=None) -> str:
    with pytest.raises(errors.ParameterInvalid) as info:
        compile_expression(text, schema, params=params)
    assert info.value.code == 1100
    return str(info.value)


# --- 1. shapes: what Milvus's parser emits ------------------------------------------------------------

def _value_expr(v: bool) -> plan_pb2.Expr:
    return plan_pb2.Expr(value_expr=plan_pb2.ValueExpr(value=exprs.value(v)))


SHAPES = [
    ("id in [1, 2]", exprs.term(ID, [1, 2])),
    ("id IN [1, 2,]", exprs.term(ID, [1, 2])),
    ("id not in [1, 2]", exprs.not_(exprs.term(ID, [1, 2]))),
    ("id NOT IN [1, 2]", exprs.not_(exprs.term(ID, [1, 2]))),
    ("id in []", exprs.term(ID, [])),
    ("age in [1 + 1, -2]", exprs.term(AGE, [2, -2])),
    ("score in [1, 2.5]", exprs.term(SCORE, [1.0, 2.5])),
    ("tag in ['a', \"b\"]", exprs.term(TAG, ["a", "b"])),
    ("age > 5", exprs.compare(AGE, ">", 5)),
    ("5 < age", exprs.compare(AGE, ">", 5)),
    ("5 >= age", exprs.compare(AGE, "<=", 5)),
    ("age != -5", exprs.compare(AGE, "!=", -5)),
    ("score == 1", exprs.compare(SCORE, "==", 1.0)),
    ("score < .5", exprs.compare(SCORE, "<", 0.5)),
    ("score > 1e-3", exprs.compare(SCORE, ">", 0.001)),
    ('tag == "x"', exprs.compare(TAG, "==", "x")),
    ("tag <= 'x'", exprs.compare(TAG, "<=", "x")),
    ("flag == true", exprs.compare(FLAG, "==", True)),
    ("flag == True", exprs.compare(FLAG, "==", True)),
    ("flag != FALSE", exprs.compare(FLAG, "!=", False)),
    ("1 < age < 5", exprs.between(AGE, 1, 5, False, False)),
    ("1 <= age < 5", exprs.between(AGE, 1, 5, True, False)),
    ("5 > age >= 1", exprs.between(AGE, 1, 5, True, False)),
    ("5 >= age > 1", exprs.between(AGE, 1, 5, False, True)),
    ('"a" <= tag <= "c"', exprs.between(TAG, "a", "c", True, True)),
    ("1 < score < 2", exprs.between(SCORE, 1.0, 2.0, False, False)),
    ("age + 1 == 3", exprs.arith(AGE, "+", 1, "==", 3)),
    ("3 == age + 1", exprs.arith(AGE, "+", 1, "==", 3)),
    ("2 * age > 3", exprs.arith(AGE, "*", 2, ">", 3)),
    ("7 > age * 2", exprs.arith(AGE, "*", 2, "<", 7)),
    ("age - 1 <= 3", exprs.arith(AGE, "-", 1, "<=", 3)),
    ("age / 2 != 3", exprs.arith(AGE, "/", 2, "!=", 3)),
    ("age % 2 == 0", exprs.arith(AGE, "%", 2, "==", 0)),
    ("score * 2 > 1", exprs.arith(SCORE, "*", 2.0, ">", 1.0)),
    ("age + 1.5 == 3", exprs.arith(AGE, "+", 1.5, "==", 3.0)),
    ("age < score", exprs.compare_columns(AGE, "<", SCORE)),
    ("tag == tag", exprs.compare_columns(TAG, "==", TAG)),
    ('tag like "ab%"', exprs.match(TAG, "prefix", "ab")),
    ('tag LIKE "ab%%"', exprs.match(TAG, "prefix", "ab")),
    ('tag like "%ab"', exprs.match(TAG, "postfix", "ab")),
    ('tag like "%a%"', exprs.match(TAG, "like", "%a%")),
    ('tag like "a_c%"', exprs.match(TAG, "like", "a_c%")),
    ('tag like "abc"', exprs.compare(TAG, "==", "abc")),
    ('tag like "%"', exprs.match(TAG, "prefix", "")),
    (r'tag like "50\\%"', exprs.compare(TAG, "==", "50%")),         # \% escapes the wildcard
    (r'tag like "50\\%%"', exprs.match(TAG, "prefix", "50%")),
    ('meta["a"] == 3', exprs.compare(key("a", 106), "==", 3)),
    ("meta['a'] in [1, \"x\", true]", exprs.term(key("a", 106), [1, "x", True])),
    ('$meta["color"] == "red"', exprs.compare(key("color"), "==", "red")),
    ('color == "red"', exprs.compare(key("color"), "==", "red")),
    ("n > 2.5", exprs.compare(key("n"), ">", 2.5)),
    ("1 <= n < 5", exprs.between(key("n"), 1, 5, True, False)),
    ('color like "r%"', exprs.match(key("color"), "prefix", "r")),
    ("age > 1 and age < 5", exprs.and_(exprs.compare(AGE, ">", 1), exprs.compare(AGE, "<", 5))),
    ("age > 1 && age < 5", exprs.and_(exprs.compare(AGE, ">", 1), exprs.compare(AGE, "<", 5))),
    ("age > 1 AND age < 5", exprs.and_(exprs.compare(AGE, ">", 1), exprs.compare(AGE, "<", 5))),
    ("age < 1 or age > 5", exprs.or_(exprs.compare(AGE, "<", 1), exprs.compare(AGE, ">", 5))),
    ("age < 1 || age > 5", exprs.or_(exprs.compare(AGE, "<", 1), exprs.compare(AGE, ">", 5))),
    ("age < 1 OR age > 5", exprs.or_(exprs.compare(AGE, "<", 1), exprs.compare(AGE, ">", 5))),
    ("age > 1 and age < 5 or id == 3",
     exprs.or_(exprs.and_(exprs.compare(AGE, ">", 1), exprs.compare(AGE, "<", 5)), exprs.compare(ID, "==", 3))),
    ("age > 1 and (age < 5 or id == 3)",
     exprs.and_(exprs.compare(AGE, ">", 1), exprs.or_(exprs.compare(AGE, "<", 5), exprs.compare(ID, "==", 3)))),
    ("id == 1 or id == 2 or id == 3",
     exprs.or_(exprs.or_(exprs.compare(ID, "==", 1), exprs.compare(ID, "==", 2)), exprs.compare(ID, "==", 3))),
    ("not (age > 1)", exprs.not_(exprs.compare(AGE, ">", 1))),
    ("!(age > 1)", exprs.not_(exprs.compare(AGE, ">", 1))),
    ("NOT (tag like 'a%')", exprs.not_(exprs.match(TAG, "prefix", "a"))),
    ("not tag like 'a%'", exprs.not_(exprs.match(TAG, "prefix", "a"))),    # like binds tighter than not
    ("age == 0x1F", exprs.compare(AGE, "==", 31)),
    ("age == 017", exprs.compare(AGE, "==", 15)),                          # a leading 0 is octal, as in Go
    ("age == 0b101", exprs.compare(AGE, "==", 5)),
    ("age == 2 + 3 * 4", exprs.compare(AGE, "==", 14)),                   # constants are folded
    ("age == -(3)", exprs.compare(AGE, "==", -3)),
    ("age == -7 / 2", exprs.compare(AGE, "==", -3)),                      # Go: truncated toward zero
    ("age == -7 % 3", exprs.compare(AGE, "==", -1)),
    ("score == 2 ** 3", exprs.compare(SCORE, "==", 8.0)),
    (r'tag == "a\"b"', exprs.compare(TAG, "==", 'a"b')),
    (r"tag == 'it\'s'", exprs.compare(TAG, "==", "it's")),
    (r'tag == "\u00e9\x41\101\t"', exprs.compare(TAG, "==", "éAA\t")),
    ('tag == "é"', exprs.compare(TAG, "==", "é")),
    ("1 < 2", _value_expr(True)),
    ("1 > 2 or 2 > 3", _value_expr(False)),
]


@pytest.mark.parametrize("text,expected", SHAPES, ids=[t for t, _ in SHAPES])
def test_shapes_are_milvus_parser_shapes(text, expected):
    assert compile_expression(text, SCHEMA) == expected


def test_long_and_or_chains_are_balanced_trees():
    def depth(e: plan_pb2.Expr) -> int:
        if e.WhichOneof("expr") == "binary_expr":
            return 1 + max(depth(e.binary_expr.left), depth(e.binary_expr.right))
        return 0

    expr = compile_expression(" or ".join(f"id == {i}" for i in range(2000)), SCHEMA)
    assert depth(expr) <= 16                                   # not 1999
    plan = plan_pb2.PlanNode(predicates=expr)                    # within protobuf's nesting limit
    assert plan_pb2.PlanNode.FromString(plan.SerializeToString()) == plan
    np.testing.assert_array_equal(run(expr), np.isin(DATA["id"], np.arange(2000)))


def test_big_in_lists_compile_quickly():
    ids = list(range(0, 150_000, 3))
    start = time.perf_counter()
    expr = compile_expression(f"id in {ids}", SCHEMA)
    assert time.perf_counter() - start < 2.0
    assert len(expr.term_expr.values) == len(ids) and expr.term_expr.values[-1].int64_val == ids[-1]


# --- 2. evaluation by the engine, against numpy ---------------------------------------------------------

d = DATA


def _key_mask(docs, name, pred) -> np.ndarray:
    return np.asarray([pred(doc.get(name)) for doc in docs])


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _str(v) -> bool:
    return isinstance(v, str)


CASES = [
    ("age > 50", d["age"] > 50),
    ("50 < age", d["age"] > 50),
    ("age <= 10 and tag == 'red'", (d["age"] <= 10) & (d["tag"] == "red")),
    ("id in [1, 4, 7, 1000]", np.isin(d["id"], [1, 4, 7, 1000])),
    ("id not in [1, 4]", ~np.isin(d["id"], [1, 4])),
    ("age in []", np.zeros(N, bool)),
    ("age not in []", np.ones(N, bool)),
    ("10 < age <= 20", (d["age"] > 10) & (d["age"] <= 20)),
    ("20 >= age > 10", (d["age"] > 10) & (d["age"] <= 20)),
    ('"b" <= tag < "d"', (d["tag"] >= "b") & (d["tag"] < "d")),
    ("0.25 < score < 0.75", (d["score"] > 0.25) & (d["score"] < 0.75)),
    ("tiny > 1000", np.zeros(N, bool)),
    ("tiny in [-128, 127, 500]", np.isin(d["tiny"], [-128, 127])),
    ("age + 3 == 10", d["age"] + 3 == 10),
    ("age % 5 == 2", d["age"] % 5 == 2),
    ("age * 2 >= 100", d["age"] * 2 >= 100),
    ("age / 3 == 4", d["age"] // 3 == 4),
    ("tiny / 3 == -2", np.trunc(d["tiny"] / 3) == -2),                 # C++ division truncates toward zero
    ("tiny % 4 == -1", np.fmod(d["tiny"], 4) == -1),                    # and % keeps the dividend's sign
    ("score * 2 > 1", d["score"] * 2 > 1),
    ("age + 0.5 > 10", d["age"] + 0.5 > 10),
    ("age < tiny", d["age"] < d["tiny"]),
    ("score > ratio", d["score"] > d["ratio"]),
    ("tag like 'g%'", np.char.startswith(d["tag"], "g")),
    ("tag like '%n'", np.char.endswith(d["tag"], "n")),
    ("tag like '%e%'", np.char.find(d["tag"], "e") >= 0),
    ("tag like 'r_d'", d["tag"] == "red"),
    (r'tag like "50\\%"', d["tag"] == "50%"),
    ("tag like '%'", np.ones(N, bool)),
    (r'tag == "say \"hi\""', d["tag"] == 'say "hi"'),
    ("tag == '\\u00e9'", d["tag"] == "é"),
    ("flag == true", d["flag"]),
    ("flag != true", ~d["flag"]),
    ("flag == false", ~d["flag"]),
    ("not (age > 50)", d["age"] <= 50),
    ("!(tag in ['red', 'blue'])", ~np.isin(d["tag"], ["red", "blue"])),
    ("age > 10 and (tag == 'red' or flag == true)", (d["age"] > 10) & ((d["tag"] == "red") | d["flag"])),
    ("age < 5 or age > 90 and flag == true", (d["age"] < 5) | ((d["age"] > 90) & d["flag"])),
    (" or ".join(f"id == {i}" for i in range(1, 90, 4)), np.isin(d["id"], np.arange(1, 90, 4))),
    (" and ".join(f"id != {i}" for i in range(1, 90, 3)), ~np.isin(d["id"], np.arange(1, 90, 3))),
    ("1 < 2", np.ones(N, bool)),
    ("true and false", np.zeros(N, bool)),
    # keys of the dynamic field and of a JSON field: a row lacking the key, or holding another kind of
    # value, does not match; != and not in are negations and do
    ("n > 3", _key_mask(DYN_DOCS, "n", lambda v: _num(v) and v > 3)),
    ("n == 1", _key_mask(DYN_DOCS, "n", lambda v: _num(v) and v == 1)),
    ("n != 1", ~_key_mask(DYN_DOCS, "n", lambda v: _num(v) and v == 1)),
    ('n == "3"', _key_mask(DYN_DOCS, "n", lambda v: v == "3")),
    ("n == true", _key_mask(DYN_DOCS, "n", lambda v: v is True)),
    ("$meta['n'] <= 2.5", _key_mask(DYN_DOCS, "n", lambda v: _num(v) and v <= 2.5)),
    ("1 < n <= 5", _key_mask(DYN_DOCS, "n", lambda v: _num(v) and 1 < v <= 5)),
    ('"2" <= n < "5"', _key_mask(DYN_DOCS, "n", lambda v: _str(v) and "2" <= v < "5")),
    ("n in [1, '3', 4.5]", _key_mask(DYN_DOCS, "n", lambda v: (_num(v) and v in (1, 4.5)) or v == "3")),
    ("color != 'red'", ~_key_mask(DYN_DOCS, "color", lambda v: v == "red")),
    ("color in ['red', 'blue']", _key_mask(DYN_DOCS, "color", lambda v: v in ("red", "blue"))),
    ("color not in ['red']", ~_key_mask(DYN_DOCS, "color", lambda v: v == "red")),
    ("color like 'b%'", _key_mask(DYN_DOCS, "color", lambda v: _str(v) and v.startswith("b"))),
    ("color like '%e%'", _key_mask(DYN_DOCS, "color", lambda v: _str(v) and "e" in v)),
    ("color == 1 and age < 50", _key_mask(DYN_DOCS, "color", lambda v: _num(v) and v == 1) & (d["age"] < 50)),
    ('meta["a"] == 3', _key_mask(META_DOCS, "a", lambda v: _num(v) and v == 3)),
    ("meta['a'] like 'x%'", _key_mask(META_DOCS, "a", lambda v: _str(v) and v.startswith("x"))),
    ("meta['a'] > 4", _key_mask(META_DOCS, "a", lambda v: _num(v) and v > 4)),
]


@pytest.mark.parametrize("text,expected", CASES, ids=[t[:60] for t, _ in CASES])
def test_engine_evaluation_matches_numpy(text, expected):
    np.testing.assert_array_equal(mask_of(text), expected)


def test_empty_and_blank_expressions_select_every_row():
    assert compile_expression("", SCHEMA) is None
    assert compile_expression("  \t\n", SCHEMA) is None
    assert compile_expression(None, SCHEMA) is None


# --- 3. property: a random filter means the same as a Milvus expression and as a Feathers query ---------

SCORES = sorted(set(DATA["score"].tolist()))[:40:4] + [0.0, 0.5, 1.0]
FIELD_VALUES = {
    "age": st.integers(-3, 100),
    "tiny": st.integers(-130, 130),
    "id": st.sampled_from(DATA["id"][:30].tolist() + [0, 2, 5000]),
    "score": st.sampled_from(SCORES),
    "tag": st.sampled_from(TAGS.tolist() + ["zzz", ""]),
    "flag": st.booleans(),
    "n": st.one_of(st.integers(-2, 12), st.sampled_from([0.5, 2.5, 4.5]), st.sampled_from(["3", "7", "x1"])),
    "color": st.one_of(st.sampled_from(COLORS + ["pink"]), st.integers(0, 2)),
}
KEYS = ("n", "color")                 # keys of the dynamic field: JSON paths on $meta
ORDERED = ("age", "tiny", "id", "score", "tag")
LIKE_PATTERNS = ["g%", "%n", "%e%", "r_d", "red", "%", "b%e", "%%", r"50\%"]
_NEGATED = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_FEATHERS_OP = {"!=": "$ne", "<": "$lt", "<=": "$lte", ">": "$gt", ">=": "$gte"}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


# Strategies are built once: building one inside a draw costs hypothesis a validation per example.
_NAMES = st.sampled_from(list(FIELD_VALUES))
_ALL_OPS = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
_EQ_OPS = st.sampled_from(["==", "!="])
_FLAGS = st.booleans()
_LISTS = {name: st.lists(values, max_size=4) for name, values in FIELD_VALUES.items()}
_RANGE_BOUNDS = {name: st.lists(FIELD_VALUES[name], min_size=2, max_size=2, unique=True)
                 for name in ("age", "tiny", "score", "tag")}
_RANGE_BOUNDS["n"] = st.one_of(  # a range on a JSON key: two numbers or two strings
    st.lists(st.integers(-2, 12), min_size=2, max_size=2, unique=True),
    st.lists(st.sampled_from(["1", "3", "5", "7", "x"]), min_size=2, max_size=2, unique=True))
_RANGE_NAMES = st.sampled_from(list(_RANGE_BOUNDS))
_NOTS = st.sampled_from(["not ", "NOT ", "!"])


@st.composite
def _comparison(draw):
    name = draw(_NAMES)
    value = draw(FIELD_VALUES[name])
    ordered = name in ORDERED or (name in KEYS and not isinstance(value, bool))
    return ("cmp", name, draw(_ALL_OPS if ordered else _EQ_OPS), value, draw(_FLAGS))


@st.composite
def _membership(draw):
    name = draw(_NAMES)
    return ("in", name, draw(_LISTS[name]), draw(_FLAGS))


@st.composite
def _range(draw):
    name = draw(_RANGE_NAMES)
    lo, hi = sorted(draw(_RANGE_BOUNDS[name]))
    return ("range", name, lo, draw(_FLAGS), hi, draw(_FLAGS), draw(_FLAGS))


_LIKES = st.tuples(st.just("like"), st.sampled_from(["tag", "color"]), st.sampled_from(LIKE_PATTERNS))
_LEAVES = st.one_of(_comparison(), _membership(), _range(), _LIKES)


def _negatable(node) -> bool:
    """Whether the Feathers syntax (which has no $not) can say ``not node``: complements of comparisons on
    fields, of ==/!= anywhere, of in/not in; not of like or of ordered comparisons on JSON keys."""
    return node[0] == "in" or (node[0] == "cmp" and (node[1] not in KEYS or node[2] in ("==", "!=")))


@st.composite
def _leaf(draw):
    node = draw(_LEAVES)
    if _negatable(node) and not draw(st.integers(0, 3)):
        return ("not", node, draw(_NOTS))
    return node


FILTERS = st.recursive(
    _leaf(),
    lambda children: st.tuples(st.sampled_from(["and", "or"]), st.lists(children, min_size=2, max_size=3),
                               st.sampled_from([0, 1, 2])),
    max_leaves=8)


def _literal(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)          # JSON's escapes are Go's
    return repr(v)


def milvus(node) -> str:
    kind = node[0]
    if kind == "cmp":
        _, name, op, value, flipped = node
        return f"{_literal(value)} {_FLIPPED[op]} {name}" if flipped else f"{name} {op} {_literal(value)}"
    if kind == "in":
        return f"{node[1]} {'not in' if node[3] else 'in'} [{', '.join(_literal(v) for v in node[2])}]"
    if kind == "range":
        _, name, lo, lo_incl, hi, hi_incl, reverse = node
        if reverse:
            return f"{_literal(hi)} {'>=' if hi_incl else '>'} {name} {'>=' if lo_incl else '>'} {_literal(lo)}"
        return f"{_literal(lo)} {'<=' if lo_incl else '<'} {name} {'<=' if hi_incl else '<'} {_literal(hi)}"
    if kind == "like":
        return f"{node[1]} like {_literal(node[2])}"
    if kind == "not":
        return f"{node[2]}({milvus(node[1])})"
    word = {"and": ["and", "AND", "&&"], "or": ["or", "OR", "||"]}[kind][node[2]]
    return f" {word} ".join(f"({milvus(child)})" for child in node[1])


def feathers(node, negate: bool = False) -> dict:
    kind = node[0]
    if kind == "cmp":
        _, name, op, value, _ = node
        op = _NEGATED[op] if negate else op
        return {name: value} if op == "==" else {name: {_FEATHERS_OP[op]: value}}
    if kind == "in":
        return {node[1]: {"$nin" if node[3] != negate else "$in": node[2]}}
    if kind == "not":
        return feathers(node[1], not negate)
    assert not negate
    if kind == "range":
        _, name, lo, lo_incl, hi, hi_incl, _ = node
        return {name: {"$gte" if lo_incl else "$gt": lo, "$lte" if hi_incl else "$lt": hi}}
    if kind == "like":
        return {node[1]: {"$like": node[2]}}
    return {f"${kind}": [feathers(child) for child in node[1]]}


@settings(max_examples=200, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(FILTERS)
def test_milvus_expressions_select_the_rows_of_the_same_feathers_query(node):
    text = milvus(node)
    expected = run(compile_filter(feathers(node), SCHEMA))
    np.testing.assert_array_equal(mask_of(text), expected, err_msg=text)


# --- 4. refusals ----------------------------------------------------------------------------------------

REFUSALS = [
    # names and types
    ("nope > 1", STATIC, "field nope not exist"),
    ("vec > 1", SCHEMA, "field vec is a vector field (FloatVector)"),
    ('age == "x"', SCHEMA, "comparisons between Int32 and VarChar are not supported"),
    ("tag > 1", SCHEMA, "comparisons between VarChar and Int64 are not supported"),
    ("flag == 1", SCHEMA, "comparisons between Bool and Int64 are not supported"),
    ("age > 1.5", SCHEMA, "cannot cast value to Int32, value: 1.5"),
    ("age * 2 == 3.5", SCHEMA, "cannot cast value to Int64, value: 3.5"),
    ("age in [1, 2.5]", SCHEMA, "value '2.5' in list cannot be casted to Int32"),
    ("tag in ['a', 1]", SCHEMA, "value '1' in list cannot be casted to VarChar"),
    ("age like 'a%'", SCHEMA, "like operation on non-string or no-json field is unsupported"),
    ("age like 1", SCHEMA, "syntax error"),
    # syntax
    ("age >", SCHEMA, "syntax error: unexpected end of expression"),
    ("age > > 1", SCHEMA, "syntax error at column 7: unexpected '>'"),
    ("age = 1", SCHEMA, "syntax error at column 5: unexpected character '='"),
    ("age > 1 And age < 2", SCHEMA, "syntax error at column 9: unexpected 'And'"),
    ('tag == "abc', SCHEMA, "syntax error"),
    ("age in [1, 2", SCHEMA, "syntax error"),
    ("(age > 1", SCHEMA, "unexpected end of expression"),
    ("age == 09", SCHEMA, "syntax error"),
    ("age > 1 age < 2", SCHEMA, "syntax error"),
    ("age == 99999999999999999999", SCHEMA, "integer 99999999999999999999 is out of the Int64 range"),
    ("id in [9223372036854775808]", SCHEMA, "out of the Int64 range"),
    ("score > 1e999", SCHEMA, "out of range"),
    (r'tag == "\q"', SCHEMA, r"invalid escape \q"),
    # what the engine cannot evaluate
    ('exists meta["a"]', SCHEMA, "exists is not supported"),
    ("json_contains(meta['a'], 1)", SCHEMA, "json_contains is not supported"),
    ("JSON_CONTAINS_ALL(meta['a'], [1])", SCHEMA, "json_contains_all is not supported"),
    ("json_contains_any(color, [1, 2])", SCHEMA, "json_contains_any is not supported"),
    ("array_contains(arr, 1)", SCHEMA, "array_contains is not supported"),
    ("array_contains_all(arr, [1])", SCHEMA, "array_contains_all is not supported"),
    ("array_contains_any(arr, [1])", SCHEMA, "array_contains_any is not supported"),
    ("array_length(arr) == 2", SCHEMA, "array_length is not supported"),
    ("arr == 1", SCHEMA, "Array field arr is not supported"),
    ("arr[0] == 1", SCHEMA, "Array field arr is not supported"),
    ('meta["a"]["b"] == 1', SCHEMA, 'JSON path meta["a"]["b"] (2 keys) is not supported'),
    ('color["b"] == 1', SCHEMA, 'JSON path color["b"] (2 keys) is not supported'),
    ("meta[0] == 1", SCHEMA, "an array index in JSON path meta[0] is not supported"),
    ("meta == 1", SCHEMA, "JSON field meta must be filtered by a key"),
    ("$meta == 1", SCHEMA, "JSON field $meta must be filtered by a key"),
    ('tag["a"] == 1', SCHEMA, "VarChar data type not supported accessed with []"),
    ('meta["a"] + 1 == 2', SCHEMA, 'arithmetic on JSON key meta["a"] is not supported'),
    ("n * 2 > 1", SCHEMA, "arithmetic on JSON key n is not supported"),
    ('meta["a"] < age', SCHEMA, 'comparing JSON key meta["a"] with another field is not supported'),
    ("color == [1, 2]", SCHEMA, "comparing JSON key color with a list is not supported"),
    ("color in [[1], 2]", SCHEMA, "a list inside the values of 'in' on JSON key color is not supported"),
    ("1 < n < 'x'", SCHEMA, "needs two numbers or two strings"),
    ("false < n < true", SCHEMA, "takes numbers or strings"),
    ("age ** 2 == 4", SCHEMA, "power can only apply on constants"),
    ("age == 2 ** 3", SCHEMA, "cannot cast value to Int32, value: 8.0"),      # ** folds to a double
    ("(age + 1) * 2 == 4", SCHEMA, "complicated arithmetic operations are not supported"),
    ("age + tiny == 3", SCHEMA, "arithmetic operations between multiple fields"),
    ("age + 1 == tiny", SCHEMA, "only comparison between two fields is supported"),
    ("2 - age == 1", SCHEMA, "a field on the right of '-' is not supported"),
    ("score % 2 == 1", SCHEMA, "modulo can only apply on integer types"),
    ("age % 1.5 == 1", SCHEMA, "modulo can only apply on integer types"),
    ("tag + 1 == 2", SCHEMA, "'+' can only be used between integer or floating or json field expressions"),
    ("age / 0 == 1", SCHEMA, "division by zero"),
    ("age == 1 / 0", SCHEMA, "cannot divide by zero"),
    ("age >> 1 == 0", SCHEMA, "shift (>>) is not supported"),
    ("age & 1 == 1", SCHEMA, "bitwise and (&) is not supported"),
    ("age | 1 == 1", SCHEMA, "bitwise or (|) is not supported"),
    ("age ^ 1 == 1", SCHEMA, "bitwise xor (^) is not supported"),
    ("~age == 1", SCHEMA, "bitwise not (~) is not supported"),
    ("-age == 1", SCHEMA, "unary minus on a field is not supported"),
    # not predicates, misplaced operands
    ("flag", SCHEMA, "predicate is not a boolean expression: flag, data type: Bool"),
    ("age", SCHEMA, "predicate is not a boolean expression: age, data type: Int32"),
    ("true", SCHEMA, "predicate is not a boolean expression: true, data type: Bool"),
    ("age + 1", SCHEMA, "predicate is not a boolean expression: age + 1, data type: Int64"),
    ("flag and age > 1", SCHEMA, "'and' can only be used between boolean expressions"),
    ("age > 1 or 1 < 2", SCHEMA, "'or' can only be used between boolean expressions"),
    ("not age == 1", SCHEMA, "not op can only be applied on boolean expression"),       # not binds tighter
    ("not age in [1]", SCHEMA, "not op can only be applied on boolean expression"),
    ("1 in [1]", SCHEMA, "'term' can only be used on non-const expression"),
    ("age + 1 in [1]", SCHEMA, "'term' can only be used on single field"),
    ("age in 1", SCHEMA, "the right-hand side of 'in' must be a list"),
    ("age in [tiny]", SCHEMA, "array element type must be generic value"),
    ("5 < age < 1", SCHEMA, "invalid range: lowerbound is greater than upperbound"),
    ("1 < age < 1", SCHEMA, "invalid range: lowerbound is greater than upperbound"),
    ("1 < flag < 3", SCHEMA, "invalid range operations on boolean expr"),
    ("'a' < age < 'c'", SCHEMA, "invalid range operations on Int32 field age"),
    ("1 < age < tiny", SCHEMA, "upperbound cannot be a non-const expression"),
    ("(age > 1) == true", SCHEMA, "a boolean expression cannot be compared with a value"),
    ("'a' == 1", SCHEMA, "comparison operations cannot be applied to two incompatible operands"),
    ("age == {x}", SCHEMA, "the value of expression template variable name {x} is not found"),
]


@pytest.mark.parametrize("text,schema,needle", REFUSALS, ids=[t for t, _, _ in REFUSALS])
def test_refusals_are_parameter_invalid_naming_the_problem(text, schema, needle):
    message = refusal(text, schema)
    assert needle in message, message
    assert "failed to create query plan: " in message


def test_parse_failures_use_milvus_wording():
    assert refusal("exists meta['a']") == ("invalid parameter: failed to create query plan: cannot parse expression: "
                                           "exists meta['a'], error: exists is not supported: exists meta['a']")


def test_the_not_a_predicate_messages_suggest_the_fix():
    assert "flag == true" in refusal("flag")
    assert "flag == true" in refusal("flag and age > 1")
    assert "not (" in refusal("not age == 1")


def test_deep_nesting_is_refused_not_crashed():
    assert "nested too deeply" in refusal("(" * 1200 + "age > 1" + ")" * 1200)
    assert "nested too deeply" in refusal("not (" * 80 + "age > 1" + ")" * 80)


def test_a_filter_must_be_text():
    with pytest.raises(errors.ParameterInvalid, match="a filter expression is a string"):
        compile_expression(b"age > 1", SCHEMA)


# --- 5. template values ----------------------------------------------------------------------------------

TEMPLATES = [
    ("tag == {t}", {"t": "red"}, 'tag == "red"'),
    ("id in {ids}", {"ids": [1, 4, 7]}, "id in [1, 4, 7]"),
    ("id not in {ids}", {"ids": (1, 4)}, "id not in [1, 4]"),
    ("{lo} < age <= {hi}", {"lo": 10, "hi": 20}, "10 < age <= 20"),
    ("score > {x}", {"x": 1}, "score > 1.0"),
    ("tag like {p}", {"p": "g%"}, 'tag like "g%"'),
    ("age + {k} == {v}", {"k": 1, "v": 3}, "age + 1 == 3"),
    ("color in {c} and flag == {f}", {"c": ["red", 1], "f": True}, "color in ['red', 1] and flag == true"),
    ("age == {a}", {"a": np.int64(7)}, "age == 7"),
    ("id in {ids}", {"ids": np.asarray([1, 4])}, "id in [1, 4]"),
    ("age in {none}", {"none": []}, "age in []"),
]


@pytest.mark.parametrize("text,params,literal", TEMPLATES, ids=[t for t, _, _ in TEMPLATES])
def test_template_values_compile_like_literals(text, params, literal):
    assert compile_expression(text, SCHEMA, params=params) == compile_expression(literal, SCHEMA)


def test_template_values_are_bound_per_call():
    assert compile_expression("age == {a}", SCHEMA, params={"a": 1}) == exprs.compare(AGE, "==", 1)
    assert compile_expression("age == {a}", SCHEMA, params={"a": 2}) == exprs.compare(AGE, "==", 2)
    np.testing.assert_array_equal(mask_of("id in {ids}", params={"ids": [1, 4]}), np.isin(d["id"], [1, 4]))


@pytest.mark.parametrize("text,params,needle", [
    ("tag == {t}", None, "template variable name {t} is not found"),
    ("tag == {t}", {"other": 1}, "template variable name {t} is not found"),
    ("age == {a}", {"a": [1, 2]}, "cannot cast value to Int32, value: [1, 2]"),
    ("age in {a}", {"a": 3}, "the right-hand side of 'in' must be a list"),
    ("age == {a}", {"a": "3"}, "comparisons between Int32 and VarChar are not supported"),
    ("age == {a}", {"a": {"x": 1}}, "template variable {a} has a value of type dict"),
    ("age == {a}", {"a": None}, "template variable {a} has a value of type NoneType"),
    ("age == {a}", {"a": 1 << 70}, "out of the Int64 range"),
    ("score == {a}", {"a": float("nan")}, "compares with nothing"),
    ("tag like {p}", {"p": 1}, "the pattern of like must be a string"),
])
def test_bad_template_values_are_refused(text, params, needle):
    assert needle in refusal(text, params=params)


# --- caches ----------------------------------------------------------------------------------------------

def test_cached_results_are_independent_copies():
    first = compile_expression("age > 5", SCHEMA)
    first.unary_range_expr.value.int64_val = 99
    second = compile_expression("age > 5", SCHEMA)
    assert second == exprs.compare(AGE, ">", 5) and second is not first


def test_the_cache_is_keyed_on_the_schema():
    assert compile_expression("age > 5", STATIC) == exprs.compare(AGE, ">", 5)
    retyped = T.CollectionSchema(name="plain", fields=[_field(101, "age", T.Double)])
    assert compile_expression("age > 5", retyped) == exprs.compare(exprs.column(101, T.Double), ">", 5.0)
    assert "field nope not exist" in refusal("nope == 1", STATIC)
    assert compile_expression("nope == 1", SCHEMA) == exprs.compare(key("nope"), "==", 1)


def test_cached_compiles_are_cheap():
    text = 'age > 5 and tag == "x"'
    compile_expression(text, SCHEMA)
    start = time.perf_counter()
    for _ in range(2000):
        compile_expression(text, SCHEMA)
    assert (time.perf_counter() - start) / 2000 < 100e-6
