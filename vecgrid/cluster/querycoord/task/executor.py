"""Carry tasks out as Dask tasks pinned to the nodes' workers, as Milvus's ``task.Executor``.

Every step is ``client.submit(tasks.call, <handler>, request, workers=[worker],
allow_other_workers=False)``: it runs on the worker's event loop and calls the same
QueryNode handler the gRPC method calls.  A task is a small graph:

* segment grow:   ``load-segment-<id>-node-<n>`` → ``sync-leader-<channel>-node-<leader>``
  (SyncDistribution Set with the segment's load info: the leader starts routing to it)
  → for a move, ``release-segment-<id>-node-<source>``;
* segment reduce: ``sync-leader`` (Remove) → ``release-segment``;
* channel grow:   ``watch-channel-<channel>-node-<n>`` → (a move) ``sync-leader`` copying the old
  leader's view, then the target's distribution pulled, then ``unsub-channel-<channel>-node-<source>``;
* leader task:    ``sync-leader``;
* index save:     ``save-index-<segment>-node-<n>``, then the coordinator records the files.

Each step depends on the previous one's future, so a failure stops the rest (the
checkers find the gap again and retry).  Keys are readable on the dashboard.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, Awaitable, Callable

from distributed import Client, Future

from vecgrid import errors
from vecgrid.cluster.dask_futures import task_result
from vecgrid.cluster.index_builds import record_saved_indexes
from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.cluster.querycoord.dist.leaders import leader_of
from vecgrid.cluster.querycoord.load_info import load_segments_request, segment_load_info
from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.replica_manager import ReplicaManager
from vecgrid.cluster.querycoord.meta.target_manager import Scope, TargetManager, update_version_action
from vecgrid.cluster.querycoord.session.node_manager import NodeInfo, NodeManager
from vecgrid.cluster.querycoord.task.task import NO_NODE, ChannelTask, IndexSaveTask, LeaderTask, SegmentTask
from vecgrid.cluster.querynode import tasks as node_tasks
from vecgrid.cluster.querynode.index_saver import SaveIndexRequest
from vecgrid.common.keys import COORD_ADDRESS_KEY, NODE_ADDRESS_KEY
from vecgrid.proto import common_pb2, data_coord_pb2, query_coord_pb2
from vecgrid.storage.catalog import Catalog

_serial = itertools.count(1)


class DaskExecutor:
    def __init__(self, client: Client, nodes: NodeManager, catalog: Catalog, collections: CollectionManager,
                 replicas: ReplicaManager, targets: TargetManager, dist: DistributionManager,
                 coord_address: Callable[[], str], pull_dist: Callable[[int], Awaitable[None]]) -> None:
        self.client, self.nodes, self.catalog = client, nodes, catalog
        self.collections, self.replicas, self.targets, self.dist = collections, replicas, targets, dist
        self.coord_address = coord_address
        self.pull_dist = pull_dist   # one GetDataDistribution of a node into ``dist``

    # --- plumbing ---------------------------------------------------------------------------

    def _node(self, node_id: int) -> NodeInfo:
        info = self.nodes.get(node_id)
        if info is None:
            raise errors.NodeNotFound(node=node_id)
        return info

    def submit(self, method: str, request: Any, node_id: int, key: str, after: Future | None = None) -> Future:
        """One handler call on ``node_id``'s worker (after ``after`` succeeded)."""
        worker = self._node(node_id).worker
        return self.client.submit(node_tasks.call, method, request, after, workers=[worker],
                                  allow_other_workers=False, pure=False, key=f"{key}-{next(_serial)}")

    def _base(self, msg_type: int, target: int, peers: set[int] = frozenset()) -> common_pb2.MsgBase:
        """MsgBase with the coordinator's and the peers' addresses (how a leader reaches its workers)."""
        base = common_pb2.MsgBase(msg_type=msg_type, targetID=target, timestamp=time.time_ns())
        base.properties[COORD_ADDRESS_KEY] = self.coord_address()
        for node_id in peers:
            info = self.nodes.get(node_id)
            if info is not None:
                base.properties[f"{NODE_ADDRESS_KEY}{node_id}"] = info.address
        return base

    def _leader(self, replica_id: int, channel: str) -> int:
        replica = self.replicas.get(replica_id)
        found = leader_of(self.dist, replica, channel) if replica is not None else None
        if found is None:
            raise errors.ChannelNotAvailable(f"no shard leader for {channel} in replica {replica_id}",
                                             channel=channel)
        return found[0]

    def _load_meta(self, cid: int) -> query_coord_pb2.LoadMetaInfo:
        info = self.collections.get(cid)
        if info is None:
            raise errors.CollectionNotLoaded(collection=cid)
        coll = self.catalog.get_collection(cid)
        return query_coord_pb2.LoadMetaInfo(load_type=info.load_type, collectionID=cid,
                              partitionIDs=self.collections.partition_ids(cid), db_name=coll.db_name,
                              load_fields=list(info.load_fields))

    @staticmethod
    async def _finish(*futures: Future) -> None:
        try:
            await task_result(futures[-1])
        finally:
            for f in futures:
                f.release()

    # --- segments ---------------------------------------------------------------------------

    async def run_segment(self, task: SegmentTask) -> None:
        sid, channel = task.segment.segment_id, task.segment.channel
        if self.replicas.get(task.replica_id) is None:  # released collection or a node outside every replica
            await self.release_segment_directly(task.source, task.collection_id, sid, channel)
            return
        leader = self._leader(task.replica_id, channel)
        steps: list[Future] = []
        if task.target != NO_NODE:
            meta = self._load_meta(task.collection_id)
            version = time.time_ns()
            req = load_segments_request(
                self.catalog, task.collection_id, [sid], dst_node_id=task.target, version=version,
                replica_id=task.replica_id, load_type=meta.load_type, partition_ids=meta.partitionIDs,
                load_fields=meta.load_fields, load_scope=task.load_scope)
            steps.append(self.submit("load_segments", req, task.target, f"load-segment-{sid}-node-{task.target}"))
            if task.load_scope == query_coord_pb2.Full:
                sync = query_coord_pb2.SyncDistributionRequest(
                    base=self._base(common_pb2.SyncDistribution, leader, {task.target}),
                    collectionID=task.collection_id,
                    channel=channel,
                    replicaID=task.replica_id,
                    actions=[
                        query_coord_pb2.SyncAction(
                            type=query_coord_pb2.Set,
                            segmentID=sid,
                            nodeID=task.target,
                            version=version,
                            partitionID=task.segment.partition_id,
                            info=req.infos[0],
                        )
                    ],
                )
                steps.append(self.submit("sync_distribution", sync, leader,
                                         f"sync-leader-{channel}-node-{leader}", steps[-1]))
        if task.source != NO_NODE:
            if task.target == NO_NODE and self.nodes.get(leader) is not None:
                remove = query_coord_pb2.SyncDistributionRequest(
                    base=self._base(common_pb2.SyncDistribution, leader),
                    collectionID=task.collection_id,
                    channel=channel,
                    replicaID=task.replica_id,
                    actions=[
                        query_coord_pb2.SyncAction(type=query_coord_pb2.Remove, segmentID=sid, nodeID=task.source)
                    ],
                )
                steps.append(self.submit("sync_distribution", remove, leader, f"sync-leader-{channel}-node-{leader}"))
            if self.nodes.get(task.source) is not None:
                release = query_coord_pb2.ReleaseSegmentsRequest(
                    base=self._base(common_pb2.ReleaseSegments, task.source), nodeID=task.source,
                    collectionID=task.collection_id, segmentIDs=[sid], scope=query_coord_pb2.Historical, shard=channel)
                steps.append(self.submit("release_segments", release, task.source,
                                         f"release-segment-{sid}-node-{task.source}", steps[-1] if steps else None))
        if steps:
            await self._finish(*steps)

    async def release_segment_directly(self, node_id: int, cid: int, sid: int, channel: str) -> None:
        """Release a segment no replica owns (its collection was released or the node left)."""
        release = query_coord_pb2.ReleaseSegmentsRequest(
            base=self._base(common_pb2.ReleaseSegments, node_id),
            nodeID=node_id,
            collectionID=cid,
            segmentIDs=[sid],
            scope=query_coord_pb2.Historical,
            shard=channel,
        )
        await self._finish(self.submit("release_segments", release, node_id, f"release-segment-{sid}-node-{node_id}"))

    # --- channels ---------------------------------------------------------------------------

    def watch_request(self, task: ChannelTask) -> query_coord_pb2.WatchDmChannelsRequest:
        cid = task.collection_id
        target = self.targets.channels(cid, Scope.CURRENT_OR_NEXT).get(task.channel)
        if target is None:
            raise errors.ChannelNotFound(channel=task.channel)
        coll = self.catalog.get_collection(cid)
        meta = self._load_meta(cid)
        replica = self.replicas.get(task.replica_id)
        peers = set(replica.nodes) | set(replica.ro_nodes) if replica is not None else set()
        sealed = [sid for pt in target.partition_targets for sid in (s.ID for s in pt.segments)]
        info = data_coord_pb2.VchannelInfo(collectionID=cid, channelName=task.channel,
                                           flushedSegmentIds=sealed, dropped_segmentIds=list(target.dropped_segmentIDs))
        if target.HasField("seek_position"):
            info.seek_position.CopyFrom(target.seek_position)
        return query_coord_pb2.WatchDmChannelsRequest(
            base=self._base(common_pb2.WatchDmChannels, task.target, peers), nodeID=task.target, collectionID=cid,
            partitionIDs=meta.partitionIDs, infos=[info], schema=coll.schema, load_meta=meta,
            replicaID=task.replica_id, version=time.time_ns(),
            index_info_list=list(self.catalog.describe_index(cid)))

    def _view(self, task: ChannelTask, node_id: int) -> query_coord_pb2.LeaderView | None:
        return next((v for n, v in self.dist.leader_views(task.collection_id)
                     if n == node_id and v.channel == task.channel), None)

    def _copied_view(self, task: ChannelTask, new_leader: int) -> query_coord_pb2.SyncDistributionRequest | None:
        """Set actions giving the new leader the old leader's sealed segments (no gap in routing) and, when
        the old one was synced to a target version, the current one (the new leader can serve at once)."""
        view = self._view(task, task.source)
        if view is None:
            return None
        req = query_coord_pb2.SyncDistributionRequest(collectionID=task.collection_id, channel=task.channel,
                                        replicaID=task.replica_id)
        peers = {new_leader}
        for sid, entry in sorted(view.segment_dist.items()):
            if self.nodes.get(entry.nodeID) is None:
                continue
            info, _ = segment_load_info(self.catalog, sid)
            req.actions.add(type=query_coord_pb2.Set, segmentID=sid, nodeID=entry.nodeID, version=entry.version,
                            partitionID=info.partitionID, info=info)
            peers.add(entry.nodeID)
        current = self.targets.current(task.collection_id) if view.TargetVersion > 0 else None
        channel = next((ch for ch in current.Channel_targets if ch.channelName == task.channel), None) \
            if current is not None else None
        if channel is not None:
            req.actions.append(update_version_action(current, channel))
        if not req.actions:
            return None
        req.base.CopyFrom(self._base(common_pb2.SyncDistribution, new_leader, peers))
        return req

    async def run_channel(self, task: ChannelTask) -> None:
        """Watch on the target; for a move, copy the source's view there and unsubscribe the source only
        once the coordinator's distribution shows the target with that view.  GetShardLeaders names the
        source until the target can serve, so a search always finds a leader (Milvus reduces only after
        the distribution shows the grow)."""
        if task.target != NO_NODE:
            grow = [self.submit("watch_dm_channels", self.watch_request(task), task.target,
                                f"watch-channel-{task.channel}-node-{task.target}")]
            copied = self._copied_view(task, task.target) if task.source != NO_NODE else None
            if copied is not None:
                grow.append(self.submit("sync_distribution", copied, task.target,
                                        f"sync-leader-{task.channel}-node-{task.target}", grow[-1]))
            await self._finish(*grow)
            if task.source != NO_NODE:
                await self.pull_dist(task.target)
                # the puller only logs a node's error status: without the target in the distribution, or
                # without the target version its copied view carried (not serviceable), the source keeps
                # serving, and the task fails for the checkers to retry
                versioned = copied is not None and any(a.type == query_coord_pb2.UpdateVersion
                                                       for a in copied.actions)
                target_view = self._view(task, task.target)
                if not any(n == task.target and c.channel == task.channel
                           for n, c in self.dist.channels(task.collection_id)) or \
                        (versioned and (target_view is None or target_view.TargetVersion <= 0)):
                    raise errors.ServiceUnavailable(
                        f"channel {task.channel} not reported by node {task.target} as serving after its "
                        f"watch; node {task.source} keeps it")
        if task.source != NO_NODE and self.nodes.get(task.source) is not None:
            unsub = query_coord_pb2.UnsubDmChannelRequest(base=self._base(common_pb2.UnsubDmChannel, task.source),
                                            nodeID=task.source, collectionID=task.collection_id,
                                            channel_name=task.channel)
            await self._finish(self.submit("unsub_dm_channel", unsub, task.source,
                                           f"unsub-channel-{task.channel}-node-{task.source}"))

    # --- leaders ----------------------------------------------------------------------------

    async def run_leader(self, task: LeaderTask) -> None:
        peers = {a.nodeID for a in task.actions if a.nodeID > 0}
        req = query_coord_pb2.SyncDistributionRequest(base=self._base(common_pb2.SyncDistribution, task.leader, peers),
                                        collectionID=task.collection_id, channel=task.channel,
                                        replicaID=task.replica_id, actions=task.actions)
        await self._finish(self.submit("sync_distribution", req, task.leader,
                                       f"sync-leader-{task.channel}-node-{task.leader}"))

    # --- index saves -------------------------------------------------------------------------

    async def run_index_save(self, task: IndexSaveTask) -> None:
        """``save-index-<segment>-node-<n>`` writes the files; the catalog (here, never on a node)
        records those whose index is still live."""
        req = SaveIndexRequest(collection_id=task.collection_id, segment_id=task.segment_id, fields=dict(task.fields))
        files = await self.call("save_index", req, task.node, f"save-index-{task.segment_id}-node-{task.node}")
        record_saved_indexes(self.catalog, task.segment_id, task.fields, files)

    async def call(self, method: str, request: Any, node_id: int, key: str) -> Any:
        """One handler call outside a task (jobs: LoadPartitions / ReleasePartitions / ReleaseCollection)."""
        fut = self.submit(method, request, node_id, key)
        try:
            return await task_result(fut)
        finally:
            fut.release()
