"""Filters on keys of a JSON column (the dynamic field ``$meta``): Milvus's JSON-path semantics checked
against a plain Python evaluation, and the per-segment cache of extracted keys."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.gpu import exprs
from vecgrid.gpu import jsonkeys
from vecgrid.gpu.filter import evaluate
from vecgrid.gpu.rows import FieldMeta, RowStore
from vecgrid.proto import plan_pb2, schema_pb2

META = 102
N = 3000
rng = np.random.default_rng(5)


def _doc(i: int) -> dict:
    d: dict = {"other": i}
    r = i % 10
    if r < 6:
        d["year"] = int(1990 + (i * 7) % 40)          # integers
    elif r == 6:
        d["year"] = 1990.5 + (i // 10) % 40            # doubles
    elif r == 7:
        d["year"] = str(1990 + (i // 10) % 40)         # strings: never compare with numbers
    elif r == 8:
        d["year"] = i % 20 == 8                        # booleans
    # r == 9: no key at all; every 13th row: null
    if i % 13 == 0:
        d["year"] = None
    return d


DOCS = [_doc(i) for i in range(N)]
RAW = np.empty(N, dtype=object)
RAW[:] = [json.dumps(d).encode() for d in DOCS]
COLS = {META: RAW}
YEAR = plan_pb2.ColumnInfo(field_id=META, data_type=schema_pb2.JSON, nested_path=["year"])
MISSING = object()


def values() -> list:
    return [d.get("year", MISSING) for d in DOCS]


def kind(v) -> str:
    if v is MISSING or v is None:
        return "none"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__


def expect(pred) -> np.ndarray:
    return np.asarray([bool(pred(v)) for v in values()], dtype=bool)


def ev(expr: plan_pb2.Expr) -> np.ndarray:
    out = evaluate(expr, COLS, N)
    assert out.dtype == bool and out.shape == (N,)
    return out


PY = {">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
      "==": lambda a, b: a == b}


@pytest.mark.parametrize("op", list(PY))
@pytest.mark.parametrize("v", [2005, 2005.5, "2005", True])
def test_comparisons_match_only_values_of_the_same_kind(op, v):
    if isinstance(v, bool) and op != "==":
        return
    got = ev(exprs.compare(YEAR, op, v))
    np.testing.assert_array_equal(got, expect(lambda x: kind(x) == kind(v) and PY[op](x, v)))
    assert got.any()


@pytest.mark.parametrize("v", [2005, "2005", False])
def test_not_equal_is_the_negation_and_matches_rows_without_the_key(v):
    got = ev(exprs.compare(YEAR, "!=", v))
    np.testing.assert_array_equal(got, ~expect(lambda x: kind(x) == kind(v) and x == v))
    assert got[9] and got[13]   # row 9 lacks the key, row 13 holds null


def test_ranges_in_and_not_in():
    np.testing.assert_array_equal(ev(exprs.between(YEAR, 2000, 2010, True, False)),
                                  expect(lambda x: kind(x) == "number" and 2000 <= x < 2010))
    np.testing.assert_array_equal(ev(exprs.and_(exprs.compare(YEAR, ">=", 2000), exprs.compare(YEAR, "<=", 2010.5))),
                                  expect(lambda x: kind(x) == "number" and 2000 <= x <= 2010.5))
    listed = [1995, 2001.5, "2003", True, 2019]
    got = ev(exprs.term(YEAR, listed))
    np.testing.assert_array_equal(got, expect(lambda x: any(kind(x) == kind(v) and x == v for v in listed)))
    assert got.any()
    np.testing.assert_array_equal(ev(exprs.not_(exprs.term(YEAR, listed))), ~got)
    np.testing.assert_array_equal(ev(exprs.term(YEAR, [])), np.zeros(N, bool))


def test_integers_compare_exactly_beyond_double_precision():
    big = 1 << 60
    raw = np.asarray([json.dumps({"k": v}) for v in (big, big + 1, float(big), "x")], dtype=object)
    k = plan_pb2.ColumnInfo(field_id=1, data_type=schema_pb2.JSON, nested_path=["k"])
    # a stored double compares as a double (Milvus: at<int64> fails, at<double> is compared)
    np.testing.assert_array_equal(evaluate(exprs.compare(k, "==", big + 1), {1: raw}, 4), [False, True, True, False])
    np.testing.assert_array_equal(evaluate(exprs.compare(k, ">", big), {1: raw}, 4), [False, True, False, False])
    np.testing.assert_array_equal(evaluate(exprs.term(k, [big]), {1: raw}, 4), [True, False, True, False])


def test_like_prefix_and_postfix_on_strings_only():
    pattern = re.compile(r"20.5")
    np.testing.assert_array_equal(ev(exprs.match(YEAR, "like", "20_5")),
                                  expect(lambda x: isinstance(x, str) and pattern.fullmatch(x)))
    np.testing.assert_array_equal(ev(exprs.match(YEAR, "prefix", "199")),
                                  expect(lambda x: isinstance(x, str) and x.startswith("199")))
    np.testing.assert_array_equal(ev(exprs.match(YEAR, "postfix", "9")),
                                  expect(lambda x: isinstance(x, str) and x.endswith("9")))


def test_logic_mixes_json_keys_and_columns():
    other = plan_pb2.ColumnInfo(field_id=META, data_type=schema_pb2.JSON, nested_path=["other"])
    got = ev(exprs.or_(exprs.compare(YEAR, ">", 2015), exprs.not_(exprs.compare(other, "<", 2000))))
    np.testing.assert_array_equal(got, expect(lambda x: kind(x) == "number" and x > 2015)
                                  | (np.arange(N) >= 2000))


def test_rows_that_are_not_objects_or_null_lack_every_key():
    raw = np.asarray([b"[1, 2]", None, b"{}", b'{"k": {"a": 1}}', b'{"k": [1]}', b'{"k": 1}'], dtype=object)
    k = plan_pb2.ColumnInfo(field_id=1, data_type=schema_pb2.JSON, nested_path=["k"])
    np.testing.assert_array_equal(evaluate(exprs.compare(k, "==", 1), {1: raw}, 6), [0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(evaluate(exprs.compare(k, "!=", 1), {1: raw}, 6), [1, 1, 1, 1, 1, 0])


@pytest.mark.parametrize("expr, needle", [
    (exprs.arith(YEAR, "+", 1, "==", 3), "not supported"),
    (exprs.compare_columns(YEAR, "<", exprs.column(100)), "not supported"),
])
def test_what_json_keys_do_not_support_is_refused(expr, needle):
    with pytest.raises(errors.ParameterInvalid, match=needle):
        evaluate(expr, {**COLS, 100: np.arange(N)}, N)


def _store(docs: list, *, grow_from: int | None = None) -> RowStore:
    raw = np.asarray([json.dumps(d) for d in docs], dtype=object)
    fields = {100: FieldMeta(100, "id", schema_pb2.Int64, is_primary_key=True),
              META: FieldMeta(META, "$meta", schema_pb2.JSON, is_dynamic=True)}
    cut = len(docs) if grow_from is None else grow_from
    store = RowStore(np.arange(cut), columns={META: raw[:cut]}, fields=fields)
    if grow_from is not None:
        store.append(np.arange(cut, len(docs)), columns={META: raw[cut:]})
    return store


def test_row_store_extracts_a_key_once_and_extends_it_as_rows_are_appended(monkeypatch):
    calls = []
    real = jsonkeys.extract

    def counting(docs, key):
        calls.append((len(docs), key))
        return real(docs, key)
    monkeypatch.setattr(jsonkeys, "extract", counting)
    store = _store(DOCS[:1000])
    expr = exprs.compare(YEAR, ">=", 2010)
    first = store.filter_mask(expr)
    np.testing.assert_array_equal(first, expect(lambda x: kind(x) == "number" and x >= 2010)[:1000])
    np.testing.assert_array_equal(store.filter_mask(exprs.compare(YEAR, "<", 2000)),
                                  expect(lambda x: kind(x) == "number" and x < 2000)[:1000])
    assert calls == [(1000, "year")]                       # the second query parsed nothing
    assert store.nbytes() > 0
    store.append(np.arange(1000, 1500), columns={META: np.asarray([json.dumps(d) for d in DOCS[1000:1500]],
                                                                  dtype=object)})
    np.testing.assert_array_equal(store.filter_mask(expr, n=1200),
                                  expect(lambda x: kind(x) == "number" and x >= 2010)[:1200])
    np.testing.assert_array_equal(store.filter_mask(expr),
                                  expect(lambda x: kind(x) == "number" and x >= 2010)[:1500])
    assert calls == [(1000, "year"), (200, "year"), (300, "year")]   # only the appended rows
    # a snapshot of fewer rows than cached reads the cached head
    np.testing.assert_array_equal(store.filter_mask(expr, n=10),
                                  expect(lambda x: kind(x) == "number" and x >= 2010)[:10])
    assert len(calls) == 3


def test_key_cache_is_bounded():
    cache = jsonkeys.KeyCache(max_bytes=1)
    raw = np.asarray([json.dumps({"a": i, "b": str(i)}) for i in range(100)], dtype=object)
    cache.get(1, "a", raw, 100)
    cache.get(1, "b", raw, 100)
    assert len(cache._entries) == 1 and cache.nbytes == cache._entries[(1, "b")].nbytes
    big = jsonkeys.KeyCache()
    for key in ("a", "b"):
        big.get(1, key, raw, 100)
    assert len(big._entries) == 2


def test_growing_store_matches_a_sealed_one():
    sealed = _store(DOCS)
    growing = _store(DOCS, grow_from=17)
    expr = exprs.term(YEAR, [2001, "2003", 1995.5])
    np.testing.assert_array_equal(sealed.filter_mask(expr), growing.filter_mask(expr))


def test_json_keys_with_cupy_match_numpy():
    from vecgrid.gpu import device

    cp = device.cupy_module()
    if cp is None:
        pytest.skip("cupy is not installed")
    store = _store(DOCS)
    expr = exprs.and_(exprs.compare(YEAR, ">=", 2000), exprs.not_(exprs.term(YEAR, [2001, "2003"])))
    np.testing.assert_array_equal(store.mask(expr, xp=cp), store.mask(expr))
