"""Shard leaders from the distribution, as Milvus's ``utils.GetShardLeaders`` and friends.

The shard leader of (replica, channel) is the replica node watching the channel with
the highest channel version.  A leader view is *serviceable* for a target when its
node and every node it routes to are online, every sealed segment of the channel in
the target is in the view, L0 segments sit on the leader itself, and it has been
synced to a target version (> 0).
"""

from __future__ import annotations

from typing import Callable

from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.cluster.querycoord.meta.target_manager import SegmentRef
from vecgrid.proto import data_coord_pb2, query_coord_pb2


def replica_nodes(replica: query_coord_pb2.Replica) -> set[int]:
    return {*replica.nodes, *replica.ro_nodes}


def leader_of(
    dist: DistributionManager, replica: query_coord_pb2.Replica, channel: str,
    serviceable: Callable[[int, query_coord_pb2.LeaderView], bool] | None = None,
) -> tuple[int, query_coord_pb2.LeaderView] | None:
    """``(node id, leader view)`` of the replica's shard leader for ``channel``, or None.

    With ``serviceable`` (node, view), a candidate that can serve wins over a newer one that cannot,
    as Milvus's ``GetShardLeader``: during a channel move the old leader serves until the new one has
    its view.  Without it (the checkers and tasks, which set the newest leader up), the newest wins."""
    members = replica_nodes(replica)
    best: tuple[tuple[bool, int], int, query_coord_pb2.LeaderView] | None = None
    for node_id, ch in dist.channels(replica.collectionID):
        if ch.channel != channel or node_id not in members:
            continue
        view = next((v for n, v in dist.leader_views(replica.collectionID) if n == node_id and v.channel == channel),
                    None)
        if view is None:
            continue
        rank = (serviceable is not None and serviceable(node_id, view), ch.version)
        if best is None or rank > best[0]:
            best = (rank, node_id, view)
    return None if best is None else (best[1], best[2])


def view_problem(view: query_coord_pb2.LeaderView, leader: int, segments: dict[int, SegmentRef],
                 online: Callable[[int], bool], *, check_version: bool = True) -> str | None:
    """Why the view cannot serve ``segments`` (the channel's target segments), or None."""
    if not online(leader):
        return f"leader node {leader} is offline"
    if check_version and view.TargetVersion <= 0:
        return "leader view not synced to a target yet"
    for sid, ref in segments.items():
        if ref.channel != view.channel:
            continue
        entry = view.segment_dist.get(sid)
        if entry is None:
            return f"segment {sid} missing from the leader view"
        if not online(entry.nodeID):
            return f"node {entry.nodeID} holding segment {sid} is offline"
        if ref.level == data_coord_pb2.L0 and entry.nodeID != leader:
            return f"L0 segment {sid} is not on the leader"
    return None


def can_serve(segments: dict[int, SegmentRef],
              online: Callable[[int], bool]) -> Callable[[int, query_coord_pb2.LeaderView], bool]:
    """``(node, view) -> bool``: whether the leader view on ``node`` can serve ``segments``."""
    return lambda node_id, view: view_problem(view, node_id, segments, online) is None
