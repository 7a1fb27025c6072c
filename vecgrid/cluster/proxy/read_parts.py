"""What every read of the proxy shares: the context a read task runs in, request ids, output fields,
filters, and decoding the leaders' answers into plain Python rows."""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Sequence

import numpy as np

from vecgrid import errors
from vecgrid.cluster.proxy.catalog_access import CollectionMeta
from vecgrid.cluster.proxy.consistency import ReadConsistency
from vecgrid.cluster.proxy.filters import compile_filter, dynamic_field
from vecgrid.cluster.proxy.lb_policy import LeaderRouter
from vecgrid.cluster.proxy.milvus_expr import compile_expression
from vecgrid.gpu.columns import FieldColumn
from vecgrid.gpu.results import COUNT_FIELD, field_data_to_column
from vecgrid.proto import internal_pb2, plan_pb2, schema_pb2

Filter = Mapping[str, Any] | str | plan_pb2.Expr | None

_request_ids = itertools.count(time.time_ns() & ((1 << 62) - 1))


@dataclass(frozen=True)
class ReadContext:
    """What a read task uses of its proxy: collection descriptions (a name is described, a
    :class:`CollectionMeta` a caller has just described is used as it is), the guarantee timestamps of
    the read's consistency level, and the shard leaders the requests go to."""

    describe: Callable[["str | CollectionMeta"], Awaitable[CollectionMeta]]
    guarantees: ReadConsistency
    router: LeaderRouter


def next_request_id() -> int:
    return next(_request_ids)


def python_values(col: FieldColumn) -> list[Any]:
    """A column's values as JSON-friendly Python: numbers, strings, bools, float lists, decoded JSON."""
    if col.data_type == schema_pb2.JSON:
        return [json.loads(v) if isinstance(v, (bytes, str)) and v else None for v in col.values.tolist()]
    if col.data_type in (schema_pb2.BinaryVector, schema_pb2.Float16Vector, schema_pb2.BFloat16Vector):
        return [bytes(row) for row in np.asarray(col.values, dtype=np.uint8)]
    return col.values.tolist()


def entities(columns: Sequence[FieldColumn], n: int, keys: frozenset[str] | None = None) -> list[dict[str, Any]]:
    """One ``{field: value}`` per row; a dynamic field's keys are spread into the row, as pymilvus does —
    only ``keys`` of them when the caller named keys rather than the whole field (Milvus's proxy prunes
    ``$meta`` to the dynamic keys of ``output_fields`` too)."""
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for col in columns:
        values = python_values(col)
        for row, v in zip(rows, values):
            if col.is_dynamic and isinstance(v, dict):
                row.update(v if keys is None else {k: x for k, x in v.items() if k in keys})
            else:
                row[col.name] = v
    return rows


def output_ids(meta: CollectionMeta, names: Sequence[str]) -> tuple[list[int], frozenset[str] | None]:
    """``(output field ids, dynamic keys to keep)``: names that are not fields are keys of the dynamic field
    (when it is on), read through ``$meta``; ``None`` keeps every key (``"*"``, ``$meta`` itself, or none named)."""
    if not names:
        return [], None
    dyn = dynamic_field(meta.schema)
    fields = {f.name for f in meta.schema.fields}
    if dyn is None or "*" in names:
        return meta.output_field_ids(names), None
    keys = [n for n in names if n not in fields]
    for k in keys:
        if not k or k.startswith("$"):
            raise errors.ParameterInvalid(f"collection {meta.name!r} has no field {k!r}", field=k)
    plain = [n for n in names if n in fields]
    if keys and dyn.name not in plain:
        return meta.output_field_ids([*plain, dyn.name]), frozenset(keys)
    return meta.output_field_ids(plain), None


def result_columns(results: internal_pb2.RetrieveResults) -> list[FieldColumn]:
    return [field_data_to_column(fd) for fd in results.fields_data if fd.field_name != COUNT_FIELD]


def result_rows(results: internal_pb2.RetrieveResults, keys: frozenset[str] | None = None) -> list[dict[str, Any]]:
    columns = result_columns(results)
    n = len(columns[0]) if columns else 0
    return entities(columns, n, keys)


_SORTABLE = {schema_pb2.Bool, schema_pb2.Int8, schema_pb2.Int16, schema_pb2.Int32, schema_pb2.Int64, schema_pb2.Float,
             schema_pb2.Double, schema_pb2.VarChar, schema_pb2.String}


def check_sort_field(meta: CollectionMeta, name: str) -> schema_pb2.FieldSchema:
    """The field that orders rows by ``name``: the field itself, or ``$meta`` for a key of the dynamic field."""
    dyn = dynamic_field(meta.schema)
    if dyn is not None and name and not name.startswith("$") and all(f.name != name for f in meta.schema.fields):
        return dyn
    f = meta.field(name)
    if f.data_type not in _SORTABLE or f.is_dynamic:
        raise errors.ParameterInvalid(f"field {name!r} ({schema_pb2.DataType.Name(f.data_type)}) cannot order rows; "
                                      "sort by a scalar field", field=name)
    return f


def check_group_field(meta: CollectionMeta, name: str) -> schema_pb2.FieldSchema:
    f = check_sort_field(meta, name)
    if f.is_dynamic:
        return f
    if f.data_type in (schema_pb2.Float, schema_pb2.Double):
        raise errors.ParameterInvalid(f"field {name!r} is {schema_pb2.DataType.Name(f.data_type)}: group by a Bool, "
                                      "integer or VarChar field", field=name)
    return f


@staticmethod
def compile_expr(filter: Filter, meta: CollectionMeta) -> plan_pb2.Expr | None:
    """A read's filter as a ``plan.Expr``: a REST query object or a Milvus expression string, compiled
    against the schema."""
    if filter is None or isinstance(filter, plan_pb2.Expr):
        return filter
    if isinstance(filter, str):
        return compile_expression(filter, meta.schema)
    return compile_filter(filter, meta.schema)

