"""``/v2/vectordb/entities/*``: insert, upsert, delete, search, query, get.

The proxy's calls, as the MilvusService makes them: filters are Milvus expression strings compiled
against the collection's schema (:func:`~vecgrid.cluster.proxy.milvus_expr.compile_expression`, with
``exprParams`` as template values), ``outputFields`` name fields as Milvus does (``*`` for all of them,
keys of the dynamic field by name: :func:`~vecgrid.cluster.proxy.milvus_api.output_names`), a delete
whose filter names primary keys deletes them without a query
(:func:`~vecgrid.cluster.proxy.milvus_api.primary_keys_of`), and reads take the collection's
consistency level unless ``consistencyLevel`` names one (:func:`~vecgrid.cluster.proxy.milvus_api.read_level`;
``Session`` is this server's own session: it sees the writes made through this coordinator).

Answers are Milvus REST v2's: ``insert`` ``{insertCount, insertIds}``, ``upsert`` ``{upsertCount,
upsertIds}``, ``delete`` ``{deleteCount}``, ``search`` one flat list of hits (every query's, in query
order) with ``id``, ``distance`` and the output fields, ``query`` and ``get`` the rows (``count(*)``:
``[{"count(*)": n}]``).  ``limit`` defaults to 100 for ``search`` and ``query``; ``outputFields`` of
``query`` and ``get`` to ``["*"]``.  With ``Accept-Type-Allow-Int64: false`` Int64 values and keys are
decimal strings.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from vecgrid import errors
from vecgrid.cluster.proxy.milvus_api import ReadLevel, output_names, primary_keys_of, read_level
from vecgrid.cluster.proxy import rerank
from vecgrid.cluster.proxy.milvus_expr import compile_expression
from vecgrid.gpu import exprs
from vecgrid.http.milvus_v2.collections import consistency_level
from vecgrid.http.milvus_v2.handler import (CHECK_PRIMARY_KEY, READ, WRITE, Action, Body, Call, RestError,
                                            bad_format, missing, registry)
from vecgrid.proto import common_pb2, schema_pb2

ACTIONS: dict[str, Action] = {}
action = registry(ACTIONS)

COUNT_STAR = "count(*)"
DEFAULT_LIMIT = 100
#: keys of ``searchParams`` that are not search parameters of the index
_NOT_INDEX_PARAMS = {"params", "metricType", "metric_type", "ignore_growing", "ignoreGrowing", "hints"}
_STRING_PK = (schema_pb2.VarChar, schema_pb2.String)


# --- request parts ----------------------------------------------------------------------------------

def _rows(b: Body) -> list[Any]:
    if "data" not in b:
        raise missing("data")
    data = b.data["data"]
    rows = [data] if isinstance(data, dict) else data
    if not isinstance(rows, list) or not rows:
        raise RestError(1804, "fail to deal the insert data, error: data must be a non-empty array of objects")
    return rows


def _level(b: Body, meta) -> ReadLevel:
    """The read's consistency (module doc): the collection's unless ``consistencyLevel`` names one."""
    asked = b.get("consistencyLevel", str, "")
    level = consistency_level(asked, meta.consistency_level)
    found = read_level(level, not asked, 0, meta.consistency_level)
    if found.guarantee_timestamp is not None and level == common_pb2.Session:
        return ReadLevel("Session", None)   # no client timestamp over REST: this proxy's own session
    return found


def _filter(b: Body, meta):
    return compile_expression(b.get("filter", str, ""), meta.schema, params=b.get("exprParams", dict))


def _keys(b: Body, meta) -> list[Any]:
    """``id`` (one key or a list) as primary keys of the collection's key type; 1806 otherwise."""
    raw = b.data.get("id")
    if raw is None or raw == []:
        raise missing("id")
    values = raw if isinstance(raw, list) else [raw]
    keys: list[Any] = []
    for v in values:
        if meta.pk_field.data_type in _STRING_PK:
            ok = isinstance(v, str)
        else:
            if isinstance(v, str) and v.strip().lstrip("-").isdigit():
                v = int(v)
            ok = isinstance(v, int) and not isinstance(v, bool)
        if not ok:
            raise RestError(CHECK_PRIMARY_KEY, "please check the primary key and its' type can only in [int, string], "
                                               f"error: {v!r} is not a key of {meta.pk_field.name!r} "
                                               f"({schema_pb2.DataType.Name(meta.pk_field.data_type)})")
        keys.append(v)
    return keys


def _vectors(data: Any) -> np.ndarray:
    try:
        with np.errstate(over="ignore"):
            xq = np.asarray(data, dtype=np.float32)
    except (TypeError, ValueError):
        raise bad_format("data must be an array of vectors (arrays of numbers, all of one dimension)") from None
    if xq.ndim != 2 or xq.shape[0] == 0 or xq.shape[1] == 0:
        raise bad_format(f"data must be an array of vectors (arrays of numbers), got shape {list(xq.shape)}")
    if not np.isfinite(xq).all():
        raise bad_format("vectors must not contain NaN or Infinity (or numbers beyond float32)")
    return xq


