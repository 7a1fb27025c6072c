"""The balancer's view of the cluster (``vecgrid.cluster.querycoord.balance.ClusterView``), from live state.

Segments and channels per node come from the polled distribution; row counts from the
targets (``SegmentTarget.num_of_rows``, persisted with current) or, for a segment in no
target, from the catalog; in-flight deltas from the task scheduler; node capacity is the
GPU memory a node reports when it has GPUs, else its ``memCapacityInMB``.
"""

from __future__ import annotations

from typing import Callable

from vecgrid import errors
from vecgrid.common.scan_cost import IndexShape, index_shape
from vecgrid.cluster.querycoord.balance import ChannelItem, SegmentItem
from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.cluster.querycoord.meta.target_manager import Scope, TargetManager
from vecgrid.cluster.querycoord.session.node_manager import NodeManager
from vecgrid.cluster.querycoord.task.scheduler import TaskScheduler
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.catalog.schema_rules import estimated_row_bytes


class LiveClusterView:
    def __init__(self, nodes: NodeManager, dist: DistributionManager, targets: TargetManager,
                 scheduler: TaskScheduler, catalog: Catalog, gpu_memory_mb: Callable[[int], float]) -> None:
        self.nodes, self.dist, self.targets, self.scheduler, self.catalog = nodes, dist, targets, scheduler, catalog
        self.gpu_memory_mb = gpu_memory_mb
        self._rows: dict[int, int] = {}
        self._row_bytes: dict[int, int] = {}

    def node_state(self, node_id: int) -> str:
        info = self.nodes.get(node_id)
        return info.state if info is not None else ""

    def node_capacity_mb(self, node_id: int) -> float:
        gpu = self.gpu_memory_mb(node_id)
        if gpu > 0:
            return gpu
        dist = self.dist.node(node_id)
        return dist.mem_capacity_mb if dist is not None else 0.0

    def _num_rows(self, collection_id: int, segment_id: int) -> int:
        ref = self.targets.segments(collection_id, Scope.CURRENT_OR_NEXT).get(segment_id)
        if ref is not None and ref.num_rows:
            return ref.num_rows
        if segment_id not in self._rows:
            try:
                self._rows[segment_id] = self.catalog.get_segment(segment_id).num_of_rows
            except Exception:  # noqa: BLE001 - a segment the catalog forgot counts as empty
                self._rows[segment_id] = 0
        return self._rows[segment_id]

    def row_bytes(self, collection_id: int) -> int:
        if collection_id not in self._row_bytes:
            try:
                self._row_bytes[collection_id] = estimated_row_bytes(self.catalog.get_collection(collection_id).schema)
            except errors.CollectionNotFound:  # dropped: its segments are on their way out
                return 0
        return self._row_bytes[collection_id]

    def index_shape(self, collection_id: int) -> IndexShape:
        # read each time (an index may be dropped and created again); none: exact search, every row;
        # several vector fields: the one whose search compares the most rows
        shapes = [index_shape(i.index_params) for i in self.catalog.index_definitions(collection_id)]
        return max(shapes, key=lambda s: s.scanned_rows(1_000_000), default=IndexShape())

    def segments(self, node_id: int, collection_id: int | None = None) -> list[SegmentItem]:
        dist = self.dist.node(node_id)
        if dist is None:
            return []
        return [SegmentItem(s.ID, s.collection, s.partition, s.channel, self._num_rows(s.collection, s.ID), s.level)
                for s in dist.segments if collection_id is None or s.collection == collection_id]

    def channels(self, node_id: int, collection_id: int | None = None) -> list[ChannelItem]:
        dist = self.dist.node(node_id)
        if dist is None:
            return []
        return [ChannelItem(c.channel, c.collection) for c in dist.channels
                if collection_id is None or c.collection == collection_id]

    def growing_rows(self, node_id: int, collection_id: int) -> int:
        dist = self.dist.node(node_id)
        if dist is None:
            return 0
        return sum(v.num_of_growing_rows for v in dist.leader_views if v.collection == collection_id)

    def channel_growing_rows(self, node_id: int, channel: str) -> int:
        dist = self.dist.node(node_id)
        if dist is None:
            return 0
        return sum(v.num_of_growing_rows for v in dist.leader_views if v.channel == channel)

    def pending_rows(self, node_id: int, collection_id: int | None = None) -> int:
        return self.scheduler.pending_rows(node_id, collection_id)

    def pending_channels(self, node_id: int, collection_id: int | None = None) -> int:
        return self.scheduler.pending_channels(node_id, collection_id)

    def delegators(self, node_id: int, collection_id: int) -> int:
        dist = self.dist.node(node_id)
        return 0 if dist is None else sum(1 for v in dist.leader_views if v.collection == collection_id)

    def channel_task_in_flight(self, collection_id: int) -> bool:
        return self.scheduler.channel_in_flight(collection_id)

    def segment_task_in_flight(self, collection_id: int) -> bool:
        return self.scheduler.segment_in_flight(collection_id)
