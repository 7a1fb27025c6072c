"""Balancers (``vecgrid.cluster.querycoord.balance``) over a dict-backed ``ClusterView``."""

from __future__ import annotations

import pytest

from types import SimpleNamespace

from vecgrid.cluster.querycoord.balance import (CHANNEL_BATCH_SIZE, DEFAULT_BALANCER, SEGMENT_BATCH_SIZE, ChannelItem,
                                                ChannelLevelScoreBalancer, ChannelPlan, LocalityAwareBalancer,
                                                ReplicaNodes, RoundRobinBalancer,
                                                RowCountBasedBalancer, ScoreBasedBalancer, SegmentItem, SegmentPlan,
                                                make_balancer)
from vecgrid.cluster.querycoord.checkers.channel_checker import ChannelChecker
from vecgrid.cluster.querycoord.checkers.segment_checker import SegmentChecker
from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.cluster.querycoord.meta.replica_manager import ReplicaManager, channel_nodes, split_channel_nodes
from vecgrid.cluster.querycoord.meta.target_manager import SegmentRef
from vecgrid.common.scan_cost import IndexShape
from vecgrid.proto import data_coord_pb2, query_coord_pb2

CID = 100
ROW_BYTES = 1024 * 1024 // 1000  # a row of the fake collections: 1,000 rows take (about) 1 MiB
ALL = (RoundRobinBalancer, RowCountBasedBalancer, ScoreBasedBalancer, ChannelLevelScoreBalancer,
       LocalityAwareBalancer)
MOVERS = (RowCountBasedBalancer, ScoreBasedBalancer, ChannelLevelScoreBalancer)


class FakeView:
    """Nodes, their segments/channels and in-flight deltas, all in dicts."""

    def __init__(self, *nodes: int, state: str = "Normal", capacity: float = 0.0) -> None:
        self.states: dict[int, str] = {}
        self.caps: dict[int, float] = {}
        self.segs: dict[int, list[SegmentItem]] = {}
        self.chans: dict[int, list[ChannelItem]] = {}
        self.growing: dict[tuple[int, int], int] = {}
        self.growing_by_channel: dict[tuple[int, str], int] = {}
        self.pend_rows: dict[tuple[int, int], int] = {}
        self.pend_chans: dict[tuple[int, int], int] = {}
        self.leaders: dict[tuple[int, int], int] = {}
        self.channel_flight: set[int] = set()
        self.segment_flight: set[int] = set()
        self.shapes: dict[int, IndexShape] = {}   # collection -> its index; default FLAT: every row
        for n in nodes:
            self.add_node(n, state, capacity)

    def add_node(self, node: int, state: str = "Normal", capacity: float = 0.0) -> None:
        self.states[node], self.caps[node] = state, capacity
        self.segs.setdefault(node, [])
        self.chans.setdefault(node, [])

    def put(self, node: int, *segments: SegmentItem) -> None:
        self.segs[node].extend(segments)

    def watch(self, node: int, *channels: ChannelItem) -> None:
        self.chans[node].extend(channels)

    def apply(self, segment_plans=(), channel_plans=()) -> None:
        """Complete the plans: the distribution afterwards."""
        for p in segment_plans:
            if p.source >= 0:
                self.segs[p.source].remove(p.segment)
            self.segs[p.target].append(p.segment)
        for p in channel_plans:
            if p.source >= 0:
                self.chans[p.source].remove(p.channel)
            self.chans[p.target].append(p.channel)

    def rows(self, node: int, cid: int | None = CID) -> int:
        return sum(s.num_rows for s in self.segs[node] if cid is None or s.collection_id == cid)

    # --- ClusterView ------------------------------------------------------------------

    def node_state(self, node_id):
        return self.states.get(node_id, "")

    def node_capacity_mb(self, node_id):
        return self.caps.get(node_id, 0.0)

    def row_bytes(self, collection_id):
        return ROW_BYTES

    def index_shape(self, collection_id):
        return self.shapes.get(collection_id, IndexShape())

    def segments(self, node_id, collection_id=None):
        return [s for s in self.segs.get(node_id, []) if collection_id is None or s.collection_id == collection_id]

    def channels(self, node_id, collection_id=None):
        return [c for c in self.chans.get(node_id, []) if collection_id is None or c.collection_id == collection_id]

    def growing_rows(self, node_id, collection_id):
        return self.growing.get((node_id, collection_id), 0) + sum(
            rows for (n, ch), rows in self.growing_by_channel.items()
            if n == node_id and any(c.channel == ch and c.collection_id == collection_id for c in self.chans[n]))

    def channel_growing_rows(self, node_id, channel):
        return self.growing_by_channel.get((node_id, channel), 0)

    def _delta(self, table, node_id, collection_id):
        return sum(v for (n, c), v in table.items() if n == node_id and collection_id in (None, c))

    def pending_rows(self, node_id, collection_id=None):
        return self._delta(self.pend_rows, node_id, collection_id)

    def pending_channels(self, node_id, collection_id=None):
        return self._delta(self.pend_chans, node_id, collection_id)

    def delegators(self, node_id, collection_id):
        return self.leaders.get((node_id, collection_id), 0)

    def channel_task_in_flight(self, collection_id):
        return collection_id in self.channel_flight

    def segment_task_in_flight(self, collection_id):
        return collection_id in self.segment_flight


def segs(n: int, rows: int = 1000, start: int = 1, cid: int = CID) -> list[SegmentItem]:
    return [SegmentItem(start + i, cid, 1, f"ch-{cid}-0", rows) for i in range(n)]


def chans(n: int, cid: int = CID, start: int = 0) -> list[ChannelItem]:
    return [ChannelItem(f"ch-{cid}-{i}", cid) for i in range(start, start + n)]


def rows_per_target(plans: list[SegmentPlan]) -> dict[int, int]:
    out: dict[int, int] = {}
    for p in plans:
        out[p.target] = out.get(p.target, 0) + p.segment.num_rows
    return out


def replica(rw=(1, 2), ro=()) -> ReplicaNodes:
    return ReplicaNodes(7, CID, tuple(rw), tuple(ro))


