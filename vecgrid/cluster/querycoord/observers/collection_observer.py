"""Load progress, load timeouts and read-only node cleanup, as Milvus's ``CollectionObserver``
and ``ReplicaObserver``.

Partition percentage (behaviour sheet §6), over the next target (current when there is
none): per replica, each channel whose shard leader exists counts one, and each sealed
segment of the partition in its channel leader's view counts one; percentage =
count × 100 // ((segments of the partition + channels) × replicas).  It never goes
down while loading and reaches 100 only once next has become current.  A collection
loading without progress for ``querycoord.load_timeout_s`` is dropped (load cancelled)
and the failure kept for ShowCollections; a stalled LoadPartitions on a collection with
loaded partitions drops only the partitions still loading, and the nodes are told to drop
them too (their delegators keep rows of every partition and read the loaded ones; that
call is retried every round until it succeeds).  A read-only replica node that holds
nothing of the collection any more, or is gone, leaves the replica.

Owned by the coordinator's event loop, like the meta it reads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

from vecgrid.cluster.periodic import Periodic
from vecgrid.cluster.querycoord.context import CheckerContext
from vecgrid.cluster.querycoord.dist.leaders import leader_of
from vecgrid.cluster.querycoord.meta.target_manager import segment_refs
from vecgrid.cluster.querycoord.task.task import NO_NODE, SegmentTask
from vecgrid.proto import query_coord_pb2

log = logging.getLogger(__name__)


class CollectionObserver(Periodic):
    name = "collection observer"

    def __init__(self, ctx: CheckerContext, interval_s: float, load_timeout_s: float,
                 cancel_load: Callable[[int, str], None],
                 release_on_nodes: Callable[[int, list[int]], Awaitable[None]]) -> None:
        super().__init__(interval_s)
        self.ctx = ctx
        self.load_timeout_s = load_timeout_s
        self.cancel_load = cancel_load
        self.release_on_nodes = release_on_nodes
        self._unreleased: dict[int, set[int]] = {}       # timed-out partitions the nodes may still hold
        self._releasing: dict[int, asyncio.Task] = {}

    async def round(self) -> None:
        self.observe()
        self.release_timed_out()

    async def stop(self) -> None:
        releasing = list(self._releasing.values())
        for task in releasing:
            task.cancel()
        await asyncio.gather(*releasing, return_exceptions=True)
        await super().stop()

    def release_timed_out(self) -> None:
        """Start telling the nodes to drop the timed-out partitions of each collection (one call at a time
        per collection, off the round: it waits for the collection's jobs)."""
        for cid, pids in list(self._unreleased.items()):
            if cid not in self._releasing:
                task = asyncio.ensure_future(self.release_on_nodes(cid, sorted(pids)))
                self._releasing[cid] = task
                task.add_done_callback(lambda t, cid=cid, pids=set(pids): self._released(cid, pids, t))

    def _released(self, cid: int, pids: set[int], task: asyncio.Task) -> None:
        del self._releasing[cid]
        if task.cancelled():    # stop()
            return
        if task.exception() is not None:
            log.warning("collection %d: telling the nodes to drop timed-out partitions %s failed (retried next "
                        "round): %r", cid, sorted(pids), task.exception())
            return
        left = self._unreleased.pop(cid, set()) - pids
        if left:
            self._unreleased[cid] = left

    def observe(self) -> None:
        ctx = self.ctx
        for cid in ctx.collections.ids():
            info = ctx.collections.get(cid)
            if info is None:
                continue
            if ctx.collections.is_loading(cid):
                self.update_progress(cid)
                progress = ctx.collections.progress(cid)
                if time.monotonic() - progress.last_progress_at > self.load_timeout_s:
                    if not self.time_out_partitions(cid, info):
                        self.cancel_load(cid, f"load made no progress for {self.load_timeout_s:.0f} s")
                        continue
            self.drop_drained_ro_nodes(cid)

    def time_out_partitions(self, cid: int, info: query_coord_pb2.CollectionLoadInfo) -> bool:
        """A stalled LoadPartitions drops only the partitions still loading, as Milvus's ``observeTimeout``
        does per load task: partitions loaded before keep serving, and the collection goes only when no
        partition is left ("collection timeout due to all partition removed").  False: cancel it all."""
        ctx = self.ctx
        if info.load_type != query_coord_pb2.LoadPartition and info.status != query_coord_pb2.Loaded:
            return False  # one LoadCollection: it succeeds or fails as a whole
        pids = ctx.collections.partition_ids(cid)
        stalled = [pid for pid in pids if ctx.collections.partition(cid, pid).status != query_coord_pb2.Loaded]
        if not stalled or len(stalled) == len(pids):
            return False
        log.warning("collection %d: partitions %s made no progress for %.0f s; their load is cancelled",
                    cid, stalled, self.load_timeout_s)
        ctx.scheduler.cancel(lambda t: isinstance(t, SegmentTask) and t.collection_id == cid
                             and t.target != NO_NODE and t.segment.partition_id in stalled)
        ctx.collections.remove_partitions(cid, stalled)
        ctx.targets.remove_partitions(cid, stalled)
        self._unreleased.setdefault(cid, set()).update(stalled)
        return True

    def partition_percentages(self, cid: int) -> dict[int, int]:
        ctx = self.ctx
        target = ctx.targets.next(cid) or ctx.targets.current(cid)
        pending = ctx.targets.next(cid) is not None
        replicas = ctx.replicas.of_collection(cid)
        if target is None or not replicas:
            return {}
        channels = [ch.channelName for ch in target.Channel_targets]
        refs = segment_refs(target)
        views = {(r.ID, ch): leader_of(ctx.dist, r, ch) for r in replicas for ch in channels}
        served_channels = sum(1 for v in views.values() if v is not None)
        out = {}
        for pid in ctx.collections.partition_ids(cid):
            segs = [ref for ref in refs.values() if ref.partition_id == pid]
            count = served_channels
            for r in replicas:
                for ref in segs:
                    found = views.get((r.ID, ref.channel))
                    count += found is not None and ref.segment_id in found[1].segment_dist
            total = (len(segs) + len(channels)) * len(replicas)
            pct = count * 100 // total if total else 100
            out[pid] = min(pct, 99) if pending else pct
        return out

    def update_progress(self, cid: int) -> None:
        for pid, pct in self.partition_percentages(cid).items():
            self.ctx.collections.set_progress(cid, pid, pct)

    def drop_drained_ro_nodes(self, cid: int) -> None:
        ctx = self.ctx
        for replica in ctx.replicas.of_collection(cid):
            for node_id in list(replica.ro_nodes):
                holds = any(n == node_id for n, _ in ctx.dist.segments(cid)) or \
                    any(n == node_id for n, _ in ctx.dist.channels(cid))
                if not ctx.online(node_id) or not holds:
                    ctx.replicas.drop_ro_node(replica.ID, node_id)
