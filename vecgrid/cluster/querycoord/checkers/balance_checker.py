"""Checker 3, ``balance_checker``: moves segments and channels to even out the nodes.

Every round it first drains stopping and read-only nodes of every replica (even when
deactivated: SuspendBalance stops only automatic rebalancing), then — when active and
``querycoord.auto_balance`` is on — asks the balancer for move plans for the replicas
of one loaded collection, taking collections in turn.  Automatic balancing waits while
any loaded collection's current target is not ready yet.
"""

from __future__ import annotations

from vecgrid.cluster.querycoord.balance import ReplicaNodes
from vecgrid.cluster.querycoord.checkers.base import Checker
from vecgrid.cluster.querycoord.meta.replica_manager import channel_nodes
from vecgrid.cluster.querycoord.meta.target_manager import Scope
from vecgrid.cluster.querycoord.session.node_manager import NORMAL
from vecgrid.cluster.querycoord.task.task import ChannelTask, Priority, SegmentTask, Task

NAME = "balance_checker"


class BalanceChecker(Checker):
    id = 3
    name = NAME

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._next_collection = 0

    def _replica_nodes(self, replica) -> ReplicaNodes:
        return ReplicaNodes(replica.ID, replica.collectionID, tuple(replica.nodes), tuple(replica.ro_nodes),
                            tuple((name, tuple(nodes)) for name, nodes in channel_nodes(replica).items()))

    def _draining(self, replica) -> bool:
        return bool(replica.ro_nodes) or any(
            (info := self.ctx.nodes.get(n)) is not None and info.state != NORMAL for n in replica.nodes)

    def check(self) -> list[Task]:
        ctx = self.ctx
        tasks: list[Task] = []
        cids = ctx.collections.ids()
        for cid in cids:
            for replica in ctx.replicas.of_collection(cid):
                if self._draining(replica):
                    tasks += self._tasks(replica, only_from=self._leaving(replica))
        if tasks or not (self.active and ctx.auto_balance) or not cids:
            return tasks
        if any(ctx.targets.current(cid) is None or not ctx.collections.is_loaded(cid) for cid in cids):
            return tasks
        cid = cids[self._next_collection % len(cids)]
        self._next_collection += 1
        for replica in ctx.replicas.of_collection(cid):
            tasks += self._tasks(replica)
        return tasks

    def _leaving(self, replica) -> set[int]:
        return set(replica.ro_nodes) | {n for n in replica.nodes
                                        if (info := self.ctx.nodes.get(n)) is not None and info.state != NORMAL}

    def _tasks(self, replica, only_from: set[int] | None = None) -> list[Task]:
        ctx = self.ctx
        segment_plans, channel_plans = ctx.balancer.balance_replica(self._replica_nodes(replica))
        wanted = ctx.targets.segments(replica.collectionID, Scope.CURRENT_OR_NEXT)
        tasks: list[Task] = []
        for plan in channel_plans:
            if only_from is None or plan.source in only_from:
                tasks.append(ChannelTask(replica.collectionID, replica.ID, plan.channel.channel, target=plan.target,
                                         source=plan.source, origin=NAME, priority=Priority.NORMAL))
        for plan in segment_plans:
            ref = wanted.get(plan.segment.segment_id)
            if ref is not None and (only_from is None or plan.source in only_from):
                tasks.append(SegmentTask(replica.collectionID, replica.ID, ref, target=plan.target,
                                         source=plan.source, origin=NAME, priority=Priority.LOW))
        return tasks