# --- assignment -------------------------------------------------------------------------

@pytest.mark.parametrize("cls", ALL)
def test_even_assignment_over_empty_nodes(cls):
    view = FakeView(1, 2)
    plans = cls(view).assign_segments(CID, segs(10), [1, 2], replica_id=7)
    assert len(plans) == 10
    assert all(p.source == -1 and p.replica_id == 7 for p in plans)
    assert rows_per_target(plans) == {1: 5000, 2: 5000}
    assert len({p.segment.segment_id for p in plans}) == 10


@pytest.mark.parametrize("cls", MOVERS)
def test_assignment_respects_existing_load(cls):
    view = FakeView(1, 2)
    view.put(1, *segs(5, start=100))
    plans = cls(view).assign_segments(CID, segs(4), [1, 2])
    assert rows_per_target(plans) == {2: 4000}


@pytest.mark.parametrize("cls", MOVERS)
def test_assignment_counts_growing_and_pending_rows(cls):
    view = FakeView(1, 2)
    view.pend_rows[(1, CID)] = 3000
    view.growing[(2, CID)] = 1000
    plans = cls(view).assign_segments(CID, segs(4), [1, 2])
    assert rows_per_target(plans) == {1: 1000, 2: 3000}


def test_round_robin_deals_from_least_loaded_node():
    view = FakeView(1, 2, 3)
    view.put(1, *segs(2, start=100))
    view.put(3, *segs(1, start=200))
    plans = RoundRobinBalancer(view).assign_segments(CID, segs(4), [1, 2, 3])
    assert [p.target for p in plans] == [2, 3, 1, 2]


def test_score_based_assignment_is_capacity_proportional():
    view = FakeView(1, 2)
    view.caps.update({1: 2000.0, 2: 1000.0})
    plans = ScoreBasedBalancer(view).assign_segments(CID, segs(30), [1, 2])
    got = rows_per_target(plans)
    assert got[1] == pytest.approx(2 * got[2], rel=0.1)
    # One node without a reported capacity: fair shares are even again.
    view.caps[2] = 0.0
    assert rows_per_target(ScoreBasedBalancer(view).assign_segments(CID, segs(30), [1, 2])) == {1: 15000, 2: 15000}


def test_score_based_reserves_room_for_delegators():
    view = FakeView(1, 2)
    view.leaders[(1, CID)] = 2
    got = rows_per_target(ScoreBasedBalancer(view).assign_segments(CID, segs(20), [1, 2]))
    assert got[2] > got[1]


def test_score_based_counts_other_collections_lightly():
    view = FakeView(1, 2)
    view.put(1, *segs(30, rows=1000, start=500, cid=200))  # 30,000 rows of another collection
    got = rows_per_target(ScoreBasedBalancer(view).assign_segments(CID, segs(10), [1, 2]))
    # 0.1 × 30,000 rows elsewhere weigh like ~2,700 of this collection's rows (1.1 per row).
    assert got == {1: 4000, 2: 6000}


@pytest.mark.parametrize("cls", ALL)
def test_non_forced_assignment_uses_normal_nodes_only(cls):
    view = FakeView(1)
    view.add_node(2, "Stopping")
    view.add_node(3, "")  # offline / unknown
    plans = cls(view).assign_segments(CID, segs(6), [1, 2, 3])
    assert {p.target for p in plans} == {1}
    forced = cls(view).assign_segments(CID, segs(6), [1, 2, 3], forced=True)
    assert {p.target for p in forced} == {1, 2, 3}
    ch = cls(view).assign_channels(CID, chans(2), [1, 2, 3])
    assert {p.target for p in ch} == {1}
    assert cls(view).assign_segments(CID, segs(2), [2, 3]) == []


@pytest.mark.parametrize("cls", ALL)
def test_assignment_never_targets_a_node_holding_the_segment(cls):
    view = FakeView(1, 2)
    view.put(2, *segs(3, rows=10_000, start=100))
    view.put(1, SegmentItem(1, CID, 1, "ch-100-0", 1000))
    plans = cls(view).assign_segments(CID, segs(1), [1, 2])
    assert [(p.segment.segment_id, p.target) for p in plans] == [(1, 2)]
    view.put(2, SegmentItem(1, CID, 1, "ch-100-0", 1000))
    assert cls(view).assign_segments(CID, segs(1), [1, 2]) == []


@pytest.mark.parametrize("cls", ALL)
def test_channel_assignment_spreads_channels(cls):
    view = FakeView(1, 2)
    view.watch(1, *chans(2, cid=200))
    plans = cls(view).assign_channels(CID, chans(4), [1, 2], replica_id=7)
    assert all(isinstance(p, ChannelPlan) and p.source == -1 and p.replica_id == 7 for p in plans)
    per = {n: sum(p.target == n for p in plans) for n in (1, 2)}
    assert sum(per.values()) == 4 and per[1] >= 1 and per[2] >= 2


def test_score_based_channel_assignment_weights_this_collection():
    view = FakeView(1, 2)
    view.watch(1, *chans(5, cid=200))   # five channels of another collection: score 5
    view.watch(2, *chans(1))            # one channel of this one: score 10
    plans = ScoreBasedBalancer(view).assign_channels(CID, chans(1, start=1), [1, 2])
    assert [p.target for p in plans] == [1]


@pytest.mark.parametrize("cls", ALL)
def test_assignment_is_deterministic(cls):
    view = FakeView(3, 1, 2)
    items = segs(9)
    a = cls(view).assign_segments(CID, items, [3, 1, 2])
    b = cls(view).assign_segments(CID, list(reversed(items)), [2, 3, 1])
    assert sorted(a, key=lambda p: p.segment.segment_id) == sorted(b, key=lambda p: p.segment.segment_id)


# --- stopping balance ---------------------------------------------------------------------

