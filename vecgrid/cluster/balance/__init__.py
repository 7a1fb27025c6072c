"""Balancers: where segments and channels go, and which ones move (Milvus ``querycoordv2/balance``).

``make_balancer(name, view)`` picks the policy named by ``querycoord.balancer`` (Milvus
``queryCoord.balancer``): ``RoundRobinBalancer``, ``RowCountBasedBalancer``,
``ChannelLevelScoreBalancer`` (which also turns on channel-exclusive replicas, see
``channel_level_score``) or ``ScoreBasedBalancer``, the default, which also answers for any
other name (Milvus's ``MultipleTargetBalancer`` is not implemented and gets it too).
Balancers only read the ``ClusterView`` and return plans.
"""

from __future__ import annotations

from vecgrid.cluster.balance.base import (CHANNEL_BATCH_SIZE, NORMAL, SEGMENT_BATCH_SIZE, STOPPING, Balancer,
                                          ChannelItem, ChannelPlan, ClusterView, ReplicaNodes, SegmentItem,
                                          SegmentPlan)
from vecgrid.cluster.balance.channel_level_score import ChannelLevelScoreBalancer
from vecgrid.cluster.balance.round_robin import RoundRobinBalancer
from vecgrid.cluster.balance.row_count import RowCountBasedBalancer
from vecgrid.cluster.balance.score_based import ScoreBasedBalancer

BALANCERS = {cls.name: cls for cls in (RoundRobinBalancer, RowCountBasedBalancer, ScoreBasedBalancer,
                                       ChannelLevelScoreBalancer)}
DEFAULT_BALANCER = ScoreBasedBalancer.name


def make_balancer(name: str, view: ClusterView) -> Balancer:
    """The balancer called ``name`` over ``view``; ``ScoreBasedBalancer`` for unknown names."""
    return BALANCERS.get(name, ScoreBasedBalancer)(view)


__all__ = [
    "BALANCERS", "CHANNEL_BATCH_SIZE", "DEFAULT_BALANCER", "NORMAL", "SEGMENT_BATCH_SIZE", "STOPPING",
    "Balancer", "ChannelItem", "ChannelLevelScoreBalancer", "ChannelPlan", "ClusterView", "ReplicaNodes",
    "RoundRobinBalancer", "RowCountBasedBalancer", "ScoreBasedBalancer", "SegmentItem", "SegmentPlan",
    "make_balancer",
]
