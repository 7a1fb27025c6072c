"""The coordinator's view of what nodes hold (cluster/dist)."""

from __future__ import annotations

from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.proto import query_coord_pb2 as Q


def reply(ts: int, segments=(), channels=(), mem=0.0) -> Q.GetDataDistributionResponse:
    return Q.GetDataDistributionResponse(
        lastModifyTs=ts, memCapacityInMB=mem,
        segments=[Q.SegmentVersionInfo(ID=s, collection=7) for s in segments],
        channels=[Q.ChannelVersionInfo(channel=c, collection=7) for c in channels])


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