@pytest.mark.parametrize("cls", ALL)
def test_stopping_balance_drains_read_only_nodes(cls):
    view = FakeView(1, 2, 3)
    view.put(1, *segs(2, start=100))
    view.put(2, *segs(2, start=200))
    view.put(3, *segs(8))
    view.watch(3, *chans(1))
    view.watch(1, *chans(1, start=1))
    bal = cls(view)
    rep = replica(rw=(1, 2), ro=(3,))
    seg_plans, ch_plans = bal.balance_replica(rep)
    assert seg_plans == []  # channels first
    assert [(p.channel.channel, p.source) for p in ch_plans] == [("ch-100-0", 3)]
    assert ch_plans[0].target in (1, 2)
    view.apply(channel_plans=ch_plans)
    seg_plans, ch_plans = bal.balance_replica(rep)
    assert ch_plans == []
    assert len(seg_plans) == 8  # all of them, no batch limit
    assert {p.source for p in seg_plans} == {3} and {p.target for p in seg_plans} <= {1, 2}
    view.apply(seg_plans)
    assert view.rows(3) == 0
    if cls is LocalityAwareBalancer:  # the channel's segments follow its leader
        assert {p.target for p in seg_plans} == {ch_plans_first_target(view)}
        return
    if cls is not RoundRobinBalancer:
        assert view.rows(1) == view.rows(2) == 6000
    assert bal.balance_replica(rep) == ([], [])


def ch_plans_first_target(view: FakeView) -> int:
    return next(n for n, chs in view.chans.items() if any(c.channel == f"ch-{CID}-0" for c in chs))


@pytest.mark.parametrize("cls", ALL)
def test_stopping_rw_node_is_drained_to_normal_nodes(cls):
    view = FakeView(1, 2)
    view.add_node(3, "Stopping")
    view.put(3, *segs(4))
    seg_plans, ch_plans = cls(view).balance_replica(replica(rw=(1, 2, 3)))
    assert ch_plans == [] and len(seg_plans) == 4
    assert {p.source for p in seg_plans} == {3} and {p.target for p in seg_plans} == {1, 2}


def test_stopping_balance_skips_segments_already_on_a_target():
    view = FakeView(1, 2, 3)
    view.put(3, *segs(2))
    view.put(1, segs(1)[0])
    seg_plans, _ = ScoreBasedBalancer(view).balance_replica(replica(rw=(1, 2), ro=(3,)))
    targets = {p.segment.segment_id: p.target for p in seg_plans}
    assert set(targets) == {1, 2} and targets[1] == 2


def test_stopping_segments_wait_for_channel_tasks():
    view = FakeView(1, 2, 3)
    view.put(3, *segs(2))
    view.channel_flight.add(CID)
    assert ScoreBasedBalancer(view).balance_replica(replica(rw=(1, 2), ro=(3,))) == ([], [])


# --- automatic balance ----------------------------------------------------------------------

def test_round_robin_never_moves():
    view = FakeView(1, 2)
    view.put(1, *segs(10))
    view.watch(1, *chans(4))
    assert RoundRobinBalancer(view).balance_replica(replica()) == ([], [])


@pytest.mark.parametrize("cls", MOVERS)
def test_moves_off_an_overloaded_node_until_balanced(cls):
    view = FakeView(1, 2)
    view.put(1, *segs(10))
    bal = cls(view)
    seg_plans, ch_plans = bal.balance_replica(replica())
    assert ch_plans == []
    assert 0 < len(seg_plans) <= SEGMENT_BATCH_SIZE
    assert all(p.source == 1 and p.target == 2 and p.replica_id == 7 for p in seg_plans)
    for _ in range(5):
        view.apply(seg_plans)
        seg_plans, _ = bal.balance_replica(replica())
        if not seg_plans:
            break
    assert seg_plans == []
    assert view.rows(1) == view.rows(2) == 5000


@pytest.mark.parametrize("cls", MOVERS)
def test_no_moves_when_balanced_within_tolerance(cls):
    view = FakeView(1, 2)
    view.put(1, *segs(5), SegmentItem(50, CID, 1, "ch-100-0", 100))
    view.put(2, *segs(5, start=100))
    assert cls(view).balance_replica(replica()) == ([], [])
    view2 = FakeView(1, 2)
    view2.put(1, *segs(3))
    view2.put(2, *segs(2, start=100))
    assert cls(view2).balance_replica(replica()) == ([], [])


@pytest.mark.parametrize("cls", MOVERS)
def test_balance_only_over_normal_rw_nodes(cls):
    view = FakeView(1, 2, 4)
    view.put(1, *segs(10))
    seg_plans, _ = cls(view).balance_replica(replica(rw=(1, 2)))
    assert {p.target for p in seg_plans} == {2}


@pytest.mark.parametrize("cls", MOVERS)
def test_segments_held_twice_in_the_replica_stay(cls):
    view = FakeView(1, 2)
    view.put(1, *segs(6))
    view.put(2, *segs(6))  # every segment also on node 2: a move in progress
    view.put(1, *segs(4, start=100))
    seg_plans, _ = cls(view).balance_replica(replica())
    assert {p.segment.segment_id for p in seg_plans} <= set(range(100, 104))


def test_score_based_segment_batch_limit():
    view = FakeView(1, 2)
    view.put(1, *segs(40))
    seg_plans, _ = ScoreBasedBalancer(view).balance_replica(replica())
    assert len(seg_plans) == SEGMENT_BATCH_SIZE
    # Two overloaded nodes: the "more than" checks let one plan above the batch through.
    view = FakeView(1, 2, 3)
    view.put(1, *segs(20))
    view.put(2, *segs(20, start=100))
    seg_plans, _ = ScoreBasedBalancer(view).balance_replica(replica(rw=(1, 2, 3)))
    assert SEGMENT_BATCH_SIZE <= len(seg_plans) <= SEGMENT_BATCH_SIZE + 1
    assert {p.target for p in seg_plans} == {3}


def test_row_count_segment_batch_limit():
    view = FakeView(1, 2)
    view.put(1, *segs(40))
    seg_plans, _ = RowCountBasedBalancer(view).balance_replica(replica())
    assert len(seg_plans) == SEGMENT_BATCH_SIZE


