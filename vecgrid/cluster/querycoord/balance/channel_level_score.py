"""``ChannelLevelScoreBalancer``: ScoreBased, confined to each channel's own nodes.

Milvus ``channel_level_score_balancer.go``.  Choosing it (``querycoord.balancer``) also turns
on channel-exclusive replicas: a replica with at least ``channelExclusiveNodeFactor`` read-write
nodes per DML channel splits its read-write nodes among the channels and records the split in
``Replica.channel_node_infos`` (the replica manager keeps it; see
``vecgrid.cluster.querycoord.meta.replica_manager.split_channel_nodes``).  The channel and segment checkers
then place a channel's delegator and its sealed segments only on that channel's nodes.

This balancer reads the split from ``ReplicaNodes.channel_nodes``.  While some channel has no
nodes the replica is not in exclusive mode and it balances exactly as ``ScoreBasedBalancer``.
In exclusive mode each channel is balanced on its own, over its Normal nodes:

* nodes that must give up the channel's data are the replica's read-only nodes, the channel's
  nodes that are no longer Normal, and any other node of the replica that watches the channel
  or holds one of its segments (a node of another channel, or one not in the split);
* when such a node holds something of the channel, the channel (then, once no channel move is
  proposed, its segments) is moved off it onto the channel's nodes, completely and without a
  batch limit, placed score-based;
* otherwise the channel's segments are balanced score-based among the channel's nodes (the
  ScoreBased segment moves, counting only the channel's segments as movable).

As in ``BaseBalancer``, channel moves come first — proposed only while no segment move task of
the collection is in flight — and segment moves only when no channel move is proposed in this
round and no channel move task is in flight.

Left out: Milvus's per-channel automatic channel balance (``genChannelPlan``).  It spreads the
replica's copies of one channel — there is one — over the channel's nodes, so once a channel
sits on one of its own nodes it never proposes anything, and a channel elsewhere is moved by
the drain above.  Milvus also returns no plans at all for the replica when a channel has no
Normal node; vecgrid does the same.
"""

from __future__ import annotations

from vecgrid.cluster.querycoord.balance.base import NORMAL, ChannelPlan, ReplicaNodes, SegmentPlan, normal_nodes
from vecgrid.cluster.querycoord.balance.score_based import ScoreBasedBalancer

NAME = "ChannelLevelScoreBalancer"


class ChannelLevelScoreBalancer(ScoreBasedBalancer):
    name = NAME
    channel_exclusive = True

    def balance_replica(self, replica: ReplicaNodes) -> tuple[list[SegmentPlan], list[ChannelPlan]]:
        if not replica.channel_exclusive:
            return super().balance_replica(replica)
        view, cid = self.view, replica.collection_id
        members = set(replica.rw_nodes) | set(replica.ro_nodes)
        groups: list[tuple[str, list[int], list[int]]] = []   # (channel, targets, leaving holders)
        for channel, nodes in replica.channel_nodes:
            targets = normal_nodes(view, nodes)
            if not targets:
                return [], []
            leaving = set(replica.ro_nodes) | {n for n in nodes if view.node_state(n) != NORMAL}
            leaving |= members - set(nodes)
            holders = sorted(n for n in leaving if self._holds(n, cid, channel))
            groups.append((channel, targets, holders))

        channel_plans: list[ChannelPlan] = []
        if not view.segment_task_in_flight(cid):
            for channel, targets, holders in groups:
                if holders:
                    channel_plans += self._stopping_channels(replica, holders, targets, channel=channel)
        if channel_plans or view.channel_task_in_flight(cid):
            return [], channel_plans
        segment_plans: list[SegmentPlan] = []
        for channel, targets, holders in groups:
            if holders:
                segment_plans += self._stopping_segments(replica, holders, targets, channel=channel)
            elif len(targets) > 1:
                segment_plans += self._segment_moves(replica, targets, channel=channel)
        return segment_plans, channel_plans

    def _holds(self, node_id: int, collection_id: int, channel: str) -> bool:
        """Whether the node watches ``channel`` or holds one of its segments."""
        return any(c.channel == channel for c in self.view.channels(node_id, collection_id)) or \
            any(s.channel == channel for s in self.view.segments(node_id, collection_id))
