"""``ScoreBasedBalancer`` (the default): give every node a score and a fair share of the total.

Milvus ``score_based_balancer.go`` (2.4 line, memory-capacity aware).

Segment score of a node for collection *c*: rows of *c* on the node (sealed + growing + the
row delta of in-flight segment tasks of *c*) + ``globalRowCountFactor`` × all rows on the
node (same three parts, every collection).  A segment adds ``rows × (1 + globalRowCountFactor)``
to a node.  Channel score: ``collectionChannelCountFactor`` per channel of *c* (in-flight
channel tasks of *c* included) + 1 per other channel (and other in-flight channel tasks).

Fair share ("assigned score"): the total score split evenly over the candidates, or — when
every candidate reports its memory capacity (GPU memory on GPU nodes) — in proportion to
capacity.  A node hosting delegators of *c* carries ``delegatorMemoryOverloadFactor`` × its fair
share per delegator on top of its segment score, reserving room for the growing data and
the search fan-in the delegator handles.  A node's priority is its score minus its fair share;
each item goes to the candidate with the lowest priority that does not hold it yet.

One difference from Milvus: the total that fair shares are cut from includes the items being
placed when they come from outside the candidate set (new segments, or those leaving a stopping
node).  Milvus uses only what the candidates already hold, so on empty nodes every fair share is
0 and a first load is split evenly whatever the capacities; counting the incoming rows splits
it in proportion to capacity instead.  With even shares it changes nothing.

Automatic balance moves items only off nodes above their fair share, smallest first, until
the node would drop to its share or a batch is full, and keeps a move only if it pays off:
the source/target priority gap must be at least ``scoreUnbalanceTolerationFactor`` × the
target's priority, and if the move inverts the two nodes, the new gap ×
``reverseUnBalanceTolerationFactor`` must stay below the old one.  Batch caps are checked
"more than" as in Milvus: candidates are collected per node until the list holds a batch, and
plans stop once there are more than a batch, so with several overloaded nodes one move above
the setting can slip through.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from vecgrid.cluster.querycoord.balance.base import (CHANNEL_BATCH_SIZE, SEGMENT_BATCH_SIZE, BaseBalancer, ChannelItem,
                                                     ChannelPlan, ClusterView, Item, ReplicaNodes, SegmentItem,
                                                     SegmentPlan, held_channels, held_segments, node_rows)

NAME = "ScoreBasedBalancer"

# Milvus ``queryCoord.globalRowCountFactor``: weight of rows of other collections in a node's score.
GLOBAL_ROW_COUNT_FACTOR = 0.1
# Milvus ``queryCoord.delegatorMemoryOverloadFactor``: fair share reserved per delegator on a node.
DELEGATOR_MEMORY_OVERLOAD_FACTOR = 0.1
# Milvus ``queryCoord.collectionChannelCountFactor``: weight of a channel of this collection.
COLLECTION_CHANNEL_COUNT_FACTOR = 10.0
# Milvus ``queryCoord.scoreUnbalanceTolerationFactor``: smallest priority gap worth a move.
SCORE_UNBALANCE_TOLERATION_FACTOR = 0.05
# Milvus ``queryCoord.reverseUnBalanceTolerationFactor``: how far a move may overshoot.
REVERSE_UNBALANCE_TOLERATION_FACTOR = 1.3


@dataclass
class NodeScore:
    """A node's current score and fair share (Milvus ``nodeItem``)."""

    node_id: int
    current: float
    assigned: float = 0.0

    @property
    def priority(self) -> float:
        """How far the node is above its fair share; the lowest gets the next item."""
        return self.current - self.assigned


def segment_score(seg: SegmentItem) -> float:
    return seg.num_rows * (1 + GLOBAL_ROW_COUNT_FACTOR)


def channel_score(ch: ChannelItem, collection_id: int) -> float:
    return max(1.0, COLLECTION_CHANNEL_COUNT_FACTOR) if ch.collection_id == collection_id else 1.0


def has_enough_benefit(source: NodeScore, target: NodeScore, delta: float) -> bool:
    """Whether moving ``delta`` of score from ``source`` to ``target`` is worth it (Milvus
    ``hasEnoughBenefit``)."""
    old_gap = abs(source.priority - target.priority)
    if old_gap < target.priority * SCORE_UNBALANCE_TOLERATION_FACTOR:
        return False
    new_source, new_target = source.priority - delta, target.priority + delta
    if new_target > new_source and abs(new_source - new_target) * REVERSE_UNBALANCE_TOLERATION_FACTOR >= old_gap:
        return False
    return True


