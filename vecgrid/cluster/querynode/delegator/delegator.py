"""The shard delegator: one per watched DML channel on its shard-leader node (Milvus's ``ShardDelegator``).

A delegator is made by ``WatchDmChannels`` and ended by ``UnsubDmChannel``.  It owns

* a :class:`~vecgrid.cluster.querynode.pipeline.ChannelPipeline` that consumes the channel's
  WAL from the VchannelInfo's ``seek_position`` (earliest when unset) into growing segments,
  with the channel's flushed/dropped segments excluded up to their ``dml_position``;
* the shard's :class:`~vecgrid.cluster.querynode.delegator.distribution.ShardDistribution` (the
  **leader view**: sealed segment id → (node id, version, partition), the target version and the
  partition-stats versions), which ``LoadSegments`` / ``ReleaseSegments`` with ``need_transfer``
  and ``SyncDistribution`` / ``SyncReplicaSegments`` change through the delegator.

Reads (``Search`` / ``Query`` / ``QueryStream`` / ``GetStatistics`` from a proxy) wait until
the channel's tsafe reaches the request's ``guarantee_timestamp``, fix the MVCC timestamp
(the request's, else tsafe), snapshot the view and fan out in parallel: one
``*Segments`` sub-request with scope Historical per worker node, through that node's
:class:`~vecgrid.cluster.querynode.worker.Worker` (in-process for this node, gRPC with
``serverid`` metadata for the others), plus one over its own growing segments (scope
Streaming).  The first failing sub-call fails the request (``worker(N) query failed: ...``).
The delegator knows nothing of the QueryNode that runs it: the node hands it its workers,
collections, loader and a change callback.

Deletes read from the channel are applied to the growing segments by the pipeline and
forwarded here (:meth:`ShardDelegator.forward_delete`; the pipeline thread waits until every
node whose sealed segments may hold the keys applied them, so **tsafe never passes a delete
that is not visible everywhere**).  As Milvus's default ``FilterByBF`` policy, only the
sealed segments whose pk statistics (:mod:`~vecgrid.cluster.querynode.pk_stats`: a bloom filter + key
range built when the leader records the segment) may hold a key get it, with one ``DeleteBatch`` per node;
segments known only from SyncDistribution (no statistics) get every delete.  A peer answering
UNIMPLEMENTED gets per-segment ``Delete`` calls instead.  Deletes are also
kept in a buffer (trimmed at each UpdateVersion checkpoint) and replayed onto segments the
delegator loads later.

A DeleteBatch is not done until its reply says every segment applied it: an error, a timeout,
``failed_ids`` and ``missing_ids`` are retried with backoff (:class:`DeleteRetry`), and the
view is read again before each attempt — a segment answered missing has moved (the delete
goes to its new node) or left the view (nothing to do: a later copy gets the buffer).  When the
budget runs out the leader becomes **unserviceable** (as Milvus marks such segments offline):
the pipeline fails with tsafe short of the delete, reads are refused with the retriable
``ServiceUnavailable`` (a proxy tries another replica), ``health_problem`` says why, and the
node leaves the leader out of GetDataDistribution, so the coordinator's channel checker watches
the channel again — on this node ``WatchDmChannels`` then replaces the delegator with a fresh
one, whose catch-up sends the buffered deletes to every segment that joins its view.  A failed
leader frees its pipeline, growing segments, view and buffers at once; the node keeps the empty
shell only to report why, and drops it one health round after the coordinator saw it gone
(the channel may be watched on another node, which this node never hears of).

**L0 segments** (a flushed channel's deletes, loaded on the leader) are applied here too, as
Milvus 2.4's delegator does (``loadStreamDelete`` with ``GetLevel0Deletions``): the delegator
keeps the deletes of every L0 segment in its view, sends them to each sealed segment it adopts
on another node, and sends a newly adopted L0 segment's deletes to the sealed segments already
in the view.  A node applies the L0 segments it holds itself to its own segments, so the node
holding an L0 segment is skipped.

Who owns what: every piece of delegator state — the distribution, ``pk_stats``, ``_l0``, the delete
replay buffer and its sequence numbers, ``pipeline``, the failure — belongs to the node's event loop.
The pipeline thread never touches it: :meth:`ShardDelegator.forward_delete` hands each delete to the loop
(``run_coroutine_threadsafe``) and waits there.  The growing segments belong to the
pipeline (see :mod:`~vecgrid.cluster.querynode.pipeline`); the delegator reads them only through
its snapshots.

Where the WAL comes from: the local WAL when ``<data_dir>/wal/<channel>`` exists on this
host, else :class:`~vecgrid.cluster.streaming.remote_reader.RemoteChannelReader` against the
coordinator (``vecgrid.coord_address`` in the request's ``base.properties``, else
``common.host:querycoord.port``).

Peer addresses: requests may carry ``vecgrid.node_address.<id>`` = ``host:port`` in
``base.properties`` (WatchDmChannels, LoadSegments, SyncDistribution, ...); the node
registers them with its :class:`~vecgrid.cluster.querynode.peers.PeerClients`, which its
:class:`~vecgrid.cluster.querynode.worker.Workers` use.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import os
import time
from dataclasses import dataclass
from typing import AbstractSet, Any, AsyncIterator, Awaitable, Callable, Iterable, NoReturn, Sequence

import numpy as np

from vecgrid import errors
from vecgrid.cluster.gather import gather_all
from vecgrid.cluster.querynode import retrieve as retrieve_mod
from vecgrid.cluster.querynode import search as search_mod
from vecgrid.cluster.querynode.collections import Collection, CollectionManager
from vecgrid.cluster.querynode.delegator.distribution import GrowingView, SealedEntry, ShardDistribution, growing_views
from vecgrid.cluster.querynode.loader import SegmentLoader
from vecgrid.cluster.querynode.pipeline import ChannelPipeline
from vecgrid.cluster.querynode.pk_stats import PkStats
from vecgrid.cluster.reduce import INLINE_MERGE_HITS, merge_retrieve, merge_search
from vecgrid.cluster.querynode.segments import ALL_PARTITIONS
from vecgrid.cluster.querynode.worker import Workers, row_count_statistics, total_row_count
from vecgrid.gpu.plan import parse_query_plan
from vecgrid.proto import data_coord_pb2, internal_pb2, query_coord_pb2, schema_pb2
from vecgrid.storage.layout import DataDir
from vecgrid.cluster.streaming.remote_reader import RemoteChannelReader
from vecgrid.storage.tso import parse_ts
from vecgrid.storage.wal import Position, Wal

log = logging.getLogger(__name__)
Q = query_coord_pb2
MAX_TS = int(np.iinfo(np.uint64).max)
DEFAULT_TSAFE_WAIT_S = 10.0      # wait for tsafe when the request has no timeout_timestamp


@dataclass(frozen=True)
class DeleteRetry:
    """How long a leader keeps trying to apply a delete on the nodes of its view (the node builds it
    from ``querynode.delete_retry_deadline_s`` and ``querynode.delete_call_timeout_s``)."""

    deadline_s: float = 30.0        # after this the channel is marked unserviceable
    call_timeout_s: float = 10.0    # one DeleteBatch attempt
    first_backoff_s: float = 0.05
    max_backoff_s: float = 2.0


def query_limit(req: internal_pb2.RetrieveRequest) -> int:
    """The row limit of a Query (the plan's, else the request's; -1: none), for merging its parts."""
    plan = parse_query_plan(req.serialized_expr_plan)
    return plan.limit if plan.limit and plan.limit > 0 else (req.limit if req.limit > 0 else -1)


@dataclass(frozen=True)
class L0Deletes:
    """The deletes of an L0 segment of the view; ``node_id`` holds it and applies them itself."""

    node_id: int
    partition_id: int
    pks: np.ndarray
    timestamps: np.ndarray


# --- the delegator ---------------------------------------------------------------------------------

class ShardDelegator:
    """The leader of one channel: its lifecycle, its reads, and the changes of its distribution.  Its
    collaborators come from the node that watches the channel: ``workers`` reach every node of the
    view (this one included), ``collections`` and ``loader`` are the node's, and ``on_change`` tells
    the node its distribution changed (lastModifyTs).  It holds the shard's ``distribution``.

    Owner: the node's event loop, of the delegator's own state (``pipeline``, the failure, the delete
    routing and buffers) and of the distribution it holds.  The pipeline thread calls only
    :meth:`forward_delete` and :meth:`_pipeline_failed`, which hand their work to the loop."""

    def __init__(self, collection_id: int, channel: str, *, workers: Workers, collections: CollectionManager,
                 loader: SegmentLoader, data_dir: str, stream_chunk_bytes: int,
                 on_change: Callable[[], None], version: int = 0, replica_id: int = 0,
                 delete_retry: DeleteRetry = DeleteRetry()) -> None:
        self.workers = workers
        self.collections = collections
        self.loader = loader
        self.data_dir = data_dir
        self.stream_chunk_bytes = stream_chunk_bytes
        self._on_change = on_change
        self.collection_id = collection_id
        self.channel = channel
        self.version = version or time.time_ns()
        self.replica_id = replica_id
        self.distribution = ShardDistribution(collection_id, channel)
        self.pk_stats: dict[int, PkStats] = {}  # sealed segment -> pk bloom filter, routes deletes
        self.pipeline: ChannelPipeline | None = None
        # (sequence number, pks, timestamps): replayed onto later loads
        self._deletes: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._delete_seq = itertools.count(1)
        self._l0: dict[int, L0Deletes] = {}   # L0 segments of the view: applied to every sealed segment
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failure: str | None = None   # why a delete may be missing from the view: unserviceable
        self._freeing: asyncio.Future[None] | None = None   # the failed pipeline's stop, awaited by stop()
        self.delete_retry = delete_retry

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self, info: Any, schema: schema_pb2.CollectionSchema, metric: str, excluded: dict[int, int],
              coord_address: str) -> None:
        """Start consuming the channel (called on the loop)."""

        self._loop = asyncio.get_running_loop()
        seek = info.seek_position if info.HasField("seek_position") and len(info.seek_position.msgID) else None
        self.distribution.seek_position = seek
        start = Position.from_msg_position(seek) if seek is not None else "earliest"
        wal = Wal(DataDir(self.data_dir).wal_root)
        if os.path.isdir(wal.channel_dir(self.channel)):
            reader = wal.open_reader(self.channel, start)
        else:
            reader = RemoteChannelReader(coord_address, self.channel, start)
        self.pipeline = ChannelPipeline(self.channel, reader, self.collection_id, schema, metric,
                                        excluded=excluded,
                                        forward_delete=self.forward_delete, on_failure=self._pipeline_failed)
        self.pipeline.start()

    def _pipeline_failed(self, error: Exception) -> None:
        """Pipeline thread: the leader is unserviceable now; the loop frees what it holds."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._failed, f"its pipeline failed: {error}")

    def _failed(self, reason: str) -> None:
        """Loop: the leader stops serving for good, so what it holds for reads goes at once — the
        pipeline (thread, reader, growing segments), the view with its pk statistics, the delete and
        L0 buffers; only the reason stays (the node reports it until the coordinator has moved on,
        see ``QueryNode.get_data_distribution``).  The node learns its distribution changed, so the
        coordinator sees the channel unwatched at its next pull and watches it again."""
        if self._failure is None:
            self._failure = reason
        self.distribution.clear()
        self.pk_stats, self._l0, self._deletes = {}, {}, []
        if self.pipeline is not None:
            pipeline, self.pipeline = self.pipeline, None
            self._freeing = asyncio.ensure_future(asyncio.to_thread(pipeline.stop))
        self._on_change()

    async def stop(self) -> None:
        """Stop consuming the channel; returns once the pipeline thread ended (a forward it waited
        for is cancelled).  Its growing segments are dropped with it, not released: a read may
        still be searching one."""
        if self.pipeline is not None:
            pipeline, self.pipeline = self.pipeline, None
            await asyncio.to_thread(pipeline.stop)
        if self._freeing is not None:
            await self._freeing

    @property
    def tsafe(self) -> int:
        return self.pipeline.tsafe if self.pipeline is not None else 0

    @property
    def node_id(self) -> int:
        """This node's id (the leader's own sub-requests and growing rows)."""
        return self.workers.local.node_id

    @property
    def collection(self) -> Collection:
        return self.collections.require(self.collection_id)

    @property
    def partition_stats(self) -> dict[int, int]:
        """The partition-stats versions of the view (the node seeds them from WatchDmChannels)."""
        return self.distribution.partition_stats

    # --- views -----------------------------------------------------------------------------------

    def delete_buffer_size(self) -> tuple[int, int]:
        """Keys and bytes (keys and timestamps) in the delete replay buffer (GetMetrics' quota metrics)."""
        deletes = list(self._deletes)
        return sum(len(t) for _, _, t in deletes), sum(p.nbytes + t.nbytes for _, p, t in deletes)

    def leader_view(self) -> Q.LeaderView:
        return self.distribution.leader_view(self.pipeline)

    def channel_info(self) -> Q.ChannelVersionInfo:
        return Q.ChannelVersionInfo(channel=self.channel, collection=self.collection_id, version=self.version)

    @property
    def serviceable(self) -> bool:
        """Whether this leader may serve reads: consuming its channel, every delete of the view applied
        (Milvus's ``Serviceable()``; GetDataDistribution leaves an unserviceable leader out)."""
        return self.pipeline is not None and self.unserviceable_reason() is None

    @property
    def failed(self) -> bool:
        """Whether it stopped serving for good (a lost delete, a failed pipeline): only a fresh
        delegator serves the channel again."""
        return self.unserviceable_reason() is not None

    def unserviceable_reason(self) -> str | None:
        if self._failure is not None:
            return f"channel {self.channel} is not serviceable: {self._failure}"
        if self.pipeline is not None and self.pipeline.error is not None:
            return f"channel {self.channel} is not serviceable: its pipeline failed: {self.pipeline.error}"
        return None

    def health_problem(self, max_lag_s: float) -> str | None:
        reason = self.unserviceable_reason()
        if reason is not None or self.pipeline is None:
            return reason
        ts = self.pipeline.tsafe
        if ts:
            lag = time.time() - parse_ts(ts)[0] / 1000.0
            if lag >= max_lag_s:
                return f"tsafe of channel {self.channel} lags {lag:.0f} s behind wall clock (max {max_lag_s:.0f} s)"
        return None

    # --- read path -------------------------------------------------------------------------------

    def _check_partitions(self, coll: Collection, partition_ids: Sequence[int]) -> AbstractSet[int] | None:
        """The partitions a read covers: those it names, which must be loaded, or else every loaded one
        (the pipeline keeps rows of every partition; None: every partition)."""
        if not len(partition_ids):
            return coll.partitions or None
        missing = [p for p in partition_ids if p not in coll.partitions]
        if missing and coll.partitions:
            raise errors.PartitionNotLoaded(partition=missing[0], collection=coll.id)
        return set(partition_ids)

    async def _wait(self, guarantee: int, timeout_ts: int) -> int:
        """Wait until tsafe >= ``guarantee``; returns tsafe."""
        pipeline = self.pipeline
        if pipeline is None:
            self._check_serviceable()   # failed: its pipeline is gone, the reason stays
            raise errors.ChannelNotFound("the delegator is stopped", channel=self.channel)
        self._check_serviceable()
        if guarantee and pipeline.tsafe < guarantee:
            if timeout_ts:
                timeout = max(0.0, parse_ts(timeout_ts)[0] / 1000.0 - time.time())
            else:
                timeout = DEFAULT_TSAFE_WAIT_S
            if not await asyncio.to_thread(pipeline.wait_tsafe, guarantee, timeout):
                if self.pipeline is not pipeline:
                    self._check_serviceable()   # failed meanwhile (its pipeline went with it)
                    # unwatched meanwhile (the channel moved): the caller asks for the leaders again
                    raise errors.ChannelNotFound("the delegator stopped while the request waited for tsafe",
                                                 channel=self.channel)
                self._check_serviceable()
                raise errors.Timeout(f"tsafe of channel {self.channel} ({pipeline.tsafe}) did not reach the "
                                     f"guarantee timestamp {guarantee} within {timeout:.1f} s "
                                     f"({pipeline.lag_reason()})", channel=self.channel)
            self._check_serviceable()   # it may have failed while the request waited
        return pipeline.tsafe

    def _check_serviceable(self) -> None:
        """Refuse a read with a retriable error (the proxy tries another replica)."""
        reason = self.unserviceable_reason()
        if reason is not None:
            raise errors.ServiceUnavailable(reason)

    async def _fan_out(self, calls: list[tuple[int, Awaitable[Any]]]) -> list[Any]:
        """The results of ``calls`` (``(node id, awaitable)``, from the workers), in order.  Calls to
        peers are already on their way; this node's own work starts here, on the loop when tiny (see
        :func:`~vecgrid.cluster.querynode.search.run_search`), so the workers search meanwhile.

        The first failure fails the read, naming its node (``worker(N) query failed: ...``), once
        every other call is cancelled and awaited; a cancel of the read propagates as it is."""
        if len(calls) == 1:  # the usual read of a leader holding all its segments: no task, no gather
            node_id, call = calls[0]
            try:
                return [await call]
            except Exception as e:
                self._raise_worker_failure(node_id, e)
        tasks = [(node_id, asyncio.ensure_future(call)) for node_id, call in calls]
        try:
            return await gather_all(task for _, task in tasks)
        except Exception as e:
            node_id = next((n for n, t in tasks if t.done() and not t.cancelled() and t.exception() is e), None)
            self._raise_worker_failure(node_id, e)

    @staticmethod
    def _raise_worker_failure(node_id: int | None, e: Exception) -> NoReturn:
        if isinstance(e, errors.MilvusError):
            raise type(e)(f"worker({node_id}) query failed: {e}") from None
        raise errors.UnexpectedError(f"worker({node_id}) query failed: {e}") from None

    def _sub(self, req: Any, node_id: int, segment_ids: Sequence[int], scope: int, mvcc: int) -> Any:
        sub = type(req)()
        sub.CopyFrom(req)
        sub.from_shard_leader = True
        sub.scope = scope
        sub.dml_channels[:] = [self.channel]
        sub.segmentIDs[:] = list(segment_ids)
        sub.req.mvcc_timestamp = mvcc
        sub.req.base.targetID = node_id
        return sub

    async def _prepare(self, req: Any) -> tuple[Collection, AbstractSet[int] | None, int]:
        coll = self.collection
        partitions = self._check_partitions(coll, req.req.partitionIDs)
        tsafe = await self._wait(req.req.guarantee_timestamp, req.req.timeout_timestamp)
        mvcc = req.req.mvcc_timestamp or tsafe
        return coll, partitions, mvcc

    async def search(self, req: Q.SearchRequest) -> internal_pb2.SearchResults:
        coll, partitions, mvcc = await self._prepare(req)
        calls: list[tuple[int, Awaitable[Any]]] = [
            (node_id, self.workers.get(node_id).search_segments(self._sub(req, node_id, sids, Q.Historical, mvcc)))
            for node_id, sids in self.distribution.readable(partitions).items()]
        growing = growing_views(self.pipeline, partitions)
        sub = self._sub(req, self.node_id, [], Q.Streaming, mvcc)
        if growing or not calls:  # an empty channel still answers
            calls.append((self.node_id, search_mod.run_search(coll, growing, sub.req, [self.channel])))
        parts = await self._fan_out(calls)
        if sub.req.nq * sub.req.topk * len(parts) <= INLINE_MERGE_HITS:
            out = merge_search(parts, sub.req, [self.channel], coll.pk_field.name)  # cheaper than a thread hop
        else:
            out = await asyncio.to_thread(merge_search, parts, sub.req, [self.channel], coll.pk_field.name)
        out.channels_mvcc[self.channel] = mvcc
        return out

    def _growing_query(self, coll: Collection, growing: list[GrowingView],
                       req: Q.QueryRequest) -> internal_pb2.RetrieveResults:
        found = retrieve_mod.retrieve(coll, growing, req.req)
        return retrieve_mod.to_retrieve_results(found, req.req, [self.channel])

    async def query(self, req: Q.QueryRequest) -> internal_pb2.RetrieveResults:
        coll, partitions, mvcc = await self._prepare(req)
        calls: list[tuple[int, Awaitable[Any]]] = [
            (node_id, self.workers.get(node_id).query_segments(self._sub(req, node_id, sids, Q.Historical, mvcc)))
            for node_id, sids in self.distribution.readable(partitions).items()]
        sub = self._sub(req, self.node_id, [], Q.Streaming, mvcc)
        growing = growing_views(self.pipeline, partitions)
        calls.append((self.node_id, asyncio.to_thread(self._growing_query, coll, growing, sub)))
        parts = await self._fan_out(calls)
        limit = query_limit(req.req)
        return await asyncio.to_thread(merge_retrieve, parts, sub.req, [self.channel], limit)

    async def query_stream(self, req: Q.QueryRequest) -> AsyncIterator[internal_pb2.RetrieveResults]:
        """Each worker's stream passed through, then the growing rows (as Milvus's delegator)."""
        coll, partitions, mvcc = await self._prepare(req)
        for node_id, sids in self.distribution.readable(partitions).items():
            sub = self._sub(req, node_id, sids, Q.Historical, mvcc)
            try:
                async for msg in self.workers.get(node_id).query_stream_segments(sub):
                    yield msg
            except errors.MilvusError as e:
                raise type(e)(f"worker({node_id}) query failed: {e}") from None
        sub = self._sub(req, self.node_id, [], Q.Streaming, mvcc)
        found = await asyncio.to_thread(retrieve_mod.retrieve, coll, growing_views(self.pipeline, partitions), sub.req)
        chunks = retrieve_mod.retrieve_chunks(found, sub.req, [self.channel], self.stream_chunk_bytes)
        while (msg := await asyncio.to_thread(next, chunks, None)) is not None:
            yield msg

    async def get_statistics(self, req: Q.GetStatisticsRequest) -> internal_pb2.GetStatisticsResponse:
        coll = self.collection
        partitions = self._check_partitions(coll, req.req.partitionIDs)
        tsafe = await self._wait(req.req.guarantee_timestamp, req.req.timeout_timestamp)
        mvcc = req.req.travel_timestamp or tsafe
        calls: list[tuple[int, Awaitable[Any]]] = []
        for node_id, sids in self.distribution.readable(partitions).items():
            sub = Q.GetStatisticsRequest()
            sub.CopyFrom(req)
            sub.from_shard_leader, sub.scope = True, Q.Historical
            sub.dml_channels[:] = [self.channel]
            sub.segmentIDs[:] = sids
            sub.req.travel_timestamp = mvcc
            calls.append((node_id, self.workers.get(node_id).get_statistics(sub)))
        growing = growing_views(self.pipeline, partitions)
        ts = mvcc or None

        async def growing_rows() -> internal_pb2.GetStatisticsResponse:
            return row_count_statistics(await asyncio.to_thread(lambda: sum(g.visible_rows(ts) for g in growing)))
        calls.append((self.node_id, growing_rows()))
        return row_count_statistics(total_row_count(await self._fan_out(calls)))

    # --- distribution --------------------------------------------------------------------------

    async def load_segments(self, req: Q.LoadSegmentsRequest) -> None:
        """Load on the worker (``dst_nodeID``; L0 segments on this node), then record them."""
        groups: dict[int, list[Q.SegmentLoadInfo]] = {}
        for info in req.infos:
            dst = self.node_id if info.level == data_coord_pb2.L0 else req.dst_nodeID
            groups.setdefault(dst, []).append(info)
        for dst, infos in groups.items():
            fwd = Q.LoadSegmentsRequest()
            fwd.CopyFrom(req)
            fwd.need_transfer = False
            fwd.dst_nodeID = dst
            fwd.base.targetID = dst
            del fwd.infos[:]
            fwd.infos.extend(infos)
            await self.workers.get(dst).load_segments(fwd)
            if req.load_scope == Q.Full:
                await self._adopt(dst, req.version, infos)
            else:
                for info in infos:
                    self.distribution.serve(info.segmentID, SealedEntry(dst, req.version, info.partitionID))
        self._on_change()

    async def _adopt(self, node_id: int, version: int, infos: Sequence[Q.SegmentLoadInfo]) -> None:
        """Start serving sealed segments just loaded on ``node_id``: pk statistics for delete routing,
        the deletes seen since and the channel's L0 deletes, then the view entry; their growing copies
        stop being searched."""
        await self._record_pk_stats(infos)
        l0 = [i for i in infos if i.level == data_coord_pb2.L0]
        if l0:
            await self._add_l0(node_id, l0)
        await self._catch_up(node_id, infos)
        # no await from here on: a delete or L0 segment arriving later sees these entries in the view
        self.distribution.join(node_id, version, infos)
        if self.pipeline is not None:
            # sealed now: its growing rows go, and those of every segment it was compacted from (a flushed
            # segment merged before this leader adopted it has growing rows here under its own id)
            self.pipeline.exclude({sid: MAX_TS for i in infos for sid in (i.segmentID, *i.compactionFrom)})

    async def release_segments(self, req: Q.ReleaseSegmentsRequest) -> None:
        if req.scope == Q.Streaming:
            if self.pipeline is not None:
                self.pipeline.exclude({sid: MAX_TS for sid in req.segmentIDs})
            return
        groups: dict[int, list[int]] = {}
        for sid in req.segmentIDs:
            at = self.distribution.node_of(sid)
            node_id = at if at is not None and req.nodeID in (0, -1, at) else req.nodeID
            groups.setdefault(node_id, []).append(sid)
        for node_id, sids in groups.items():
            for sid in sids:  # stop routing reads to them first
                self._remove(sid, node_id)
            fwd = Q.ReleaseSegmentsRequest()
            fwd.CopyFrom(req)
            fwd.need_transfer = False
            fwd.nodeID = node_id
            fwd.base.targetID = node_id
            fwd.segmentIDs[:] = sids
            if self.workers.knows(node_id):
                await self.workers.get(node_id).release_segments(fwd)
        self._on_change()
        return

    async def sync_distribution(self, req: Q.SyncDistributionRequest) -> None:
        """Apply the coordinator's view changes.  A Set carrying the segment's ``info`` is how a
        segment loaded on a worker by a Dask task joins this view (the "sync leader" step of a
        move), so it gets the same pk statistics and delete replay as a load through the leader."""
        for action in req.actions:
            if action.type == Q.Remove:
                self._remove(action.segmentID, None if action.nodeID == -1 else action.nodeID)
            elif action.type == Q.Set and action.HasField("info") and action.info.segmentID == action.segmentID:
                await self._adopt(action.nodeID, action.version, [action.info])
            elif action.type in (Q.Set, Q.Amend):
                part = action.info.partitionID if action.HasField("info") else action.partitionID
                self.distribution.serve(action.segmentID, SealedEntry(action.nodeID, action.version, part))
            elif action.type == Q.UpdateVersion:
                self.distribution.target_version = action.TargetVersion
                cp = action.checkpoint.timestamp if action.HasField("checkpoint") else 0
                ids = list(action.sealedInTarget) + list(action.droppedInTarget)
                if self.pipeline is not None and ids:
                    self.pipeline.exclude({sid: cp or MAX_TS for sid in ids})
                if cp:
                    self._deletes = [(n, p, t) for n, p, t in self._deletes if len(t) and int(t.max()) > cp]
            elif action.type == Q.UpdatePartitionStats:
                self.distribution.partition_stats.update(dict(action.partition_stats_versions))
            else:
                raise errors.ServiceInternal(f"unexpected action type {action.type}")
        self._on_change()

    def sync_replica_segments(self, req: Q.SyncReplicaSegmentsRequest) -> None:
        self.distribution.sync_replica_segments(req)
        self._on_change()

    def _remove(self, segment_id: int, node_id: int | None) -> None:
        """Stop routing to ``segment_id`` if ``node_id`` serves it (None: wherever it is), and forget
        its delete routing."""
        if self.distribution.drop(segment_id, node_id):
            self.pk_stats.pop(segment_id, None)
            self._l0.pop(segment_id, None)

    # --- delete forwarding ---------------------------------------------------------------------

    def forward_delete(self, pks: np.ndarray, timestamps: np.ndarray) -> "concurrent.futures.Future[None]":
        """Pipeline thread: hand deletes read from the channel to the loop, which buffers them and
        applies them on every node of the view that may hold the keys; the pipeline waits on the
        returned future (tsafe stays short of the deletes until they are visible)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            raise RuntimeError(f"the event loop of the delegator of {self.channel} is gone")
        return asyncio.run_coroutine_threadsafe(self._channel_delete(pks, timestamps), loop)

    async def _channel_delete(self, pks: np.ndarray, timestamps: np.ndarray) -> None:
        """On the loop (the owner of the replay buffer): keep a delete read from the channel for the
        segments loaded later, then apply it to the view's; one that cannot be applied makes the
        channel unserviceable (and fails the pipeline, which waits for this)."""
        self._deletes.append((next(self._delete_seq), pks, timestamps))
        try:
            await self._deliver(self._delete_request(pks, timestamps),
                                self._may_hold(self.distribution.sealed, pks), self.distribution.node_of,
                                f"deletes at ts {int(np.max(timestamps))}")
        except Exception as e:
            self._lost(e)
            raise

    def _lost(self, error: Exception) -> None:
        """A delete that the view's segments may need did not reach them: stop serving."""
        if self._failure is None:
            log.error("channel %s is not serviceable: %s", self.channel, error)
            self._failed(str(error))

    async def _record_pk_stats(self, infos) -> None:
        """Build the pk statistics that route deletes (L0 segments hold deletes, not rows)."""
        coll = self.collection
        rows = [i for i in infos if i.level != data_coord_pb2.L0]

        def build():
            out = {}
            for info in rows:
                keys = self.loader.read_primary_keys(coll, info)
                if keys is not None:
                    out[info.segmentID] = PkStats(keys)
            return out
        self.pk_stats.update(await asyncio.to_thread(build))

    def _may_hold(self, segments: Iterable[int], pks: np.ndarray) -> set[int]:
        """Of ``segments``, those whose pk statistics may hold one of ``pks`` (all where none are known)."""
        return {sid for sid in segments if sid not in self.pk_stats or self.pk_stats[sid].might_contain(pks).any()}

    def _delete_request(self, pks: np.ndarray, timestamps: np.ndarray) -> Q.DeleteBatchRequest:
        """A DeleteBatch of ``pks`` without segments or target (filled per node)."""
        ids = schema_pb2.IDs()
        if pks.dtype.kind in "UOS":
            ids.str_id.data.extend([str(v) for v in pks.tolist()])
        else:
            ids.int_id.data.extend(np.asarray(pks, np.int64).tolist())
        ts = np.asarray(timestamps, np.uint64).tolist()
        if len(ts) == 1 and len(pks) > 1:
            ts = ts * len(pks)
        return Q.DeleteBatchRequest(collection_id=self.collection_id, partition_id=-1, vchannel_name=self.channel,
                                    primary_keys=ids, timestamps=ts, scope=Q.Historical)

    async def _deliver(self, template: Q.DeleteBatchRequest, segments: set[int],
                       locate: Callable[[int], int | None], what: str, *, missing_is_final: bool = False) -> None:
        """Apply ``template``'s deletes to ``segments``, each on the node ``locate`` names at the time
        (None: nothing to do for it any more), one DeleteBatch per node, until every segment applied
        them.  An error, a timeout, ``failed_ids`` and ``missing_ids`` are retried with backoff for
        :attr:`delete_retry`'s budget, ``locate`` asked again each time (a segment answered missing
        has moved or left the view: the view says where it is now); then this raises.  With
        ``missing_is_final`` (segments about to join the view, on the node that just loaded them),
        a missing segment raises at once."""
        policy = self.delete_retry
        loop = asyncio.get_running_loop()
        deadline = loop.time() + policy.deadline_s
        backoff = policy.first_backoff_s
        pending = set(segments)
        attempt = 0
        while True:
            groups: dict[int, list[int]] = {}
            for sid in sorted(pending):
                node_id = locate(sid)
                if node_id is None:
                    pending.discard(sid)
                else:
                    groups.setdefault(node_id, []).append(sid)
            if not groups:
                return
            attempt += 1
            outcomes = await asyncio.gather(*(self._delete_on(template, node_id, sids, policy.call_timeout_s)
                                              for node_id, sids in groups.items()))
            problems = []
            for node_id, (applied, missing, problem) in zip(groups, outcomes):
                pending -= applied
                if problem is not None:
                    problems.append(problem)
                if missing and missing_is_final:
                    raise errors.SegmentNotLoaded(f"{what}: node {node_id} does not hold segments {sorted(missing)}",
                                                  segment=min(missing))
            if not pending:
                return
            if loop.time() + backoff > deadline:
                raise errors.ServiceUnavailable(f"{what} not applied after {attempt} attempt(s) in "
                                                f"{policy.deadline_s:g} s: " + "; ".join(problems))
            log.warning("%s of channel %s, attempt %d: %s; retrying", what, self.channel, attempt, "; ".join(problems))
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, policy.max_backoff_s)

    async def _delete_on(self, template: Q.DeleteBatchRequest, node_id: int, segments: list[int],
                         timeout_s: float) -> tuple[set[int], set[int], str | None]:
        """One DeleteBatch attempt on ``node_id``: ``(applied, missing, what went wrong)``."""
        req = Q.DeleteBatchRequest()
        req.CopyFrom(template)
        req.segment_ids[:] = segments
        req.base.targetID = node_id
        try:
            async with asyncio.timeout(timeout_s):
                reply = await self.workers.get(node_id).delete_batch(req)
        except TimeoutError:
            return set(), set(), f"node {node_id} did not answer within {timeout_s:g} s (segments {segments})"
        except errors.MilvusError as e:
            return set(), set(), f"node {node_id} failed (segments {segments}): {e}"
        failed, missing = set(reply.failed_ids), set(reply.missing_ids)
        problems = ([f"failed on segments {sorted(failed)}"] if failed else []) + \
            ([f"does not hold segments {sorted(missing)}"] if missing else [])
        problem = f"node {node_id} " + " and ".join(problems) if problems else None
        return set(segments) - failed - missing, missing, problem

    async def _add_l0(self, node_id: int, infos: Sequence[Q.SegmentLoadInfo]) -> None:
        """Keep the deletes of L0 segments just loaded on ``node_id`` and send them to the sealed
        segments already in the view on other nodes.  Without this, the segments a Dask task loaded
        on a worker (not through this leader) never see the deletes of a flush (Milvus 2.4: the
        delegator applies its L0 deletions to every sealed segment of the channel)."""
        def read() -> list[tuple[Q.SegmentLoadInfo, tuple[np.ndarray, np.ndarray] | None]]:
            return [(i, self.loader.read_deltalogs(i, {}).arrays()) for i in infos]
        found = await asyncio.to_thread(read)
        for info, arrays in found:
            pks, ts = arrays if arrays is not None else (np.empty(0, np.int64), np.empty(0, np.uint64))
            entry = self._l0[info.segmentID] = L0Deletes(node_id, info.partitionID, pks, ts)
            targets = self._l0_targets(entry)   # taken right after the entry is kept: no await between
            if not targets or not len(pks):
                continue

            def locate(sid: int, holder: int = entry.node_id) -> int | None:
                where = self.distribution.node_of(sid)
                return None if where == holder else where   # a node applies the L0 segments it holds
            try:
                await self._deliver(self._delete_request(pks, ts), self._may_hold(targets, pks), locate,
                                    f"the deletes of L0 segment {info.segmentID}")
            except Exception as e:
                self._lost(e)   # segments of the view lack them
                raise

    def _l0_targets(self, entry: L0Deletes) -> set[int]:
        """The sealed segments of the view on other nodes than ``entry``'s that its deletes reach."""
        return {sid for sid in self.distribution.elsewhere(entry.node_id, entry.partition_id) if sid not in self._l0}

    async def _catch_up(self, node_id: int, infos: Sequence[Q.SegmentLoadInfo]) -> None:
        """Send segments about to join the view (just loaded on ``node_id``) the channel's buffered
        deletes and the view's L0 deletes, until none arrived meanwhile: a delete forwarded, or an L0
        segment adopted, during these awaits went to a view without them."""
        rows = [i for i in infos if i.level != data_coord_pb2.L0]
        joining = [i.segmentID for i in infos]

        def on_node(_: int) -> int:
            return node_id
        sent_seq, sent_l0 = 0, set()
        while True:
            deletes = [(n, p, t) for n, p, t in list(self._deletes) if n > sent_seq]
            l0 = [(sid, e) for sid, e in list(self._l0.items()) if sid not in sent_l0]
            if not deletes and not l0:
                return
            for n, pks, ts in deletes:
                sent_seq = max(sent_seq, n)
                await self._deliver(self._delete_request(pks, ts), self._may_hold(joining, pks), on_node,
                                    f"buffered deletes at ts {int(np.max(ts))}", missing_is_final=True)
            for sid, entry in l0:
                sent_l0.add(sid)
                if entry.node_id == node_id or not len(entry.pks):
                    continue  # a node applies the L0 segments it holds to its own segments itself
                sids = [i.segmentID for i in rows if entry.partition_id in (ALL_PARTITIONS, i.partitionID)]
                if sids:
                    await self._deliver(self._delete_request(entry.pks, entry.timestamps),
                                        self._may_hold(sids, entry.pks), on_node,
                                        f"the deletes of L0 segment {sid}", missing_is_final=True)
