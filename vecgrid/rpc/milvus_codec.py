"""Milvus's public messages to and from what the proxy and the coordinator take and give.

The decoders read what pymilvus (and the other SDKs) send: ``KeyValuePair`` lists of search and
query params, ``FieldData`` columns of an insert (keys beyond the schema in the ``$meta`` column,
marked ``is_dynamic``), template values of an expression, the consistency fields of a read.  The
encoders give back what those clients read: ``SearchResultData`` and ``QueryResults`` columns (the
dynamic keys in one ``$meta`` JSON column, the names asked for in ``output_fields``), ``IDs``,
``CollectionSchema`` and index descriptions.  Nothing here calls the cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import orjson

from vecgrid import errors
from vecgrid.gpu.columns import FieldColumn
from vecgrid.gpu.results import column_to_field_data, field_data_to_column
from vecgrid.proto import common_pb2, schema_pb2
from vecgrid.storage.catalog.schema_rules import DYNAMIC_FIELD_NAME, kv_dict

D = schema_pb2.DataType
COUNT_STAR = "count(*)"


def pairs(mapping: Mapping[str, Any]) -> list[common_pb2.KeyValuePair]:
    return [common_pb2.KeyValuePair(key=str(k), value=v if isinstance(v, str) else json.dumps(v))
            for k, v in mapping.items()]


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise errors.ParameterInvalid(f"{name} [{value}] is invalid, it should be an integer") from None


# --- reads -----------------------------------------------------------------------------------------

@dataclass
class SearchArgs:
    """A ``SearchRequest``'s ``search_params`` as the proxy's search takes them."""

    anns_field: str | None
    limit: int
    offset: int = 0
    round_decimal: int = -1
    params: dict[str, Any] = field(default_factory=dict)
    group_by: str | None = None
    group_size: int = 1


def search_args(search_params: Iterable[common_pb2.KeyValuePair]) -> SearchArgs:
    """pymilvus's ``search_params``: ``topk``, ``offset``, ``anns_field``, ``metric_type``, ``params``
    (JSON: ``nprobe``, ``ef``, ``radius``, ``range_filter``...), ``round_decimal``, ``group_by_field``,
    ``group_size``; ``ignore_growing`` and ``hints`` are accepted and change nothing here."""
    p = kv_dict(search_params)
    if "topk" not in p:
        raise errors.ParameterInvalid("topk not found in search_params")
    params: dict[str, Any] = {}
    raw = p.get("params", "")
    if raw:
        try:
            decoded = json.loads(raw)
        except ValueError:
            raise errors.ParameterInvalid(f"search params {raw!r} are not JSON") from None
        if not isinstance(decoded, dict):
            raise errors.ParameterInvalid(f"search params {raw!r} must be a JSON object")
        params.update(decoded)
    if p.get("metric_type"):
        params["metric_type"] = p["metric_type"]
    group_by = p.get("group_by_field") or None
    return SearchArgs(anns_field=p.get("anns_field") or None, limit=_int(p["topk"], "topk"),
                      offset=_int(p.get("offset", "0") or "0", "offset"),
                      round_decimal=_int(p.get("round_decimal", "-1") or "-1", "round_decimal"),
                      params=params, group_by=group_by,
                      group_size=_int(p.get("group_size", "1") or "1", "group_size"))


@dataclass
class RankArgs:
    strategy: str
    params: dict[str, Any]
    limit: int
    offset: int = 0
    round_decimal: int = -1


def rank_args(rank_params: Iterable[common_pb2.KeyValuePair]) -> RankArgs:
    """A hybrid search's ``rank_params`` as pymilvus sends them: ``strategy`` (rrf, weighted), ``params``
    (JSON: ``k`` or ``weights``), ``limit``, ``offset``, ``round_decimal``."""
    p = kv_dict(rank_params)
    try:
        params = json.loads(p.get("params") or "{}")
    except ValueError:
        raise errors.ParameterInvalid(f"rank params {p.get('params')!r} are not JSON") from None
    if not isinstance(params, dict):
        raise errors.ParameterInvalid(f"rank params {p.get('params')!r} must be a JSON object")
    return RankArgs(p.get("strategy", "rrf"), params, _int(p.get("limit", "10") or "10", "limit"),
                    _int(p.get("offset", "0") or "0", "offset"),
                    _int(p.get("round_decimal", "-1") or "-1", "round_decimal"))


@dataclass
class QueryArgs:
    limit: int | None = None
    offset: int = 0


def query_args(query_params: Iterable[common_pb2.KeyValuePair]) -> QueryArgs:
    """``limit`` and ``offset`` of ``query_params`` (``reduce_stop_for_best`` and iterator hints change
    nothing: results come in primary-key order already)."""
    p = kv_dict(query_params)
    limit = _int(p["limit"], "limit") if p.get("limit") not in (None, "") else None
    offset = _int(p.get("offset", "0") or "0", "offset")
    if offset and limit is None:
        raise errors.ParameterInvalid("offset needs a limit")
    return QueryArgs(limit, offset)


def template_values(values: Mapping[str, schema_pb2.TemplateValue]) -> dict[str, Any]:
    """``expr_template_values`` as plain Python values."""
    return {name: _template(v) for name, v in values.items()}


def _template(v: schema_pb2.TemplateValue) -> Any:
    kind = v.WhichOneof("val")
    if kind == "array_val":
        return _template_array(v.array_val)
    if kind is None:
        raise errors.ParameterInvalid("an expression template value is empty")
    return getattr(v, kind)


def _template_array(a: schema_pb2.TemplateArrayValue) -> list[Any]:
    kind = a.WhichOneof("data")
    if kind == "array_data":
        return [_template_array(x) for x in a.array_data.data]
    if kind == "json_data":
        return [json.loads(x) for x in a.json_data.data]
    return list(getattr(a, kind).data) if kind else []


# --- writes ----------------------------------------------------------------------------------------

def insert_columns(fields_data: Sequence[schema_pb2.FieldData], num_rows: int) -> dict[str, Any]:
    """An insert's columns by field name; the dynamic column's JSON text as is (the writer merges and
    checks it).  Every column must have ``num_rows`` values."""
    out: dict[str, Any] = {}
    for fd in fields_data:
        name = DYNAMIC_FIELD_NAME if fd.is_dynamic else fd.field_name
        if not name:
            raise errors.ParameterInvalid("a column of the insert has no field name")
        if name in out:
            raise errors.ParameterInvalid(f"duplicated field name {name!r} in the insert")
        col = field_data_to_column(fd)
        values: Any = col.values
        if fd.type == D.JSON:
            values = [v.decode() if isinstance(v, bytes) else v for v in values.tolist()]
        if len(values) != num_rows:
            raise errors.ParameterInvalid(f"the num_rows ({num_rows}) of field ({name}) is not equal to passed "
                                          f"num_rows ({len(values)})")
        out[name] = values
    return out


def ids_message(pks: Sequence[Any], pk: schema_pb2.FieldSchema) -> schema_pb2.IDs:
    if pk.data_type == D.VarChar:
        return schema_pb2.IDs(str_id=schema_pb2.StringArray(data=[str(k) for k in pks]))
    return schema_pb2.IDs(int_id=schema_pb2.LongArray(data=[int(k) for k in pks]))


# --- results ---------------------------------------------------------------------------------------

_NUMPY = {D.Bool: np.bool_, D.Int8: np.int8, D.Int16: np.int16, D.Int32: np.int32, D.Int64: np.int64,
          D.Float: np.float32, D.Double: np.float64}


def rows_to_fields(rows: Sequence[Mapping[str, Any]], schema: schema_pb2.CollectionSchema,
                   names: Sequence[str]) -> list[schema_pb2.FieldData]:
    """Columns of ``rows`` (the proxy's dicts, dynamic keys flattened into them) for the fields named in
    ``names`` plus the primary key; every key outside the schema goes into one ``$meta`` JSON column."""
    by_name = {f.name: f for f in schema.fields}
    pk = next(f for f in schema.fields if f.is_primary_key)
    wanted = [pk.name, *(n for n in names if n in by_name and n != pk.name and not by_name[n].is_dynamic)]
    out = [_column(by_name[n], [r.get(n) for r in rows]) for n in wanted]
    dyn = next((f for f in schema.fields if f.is_dynamic), None)
    if dyn is not None and any(n not in by_name or n == dyn.name for n in names):
        meta = [{k: v for k, v in r.items() if k not in by_name} for r in rows]
        out.append(_column(dyn, meta))
    return out


def _column(f: schema_pb2.FieldSchema, values: list[Any]) -> schema_pb2.FieldData:
    t = f.data_type
    if t in _NUMPY:
        arr = np.asarray(values, dtype=_NUMPY[t])
    elif t in (D.VarChar, D.String):
        arr = np.asarray(values, dtype=object)
    elif t == D.JSON:
        arr = np.empty(len(values), dtype=object)
        arr[:] = [orjson.dumps(v) for v in values]
    elif t == D.FloatVector:
        dim = next((int(p.value) for p in f.type_params if p.key == "dim"), 0)
        arr = np.asarray(values, dtype=np.float32).reshape(-1, dim)
        return column_to_field_data(FieldColumn(f.name, f.fieldID, t, arr, dim, f.is_dynamic))
    else:
        raise errors.ParameterInvalid(f"output of {D.Name(t)} field {f.name!r} is not supported")
    return column_to_field_data(FieldColumn(f.name, f.fieldID, t, arr, 0, f.is_dynamic))


def search_result_data(hits: Sequence[Sequence[Mapping[str, Any]]], schema: schema_pb2.CollectionSchema,
                       names: Sequence[str], limit: int) -> schema_pb2.SearchResultData:
    """The proxy's hits (per query ``[{"id", "distance", "entity"}]``) as Milvus's ``SearchResultData``."""
    pk = next(f for f in schema.fields if f.is_primary_key)
    flat = [h for query in hits for h in query]
    srd = schema_pb2.SearchResultData(num_queries=len(hits), top_k=limit,
                                      scores=[h["distance"] for h in flat],
                                      topks=[len(q) for q in hits], output_fields=list(names),
                                      primary_field_name=pk.name)
    srd.ids.CopyFrom(ids_message([h["id"] for h in flat], pk))
    if names:
        rows = [{pk.name: h["id"], **h["entity"]} for h in flat]
        srd.fields_data.extend(f for f in rows_to_fields(rows, schema, names)
                               if f.field_name != pk.name or pk.name in names)
    return srd


def count_result(count: int) -> schema_pb2.FieldData:
    """``count(*)``'s answer: one Int64 column of one value."""
    return schema_pb2.FieldData(type=D.Int64, field_name=COUNT_STAR,
                                scalars=schema_pb2.ScalarField(long_data=schema_pb2.LongArray(data=[count])))
