"""The distribution of one shard (Milvus's delegator ``distribution``): which segment serves where.

A :class:`ShardDistribution` is the **leader view** of a channel: sealed segment id → (node id,
version, partition), the target version and the partition-stats versions.  ``LoadSegments`` /
``ReleaseSegments`` with ``need_transfer`` and ``SyncDistribution`` / ``SyncReplicaSegments``
change it (the :class:`~vecgrid.cluster.querynode.delegator.delegator.ShardDelegator` applies
them); a read snapshots it to fan out (:meth:`ShardDistribution.readable`).  The growing segments
are the channel pipeline's: :func:`growing_views` shows them to the search and retrieve code as
sealed ones, and :meth:`ShardDistribution.leader_view` reports them.

**Compactions** hand off through the view: a compaction's result is loaded while its sources still
serve (the current target names them until the next one is promoted), so while a segment compacted
from others (``compactionFrom`` of its load info) is in the view, those others are not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Any, Sequence

import numpy as np

from vecgrid.cluster.querynode.pipeline import ChannelPipeline
from vecgrid.cluster.querynode.segments import ALL_PARTITIONS
from vecgrid.gpu.growing import GrowingSegment
from vecgrid.proto import msg_pb2, query_coord_pb2


# --- growing segments seen as sealed ones by the worker-side search / retrieve code -------------

class GrowingView:
    """A :class:`~vecgrid.gpu.growing.GrowingSegment` with the few attributes the search and
    retrieve helpers read from a SealedSegment.

    One view serves one read: it takes the row count once (the pipeline thread keeps inserting),
    and the read's search, query, count and ``all_search_count`` all stop at :attr:`num_rows`."""

    is_l0 = False

    def __init__(self, segment_id: int, partition_id: int, growing: GrowingSegment) -> None:
        self.segment_id = segment_id
        self.partition_id = partition_id
        self.growing = growing.snapshot()  # the segment as this read sees it

    @property
    def rows(self) -> Any:
        return self.growing.rows

    @property
    def batch_identity(self) -> tuple[str, int, int]:
        """Equal for every read's view of the same rows: such reads may share one engine search
        (:class:`~vecgrid.cluster.querynode.search.SearchBatcher`)."""
        return ("growing", self.segment_id, self.num_rows)

    @property
    def num_rows(self) -> int:
        return self.growing.num_rows

    @property
    def placement(self) -> str:
        return self.growing.placement

    def engine(self, field_id: int) -> Any:
        if field_id != self.growing.field_id:
            return self.growing.other_field(field_id)   # its stored column, searched exactly
        return self.growing

    def vectors(self, field_id: int, rows: np.ndarray) -> Any:
        (col,) = self.growing.fetch(rows, [field_id])
        return col

    def visible_rows(self, timestamp: int | None = None) -> int:
        return self.growing.count(None, timestamp)


def growing_views(pipeline: ChannelPipeline | None, partitions: AbstractSet[int] | None) -> list[GrowingView]:
    """A snapshot of the pipeline's growing segments of ``partitions`` (None: all)."""
    if pipeline is None:
        return []
    return [GrowingView(sid, part, g) for sid, part, g in pipeline.growing_segments()
            if partitions is None or part in partitions]


@dataclass(frozen=True)
class SealedEntry:
    node_id: int
    version: int
    partition_id: int


# --- the view ----------------------------------------------------------------------------------

