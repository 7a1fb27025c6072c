"""Balancers: where segments and channels go, and which ones move (Milvus ``querycoordv2/balance``).

``balancer_named(name)`` picks the policy named by ``querycoord.balancer`` (Milvus
``queryCoord.balancer``): ``LocalityAwareBalancer``, vecgrid's default (sealed segments on their
channel's shard leader while it has room, see ``locality``), or one of Milvus's:
``RoundRobinBalancer``, ``RowCountBasedBalancer``, ``ChannelLevelScoreBalancer`` (which also turns
on channel-exclusive replicas, see ``channel_level_score``) or ``ScoreBasedBalancer``, Milvus's
default, which also answers for any other name, as in Milvus (its ``MultipleTargetBalancer`` is
not implemented and gets it too).  ``from_settings(view, settings)`` builds one.
Balancers only read the ``ClusterView`` and return plans.
"""

from __future__ import annotations

from vecgrid.cluster.querycoord.balance.base import (CHANNEL_BATCH_SIZE, NORMAL, SEGMENT_BATCH_SIZE, STOPPING, Balancer,
                                                     ChannelItem, ChannelPlan, ClusterView, ReplicaNodes, SegmentItem,
                                                     SegmentPlan)
from vecgrid.cluster.querycoord.balance.channel_level_score import ChannelLevelScoreBalancer
from vecgrid.cluster.querycoord.balance.locality import LocalityAwareBalancer
from vecgrid.cluster.querycoord.balance.round_robin import RoundRobinBalancer
from vecgrid.cluster.querycoord.balance.row_count import RowCountBasedBalancer
from vecgrid.cluster.querycoord.balance.score_based import ScoreBasedBalancer

BALANCERS = {cls.name: cls for cls in (RoundRobinBalancer, RowCountBasedBalancer, ScoreBasedBalancer,
                                       ChannelLevelScoreBalancer, LocalityAwareBalancer)}
DEFAULT_BALANCER = LocalityAwareBalancer.name


def balancer_named(name: str) -> type[Balancer]:
    """The balancer class called ``name``; ``ScoreBasedBalancer`` for unknown names."""
    return BALANCERS.get(name, ScoreBasedBalancer)


def make_balancer(name: str, view: ClusterView) -> Balancer:
    """The balancer called ``name`` over ``view``, with its policy's defaults."""
    return balancer_named(name)(view)


__all__ = [
    "BALANCERS", "CHANNEL_BATCH_SIZE", "DEFAULT_BALANCER", "NORMAL", "SEGMENT_BATCH_SIZE", "STOPPING",
    "Balancer", "ChannelItem", "ChannelLevelScoreBalancer", "ChannelPlan", "ClusterView", "LocalityAwareBalancer",
    "ReplicaNodes", "RoundRobinBalancer", "RowCountBasedBalancer", "ScoreBasedBalancer", "SegmentItem", "SegmentPlan",
    "balancer_named", "make_balancer",
]