def _greedy_place(items: list[tuple[Item, int]], key: Callable[[Item], Hashable], score: Callable[[Item], float],
                  batch_cap: int | None, *, scores: dict[int, NodeScore],
                  held: dict[int, set],
                  preferred: Callable[[Item, int], bool] = lambda item, node: False,
                  credit: "HandoffCredit | None" = None) -> list[tuple[Item, int, int]]:
    """Place each ``(item, source node)`` in turn on the lowest-priority node not holding it yet, its
    priority lowered by the ``credit`` the item brings there (score that leaves the node when the item
    lands); between nodes of equal priority, one ``preferred`` for the item, then the lowest id.

    Segments and channels alike (``key`` names an item, ``score`` is what it adds to a node). A move
    (a ``source`` among ``scores``) is made only with enough benefit when ``batch_cap`` is set (an
    automatic balance round), which also stops the round once more than ``batch_cap`` are placed.
    ``scores`` and ``held`` are updated as items land. Returns ``(item, source, target)`` triples.
    """
    placed: list[tuple[Item, int, int]] = []
    for item, source in items:
        free = [s for n, s in scores.items() if key(item) not in held[n]]
        if not free:
            continue
        given = (lambda node: credit.of(item, node)) if credit is not None else (lambda node: 0.0)
        target = min(free, key=lambda s: (s.priority - given(s.node_id), not preferred(item, s.node_id), s.node_id))
        delta = score(item) - given(target.node_id)
        src = scores.get(source)
        if batch_cap is not None and src is not None and not has_enough_benefit(src, target, delta):
            continue
        placed.append((item, source, target.node_id))
        if credit is not None:
            credit.take(item, target.node_id)
        held[target.node_id].add(key(item))
        target.current += delta
        if src is not None:
            src.current -= delta
        if batch_cap is not None and len(placed) > batch_cap:
            break
    return placed


class HandoffCredit:
    """What a new segment of a channel frees on the channel's leader: a flush hands its growing rows
    off to the sealed segment, so they leave the leader's score once the segment is loaded there.
    Without it the leader looked full and the flushed segment went to another node, a gRPC hop away
    from every search of its channel.  Each growing row is credited once (``take``); segments being
    moved (not new) get none.  Owned by one placement."""

    def __init__(self, view: ClusterView, leads: dict[int, set[str]], moving: set[SegmentItem]) -> None:
        self._leads, self._moving = leads, moving
        self._growing = {(n, ch): view.channel_growing_rows(n, ch) for n, channels in leads.items() for ch in channels}

    def of(self, seg: SegmentItem, node: int) -> float:
        if seg in self._moving:
            return 0.0
        return min(self._growing.get((node, seg.channel), 0), seg.num_rows) * (1 + GLOBAL_ROW_COUNT_FACTOR)

    def take(self, seg: SegmentItem, node: int) -> None:
        key = (node, seg.channel)
        if key in self._growing and seg not in self._moving:
            self._growing[key] = max(0, self._growing[key] - seg.num_rows)