def test_row_count_moves_largest_gain_first():
    view = FakeView(1, 2)
    view.put(1, SegmentItem(1, CID, 1, "c", 100), SegmentItem(2, CID, 1, "c", 2000), SegmentItem(3, CID, 1, "c", 900))
    seg_plans, _ = RowCountBasedBalancer(view).balance_replica(replica())
    # 3000 vs 0 rows: moving 2000 leaves a gap of 1000, 900 one of 1200, 100 one of 2800.
    # Afterwards node 2 (2000) is the one above the average, and no segment narrows the gap.
    assert [(p.segment.segment_id, p.source, p.target) for p in seg_plans] == [(2, 1, 2)]


def test_score_based_channel_batch_limit_and_balance():
    view = FakeView(1, 2, 3)
    view.watch(1, *chans(4))
    bal = ScoreBasedBalancer(view)
    seg_plans, ch_plans = bal.balance_replica(replica(rw=(1, 2, 3)))
    assert seg_plans == [] and len(ch_plans) == CHANNEL_BATCH_SIZE
    assert ch_plans[0].source == 1 and ch_plans[0].target in (2, 3)
    for _ in range(5):
        view.apply(channel_plans=ch_plans)
        _, ch_plans = bal.balance_replica(replica(rw=(1, 2, 3)))
    assert sorted(len(view.chans[n]) for n in (1, 2, 3)) == [1, 1, 2]


def test_row_count_channel_balance():
    view = FakeView(1, 2)
    view.watch(1, *chans(3))
    seg_plans, ch_plans = RowCountBasedBalancer(view).balance_replica(replica())
    assert seg_plans == [] and [(p.source, p.target) for p in ch_plans] == [(1, 2)]
    view.apply(channel_plans=ch_plans)
    assert RowCountBasedBalancer(view).balance_replica(replica()) == ([], [])


@pytest.mark.parametrize("cls", MOVERS)
def test_channels_before_segments(cls):
    view = FakeView(1, 2)
    view.put(1, *segs(10))
    view.watch(1, *chans(2))
    bal = cls(view)
    seg_plans, ch_plans = bal.balance_replica(replica())
    assert seg_plans == [] and len(ch_plans) == 1
    # A segment move in flight: no channel moves, but segments may move.
    view.segment_flight.add(CID)
    seg_plans, ch_plans = bal.balance_replica(replica())
    assert ch_plans == [] and seg_plans
    # A channel move in flight (channels balanced already): no segment moves.
    view.segment_flight.clear()
    view.apply(channel_plans=bal.balance_replica(replica())[1])
    view.channel_flight.add(CID)
    assert bal.balance_replica(replica()) == ([], [])
    view.channel_flight.clear()
    assert bal.balance_replica(replica())[0]


def test_score_based_moves_toward_larger_capacity():
    view = FakeView(1, 2)
    view.caps.update({1: 1000.0, 2: 3000.0})
    view.put(1, *segs(8))
    view.put(2, *segs(8, start=100))
    bal = ScoreBasedBalancer(view)
    for _ in range(10):
        seg_plans, _ = bal.balance_replica(replica())
        if not seg_plans:
            break
        assert all(p.source == 1 and p.target == 2 for p in seg_plans)
        view.apply(seg_plans)
    assert view.rows(2) == pytest.approx(3 * view.rows(1), rel=0.25)


# --- factory ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name,cls", [("RoundRobinBalancer", RoundRobinBalancer),
                                      ("RowCountBasedBalancer", RowCountBasedBalancer),
                                      ("ScoreBasedBalancer", ScoreBasedBalancer),
                                      ("ChannelLevelScoreBalancer", ChannelLevelScoreBalancer),
                                      ("LocalityAwareBalancer", LocalityAwareBalancer),
                                      ("MultipleTargetBalancer", ScoreBasedBalancer),
                                      ("NoSuchBalancer", ScoreBasedBalancer),
                                      ("", ScoreBasedBalancer)])
def test_make_balancer(name, cls):
    view = FakeView(1)
    bal = make_balancer(name, view)
    assert type(bal) is cls and bal.view is view
    assert DEFAULT_BALANCER == "LocalityAwareBalancer"


# --- channel-exclusive mode -------------------------------------------------------------------

CH0, CH1 = "ch-100-0", "ch-100-1"


def split(current, rw, factor=2, enabled=True):
    return split_channel_nodes(current, rw, enabled=enabled, factor=factor)


def moved(before: dict[str, list[int]], after: dict[str, list[int]]) -> int:
    """Nodes that changed channel (joining or leaving nodes not counted)."""
    where = {n: ch for ch, nodes in before.items() for n in nodes}
    return sum(1 for ch, nodes in after.items() for n in nodes if where.get(n, ch) != ch)


def test_exclusive_mode_needs_factor_nodes_per_channel():
    empty = {CH0: [], CH1: []}
    assert split(empty, [1, 2, 3], factor=2) == empty            # 3 < 2 × 2
    assert split(empty, [1, 2, 3, 4], factor=2) == {CH0: [1, 2], CH1: [3, 4]}
    assert split(empty, range(1, 8), factor=4) == empty            # the Milvus default, 4 per channel
    assert split(empty, range(1, 9), factor=4) == {CH0: [1, 2, 3, 4], CH1: [5, 6, 7, 8]}
    assert split(empty, [1, 2, 3, 4], enabled=False) == empty      # another balancer
    assert split({}, [1, 2, 3, 4]) == {}                             # loaded without the mode


def test_exclusive_split_is_even_and_complete():
    chans3 = {f"c{i}": [] for i in range(3)}
    got = split(chans3, range(1, 8))
    assert sorted(len(v) for v in got.values()) == [2, 2, 3]
    assert sorted(n for v in got.values() for n in v) == list(range(1, 8))


