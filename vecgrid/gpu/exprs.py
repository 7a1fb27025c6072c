"""Builders of ``plan.Expr`` trees and search plans (tests, benchmarks, clients).

    c = column(109, schema_pb2.Int64)
    expr = and_(compare(c, "<", 10), not_(term(column(108, schema_pb2.VarChar), ["a", "b"])))
    plan = search_plan(field_id=100, topk=10, metric="L2", expr=expr)   # serialized PlanNode
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from vecgrid.proto import plan_pb2, schema_pb2

__all__ = ["column", "value", "term", "compare", "between", "and_", "or_", "not_", "match",
           "compare_columns", "arith", "always_true", "search_plan"]

_OPS = {">": plan_pb2.GreaterThan, ">=": plan_pb2.GreaterEqual, "<": plan_pb2.LessThan,
        "<=": plan_pb2.LessEqual, "==": plan_pb2.Equal, "!=": plan_pb2.NotEqual}
_ARITH = {"+": plan_pb2.Add, "-": plan_pb2.Sub, "*": plan_pb2.Mul, "/": plan_pb2.Div, "%": plan_pb2.Mod}


def column(field_id: int, data_type: int = schema_pb2.Int64, *, is_primary_key: bool = False) -> plan_pb2.ColumnInfo:
    return plan_pb2.ColumnInfo(field_id=field_id, data_type=data_type, is_primary_key=is_primary_key)


def value(v: Any) -> plan_pb2.GenericValue:
    if isinstance(v, bool):
        return plan_pb2.GenericValue(bool_val=v)
    if isinstance(v, int):
        return plan_pb2.GenericValue(int64_val=v)
    if isinstance(v, float):
        return plan_pb2.GenericValue(float_val=v)
    if isinstance(v, str):
        return plan_pb2.GenericValue(string_val=v)
    if hasattr(v, "item"):  # numpy scalar
        return value(v.item())
    raise TypeError(f"no GenericValue for {v!r}")


def term(col: plan_pb2.ColumnInfo, values: Iterable[Any]) -> plan_pb2.Expr:
    return plan_pb2.Expr(term_expr=plan_pb2.TermExpr(column_info=col, values=[value(v) for v in values]))


def compare(col: plan_pb2.ColumnInfo, op: str, v: Any) -> plan_pb2.Expr:
    return plan_pb2.Expr(unary_range_expr=plan_pb2.UnaryRangeExpr(column_info=col, op=_OPS[op], value=value(v)))


def match(col: plan_pb2.ColumnInfo, kind: str, pattern: str) -> plan_pb2.Expr:
    """``kind``: "prefix", "postfix" or "like"."""
    op = {"prefix": plan_pb2.PrefixMatch, "postfix": plan_pb2.PostfixMatch, "like": plan_pb2.Match}[kind]
    return plan_pb2.Expr(unary_range_expr=plan_pb2.UnaryRangeExpr(column_info=col, op=op, value=value(pattern)))


def between(col: plan_pb2.ColumnInfo, lo: Any, hi: Any, lower_inclusive: bool = True,
            upper_inclusive: bool = True) -> plan_pb2.Expr:
    return plan_pb2.Expr(binary_range_expr=plan_pb2.BinaryRangeExpr(
        column_info=col, lower_inclusive=lower_inclusive, upper_inclusive=upper_inclusive,
        lower_value=value(lo), upper_value=value(hi)))


def and_(a: plan_pb2.Expr, b: plan_pb2.Expr) -> plan_pb2.Expr:
    return plan_pb2.Expr(binary_expr=plan_pb2.BinaryExpr(op=plan_pb2.BinaryExpr.LogicalAnd, left=a, right=b))


def or_(a: plan_pb2.Expr, b: plan_pb2.Expr) -> plan_pb2.Expr:
    return plan_pb2.Expr(binary_expr=plan_pb2.BinaryExpr(op=plan_pb2.BinaryExpr.LogicalOr, left=a, right=b))


def not_(a: plan_pb2.Expr) -> plan_pb2.Expr:
    return plan_pb2.Expr(unary_expr=plan_pb2.UnaryExpr(op=plan_pb2.UnaryExpr.Not, child=a))


def compare_columns(a: plan_pb2.ColumnInfo, op: str, b: plan_pb2.ColumnInfo) -> plan_pb2.Expr:
    return plan_pb2.Expr(compare_expr=plan_pb2.CompareExpr(left_column_info=a, right_column_info=b, op=_OPS[op]))


def arith(col: plan_pb2.ColumnInfo, arith_op: str, operand: Any, op: str, v: Any) -> plan_pb2.Expr:
    """``(col <arith_op> operand) <op> v``, e.g. ``arith(c, "%", 2, "==", 0)``."""
    return plan_pb2.Expr(binary_arith_op_eval_range_expr=plan_pb2.BinaryArithOpEvalRangeExpr(
        column_info=col, arith_op=_ARITH[arith_op], right_operand=value(operand), op=_OPS[op], value=value(v)))


def always_true() -> plan_pb2.Expr:
    return plan_pb2.Expr(always_true_expr=plan_pb2.AlwaysTrueExpr())


def search_plan(*, field_id: int, topk: int, metric: str = "L2", expr: plan_pb2.Expr | None = None,
                search_params: Mapping[str, Any] | None = None, round_decimal: int = -1,
                output_field_ids: Iterable[int] = ()) -> bytes:
    """A serialized ``plan.PlanNode`` with a ``vector_anns`` arm, as a proxy sends it."""
    anns = plan_pb2.VectorANNS(
        vector_type=plan_pb2.FloatVector, field_id=field_id, placeholder_tag="$0",
        query_info=plan_pb2.QueryInfo(topk=topk, metric_type=metric,
                                      search_params=json.dumps(dict(search_params or {})),
                                      round_decimal=round_decimal))
    if expr is not None:
        anns.predicates.CopyFrom(expr)
    return plan_pb2.PlanNode(vector_anns=anns, output_field_ids=list(output_field_ids)).SerializeToString()
