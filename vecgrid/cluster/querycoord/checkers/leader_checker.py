"""Checker 5, ``leader_checker``: each shard leader's view matches where segments really are.

For every replica and channel with a leader: a target segment loaded on a replica node
but missing from the view, or routed to a node that went offline, gets a
``SyncDistribution`` Set (with its load info, so the leader builds delete routing for
it); a view entry pointing at an offline node whose segment is nowhere else gets a
Remove.  Channels with a segment task in flight are skipped: the task's own sync step
is about to change the view.
"""

from __future__ import annotations

from vecgrid.cluster.querycoord.checkers.base import Checker
from vecgrid.cluster.querycoord.dist.leaders import leader_of, replica_nodes
from vecgrid.cluster.querycoord.load_info import segment_load_info
from vecgrid.cluster.querycoord.meta.target_manager import Scope
from vecgrid.cluster.querycoord.task.task import LeaderTask, SegmentTask, Task
from vecgrid.proto import query_coord_pb2

NAME = "leader_checker"


class LeaderChecker(Checker):
    id = 5
    name = NAME

    def collection_tasks(self, cid: int) -> list[Task]:
        ctx = self.ctx
        tasks: list[Task] = []
        wanted = ctx.targets.segments(cid, Scope.CURRENT_OR_NEXT)
        busy = {t.segment.channel for t in ctx.scheduler.tasks(cid) if isinstance(t, SegmentTask)}
        for replica in ctx.replicas.of_collection(cid):
            where = {sid: {n: seg.version for n, seg in on.items()}   # segment -> node -> version
                     for sid, on in ctx.dist.segments_on(cid, replica_nodes(replica)).items() if sid in wanted}
            for channel in sorted(ctx.targets.channels(cid, Scope.CURRENT_OR_NEXT)):
                found = leader_of(ctx.dist, replica, channel)
                if found is None or channel in busy:
                    continue
                leader, view = found
                actions = self._actions(view, channel, wanted, where)
                if actions:
                    tasks.append(LeaderTask(cid, replica.ID, channel, leader, actions, origin=NAME))
        return tasks

    def _actions(
        self, view: query_coord_pb2.LeaderView, channel: str, wanted, where
    ) -> list[query_coord_pb2.SyncAction]:
        ctx = self.ctx
        actions: list[query_coord_pb2.SyncAction] = []
        for sid, ref in sorted(wanted.items()):
            if ref.channel != channel or sid not in where:
                continue
            entry = view.segment_dist.get(sid)
            if entry is not None and ctx.online(entry.nodeID) and entry.nodeID in where[sid]:
                continue
            node_id, version = max(where[sid].items(), key=lambda kv: kv[1])
            info, _ = segment_load_info(ctx.catalog, sid)
            actions.append(
                query_coord_pb2.SyncAction(
                    type=query_coord_pb2.Set,
                    segmentID=sid,
                    nodeID=node_id,
                    version=version,
                    partitionID=ref.partition_id,
                    info=info,
                )
            )
        for sid, entry in sorted(view.segment_dist.items()):
            gone = not ctx.online(entry.nodeID) and sid not in where
            released = sid not in wanted and not ctx.dist.holds(entry.nodeID, sid)  # e.g. a released partition
            if gone or released:
                actions.append(
                    query_coord_pb2.SyncAction(type=query_coord_pb2.Remove, segmentID=sid, nodeID=entry.nodeID)
                )
        return actions
