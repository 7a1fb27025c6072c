"""``LocalityAwareBalancer`` (vecgrid's default): sealed segments on their channel's shard leader.

A search of a channel goes to the channel's leader (its delegator), which searches what it holds
itself and sends the rest to the nodes holding the other segments, a gRPC hop each: on loopback
about 1-2 ms per search and a copy of the request and the hits per node.  Milvus's policies spread
rows evenly over a replica's nodes and pay that hop on every search; for the common small
deployment (one channel, a handful of segments, a scan far cheaper than a hop) it is most of a
search's time.  This policy counts the hop: a sealed segment goes to its channel's leader while

* the leader has memory for it: everything the node would hold (sealed segments of every
  collection, growing rows, segments being loaded there) stays within
  ``querycoord.leader_memory_fraction`` of its memory capacity (GPU memory on GPU nodes); and
* the rows one query of the channel compares on the leader stay within
  ``querycoord.leader_scan_rows``: every growing row, and of each sealed segment what its index
  scans at the default search params (all for FLAT, the centroids and nprobe lists for IVF, a graph
  walk's few thousand: ``ClusterView.index_shape``, ``vecgrid.common.scan_cost``).
  Past it, one node's scan of the channel costs far more than a hop, and scanning parts of it in
  parallel on other nodes pays for the hop.

A segment that fails either test is placed as ``ScoreBasedBalancer`` places it (the replica's
other nodes by score).  The balance round moves segments back onto their leader when they fit
again, moves a leader's excess off it when it holds more than the two limits allow, and moves
channels as ``ScoreBasedBalancer`` does (spreading the leaders of several channels over the nodes,
whose segments then follow them).  Memory is an estimate: rows × the schema's row width
(``ClusterView.row_bytes``).
"""

from __future__ import annotations

from vecgrid.cluster.querycoord.balance.base import (SEGMENT_BATCH_SIZE, ClusterView, ReplicaNodes, SegmentItem,
                                                     SegmentPlan, held_segments)
from vecgrid.cluster.querycoord.balance.score_based import ScoreBasedBalancer
from vecgrid.common.scan_cost import IndexShape

NAME = "LocalityAwareBalancer"
MB = 1024 * 1024

#: defaults of ``querycoord.leader_memory_fraction`` and ``querycoord.leader_scan_rows``
LEADER_MEMORY_FRACTION = 0.7
LEADER_SCAN_ROWS = 5_000_000


