"""Queries through the proxy (Milvus's proxy ``task_query.go``): rows by filter or primary key, counts,
sorted pages and group tallies, each sent to a shard leader of every channel and merged by primary key
with the shard leader's own reducer (:func:`~vecgrid.cluster.reduce.merge_retrieve`).  Rows answer as
plain Python ``{field: value}`` dicts, the primary key always among them."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from vecgrid import errors
from vecgrid.cluster.gather import gather_all
from vecgrid.cluster.proxy.catalog_access import CollectionMeta
from vecgrid.cluster.proxy.consistency import Guarantee
from vecgrid.cluster.proxy.filters import dynamic_field
from vecgrid.cluster.proxy.read_parts import (Filter, ReadContext, check_group_field, check_sort_field, compile_expr,
                                              entities, next_request_id, output_ids, result_columns,
                                              result_rows)
from vecgrid.cluster.reduce import merge_retrieve, off_loop
from vecgrid.gpu import exprs
from vecgrid.gpu import jsonkeys
from vecgrid.gpu.columns import FieldColumn
from vecgrid.proto import common_pb2, internal_pb2, plan_pb2, query_coord_pb2, schema_pb2


async def stored_vectors(
    ctx: ReadContext,
    collection: "str | CollectionMeta",
    ids: Sequence[Any],
    *,
    anns_field: str | None = None,
    consistency: str | int | None = "Strong",
    guarantee_timestamp: int | None = None,
) -> tuple[np.ndarray, list[Any]]:
    """``(vectors in the order of ids, ids not found)``: the stored vectors of ``anns_field`` (a search by
    primary keys, which Milvus lacks)."""
    meta = await ctx.describe(collection)
    field = meta.vector_field(anns_field)
    pk = meta.pk_field
    keys = _check_keys(pk, ids)
    cond = exprs.term(exprs.column(pk.fieldID, pk.data_type, is_primary_key=True), keys)
    inner, guarantee = await _retrieve_request(ctx, meta, cond, [pk.fieldID, field.fieldID], (), consistency,
                                               guarantee_timestamp)
    merged = await _retrieve(ctx, meta, inner, guarantee, pin=False)
    columns = {c.name: c for c in result_columns(merged)}
    dim = meta.dim(field)
    if pk.name not in columns:
        return np.zeros((0, dim), np.float32), list(keys)
    found = {k: i for i, k in enumerate(columns[pk.name].values.tolist())}
    missing = [k for k in keys if k not in found]
    if missing:
        return np.zeros((0, dim), np.float32), missing
    rows = np.asarray([found[k] for k in keys], dtype=np.int64)
    return np.asarray(columns[field.name].values, dtype=np.float32).reshape(-1, dim)[rows], []


async def query(
    ctx: ReadContext,
    collection: "str | CollectionMeta",
    *,
    filter: Filter = None,
    output_fields: Sequence[str] = (),
    limit: int | None = None,
    offset: int = 0,
    partition_names: Sequence[str] = (),
    consistency: str | int | None = "Strong",
    guarantee_timestamp: int | None = None,
) -> list[dict[str, Any]]:
    """Rows matching ``filter`` ordered by primary key: ``{field: value}`` with the primary key and
    ``output_fields``; at most ``limit`` after skipping ``offset`` (no limit: every row)."""
    if offset < 0 or (limit is not None and limit < 0):
        raise errors.ParameterInvalid(f"limit ({limit}) and offset ({offset}) must not be negative")
    meta = await ctx.describe(collection)
    return await _query(ctx, meta, filter=filter, output_fields=output_fields, limit=limit, offset=offset,
                        partition_names=partition_names, consistency=consistency,
                        guarantee_timestamp=guarantee_timestamp)


async def _query(
    ctx: ReadContext,
    meta: CollectionMeta,
    *,
    filter: Filter,
    output_fields: Sequence[str],
    limit: int | None,
    offset: int,
    partition_names: Sequence[str],
    consistency: str | int | None,
    guarantee_timestamp: int | None,
) -> list[dict[str, Any]]:
    if limit == 0:
        return []  # nothing asked for (a Feathers $limit=0 wants only the count: see count())
    cut = -1 if limit is None else limit + offset
    out_ids, keys = output_ids(meta, output_fields)
    inner, guarantee = await _retrieve_request(ctx, meta, filter, out_ids,
                                               partition_names, consistency, guarantee_timestamp, limit=cut)
    shards, parts = await ctx.router.fan_out(meta.id, "Query", _query_request(inner, guarantee))

    def reduce() -> list[dict[str, Any]]:
        return result_rows(merge_retrieve(parts, inner, [s.channel for s in shards], cut), keys)[offset:]
    return await off_loop(reduce, sum(p.all_retrieve_count for p in parts))


async def count(
    ctx: ReadContext,
    collection: "str | CollectionMeta",
    *,
    filter: Filter = None,
    partition_names: Sequence[str] = (),
    consistency: str | int | None = "Strong",
    guarantee_timestamp: int | None = None,
) -> int:
    """How many rows match ``filter`` (Milvus's ``count(*)``)."""
    meta = await ctx.describe(collection)
    inner, guarantee = await _retrieve_request(ctx, meta, filter, [], partition_names, consistency,
                                               guarantee_timestamp, is_count=True)
    shards, parts = await ctx.router.fan_out(meta.id, "Query", _query_request(inner, guarantee))
    merged = merge_retrieve(parts, inner, [s.channel for s in shards])
    return int(merged.fields_data[0].scalars.long_data.data[0]) if len(merged.fields_data) else 0


async def find(
    ctx: ReadContext,
    collection: "str | CollectionMeta",
    *,
    filter: Filter = None,
    sort: Sequence[tuple[str, int]] = (),
    offset: int = 0,
    limit: int | None = None,
    output_fields: Sequence[str] = (),
    partition_names: Sequence[str] = (),
    consistency: str | int | None = "Strong",
    guarantee_timestamp: int | None = None,
    with_total: bool = True,
) -> tuple[int | None, list[dict[str, Any]]]:
    """``(total, page)``: the rows matching ``filter`` ordered by ``sort`` (``[(field, 1 | -1)]`` on scalar
    fields or keys of the dynamic field — numbers, then strings, then booleans, rows lacking the key last in
    either direction — then by primary key), ``limit`` of them after ``offset``, and how many match in all — both read
    from ONE snapshot (the guarantee timestamps pinned as the MVCC timestamps of every request).

    Ordered by primary key (no ``sort``, or the key ascending) the shard leaders cut each channel at
    ``offset + limit`` rows; ordered by anything else every matching row's key and sort fields are read,
    sorted here (exact across shards and segments), and the page's other fields read for its keys only."""
    if offset < 0 or (limit is not None and limit < 0):
        raise errors.ParameterInvalid(f"limit ({limit}) and offset ({offset}) must not be negative")
    meta = await ctx.describe(collection)
    pk = meta.pk_field
    order = [(name, direction) for name, direction in sort]
    for name, direction in order:
        check_sort_field(meta, name)
        if direction not in (1, -1):
            raise errors.ParameterInvalid(f"the sort direction of {name!r} is 1 or -1, got {direction!r}")
    expr = compile_expr(filter, meta)
    partition_ids = meta.partition_ids(partition_names)
    out_ids, dyn_keys = output_ids(meta, output_fields)
    guarantee, _ = await ctx.guarantees.guarantee(consistency, guarantee_timestamp, meta)

    async def total() -> int | None:
        return await _count_pinned(ctx, meta, expr, partition_ids, guarantee) if with_total else None

    if not order or order == [(pk.name, 1)]:
        async def page() -> list[dict[str, Any]]:
            if limit == 0:
                return []
            cut = -1 if limit is None else offset + limit
            inner = _retrieve_inner(meta, expr, out_ids, partition_ids, limit=cut)
            return result_rows(await _retrieve(ctx, meta, inner, guarantee, pin=True, limit=cut), dyn_keys)[offset:]
        count, rows = await gather_all([total(), page()])
        return count, rows
    key_ids, _ = output_ids(meta, [pk.name, *(name for name, _ in order)])
    inner = _retrieve_inner(meta, expr, key_ids, partition_ids)
    keyed = await _retrieve(ctx, meta, inner, guarantee, pin=True)
    columns = {c.name: c for c in result_columns(keyed)}
    if pk.name not in columns:
        return (0 if with_total else None), []
    n = len(columns[pk.name])
    ranked = await off_loop(lambda: _sort_order(columns, order, pk.name, meta), n)
    window = ranked[offset:None if limit is None else offset + limit]
    if set(out_ids) <= set(key_ids):
        picked = [columns[name].take(window) for name in columns if columns[name].field_id in out_ids
                  or name == pk.name]
        return (n if with_total else None), entities(picked, len(window), dyn_keys)
    keys = columns[pk.name].values[window].tolist()
    if not keys:
        return (n if with_total else None), []
    cond = exprs.term(exprs.column(pk.fieldID, pk.data_type, is_primary_key=True), keys)
    inner = _retrieve_inner(meta, cond if expr is None else exprs.and_(expr, cond), out_ids, partition_ids)
    by_key = {
        row[pk.name]: row for row in result_rows(await _retrieve(ctx, meta, inner, guarantee, pin=True), dyn_keys)
    }
    return (n if with_total else None), [by_key[k] for k in keys if k in by_key]


async def count_groups(ctx: ReadContext, collection: "str | CollectionMeta", field: str, *, filter: Filter = None,
                       partition_names: Sequence[str] = (), consistency: str | int | None = "Strong",
                       guarantee_timestamp: int | None = None) -> list[tuple[Any, int]]:
    """``[(value, rows)]`` for every distinct value of the scalar ``field`` among the rows matching ``filter``,
    most rows first (ties by value)."""
    meta = await ctx.describe(collection)
    f = check_group_field(meta, field)
    inner, guarantee = await _retrieve_request(ctx, meta, filter, [meta.pk_field.fieldID, f.fieldID],
                                               partition_names, consistency, guarantee_timestamp)
    merged = await _retrieve(ctx, meta, inner, guarantee, pin=False)
    column = next((c for c in result_columns(merged) if c.name == f.name), None)
    if column is None or not len(column):
        return []
    if f.name != field:   # a key of the dynamic field: its values, rows lacking it under None
        return await off_loop(lambda: _tally_key(column, field), len(column))

    def tally() -> list[tuple[Any, int]]:
        values, counts = np.unique(column.values, return_counts=True)
        order = np.argsort(-counts, kind="stable")
        return list(zip(values[order].tolist(), counts[order].tolist()))
    return await off_loop(tally, len(column))


async def _retrieve_request(ctx: ReadContext, meta: CollectionMeta, filter: Filter, out_ids: list[int],
                            partition_names: Sequence[str], consistency: str | int | None,
                            explicit: int | None, *, limit: int = -1,
                            is_count: bool = False) -> tuple[internal_pb2.RetrieveRequest, Guarantee]:
    expr = compile_expr(filter, meta)
    partition_ids = meta.partition_ids(partition_names)
    guarantee, _ = await ctx.guarantees.guarantee(consistency, explicit, meta)
    return _retrieve_inner(meta, expr, out_ids, partition_ids, limit=limit, is_count=is_count), guarantee


@staticmethod
def _retrieve_inner(meta: CollectionMeta, expr: plan_pb2.Expr | None, out_ids: list[int],
                    partition_ids: list[int], *, limit: int = -1,
                    is_count: bool = False) -> internal_pb2.RetrieveRequest:
    node = plan_pb2.QueryPlanNode(is_count=is_count, limit=max(limit, 0))
    if expr is not None:
        node.predicates.CopyFrom(expr)
    req_id = next_request_id()
    return internal_pb2.RetrieveRequest(
        base=common_pb2.MsgBase(msg_type=common_pb2.Retrieve, msgID=req_id), reqID=req_id, dbID=meta.db_id,
        collectionID=meta.id, partitionIDs=partition_ids,
        serialized_expr_plan=plan_pb2.PlanNode(query=node, output_field_ids=out_ids).SerializeToString(),
        output_fields_id=out_ids, limit=max(limit, 0), is_count=is_count)


async def _retrieve(
    ctx: ReadContext,
    meta: CollectionMeta,
    inner: internal_pb2.RetrieveRequest,
    guarantee: Guarantee,
    *,
    pin: bool,
    limit: int = -1,
) -> internal_pb2.RetrieveResults:
    """The channels' answers to ``inner``, merged; ``pin`` reads every channel at its guarantee timestamp
    (the requests of one call then see one snapshot)."""
    shards, parts = await ctx.router.fan_out(meta.id, "Query", _query_request(inner, guarantee, pin=pin))
    return await off_loop(lambda: merge_retrieve(parts, inner, [s.channel for s in shards], limit),
                           sum(p.all_retrieve_count for p in parts))


async def _count_pinned(ctx: ReadContext, meta: CollectionMeta, expr: plan_pb2.Expr | None, partition_ids: list[int],
                        guarantee: Guarantee) -> int:
    inner = _retrieve_inner(meta, expr, [], partition_ids, is_count=True)
    merged = await _retrieve(ctx, meta, inner, guarantee, pin=True)
    return int(merged.fields_data[0].scalars.long_data.data[0]) if len(merged.fields_data) else 0


def _query_request(inner: internal_pb2.RetrieveRequest, guarantee: Guarantee,
                   pin: bool = False) -> Callable[[str, int], query_coord_pb2.QueryRequest]:
    def request(channel: str, channels: int) -> query_coord_pb2.QueryRequest:
        req = query_coord_pb2.QueryRequest(dml_channels=[channel], from_shard_leader=False, scope=query_coord_pb2.All)
        req.req.CopyFrom(inner)
        req.req.guarantee_timestamp = guarantee.of(channel)
        if pin:
            req.req.mvcc_timestamp = guarantee.of(channel)
        return req
    return request


def _check_keys(pk: schema_pb2.FieldSchema, ids: Sequence[Any]) -> list[Any]:
    keys = list(ids) if isinstance(ids, (list, tuple)) else None
    if not keys:
        raise errors.ParameterInvalid("ids must be a non-empty array of primary keys")
    want = str if pk.data_type in (schema_pb2.VarChar, schema_pb2.String) else int
    for k in keys:
        if not isinstance(k, want) or isinstance(k, bool):
            raise errors.ParameterInvalid(f"the primary key {pk.name!r} is {schema_pb2.DataType.Name(pk.data_type)}: "
                                          f"{k!r} is not one", field=pk.name)
    return keys


def _sort_order(columns: Mapping[str, FieldColumn], order: Sequence[tuple[str, int]], pk: str,
                meta: CollectionMeta | None = None) -> np.ndarray:
    """Row positions ordered by ``order`` (first key first), ties by primary key ascending; a key of the
    dynamic field orders numbers, then strings, then booleans, and puts rows lacking it last either way."""
    def rank(values: np.ndarray) -> np.ndarray:
        return np.unique(values, return_inverse=True)[1].reshape(-1)
    dyn = dynamic_field(meta.schema) if meta is not None else None
    keys = [rank(columns[pk].values)]
    for name, direction in reversed(order):
        if name in columns:
            r = rank(columns[name].values)
            keys.append(r if direction == 1 else -r)
        else:
            assert dyn is not None, name
            r, missing = _key_rank(jsonkeys.extract(columns[dyn.name].values, name))
            keys.append(r if direction == 1 else -r)
            keys.append(missing)
    return np.lexsort(keys)


def _key_rank(kc: jsonkeys.KeyColumn) -> tuple[np.ndarray, np.ndarray]:
    """``(dense rank, lacks the key)`` of a dynamic key's values: numbers < strings < booleans."""
    r = np.zeros(len(kc), np.int64)
    base = 0
    for kind, values in ((jsonkeys.NUMBER, kc.num), (jsonkeys.STRING, kc.strs), (jsonkeys.BOOL, kc.bools)):
        rows = np.flatnonzero(kc.kind == kind)
        if len(rows):
            if kind == jsonkeys.NUMBER and kc.is_int[rows].all():
                values = kc.ints   # exact beyond 2^53
            uniq, inverse = np.unique(values[rows], return_inverse=True)
            r[rows] = base + inverse.reshape(-1)
            base += len(uniq)
    missing = (kc.kind != jsonkeys.NUMBER) & (kc.kind != jsonkeys.STRING) & (kc.kind != jsonkeys.BOOL)
    return r, missing


def _tally_key(column: FieldColumn, key: str) -> list[tuple[Any, int]]:
    """``[(value, rows)]`` of a dynamic key, most rows first (``None``: rows lacking it); 1 and ``true`` differ."""
    kc = jsonkeys.extract(column.values, key)
    values = kc.values(np.arange(len(kc)))
    counts: dict[tuple[str, Any], int] = {}
    for v in values:
        tag = (type(v).__name__ if not isinstance(v, (int, float)) or isinstance(v, bool) else "number", v)
        counts[tag] = counts.get(tag, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    return [(v, n) for (_, v), n in ranked]