class ScoreBasedBalancer(BaseBalancer):
    name = NAME

    # --- scores -------------------------------------------------------------------------

    def _fair_shares(self, scores: dict[int, NodeScore], incoming: float) -> None:
        total = sum(s.current for s in scores.values()) + incoming
        if total <= 0:
            return
        caps = {n: self.view.node_capacity_mb(n) for n in scores}
        if all(c > 0 for c in caps.values()):
            whole = sum(caps.values())
            for n, s in scores.items():
                s.assigned = total * caps[n] / whole
        else:
            for s in scores.values():
                s.assigned = total / len(scores)

    def segment_scores(self, collection_id: int, nodes: list[int], incoming: float = 0.0) -> dict[int, NodeScore]:
        view = self.view
        scores = {}
        for n in nodes:
            own = node_rows(view, n, collection_id) + view.pending_rows(n, collection_id)
            everything = node_rows(view, n) + view.pending_rows(n)
            scores[n] = NodeScore(n, own + GLOBAL_ROW_COUNT_FACTOR * everything)
        self._fair_shares(scores, incoming)
        for n, s in scores.items():
            # a watch in flight is a delegator about to be: its node carries the reservation already (else
            # the node whose leader came up first looks fuller and gets the other channel's segments)
            delegators = view.delegators(n, collection_id) + max(0, view.pending_channels(n, collection_id))
            s.current += s.assigned * DELEGATOR_MEMORY_OVERLOAD_FACTOR * delegators
        return scores

    def channel_scores(self, collection_id: int, nodes: list[int], incoming: float = 0.0) -> dict[int, NodeScore]:
        view = self.view
        scores = {}
        for n in nodes:
            own_pending = view.pending_channels(n, collection_id)
            current = sum(channel_score(c, collection_id) for c in view.channels(n))
            current += max(1.0, COLLECTION_CHANNEL_COUNT_FACTOR) * own_pending
            current += view.pending_channels(n) - own_pending
            scores[n] = NodeScore(n, current)
        self._fair_shares(scores, incoming)
        return scores

    # --- assignment ---------------------------------------------------------------------

    def _place_segments(self, collection_id: int, items: list[tuple[SegmentItem, int]], nodes: list[int],
                        replica_id: int, *, rebalance: bool) -> list[SegmentPlan]:
        incoming = sum(segment_score(s) for s, src in items if src not in nodes)
        scores = self.segment_scores(collection_id, nodes, incoming)
        held = {n: held_segments(self.view, n, collection_id) for n in nodes}

        def order(it: tuple[SegmentItem, int]):
            src = scores.get(it[1])
            return (-it[0].num_rows, -src.priority if src is not None else 0.0, it[0].segment_id, it[1])

        # A segment on its channel's shard leader is searched without another gRPC hop: the leader gets
        # the credit of the growing rows the segment replaces there, and wins ties.
        leads = {n: {c.channel for c in self.view.channels(n, collection_id)} for n in nodes}
        placed = _greedy_place(sorted(items, key=order), lambda s: s.segment_id, segment_score,
                               SEGMENT_BATCH_SIZE if rebalance else None, scores=scores, held=held,
                               preferred=lambda seg, node: seg.channel in leads[node],
                               credit=HandoffCredit(self.view, leads, {seg for seg, src in items if src in nodes}))
        return [SegmentPlan(seg, replica_id, source, target) for seg, source, target in placed]

    def _place_channels(self, collection_id: int, items: list[tuple[ChannelItem, int]], nodes: list[int],
                        replica_id: int, *, rebalance: bool) -> list[ChannelPlan]:
        def score(ch: ChannelItem) -> float:
            return channel_score(ch, collection_id)

        scores = self.channel_scores(collection_id, nodes, sum(score(c) for c, src in items if src not in nodes))
        held = {n: held_channels(self.view, n, collection_id) for n in nodes}
        placed = _greedy_place(sorted(items, key=lambda it: (it[0].channel, it[1])), lambda c: c.channel, score,
                               CHANNEL_BATCH_SIZE if rebalance else None, scores=scores, held=held)
        return [ChannelPlan(ch, replica_id, source, target) for ch, source, target in placed]

    # --- balance ------------------------------------------------------------------------

    def _segment_moves(self, replica: ReplicaNodes, nodes: list[int], *,
                       channel: str | None = None) -> list[SegmentPlan]:
        cid = replica.collection_id
        scores = self.segment_scores(cid, nodes)
        movable = self._movable_segments(replica, nodes, channel=channel)
        picked: list[tuple[SegmentItem, int]] = []
        for score in sorted(scores.values(), key=lambda s: (-s.priority, s.node_id)):
            current = score.current
            if current <= score.assigned:
                continue
            for seg in sorted(movable[score.node_id], key=lambda s: (s.num_rows, s.segment_id)):
                picked.append((seg, score.node_id))
                if len(picked) >= SEGMENT_BATCH_SIZE:
                    break
                current -= segment_score(seg)
                if current <= score.assigned:
                    break
        if not picked:
            return []
        return self._place_segments(cid, picked, nodes, replica.replica_id, rebalance=True)

    def _channel_moves(self, replica: ReplicaNodes, nodes: list[int]) -> list[ChannelPlan]:
        cid = replica.collection_id
        scores = self.channel_scores(cid, nodes)
        movable = self._movable_channels(replica, nodes)
        picked: list[tuple[ChannelItem, int]] = []
        for score in sorted(scores.values(), key=lambda s: (-s.priority, s.node_id)):
            current = score.current
            if current <= score.assigned:
                continue
            for ch in movable[score.node_id]:
                picked.append((ch, score.node_id))
                if len(picked) >= CHANNEL_BATCH_SIZE:
                    break
                current -= channel_score(ch, cid)
                if current <= score.assigned:
                    break
        if not picked:
            return []
        return self._place_channels(cid, picked, nodes, replica.replica_id, rebalance=True)