class LocalityAwareBalancer(ScoreBasedBalancer):
    name = NAME

    def __init__(self, view: ClusterView, *, memory_fraction: float = LEADER_MEMORY_FRACTION,
                 scan_rows: int = LEADER_SCAN_ROWS) -> None:
        super().__init__(view)
        self.memory_fraction = memory_fraction
        self.scan_rows = scan_rows

    @classmethod
    def from_settings(cls, view: ClusterView, settings) -> "LocalityAwareBalancer":
        q = settings.querycoord
        return cls(view, memory_fraction=q.leader_memory_fraction, scan_rows=q.leader_scan_rows)

    # --- what a leader holds ---------------------------------------------------------------

    def _held_mb(self, node: int) -> float:
        """The node's estimated memory in use and on its way: sealed segments, growing rows and the
        rows of segment tasks in flight to it, each collection at its own row width."""
        view = self.view
        segments = view.segments(node)
        sealed = sum(s.num_rows * view.row_bytes(s.collection_id) for s in segments)
        collections = {s.collection_id for s in segments} | {c.collection_id for c in view.channels(node)}
        other = sum((view.growing_rows(node, cid) + max(0, view.pending_rows(node, cid))) * view.row_bytes(cid)
                    for cid in sorted(collections))
        return (sealed + other) / MB

    def _budget_mb(self, node: int) -> float | None:
        """How much the node may hold; None when it reports no capacity (no memory test then)."""
        capacity = self.view.node_capacity_mb(node)
        return capacity * self.memory_fraction if capacity > 0 else None

    def _channel_scan(self, node: int, collection_id: int, channel: str, shape: IndexShape) -> int:
        """The rows one query of the channel compares on the node: what ``shape`` scans of its sealed
        segments, and every growing row (searched by brute force)."""
        view = self.view
        return (sum(shape.scanned_rows(s.num_rows) for s in view.segments(node, collection_id) if s.channel == channel)
                + view.channel_growing_rows(node, channel))

    def _leaders(self, collection_id: int, nodes: list[int]) -> dict[str, int]:
        return {c.channel: n for n in nodes for c in self.view.channels(n, collection_id)}

    class _Room:
        """What each leader can still take in one placement, as plans are made (owned by that call)."""

        def __init__(self, balancer: "LocalityAwareBalancer", collection_id: int, leaders: dict[str, int]) -> None:
            self.balancer, self.collection_id = balancer, collection_id
            nodes = set(leaders.values())
            self.mb = {n: balancer._held_mb(n) for n in nodes}
            self.budget = {n: balancer._budget_mb(n) for n in nodes}
            self.shape = balancer.view.index_shape(collection_id)
            self.scan = {(n, ch): balancer._channel_scan(n, collection_id, ch, self.shape) for ch, n in leaders.items()}
            self.held = {n: held_segments(balancer.view, n, collection_id) for n in nodes}

        def fits(self, seg: SegmentItem, node: int) -> bool:
            mb = seg.num_rows * self.balancer.view.row_bytes(self.collection_id) / MB
            budget = self.budget[node]
            return ((budget is None or self.mb[node] + mb <= budget)
                    and self.scan[(node, seg.channel)] + self.shape.scanned_rows(seg.num_rows) <= self.balancer.scan_rows)

        def take(self, seg: SegmentItem, node: int) -> None:
            self.mb[node] += seg.num_rows * self.balancer.view.row_bytes(self.collection_id) / MB
            self.scan[(node, seg.channel)] += self.shape.scanned_rows(seg.num_rows)

    # --- assignment ---------------------------------------------------------------------

    def _place_segments(self, collection_id: int, items: list[tuple[SegmentItem, int]], nodes: list[int],
                        replica_id: int, *, rebalance: bool) -> list[SegmentPlan]:
        leaders = self._leaders(collection_id, nodes)
        room = self._Room(self, collection_id, leaders)
        local: list[SegmentPlan] = []
        rest: list[tuple[SegmentItem, int]] = []
        full: set[int] = set()  # leaders that refused a segment: the score-based rest must not pick them
        for seg, source in sorted(items, key=lambda it: (-it[0].num_rows, it[0].segment_id, it[1])):
            leader = leaders.get(seg.channel)
            if leader is None or leader == source or seg.segment_id in room.held[leader]:
                rest.append((seg, source))
            elif room.fits(seg, leader):
                local.append(SegmentPlan(seg, replica_id, source, leader))
                room.take(seg, leader)
            else:
                full.add(leader)
                rest.append((seg, source))
        if not rest:
            return local
        # the scores below do not see the plans above yet: a leader that is full stays out of them
        others = [n for n in nodes if n not in full] or nodes
        return local + super()._place_segments(collection_id, rest, others, replica_id, rebalance=rebalance)

    # --- balance ------------------------------------------------------------------------

    def _segment_moves(self, replica: ReplicaNodes, nodes: list[int], *,
                       channel: str | None = None) -> list[SegmentPlan]:
        """Off a leader what it holds beyond its limits; else back onto their leader the segments that
        fit there again (largest first, a batch per round)."""
        cid = replica.collection_id
        leaders = self._leaders(cid, nodes)
        movable = self._movable_segments(replica, nodes, channel=channel)
        excess = self._excess(cid, leaders, movable)
        if excess:
            return super()._place_segments(cid, excess, nodes, replica.replica_id, rebalance=True)
        room = self._Room(self, cid, leaders)
        plans: list[SegmentPlan] = []
        away = [(s, n) for n in nodes for s in movable[n] if leaders.get(s.channel, n) != n]
        for seg, source in sorted(away, key=lambda it: (-it[0].num_rows, it[0].segment_id)):
            leader = leaders[seg.channel]
            if seg.segment_id in room.held[leader] or not room.fits(seg, leader):
                continue
            plans.append(SegmentPlan(seg, replica.replica_id, source, leader))
            room.take(seg, leader)
            if len(plans) >= SEGMENT_BATCH_SIZE:
                break
        return plans

    def _excess(self, collection_id: int, leaders: dict[str, int],
                movable: dict[int, list[SegmentItem]]) -> list[tuple[SegmentItem, int]]:
        """Segments to take off leaders over their memory budget or a channel's scan limit, smallest
        first, until the leader is within both (a batch at most)."""
        picked: list[tuple[SegmentItem, int]] = []
        shape = self.view.index_shape(collection_id)
        for leader in sorted(set(leaders.values())):
            budget = self._budget_mb(leader)
            over_mb = self._held_mb(leader) - budget if budget is not None else 0.0
            over_scan = {ch: self._channel_scan(leader, collection_id, ch, shape) - self.scan_rows
                         for ch, n in leaders.items() if n == leader}
            for seg in sorted(movable.get(leader, []), key=lambda s: (s.num_rows, s.segment_id)):
                if over_mb <= 0 and over_scan.get(seg.channel, 0) <= 0:
                    continue
                picked.append((seg, leader))
                over_mb -= seg.num_rows * self.view.row_bytes(collection_id) / MB
                if seg.channel in over_scan:
                    over_scan[seg.channel] -= shape.scanned_rows(seg.num_rows)
                if len(picked) >= SEGMENT_BATCH_SIZE:
                    return picked
        return picked


__all__ = ["LEADER_MEMORY_FRACTION", "LEADER_SCAN_ROWS", "NAME", "LocalityAwareBalancer"]
