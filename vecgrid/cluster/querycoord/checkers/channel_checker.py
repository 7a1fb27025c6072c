"""Checker 1, ``channel_checker``: every replica watches every channel of the target once.

Per replica: channels of the next target (current when there is no next) that no
replica node watches are assigned by the balancer over the replica's read-write nodes (the
channel's own nodes when the replica is channel-exclusive);
channels in neither target are unsubscribed; a channel watched twice in one replica
loses its older copy.  Channels of collections that are no longer loaded, or on nodes
outside every replica of their collection, are unsubscribed.
"""

from __future__ import annotations

from vecgrid.cluster.querycoord.balance import ChannelItem
from vecgrid.cluster.querycoord.checkers.base import Checker
from vecgrid.cluster.querycoord.dist.leaders import replica_nodes
from vecgrid.cluster.querycoord.meta.replica_manager import channel_rw_nodes
from vecgrid.cluster.querycoord.meta.target_manager import Scope
from vecgrid.cluster.querycoord.task.task import ChannelTask, Priority, Task

NAME = "channel_checker"


class ChannelChecker(Checker):
    id = 1
    name = NAME

    def collection_tasks(self, cid: int) -> list[Task]:
        ctx = self.ctx
        tasks: list[Task] = []
        wanted = ctx.targets.channels(cid, Scope.NEXT) or ctx.targets.channels(cid, Scope.CURRENT)
        known = ctx.targets.channels(cid, Scope.CURRENT_OR_NEXT)
        members_any: set[int] = set()
        for replica in ctx.replicas.of_collection(cid):
            members = replica_nodes(replica)
            members_any |= members
            held: dict[str, list[tuple[int, int]]] = {}
            for node_id, ch in ctx.dist.channels(cid):
                if node_id in members:
                    held.setdefault(ch.channel, []).append((ch.version, node_id))
            lacking: dict[tuple[int, ...], list[ChannelItem]] = {}   # by the nodes they may go to
            for name in sorted(wanted):
                if name not in held:
                    lacking.setdefault(tuple(channel_rw_nodes(replica, name)), []).append(ChannelItem(name, cid))
            for nodes, items in lacking.items():
                if not nodes:
                    continue
                for plan in ctx.balancer.assign_channels(cid, items, list(nodes), replica_id=replica.ID,
                                                         forced=True):
                    tasks.append(ChannelTask(cid, replica.ID, plan.channel.channel, target=plan.target,
                                             origin=NAME, priority=Priority.HIGH))
            for name, holders in sorted(held.items()):
                stale = [n for _, n in holders] if name not in known else [n for _, n in sorted(holders)[:-1]]
                tasks += [ChannelTask(cid, replica.ID, name, source=n, origin=NAME, priority=Priority.HIGH)
                          for n in stale]
        return tasks + [ChannelTask(cid, -1, ch.channel, source=n, origin=NAME, priority=Priority.HIGH)
                        for n, ch in ctx.dist.channels(cid) if n not in members_any]

    def orphan_tasks(self, loaded: set[int]) -> list[Task]:
        return [ChannelTask(ch.collection, -1, ch.channel, source=node_id, origin=NAME, priority=Priority.HIGH)
                for node_id, ch in self.ctx.dist.channels() if ch.collection not in loaded]
