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
   (:func:`~vecgrid.cluster.querynode.reduce.merge_search`: top-k by score in the
   metric's direction; :func:`~vecgrid.cluster.querynode.reduce.merge_retrieve`:
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
``plan.Expr`` messages.
"""

from __future__ import annotations

import asyncio
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
from vecgrid.cluster.proxy.filters import compile_filter
from vecgrid.cluster.proxy.rows import to_table
from vecgrid.cluster.proxy.write_access import DataCoordAccess, LocalWrites, NoWrites, RemoteWrites, WriteSource
from vecgrid.cluster.proxy.writer import MutationResult, Writer
from vecgrid.cluster.querynode.reduce import INLINE_MERGE_HITS, merge_retrieve, merge_search
from vecgrid.cluster.querynode.retrieve import COUNT_FIELD
from vecgrid.common.keys import server_id_metadata
from vecgrid.common.limits import GRPC_MESSAGE_OPTIONS
from vecgrid.gpu import exprs as E
from vecgrid.gpu.columns import FieldColumn
from vecgrid.gpu.merge import MAX_TOPK
from vecgrid.gpu.results import encode_placeholder_group, field_data_to_column, from_search_result_data
from vecgrid.proto import (common_pb2, internal_pb2, plan_pb2, query_coord_pb2 as Q, query_coord_pb2_grpc,
                           schema_pb2)
from vecgrid.storage.catalog import Catalog, field_dim

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


def _level(consistency: str | int) -> int:
    if isinstance(consistency, int) and consistency in common_pb2.ConsistencyLevel.values():
        return consistency
    if isinstance(consistency, str):
        for name, number in common_pb2.ConsistencyLevel.items():
            if name.lower() == consistency.lower():
                return number
    raise errors.ParameterInvalid(f"unknown consistency level {consistency!r} "
                                  f"(one of {', '.join(common_pb2.ConsistencyLevel.keys())})")


@dataclass(frozen=True)
class _Guarantee:
    """A read's guarantee timestamp: one for every channel, or one per channel (Strong)."""

    default: int
    per_channel: Mapping[str, int] = field(default_factory=dict)

    def of(self, channel: str) -> int:
        return self.per_channel.get(channel, self.default)


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

    ``_session`` (collection name -> timestamp of this proxy's newest write to it) is
    owned by the proxy's event loop.
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

    async def describe(self, collection: str) -> CollectionMeta:
        return await self.catalog.describe(collection, self.db_name)

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

    async def search(self, collection: str, vectors: Any, *, limit: int = 10, offset: int = 0, filter: Filter = None,
                     output_fields: Sequence[str] = (), anns_field: str | None = None,
                     search_params: Mapping[str, Any] | None = None, partition_names: Sequence[str] = (),
                     round_decimal: int = -1, consistency: str | int | None = "Strong",
                     guarantee_timestamp: int | None = None) -> list[list[dict[str, Any]]]:
        """The ``limit`` nearest rows (after skipping ``offset``) of every query vector, best first.

        ``vectors``: ``nq × dim`` (or one ``dim``) floats.  ``distance`` is the metric's value:
        squared L2 (smaller is closer) or IP / COSINE similarity (larger is closer)."""
        meta = await self.describe(collection)
        field = meta.vector_field(anns_field)
        xq = _query_vectors(vectors, field_dim(field), field.name)
        topk = _topk(limit, offset)
        metric = meta.metric(field)
        params = dict(search_params or {})
        asked = str(params.pop("metric_type", metric)).upper()
        if asked != metric:
            raise errors.ParameterInvalid(f"metric type {asked} does not match the index of {field.name!r} ({metric})")
        out_ids = meta.output_field_ids(output_fields)
        req_id = next(_request_ids)
        inner = internal_pb2.SearchRequest(
            base=common_pb2.MsgBase(msg_type=common_pb2.Search, msgID=req_id), reqID=req_id, dbID=meta.db_id,
            collectionID=meta.id, partitionIDs=meta.partition_ids(partition_names),
            placeholder_group=encode_placeholder_group(xq), dsl_type=common_pb2.BoolExprV1,
            serialized_expr_plan=E.search_plan(field_id=field.fieldID, topk=topk, metric=metric,
                                               expr=self._expr(filter, meta), search_params=params,
                                               round_decimal=round_decimal, output_field_ids=out_ids),
            output_fields_id=out_ids, nq=len(xq), topk=topk, metricType=metric)
        guarantee, inner.consistency_level = await self._consistency(consistency, guarantee_timestamp, meta)

        def request(channel: str, channels: int) -> Q.SearchRequest:
            req = Q.SearchRequest(dml_channels=[channel], from_shard_leader=False, scope=Q.All,
                                  total_channel_num=channels)
            req.req.CopyFrom(inner)
            req.req.guarantee_timestamp = guarantee.of(channel)
            return req

        shards, parts = await self._fan_out(meta, "Search", request)

        def reduce() -> list[list[dict[str, Any]]]:
            merged = merge_search(parts, inner, [s.channel for s in shards], meta.pk_field.name)
            return _hits(from_search_result_data(merged.sliced_blob), offset, limit)
        return await _off_loop(reduce, len(xq) * topk * len(parts))

    async def query(self, collection: str, *, filter: Filter = None, output_fields: Sequence[str] = (),
                    limit: int | None = None, offset: int = 0, partition_names: Sequence[str] = (),
                    consistency: str | int | None = "Strong",
                    guarantee_timestamp: int | None = None) -> list[dict[str, Any]]:
        """Rows matching ``filter`` ordered by primary key: ``{field: value}`` with the primary key and
        ``output_fields``; at most ``limit`` after skipping ``offset`` (no limit: every row)."""
        if offset < 0 or (limit is not None and limit < 0):
            raise errors.ParameterInvalid(f"limit ({limit}) and offset ({offset}) must not be negative")
        meta = await self.describe(collection)
        return await self._query(meta, filter=filter, output_fields=output_fields, limit=limit, offset=offset,
                                 partition_names=partition_names, consistency=consistency,
                                 guarantee_timestamp=guarantee_timestamp)

    async def _query(self, meta: CollectionMeta, *, filter: Filter, output_fields: Sequence[str], limit: int | None,
                     offset: int, partition_names: Sequence[str], consistency: str | int | None,
                     guarantee_timestamp: int | None) -> list[dict[str, Any]]:
        if limit == 0:
            return []  # nothing asked for (a Feathers $limit=0 wants only the count: see count())
        cut = -1 if limit is None else limit + offset
        inner, guarantee = await self._retrieve_request(meta, filter, meta.output_field_ids(output_fields),
                                                        partition_names, consistency, guarantee_timestamp, limit=cut)
        shards, parts = await self._fan_out(meta, "Query", _query_request(inner, guarantee))

        def reduce() -> list[dict[str, Any]]:
            return _rows(merge_retrieve(parts, inner, [s.channel for s in shards], cut))[offset:]
        return await _off_loop(reduce, sum(p.all_retrieve_count for p in parts))

    async def count(self, collection: str, *, filter: Filter = None, partition_names: Sequence[str] = (),
                    consistency: str | int | None = "Strong", guarantee_timestamp: int | None = None) -> int:
        """How many rows match ``filter`` (Milvus's ``count(*)``)."""
        meta = await self.describe(collection)
        inner, guarantee = await self._retrieve_request(meta, filter, [], partition_names, consistency,
                                                        guarantee_timestamp, is_count=True)
        shards, parts = await self._fan_out(meta, "Query", _query_request(inner, guarantee))
        merged = merge_retrieve(parts, inner, [s.channel for s in shards])
        return int(merged.fields_data[0].scalars.long_data.data[0]) if len(merged.fields_data) else 0

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
        if level == common_pb2.Session:
            own = self._session.get(meta.name, 0)
            if not own:
                return _Guarantee(0), level
            # this proxy's write is at or below every channel's newest acknowledged record it touched; a
            # channel it did not touch need not wait for a tick to pass the write's timestamp
            acked = await self.writes.guarantees(meta.channels)
            return _Guarantee(own, {channel: min(own, ts) for channel, ts in acked.items()}), level
        guarantee_timestamp(level, 0)  # refuses an unsupported level before anything is sent
        if level == common_pb2.Eventually:
            return _Guarantee(0), level
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
        node = plan_pb2.QueryPlanNode(is_count=is_count, limit=max(limit, 0))
        expr = self._expr(filter, meta)
        if expr is not None:
            node.predicates.CopyFrom(expr)
        req_id = next(_request_ids)
        partition_ids = meta.partition_ids(partition_names)
        guarantee, _ = await self._consistency(consistency, explicit, meta)
        return internal_pb2.RetrieveRequest(
            base=common_pb2.MsgBase(msg_type=common_pb2.Retrieve, msgID=req_id), reqID=req_id, dbID=meta.db_id,
            collectionID=meta.id, partitionIDs=partition_ids,
            serialized_expr_plan=plan_pb2.PlanNode(query=node, output_field_ids=out_ids).SerializeToString(),
            output_fields_id=out_ids, limit=max(limit, 0), is_count=is_count), guarantee

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


def _query_request(inner: internal_pb2.RetrieveRequest, guarantee: _Guarantee) -> Callable[[str, int], Q.QueryRequest]:
    def request(channel: str, channels: int) -> Q.QueryRequest:
        req = Q.QueryRequest(dml_channels=[channel], from_shard_leader=False, scope=Q.All)
        req.req.CopyFrom(inner)
        req.req.guarantee_timestamp = guarantee.of(channel)
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


def _entities(columns: Sequence[FieldColumn], n: int) -> list[dict[str, Any]]:
    """One ``{field: value}`` per row; a dynamic field's keys are spread into the row, as pymilvus does."""
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for col in columns:
        values = _python_values(col)
        for row, v in zip(rows, values):
            if col.is_dynamic and isinstance(v, dict):
                row.update(v)
            else:
                row[col.name] = v
    return rows


def _hits(tk: Any, offset: int, limit: int) -> list[list[dict[str, Any]]]:
    entities = _entities(tk.fields or [], len(tk))
    ids = tk.ids.tolist()
    scores = tk.scores.tolist()
    o = tk.offsets
    out = []
    for q in range(tk.nq):
        lo = int(o[q]) + offset
        hi = min(int(o[q + 1]), lo + limit)
        out.append([{"id": ids[j], "distance": scores[j], "entity": entities[j]} for j in range(lo, hi)])
    return out


def _rows(results: internal_pb2.RetrieveResults) -> list[dict[str, Any]]:
    columns = [field_data_to_column(fd) for fd in results.fields_data if fd.field_name != COUNT_FIELD]
    n = len(columns[0]) if columns else 0
    return _entities(columns, n)
