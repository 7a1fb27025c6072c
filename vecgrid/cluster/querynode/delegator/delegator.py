"""The shard delegator: one per watched DML channel on its shard-leader node (Milvus's ``ShardDelegator``).

A delegator is made by ``WatchDmChannels`` and ended by ``UnsubDmChannel``.  It owns

* a :class:`~vecgrid.cluster.querynode.pipeline.ChannelPipeline` that consumes the channel's
  WAL from the VchannelInfo's ``seek_position`` (earliest when unset) into growing segments,
  with the channel's flushed/dropped segments excluded up to their ``dml_position``;
* the shard's :class:`~vecgrid.cluster.querynode.delegator.distribution.ShardDistribution` (the
  **leader view**: sealed segment id → (node id, version, partition), the target version and the
  partition-stats versions), which ``LoadSegments`` / ``ReleaseSegments`` with ``need_transfer``
  and ``SyncDistribution`` / ``SyncReplicaSegments`` change through the delegator;
* a :class:`~vecgrid.cluster.querynode.delegator.delta_forward.DeltaForwarder`, which brings the
  channel's deletes and the view's L0 deletes to the sealed segments of the view, and those
  buffered to segments joining it.

Reads (``Search`` / ``Query`` / ``QueryStream`` / ``GetStatistics`` from a proxy) wait until
the channel's tsafe reaches the request's ``guarantee_timestamp``, fix the MVCC timestamp
(the request's, else tsafe), snapshot the view and fan out in parallel: one
``*Segments`` sub-request with scope Historical per worker node, through that node's
:class:`~vecgrid.cluster.querynode.worker.Worker` (in-process for this node, gRPC with
``serverid`` metadata for the others), plus one over its own growing segments (scope
Streaming).  The first failing sub-call fails the request (``worker(N) query failed: ...``).
The delegator knows nothing of the QueryNode that runs it: the node hands it its workers,
collections, loader and a change callback.

A delete the view needs that cannot be applied (the forwarder's retry budget ran out) makes the
leader **unserviceable** (as Milvus marks such segments offline):
the pipeline fails with tsafe short of the delete, reads are refused with the retriable
``ServiceUnavailable`` (a proxy tries another replica), ``health_problem`` says why, and the
node leaves the leader out of GetDataDistribution, so the coordinator's channel checker watches
the channel again — on this node ``WatchDmChannels`` then replaces the delegator with a fresh
one, whose catch-up sends the buffered deletes to every segment that joins its view.  A failed
leader frees its pipeline, growing segments, view and buffers at once; the node keeps the empty
shell only to report why, and drops it one health round after the coordinator saw it gone
(the channel may be watched on another node, which this node never hears of).

Who owns what: every piece of delegator state — the distribution, the delete forwarder, ``pipeline``,
the failure — belongs to the node's event loop.  The pipeline thread never touches
it: :meth:`ShardDelegator.forward_delete` hands each delete to the loop
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
import logging
import os
import time
from typing import AbstractSet, Any, AsyncIterator, Awaitable, Callable, NoReturn, Sequence

import numpy as np

from vecgrid import errors
from vecgrid.cluster.gather import gather_all
from vecgrid.cluster.querynode import retrieve
from vecgrid.cluster.querynode.collections import Collection, CollectionManager
from vecgrid.cluster.querynode.delegator.delta_forward import DeleteRetry, DeltaForwarder
from vecgrid.cluster.querynode.delegator.distribution import GrowingView, SealedEntry, ShardDistribution, growing_views
from vecgrid.cluster.querynode.loader import SegmentLoader
from vecgrid.cluster.querynode.pipeline import ChannelPipeline
from vecgrid.cluster.reduce import merge_retrieve, merge_search, off_loop
from vecgrid.cluster.querynode.worker import Workers, row_count_statistics, total_row_count
from vecgrid.gpu.growing import InterimIndex
from vecgrid.gpu.plan import parse_query_plan
from vecgrid.proto import data_coord_pb2, internal_pb2, query_coord_pb2, schema_pb2
from vecgrid.storage.layout import DataDir
from vecgrid.cluster.streaming.remote_reader import RemoteChannelReader
from vecgrid.storage.tso import parse_ts
from vecgrid.storage.wal import Position, Wal

log = logging.getLogger(__name__)
MAX_TS = int(np.iinfo(np.uint64).max)
DEFAULT_TSAFE_WAIT_S = 10.0      # wait for tsafe when the request has no timeout_timestamp


def query_limit(req: internal_pb2.RetrieveRequest) -> int:
    """The row limit of a Query (the plan's, else the request's; -1: none), for merging its parts."""
    plan = parse_query_plan(req.serialized_expr_plan)
    return plan.limit if plan.limit and plan.limit > 0 else (req.limit if req.limit > 0 else -1)


# --- the delegator ---------------------------------------------------------------------------------

class ShardDelegator:
    """The leader of one channel: its lifecycle, its reads, and the changes of its distribution.  Its
    collaborators come from the node that watches the channel: ``workers`` reach every node of the
    view (this one included), ``collections`` and ``loader`` are the node's, and ``on_change`` tells
    the node its distribution changed (lastModifyTs).  It holds the shard's ``distribution`` and its
    delete forwarder ``deltas``.

    Owner: the node's event loop, of the delegator's own state (``pipeline``, the failure) and of the
    distribution and the forwarder it holds.  The pipeline thread calls only :meth:`forward_delete`
    and :meth:`_pipeline_failed`, which hand their work to the loop."""

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
        self.deltas = DeltaForwarder(collection_id, channel, workers=workers, loader=loader,
                                     distribution=self.distribution, on_lost=self._lost, retry=delete_retry)
        self.pipeline: ChannelPipeline | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failure: str | None = None   # why a delete may be missing from the view: unserviceable
        self._freeing: asyncio.Future[None] | None = None   # the failed pipeline's stop, awaited by stop()

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self, info: Any, schema: schema_pb2.CollectionSchema, metric: str, excluded: dict[int, int],
              coord_address: str, *, interim: InterimIndex | None = None) -> None:
        """Start consuming the channel (called on the loop); ``interim``: its growing segments' interim
        index (:mod:`vecgrid.gpu.growing`), if any."""

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
                                        excluded=excluded, interim=interim,
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
        self.deltas.clear()
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
        return self.deltas.buffer_size()

    def leader_view(self) -> query_coord_pb2.LeaderView:
        return self.distribution.leader_view(self.pipeline)

    def channel_info(self) -> query_coord_pb2.ChannelVersionInfo:
        return query_coord_pb2.ChannelVersionInfo(
            channel=self.channel, collection=self.collection_id, version=self.version
        )

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

    async def search(self, req: query_coord_pb2.SearchRequest) -> internal_pb2.SearchResults:
        coll, partitions, mvcc = await self._prepare(req)
        readable = self.distribution.readable(partitions)
        own = readable.pop(self.node_id, [])
        calls: list[tuple[int, Awaitable[Any]]] = [
            (node_id, self.workers.get(node_id).search_segments(
                self._sub(req, node_id, sids, query_coord_pb2.Historical, mvcc)))
            for node_id, sids in readable.items()
        ]
        growing = growing_views(self.pipeline, partitions)
        if own or growing or not calls:  # an empty channel still answers
            # this node's sealed segments and the growing rows: one engine search, one part
            sub = self._sub(req, self.node_id, own, query_coord_pb2.Historical, mvcc)
            calls.append((self.node_id, self.workers.local.search_own_part(sub, growing)))
        parts = await self._fan_out(calls)
        out = await off_loop(lambda: merge_search(parts, req.req, [self.channel], coll.pk_field.name),
                             req.req.nq * req.req.topk * len(parts))
        out.channels_mvcc[self.channel] = mvcc
        return out

    def _growing_query(self, coll: Collection, growing: list[GrowingView],
                       req: query_coord_pb2.QueryRequest) -> internal_pb2.RetrieveResults:
        found = retrieve.retrieve(coll, growing, req.req)
        return retrieve.to_retrieve_results(found, req.req, [self.channel])

    async def query(self, req: query_coord_pb2.QueryRequest) -> internal_pb2.RetrieveResults:
        coll, partitions, mvcc = await self._prepare(req)
        calls: list[tuple[int, Awaitable[Any]]] = [
            (
                node_id,
                self.workers.get(node_id).query_segments(
                    self._sub(req, node_id, sids, query_coord_pb2.Historical, mvcc)
                ),
            )
            for node_id, sids in self.distribution.readable(partitions).items()
        ]
        sub = self._sub(req, self.node_id, [], query_coord_pb2.Streaming, mvcc)
        growing = growing_views(self.pipeline, partitions)
        calls.append((self.node_id, asyncio.to_thread(self._growing_query, coll, growing, sub)))
        parts = await self._fan_out(calls)
        limit = query_limit(req.req)
        return await asyncio.to_thread(merge_retrieve, parts, sub.req, [self.channel], limit)

    async def query_stream(self, req: query_coord_pb2.QueryRequest) -> AsyncIterator[internal_pb2.RetrieveResults]:
        """Each worker's stream passed through, then the growing rows (as Milvus's delegator)."""
        coll, partitions, mvcc = await self._prepare(req)
        for node_id, sids in self.distribution.readable(partitions).items():
            sub = self._sub(req, node_id, sids, query_coord_pb2.Historical, mvcc)
            try:
                async for msg in self.workers.get(node_id).query_stream_segments(sub):
                    yield msg
            except errors.MilvusError as e:
                raise type(e)(f"worker({node_id}) query failed: {e}") from None
        sub = self._sub(req, self.node_id, [], query_coord_pb2.Streaming, mvcc)
        found = await asyncio.to_thread(retrieve.retrieve, coll, growing_views(self.pipeline, partitions), sub.req)
        chunks = retrieve.retrieve_chunks(found, sub.req, [self.channel], self.stream_chunk_bytes)
        while (msg := await asyncio.to_thread(next, chunks, None)) is not None:
            yield msg

    async def get_statistics(self, req: query_coord_pb2.GetStatisticsRequest) -> internal_pb2.GetStatisticsResponse:
        coll = self.collection
        partitions = self._check_partitions(coll, req.req.partitionIDs)
        tsafe = await self._wait(req.req.guarantee_timestamp, req.req.timeout_timestamp)
        mvcc = req.req.travel_timestamp or tsafe
        calls: list[tuple[int, Awaitable[Any]]] = []
        for node_id, sids in self.distribution.readable(partitions).items():
            sub = query_coord_pb2.GetStatisticsRequest()
            sub.CopyFrom(req)
            sub.from_shard_leader, sub.scope = True, query_coord_pb2.Historical
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

    async def load_segments(self, req: query_coord_pb2.LoadSegmentsRequest) -> None:
        """Load on the worker (``dst_nodeID``; L0 segments on this node), then record them."""
        groups: dict[int, list[query_coord_pb2.SegmentLoadInfo]] = {}
        for info in req.infos:
            dst = self.node_id if info.level == data_coord_pb2.L0 else req.dst_nodeID
            groups.setdefault(dst, []).append(info)
        for dst, infos in groups.items():
            fwd = query_coord_pb2.LoadSegmentsRequest()
            fwd.CopyFrom(req)
            fwd.need_transfer = False
            fwd.dst_nodeID = dst
            fwd.base.targetID = dst
            del fwd.infos[:]
            fwd.infos.extend(infos)
            await self.workers.get(dst).load_segments(fwd)
            if req.load_scope == query_coord_pb2.Full:
                await self._adopt(dst, req.version, infos)
            else:
                for info in infos:
                    self.distribution.serve(info.segmentID, SealedEntry(dst, req.version, info.partitionID))
        self._on_change()

    async def _adopt(self, node_id: int, version: int, infos: Sequence[query_coord_pb2.SegmentLoadInfo]) -> None:
        """Start serving sealed segments just loaded on ``node_id``: pk statistics for delete routing,
        the deletes seen since and the channel's L0 deletes, then the view entry; their growing copies
        stop being searched."""
        await self.deltas.admit(self.collection, node_id, infos)
        # no await from here on: a delete or L0 segment arriving later sees these entries in the view
        self.distribution.join(node_id, version, infos)
        if self.pipeline is not None:
            # sealed now: its growing rows go, and those of every segment it was compacted from (a flushed
            # segment merged before this leader adopted it has growing rows here under its own id)
            self.pipeline.exclude({sid: MAX_TS for i in infos for sid in (i.segmentID, *i.compactionFrom)})

    async def release_segments(self, req: query_coord_pb2.ReleaseSegmentsRequest) -> None:
        if req.scope == query_coord_pb2.Streaming:
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
            fwd = query_coord_pb2.ReleaseSegmentsRequest()
            fwd.CopyFrom(req)
            fwd.need_transfer = False
            fwd.nodeID = node_id
            fwd.base.targetID = node_id
            fwd.segmentIDs[:] = sids
            if self.workers.knows(node_id):
                await self.workers.get(node_id).release_segments(fwd)
        self._on_change()
        return

    async def sync_distribution(self, req: query_coord_pb2.SyncDistributionRequest) -> None:
        """Apply the coordinator's view changes.  A Set carrying the segment's ``info`` is how a
        segment loaded on a worker by a Dask task joins this view (the "sync leader" step of a
        move), so it gets the same pk statistics and delete replay as a load through the leader."""
        for action in req.actions:
            if action.type == query_coord_pb2.Remove:
                self._remove(action.segmentID, None if action.nodeID == -1 else action.nodeID)
            elif (
                action.type == query_coord_pb2.Set
                and action.HasField("info")
                and action.info.segmentID == action.segmentID
            ):
                await self._adopt(action.nodeID, action.version, [action.info])
            elif action.type in (query_coord_pb2.Set, query_coord_pb2.Amend):
                part = action.info.partitionID if action.HasField("info") else action.partitionID
                self.distribution.serve(action.segmentID, SealedEntry(action.nodeID, action.version, part))
            elif action.type == query_coord_pb2.UpdateVersion:
                self.distribution.target_version = action.TargetVersion
                cp = action.checkpoint.timestamp if action.HasField("checkpoint") else 0
                ids = list(action.sealedInTarget) + list(action.droppedInTarget)
                if self.pipeline is not None and ids:
                    self.pipeline.exclude({sid: cp or MAX_TS for sid in ids})
                if cp:
                    self.deltas.trim(cp)
            elif action.type == query_coord_pb2.UpdatePartitionStats:
                self.distribution.partition_stats.update(dict(action.partition_stats_versions))
            else:
                raise errors.ServiceInternal(f"unexpected action type {action.type}")
        self._on_change()

    def sync_replica_segments(self, req: query_coord_pb2.SyncReplicaSegmentsRequest) -> None:
        self.distribution.sync_replica_segments(req)
        self._on_change()

    def _remove(self, segment_id: int, node_id: int | None) -> None:
        """Stop routing to ``segment_id`` if ``node_id`` serves it (None: wherever it is), and forget
        its delete routing."""
        if self.distribution.drop(segment_id, node_id):
            self.deltas.forget(segment_id)

    # --- deletes from the pipeline --------------------------------------------------------------

    def forward_delete(self, pks: np.ndarray, timestamps: np.ndarray) -> "concurrent.futures.Future[None]":
        """Pipeline thread: hand deletes read from the channel to the loop, which buffers them and
        applies them on every node of the view that may hold the keys; the pipeline waits on the
        returned future (tsafe stays short of the deletes until they are visible)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            raise RuntimeError(f"the event loop of the delegator of {self.channel} is gone")
        return asyncio.run_coroutine_threadsafe(self.deltas.channel_delete(pks, timestamps), loop)

    def _lost(self, error: Exception) -> None:
        """A delete that the view's segments may need did not reach them: stop serving."""
        if self._failure is None:
            log.error("channel %s is not serviceable: %s", self.channel, error)
            self._failed(str(error))
