"""The segment checker loads a channel's L0 segments before its other segments, also while an L0 load is
still in flight.

A node applies the L0 segments it holds to its own segments (the shard leader does not send it their
deletes), and a segment that starts loading on a node before an L0 segment of its channel is served there
misses that L0 segment's deletes.  Placing the other segments in the round after the L0 task was
submitted, while it was still running, lost deletes on the leader's node (seen in a cluster-mode test:
deleted keys read back right after the load)."""

from __future__ import annotations

from types import SimpleNamespace

from vecgrid.cluster.querycoord.balance import ScoreBasedBalancer
from vecgrid.cluster.querycoord.checkers.segment_checker import SegmentChecker
from vecgrid.cluster.querycoord.meta.replica_manager import ReplicaManager
from vecgrid.cluster.querycoord.meta.target_manager import SegmentRef
from vecgrid.proto import data_coord_pb2
from tests.test_balance import CH0, CH1, CID, FakeScheduler, FakeTargets, FakeView, _groups, _leading

L0_ID = 99


def test_other_segments_wait_for_an_l0_load_in_flight(store):
    view = FakeView(1, 2)
    ids = iter(range(1000, 2000))
    rm = ReplicaManager(store, channel_exclusive=False)
    rm.spawn(CID, {"rg": 1}, lambda: next(ids), _groups([1, 2]), [CH0, CH1])
    refs = [SegmentRef(i, 1, CH0 if i < 3 else CH1, data_coord_pb2.L1, 200) for i in range(6)]
    refs.append(SegmentRef(L0_ID, -1, CH0, data_coord_pb2.L0, 0))
    scheduler = FakeScheduler(view)
    dist = _leading((1, CH0), (2, CH1))   # nothing held yet

    def checker_round():
        ctx = SimpleNamespace(replicas=rm, targets=FakeTargets([CH0, CH1], refs), dist=dist,
                              balancer=ScoreBasedBalancer(view), scheduler=scheduler)
        tasks = SegmentChecker(ctx, 1.0).collection_tasks(CID)
        scheduler.add_all(tasks)
        return tasks

    first = checker_round()
    assert {t.segment.segment_id for t in first if t.segment.channel == CH0} == {L0_ID}
    assert {t.segment.segment_id for t in first if t.segment.channel == CH1} == {3, 4, 5}
    # the L0 load is in flight (its task taken, not in the distribution yet): CH0's others still wait
    assert checker_round() == []
