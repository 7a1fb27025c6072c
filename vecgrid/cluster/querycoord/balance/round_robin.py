"""``RoundRobinBalancer``: deal items over the least-loaded nodes in turn; never rebalances.

Milvus ``round_robin_balancer.go``: candidate nodes are sorted by how many segments (or
channels) they hold plus the delta of their in-flight tasks, and items are dealt round-robin
from the least-loaded node on.  The only moves it proposes are the stopping balance every
balancer does (``BaseBalancer.balance_replica``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from vecgrid.cluster.querycoord.balance.base import (BaseBalancer, ChannelItem, ChannelPlan, Item, SegmentItem,
                                                     SegmentPlan, held_channels, held_segments)

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
        dealt = _deal(sorted(items, key=lambda it: (it[0].segment_id, it[1])), lambda s: s.segment_id, order, held)
        return [SegmentPlan(seg, replica_id, source, target) for seg, source, target in dealt]

    def _place_channels(self, collection_id: int, items: list[tuple[ChannelItem, int]], nodes: list[int],
                        replica_id: int, *, rebalance: bool) -> list[ChannelPlan]:
        order = self._channel_order(nodes)
        held = {n: held_channels(self.view, n, collection_id) for n in order}
        dealt = _deal(sorted(items, key=lambda it: (it[0].channel, it[1])), lambda c: c.channel, order, held)
        return [ChannelPlan(ch, replica_id, source, target) for ch, source, target in dealt]


def _deal(items: list[tuple[Item, int]], key: Callable[[Item], Hashable], order: list[int],
          held: dict[int, set]) -> list[tuple[Item, int, int]]:
    """Deal each ``(item, source)`` to the next node in turn (from ``order[0]``) that does not hold it yet.

    Segments and channels alike (``key`` names an item); ``held`` is updated as items land. Returns
    ``(item, source, target)`` triples; an item every node holds is left out.
    """
    dealt: list[tuple[Item, int, int]] = []
    turn = 0
    for item, source in items:
        for step in range(len(order)):
            node = order[(turn + step) % len(order)]
            if key(item) not in held[node]:
                dealt.append((item, source, node))
                held[node].add(key(item))
                turn += step + 1
                break
    return dealt