def _search_params(b: Body) -> dict[str, Any]:
    """``searchParams`` (``{metricType, params: {nprobe, ef, radius, range_filter...}}``, or its keys
    given flat), and the older top-level ``params`` (``radius``, ``range_filter``), as the proxy's
    search parameters."""
    raw = b.get("searchParams", dict, {})
    out: dict[str, Any] = {k: v for k, v in raw.items() if k not in _NOT_INDEX_PARAMS}
    inner = raw.get("params")
    if inner is not None:
        if not isinstance(inner, dict):
            raise bad_format("searchParams.params must be an object")
        out.update(inner)
    metric = raw.get("metricType") or raw.get("metric_type")
    if metric:
        out["metric_type"] = metric
    for key, value in b.get("params", dict, {}).items():
        if key in ("radius", "range_filter"):
            out.setdefault(key, value)
    return out


def _shaped(rows: list[dict[str, Any]], schema: schema_pb2.CollectionSchema, b: Body,
            id_key: bool = False) -> list[dict[str, Any]]:
    """Rows as Milvus writes them: Float and FloatVector values as float32 (``0.1``, not the float64
    digits of the float32 nearest to it), Int64 values (and the hits' ``id`` of an Int64 key) as decimal
    strings for a client that sent ``Accept-Type-Allow-Int64: false``."""
    floats = [f.name for f in schema.fields if f.data_type in (schema_pb2.Float, schema_pb2.FloatVector)]
    int64 = [] if b.allow_int64 else [f.name for f in schema.fields
                                       if f.data_type == schema_pb2.Int64 and not f.is_dynamic]
    if id_key and not b.allow_int64 and any(f.is_primary_key and f.data_type == schema_pb2.Int64
                                            for f in schema.fields):
        int64.append("id")
    for row in rows:
        for name in floats:
            v = row.get(name)
            if isinstance(v, (float, list)):
                row[name] = np.asarray(v, dtype=np.float32) if isinstance(v, list) else np.float32(v)
        for name in int64:
            v = row.get(name)
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                row[name] = str(v)
    return rows


def _ids(ids: list[Any], b: Body) -> list[Any]:
    return ids if b.allow_int64 else [str(i) if isinstance(i, (int, np.integer)) else i for i in ids]


# --- writes -----------------------------------------------------------------------------------------

async def _write(call: Call, upsert: bool) -> dict[str, Any]:
    b, proxy = call.body, call.v2.proxy
    name = b.name()
    rows = _rows(b)
    partition = b.get("partitionName", str, "") or None
    result = await (proxy.upsert if upsert else proxy.insert)(name, rows, partition)
    if upsert:
        return {"upsertCount": result.upsert_cnt, "upsertIds": _ids(list(result.ids), b)}
    return {"insertCount": result.insert_cnt, "insertIds": _ids(list(result.ids), b)}


@action("insert", WRITE)
async def insert(call: Call) -> dict[str, Any]:
    return await _write(call, upsert=False)


@action("upsert", WRITE)
async def upsert(call: Call) -> dict[str, Any]:
    return await _write(call, upsert=True)


@action("delete", WRITE)
async def delete(call: Call) -> dict[str, Any]:
    """By ``filter`` (an expression; ``id in [...]`` deletes those keys without a query) or, without
    one, by ``id``."""
    b, proxy = call.body, call.v2.proxy
    name = b.name()
    meta = await proxy.describe(name, fresh=True)
    partition = b.get("partitionName", str, "") or None
    if b.get("filter", str, ""):
        expr = _filter(b, meta)
        keys = primary_keys_of(expr)
        if keys is not None:
            result = await proxy.delete(name, ids=keys, partition=partition)
        else:
            result = await proxy.delete(name, filter=expr, partition=partition)
    elif "id" in b:
        result = await proxy.delete(name, ids=_keys(b, meta), partition=partition)
    else:
        raise missing("filter")
    return {"deleteCount": result.delete_cnt}


# --- reads ------------------------------------------------------------------------------------------

