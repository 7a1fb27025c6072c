"""The client-side role of Milvus's Proxy: route reads to shard leaders, merge, answer plain Python.

For a collection the :class:`Proxy`

1. reads what it needs from the catalog (:mod:`.catalog_access`: id, schema, DML
   channels, partitions, the vector index's metric) — in-process from a
   :class:`~vecgrid.storage.catalog.Catalog` (the REST app) or over the
   coordinator's ``CatalogService`` (the CLI);
2. asks QueryCoord ``GetShardLeaders`` — one leader per replica for every channel —
   and caches the answer per collection;
3. sends ``QueryNode.Search`` / ``QueryNode.Query`` for every channel to one of its
   leaders (``dml_channels=[channel]``, ``from_shard_leader=False``, scope All, the
   leader's id in the ``ServerID`` metadata), taking the replicas in turn so the load
   spreads.  A leader that fails (unreachable, not serving the channel, any error
   that is not the request's own fault) is replaced by the next replica's; when every
   leader of a channel failed, the cached leaders are dropped, fetched again once and
   tried again;
4. merges the channels' answers with the shard leader's own reducers
   (:func:`~vecgrid.cluster.reduce.merge_search`: top-k by score in the
   metric's direction; :func:`~vecgrid.cluster.reduce.merge_retrieve`:
   rows by primary key) and decodes them into plain Python: a search answers, per
   query, ``[{"id": pk, "distance": float, "entity": {field: value}}]``; a query
   answers ``[{field: value}]`` rows (the primary key always among them).

Consistency is Milvus's: ``Strong`` (the default) makes every leader wait until its
channel's tsafe reaches the channel's newest acknowledged write — the timestamp of
the newest durable record the coordinator logged on it
(:meth:`~vecgrid.cluster.proxy.writer.Writer.guarantees_sync`) — so every write
acknowledged before the read is seen, and a leader that has read its log to the end
answers at once instead of waiting for the next time tick (a fresh oracle timestamp,
which Strong took before, is passed only by the next tick: up to 200 ms per read);
``Session`` waits for this proxy's own newest write to the collection (its
``MutationResult.timestamp``, or a channel's newest acknowledged write when that is
older: the write did not touch the channel); ``Bounded`` allows 5 s of staleness;
``Eventually`` reads whatever is there.  ``None`` takes the collection's own level,
and an explicit ``guarantee_timestamp`` overrides them all.

Writes — ``insert``, ``upsert``, ``delete``, ``flush``, ``compact`` — go to the
coordinator's :class:`~vecgrid.cluster.proxy.writer.Writer` (and DataCoord) in its
own process, or over its ``WriteService`` from any other (:mod:`.write_access`), as
reads of the catalog do.

Filters are query objects in the REST seed's syntax (:mod:`.filters`) or ready
``plan.Expr`` messages.  Reads name the collection, or pass the :class:`CollectionMeta` a caller has just
described (it then is not read again).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import grpc
import numpy as np
import pyarrow as pa

from vecgrid import errors
from vecgrid.cluster.gather import gather_all
from vecgrid.cluster.proxy.catalog_access import CatalogSource, CollectionMeta, LocalCatalog, RemoteCatalog, unary_call
from vecgrid.cluster.proxy.filters import compile_filter, dynamic_field
from vecgrid.cluster.proxy.rows import to_table
from vecgrid.cluster.proxy.write_access import DataCoordAccess, LocalWrites, NoWrites, RemoteWrites, WriteSource
from vecgrid.cluster.proxy.writer import MutationResult, Writer
from vecgrid.cluster.reduce import INLINE_MERGE_HITS, merge_retrieve, merge_search
from vecgrid.common.keys import server_id_metadata
from vecgrid.common.limits import GRPC_MESSAGE_OPTIONS
from vecgrid.gpu import exprs as E
from vecgrid.gpu import jsonkeys
from vecgrid.gpu.columns import FieldColumn
from vecgrid.gpu.merge import MAX_TOPK, merge_topk
from vecgrid.gpu.results import COUNT_FIELD, encode_placeholder_group, field_data_to_column, from_search_result_data
from vecgrid.proto import (common_pb2, internal_pb2, plan_pb2, query_coord_pb2 as Q, query_coord_pb2_grpc,
                           schema_pb2)
from vecgrid.storage.catalog import Catalog

__all__ = ["Proxy", "Shard", "guarantee_timestamp", "Filter", "MutationResult"]

log = logging.getLogger(__name__)

Filter = Mapping[str, Any] | plan_pb2.Expr | None
GRACEFUL_TIME_MS = 5000  # Milvus's common.gracefulTime: the staleness Bounded consistency allows
DEFAULT_TIMEOUT_S = 60.0
# The request itself is wrong: another replica would refuse it too, so it is not retried.
_REQUEST_ERRORS = (errors.ParameterInvalid, errors.ParameterMissing, errors.ParameterTooLarge,
                   errors.FieldNotFound, errors.PartitionNotFound, errors.IndexNotFound,
                   errors.OperationNotSupported, errors.Timeout, errors.Canceled)
_request_ids = itertools.count(time.time_ns() & ((1 << 62) - 1))


@dataclass(frozen=True)
class Shard:
    """One DML channel and its serviceable leaders, one per replica: ``(node id, address)``."""

    channel: str
    leaders: tuple[tuple[int, str], ...]


def guarantee_timestamp(consistency: str | int, now: int) -> int:
    """The guarantee timestamp of a read at ``consistency`` (a ``ConsistencyLevel`` name or number),
    ``now`` being a fresh timestamp of the oracle that stamps the writes.  (Strong and Session reads of
    the :class:`Proxy` wait for acknowledged writes instead: see the module doc.)"""
    level = _level(consistency)
    if level == common_pb2.Strong:
        return now
    if level == common_pb2.Bounded:
        return max(now - (GRACEFUL_TIME_MS << 18), 0)
    if level == common_pb2.Eventually:
        return 0  # no wait: whatever the leaders have consumed
    raise errors.ParameterInvalid(f"consistency level {common_pb2.ConsistencyLevel.Name(level)} is not supported "
                                  "by vecgrid's proxy; use Strong, Session, Bounded or Eventually, or a guarantee timestamp")


_LEVELS = {name.lower(): number for name, number in common_pb2.ConsistencyLevel.items()}


def _level(consistency: str | int) -> int:
    if isinstance(consistency, int) and consistency in _LEVELS.values():
        return consistency
    if isinstance(consistency, str) and consistency.lower() in _LEVELS:
        return _LEVELS[consistency.lower()]
    raise errors.ParameterInvalid(f"unknown consistency level {consistency!r} "
                                  f"(one of {', '.join(common_pb2.ConsistencyLevel.keys())})")


@dataclass(frozen=True)
class _Guarantee:
    """A read's guarantee timestamp: one for every channel, or one per channel (Strong)."""

    default: int
    per_channel: Mapping[str, int] = field(default_factory=dict)

    def of(self, channel: str) -> int:
        return self.per_channel.get(channel, self.default)


