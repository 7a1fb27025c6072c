"""plan.Expr → row bitset, checked against numpy on every filterable type."""

from __future__ import annotations

import re

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.gpu import exprs
from vecgrid.gpu.datasets import SCALAR_FIELDS, scalar_columns
from vecgrid.gpu.filter import evaluate, is_trivial
from vecgrid.proto import plan_pb2, schema_pb2

N = 5000
COLS = scalar_columns(N, seed=11)
PKS = np.arange(N, dtype=np.int64) * 3 + 1
PK_FIELD = 100


def col(fid: int) -> plan_pb2.ColumnInfo:
    return exprs.column(fid, SCALAR_FIELDS[fid][1])


PK = exprs.column(PK_FIELD, schema_pb2.Int64, is_primary_key=True)


def ev(expr: plan_pb2.Expr) -> np.ndarray:
    out = evaluate(expr, COLS, N, pks=PKS)
    assert out.dtype == bool and out.shape == (N,)
    # the same through a serialized round trip (what a QueryNode receives)
    again = plan_pb2.Expr()
    again.ParseFromString(expr.SerializeToString())
    np.testing.assert_array_equal(evaluate(again, COLS, N, pks=PKS), out)
    return out


NUMERIC = [102, 103, 104, 105, 106, 107]
OPS = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal, "==": np.equal,
       "!=": np.not_equal}


@pytest.mark.parametrize("fid", NUMERIC)
@pytest.mark.parametrize("op", list(OPS))
def test_unary_range_numeric(fid, op):
    c = COLS[fid]
    v = c[17].item()  # a value present in the column, so == and != are meaningful
    got = ev(exprs.compare(col(fid), op, v))
    np.testing.assert_array_equal(got, OPS[op](c, v))
    assert 0 < got.sum() or op in ("<", ">", "==")


@pytest.mark.parametrize("op", list(OPS))
def test_unary_range_varchar_bool_pk(op):
    s = COLS[108]
    np.testing.assert_array_equal(ev(exprs.compare(col(108), op, "delta50")), OPS[op](s, "delta50"))
    if op in ("==", "!="):
        np.testing.assert_array_equal(ev(exprs.compare(col(101), op, True)), OPS[op](COLS[101], True))
    np.testing.assert_array_equal(ev(exprs.compare(PK, op, 301)), OPS[op](PKS, 301))


def test_int_with_float_value_and_out_of_range_values():
    c = COLS[102]  # int8
    np.testing.assert_array_equal(ev(exprs.compare(col(102), ">", 10.5)), c > 10.5)
    assert not ev(exprs.compare(col(102), ">", 1000)).any()
    assert ev(exprs.compare(col(102), "<", 1000)).all()
    assert not ev(exprs.term(col(102), [1000, -1000])).any()


@pytest.mark.parametrize("fid", [101, 102, 103, 104, 105, 108, 109])
def test_term(fid):
    c = COLS[fid]
    values = list(dict.fromkeys(c[:7].tolist())) + ([999999] if c.dtype.kind in "iu" else [])
    if c.dtype.kind == "U":
        values.append("no-such-word")
    got = ev(exprs.term(col(fid), values))
    np.testing.assert_array_equal(got, np.isin(c, np.asarray(values, dtype=c.dtype if c.dtype.kind != "i" else np.int64)))
    assert got.sum() >= 7 or fid == 101


def test_term_float_and_pk_and_empty():
    c = COLS[107]
    vals = c[[3, 9, 27]].tolist()
    np.testing.assert_array_equal(ev(exprs.term(col(107), vals)), np.isin(c, vals))
    np.testing.assert_array_equal(ev(exprs.term(PK, [1, 4, 7, 8])), np.isin(PKS, [1, 4, 7, 8]))
    assert not ev(exprs.term(col(105), [])).any()


@pytest.mark.parametrize("li", [True, False])
@pytest.mark.parametrize("ui", [True, False])
@pytest.mark.parametrize("fid", [104, 106, 107, 108])
def test_binary_range(fid, li, ui):
    c = COLS[fid]
    lo, hi = np.sort(c[[5, 50]])
    lo, hi = lo.item(), hi.item()
    got = ev(exprs.between(col(fid), lo, hi, li, ui))
    ref = (c >= lo if li else c > lo) & (c <= hi if ui else c < hi)
    np.testing.assert_array_equal(got, ref)


