"""REST-seed query objects compiled to plan.Expr (vecgrid.cluster.proxy.filters), evaluated by the engine's own
filter evaluator (vecgrid.gpu.filter) and compared with numpy; every refusal has a clear error."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.cluster.proxy.filters import coerce_dynamic, compile_filter, split_query
from vecgrid.gpu.filter import evaluate
from vecgrid.proto import common_pb2, plan_pb2, schema_pb2

N = 600
rng = np.random.default_rng(11)
TAGS = np.asarray(["red", "green", "blue", "cyan", "gold"])


def _field(fid, name, t, **kw):
    return schema_pb2.FieldSchema(fieldID=fid, name=name, data_type=t, **kw)


SCHEMA = schema_pb2.CollectionSchema(name="things", fields=[
    _field(100, "pk", schema_pb2.Int64, is_primary_key=True),
    _field(101, "age", schema_pb2.Int32),
    _field(102, "tiny", schema_pb2.Int8),
    _field(103, "mid", schema_pb2.Int16),
    _field(104, "big", schema_pb2.Int64),
    _field(105, "score", schema_pb2.Double),
    _field(106, "ratio", schema_pb2.Float),
    _field(107, "tag", schema_pb2.VarChar, type_params=[common_pb2.KeyValuePair(key="max_length", value="16")]),
    _field(108, "flag", schema_pb2.Bool),
    _field(109, "vec", schema_pb2.FloatVector, type_params=[common_pb2.KeyValuePair(key="dim", value="4")]),
    _field(110, "meta", schema_pb2.JSON),
    _field(111, "arr", schema_pb2.Array, element_type=schema_pb2.Int64),
])
DYNAMIC = schema_pb2.CollectionSchema(name="dyn", enable_dynamic_field=True, fields=[
    _field(100, "id", schema_pb2.VarChar, is_primary_key=True),
    _field(101, "age", schema_pb2.Int64),
    _field(102, "$meta", schema_pb2.JSON, is_dynamic=True),
])

DATA = {
    "pk": np.arange(N, dtype=np.int64) * 3 + 1,
    "age": (np.arange(N) % 97).astype(np.int32),
    "tiny": rng.integers(-128, 128, N).astype(np.int8),
    "mid": rng.integers(-1000, 1000, N).astype(np.int16),
    "big": rng.integers(-(1 << 40), 1 << 40, N).astype(np.int64),
    "score": rng.uniform(0, 1, N),
    "ratio": rng.uniform(-1, 1, N).astype(np.float32),
    "tag": TAGS[np.arange(N) % 5],
    "flag": np.arange(N) % 3 == 0,
}
IDS = {f.name: f.fieldID for f in SCHEMA.fields}


def mask_of(query, schema=SCHEMA, **kw) -> np.ndarray:
    expr = compile_filter(query, schema, **kw)
    if expr is None:
        return np.ones(N, dtype=bool)
    columns = {IDS[name]: values for name, values in DATA.items() if name != "pk"}
    return np.asarray(evaluate(expr, columns, N, pks=DATA["pk"]))


d = DATA
CASES = [
    # plain equality on every scalar type (and the primary key)
    ({"age": 20}, d["age"] == 20),
    ({"pk": 31}, d["pk"] == 31),
    ({"tag": "blue"}, d["tag"] == "blue"),
    ({"flag": True}, d["flag"]),
    ({"flag": False}, ~d["flag"]),
    ({"tiny": int(d["tiny"][5])}, d["tiny"] == d["tiny"][5]),
    ({"score": float(d["score"][7])}, d["score"] == d["score"][7]),
    # $eq is equality spelled out; $like is Milvus's like on VarChar
    ({"age": {"$eq": 20}}, d["age"] == 20),
    ({"flag": {"$eq": True}}, d["flag"]),
    ({"tag": {"$like": "g%"}}, np.char.startswith(d["tag"], "g")),
    ({"tag": {"$like": "%e_"}}, np.isin(d["tag"], ["red", "green"])),
    # comparisons
    ({"age": {"$lt": 10}}, d["age"] < 10),
    ({"age": {"$lte": 10}}, d["age"] <= 10),
    ({"age": {"$gt": 90}}, d["age"] > 90),
    ({"age": {"$gte": 90}}, d["age"] >= 90),
    ({"age": {"$ne": 3}}, d["age"] != 3),
    ({"mid": {"$gt": -5, "$lt": 500}}, (d["mid"] > -5) & (d["mid"] < 500)),
    ({"big": {"$gte": 0}}, d["big"] >= 0),
    ({"score": {"$lt": 0.25}}, d["score"] < 0.25),
    ({"ratio": {"$gt": 0}}, d["ratio"] > 0),                    # an int against a Float field
    ({"age": {"$lt": 20.5}}, d["age"] < 20.5),                  # a float against an integer field
    ({"tag": {"$gt": "cyan"}}, d["tag"] > "cyan"),              # strings compare lexicographically
    ({"tag": {"$ne": "red"}}, d["tag"] != "red"),
    ({"flag": {"$ne": True}}, ~d["flag"]),
    ({"pk": {"$lte": 100}}, d["pk"] <= 100),
    # sets
    ({"tag": {"$in": ["red", "gold"]}}, np.isin(d["tag"], ["red", "gold"])),
    ({"tag": {"$nin": ["red", "gold"]}}, ~np.isin(d["tag"], ["red", "gold"])),
    ({"pk": {"$in": [1, 4, 7, 2]}}, np.isin(d["pk"], [1, 4, 7, 2])),
    ({"pk": {"$nin": [1, 4]}}, ~np.isin(d["pk"], [1, 4])),
    ({"age": {"$in": []}}, np.zeros(N, bool)),
    ({"age": {"$nin": []}}, np.ones(N, bool)),
    ({"flag": {"$in": [True]}}, d["flag"]),
    ({"score": {"$in": [float(d["score"][3]), 2.0]}}, np.isin(d["score"], [d["score"][3]])),
    # implicit AND between keys, $or, $and, nesting
    ({"age": {"$gt": 20}, "tag": "red"}, (d["age"] > 20) & (d["tag"] == "red")),
    ({"$or": [{"tag": "red"}, {"age": {"$lt": 5}}]}, (d["tag"] == "red") | (d["age"] < 5)),
    ({"$and": [{"age": {"$gt": 10}}, {"age": {"$lt": 20}}]}, (d["age"] > 10) & (d["age"] < 20)),
    ({"age": {"$gt": 20}, "$or": [{"tag": "blue"}, {"tag": {"$in": ["cyan", "gold"]}}], "pk": {"$nin": [1, 2]},
      "score": {"$ne": 3}},
     (d["age"] > 20) & np.isin(d["tag"], ["blue", "cyan", "gold"]) & ~np.isin(d["pk"], [1, 2]) & (d["score"] != 3)),
    ({"$or": [{"$and": [{"flag": True}, {"age": {"$lt": 50}}]}, {"tag": "gold", "mid": {"$lt": 0}}]},
     (d["flag"] & (d["age"] < 50)) | ((d["tag"] == "gold") & (d["mid"] < 0))),
    ({"$or": [{"tag": "red"}, {}]}, np.ones(N, bool)),          # an empty branch matches everything
    ({"$and": [{}, {"tag": "red"}]}, d["tag"] == "red"),
    ({}, np.ones(N, bool)),
]


@pytest.mark.parametrize("query,expected", CASES, ids=[str(q) for q, _ in CASES])
def test_compiled_filter_matches_numpy(query, expected):
    np.testing.assert_array_equal(mask_of(query), expected)


def test_every_operator_is_covered():
    used = set()

    def walk(q):
        for k, v in q.items():
            used.add(k if k.startswith("$") else "=")
            if isinstance(v, dict):
                used.update(op for op in v if op.startswith("$"))
            if k in ("$or", "$and"):
                for branch in v:
                    walk(branch)
    for q, _ in CASES:
        walk(q)
    assert {"=", "$lt", "$lte", "$gt", "$gte", "$ne", "$in", "$nin", "$or", "$and"} <= used


def test_shapes_of_the_compiled_expressions():
    assert compile_filter({}, SCHEMA) is None
    assert compile_filter(None, SCHEMA) is None
    e = compile_filter({"pk": {"$in": [1]}}, SCHEMA)
    assert e.WhichOneof("expr") == "term_expr" and e.term_expr.column_info.is_primary_key
    assert e.term_expr.column_info.data_type == schema_pb2.Int64
    e = compile_filter({"score": 1}, SCHEMA)                    # an int against a Double field is sent as float
    assert e.unary_range_expr.value.WhichOneof("val") == "float_val"
    e = compile_filter({"tag": {"$nin": ["a"]}}, SCHEMA)
    assert e.unary_expr.op == plan_pb2.UnaryExpr.Not
    e = compile_filter({"age": 1, "tag": "a"}, SCHEMA)
    assert e.binary_expr.op == plan_pb2.BinaryExpr.LogicalAnd
    e = compile_filter({"$or": [{"age": 1}, {"tag": "a"}]}, SCHEMA)
    assert e.binary_expr.op == plan_pb2.BinaryExpr.LogicalOr


def test_query_string_values_are_coerced_like_a_query_schema():
    strings = {"age": {"$gt": "20"}, "flag": "true", "score": {"$lt": "0.5"}, "pk": {"$in": ["1", "4"]},
               "tag": "red"}
    expected = (d["age"] > 20) & d["flag"] & (d["score"] < 0.5) & np.isin(d["pk"], [1, 4]) & (d["tag"] == "red")
    np.testing.assert_array_equal(mask_of(strings, coerce_strings=True), expected)
    assert compile_filter({"age": "20"}, SCHEMA, coerce_strings=True).unary_range_expr.value.int64_val == 20
    assert compile_filter({"age": "2e1"}, SCHEMA, coerce_strings=True).unary_range_expr.value.float_val == 20.0
    for bad in ({"age": "twenty"}, {"flag": "yes"}, {"score": "NaN"}, {"age": ""}):
        with pytest.raises(errors.ParameterInvalid):
            compile_filter(bad, SCHEMA, coerce_strings=True)


def test_split_query_takes_off_result_options():
    query = {"age": {"$gt": 3}, "$limit": 5, "$skip": 1, "$sort": {"age": -1}, "$select": ["tag"],
             "$or": [{"tag": "red"}]}
    conditions, options = split_query(query)
    assert conditions == {"age": {"$gt": 3}, "$or": [{"tag": "red"}]}
    assert options == {"$limit": 5, "$skip": 1, "$sort": {"age": -1}, "$select": ["tag"]}
    np.testing.assert_array_equal(mask_of(conditions), (d["age"] > 3) & (d["tag"] == "red"))
    with pytest.raises(errors.ParameterInvalid, match="must be an object"):
        split_query(["age"])


ERRORS = [
    ({"nope": 1}, "has no field 'nope'"),
    ({"$or": [{"nope": 1}]}, "has no field 'nope'"),
    ({"vec": 1}, "'vec' is a vector field (FloatVector) and cannot be filtered"),
    ({"meta": {"$gt": 1}}, "'meta' is of type JSON and cannot be filtered"),
    ({"arr": {"$in": [1]}}, "'arr' is of type Array and cannot be filtered"),
    ({"age": {"$like": "x"}}, "$like takes a pattern string on a VarChar field; field 'age' is Int32"),
    ({"tag": {"$like": 3}}, "$like takes a pattern string on a VarChar field"),
    ({"age": {"$regex": "x"}}, "Invalid query parameter $regex"),
    ({"age": {"$or": [1]}}, "Invalid query parameter $or"),
    ({"$foo": 1}, "Invalid filter value $foo"),
    ({"$nor": [{"age": 1}]}, "Invalid filter value $nor"),
    ({"$limit": 3}, "$limit shapes the result"),
    ({"$select": ["age"]}, "$select shapes the result"),
    ({"age": "20"}, "type mismatch: field 'age' is Int32, got str '20'"),
    ({"pk": {"$in": [1, "2"]}}, "type mismatch: field 'pk' is Int64, got str '2'"),
    ({"tag": 3}, "type mismatch: field 'tag' is VarChar, got int 3"),
    ({"tag": {"$in": ["a", True]}}, "type mismatch: field 'tag' is VarChar, got bool True"),
    ({"flag": 1}, "type mismatch: field 'flag' is Bool, got int 1"),
    ({"flag": "true"}, "type mismatch: field 'flag' is Bool, got str 'true'"),
    ({"age": True}, "type mismatch: field 'age' is Int32, got bool True"),
    ({"score": [1]}, "use $in for several values"),
    ({"age": None}, "null is not a value of field 'age'"),
    ({"score": math.nan}, "NaN compares with nothing"),
    ({"big": 1 << 63}, "out of the Int64 range"),
    ({"age": {"$in": 3}}, "$in on field 'age' expects an array"),
    ({"age": {"$nin": "a"}}, "$nin on field 'age' expects an array"),
    ({"flag": {"$gt": False}}, "$gt does not apply to Bool field 'flag'"),
    ({"age": {}}, "the condition on field 'age' is an empty object"),
    ({"age": {"years": 3}}, "nested keys ('years') would need a JSON field"),
    ({"$or": []}, "$or needs a non-empty array"),
    ({"$and": {"age": 1}}, "$and needs a non-empty array"),
    ({"$or": [3]}, "$or[0] must be an object"),
    ({1: 2}, "field names are strings"),
    ([{"age": 1}], "the query must be an object"),
]


@pytest.mark.parametrize("query,message", ERRORS, ids=[m for _, m in ERRORS])
def test_refusals_are_parameter_invalid_with_a_clear_reason(query, message):
    with pytest.raises(errors.ParameterInvalid) as info:
        compile_filter(query, SCHEMA)
    assert message in str(info.value)
    assert info.value.code == 1100


def test_in_lists_are_capped():
    assert mask_of({"age": {"$in": list(range(5))}}, max_in=5).sum() == np.isin(d["age"], range(5)).sum()
    with pytest.raises(errors.ParameterTooLarge, match="has 6 values; at most 5"):
        compile_filter({"$or": [{"age": {"$nin": list(range(6))}}]}, SCHEMA, max_in=5)


def test_dynamic_field_keys_compile_to_json_paths_on_meta():
    e = compile_filter({"color": "red"}, DYNAMIC).unary_range_expr
    assert (e.column_info.field_id, e.column_info.data_type, list(e.column_info.nested_path)) == \
        (102, schema_pb2.JSON, ["color"])
    with pytest.raises(errors.ParameterInvalid, match="has no field 'color'"):
        compile_filter({"color": "red"}, SCHEMA)    # without the dynamic field: still refused
    with pytest.raises(errors.ParameterInvalid, match=r"Invalid filter value \$meta"):
        compile_filter({"$meta": 1}, DYNAMIC)  # the dynamic field's own name reads as an operator
assert compile_filter({"id": "a", "age": 3}, DYNAMIC).binary_expr.left.unary_range_expr.column_info.is_primary_key


def _meta_rows() -> list[dict]:
    rows = []
    for i in range(N):
        r: dict = {}
        if i % 5 != 4:
            r["year"] = [2000 + i % 30, float(2000 + i % 30) + 0.5, str(2000 + i % 30), i % 3 == 0][(i // 7) % 4]
        if i % 3 == 0:
            r["name"] = f"n{i % 50}"
        rows.append(r)
    return rows


META_ROWS = _meta_rows()
META_COLUMN = np.asarray([json.dumps(r).encode() for r in META_ROWS], dtype=object)
_NONE = object()


def _same_kind(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return True
    return type(a) is type(b)


def _py(pred) -> np.ndarray:
    return np.asarray([bool(pred(r)) for r in META_ROWS])


def _has(r, key, v) -> bool:
    x = r.get(key, _NONE)
    return x is not _NONE and _same_kind(x, v)


DYNAMIC_CASES = [
    ({"year": 2010}, lambda r: _has(r, "year", 2010) and r["year"] == 2010),
    ({"year": {"$gte": 2018}}, lambda r: _has(r, "year", 0) and r["year"] >= 2018),
    ({"year": {"$gt": 2005, "$lt": 2010.5}}, lambda r: _has(r, "year", 0) and 2005 < r["year"] < 2010.5),
    ({"year": {"$lt": "2010"}}, lambda r: _has(r, "year", "") and r["year"] < "2010"),
    ({"year": {"$ne": 2010}}, lambda r: not (_has(r, "year", 0) and r["year"] == 2010)),
    ({"year": {"$in": [2001, "2003", True]}},
     lambda r: any(_has(r, "year", v) and r["year"] == v for v in (2001, "2003", True))),
    ({"year": {"$nin": [2001, 2002.5]}}, lambda r: not any(_has(r, "year", v) and r["year"] == v
                                                           for v in (2001, 2002.5))),
    ({"year": False}, lambda r: _has(r, "year", False) and r["year"] is False),
    ({"name": {"$like": "n1%"}}, lambda r: _has(r, "name", "") and r["name"].startswith("n1")),
    ({"$or": [{"name": "n3"}, {"age": {"$lt": 3}, "year": {"$gte": 2025}}]},
     lambda r: False),  # checked with the age column below
]


@pytest.mark.parametrize("query, pred", DYNAMIC_CASES[:-1], ids=[str(q) for q, _ in DYNAMIC_CASES[:-1]])
def test_dynamic_keys_evaluate_with_milvus_semantics(query, pred):
    expr = compile_filter(query, DYNAMIC)
    got = np.asarray(evaluate(expr, {101: d["age"].astype(np.int64), 102: META_COLUMN}, N, pks=np.arange(N)))
    np.testing.assert_array_equal(got, _py(pred))
    assert 0 < got.sum() < N


def test_dynamic_keys_mix_with_fields():
    query, _ = DYNAMIC_CASES[-1]
    got = np.asarray(evaluate(compile_filter(query, DYNAMIC), {101: d["age"].astype(np.int64), 102: META_COLUMN},
                              N, pks=np.arange(N)))
    want = _py(lambda r: _has(r, "name", "") and r["name"] == "n3") | (
        (d["age"] < 3) & _py(lambda r: _has(r, "year", 0) and r["year"] >= 2025))
    np.testing.assert_array_equal(got, want)


def test_query_string_values_of_dynamic_keys_are_coerced():
    assert [coerce_dynamic(v) for v in ("2018", "-3", "1.5", "1e3", "true", "false", "abc", "", " 5", "NaN",
                                        "Infinity", 7)] == \
        [2018, -3, 1.5, 1000.0, True, False, "abc", "", " 5", "NaN", "Infinity", 7]
    coerced = compile_filter({"year": {"$gte": "2018"}, "ok": "true"}, DYNAMIC, coerce_strings=True)
    assert coerced == compile_filter({"year": {"$gte": 2018}, "ok": True}, DYNAMIC)
    assert compile_filter({"year": "2018"}, DYNAMIC).unary_range_expr.value.string_val == "2018"  # body: as given


@pytest.mark.parametrize("query, message", [
    ({"year": None}, "null is not a value"),
    ({"year": [1]}, "use $in"),
    ({"year": {"$gt": True}}, "orders numbers or strings"),
    ({"year": {"$in": [[1]]}}, "compares with numbers, strings or booleans"),
    ({"year": {"a": 1}}, "nested keys"),
    ({"year": {"$like": 3}}, "$like takes a pattern string"),
    ({"year": math.inf}, "compares with nothing"),
    ({"year": {"$regex": "x"}}, "Invalid query parameter $regex"),
])
def test_bad_conditions_on_dynamic_keys_are_refused(query, message):
    with pytest.raises(errors.ParameterInvalid) as info:
        compile_filter(query, DYNAMIC)
    assert message in str(info.value)