class ShardDistribution:
    """The leader view of one channel: ``sealed`` (segment → :class:`SealedEntry`), what the
    compaction results in it replace, ``target_version``, ``partition_stats`` and the
    ``seek_position`` the growing segments started from.

    Owner: the node's event loop.  The delegator reads and changes it there only; methods do not
    await, so a change is seen whole.  The growing segments are not held here (the pipeline thread
    owns them): :func:`growing_views` and :meth:`leader_view` read the pipeline's snapshots."""

    def __init__(self, collection_id: int, channel: str) -> None:
        self.collection_id = collection_id
        self.channel = channel
        self.sealed: dict[int, SealedEntry] = {}
        self.target_version = 0
        self.partition_stats: dict[int, int] = {}
        self.seek_position: msg_pb2.MsgPosition | None = None
        # segment -> the segments compacted into it (transitively): not read while it is in the view
        self._replaces: dict[int, frozenset[int]] = {}

    def clear(self) -> None:
        """Forget every sealed segment (a failed leader frees its view)."""
        self.sealed, self._replaces = {}, {}

    # --- lookups ---------------------------------------------------------------------------------

    def node_of(self, segment_id: int) -> int | None:
        """Where the view routes a segment now (None: no longer in the view)."""
        entry = self.sealed.get(segment_id)
        return None if entry is None else entry.node_id

    def elsewhere(self, node_id: int, partition_id: int) -> set[int]:
        """The sealed segments on other nodes than ``node_id``, of ``partition_id`` (ALL_PARTITIONS: any)."""
        return {sid for sid, e in list(self.sealed.items())
                if e.node_id != node_id and partition_id in (ALL_PARTITIONS, e.partition_id)}

    def readable(self, partitions: AbstractSet[int] | None) -> dict[int, list[int]]:
        """The view's readable segments by node: all but those replaced by a compaction result in the view."""
        out: dict[int, list[int]] = {}
        view = dict(self.sealed)
        replaces = self._replaces
        replaced = set().union(*(replaces.get(sid, ()) for sid in view)) if replaces else ()
        for sid, e in view.items():
            if sid not in replaced and (partitions is None or e.partition_id in partitions or e.partition_id < 0):
                out.setdefault(e.node_id, []).append(sid)
        return out

    # --- changes ---------------------------------------------------------------------------------

    def serve(self, segment_id: int, entry: SealedEntry) -> None:
        """Route ``segment_id`` to ``entry`` (SyncDistribution Set / Amend, a partial load)."""
        self.sealed[segment_id] = entry

    def join(self, node_id: int, version: int, infos: Sequence[query_coord_pb2.SegmentLoadInfo]) -> None:
        """Sealed segments loaded on ``node_id`` join the view, with what they were compacted from."""
        self._record_compactions(infos)
        for info in infos:
            self.sealed[info.segmentID] = SealedEntry(node_id, version, info.partitionID)

    def drop(self, segment_id: int, node_id: int | None) -> bool:
        """Take ``segment_id`` out of the view if ``node_id`` serves it (None: any node); whether it was."""
        e = self.sealed.get(segment_id)
        if e is None or node_id not in (None, e.node_id):
            return False
        del self.sealed[segment_id]
        return True

    def sync_replica_segments(self, req: query_coord_pb2.SyncReplicaSegmentsRequest) -> None:
        """Replace the sealed part of the view."""
        self.sealed = {}
        for rs in req.replica_segments:
            for i, sid in enumerate(rs.segment_ids):
                version = rs.versions[i] if i < len(rs.versions) else 0
                self.sealed[sid] = SealedEntry(rs.node_id, version, rs.partition_id)

    def _record_compactions(self, infos: Sequence[query_coord_pb2.SegmentLoadInfo]) -> None:
        """Remember what segments joining the view were compacted from.  Until the next target is current
        the view holds a compaction's sources and its result together (both loaded, deletes reaching
        both), and a read must count their rows once: the result is read, the sources are not — and are
        again should the result leave the view first (Milvus's delegator reads only its current target
        version's segments; the sources stay in the view for the coordinator's current target)."""
        self._replaces = {sid: r for sid, r in self._replaces.items() if sid in self.sealed}
        for info in infos:
            if len(info.compactionFrom):
                sources = frozenset(info.compactionFrom)
                self._replaces[info.segmentID] = sources.union(*(self._replaces.get(s, ()) for s in sources))

    # --- the report ------------------------------------------------------------------------------

    def leader_view(self, pipeline: ChannelPipeline | None) -> query_coord_pb2.LeaderView:
        """The view as GetDataDistribution reports it, with the growing segments of ``pipeline``."""
        view = query_coord_pb2.LeaderView(
            collection=self.collection_id, channel=self.channel, TargetVersion=self.target_version
        )
        for sid, e in self.sealed.items():
            view.segment_dist[sid].CopyFrom(query_coord_pb2.SegmentDist(nodeID=e.node_id, version=e.version))
        if pipeline is not None:
            growing = pipeline.growing_segments()
            view.growing_segmentIDs.extend(sid for sid, _, _ in growing)
            for sid, _, _ in growing:
                pos = view.growing_segments[sid]
                pos.channel_name = self.channel
                pos.timestamp = pipeline.tsafe
                if self.seek_position is not None:
                    pos.msgID = self.seek_position.msgID
            view.num_of_growing_rows = sum(g.num_rows for _, _, g in growing)
        for pid, v in self.partition_stats.items():
            view.partition_stats_versions[pid] = v
        return view
