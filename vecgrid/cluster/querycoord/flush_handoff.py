"""What DataCoord's flush asks of the QueryCoord, as two plain callables (the coordinators sit on one
layer and do not import each other; :mod:`vecgrid.deploy` hands these over).

* :meth:`FlushHandoff.pull_target` — a flush published segments: pull a next target now rather than
  at the target observer's next interval, so the shard leaders load the sealed copies (and drop the
  growing rows of the same ids) promptly.  Nothing for a collection that is not loaded: it has no
  targets, and its first one is read from the catalog when it is loaded.
* :meth:`FlushHandoff.sealed_copies_serve` — whether the leaders serve the sealed copies of flushed
  segments, so the appender may stop counting their rows as growing memory.  The target observer
  promotes a target to current only once every leader's view holds all its segments, and a leader
  drops a segment's growing rows when it adopts the sealed copy; so a segment in the current target
  (or among its dropped ones: a compaction replaced it, and UpdateVersion excluded its growing rows)
  is no longer growing anywhere.  A collection that is not loaded holds no growing rows; a segment
  of a partition that is not loaded has none either.
* :meth:`FlushHandoff.segments_in_targets` — every segment a current or next target names: garbage
  collection keeps their files.

Reads the QueryCoord's meta only; runs on the event loop that owns it.
"""

from __future__ import annotations

from typing import Sequence

from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.target_manager import ALL_PARTITIONS, Scope, TargetManager, segment_refs
from vecgrid.cluster.querycoord.observers.target_observer import TargetObserver
from vecgrid.proto import data_coord_pb2


class FlushHandoff:
    def __init__(self, collections: CollectionManager, targets: TargetManager, observer: TargetObserver) -> None:
        self.collections, self.targets, self.observer = collections, targets, observer

    def pull_target(self, collection_id: int) -> None:
        if collection_id not in self.collections.ids():
            return
        self.targets.pull_next(collection_id, self.collections.partition_ids(collection_id))
        self.observer.poke()

    def sealed_copies_serve(self, collection_id: int, segments: Sequence[data_coord_pb2.SegmentInfo]) -> bool:
        if collection_id not in self.collections.ids():
            return True
        partitions = set(self.collections.partition_ids(collection_id))
        wanted = [s.ID for s in segments if s.partitionID in partitions or s.partitionID == ALL_PARTITIONS]
        if not wanted:
            return True
        current = self.targets.current(collection_id)
        if current is None:
            return False
        served = set(segment_refs(current))
        for ch in current.Channel_targets:
            served.update(ch.dropped_segmentIDs)
        return all(sid in served for sid in wanted)

    def segments_in_targets(self) -> set[int]:
        return {sid for cid in self.collections.ids() for sid in self.targets.segments(cid, Scope.CURRENT_OR_NEXT)}