def test_exclusive_split_moves_few_nodes_on_join_and_leave():
    before = split({CH0: [], CH1: []}, range(1, 7))                 # 3 + 3
    assert before == {CH0: [1, 2, 3], CH1: [4, 5, 6]}
    joined = split(before, range(1, 8))
    assert moved(before, joined) == 0 and sorted(map(len, joined.values())) == [3, 4]
    joined2 = split(joined, range(1, 9))
    assert moved(joined, joined2) == 0 and joined2 == {CH0: [1, 2, 3, 7], CH1: [4, 5, 6, 8]}
    # node 1 leaves: CH0 keeps 3 nodes, nothing else moves
    left = split(joined2, range(2, 9))
    assert moved(joined2, left) == 0 and left == {CH0: [2, 3, 7], CH1: [4, 5, 6, 8]}
    # nodes 2 and 3 leave too: one node of CH1 changes channel to even it out again
    left2 = split(left, range(4, 9))
    assert moved(left, left2) == 1 and sorted(map(len, left2.values())) == [2, 3]
    # below the threshold the mode is left: every channel loses its nodes
    assert split(left2, [4, 5, 6]) == {CH0: [], CH1: []}


def _groups(nodes):
    return lambda rg: list(nodes)


def test_replica_manager_keeps_the_split_persisted(store):
    ids = iter(range(1000, 2000))
    rm = ReplicaManager(store, channel_exclusive=True, channel_exclusive_node_factor=2)
    [rep] = rm.spawn(CID, {"rg": 1}, lambda: next(ids), _groups(range(1, 5)), [CH0, CH1])
    assert channel_nodes(rep) == {CH0: [1, 2], CH1: [3, 4]}
    # a node joins: nobody changes channel
    assert rm.recover(CID, _groups(range(1, 6)))
    [rep] = rm.of_collection(CID)
    assert channel_nodes(rep) in ({CH0: [1, 2, 5], CH1: [3, 4]}, {CH0: [1, 2], CH1: [3, 4, 5]})
    # persisted: a restarted manager reads the same split
    rm2 = ReplicaManager(store, channel_exclusive=True, channel_exclusive_node_factor=2)
    assert channel_nodes(rm2.get(rep.ID)) == channel_nodes(rep)
    assert not rm2.recover(CID, _groups(range(1, 6)))                # nothing to change
    # below 2 × 2 read-write nodes the mode is left; the channels stay listed, without nodes
    assert rm2.recover(CID, _groups([1, 2, 3]))
    rep = rm2.get(rep.ID)
    assert list(rep.ro_nodes) == [4, 5] and channel_nodes(rep) == {CH0: [], CH1: []}
    assert channel_nodes(ReplicaManager(store).get(rep.ID)) == {CH0: [], CH1: []}
    # and entered again when nodes come back
    rm2.recover(CID, _groups(range(1, 5)))
    assert sorted(map(len, channel_nodes(rm2.get(rep.ID)).values())) == [2, 2]


def test_replica_manager_without_the_channel_level_balancer(store):
    ids = iter(range(1000, 2000))
    rm = ReplicaManager(store, channel_exclusive=False, channel_exclusive_node_factor=1)
    [rep] = rm.spawn(CID, {"rg": 1}, lambda: next(ids), _groups(range(1, 5)), [CH0, CH1])
    assert channel_nodes(rep) == {}
    # a split left from a ChannelLevelScore run is emptied on the next node pass under another balancer
    rm = ReplicaManager(store, channel_exclusive=True, channel_exclusive_node_factor=1)
    [rep] = rm.spawn(CID + 1, {"rg": 1}, lambda: next(ids), _groups(range(1, 5)), [CH0, CH1])
    assert channel_nodes(rep) == {CH0: [1, 2], CH1: [3, 4]}
    rm = ReplicaManager(store, channel_exclusive=False, channel_exclusive_node_factor=1)
    assert rm.recover(CID + 1, _groups(range(1, 5)))
    assert channel_nodes(rm.get(rep.ID)) == {CH0: [], CH1: []}


def exclusive(rw=(1, 2, 3, 4), ro=(), ch0=(1, 2), ch1=(3, 4)) -> ReplicaNodes:
    return ReplicaNodes(7, CID, tuple(rw), tuple(ro), ((CH0, tuple(ch0)), (CH1, tuple(ch1))))


def ch_segs(channel: str, n: int, start: int, rows: int = 1000) -> list[SegmentItem]:
    return [SegmentItem(start + i, CID, 1, channel, rows) for i in range(n)]


def test_channel_level_falls_back_to_score_based_outside_exclusive_mode():
    view = FakeView(1, 2, 3, 4)
    view.put(1, *ch_segs(CH0, 6, 1), *ch_segs(CH1, 6, 100))
    view.watch(1, ChannelItem(CH0, CID))
    for rep in (replica(rw=(1, 2, 3, 4)), exclusive(ch0=(), ch1=())):
        assert ChannelLevelScoreBalancer(view).balance_replica(rep) == \
            ScoreBasedBalancer(view).balance_replica(replica(rw=(1, 2, 3, 4)))


def test_channel_level_balances_segments_within_each_channel():
    view = FakeView(1, 2, 3, 4)
    view.watch(1, ChannelItem(CH0, CID))
    view.watch(3, ChannelItem(CH1, CID))
    view.put(1, *ch_segs(CH0, 8, 1))
    view.put(3, *ch_segs(CH1, 8, 100))
    bal = ChannelLevelScoreBalancer(view)
    for _ in range(10):
        seg_plans, ch_plans = bal.balance_replica(exclusive())
        assert ch_plans == []
        if not seg_plans:
            break
        for p in seg_plans:
            assert (p.source, p.target) in ((1, 2), (3, 4))
            assert p.target in ((1, 2) if p.segment.channel == CH0 else (3, 4))
        view.apply(seg_plans)
    assert view.rows(2) > 0 and view.rows(4) > 0
    assert all(s.channel == CH0 for n in (1, 2) for s in view.segs[n])
    assert all(s.channel == CH1 for n in (3, 4) for s in view.segs[n])


