"""``RoundRobinBalancer``: deal items over the least-loaded nodes in turn; never rebalances.

Milvus ``round_robin_balancer.go``: candidate nodes are sorted by how many segments (or
channels) they hold plus the delta of their in-flight tasks, and items are dealt round-robin
from the least-loaded node on.  The only moves it proposes are the stopping balance every
balancer does (``BaseBalancer.balance_replica``).
"""

from __future__ import annotations

from vecgrid.cluster.querycoord.balance.base import (BaseBalancer, ChannelItem, ChannelPlan, SegmentItem, SegmentPlan,
                                                     held_channels, held_segments)

NAME = "RoundRobinBalancer"


class RoundRobinBalancer(BaseBalancer):
    name = NAME

    def _segment_order(self, nodes: list[int]) -> list[int]:
        # Milvus sorts by segment count + in-flight segment task delta; the delta is a row
        # count here, so it only breaks ties between equal segment counts.
        return sorted(nodes, key=lambda n: (len(self.view.segments(n)), self.view.pending_rows(n), n))

    def _channel_order(self, nodes: list[int]) -> list[int]:
        return sorted(nodes, key=lambda n: (len(self.view.channels(n)) + self.view.pending_channels(n), n))

    def _place_segments(self, collection_id: int, items: list[tuple[SegmentItem, int]], nodes: list[int],
                        replica_id: int, *, rebalance: bool) -> list[SegmentPlan]:
        order = self._segment_order(nodes)
        held = {n: held_segments(self.view, n, collection_id) for n in order}
        plans: list[SegmentPlan] = []
        turn = 0
        for seg, source in sorted(items, key=lambda it: (it[0].segment_id, it[1])):
            for step in range(len(order)):  # the next node in turn that does not hold it yet
                node = order[(turn + step) % len(order)]
                if seg.segment_id not in held[node]:
                    plans.append(SegmentPlan(seg, replica_id, source, node))
                    held[node].add(seg.segment_id)
                    turn += step + 1
                    break
        return plans

    def _place_channels(self, collection_id: int, items: list[tuple[ChannelItem, int]], nodes: list[int],
                        replica_id: int, *, rebalance: bool) -> list[ChannelPlan]:
        order = self._channel_order(nodes)
        held = {n: held_channels(self.view, n, collection_id) for n in order}
        plans: list[ChannelPlan] = []
        turn = 0
        for ch, source in sorted(items, key=lambda it: (it[0].channel, it[1])):
            for step in range(len(order)):
                node = order[(turn + step) % len(order)]
                if ch.channel not in held[node]:
                    plans.append(ChannelPlan(ch, replica_id, source, node))
                    held[node].add(ch.channel)
                    turn += step + 1
                    break
        return plans
