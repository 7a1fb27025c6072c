"""What every query node reports it holds, as Milvus's ``meta.DistributionManager``.

Learnt only by polling (:mod:`.dist_handler`): per node, the sealed segments
(``SegmentVersionInfo``), the watched channels (``ChannelVersionInfo``) and the leader
views of its delegators, plus the node's memory capacity and when it last answered.
Checkers, the balancer and the target observer read from here; nothing else writes.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, field

from vecgrid.proto import query_coord_pb2


@dataclass
class NodeDistribution:
    node_id: int
    segments: list[query_coord_pb2.SegmentVersionInfo] = field(default_factory=list)
    channels: list[query_coord_pb2.ChannelVersionInfo] = field(default_factory=list)
    leader_views: list[query_coord_pb2.LeaderView] = field(default_factory=list)
    mem_capacity_mb: float = 0.0
    last_modify_ts: int = 0
    heartbeat: float = 0.0  # monotonic time of the last answer


class DistributionManager:
    def __init__(self) -> None:
        self._nodes: dict[int, NodeDistribution] = {}

    def update(self, node_id: int, reply: query_coord_pb2.GetDataDistributionResponse) -> None:
        """Record a node's answer; an empty body (nothing changed since last time) only beats the heart.

        A body replaces what was known even under the same ``lastModifyTs``: a vecgrid node moves it on
        loads, releases and deletes, not on inserts, and always answers in full, so the leader views'
        growing rows (the balancer reads them) stay current.  A reply with no body under the known
        ``lastModifyTs`` (Milvus's "nothing changed") keeps what was known."""
        dist = self._nodes.setdefault(node_id, NodeDistribution(node_id))
        dist.heartbeat = time.monotonic()
        if reply.memCapacityInMB:
            dist.mem_capacity_mb = reply.memCapacityInMB
        changed = reply.lastModifyTs != dist.last_modify_ts
        if reply.lastModifyTs and (changed or reply.segments or reply.channels or reply.leader_views):
            dist.segments = list(reply.segments)
            dist.channels = list(reply.channels)
            dist.leader_views = list(reply.leader_views)
            dist.last_modify_ts = reply.lastModifyTs

    def remove(self, node_id: int) -> None:
        self._nodes.pop(node_id, None)

    def node(self, node_id: int) -> NodeDistribution | None:
        return self._nodes.get(node_id)

    def segments(self, collection_id: int | None = None) -> list[tuple[int, query_coord_pb2.SegmentVersionInfo]]:
        return [(n, s) for n, d in sorted(self._nodes.items()) for s in d.segments
                if collection_id is None or s.collection == collection_id]

    def channels(self, collection_id: int | None = None) -> list[tuple[int, query_coord_pb2.ChannelVersionInfo]]:
        return [(n, c) for n, d in sorted(self._nodes.items()) for c in d.channels
                if collection_id is None or c.collection == collection_id]

    def leader_views(self, collection_id: int | None = None) -> list[tuple[int, query_coord_pb2.LeaderView]]:
        return [(n, v) for n, d in sorted(self._nodes.items()) for v in d.leader_views
                if collection_id is None or v.collection == collection_id]

    def segments_on(
        self, collection_id: int, nodes: Collection[int]
    ) -> dict[int, dict[int, query_coord_pb2.SegmentVersionInfo]]:
        """Where the collection's sealed segments are among ``nodes`` (one replica's, say): segment id ->
        node -> what that node reports of it, nodes in id order."""
        out: dict[int, dict[int, query_coord_pb2.SegmentVersionInfo]] = {}
        for node_id, seg in self.segments(collection_id):
            if node_id in nodes:
                out.setdefault(seg.ID, {})[node_id] = seg
        return out

    def holds(self, node_id: int, segment_id: int) -> bool:
        dist = self._nodes.get(node_id)
        return dist is not None and any(s.ID == segment_id for s in dist.segments)
