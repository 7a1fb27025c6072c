"""The QueryNode component: one per Dask worker.

It holds what the node serves and answers the QueryNode RPCs.  The gRPC servicer
(``vecgrid.rpc.querynode_servicer``) and the coordinator's Dask tasks
(:mod:`vecgrid.cluster.querynode.tasks`) both call these methods, so a segment load
issued over gRPC and one issued as a Dask task run the same code.

A node starts Initializing with node id -1 (as a Milvus node before its session
is registered) and becomes Healthy when the coordinator assigns its id.

Handler API
-----------
Every QueryNode RPC has an ``async`` method here that takes the request message and
returns the response message (a ``common.Status`` for the Status-only RPCs); a
failure raises :class:`vecgrid.errors.MilvusError`, which the servicer turns into the
reply's Status.  Blocking work (file reads, index builds, faiss searches, numpy
filters) runs in worker threads; node state is changed only on the event loop.

The node serves sealed segments (the worker side) and, for every channel it watches
(``WatchDmChannels``), a :class:`~vecgrid.cluster.querynode.delegator.delegator.ShardDelegator`
(the shard-leader side).  ``Search``/``Query``/``QueryStream``/``GetStatistics`` from a
proxy (``from_shard_leader=False``) and ``LoadSegments``/``ReleaseSegments`` with
``need_transfer`` go through :meth:`QueryNode.delegator_for`; a channel without one
answers ``channel not found`` (500) as Milvus does.  A ``LoadSegments`` with
``need_transfer`` for another node and no local delegator is forwarded to it when its
address is known (:attr:`QueryNode.peers`).  Peer addresses come in request
``base.properties`` keys ``vecgrid.node_address.<id>`` (see the delegator module) or
from :meth:`register_peer`.
"""

from __future__ import annotations

import asyncio
import os
import json
import logging
import socket
import time
from typing import Any, AsyncIterator, Sequence

import numpy as np
import psutil

from vecgrid import errors
from vecgrid.cluster import cores, sysinfo
from vecgrid.cluster.component import Component
from vecgrid.cluster.gather import gather_all
from vecgrid.cluster.lifecycle import StateCode
from vecgrid.cluster.querynode import retrieve
from vecgrid.cluster.querynode import search
from vecgrid.cluster.querynode.collections import Collection, CollectionManager
from vecgrid.cluster.querynode.delegator.delegator import MAX_TS, ShardDelegator, query_limit
from vecgrid.cluster.querynode.delegator.delta_forward import DeleteRetry
from vecgrid.cluster.querynode.index_saver import SaveIndexRequest, save_segment_indexes
from vecgrid.cluster.querynode.loader import SegmentLoader
from vecgrid.cluster.querynode.monitor import node_snapshot, quota_metrics
from vecgrid.cluster.querynode.peers import PeerClients
from vecgrid.cluster.reduce import merge_retrieve, merge_search
from vecgrid.cluster.querynode.segments import ALL_PARTITIONS, SealedSegment, SegmentManager
from vecgrid.cluster.querynode.worker import LocalWorker, Workers, row_count_statistics, total_row_count
from vecgrid.common.keys import COORD_ADDRESS_KEY, checksums_from_properties, node_addresses
from vecgrid.config import QueryNodeSettings, Settings
from vecgrid.gpu.build import CPU_FALLBACK
from vecgrid.gpu.growing import InterimIndex
from vecgrid.gpu.results import primary_keys
from vecgrid.proto import (common_pb2, internal_pb2, query_coord_pb2, schema_pb2)
from vecgrid.storage.layout import DataDir
from vecgrid.storage.segment_files import FileInfo

log = logging.getLogger(__name__)
ROLE = "querynode"
FORWARD_TIMEOUT_S = 300.0  # a forwarded LoadSegments (Milvus's segment task timeout is 120 s)
MAX_TT_DELAY_S = 300.0     # quotaAndLimits.limitWriting.ttProtection.maxTimeTickDelay


def _ok() -> common_pb2.Status:
    return common_pb2.Status()  # code 0, error_code Success