_EVERYTHING = _Guarantee(0)   # Eventually: whatever the leaders have consumed


class _LeadersFailed(Exception):
    """Every leader of one channel failed; ``error`` is what to report if fetching them again does not help."""

    def __init__(self, error: errors.MilvusError) -> None:
        super().__init__(str(error))
        self.error = error


class Proxy:
    """Search and query a collection through the shard leaders QueryCoord reports.

    ``coord_address`` is the coordinator's gRPC ``host:port``; ``catalog`` the
    coordinator's catalog when the proxy runs in its process (else the catalog is read
    over gRPC from the same address); ``writer`` (and ``datacoord``) the coordinator's
    write path in its process (else writes go over gRPC; a proxy given only the catalog
    cannot write).  Use as ``async with Proxy(addr) as proxy:`` or call :meth:`close`.

    Collection descriptions are kept by name (Milvus's proxy meta cache) until
    :meth:`invalidate_collections` — the REST app calls it after every definition change it
    serves — or until a caller asks for a ``fresh`` one (a read that failed on a kept one).

    ``_session`` (collection name -> timestamp of this proxy's newest write to it), ``_metas`` and
    ``_meta_epoch`` are owned by the proxy's event loop.
    """

    def __init__(self, coord_address: str, *, catalog: Catalog | None = None, writer: Writer | None = None,
                 datacoord: DataCoordAccess | None = None, db_name: str = "",
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.coord_address = coord_address
        self.db_name = db_name
        self.timeout_s = timeout_s
        self._coord_channel = grpc.aio.insecure_channel(coord_address, options=GRPC_MESSAGE_OPTIONS)
        # Public for callers that also manage loads over the same connection (the CLI).
        self.coord = query_coord_pb2_grpc.QueryCoordStub(self._coord_channel)
        if catalog is None and writer is not None:
            catalog = writer.catalog
        self.catalog: CatalogSource = (LocalCatalog(catalog) if catalog is not None
                                       else RemoteCatalog(self._coord_channel, coord_address, timeout_s))
        self.writes: WriteSource
        if writer is not None:
            self.writes = LocalWrites(writer, self._filter_keys, datacoord)
        elif catalog is not None:
            self.writes = NoWrites(catalog)
        else:
            self.writes = RemoteWrites(self._coord_channel, coord_address, timeout_s)
        self._session: dict[str, int] = {}
        self._metas: dict[tuple[str, str], CollectionMeta] = {}
        self._meta_epoch = 0   # bumped by invalidate_collections: a describe begun before it is not kept
        self._leaders: dict[int, list[Shard]] = {}
        self._leader_locks: dict[int, asyncio.Lock] = {}
        self._turns: dict[str, int] = {}
        self._nodes: dict[str, tuple[grpc.aio.Channel, query_coord_pb2_grpc.QueryNodeStub]] = {}

    async def __aenter__(self) -> "Proxy":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        for channel, _ in self._nodes.values():
            await channel.close()
        self._nodes.clear()
        await self.writes.close()
        await self.catalog.close()
        await self._coord_channel.close()

    # --- metadata ---------------------------------------------------------------------------------

    async def describe(self, collection: str, *, fresh: bool = False) -> CollectionMeta:
        """The collection's description, kept from an earlier call unless ``fresh`` (see the class doc)."""
        key = (self.db_name, collection)
        if not fresh:
            kept = self._metas.get(key)
            if kept is not None:
                return kept
        epoch = self._meta_epoch
        try:
            meta = await self.catalog.describe(collection, self.db_name)
        except errors.CollectionNotFound:
            if epoch == self._meta_epoch:
                self._metas.pop(key, None)
            raise
        if epoch == self._meta_epoch:   # no definition changed while it was read
            self._metas[key] = meta
        return meta

    def invalidate_collections(self) -> None:
        """Forget every kept description: a collection, partition or index definition changed (Milvus's
        InvalidateCollectionMetaCache, for every collection at once: a rename changes two names)."""
        self._meta_epoch += 1
        self._metas.clear()

    async def _meta(self, collection: "str | CollectionMeta") -> CollectionMeta:
        """A read's collection: a name is described; a caller that has just described it (the REST service,
        which needs the schema first) passes the :class:`CollectionMeta` and saves the catalog read."""
        return collection if isinstance(collection, CollectionMeta) else await self.describe(collection)

    async def shard_leaders(self, collection_id: int, *, refresh: bool = False) -> list[Shard]:
        """The collection's shards with their leaders (cached; ``refresh`` asks QueryCoord again)."""
        cached = self._leaders.get(collection_id)
        if cached is not None and not refresh:
            return cached
        return await self._fetch_leaders(collection_id, stale=cached)

    async def _fetch_leaders(self, collection_id: int, stale: list[Shard] | None) -> list[Shard]:
        """Ask QueryCoord, unless another request already replaced ``stale`` while this one waited:
        channels failing together share one GetShardLeaders."""
        lock = self._leader_locks.setdefault(collection_id, asyncio.Lock())
        async with lock:
            current = self._leaders.get(collection_id)
            if current is not None and current is not stale:
                return current
            reply = await unary_call(self.coord.GetShardLeaders, Q.GetShardLeadersRequest(
                base=common_pb2.MsgBase(msg_type=common_pb2.GetShardLeaders), collectionID=collection_id),
                timeout=self.timeout_s, what=f"GetShardLeaders at the coordinator {self.coord_address}")
            shards = [Shard(s.channel_name, tuple(zip(s.node_ids, s.node_addrs))) for s in reply.shards]
            if not shards:
                raise errors.ChannelNotAvailable("QueryCoord reported no shard leaders", collection=collection_id)
            self._leaders[collection_id] = shards
            return shards

    def invalidate(self, collection_id: int) -> None:
        """Forget the cached shard leaders of a collection (after a release or a failure)."""
        self._leaders.pop(collection_id, None)

    # --- reads ------------------------------------------------------------------------------------

    async def search(self, collection: "str | CollectionMeta", vectors: Any, *, limit: int = 10, offset: int = 0, filter: Filter = None,
                     output_fields: Sequence[str] = (), anns_field: str | None = None,
                     search_params: Mapping[str, Any] | None = None, partition_names: Sequence[str] = (),
                     round_decimal: int = -1, consistency: str | int | None = "Strong",
                     guarantee_timestamp: int | None = None, group_by: str | None = None,
                     group_size: int = 1) -> list[list[dict[str, Any]]]:
        """The ``limit`` nearest rows (after skipping ``offset``) of every query vector, best first.

        ``vectors``: ``nq × dim`` (or one ``dim``) floats.  ``distance`` is the metric's value:
        squared L2 (smaller is closer) or IP / COSINE similarity (larger is closer).

        ``search_params`` ``radius`` / ``range_filter`` make it a range search (Milvus's bounds: L2
        ``range_filter <= distance < radius``, IP / COSINE ``radius < distance <= range_filter``) and
        ``group_by`` (a scalar field) a grouping search: the best ``group_size`` hits of each of the
        ``limit`` best groups (after ``offset`` groups), a group ranked by its best hit.  The engine
        answers plain top-k only, so both run here over top-k searches of growing depth (×4, up to
        :data:`MAX_TOPK`) until every query has its answer or the depth is exhausted; every round reads
        the same snapshot (the first round's guarantee timestamps, pinned as the MVCC timestamps)."""
        meta = await self._meta(collection)
        field = meta.vector_field(anns_field)
        xq = _query_vectors(vectors, meta.dim(field), field.name)
        topk = _topk(limit, offset)
        metric = meta.metric(field)
        params = dict(search_params or {})
        asked = str(params.pop("metric_type", metric)).upper()
        if asked != metric:
            raise errors.ParameterInvalid(f"metric type {asked} does not match the index of {field.name!r} ({metric})")
        bounds = _RangeBounds.of(params.pop("radius", None), params.pop("range_filter", None), metric)
        names = list(output_fields)
        if group_by is not None:
            _check_group_field(meta, group_by)
            if not isinstance(group_size, int) or isinstance(group_size, bool) or not 1 <= group_size <= MAX_TOPK:
                raise errors.ParameterInvalid(f"group_size ({group_size!r}) should be in range [1, {MAX_TOPK}]")
            if group_by not in names and "*" not in names:
                names.append(group_by)
        expr = self._expr(filter, meta)
        out_ids, keys = _output_ids(meta, names)
        partition_ids = meta.partition_ids(partition_names)
        guarantee, level = await self._consistency(consistency, guarantee_timestamp, meta)
        plain = bounds is None and group_by is None

        async def run(queries: np.ndarray, k: int) -> list[list[dict[str, Any]]]:
            return await self._search_round(meta, field, queries, k, metric, params, expr, out_ids, partition_ids,
                                            round_decimal, guarantee, level, pin=not plain,
                                            offset=offset if plain else 0, limit=limit if plain else k, keys=keys)

        if plain:
            return await run(xq, topk)
        answers: list[list[dict[str, Any]] | None] = [None] * len(xq)
        pending = list(range(len(xq)))
        k = topk
        while pending:
            rounds = await run(xq[pending], k)
            still = []
            for q, hits in zip(pending, rounds):
                chosen, settled = _select_hits(hits, k, offset, limit, bounds, group_by, group_size)
                if settled:
                    answers[q] = chosen
                else:
                    still.append(q)
            pending = still
            k = min(k * 4, MAX_TOPK)
        return answers  # type: ignore[return-value]

    async def _search_round(self, meta: CollectionMeta, field: schema_pb2.FieldSchema, xq: np.ndarray, topk: int,
                            metric: str, params: Mapping[str, Any], expr: plan_pb2.Expr | None, out_ids: list[int],
                            partition_ids: list[int], round_decimal: int, guarantee: "_Guarantee", level: int, *,
                            pin: bool, offset: int, limit: int,
                            keys: frozenset[str] | None = None) -> list[list[dict[str, Any]]]:
        req_id = next(_request_ids)
        placeholder = encode_placeholder_group(xq)
        plan = _search_plan(field.fieldID, topk, metric, expr, params, round_decimal, out_ids)
        template = _search_template(meta, plan, topk, metric, partition_ids, out_ids, level, kept=expr is None)

        def request(channel: str, channels: int) -> Q.SearchRequest:
            req = Q.SearchRequest()
            req.CopyFrom(template)
            req.dml_channels.append(channel)
            req.total_channel_num = channels
            r = req.req
            r.base.msgID = r.reqID = req_id
            r.placeholder_group, r.nq = placeholder, len(xq)
            r.guarantee_timestamp = guarantee.of(channel)
            if pin:
                r.mvcc_timestamp = guarantee.of(channel)
            return req

        shards, parts = await self._fan_out(meta, "Search", request)

        def reduce() -> list[list[dict[str, Any]]]:
            if len(parts) == 1 and parts[0].sliced_num_count <= 1:
                return _hits_of(parts[0].sliced_blob, offset, limit, keys)   # merged by its leader already
            if not out_ids and all(p.sliced_num_count <= 1 for p in parts):
                # no fields: the channels' top-k merged as TopK, not encoded and decoded again
                tks = [from_search_result_data(p.sliced_blob) for p in parts]
                k = max([p.top_k for p in parts] + [0]) or topk
                return _hits(merge_topk([t for t in tks if t.nq] or tks, k, metric), offset, limit, keys)
            inner = request(shards[0].channel, len(shards)).req   # what the channels were asked
            blob = merge_search(parts, inner, [s.channel for s in shards], meta.pk_field.name).sliced_blob
            return _hits_of(blob, offset, limit, keys)
        return await _off_loop(reduce, len(xq) * topk * len(parts))

    async def stored_vectors(self, collection: "str | CollectionMeta", ids: Sequence[Any], *, anns_field: str | None = None,
                             consistency: str | int | None = "Strong",
                             guarantee_timestamp: int | None = None) -> tuple[np.ndarray, list[Any]]:
        """``(vectors in the order of ids, ids not found)``: the stored vectors of ``anns_field`` (a search by
        primary keys, which Milvus lacks)."""
        meta = await self._meta(collection)
        field = meta.vector_field(anns_field)
        pk = meta.pk_field
        keys = _check_keys(pk, ids)
        cond = E.term(E.column(pk.fieldID, pk.data_type, is_primary_key=True), keys)
        inner, guarantee = await self._retrieve_request(meta, cond, [pk.fieldID, field.fieldID], (), consistency,
                                                        guarantee_timestamp)
        merged = await self._retrieve(meta, inner, guarantee, pin=False)
        columns = {c.name: c for c in _columns(merged)}
        dim = meta.dim(field)
        if pk.name not in columns:
            return np.zeros((0, dim), np.float32), list(keys)
        found = {k: i for i, k in enumerate(columns[pk.name].values.tolist())}
        missing = [k for k in keys if k not in found]
        if missing:
            return np.zeros((0, dim), np.float32), missing
        rows = np.asarray([found[k] for k in keys], dtype=np.int64)
        return np.asarray(columns[field.name].values, dtype=np.float32).reshape(-1, dim)[rows], []

    async def query(self, collection: "str | CollectionMeta", *, filter: Filter = None, output_fields: Sequence[str] = (),
                    limit: int | None = None, offset: int = 0, partition_names: Sequence[str] = (),
                    consistency: str | int | None = "Strong",
                    guarantee_timestamp: int | None = None) -> list[dict[str, Any]]:
        """Rows matching ``filter`` ordered by primary key: ``{field: value}`` with the primary key and
        ``output_fields``; at most ``limit`` after skipping ``offset`` (no limit: every row)."""
        if offset < 0 or (limit is not None and limit < 0):
            raise errors.ParameterInvalid(f"limit ({limit}) and offset ({offset}) must not be negative")
        meta = await self._meta(collection)
        return await self._query(meta, filter=filter, output_fields=output_fields, limit=limit, offset=offset,
                                 partition_names=partition_names, consistency=consistency,
                                 guarantee_timestamp=guarantee_timestamp)

    async def _query(self, meta: CollectionMeta, *, filter: Filter, output_fields: Sequence[str], limit: int | None,
                     offset: int, partition_names: Sequence[str], consistency: str | int | None,
                     guarantee_timestamp: int | None) -> list[dict[str, Any]]:
        if limit == 0:
            return []  # nothing asked for (a Feathers $limit=0 wants only the count: see count())
        cut = -1 if limit is None else limit + offset
        out_ids, keys = _output_ids(meta, output_fields)
        inner, guarantee = await self._retrieve_request(meta, filter, out_ids,
                                                        partition_names, consistency, guarantee_timestamp, limit=cut)
        shards, parts = await self._fan_out(meta, "Query", _query_request(inner, guarantee))

        def reduce() -> list[dict[str, Any]]:
            return _rows(merge_retrieve(parts, inner, [s.channel for s in shards], cut), keys)[offset:]
        return await _off_loop(reduce, sum(p.all_retrieve_count for p in parts))

    async def count(self, collection: "str | CollectionMeta", *, filter: Filter = None, partition_names: Sequence[str] = (),
                    consistency: str | int | None = "Strong", guarantee_timestamp: int | None = None) -> int:
        """How many rows match ``filter`` (Milvus's ``count(*)``)."""
        meta = await self._meta(collection)
        inner, guarantee = await self._retrieve_request(meta, filter, [], partition_names, consistency,
                                                        guarantee_timestamp, is_count=True)
        shards, parts = await self._fan_out(meta, "Query", _query_request(inner, guarantee))
        merged = merge_retrieve(parts, inner, [s.channel for s in shards])
        return int(merged.fields_data[0].scalars.long_data.data[0]) if len(merged.fields_data) else 0

    async def find(self, collection: "str | CollectionMeta", *, filter: Filter = None, sort: Sequence[tuple[str, int]] = (),
                   offset: int = 0, limit: int | None = None, output_fields: Sequence[str] = (),
                   partition_names: Sequence[str] = (), consistency: str | int | None = "Strong",
                   guarantee_timestamp: int | None = None,
                   with_total: bool = True) -> tuple[int | None, list[dict[str, Any]]]:
        """``(total, page)``: the rows matching ``filter`` ordered by ``sort`` (``[(field, 1 | -1)]`` on scalar
        fields or keys of the dynamic field — numbers, then strings, then booleans, rows lacking the key last in
        either direction — then by primary key), ``limit`` of them after ``offset``, and how many match in all — both read
        from ONE snapshot (the guarantee timestamps pinned as the MVCC timestamps of every request).

        Ordered by primary key (no ``sort``, or the key ascending) the shard leaders cut each channel at
        ``offset + limit`` rows; ordered by anything else every matching row's key and sort fields are read,
        sorted here (exact across shards and segments), and the page's other fields read for its keys only."""
        if offset < 0 or (limit is not None and limit < 0):
            raise errors.ParameterInvalid(f"limit ({limit}) and offset ({offset}) must not be negative")
        meta = await self._meta(collection)
        pk = meta.pk_field
        order = [(name, direction) for name, direction in sort]
        for name, direction in order:
            _check_sort_field(meta, name)
            if direction not in (1, -1):
                raise errors.ParameterInvalid(f"the sort direction of {name!r} is 1 or -1, got {direction!r}")
        expr = self._expr(filter, meta)
        partition_ids = meta.partition_ids(partition_names)
        out_ids, dyn_keys = _output_ids(meta, output_fields)
        guarantee, _ = await self._consistency(consistency, guarantee_timestamp, meta)

        async def total() -> int | None:
            return await self._count_pinned(meta, expr, partition_ids, guarantee) if with_total else None

        if not order or order == [(pk.name, 1)]:
            async def page() -> list[dict[str, Any]]:
                if limit == 0:
                    return []
                cut = -1 if limit is None else offset + limit
                inner = self._retrieve_inner(meta, expr, out_ids, partition_ids, limit=cut)
                return _rows(await self._retrieve(meta, inner, guarantee, pin=True, limit=cut), dyn_keys)[offset:]
            count, rows = await gather_all([total(), page()])
            return count, rows
        key_ids, _ = _output_ids(meta, [pk.name, *(name for name, _ in order)])
        inner = self._retrieve_inner(meta, expr, key_ids, partition_ids)
        keyed = await self._retrieve(meta, inner, guarantee, pin=True)
        columns = {c.name: c for c in _columns(keyed)}
        if pk.name not in columns:
            return (0 if with_total else None), []
        n = len(columns[pk.name])
        ranked = await _off_loop(lambda: _sort_order(columns, order, pk.name, meta), n)
        window = ranked[offset:None if limit is None else offset + limit]
        if set(out_ids) <= set(key_ids):
            picked = [columns[name].take(window) for name in columns if columns[name].field_id in out_ids
                      or name == pk.name]
            return (n if with_total else None), _entities(picked, len(window), dyn_keys)
        keys = columns[pk.name].values[window].tolist()
        if not keys:
            return (n if with_total else None), []
        cond = E.term(E.column(pk.fieldID, pk.data_type, is_primary_key=True), keys)
        inner = self._retrieve_inner(meta, cond if expr is None else E.and_(expr, cond), out_ids, partition_ids)
        by_key = {row[pk.name]: row for row in _rows(await self._retrieve(meta, inner, guarantee, pin=True), dyn_keys)}
        return (n if with_total else None), [by_key[k] for k in keys if k in by_key]

    async def count_groups(self, collection: "str | CollectionMeta", field: str, *, filter: Filter = None,
                           partition_names: Sequence[str] = (), consistency: str | int | None = "Strong",
                           guarantee_timestamp: int | None = None) -> list[tuple[Any, int]]:
        """``[(value, rows)]`` for every distinct value of the scalar ``field`` among the rows matching ``filter``,
        most rows first (ties by value)."""
        meta = await self._meta(collection)
        f = _check_group_field(meta, field)
        inner, guarantee = await self._retrieve_request(meta, filter, [meta.pk_field.fieldID, f.fieldID],
                                                        partition_names, consistency, guarantee_timestamp)
        merged = await self._retrieve(meta, inner, guarantee, pin=False)
        column = next((c for c in _columns(merged) if c.name == f.name), None)
        if column is None or not len(column):
            return []
        if f.name != field:   # a key of the dynamic field: its values, rows lacking it under None
            return await _off_loop(lambda: _tally_key(column, field), len(column))

        def tally() -> list[tuple[Any, int]]:
            values, counts = np.unique(column.values, return_counts=True)
            order = np.argsort(-counts, kind="stable")
            return list(zip(values[order].tolist(), counts[order].tolist()))
        return await _off_loop(tally, len(column))

    # --- writes -----------------------------------------------------------------------------------

    async def insert(self, collection: str, rows: Any, partition: str | None = None) -> MutationResult:
        """Insert rows — a list of ``{field: value}`` dicts, a dict of columns, or an Arrow table — into
        ``partition`` (``_default``); answers once they are durable, with their primary keys and the
        write's timestamp.  Keys outside the schema go to the dynamic field when the schema has one."""
        return await self._insert(collection, rows, partition, upsert=False)

    async def upsert(self, collection: str, rows: Any, partition: str | None = None) -> MutationResult:
        """Insert rows, replacing the rows of their primary keys (delete + insert at one timestamp)."""
        return await self._insert(collection, rows, partition, upsert=True)

    async def _insert(self, collection: str, rows: Any, partition: str | None, upsert: bool) -> MutationResult:
        if isinstance(self.writes, RemoteWrites):   # rows travel as Arrow: convert them here, with the schema
            if isinstance(rows, pa.RecordBatch):
                rows = pa.Table.from_batches([rows])
            elif not isinstance(rows, pa.Table):
                rows = await asyncio.to_thread(to_table, rows, (await self.describe(collection)).schema)
        return self._remember(collection, await self.writes.insert(self.db_name, collection, rows, partition, upsert))

    async def delete(self, collection: str, ids: Sequence[Any] | None = None, filter: Filter = None,
                     partition: str | None = None) -> MutationResult:
        """Delete rows by primary key (``ids``) or every row a Strong query for ``filter`` finds now."""
        return self._remember(collection, await self.writes.delete(self.db_name, collection, ids, filter, partition))

    async def flush(self, collection: str) -> list[int]:
        """Seal the collection's growing data; the ids of the sealed segments, once they are published."""
        return (await self.writes.flush(self.db_name, collection))[1]

    async def compact(self, collection: str) -> int:
        """Start a compaction of the collection; the plan's id."""
        return (await self.writes.compact(self.db_name, collection))[1]

    def _remember(self, collection: str, result: MutationResult) -> MutationResult:
        if result.timestamp > self._session.get(collection, 0):
            self._session[collection] = result.timestamp
        return result

    async def _filter_keys(self, db_name: str, collection: str, filter: Filter, partition: str | None) -> list[Any]:
        """The primary keys a Strong query for ``filter`` finds (a delete by filter, on the coordinator)."""
        meta = await self.catalog.describe(collection, db_name)
        pk = meta.pk_field.name
        found = await self._query(meta, filter=filter, output_fields=[pk], limit=None, offset=0,
                                  partition_names=[partition] if partition else [], consistency="Strong",
                                  guarantee_timestamp=None)
        return [row[pk] for row in found]

    # --- request parts ----------------------------------------------------------------------------

    async def _consistency(self, consistency: str | int | None, explicit: int | None,
                           meta: CollectionMeta) -> tuple[_Guarantee, int]:
        """``(guarantee timestamps, level)`` of a read: an explicit timestamp is Milvus's Customized level;
        ``consistency=None`` is the collection's own level; Strong waits, per channel, for the newest
        acknowledged write (module doc), Session for this proxy's newest write to the collection, Bounded
        counts back from a fresh timestamp of the coordinator's oracle."""
        if explicit is not None:
            return _Guarantee(int(explicit)), common_pb2.Customized
        level = meta.consistency_level if consistency is None else _level(consistency)
        if level == common_pb2.Eventually:
            return _EVERYTHING, level
        if level == common_pb2.Session:
            own = self._session.get(meta.name, 0)
            if not own:
                return _Guarantee(0), level
            # this proxy's write is at or below every channel's newest acknowledged record it touched; a
            # channel it did not touch need not wait for a tick to pass the write's timestamp
            acked = await self.writes.guarantees(meta.channels)
            return _Guarantee(own, {channel: min(own, ts) for channel, ts in acked.items()}), level
        guarantee_timestamp(level, 0)  # refuses an unsupported level before anything is sent
        if level == common_pb2.Strong:
            await self.shard_leaders(meta.id)  # a collection nobody serves fails here, before its channels are asked
            return _Guarantee(0, await self.writes.guarantees(meta.channels)), level
        return _Guarantee(guarantee_timestamp(level, await self.catalog.timestamp())), level

    @staticmethod
    def _expr(filter: Filter, meta: CollectionMeta) -> plan_pb2.Expr | None:
        if filter is None or isinstance(filter, plan_pb2.Expr):
            return filter
        return compile_filter(filter, meta.schema)

    async def _retrieve_request(self, meta: CollectionMeta, filter: Filter, out_ids: list[int],
                                partition_names: Sequence[str], consistency: str | int | None,
                                explicit: int | None, *, limit: int = -1,
                                is_count: bool = False) -> tuple[internal_pb2.RetrieveRequest, _Guarantee]:
        expr = self._expr(filter, meta)
        partition_ids = meta.partition_ids(partition_names)
        guarantee, _ = await self._consistency(consistency, explicit, meta)
        return self._retrieve_inner(meta, expr, out_ids, partition_ids, limit=limit, is_count=is_count), guarantee

    @staticmethod
    def _retrieve_inner(meta: CollectionMeta, expr: plan_pb2.Expr | None, out_ids: list[int],
                        partition_ids: list[int], *, limit: int = -1,
                        is_count: bool = False) -> internal_pb2.RetrieveRequest:
        node = plan_pb2.QueryPlanNode(is_count=is_count, limit=max(limit, 0))
        if expr is not None:
            node.predicates.CopyFrom(expr)
        req_id = next(_request_ids)
        return internal_pb2.RetrieveRequest(
            base=common_pb2.MsgBase(msg_type=common_pb2.Retrieve, msgID=req_id), reqID=req_id, dbID=meta.db_id,
            collectionID=meta.id, partitionIDs=partition_ids,
            serialized_expr_plan=plan_pb2.PlanNode(query=node, output_field_ids=out_ids).SerializeToString(),
            output_fields_id=out_ids, limit=max(limit, 0), is_count=is_count)

    async def _retrieve(self, meta: CollectionMeta, inner: internal_pb2.RetrieveRequest, guarantee: _Guarantee, *,
                        pin: bool, limit: int = -1) -> internal_pb2.RetrieveResults:
        """The channels' answers to ``inner``, merged; ``pin`` reads every channel at its guarantee timestamp
        (the requests of one call then see one snapshot)."""
        shards, parts = await self._fan_out(meta, "Query", _query_request(inner, guarantee, pin=pin))
        return await _off_loop(lambda: merge_retrieve(parts, inner, [s.channel for s in shards], limit),
                               sum(p.all_retrieve_count for p in parts))

    async def _count_pinned(self, meta: CollectionMeta, expr: plan_pb2.Expr | None, partition_ids: list[int],
                            guarantee: _Guarantee) -> int:
        inner = self._retrieve_inner(meta, expr, [], partition_ids, is_count=True)
        merged = await self._retrieve(meta, inner, guarantee, pin=True)
        return int(merged.fields_data[0].scalars.long_data.data[0]) if len(merged.fields_data) else 0

    # --- routing ----------------------------------------------------------------------------------

    async def _fan_out(self, meta: CollectionMeta, method: str,
                       request: Callable[[str, int], Any]) -> tuple[list[Shard], list[Any]]:
        """Send ``request(channel, channel_count)`` to a leader of every channel, concurrently."""
        shards = await self.shard_leaders(meta.id)

        async def one(shard: Shard) -> Any:
            req = request(shard.channel, len(shards))
            try:
                return await self._on_leaders(shard, method, req)
            except _LeadersFailed:
                fresh = await self._fetch_leaders(meta.id, stale=shards)  # raises if QueryCoord knows why
                again = next((s for s in fresh if s.channel == shard.channel), None)
                if again is None:
                    raise errors.ChannelNotAvailable(f"QueryCoord no longer reports channel {shard.channel}",
                                                     collection=meta.id) from None
                try:
                    return await self._on_leaders(again, method, req)
                except _LeadersFailed as failed:
                    self.invalidate(meta.id)
                    raise failed.error from None

        if len(shards) == 1:   # no task, no gather: the usual small collection
            return shards, [await one(shards[0])]
        return shards, await gather_all(one(s) for s in shards)

    async def _on_leaders(self, shard: Shard, method: str, req: Any) -> Any:
        """``method`` on the channel's leaders, starting with the next one in turn, until one answers."""
        if not shard.leaders:
            raise _LeadersFailed(errors.ChannelNotAvailable(channel=shard.channel))
        turn = self._turns.get(shard.channel, 0)
        self._turns[shard.channel] = turn + 1
        failures: list[str] = []
        last: errors.MilvusError | None = None
        for i in range(len(shard.leaders)):
            node_id, address = shard.leaders[(turn + i) % len(shard.leaders)]
            req.req.base.targetID = node_id
            try:
                return await unary_call(getattr(self._node(address), method), req, timeout=self.timeout_s,
                                        what=f"{method} on node {node_id} at {address}",
                                        metadata=server_id_metadata(node_id))
            except _REQUEST_ERRORS:
                raise
            except errors.MilvusError as e:
                log.warning("%s of channel %s failed on node %d (%s), trying the next replica: %s",
                            method, shard.channel, node_id, address, e)
                failures.append(f"node {node_id} ({address}): {e}")
                last = e
        assert last is not None
        detail = f"{method} on channel {shard.channel} failed on every shard leader: " + "; ".join(failures)
        raise _LeadersFailed(type(last)(detail))  # the last failure's kind, with every leader's story

    def _node(self, address: str) -> query_coord_pb2_grpc.QueryNodeStub:
        entry = self._nodes.get(address)
        if entry is None:
            channel = grpc.aio.insecure_channel(address, options=GRPC_MESSAGE_OPTIONS)
            entry = self._nodes[address] = (channel, query_coord_pb2_grpc.QueryNodeStub(channel))
        return entry[1]


# --- helpers --------------------------------------------------------------------------------------------

async def _off_loop(fn: Callable[[], Any], hits: int) -> Any:
    """Run a merge on the loop when it is small (a thread hop costs more), else in a thread: the REST
    app's loop must only await."""
    return fn() if hits <= INLINE_MERGE_HITS else await asyncio.to_thread(fn)


def _search_plan(field_id: int, topk: int, metric: str, expr: plan_pb2.Expr | None, params: Mapping[str, Any],
                 round_decimal: int, out_ids: list[int]) -> bytes:
    """The serialized plan of a search; without a filter, once per distinct shape (a client repeats its
    searches: same field, k, metric, params and outputs)."""
    if expr is None:
        try:
            shape = tuple(sorted((k, type(v), v) for k, v in params.items()))   # 1, 1.0 and True differ in JSON
            return _plain_search_plan(field_id, topk, metric, shape, round_decimal, tuple(out_ids))
        except TypeError:   # a parameter value that is not hashable: built every time
            pass
    return E.search_plan(field_id=field_id, topk=topk, metric=metric, expr=expr, search_params=params,
                         round_decimal=round_decimal, output_field_ids=out_ids)


_TEMPLATES_KEPT = 64   # request templates kept per collection description


def _search_template(meta: CollectionMeta, plan: bytes, topk: int, metric: str, partition_ids: list[int],
                     out_ids: list[int], level: int, *, kept: bool) -> Q.SearchRequest:
    """A ``SearchRequest`` with everything but the per-call fields (channel, ids, queries, timestamps):
    a search copies it, which costs less than filling a dozen fields.  ``kept`` (a plan without a
    filter: clients repeat those) keeps it on the description, so a changed collection starts anew;
    the dict belongs to the proxy's event loop, like the description cache."""
    key = (plan, tuple(partition_ids), tuple(out_ids), level)
    templates = meta.memo.setdefault("search_templates", {}) if kept else {}
    template = templates.get(key)
    if template is None:
        template = Q.SearchRequest(from_shard_leader=False, scope=Q.All)
        r = template.req
        r.base.msg_type = common_pb2.Search
        r.dbID, r.collectionID = meta.db_id, meta.id
        r.partitionIDs.extend(partition_ids)
        r.output_fields_id.extend(out_ids)
        r.serialized_expr_plan, r.dsl_type = plan, common_pb2.BoolExprV1
        r.topk, r.metricType, r.consistency_level = topk, metric, level
        if kept:
            if len(templates) >= _TEMPLATES_KEPT:
                templates.clear()
            templates[key] = template
    return template


@functools.lru_cache(maxsize=1024)
def _plain_search_plan(field_id: int, topk: int, metric: str, params: tuple, round_decimal: int,
                       out_ids: tuple[int, ...]) -> bytes:
    return E.search_plan(field_id=field_id, topk=topk, metric=metric, search_params={k: v for k, _, v in params},
                         round_decimal=round_decimal, output_field_ids=list(out_ids))


def _query_request(inner: internal_pb2.RetrieveRequest, guarantee: _Guarantee,
                   pin: bool = False) -> Callable[[str, int], Q.QueryRequest]:
    def request(channel: str, channels: int) -> Q.QueryRequest:
        req = Q.QueryRequest(dml_channels=[channel], from_shard_leader=False, scope=Q.All)
        req.req.CopyFrom(inner)
        req.req.guarantee_timestamp = guarantee.of(channel)
        if pin:
            req.req.mvcc_timestamp = guarantee.of(channel)
        return req
    return request


def _topk(limit: int, offset: int) -> int:
    if not isinstance(limit, int) or not isinstance(offset, int) or limit < 1 or offset < 0 \
            or limit + offset > MAX_TOPK:
        raise errors.ParameterInvalid(f"limit ({limit}) + offset ({offset}) should be in range [1, {MAX_TOPK}], "
                                      "with limit >= 1 and offset >= 0")
    return limit + offset


def _query_vectors(vectors: Any, dim: int, field: str) -> np.ndarray:
    try:
        xq = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise errors.ParameterInvalid(f"query vectors must be numbers: {e}") from None
    if xq.ndim == 1:
        xq = xq[None, :]
    if xq.ndim != 2 or not len(xq):
        raise errors.ParameterInvalid(f"query vectors must be an nq × dim array, got shape {xq.shape}")
    if xq.shape[1] != dim:
        raise errors.ParameterInvalid(f"the query vectors have dimension {xq.shape[1]}, "
                                      f"field {field!r} has dimension {dim}")
    if len(xq) > MAX_TOPK:
        raise errors.ParameterInvalid(f"nq [{len(xq)}] is invalid, it should be in range [1, {MAX_TOPK}]")
    return xq


def _python_values(col: FieldColumn) -> list[Any]:
    """A column's values as JSON-friendly Python: numbers, strings, bools, float lists, decoded JSON."""
    if col.data_type == schema_pb2.JSON:
        return [json.loads(v) if isinstance(v, (bytes, str)) and v else None for v in col.values.tolist()]
    if col.data_type in (schema_pb2.BinaryVector, schema_pb2.Float16Vector, schema_pb2.BFloat16Vector):
        return [bytes(row) for row in np.asarray(col.values, dtype=np.uint8)]
    return col.values.tolist()


def _entities(columns: Sequence[FieldColumn], n: int, keys: frozenset[str] | None = None) -> list[dict[str, Any]]:
    """One ``{field: value}`` per row; a dynamic field's keys are spread into the row, as pymilvus does —
    only ``keys`` of them when the caller named keys rather than the whole field (Milvus's proxy prunes
    ``$meta`` to the dynamic keys of ``output_fields`` too)."""
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for col in columns:
        values = _python_values(col)
        for row, v in zip(rows, values):
            if col.is_dynamic and isinstance(v, dict):
                row.update(v if keys is None else {k: x for k, x in v.items() if k in keys})
            else:
                row[col.name] = v
    return rows


def _output_ids(meta: CollectionMeta, names: Sequence[str]) -> tuple[list[int], frozenset[str] | None]:
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


def _hits_of(blob: bytes, offset: int, limit: int, keys: frozenset[str] | None) -> list[list[dict[str, Any]]]:
    """:func:`_hits` of a serialized ``SearchResultData``; without output fields read into plain lists (a small
    answer's numpy conversions cost more than they save)."""
    srd = schema_pb2.SearchResultData()
    srd.ParseFromString(blob)
    if len(srd.fields_data):
        return _hits(from_search_result_data(srd), offset, limit, keys)
    ids = list(srd.ids.str_id.data if srd.ids.WhichOneof("id_field") == "str_id" else srd.ids.int_id.data)
    scores = list(srd.scores)
    topks = list(srd.topks)
    topks += [0] * (srd.num_queries - len(topks))
    out = []
    first = 0
    for n in topks:
        lo = first + offset
        hi = min(first + n, lo + limit)
        out.append([{"id": ids[j], "distance": scores[j], "entity": {}} for j in range(lo, hi)])
        first += n
    return out


def _hits(tk: Any, offset: int, limit: int, keys: frozenset[str] | None = None) -> list[list[dict[str, Any]]]:
    entities = _entities(tk.fields or [], len(tk), keys)
    ids = tk.ids.tolist()
    scores = tk.scores.tolist()
    o = tk.offsets
    out = []
    for q in range(tk.nq):
        lo = int(o[q]) + offset
        hi = min(int(o[q + 1]), lo + limit)
        out.append([{"id": ids[j], "distance": scores[j], "entity": entities[j]} for j in range(lo, hi)])
    return out


_SORTABLE = {schema_pb2.Bool, schema_pb2.Int8, schema_pb2.Int16, schema_pb2.Int32, schema_pb2.Int64, schema_pb2.Float,
             schema_pb2.Double, schema_pb2.VarChar, schema_pb2.String}
_SMALLER_IS_CLOSER = ("L2", "HAMMING", "JACCARD")


def _check_sort_field(meta: CollectionMeta, name: str) -> schema_pb2.FieldSchema:
    """The field that orders rows by ``name``: the field itself, or ``$meta`` for a key of the dynamic field."""
    dyn = dynamic_field(meta.schema)
    if dyn is not None and name and not name.startswith("$") and all(f.name != name for f in meta.schema.fields):
        return dyn
    f = meta.field(name)
    if f.data_type not in _SORTABLE or f.is_dynamic:
        raise errors.ParameterInvalid(f"field {name!r} ({schema_pb2.DataType.Name(f.data_type)}) cannot order rows; "
                                      "sort by a scalar field", field=name)
    return f


def _check_group_field(meta: CollectionMeta, name: str) -> schema_pb2.FieldSchema:
    f = _check_sort_field(meta, name)
    if f.is_dynamic:
        return f
    if f.data_type in (schema_pb2.Float, schema_pb2.Double):
        raise errors.ParameterInvalid(f"field {name!r} is {schema_pb2.DataType.Name(f.data_type)}: group by a Bool, "
                                      "integer or VarChar field", field=name)
    return f


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


def _columns(results: internal_pb2.RetrieveResults) -> list[FieldColumn]:
    return [field_data_to_column(fd) for fd in results.fields_data if fd.field_name != COUNT_FIELD]


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


@dataclass(frozen=True)
class _RangeBounds:
    """Milvus's range search bounds in the metric's direction (see :meth:`Proxy.search`)."""

    radius: float | None
    range_filter: float | None
    smaller_is_closer: bool

    @staticmethod
    def of(radius: Any, range_filter: Any, metric: str) -> "_RangeBounds | None":
        if radius is None and range_filter is None:
            return None
        values = []
        for name, v in (("radius", radius), ("range_filter", range_filter)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v)):
                raise errors.ParameterInvalid(f"search param {name!r} must be a finite number, got {v!r}")
            values.append(None if v is None else float(v))
        radius, range_filter = values
        smaller = metric in _SMALLER_IS_CLOSER
        if radius is not None and range_filter is not None:
            if smaller and not range_filter < radius:
                raise errors.ParameterInvalid(f"range_filter ({range_filter}) must be less than radius ({radius}) "
                                              f"for metric {metric}")
            if not smaller and not range_filter > radius:
                raise errors.ParameterInvalid(f"range_filter ({range_filter}) must be greater than radius ({radius}) "
                                              f"for metric {metric}")
        return _RangeBounds(radius, range_filter, smaller)

    def holds(self, d: float) -> bool:
        if self.smaller_is_closer:
            return (self.radius is None or d < self.radius) and (self.range_filter is None or d >= self.range_filter)
        return (self.radius is None or d > self.radius) and (self.range_filter is None or d <= self.range_filter)

    def beyond(self, d: float) -> bool:
        """Past the outer bound: no farther hit can be in range."""
        if self.radius is None:
            return False
        return d >= self.radius if self.smaller_is_closer else d <= self.radius


