"""Decode the search plan a QueryNode receives (``serialized_expr_plan`` bytes).

:func:`parse_search_plan` turns a serialized ``plan.PlanNode`` (its ``vector_anns``
arm) into a :class:`SearchPlan`: the vector field, the filter ``Expr``, topk, metric,
search params (``QueryInfo.search_params`` is JSON, e.g. ``{"nprobe": 10}``),
``round_decimal`` and the output field ids.  :func:`parse_query_plan` does the same
for a retrieve (``query`` / ``predicates`` arm).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from vecgrid import errors
from vecgrid.proto import plan_pb2

__all__ = ["SearchPlan", "QueryPlan", "parse_search_plan", "parse_query_plan", "parse_search_params"]


def parse_search_params(raw: str | bytes | dict[str, Any] | None) -> dict[str, Any]:
    """Search params from Milvus's JSON (``{"nprobe": 16}`` or ``{"params": {"nprobe": 16}}``)."""
    if raw is None or raw == "" or raw == b"":
        return {}
    if isinstance(raw, dict):
        d = dict(raw)
    else:
        try:
            d = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise errors.ParameterInvalid(f"search params {raw!r} are not JSON") from e
        if not isinstance(d, dict):
            raise errors.ParameterInvalid(f"search params {raw!r} are not a JSON object")
    inner = d.pop("params", None)
    if isinstance(inner, str) and inner.strip():
        inner = json.loads(inner)
    if isinstance(inner, dict):
        d.update(inner)
    return d


@dataclass
class SearchPlan:
    field_id: int
    topk: int
    metric: str
    expr: plan_pb2.Expr | None
    search_params: dict[str, Any] = field(default_factory=dict)
    round_decimal: int = -1
    output_field_ids: list[int] = field(default_factory=list)
    placeholder_tag: str = "$0"
    group_by_field_id: int = 0


@dataclass
class QueryPlan:
    expr: plan_pb2.Expr | None
    is_count: bool = False
    limit: int = -1
    output_field_ids: list[int] = field(default_factory=list)


def _load(data: bytes | plan_pb2.PlanNode) -> plan_pb2.PlanNode:
    if isinstance(data, plan_pb2.PlanNode):
        return data
    node = plan_pb2.PlanNode()
    try:
        node.ParseFromString(bytes(data))
    except Exception as e:  # protobuf's DecodeError
        raise errors.ParameterInvalid(f"cannot decode the search plan: {e}") from e
    return node


def parse_search_plan(data: bytes | plan_pb2.PlanNode) -> SearchPlan:
    node = _load(data)
    if node.WhichOneof("node") != "vector_anns":
        raise errors.ParameterInvalid("the plan is not a vector search plan")
    anns = node.vector_anns
    if anns.vector_type != plan_pb2.FloatVector:
        raise errors.ParameterInvalid(
            f"vector type {plan_pb2.VectorType.Name(anns.vector_type)} is not supported by vecgrid")
    qi = anns.query_info
    if qi.group_by_field_id:
        raise errors.ParameterInvalid("grouping search (group_by_field) is not supported by vecgrid")
    expr = anns.predicates if anns.HasField("predicates") else None
    return SearchPlan(field_id=anns.field_id, topk=int(qi.topk), metric=qi.metric_type.upper(),
                      expr=expr, search_params=parse_search_params(qi.search_params),
                      round_decimal=int(qi.round_decimal), output_field_ids=list(node.output_field_ids),
                      placeholder_tag=anns.placeholder_tag or "$0",
                      group_by_field_id=int(qi.group_by_field_id))


def parse_query_plan(data: bytes | plan_pb2.PlanNode) -> QueryPlan:
    node = _load(data)
    which = node.WhichOneof("node")
    if which == "query":
        q = node.query
        expr = q.predicates if q.HasField("predicates") else None
        return QueryPlan(expr, q.is_count, int(q.limit) if q.limit else -1, list(node.output_field_ids))
    if which == "predicates":
        return QueryPlan(node.predicates, False, -1, list(node.output_field_ids))
    raise errors.ParameterInvalid("the plan is not a query plan")