@action("search", READ)
async def search(call: Call) -> list[dict[str, Any]]:
    b, proxy = call.body, call.v2.proxy
    meta = await proxy.describe(b.name())
    vectors = _vectors(b.get("data", list, required=True))
    level = _level(b, meta)
    names = output_names(meta.schema, b.strings("outputFields"))
    group_by = b.get("groupingField", str, "") or None
    hits = await proxy.search(
        meta, vectors, limit=b.get("limit", int, DEFAULT_LIMIT), offset=b.get("offset", int, 0),
        filter=_filter(b, meta), output_fields=names, anns_field=b.get("annsField", str, "") or None,
        search_params=_search_params(b), partition_names=b.strings("partitionNames"),
        consistency=level.consistency, guarantee_timestamp=level.guarantee_timestamp,
        group_by=group_by, group_size=b.get("groupSize", int, 0) or 1)
    rows = [{**h["entity"], "id": h["id"], "distance": np.float32(h["distance"])}
            for per_query in hits for h in per_query]
    return _shaped(rows, meta.schema, b, id_key=True)


@action("hybrid_search", READ)
async def hybrid_search(call: Call) -> list[dict[str, Any]]:
    """``search``: one search per entry (``data``, ``annsField``, ``filter``, ``limit``, ``offset``,
    ``metricType``, ``params``), fused by ``rerank`` (``{"strategy": "rrf" | "weighted", "params": {"k" |
    "weights"}}``) into the best ``limit`` after ``offset``, as the MilvusService's HybridSearch does."""
    b, proxy = call.body, call.v2.proxy
    meta = await proxy.describe(b.name())
    items = b.get("search", list, required=True)
    if not all(isinstance(item, dict) for item in items):
        raise bad_format("search must be an array of search objects")
    subs = [Body(item, b.allow_int64) for item in items]
    spec = b.get("rerank", dict, required=True)
    score = rerank.ranker(str(spec.get("strategy", "")), spec.get("params") or {}, len(subs))
    level = _level(b, meta)
    names = output_names(meta.schema, b.strings("outputFields"))

    def params(s: Body) -> dict[str, Any]:
        out = dict(s.get("params", dict, {}))
        if s.get("metricType", str, ""):
            out["metric_type"] = s.get("metricType", str, "")
        return out
    searched = await asyncio.gather(*(proxy.search(
        meta, _vectors(s.get("data", list, required=True)), limit=s.get("limit", int, DEFAULT_LIMIT),
        offset=s.get("offset", int, 0), filter=_filter(s, meta), output_fields=names,
        anns_field=s.get("annsField", str, "") or None, search_params=params(s),
        partition_names=b.strings("partitionNames"), consistency=level.consistency,
        guarantee_timestamp=level.guarantee_timestamp) for s in subs))
    metrics = [meta.metric(meta.vector_field(s.get("annsField", str, "") or None)) for s in subs]
    fused = rerank.fuse(searched, metrics, score, b.get("limit", int, DEFAULT_LIMIT), b.get("offset", int, 0))
    rows = [{**h["entity"], "id": h["id"], "distance": np.float32(h["distance"])} for query in fused for h in query]
    return _shaped(rows, meta.schema, b, id_key=True)


@action("query", READ)
async def query(call: Call) -> list[dict[str, Any]]:
    b, proxy = call.body, call.v2.proxy
    meta = await proxy.describe(b.name())
    asked = b.strings("outputFields") or ["*"]
    expr = _filter(b, meta)
    level = _level(b, meta)
    reads = dict(filter=expr, partition_names=b.strings("partitionNames"), consistency=level.consistency,
                 guarantee_timestamp=level.guarantee_timestamp)
    if COUNT_STAR in (n.strip().lower() for n in asked):
        if len(asked) > 1:
            raise errors.ParameterInvalid("count(*) cannot be queried with other output fields")
        return [{COUNT_STAR: await proxy.count(meta, **reads)}]
    limit = b.get("limit", int, DEFAULT_LIMIT)
    limit = limit if limit > 0 else None   # Milvus sends no limit for 0
    offset = b.get("offset", int, 0)
    if expr is None and limit is None:
        raise errors.ParameterInvalid("empty expression should be used with limit")
    if offset and limit is None:
        raise errors.ParameterInvalid("offset needs a limit")
    rows = await proxy.query(meta, output_fields=output_names(meta.schema, asked), limit=limit, offset=offset, **reads)
    return _shaped(rows, meta.schema, b)


@action("get", READ)
async def get(call: Call) -> list[dict[str, Any]]:
    b, proxy = call.body, call.v2.proxy
    meta = await proxy.describe(b.name())
    keys = _keys(b, meta)
    pk = meta.pk_field
    expr = exprs.term(exprs.column(pk.fieldID, pk.data_type, is_primary_key=True), keys)
    level = _level(b, meta)
    partitions = b.strings("partitionNames") or ([b.get("partitionName", str)] if "partitionName" in b else [])
    rows = await proxy.query(meta, filter=expr,
                             output_fields=output_names(meta.schema, b.strings("outputFields") or ["*"]),
                             partition_names=partitions, consistency=level.consistency,
                             guarantee_timestamp=level.guarantee_timestamp)
    return _shaped(rows, meta.schema, b)
