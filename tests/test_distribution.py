"""The coordinator's view of what nodes hold (cluster/dist)."""

from __future__ import annotations

import asyncio

from vecgrid.cluster.querycoord.dist.dist_handler import DistController
from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.proto import query_coord_pb2


def reply(ts: int, segments=(), channels=(), mem=0.0) -> query_coord_pb2.GetDataDistributionResponse:
    return query_coord_pb2.GetDataDistributionResponse(
        lastModifyTs=ts, memCapacityInMB=mem,
        segments=[query_coord_pb2.SegmentVersionInfo(ID=s, collection=7) for s in segments],
        channels=[query_coord_pb2.ChannelVersionInfo(channel=c, collection=7) for c in channels])


def test_updates_replace_on_change_and_beat_the_heart_otherwise():
    dist = DistributionManager()
    dist.update(1, reply(10, segments=[5, 6], channels=["ch"], mem=1024))
    first = dist.node(1).heartbeat
    assert [s.ID for _, s in dist.segments(7)] == [5, 6] and dist.node(1).mem_capacity_mb == 1024
    dist.update(1, reply(10))  # nothing changed since ts 10: keep the distribution, refresh the heartbeat
    assert [s.ID for _, s in dist.segments()] == [5, 6] and dist.node(1).heartbeat >= first
    dist.update(1, reply(11, segments=[6]))
    assert [s.ID for _, s in dist.segments()] == [6] and dist.channels() == []
    dist.update(2, reply(3, segments=[9]))
    assert [(n, s.ID) for n, s in dist.segments()] == [(1, 6), (2, 9)]
    assert dist.segments(collection_id=8) == []
    dist.remove(1)
    assert dist.node(1) is None and [(n, s.ID) for n, s in dist.segments()] == [(2, 9)]


class _Node:
    """A node whose GetDataDistribution answers what it holds when asked, the first answer held back
    until ``release_first`` is set: a periodic poll still in flight when a task's refresh goes out."""

    def __init__(self) -> None:
        self.ts, self.segments = 10, [5, 6]
        self.release_first = asyncio.Event()
        self.calls = 0

    async def GetDataDistribution(self, req, timeout=None, metadata=None):  # noqa: N802 - the stub's name
        self.calls += 1
        answer = reply(self.ts, segments=self.segments)
        if self.calls == 1:
            await self.release_first.wait()
        return answer


class _Clients:
    def __init__(self, node: _Node) -> None:
        self.node = node

    def stub(self, node_id: int) -> _Node:
        return self.node

    def metadata(self, node_id: int) -> tuple:
        return ()


async def test_a_pull_overlapping_another_applies_its_answer_after_the_older_one():
    node = _Node()
    dist = DistributionManager()
    controller = DistController(None, _Clients(node), dist, interval_s=60, timeout_s=5)
    periodic = asyncio.ensure_future(controller.pull(1))   # asks while the node holds 5 and 6
    await asyncio.sleep(0)
    node.ts, node.segments = 11, [6]                       # a task released 5; its refresh pulls
    refresh = asyncio.ensure_future(controller.pull(1))
    await asyncio.sleep(0.05)
    node.release_first.set()                              # the older answer arrives last
    await asyncio.gather(periodic, refresh)
    assert [s.ID for _, s in dist.segments()] == [6] and dist.node(1).last_modify_ts == 11