def test_channel_level_moves_channels_then_segments_onto_their_nodes():
    # as ScoreBased left them: both channels and their segments spread over all four nodes
    view = FakeView(1, 2, 3, 4)
    view.watch(1, ChannelItem(CH1, CID))
    view.watch(3, ChannelItem(CH0, CID))
    for i, n in enumerate((1, 2, 3, 4)):
        view.put(n, *ch_segs(CH0, 2, 10 * i), *ch_segs(CH1, 2, 100 + 10 * i))
    bal = ChannelLevelScoreBalancer(view)
    seg_plans, ch_plans = bal.balance_replica(exclusive())
    assert seg_plans == []       # channels first, all of them at once
    assert sorted((p.channel.channel, p.source) for p in ch_plans) == [(CH0, 3), (CH1, 1)]
    assert all(p.target in ((1, 2) if p.channel.channel == CH0 else (3, 4)) for p in ch_plans)
    view.apply(channel_plans=ch_plans)
    seg_plans, ch_plans = bal.balance_replica(exclusive())
    assert ch_plans == [] and len(seg_plans) == 8   # every misplaced segment, no batch limit
    assert all(p.target in ((1, 2) if p.segment.channel == CH0 else (3, 4)) for p in seg_plans)
    view.apply(seg_plans)
    assert bal.balance_replica(exclusive()) == ([], [])
    assert sorted(view.rows(n) for n in (1, 2, 3, 4)) == [4000] * 4


def test_channel_level_drains_read_only_and_stopping_nodes_to_the_channel():
    view = FakeView(1, 2, 3, 4, 5)
    view.states[2] = "Stopping"
    view.put(2, *ch_segs(CH0, 2, 1))
    view.put(5, *ch_segs(CH1, 2, 100))
    seg_plans, _ = ChannelLevelScoreBalancer(view).balance_replica(exclusive(rw=(1, 2, 3, 4), ro=(5,)))
    assert {(p.segment.segment_id, p.source, p.target) for p in seg_plans if p.source == 2} == {(1, 2, 1), (2, 2, 1)}
    assert sorted((p.segment.segment_id, p.source) for p in seg_plans if p.source == 5) == [(100, 5), (101, 5)]
    assert sorted(p.target for p in seg_plans if p.source == 5) == [3, 4]
    # and no plans at all while a channel has no Normal node (as Milvus)
    view.states[1] = "Stopping"
    assert ChannelLevelScoreBalancer(view).balance_replica(exclusive()) == ([], [])


class FakeTargets:
    def __init__(self, channels, segments=()):
        self._channels, self._segments = channels, {r.segment_id: r for r in segments}

    def channels(self, cid, scope):
        return {name: None for name in self._channels}

    def segments(self, cid, scope):
        return dict(self._segments)


def _checker_ctx(store, view, targets, dist=None):
    ids = iter(range(1000, 2000))
    rm = ReplicaManager(store, channel_exclusive=True, channel_exclusive_node_factor=2)
    rm.spawn(CID, {"rg": 1}, lambda: next(ids), _groups(range(1, 5)), [CH0, CH1])
    return SimpleNamespace(replicas=rm, targets=targets, dist=dist or DistributionManager(),
                           balancer=ChannelLevelScoreBalancer(view), scheduler=FakeScheduler(view))


def test_checkers_place_a_channel_and_its_segments_on_its_nodes(store):
    # another collection's channels and segments crowd CH0's nodes 1 and 2; 3 and 4 are empty
    view = FakeView(1, 2, 3, 4)
    view.watch(1, *chans(2, cid=CID + 1))
    view.watch(2, *chans(1, cid=CID + 1))
    view.put(1, *segs(30, start=500, cid=CID + 1))
    view.put(2, *segs(20, start=600, cid=CID + 1))
    ctx = _checker_ctx(store, view, FakeTargets([CH0, CH1]))
    tasks = ChannelChecker(ctx, 1.0).collection_tasks(CID)
    assert sorted((t.channel, t.target) for t in tasks) == [(CH0, 2), (CH1, 3)]

    dist = DistributionManager()
    for node, channel in ((2, CH0), (4, CH1)):
        dist.update(node, query_coord_pb2.GetDataDistributionResponse(
            lastModifyTs=1, channels=[query_coord_pb2.ChannelVersionInfo(channel=channel, collection=CID, version=1)],
            leader_views=[query_coord_pb2.LeaderView(collection=CID, channel=channel)]))
    refs = [SegmentRef(i, 1, CH0 if i < 10 else CH1, 0, 1000) for i in range(20)]
    ctx = _checker_ctx(store, view, FakeTargets([CH0, CH1], refs), dist)
    tasks = SegmentChecker(ctx, 1.0).collection_tasks(CID)
    assert len(tasks) == 20
    assert all(t.target in ((1, 2) if t.segment.channel == CH0 else (3, 4)) for t in tasks)
    assert {t.target for t in tasks if t.segment.channel == CH0} == {1, 2}   # score-based within the pair


class FakeScheduler:
    """Accepts a checker's tasks as in flight: their rows become pending on the view, their keys taken."""

    def __init__(self, view: FakeView) -> None:
        self.view, self.keys = view, set()

    def has(self, key) -> bool:
        return key in self.keys

    def add_all(self, tasks) -> None:
        for t in tasks:
            if t.key not in self.keys:
                self.keys.add(t.key)
                pending = self.view.pend_rows
                pending[(t.target, CID)] = pending.get((t.target, CID), 0) + t.segment.num_rows


def _leading(*pairs) -> DistributionManager:
    dist = DistributionManager()
    for node, channel in pairs:
        dist.update(node, query_coord_pb2.GetDataDistributionResponse(
            lastModifyTs=1, channels=[query_coord_pb2.ChannelVersionInfo(channel=channel, collection=CID, version=1)],
            leader_views=[query_coord_pb2.LeaderView(collection=CID, channel=channel)]))
    return dist