def _select_hits(hits: list[dict[str, Any]], k: int, offset: int, limit: int, bounds: _RangeBounds | None,
                 group_by: str | None, group_size: int) -> tuple[list[dict[str, Any]], bool]:
    """``(answer, settled)`` of one query from its top ``k`` hits: settled when a deeper search could not
    change the answer (enough hits, the range's outer bound passed, fewer than ``k`` rows, or depth exhausted)."""
    exhausted = len(hits) < k or k >= MAX_TOPK or bool(hits and bounds is not None and bounds.beyond(hits[-1]["distance"]))
    kept = [h for h in hits if bounds.holds(h["distance"])] if bounds is not None else hits
    want = offset + limit
    if group_by is None:
        return kept[offset:want], exhausted or len(kept) >= want
    groups: dict[Any, list[dict[str, Any]]] = {}
    for h in kept:
        members = groups.setdefault(h["entity"].get(group_by), [])
        if len(members) < group_size:
            members.append(h)
    ranked = list(groups.values())
    full = len(ranked) >= want and all(len(m) >= group_size for m in ranked[:want])
    return [h for members in ranked[offset:want] for h in members], exhausted or full


def _rows(results: internal_pb2.RetrieveResults, keys: frozenset[str] | None = None) -> list[dict[str, Any]]:
    columns = [field_data_to_column(fd) for fd in results.fields_data if fd.field_name != COUNT_FIELD]
    n = len(columns[0]) if columns else 0
    return _entities(columns, n, keys)
