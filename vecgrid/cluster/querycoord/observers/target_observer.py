"""Next → current target promotion, as Milvus's ``observers.TargetObserver``.

Each round, per loaded collection: pull a next target when there is none and current
is missing or older than ``querycoord.next_target_interval_s`` (a pull equal to
current is dropped); promote next once every channel has, in every replica, a shard
leader whose view holds all of the channel's next-target segments with their nodes
online (L0 on the leader) — first sending those leaders ``SyncDistribution``
UpdateVersion (target version, sealed and dropped ids, checkpoint) — and bring any
leader still on another version up to the current target the same way (new leaders,
leaders that restarted).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from vecgrid.cluster.periodic import Periodic
from vecgrid.cluster.querycoord.context import CheckerContext
from vecgrid.cluster.querycoord.dist.leaders import leader_of, view_problem
from vecgrid.cluster.querycoord.meta.target_manager import segment_refs, update_version_action
from vecgrid.cluster.querycoord.task.executor import DaskExecutor
from vecgrid.cluster.querycoord.task.task import LeaderTask
from vecgrid.proto import query_coord_pb2

log = logging.getLogger(__name__)

ORIGIN = "target_observer"


class TargetObserver(Periodic):
    name = "target observer"

    def __init__(self, ctx: CheckerContext, executor: DaskExecutor, interval_s: float,
                 next_target_interval_s: float, refresh: Callable[[set[int]], Awaitable[None]]) -> None:
        super().__init__(interval_s)
        self.ctx, self.executor, self.refresh = ctx, executor, refresh
        self.next_target_interval_s = next_target_interval_s

    async def round(self) -> None:
        for cid in self.ctx.collections.ids():
            try:
                await self.check(cid)
            except Exception:  # noqa: BLE001 - retried next round
                log.warning("target check of collection %d failed", cid, exc_info=True)

    def pull(self, cid: int) -> None:
        self.ctx.targets.pull_next(cid, self.ctx.collections.partition_ids(cid))

    async def check(self, cid: int) -> None:
        ctx = self.ctx
        if ctx.targets.next(cid) is None and (
                ctx.targets.current(cid) is None or ctx.targets.next_age(cid) > self.next_target_interval_s):
            self.pull(cid)
        target = ctx.targets.next(cid)
        if target is not None:
            leaders = self.ready_leaders(cid, target)
            if leaders is not None:
                await self._sync(cid, target, leaders)
                ctx.targets.promote(cid, target)
                log.debug("collection %d: target version %d is current", cid, target.version)
        current = ctx.targets.current(cid)
        if current is not None and ctx.targets.next(cid) is None:
            lagging = [(r, ch, leader, view) for r, ch, leader, view in self._leaders(cid, current)
                       if view.TargetVersion != current.version]
            if lagging:
                await self._sync(cid, current, lagging)

    def _leaders(self, cid: int, target: query_coord_pb2.CollectionTarget):
        for replica in self.ctx.replicas.of_collection(cid):
            for ch in target.Channel_targets:
                found = leader_of(self.ctx.dist, replica, ch.channelName)
                if found is not None:
                    yield replica, ch, found[0], found[1]

    def ready_leaders(self, cid: int, target: query_coord_pb2.CollectionTarget) -> list | None:
        """The data-ready leaders of ``target`` if every channel has one in every replica, else None."""
        replicas = self.ctx.replicas.of_collection(cid)
        if not replicas or not len(target.Channel_targets):
            return None
        refs = segment_refs(target)
        ready = [(r, ch, leader, view) for r, ch, leader, view in self._leaders(cid, target)
                 if view_problem(view, leader, refs, self.ctx.online, check_version=False) is None]
        if len(ready) < len(replicas) * len(target.Channel_targets):
            return None
        return ready

    async def _sync(self, cid: int, target: query_coord_pb2.CollectionTarget, leaders: list) -> None:
        async def one(replica, ch: query_coord_pb2.ChannelTarget, leader: int) -> None:
            action = update_version_action(target, ch)
            await self.executor.run_leader(LeaderTask(cid, replica.ID, ch.channelName, leader, [action],
                                                      origin=ORIGIN))
        await asyncio.gather(*(one(r, ch, leader) for r, ch, leader, _ in leaders))
        # Routing (GetShardLeaders) reads the leaders' versions from the distribution: see them now.
        await self.refresh({leader for _, _, leader, _ in leaders})