@pytest.mark.parametrize("balancer", [ScoreBasedBalancer, RowCountBasedBalancer])
def test_first_placement_is_even_across_channels_and_rounds(store, balancer):
    """Two channels of three equal segments on two nodes.  Placing channel by channel gave 4/2 (a
    round's plans are not pending yet); placing again segments whose load was in flight gave 4/2 too
    when the second channel's leader came up a round later."""
    view = FakeView(1, 2)
    ids = iter(range(1000, 2000))
    rm = ReplicaManager(store, channel_exclusive=balancer.channel_exclusive)
    rm.spawn(CID, {"rg": 1}, lambda: next(ids), _groups([1, 2]), [CH0, CH1])
    refs = [SegmentRef(i, 1, CH0 if i < 3 else CH1, 0, 200) for i in range(6)]
    scheduler = FakeScheduler(view)

    def round_with(dist) -> None:
        ctx = SimpleNamespace(replicas=rm, targets=FakeTargets([CH0, CH1], refs), dist=dist,
                              balancer=balancer(view), scheduler=scheduler)
        scheduler.add_all(SegmentChecker(ctx, 1.0).collection_tasks(CID))

    round_with(_leading((1, CH0), (2, CH1)))
    assert sorted(view.pending_rows(n, CID) for n in (1, 2)) == [600, 600]

    view.pend_rows.clear()
    scheduler.keys.clear()
    round_with(_leading((1, CH0)))                # CH1 has no leader yet: only CH0's segments
    round_with(_leading((1, CH0), (2, CH1)))      # CH0's loads still in flight
    assert len(scheduler.keys) == 6
    assert sorted(view.pending_rows(n, CID) for n in (1, 2)) == [600, 600]


# The segment checker loads a channel's L0 segments before its other segments, also while an L0 load is still
# in flight.  A node applies the L0 segments it holds to its own segments (the shard leader does not send it
# their deletes), and a segment that starts loading on a node before an L0 segment of its channel is served
# there misses that L0 segment's deletes.  Placing the other segments in the round after the L0 task was
# submitted, while it was still running, lost deletes on the leader's node (seen in a cluster-mode test:
# deleted keys read back right after the load).

def test_other_segments_wait_for_an_l0_load_in_flight(store):
    view = FakeView(1, 2)
    ids = iter(range(1000, 2000))
    rm = ReplicaManager(store, channel_exclusive=False)
    rm.spawn(CID, {"rg": 1}, lambda: next(ids), _groups([1, 2]), [CH0, CH1])
    refs = [SegmentRef(i, 1, CH0 if i < 3 else CH1, data_coord_pb2.L1, 200) for i in range(6)]
    refs.append(SegmentRef(99, -1, CH0, data_coord_pb2.L0, 0))
    scheduler = FakeScheduler(view)
    dist = _leading((1, CH0), (2, CH1))   # nothing held yet

    def checker_round():
        ctx = SimpleNamespace(replicas=rm, targets=FakeTargets([CH0, CH1], refs), dist=dist,
                              balancer=ScoreBasedBalancer(view), scheduler=scheduler)
        tasks = SegmentChecker(ctx, 1.0).collection_tasks(CID)
        scheduler.add_all(tasks)
        return tasks

    first = checker_round()
    assert {t.segment.segment_id for t in first if t.segment.channel == CH0} == {99}
    assert {t.segment.segment_id for t in first if t.segment.channel == CH1} == {3, 4, 5}
    # the L0 load is in flight (its task taken, not in the distribution yet): CH0's others still wait
    assert checker_round() == []


def test_score_based_puts_a_segment_on_its_channels_leader_when_scores_tie():
    """A channel's search reaches sealed segments on its leader without another gRPC hop (REST nq=1
    took ~1.4 ms more with the segments on the other node): between nodes of equal score the leader
    of the segment's channel wins, not the lower node id."""
    view = FakeView(1, 2)
    view.watch(1, ChannelItem("ch-a", CID))
    view.watch(2, ChannelItem("ch-b", CID))
    view.leaders[(1, CID)] = view.leaders[(2, CID)] = 1
    segments = [SegmentItem(1, CID, 1, "ch-b", 1000), SegmentItem(2, CID, 1, "ch-a", 1000)]
    plans = ScoreBasedBalancer(view).assign_segments(CID, segments, [1, 2])
    assert {p.segment.channel: p.target for p in plans} == {"ch-b": 2, "ch-a": 1}
    # the scores still decide: a leader already holding more rows does not get the segment
    view.put(2, *segs(3, rows=1000, start=100))
    (plan,) = ScoreBasedBalancer(view).assign_segments(CID, [SegmentItem(9, CID, 1, "ch-b", 1000)], [1, 2])
    assert plan.target == 1


def test_score_based_hands_a_flushed_segment_to_the_leader_whose_growing_rows_it_replaces():
    """A flush seals the growing rows a leader holds into a segment: loaded there, it replaces them, so
    the leader's growing rows must not push it to the other node (every search of the channel would
    then take another hop)."""
    view = FakeView(1, 2)
    view.watch(1, ChannelItem("ch-a", CID))
    view.watch(2, ChannelItem("ch-b", CID))
    view.leaders[(1, CID)] = view.leaders[(2, CID)] = 1
    view.growing_by_channel[(1, "ch-a")] = 25_000
    view.growing_by_channel[(2, "ch-b")] = 25_000
    flushed = [SegmentItem(4, CID, 1, "ch-a", 25_000), SegmentItem(5, CID, 1, "ch-b", 25_000)]
    plans = ScoreBasedBalancer(view).assign_segments(CID, flushed, [1, 2])
    assert {p.segment.channel: p.target for p in plans} == {"ch-a": 1, "ch-b": 2}
    # the credit is the rows a segment replaces, once: a second segment of ch-a is scored as any
    view.growing_by_channel[(2, "ch-b")] = 0
    more = [SegmentItem(6, CID, 1, "ch-a", 25_000), SegmentItem(7, CID, 1, "ch-a", 25_000)]
    plans = ScoreBasedBalancer(view).assign_segments(CID, more, [1, 2])
    assert sorted(p.target for p in plans) == [1, 2]


def test_score_based_reserves_for_a_delegator_still_being_watched():
    """A channel watch in flight makes a delegator, so its node carries the delegator reservation
    already: otherwise the node whose leader came up first looks fuller, and the first channel's
    segment lands off its leader (bench/rest.py's load placed both segments off their leaders)."""
    view = FakeView(1, 2)
    view.watch(2, ChannelItem("ch-b", CID))
    view.leaders[(2, CID)] = 1          # node 2 leads ch-b; node 1's watch of ch-a is in flight
    view.pend_chans[(1, CID)] = 1
    (plan,) = ScoreBasedBalancer(view).assign_segments(CID, [SegmentItem(5, CID, 1, "ch-b", 25_000)], [1, 2])
    assert plan.target == 2