def _delete_args(ids: schema_pb2.IDs, timestamps: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    pks = primary_keys(ids)
    ts = np.asarray(timestamps, dtype=np.uint64)
    if len(ts) != len(pks):
        raise errors.ParameterInvalid(f"{len(pks)} primary keys but {len(ts)} timestamps")
    return pks, ts


def _sealed_scope(scope: int) -> bool:
    """Whether a DataScope covers sealed segments (UnKnown counts as All, as Milvus)."""
    return scope != query_coord_pb2.Streaming


def interim_index(settings: QueryNodeSettings, index_type: str) -> InterimIndex | None:
    """The interim index of a channel's growing segments: none for an exact collection (FLAT or
    GPU_BRUTE_FORCE: its searches are exact, growing rows included) or when ``interim_index_rows`` is 0."""
    exact = CPU_FALLBACK.get(index_type.upper(), index_type.upper()) in ("FLAT", "")
    if settings.interim_index_rows <= 0 or exact:
        return None
    return InterimIndex(rows=settings.interim_index_rows, nlist=max(1, settings.interim_index_nlist),
                        nprobe=max(1, settings.interim_index_nprobe))


def learn_peers(node: "QueryNode", base: common_pb2.MsgBase) -> None:
    """Register ``vecgrid.node_address.<id>`` properties of a request's ``base`` as peers."""
    for node_id, address in node_addresses(base.properties).items():
        node.register_peer(node_id, address)


LABEL_ENV_PREFIX = "MILVUS_SERVER_LABEL_"


def server_labels() -> dict[str, str]:
    """Node labels from ``MILVUS_SERVER_LABEL_<KEY>=<value>`` (what resource-group node filters match)."""
    return {k[len(LABEL_ENV_PREFIX):]: v for k, v in os.environ.items() if k.startswith(LABEL_ENV_PREFIX)}


class QueryNode(Component):
    def __init__(self, settings: Settings, name: str, deploy_mode: str = "CLUSTER", *,
                 devices: Any = None) -> None:
        super().__init__(settings, ROLE)
        self.name = name
        self.deploy_mode = deploy_mode
        self.hostname = socket.gethostname()
        self.collections = CollectionManager(on_change=self._touch)
        self.segments = SegmentManager()
        self.peers = PeerClients()
        #: how this node's delegators reach every node of their views, this one included
        self.workers = Workers(LocalWorker(self), self.peers)
        self.loader = SegmentLoader(DataDir.of(settings).segment_root, self.devices, self.segments, self.collections,
                                    self._lock, self._touch)
        #: QueryStream chunk limit (bytes of one RetrieveResults)
        self.stream_chunk_bytes = settings.querynode.stream_chunk_bytes
        self._devices = devices
        self._last_modify_ts = time.time_ns()
        self._dml_lock: asyncio.Lock | None = None
        self.delegators: dict[str, ShardDelegator] = {}
        #: failed delegators still held (to report why) -> when a distribution first left them out
        #: (loop time); owned by the event loop, like ``delegators``
        self._failed_since: dict[ShardDelegator, float] = {}
        self.max_tt_delay_s = MAX_TT_DELAY_S
        qn = settings.querynode
        cores.configure_faiss_threads(qn.faiss_threads)
        from vecgrid.gpu.device import serve_heap   # here: the coordinator imports this module, not the engine

        serve_heap()   # faiss's search scratch stays in the heap between searches
        #: micro-batching of the searches this node runs (owned by the node's event loop)
        self.batcher = search.SearchBatcher(qn.batch_window_ms / 1000.0, qn.batch_max_nq)

    # --- session ---------------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.lifecycle.node_id

    def assign_node_id(self, node_id: int) -> None:
        """Called by the coordinator once it has registered this node: the node starts serving."""
        self.lifecycle.node_id = node_id
        if self.lifecycle.state == StateCode.Initializing:
            self.lifecycle.set(StateCode.Healthy)

    def stop(self) -> None:
        self.lifecycle.set(StateCode.Stopping)

    async def close(self) -> None:
        """Stop the delegators, release every segment and close peer channels (after the server stopped)."""
        for d in list(self.delegators.values()):
            await d.stop()
        self.delegators.clear()
        await self.loader.close()
        segments = self.segments.list()
        for seg in segments:
            self.segments.remove(seg.segment_id)
        for coll in self.collections.all():
            self.collections.remove(coll.id)
        await asyncio.to_thread(lambda: [s.release() for s in segments])
        await self.peers.close()

    def describe(self) -> dict[str, Any]:
        """What the coordinator needs to register this node (msgpack-serialisable)."""
        return {
            "name": self.name,
            "address": self.address,
            "hostname": self.hostname,
            "node_id": self.node_id,
            "state": self.lifecycle.state.name,
            # The ScoreBased balancer weighs nodes by GPU memory where they have GPUs.
            "gpu_memory_mb": sum(d.budget_bytes for d in self.devices().devices if d.is_gpu) / (1 << 20),
            "labels": server_labels(),
        }

    def node_mismatch(self, expected: int) -> errors.MilvusError | None:
        """Milvus's ``node not match`` (904) when a request addressed to ``expected`` reached this node."""
        if expected != self.node_id:
            return errors.NodeNotMatch(expectedNodeID=expected, actualNodeID=self.node_id)
        return None

    def register_peer(self, node_id: int, address: str) -> None:
        """Tell this node where another QueryNode serves (for forwarding and, later, fan-out)."""
        self.peers.register(node_id, address)

    def devices(self) -> Any:
        """The node's :class:`vecgrid.gpu.device.DeviceManager` (made on first use)."""
        if self._devices is None:
            from vecgrid.gpu.device import DeviceManager

            self._devices = DeviceManager(self.settings.querynode.gpu_memory_fraction,
                                          engine=self.settings.querynode.gpu_engine)
        return self._devices

    # --- state helpers ---------------------------------------------------------------------

    def _touch(self) -> None:
        self._last_modify_ts = max(self._last_modify_ts + 1, time.time_ns())

    @property
    def last_modify_ts(self) -> int:
        """Changes on every load, release and delete (GetDataDistribution.lastModifyTs)."""
        return self._last_modify_ts

    def _check_serving_or_stopping(self) -> None:
        if self.lifecycle.state not in (StateCode.Healthy, StateCode.Stopping):
            raise errors.ServiceNotReady(self.lifecycle.state.name, **{ROLE: self.node_id})

    def _lock(self) -> asyncio.Lock:
        if self._dml_lock is None:
            self._dml_lock = asyncio.Lock()
        return self._dml_lock

    def _select(self, coll: Collection, partition_ids: Sequence[int], segment_ids: Sequence[int], scope: int,
                channels: Sequence[str] = ()) -> list[SealedSegment]:
        """The sealed segments a search / query / statistics request reads (Milvus's ``validate``)."""
        if not _sealed_scope(scope):  # this node has no growing segments (yet)
            if segment_ids:
                raise errors.SegmentNotLoaded(segment=segment_ids[0])
            return []
        parts = set(partition_ids) if len(partition_ids) else set(coll.partitions)
        if not segment_ids:
            return self.segments.list(coll.id, partitions=parts, channels=list(channels) or None,
                                      exclude_l0=True)
        out = []
        for sid in dict.fromkeys(segment_ids):
            seg = self.segments.get(sid)
            if seg is None or seg.collection_id != coll.id:
                raise errors.SegmentNotLoaded(segment=sid)
            if seg.partition_id not in parts and seg.partition_id != ALL_PARTITIONS:
                raise errors.UnexpectedError(
                    f"segment {sid} belongs to partition {seg.partition_id}, which is not in {sorted(parts)}")
            out.append(seg)
        return out

    # --- shard delegators ----------------------------------------------------------

    def delegator_for(self, channel: str) -> ShardDelegator | None:
        """The shard delegator this node runs for ``channel``, or ``None``."""
        return self.delegators.get(channel)

    def _delete_retry(self) -> DeleteRetry:
        """The delete budget of a new delegator, from the settings as they are now."""
        qn = self.settings.querynode
        return DeleteRetry(deadline_s=qn.delete_retry_deadline_s, call_timeout_s=qn.delete_call_timeout_s)

    def _no_delegator(self, channel: str, what: str) -> errors.MilvusError:
        return errors.ChannelNotFound(f"failed to get shard delegator for {what}", channel=channel)

    def _delegators(self, channels: Sequence[str], what: str) -> list[ShardDelegator]:
        if not channels:
            raise errors.ParameterInvalid(f"the {what} request names no DML channel")
        out = []
        for ch in channels:
            d = self.delegator_for(ch)
            if d is None:
                raise self._no_delegator(ch, what)
            out.append(d)
        return out

    async def watch_dm_channels(self, req: query_coord_pb2.WatchDmChannelsRequest) -> common_pb2.Status:
        """WatchDmChannels: a delegator per VchannelInfo.  An already watched channel is left as is,
        unless its delegator is not serviceable (a delete it could not apply, a failed pipeline): the
        coordinator watches such a channel again, and a fresh delegator replaces it."""
        self.lifecycle.check_healthy()
        learn_peers(self, req.base)
        if not len(req.infos):
            raise errors.ParameterInvalid("the WatchDmChannels request lists no channel")
        coll = self.collections.prepare(
            req.collectionID, schema=req.schema if req.HasField("schema") else None,
            load_meta=req.load_meta if req.HasField("load_meta") else None,
            index_infos=req.index_info_list, replica_id=req.replicaID)
        parts = list(req.partitionIDs) or list(req.load_meta.partitionIDs)
        coll = coll.updated(add_partitions=parts)
        self.collections.commit(coll)
        vec = next((f for f in coll.schema.fields if f.data_type == schema_pb2.FloatVector), None)
        if vec is None:
            raise errors.CollectionIllegalSchema(f"collection {coll.id} has no FloatVector field")
        metric, index_type = "L2", "FLAT"
        index = coll.indexes.get(vec.fieldID)
        if index is not None and len(index.index_params):
            from vecgrid.gpu.build import parse_index_params

            index_type, metric, _ = parse_index_params(list(index.index_params))
            metric = metric or "L2"
        interim = interim_index(self.settings.querynode, index_type)
        coord = req.base.properties.get(COORD_ADDRESS_KEY) or \
            f"{self.settings.common.host}:{self.settings.querycoord.port}"
        started = []
        try:
            for info in req.infos:
                current = self.delegators.get(info.channelName)
                if current is not None and current.serviceable:
                    continue
                excluded: dict[int, int] = {}
                for seg in list(info.flushedSegments) + list(info.dropped_segments) + list(req.exclude_infos):
                    excluded[seg.ID] = seg.dml_position.timestamp or MAX_TS
                for sid in list(info.flushedSegmentIds) + list(info.dropped_segmentIds):
                    if sid not in excluded:
                        known = req.segment_infos.get(sid)
                        excluded[sid] = (known.dml_position.timestamp if known is not None else 0) or MAX_TS
                d = ShardDelegator(coll.id, info.channelName, workers=self.workers, collections=self.collections,
                                   loader=self.loader, data_dir=self.settings.common.data_dir,
                                   stream_chunk_bytes=self.stream_chunk_bytes, on_change=self._touch,
                                   version=req.version, replica_id=req.replicaID,
                                   delete_retry=self._delete_retry())
                d.partition_stats.update(dict(info.partition_stats_versions))
                d.start(info, coll.schema, metric, excluded, coord, interim=interim)
                started.append(d)
        except BaseException:
            for d in started:
                await d.stop()
            raise
        for d in started:
            replaced = self.delegators.get(d.channel)
            self.delegators[d.channel] = d
            if replaced is not None:
                log.warning("channel %s: replacing its unserviceable delegator (%s)", d.channel,
                            replaced.unserviceable_reason())
                await replaced.stop()
        self._touch()
        return _ok()

    async def unsub_dm_channel(self, req: query_coord_pb2.UnsubDmChannelRequest) -> common_pb2.Status:
        """UnsubDmChannel: stop the channel's delegator (unknown channel → success)."""
        self._check_serving_or_stopping()
        d = self.delegators.pop(req.channel_name, None)
        if d is not None:
            await d.stop()
            self._touch()
        return _ok()

    async def sync_distribution(self, req: query_coord_pb2.SyncDistributionRequest) -> common_pb2.Status:
        """SyncDistribution: Set / Remove / Amend / UpdateVersion / UpdatePartitionStats on the leader view."""
        self.lifecycle.check_healthy()
        learn_peers(self, req.base)
        d = self.delegator_for(req.channel)
        if d is None:
            raise self._no_delegator(req.channel, "sync distribution")
        await d.sync_distribution(req)
        return _ok()

    async def sync_replica_segments(self, req: query_coord_pb2.SyncReplicaSegmentsRequest) -> common_pb2.Status:
        """SyncReplicaSegments: replace the sealed part of the leader view."""
        self.lifecycle.check_healthy()
        d = self.delegator_for(req.vchannel_name)
        if d is None:
            raise self._no_delegator(req.vchannel_name, "sync replica segments")
        d.sync_replica_segments(req)
        return _ok()

    # --- component RPCs --------------------------------------------------------------------

    def metrics(self, request: str) -> str:
        """GetMetrics: the ``system_info`` JSON of this node (the only metric type Milvus serves)."""
        from vecgrid.gpu.device import simd_level

        self.lifecycle.check_healthy()
        sysinfo.parse_metric_type(request)
        # Milvus echoes its simdType setting ("auto"); vecgrid has none, so it reports what faiss runs
        # with, and leaves the field out when that is unknown.
        simd = simd_level()
        doc = {
            "base_component_infos": sysinfo.base_component_info(
                self.lifecycle, self.address, self.deploy_mode, self.settings.common.data_dir),
            "system_configurations": {} if simd is None else {"simd_type": simd},
            "quota_metrics": quota_metrics(self),
            "collection_metrics": {"collection_ids": [c.id for c in self.collections.all()]},
            "worker_name": self.name,
            # vecgrid's own: each device's index budget and use (the REST nodes table shows them).
            "devices": [d.stats() for d in self.devices().devices],
            "vecgrid": node_snapshot(self),
        }
        return json.dumps(doc)

    def health_reasons(self) -> list[str]:
        """Why this node is unhealthy; empty when healthy.  Raises when not serving at all."""
        self.lifecycle.check_healthy()
        problems = [p for d in list(self.delegators.values()) if (p := d.health_problem(self.max_tt_delay_s))]
        problems += self.loader.problems
        if not problems:
            return []
        msgs = [{"role": ROLE, "node_id": self.node_id,
                 "reason": {"unhealthy_msg": p, "unhealthy_level": 3}} for p in problems]
        return [json.dumps({"unhealthy_cluster_msgs": msgs, "unhealthy_collection_msgs": []})]

    # --- segment control -------------------------------------------------------------------

    async def load_segments(self, req: query_coord_pb2.LoadSegmentsRequest) -> common_pb2.Status:
        """LoadSegments: load (``load_scope`` Full), apply delete logs (Delta) or reload indexes (Index).

        ``need_transfer`` for another node: hand to the channel's delegator or
        forward to ``dst_nodeID`` when its address is known; else ``channel not found`` (500).
        A failed load leaves the node as it was."""
        self.lifecycle.check_healthy()
        learn_peers(self, req.base)
        if not len(req.infos):
            raise errors.ParameterInvalid("the LoadSegments request lists no segment")
        if not len(req.index_info_list):
            raise errors.IndexNotFound(collection=req.schema.name or req.collectionID or req.infos[0].collectionID)
        if req.need_transfer and (req.dst_nodeID != self.node_id
                                  or self.delegator_for(req.infos[0].insert_channel) is not None):
            return await self._transfer_load(req)
        coll_id = req.collectionID or req.infos[0].collectionID
        for info in req.infos:
            if info.collectionID and info.collectionID != coll_id:
                raise errors.ParameterInvalid(
                    f"segment {info.segmentID} belongs to collection {info.collectionID}, not {coll_id}")
        checksums = checksums_from_properties(req.base.properties)
        if req.load_scope in (query_coord_pb2.Delta, query_coord_pb2.Index):
            if coll_id not in self.collections:
                return _ok()  # nothing of it is loaded here: nothing to update (as Milvus skips them)
        coll = self.collections.prepare(
            coll_id, schema=req.schema if req.HasField("schema") else None,
            load_meta=req.load_meta if req.HasField("load_meta") else None,
            index_infos=req.index_info_list, replica_id=req.replicaID)
        if req.load_scope == query_coord_pb2.Delta:
            await self.loader.load_delta(req.infos, checksums)
            self.collections.commit(coll)
        elif req.load_scope == query_coord_pb2.Index:
            await self.loader.reload_indexes(coll, req, checksums)
        else:
            await self.loader.load_full(coll, req, checksums)
        return _ok()

    async def _transfer_load(self, req: query_coord_pb2.LoadSegmentsRequest) -> common_pb2.Status:
        channel = req.infos[0].insert_channel
        delegator = self.delegator_for(channel)
        if delegator is not None:  # the delegator loads on the worker and records it
            await delegator.load_segments(req)
            return _ok()
        if not self.peers.knows(req.dst_nodeID):
            raise errors.ChannelNotFound(
                f"node {self.node_id} leads no delegator for it and does not know node {req.dst_nodeID}",
                channel=channel)
        forward = query_coord_pb2.LoadSegmentsRequest()
        forward.CopyFrom(req)
        forward.need_transfer = False
        forward.base.targetID = req.dst_nodeID
        try:
            status = await self.peers.stub(req.dst_nodeID).LoadSegments(
                forward, metadata=self.peers.metadata(req.dst_nodeID), timeout=FORWARD_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - grpc errors of an unreachable peer
            raise errors.ServiceUnavailable(f"forwarding LoadSegments to node {req.dst_nodeID} at "
                                            f"{self.peers.address(req.dst_nodeID)} failed: {e}") from None
        errors.raise_for_status(status)
        return _ok()

    async def _release(self, segments: list[SealedSegment]) -> None:
        for seg in segments:
            self.segments.remove(seg.segment_id)
        if segments:
            self._touch()
            await asyncio.to_thread(lambda: [s.release() for s in segments])

    async def release_segments(self, req: query_coord_pb2.ReleaseSegmentsRequest) -> common_pb2.Status:
        """ReleaseSegments: drop the listed segments of the scope; unknown ids are ignored (as Milvus).

        ``need_transfer``: the delegator of ``shard`` releases them (none → 500)."""
        self._check_serving_or_stopping()
        learn_peers(self, req.base)
        if req.need_transfer:
            delegator = self.delegator_for(req.shard)
            if delegator is None:
                raise self._no_delegator(req.shard, "release segments")
            await delegator.release_segments(req)
            return _ok()
        if not _sealed_scope(req.scope):
            return _ok()
        await self._release([s for sid in dict.fromkeys(req.segmentIDs) if (s := self.segments.get(sid))])
        return _ok()

    async def release_collection(self, req: query_coord_pb2.ReleaseCollectionRequest) -> common_pb2.Status:
        """ReleaseCollection: forget the collection and release all its segments (unknown → success)."""
        self._check_serving_or_stopping()
        segments = self.segments.list(req.collectionID)
        self.collections.remove(req.collectionID)
        await self._release(segments)
        return _ok()

    async def load_partitions(self, req: query_coord_pb2.LoadPartitionsRequest) -> common_pb2.Status:
        """LoadPartitions: add partitions to a known collection; unknown collection → success, nothing done."""
        self.lifecycle.check_healthy()
        self.collections.add_partitions(req.collectionID, req.partitionIDs)
        return _ok()

    async def release_partitions(self, req: query_coord_pb2.ReleasePartitionsRequest) -> common_pb2.Status:
        """ReleasePartitions: remove the partitions from the load meta and release their segments."""
        self._check_serving_or_stopping()
        if req.collectionID not in self.collections:
            return _ok()
        self.collections.remove_partitions(req.collectionID, req.partitionIDs)
        await self._release(self.segments.list(req.collectionID, partitions=req.partitionIDs))
        return _ok()

    async def save_index(self, req: SaveIndexRequest) -> dict[int, FileInfo]:
        """Write the indexes this node built at load for a sealed segment under its storage root
        and return ``{field id: FileInfo}``; the coordinator records them in the catalog, so later
        loads read the files instead of building (a Dask task handler; no gRPC method).

        A segment not held here is ``segment not loaded`` (601)."""
        self._check_serving_or_stopping()
        seg = self.segments.get(req.segment_id)
        if seg is None or seg.collection_id != req.collection_id or seg.is_l0:
            raise errors.SegmentNotLoaded(segment=req.segment_id)
        return await asyncio.to_thread(save_segment_indexes, self.loader.root, seg, req.fields)

    # --- distribution ------------------------------------------------------------------------

    async def get_segment_info(
        self, req: query_coord_pb2.GetSegmentInfoRequest
    ) -> query_coord_pb2.GetSegmentInfoResponse:
        """The listed segments held here (missing ones skipped, as Milvus); with no ids, every
        segment of ``collectionID`` (or of the node when that is 0 too)."""
        self.lifecycle.check_healthy()
        if len(req.segmentIDs):
            segments = [s for sid in req.segmentIDs if (s := self.segments.get(sid)) is not None]
        else:
            segments = self.segments.list(req.collectionID or None)
        return query_coord_pb2.GetSegmentInfoResponse(
            status=_ok(), infos=[s.segment_info(self.node_id) for s in segments]
        )

    async def get_data_distribution(
        self, req: query_coord_pb2.GetDataDistributionRequest
    ) -> query_coord_pb2.GetDataDistributionResponse:
        """Sealed segments with versions; one channel + one leader view per serviceable delegator
        (as Milvus 2.4, an unserviceable one is left out: the coordinator sees the channel unwatched
        and watches it again, see :meth:`watch_dm_channels`; a failed one is dropped a health round
        later, see :meth:`_forget_failed_delegators`).

        Always the full answer (also when ``lastUpdateTs`` is current)."""
        self._check_serving_or_stopping()
        await self._forget_failed_delegators()
        delegators = [d for d in self.delegators.values() if d.serviceable]
        return query_coord_pb2.GetDataDistributionResponse(
            status=_ok(), nodeID=self.node_id,
            segments=[s.version_info() for s in self.segments.list()],
            channels=[d.channel_info() for d in delegators],
            leader_views=[d.leader_view() for d in delegators],
            lastModifyTs=self.last_modify_ts,
            memCapacityInMB=psutil.virtual_memory().total / (1024 * 1024))

    async def _forget_failed_delegators(self) -> None:
        """Drop the failed delegators the coordinator has had time to act on.  A failed one holds no
        memory (it freed its pipeline and view when it failed) and stays only so that CheckHealth says
        why.  The coordinator watches its channel again once a distribution leaves it out: here the
        watch replaces it, but on another node this node never hears of it.  So it goes one health
        round (``common.healthcheck_interval_s`` + its timeout) after the first distribution that left
        it out: the coordinator's cached CheckHealth has reported the reason by then, and the channel
        is the coordinator's to serve again (its health observer reports a collection left without a
        serviceable leader)."""
        now = asyncio.get_running_loop().time()
        common = self.settings.common
        keep_s = common.healthcheck_interval_s + common.healthcheck_timeout_s
        self._failed_since = {d: t for d, t in self._failed_since.items() if self.delegators.get(d.channel) is d}
        for channel, d in list(self.delegators.items()):
            if not d.failed:
                continue
            since = self._failed_since.setdefault(d, now)
            if now - since >= keep_s and self.delegators.get(channel) is d:
                del self.delegators[channel]
                del self._failed_since[d]
                log.info("channel %s: dropping its failed delegator, left out of the distribution %.0f s ago (%s)",
                         channel, now - since, d.unserviceable_reason())
                await d.stop()

    # --- data plane --------------------------------------------------------------------------

    async def get_statistics(self, req: query_coord_pb2.GetStatisticsRequest) -> internal_pb2.GetStatisticsResponse:
        """Row count of the segments (deletes applied) as ``row_count``."""
        self.lifecycle.check_healthy()
        if not req.from_shard_leader:
            self.collections.require(req.req.collectionID)
            parts = await gather_all(d.get_statistics(req) for d in self._delegators(req.dml_channels, "statistics"))
            return row_count_statistics(total_row_count(parts))
        inner = req.req
        coll = self.collections.require(inner.collectionID)
        segments = self._select(coll, inner.partitionIDs, req.segmentIDs, req.scope, req.dml_channels)
        ts = search.mvcc_timestamp(inner.travel_timestamp)
        return row_count_statistics(await asyncio.to_thread(lambda: sum(s.visible_rows(ts) for s in segments)))

    async def search_segments(self, req: query_coord_pb2.SearchRequest) -> internal_pb2.SearchResults:
        """SearchSegments: search the listed sealed segments (all of the collection's when none)."""
        self.lifecycle.check_healthy()
        inner = req.req
        coll = self.collections.require(inner.collectionID)
        segments = self._select(coll, inner.partitionIDs, req.segmentIDs, req.scope, req.dml_channels)
        return await self.batcher.search(coll, segments, inner, req.dml_channels)

    async def search_own_part(self, req: query_coord_pb2.SearchRequest,
                              growing: Sequence[Any]) -> internal_pb2.SearchResults:
        """A shard leader's own part of a search: the sealed segments ``req`` lists (none when it
        lists none) and its channel's growing views, in one engine search: one top-k merge, one
        encode and no second part for the leader to decode and merge."""
        self.lifecycle.check_healthy()
        inner = req.req
        coll = self.collections.require(inner.collectionID)
        sealed = self._select(coll, inner.partitionIDs, req.segmentIDs, req.scope, req.dml_channels) \
            if len(req.segmentIDs) else []
        return await self.batcher.search(coll, [*sealed, *growing], inner, req.dml_channels)

    async def search(self, req: query_coord_pb2.SearchRequest) -> internal_pb2.SearchResults:
        """Search: from a shard leader = :meth:`search_segments`; from a proxy = through delegators."""
        if req.from_shard_leader:
            return await self.search_segments(req)
        self.lifecycle.check_healthy()
        coll = self.collections.require(req.req.collectionID)
        delegators = self._delegators(req.dml_channels, "search")
        if len(delegators) == 1:  # a proxy sends one request per channel: no task, no merge
            return await delegators[0].search(req)
        parts = await gather_all(d.search(req) for d in delegators)
        out = await asyncio.to_thread(merge_search, parts, req.req, list(req.dml_channels), coll.pk_field.name)
        for p in parts:
            out.channels_mvcc.update(dict(p.channels_mvcc))
        return out

    def _retrieve_target(self, req: query_coord_pb2.QueryRequest) -> tuple[Collection, list[SealedSegment]]:
        self.lifecycle.check_healthy()
        coll = self.collections.require(req.req.collectionID)
        return coll, self._select(coll, req.req.partitionIDs, req.segmentIDs, req.scope, req.dml_channels)

    async def query_segments(self, req: query_coord_pb2.QueryRequest) -> internal_pb2.RetrieveResults:
        """QuerySegments: filter, MVCC and deletes over the segments; rows by primary key."""
        coll, segments = self._retrieve_target(req)

        def run() -> internal_pb2.RetrieveResults:
            found = retrieve.retrieve(coll, segments, req.req)
            return retrieve.to_retrieve_results(found, req.req, req.dml_channels)
        return await asyncio.to_thread(run)

    async def query(self, req: query_coord_pb2.QueryRequest) -> internal_pb2.RetrieveResults:
        if req.from_shard_leader:
            return await self.query_segments(req)
        self.lifecycle.check_healthy()
        self.collections.require(req.req.collectionID)
        delegators = self._delegators(req.dml_channels, "query")
        parts = await gather_all(d.query(req) for d in delegators)
        if len(parts) == 1:
            return parts[0]
        return await asyncio.to_thread(merge_retrieve, parts, req.req, list(req.dml_channels), query_limit(req.req))

    async def query_stream_segments(
        self, req: query_coord_pb2.QueryRequest
    ) -> AsyncIterator[internal_pb2.RetrieveResults]:
        """QueryStreamSegments: the rows of :meth:`query_segments` in messages of at most
        :attr:`stream_chunk_bytes` each."""
        coll, segments = self._retrieve_target(req)
        found = await asyncio.to_thread(retrieve.retrieve, coll, segments, req.req)
        chunks = retrieve.retrieve_chunks(found, req.req, req.dml_channels, self.stream_chunk_bytes)
        while (msg := await asyncio.to_thread(next, chunks, None)) is not None:
            yield msg

    async def query_stream(self, req: query_coord_pb2.QueryRequest) -> AsyncIterator[internal_pb2.RetrieveResults]:
        if req.from_shard_leader:
            async for msg in self.query_stream_segments(req):
                yield msg
            return
        self.lifecycle.check_healthy()
        self.collections.require(req.req.collectionID)
        for d in self._delegators(req.dml_channels, "query stream"):
            async for msg in d.query_stream(req):
                yield msg

    async def delete(self, req: query_coord_pb2.DeleteRequest) -> common_pb2.Status:
        """Delete: hide rows with these keys inserted before each delete's timestamp, in one
        local sealed segment (scope Streaming finds none here → ``segment not found``, 600)."""
        self.lifecycle.check_healthy()
        pks, ts = _delete_args(req.primary_keys, req.timestamps)
        seg = self.segments.get(req.segment_id) if _sealed_scope(req.scope) else None
        if seg is None:
            raise errors.SegmentNotFound(segment=req.segment_id)
        async with self._lock():
            await asyncio.to_thread(seg.delete, pks, ts)
        self._touch()
        return _ok()

    async def delete_batch(self, req: query_coord_pb2.DeleteBatchRequest) -> query_coord_pb2.DeleteBatchResponse:
        """DeleteBatch: the same deletes on every listed segment held here, in parallel.

        ``failed_ids``: segments whose delete failed; ``missing_ids``: segments not on this node
        (Milvus only logs those; vecgrid reports them).  Status is success either way."""
        self.lifecycle.check_healthy()
        pks, ts = _delete_args(req.primary_keys, req.timestamps)
        missing, targets = [], []
        for sid in dict.fromkeys(req.segment_ids):
            seg = self.segments.get(sid) if _sealed_scope(req.scope) else None
            (missing if seg is None else targets).append(sid if seg is None else seg)
        async with self._lock():
            results = await asyncio.gather(*(asyncio.to_thread(s.delete, pks, ts) for s in targets),
                                           return_exceptions=True)
        failed = []
        for seg, result in zip(targets, results):
            if isinstance(result, BaseException):
                failed.append(seg.segment_id)
                log.warning("DeleteBatch on channel %s: the delete of segment %d failed", req.vchannel_name,
                            seg.segment_id, exc_info=result)
        if missing:
            log.info("DeleteBatch on channel %s: segments %s are not on this node", req.vchannel_name, missing)
        if len(failed) < len(targets):
            self._touch()
        return query_coord_pb2.DeleteBatchResponse(status=_ok(), failed_ids=failed, missing_ids=missing)