def test_pk_range_and_logic():
    a = exprs.between(PK, 100, 2000, True, False)
    b = exprs.compare(col(109), "<", 30)
    c = exprs.term(col(108), ["alpha1", "beta2", "gamma3"])
    ra = (PKS >= 100) & (PKS < 2000)
    rb = COLS[109] < 30
    rc = np.isin(COLS[108], ["alpha1", "beta2", "gamma3"])
    np.testing.assert_array_equal(ev(exprs.and_(a, b)), ra & rb)
    np.testing.assert_array_equal(ev(exprs.or_(a, b)), ra | rb)
    np.testing.assert_array_equal(ev(exprs.not_(a)), ~ra)
    np.testing.assert_array_equal(ev(exprs.or_(exprs.and_(a, exprs.not_(b)), c)), (ra & ~rb) | rc)
    np.testing.assert_array_equal(ev(exprs.not_(exprs.or_(b, exprs.not_(c)))), ~(rb | ~rc))
    # short circuits give the same answers
    none = exprs.compare(col(109), ">", 1000)
    every = exprs.compare(col(109), ">=", 0)
    assert not ev(exprs.and_(none, b)).any()
    assert ev(exprs.or_(every, b)).all()


def test_pattern_matches():
    s = COLS[108]
    np.testing.assert_array_equal(ev(exprs.match(col(108), "prefix", "al")), np.strings.startswith(s, "al"))
    np.testing.assert_array_equal(ev(exprs.match(col(108), "postfix", "7")), np.strings.endswith(s, "7"))
    rx = re.compile(r".*t.*a.")
    np.testing.assert_array_equal(ev(exprs.match(col(108), "like", "%t%a_")),
                                  np.array([rx.fullmatch(x) is not None for x in s]))


def test_compare_columns_arith_and_constants():
    a, b = COLS[103].astype(np.int64), COLS[104].astype(np.int64)
    np.testing.assert_array_equal(ev(exprs.compare_columns(col(103), "<", col(104))), a < b)
    c = COLS[104].astype(np.int64)
    np.testing.assert_array_equal(ev(exprs.arith(col(104), "%", 7, "==", 3)), np.fmod(c, 7) == 3)
    np.testing.assert_array_equal(ev(exprs.arith(col(104), "%", 7, "==", -3)), np.fmod(c, 7) == -3)
    np.testing.assert_array_equal(ev(exprs.arith(col(104), "+", 5, ">", 100)), c + 5 > 100)
    np.testing.assert_array_equal(ev(exprs.arith(col(104), "*", 2, "<=", 10)), c * 2 <= 10)
    trunc = np.trunc(c / 3).astype(np.int64)
    np.testing.assert_array_equal(ev(exprs.arith(col(104), "/", 3, "==", -5)), trunc == -5)
    f = COLS[106].astype(np.float64)
    np.testing.assert_array_equal(ev(exprs.arith(col(106), "-", 0.5, "<", 0.0)), f - 0.5 < 0)
    assert ev(exprs.always_true()).all()
    assert is_trivial(None) and is_trivial(plan_pb2.Expr()) and is_trivial(exprs.always_true())
    assert not is_trivial(exprs.compare(col(109), "<", 3))
    bool_col = plan_pb2.Expr(column_expr=plan_pb2.ColumnExpr(info=col(101)))
    np.testing.assert_array_equal(ev(bool_col), COLS[101])


@pytest.mark.parametrize("expr, needle", [
    (exprs.compare(col(105), "<", "x"), "cannot compare numeric"),
    (exprs.compare(col(108), "<", 3), "cannot compare VarChar"),
    (exprs.compare(col(101), "==", 1), "cannot compare Bool"),
    (exprs.compare(exprs.column(999, schema_pb2.Int64), "<", 3), "not loaded"),
    (exprs.match(col(105), "prefix", "a"), "pattern match"),
    (plan_pb2.Expr(term_expr=plan_pb2.TermExpr(column_info=col(105), values=[exprs.value(1)], is_in_field=True)),
     "array contains"),
    (exprs.compare(plan_pb2.ColumnInfo(field_id=105, data_type=schema_pb2.JSON, nested_path=["a", "b"]), "<", 3),
     "only paths of one key"),
    (exprs.compare(plan_pb2.ColumnInfo(field_id=105, data_type=schema_pb2.Double, nested_path=["a"]), "<", 3),
     "needs a JSON field"),
    (plan_pb2.Expr(exists_expr=plan_pb2.ExistsExpr(info=col(105))), "exists_expr"),
    (plan_pb2.Expr(json_contains_expr=plan_pb2.JSONContainsExpr(column_info=col(105))), "json_contains_expr"),
    (exprs.arith(col(104), "%", 0, "==", 1), "modulo by zero"),
])
def test_unsupported_expressions_are_parameter_invalid(expr, needle):
    with pytest.raises(errors.ParameterInvalid) as ei:
        evaluate(expr, COLS, N, pks=PKS)
    assert needle in str(ei.value)
    assert ei.value.code == 1100
