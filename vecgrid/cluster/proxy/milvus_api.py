"""What Milvus's public API means, whichever door it comes through (MilvusService on gRPC, the Milvus
RESTful API v2): the read-consistency rule of its requests, the names ``output_fields`` stand for, the
deletes that name their rows, and the version it reports.  Both doors decode their own wire format and
call the proxy; these are the rules they share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from vecgrid import __version__
from vecgrid.proto import common_pb2, plan_pb2, schema_pb2

#: what the Milvus API reports as the server's version: the API line vecgrid serves, and vecgrid's own
#: version as semver build data
API_VERSION = f"v2.4.0+vecgrid.{__version__}"


@dataclass
class ReadLevel:
    """How a read is consistent: a level name for the proxy, or the guarantee timestamp the client sent
    (Milvus's Session and Customized levels read at the client's own timestamp)."""

    consistency: str | None = None
    guarantee_timestamp: int | None = None


def read_level(consistency_level: int, use_default: bool, guarantee_timestamp: int,
               collection_level: int) -> ReadLevel:
    """Milvus's proxy rule (``parseGuaranteeTsFromConsistency``): the collection's level when the client
    asks for the default; Strong, Bounded and Eventually are the server's; Session and Customized read
    at the timestamp the client sent (pymilvus sends its last write's, or 1: everything)."""
    level = collection_level if use_default else consistency_level
    if level in (common_pb2.Session, common_pb2.Customized):
        return ReadLevel(None, max(int(guarantee_timestamp), 0))
    return ReadLevel(common_pb2.ConsistencyLevel.Name(level), None)


def output_names(schema: schema_pb2.CollectionSchema, asked: Sequence[str]) -> list[str]:
    """The ``output_fields`` of a result as Milvus names them: ``*`` is every field (the dynamic one as
    ``$meta``), fields keep their names and dynamic keys theirs (pymilvus picks those out of ``$meta``)."""
    names: list[str] = []
    for name in asked:
        expanded = [f.name for f in schema.fields] if name == "*" else [name]
        names.extend(n for n in expanded if n not in names)
    return names


def primary_keys_of(expr: plan_pb2.Expr | None) -> list[Any] | None:
    """The keys of ``pk in [...]`` or ``pk == v`` (pymilvus's delete by ids): deleted without a query."""
    if expr is None:
        return None
    kind = expr.WhichOneof("expr")
    if kind == "term_expr" and expr.term_expr.column_info.is_primary_key \
            and not expr.term_expr.column_info.nested_path:
        return [_value(v) for v in expr.term_expr.values]
    if kind == "unary_range_expr" and expr.unary_range_expr.column_info.is_primary_key \
            and expr.unary_range_expr.op == plan_pb2.Equal and not expr.unary_range_expr.column_info.nested_path:
        return [_value(expr.unary_range_expr.value)]
    return None


def _value(v: plan_pb2.GenericValue) -> Any:
    return getattr(v, v.WhichOneof("val"))


def passes_through(schema: schema_pb2.CollectionSchema, options: dict[str, Any], names: Sequence[str]) -> bool:
    """Whether a search's merged ``SearchResultData`` from the leaders is already Milvus's answer (no
    decode, no encode): a plain top-k search from the first hit whose output names are whole fields
    (a dynamic key named alone is picked out of ``$meta`` by the proxy)."""
    params = options.get("search_params") or {}
    fields = {f.name for f in schema.fields}
    return (not options.get("offset") and options.get("group_by") is None and "radius" not in params
            and "range_filter" not in params and all(n in fields for n in names))
