"""``RowCountBasedBalancer``: even out row counts (segments) and channel counts (channels).

Milvus ``rowcount_based_balancer.go``.  Assignment gives each segment, largest first, to the
candidate with the fewest rows overall — sealed plus growing rows plus the row delta of its
in-flight segment tasks — counting what this call already assigned; each channel goes to the
candidate watching the fewest channels (plus in-flight channel tasks).

Balance of one replica over its Normal read-write nodes:

* channels: the average is ``ceil(channels of the collection in the replica / nodes)``;
  channels beyond it on a node move to the nodes at or below it (as in Milvus);
* segments: the collection's rows per node (plus in-flight deltas) are compared with their
  average; a segment moves from a node above the average to one below it only if that
  narrows the gap between the two (its row count is smaller than the gap), choosing the
  move that narrows it most first; at most ``collectionBalanceSegmentBatchSize`` moves per
  round.  (Milvus takes the smallest segments off the overloaded node while it stays at or
  above the average; choosing by gain reaches the same balance in fewer moves.)  Every move
  strictly lowers the sum of squared row counts, so rounds cannot undo each other.
"""

from __future__ import annotations

import math

from vecgrid.cluster.querycoord.balance.base import (SEGMENT_BATCH_SIZE, BaseBalancer, ChannelItem, ChannelPlan, ReplicaNodes,
                                                     SegmentItem, SegmentPlan, held_channels, held_segments, node_rows)

NAME = "RowCountBasedBalancer"


class RowCountBasedBalancer(BaseBalancer):
    name = NAME

    # --- assignment ---------------------------------------------------------------------

    def _place_segments(self, collection_id: int, items: list[tuple[SegmentItem, int]], nodes: list[int],
                        replica_id: int, *, rebalance: bool) -> list[SegmentPlan]:
        view = self.view
        load = {n: node_rows(view, n) + view.pending_rows(n) for n in nodes}
        held = {n: held_segments(view, n, collection_id) for n in nodes}
        plans: list[SegmentPlan] = []
        for seg, source in sorted(items, key=lambda it: (-it[0].num_rows, it[0].segment_id, it[1])):
            free = [n for n in nodes if seg.segment_id not in held[n]]
            if not free:
                continue
            target = min(free, key=lambda n: (load[n], n))
            plans.append(SegmentPlan(seg, replica_id, source, target))
            load[target] += seg.num_rows
            held[target].add(seg.segment_id)
            if source in load:
                load[source] -= seg.num_rows
        return plans

    def _place_channels(self, collection_id: int, items: list[tuple[ChannelItem, int]], nodes: list[int],
                        replica_id: int, *, rebalance: bool) -> list[ChannelPlan]:
        view = self.view
        load = {n: len(view.channels(n)) + view.pending_channels(n) for n in nodes}
        held = {n: held_channels(view, n, collection_id) for n in nodes}
        plans: list[ChannelPlan] = []
        for ch, source in sorted(items, key=lambda it: (it[0].channel, it[1])):
            free = [n for n in nodes if ch.channel not in held[n]]
            if not free:
                continue
            target = min(free, key=lambda n: (load[n], n))
            plans.append(ChannelPlan(ch, replica_id, source, target))
            load[target] += 1
            held[target].add(ch.channel)
            if source in load:
                load[source] -= 1
        return plans

    # --- balance ------------------------------------------------------------------------

    def _channel_moves(self, replica: ReplicaNodes, nodes: list[int]) -> list[ChannelPlan]:
        movable = self._movable_channels(replica, nodes)
        total = sum(len(self.view.channels(n, replica.collection_id)) for n in nodes)
        if total == 0:
            return []
        average = math.ceil(total / len(nodes))
        counts = {n: len(self.view.channels(n, replica.collection_id)) for n in nodes}
        receivers = [n for n in nodes if counts[n] <= average]
        surplus = [(c, n) for n in nodes if counts[n] > average for c in movable[n][:counts[n] - average]]
        if not receivers or not surplus:
            return []
        return self._place_channels(replica.collection_id, surplus, receivers, replica.replica_id,
                                    rebalance=True)

    def _segment_moves(self, replica: ReplicaNodes, nodes: list[int]) -> list[SegmentPlan]:
        view, cid = self.view, replica.collection_id
        movable = self._movable_segments(replica, nodes)
        rows = {n: sum(s.num_rows for s in view.segments(n, cid)) + view.pending_rows(n, cid) for n in nodes}
        if sum(rows.values()) <= 0:
            return []
        average = sum(rows.values()) / len(nodes)
        held = {n: held_segments(view, n, cid) for n in nodes}
        plans: list[SegmentPlan] = []
        while len(plans) < SEGMENT_BATCH_SIZE:
            move = self._best_move(rows, average, movable, held)
            if move is None:
                break
            seg, src, dst = move
            plans.append(SegmentPlan(seg, replica.replica_id, src, dst))
            rows[src] -= seg.num_rows
            rows[dst] += seg.num_rows
            movable[src].remove(seg)
            held[dst].add(seg.segment_id)
        return plans

    @staticmethod
    def _best_move(rows: dict[int, int], average: float, movable: dict[int, list[SegmentItem]],
                   held: dict[int, set[int]]) -> tuple[SegmentItem, int, int] | None:
        """The move of largest gain from the most loaded node above the average to the least
        loaded node below it that has one (nodes by load, then id)."""
        sources = sorted((n for n in rows if rows[n] > average), key=lambda n: (-rows[n], n))
        sinks = sorted((n for n in rows if rows[n] < average), key=lambda n: (rows[n], n))
        for src in sources:
            for dst in sinks:
                gap = rows[src] - rows[dst]
                best: tuple[int, int, SegmentItem] | None = None
                for s in movable[src]:
                    if 0 < s.num_rows < gap and s.segment_id not in held[dst]:
                        key = (abs(gap - 2 * s.num_rows), s.segment_id)  # smallest remaining gap = largest gain
                        if best is None or key < best[:2]:
                            best = (*key, s)
                if best is not None:
                    return best[2], src, dst
        return None