# --- locality-aware placement -------------------------------------------------------------------

CH = f"ch-{CID}-0"


def led(*nodes: int, capacity: float = 0.0, leader: int = 1, **kw) -> tuple[FakeView, LocalityAwareBalancer]:
    """Nodes of one replica, ``leader`` watching the collection's channel."""
    view = FakeView(*nodes, capacity=capacity)
    view.watch(leader, ChannelItem(CH, CID))
    view.leaders[(leader, CID)] = 1
    return view, LocalityAwareBalancer(view, **kw)


def test_locality_puts_a_channels_segment_on_its_leader_where_score_based_spreads_it():
    """One channel, one segment, two nodes: Milvus's score (the leader reserves room for its delegator)
    sent the segment to the other node, a hop away from every search of the channel."""
    view, bal = led(1, 2, capacity=64_000)
    seg = segs(1, rows=100_000)
    assert [p.target for p in ScoreBasedBalancer(view).assign_segments(CID, seg, [1, 2])] == [2]
    assert [p.target for p in bal.assign_segments(CID, seg, [1, 2])] == [1]
    many = segs(6, rows=50_000)
    assert {p.target for p in bal.assign_segments(CID, many, [1, 2])} == {1}


def test_locality_places_each_channels_segments_on_that_channels_leader():
    view, bal = led(1, 2, 3, capacity=64_000, leader=3)
    view.watch(2, ChannelItem(f"ch-{CID}-1", CID))
    items = [SegmentItem(i, CID, 1, f"ch-{CID}-{i % 2}", 10_000) for i in range(1, 7)]
    plans = bal.assign_segments(CID, items, [1, 2, 3])
    assert {p.segment.segment_id: p.target for p in plans} == {i: 3 if i % 2 == 0 else 2 for i in range(1, 7)}


def test_locality_spreads_what_does_not_fit_in_the_leaders_memory_share():
    """Capacity 100 MiB at 0.7: the leader takes 70 MiB (70,000 rows), the rest goes by score."""
    view, bal = led(1, 2, capacity=100, memory_fraction=0.7)
    plans = bal.assign_segments(CID, segs(5, rows=20_000), [1, 2])
    assert rows_per_target(plans) == {1: 60_000, 2: 40_000}
    view.put(2, *segs(1, rows=5_000, start=50))       # what the leader already holds counts too
    view.apply()
    view.put(1, *segs(1, rows=60_000, start=60))
    assert [p.target for p in bal.assign_segments(CID, segs(1, rows=20_000, start=70), [1, 2])] == [2]


def test_locality_spreads_a_channel_past_its_scan_limit():
    view, bal = led(1, 2, 3, scan_rows=100_000)
    plans = bal.assign_segments(CID, segs(5, rows=40_000), [1, 2, 3])
    assert rows_per_target(plans)[1] == 80_000 and sum(rows_per_target(plans).values()) == 200_000
    view.growing_by_channel[(1, CH)] = 90_000         # growing rows on the leader count as its channel's
    assert [p.target for p in bal.assign_segments(CID, segs(1, rows=20_000, start=9), [1, 2, 3])] != [1]


def test_locality_counts_the_rows_a_query_compares_not_the_rows_stored():
    """10M rows: a FLAT collection's queries compare them all (spread past 5M), an IVF one's an eighth
    at the default nprobe of nlist 4096 (1.29M: one node, no hop; the 10M benchmark found them split 5/5)."""
    view, bal = led(1, 2)
    assert rows_per_target(bal.assign_segments(CID, segs(10, rows=1_000_000), [1, 2]))[1] == 5_000_000
    view.shapes[CID] = IndexShape("ivf", 4096)
    assert rows_per_target(bal.assign_segments(CID, segs(10, rows=1_000_000), [1, 2])) == {1: 10_000_000}


def test_locality_without_a_leader_among_the_nodes_places_by_score():
    view, bal = led(1, 2, 3, leader=3)
    plans = bal.assign_segments(CID, segs(4, rows=1_000), [1, 2])
    assert rows_per_target(plans) == {1: 2_000, 2: 2_000}


def test_locality_balance_moves_segments_back_to_the_leader_when_they_fit():
    view, bal = led(1, 2, capacity=1_000)
    view.put(2, *segs(3, rows=100_000))                # placed while the leader had no room, say
    segment_plans, channel_plans = bal.balance_replica(replica())
    assert channel_plans == [] and {(p.source, p.target) for p in segment_plans} == {(2, 1)}
    assert len(segment_plans) == 3
    view.apply(segment_plans)
    assert bal.balance_replica(replica()) == ([], [])  # settled: nothing moves back and forth


def test_locality_balance_leaves_segments_away_while_the_leader_has_no_room():
    view, bal = led(1, 2, capacity=200)                 # 140 MiB share: one 100,000-row segment
    view.put(1, *segs(1, rows=100_000))
    view.put(2, *segs(2, rows=100_000, start=2))
    assert bal.balance_replica(replica()) == ([], [])


def test_locality_balance_takes_a_leaders_excess_off_it():
    view, bal = led(1, 2, capacity=200)                 # 140 MiB share; it holds 300,000 rows
    view.put(1, *segs(3, rows=100_000))
    segment_plans, _ = bal.balance_replica(replica())
    assert {(p.source, p.target) for p in segment_plans} == {(1, 2)} and len(segment_plans) >= 2
    view.apply(segment_plans)
    assert sum(s.num_rows for s in view.segs[1]) <= 140 * 1000
    moves, _ = bal.balance_replica(replica())
    view.apply(moves)
    assert bal.balance_replica(replica()) == ([], [])   # and it does not pull them back


def test_locality_balance_keeps_spreading_channels():
    view, bal = led(1, 2)
    view.watch(1, ChannelItem(f"ch-{CID}-1", CID))
    view.leaders[(1, CID)] = 2
    _, channel_plans = bal.balance_replica(replica())
    assert [(p.source, p.target) for p in channel_plans] == [(1, 2)]
