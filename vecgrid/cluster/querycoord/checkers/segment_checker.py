"""Checker 2, ``segment_checker``: every replica holds every sealed segment of its targets once.

Per replica: segments of the current or next target missing from the replica's nodes
(and not already being loaded) are loaded — L0 segments on the channel's shard leader itself and first
(the others of a channel wait while one of its L0 segments is not served, its load in flight or not), the others
where the balancer puts them among the read-write nodes (the channel's own nodes when the
replica is channel-exclusive) — but only for channels that
have a shard leader in the replica (the leader is what makes a loaded segment
searchable).  An L0 segment held only on other nodes than its leader counts as lacking.
Segments in neither target are released, and of a segment held twice in one replica the
older copy goes (Low priority; for an L0 segment, every copy but the leader's).  Segments
of collections no longer loaded, or on nodes outside every replica, are released directly.
"""

from __future__ import annotations

from vecgrid.cluster.querycoord.balance import SegmentItem
from vecgrid.cluster.querycoord.checkers.base import Checker
from vecgrid.cluster.querycoord.dist.leaders import leader_of, replica_nodes
from vecgrid.cluster.querycoord.meta.replica_manager import channel_rw_nodes
from vecgrid.cluster.querycoord.meta.target_manager import Scope, SegmentRef
from vecgrid.cluster.querycoord.task.task import Priority, SegmentTask, Task, segment_task_key
from vecgrid.proto import data_coord_pb2

NAME = "segment_checker"


def _ref(seg) -> SegmentRef:
    return SegmentRef(seg.ID, seg.partition, seg.channel, seg.level, 0)


class SegmentChecker(Checker):
    id = 2
    name = NAME

    def collection_tasks(self, cid: int) -> list[Task]:
        ctx = self.ctx
        tasks: list[Task] = []
        wanted = ctx.targets.segments(cid, Scope.CURRENT_OR_NEXT)
        members_any: set[int] = set()
        for replica in ctx.replicas.of_collection(cid):
            members = replica_nodes(replica)
            members_any |= members
            on_replica = ctx.dist.segments_on(cid, members)
            held = {sid: [(seg.version, n) for n, seg in on.items()] for sid, on in on_replica.items()}
            refs = {sid: _ref(next(iter(on.values()))) for sid, on in on_replica.items()}
            leaders = {ch: found[0] for ch in {r.channel for r in wanted.values()}
                       if (found := leader_of(ctx.dist, replica, ch)) is not None}
            # a segment already being loaded is not lacking: placing it again would count it twice (its
            # task's rows are pending on its target) and skew where the others go
            lacking = [r for sid, r in sorted(wanted.items())
                       if sid not in held or self._misplaced_l0(r, held[sid], leaders)]
            # a channel whose L0 segment is not served yet, loading or not, loads nothing else: a segment
            # loading on the leader's node meanwhile would miss its deletes (the node applies the L0
            # segments it holds to its own segments, and only to those served when they arrive)
            l0_pending = {r.channel for r in lacking if r.level == data_coord_pb2.L0}
            tasks += self._lacking(cid, replica, [
                r for r in lacking if not ctx.scheduler.has(segment_task_key(replica.ID, r.segment_id))],
                l0_pending)
            for sid, holders in sorted(held.items()):
                if sid not in wanted:
                    tasks += [SegmentTask(cid, replica.ID, refs[sid], source=n, origin=NAME) for _, n in holders]
                elif len(holders) > 1:
                    keep = self._keeper(wanted[sid], holders, leaders)
                    tasks += [SegmentTask(cid, replica.ID, wanted[sid], source=n, origin=NAME,
                                          priority=Priority.LOW) for v, n in sorted(holders) if (v, n) != keep]
        return tasks + [SegmentTask(cid, -1, _ref(seg), source=n, origin=NAME)
                        for n, seg in ctx.dist.segments(cid) if n not in members_any]

    @staticmethod
    def _keeper(ref: SegmentRef, holders: list[tuple[int, int]], leaders: dict[str, int]) -> tuple[int, int]:
        """Of a segment's copies in one replica, the (version, node) that stays: the newest, or for an
        L0 segment the one on its channel's leader."""
        if ref.level == data_coord_pb2.L0:
            on_leader = [h for h in holders if h[1] == leaders.get(ref.channel)]
            if on_leader:
                return on_leader[0]
        return max(holders)

    @staticmethod
    def _misplaced_l0(ref: SegmentRef, holders: list[tuple[int, int]], leaders: dict[str, int]) -> bool:
        """An L0 segment held in the replica but not on its channel's shard leader (after a channel
        moved, say): the leader applies its deletes, so it is lacking there (Milvus's segment checker:
        ``l0WithWrongLocation``); the other copy goes as a duplicate once it is loaded."""
        leader = leaders.get(ref.channel)
        return ref.level == data_coord_pb2.L0 and leader is not None and all(n != leader for _, n in holders)

    def orphan_tasks(self, loaded: set[int]) -> list[Task]:
        return [SegmentTask(seg.collection, -1, _ref(seg), source=node_id, origin=NAME)
                for node_id, seg in self.ctx.dist.segments() if seg.collection not in loaded]

    def _lacking(self, cid: int, replica, lacking: list[SegmentRef], l0_pending: set[str]) -> list[Task]:
        ctx = self.ctx
        tasks: list[Task] = []
        by_channel: dict[str, list[SegmentRef]] = {}
        for ref in lacking:
            by_channel.setdefault(ref.channel, []).append(ref)
        # Channels that share their nodes are placed in one assignment: the plans of one round are not
        # in the scheduler yet, so per-channel calls would each start from the same scores (three
        # equal segments on two nodes, twice, gave 4/2 and a balance move right after the load).
        placing: dict[tuple[int, ...], list[SegmentRef]] = {}
        for channel, refs in sorted(by_channel.items()):
            leader = leader_of(ctx.dist, replica, channel)
            nodes = channel_rw_nodes(replica, channel)
            if leader is None or not nodes:
                continue
            l0 = [r for r in refs if r.level == data_coord_pb2.L0]
            tasks += [SegmentTask(cid, replica.ID, r, target=leader[0], origin=NAME, priority=Priority.HIGH)
                      for r in l0]
            if l0 or channel in l0_pending:
                continue  # the channel's deletes first: other segments load once its L0 segments serve
            placing.setdefault(tuple(sorted(nodes)), []).extend(refs)
        for nodes, refs in placing.items():
            items = [SegmentItem(r.segment_id, cid, r.partition_id, r.channel, r.num_rows) for r in refs]
            by_id = {r.segment_id: r for r in refs}
            for plan in ctx.balancer.assign_segments(cid, items, list(nodes), replica_id=replica.ID, forced=True):
                tasks.append(SegmentTask(cid, replica.ID, by_id[plan.segment.segment_id], target=plan.target,
                                         origin=NAME))
        return tasks
