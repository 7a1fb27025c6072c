"""Next and current targets per collection, as Milvus's ``meta.TargetManager``.

A target is what should be served: the collection's DML channels with their seek
positions (the catalog's channel checkpoints) and the sealed segments of the loaded
partitions (``Flushed``, with level and row count), plus dropped segment ids per
channel.  Milvus pulls it from DataCoord's ``GetRecoveryInfoV2``; vecgrid reads the
catalog, which holds the same facts.

*next* is what the checkers load; the target observer promotes it to *current* (what
searches are routed by) once every channel has enough data-ready shard leaders.  Only
current is persisted (``query.CollectionTarget`` under ``querycoord-target/``), with
row counts, so a restarted coordinator routes at once and balances by real sizes.
"""

from __future__ import annotations

import enum
import threading
import time
from dataclasses import dataclass
from typing import Iterable

from vecgrid.proto import common_pb2, data_coord_pb2, query_coord_pb2
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.kv import MetaStore

_PREFIX = "querycoord-target/"
ALL_PARTITIONS = -1  # an L0 segment of partition -1 deletes in every partition of its channel


class Scope(enum.Enum):
    CURRENT = "current"
    NEXT = "next"
    CURRENT_OR_NEXT = "current_or_next"


@dataclass(frozen=True)
class SegmentRef:
    segment_id: int
    partition_id: int
    channel: str
    level: int
    num_rows: int


def segment_refs(target: query_coord_pb2.CollectionTarget | None) -> dict[int, SegmentRef]:
    out: dict[int, SegmentRef] = {}
    for ch in target.Channel_targets if target is not None else ():
        for pt in ch.partition_targets:
            for seg in pt.segments:
                out[seg.ID] = SegmentRef(seg.ID, pt.partitionID, ch.channelName, seg.level, seg.num_of_rows)
    return out


def update_version_action(target: query_coord_pb2.CollectionTarget,
                          channel: query_coord_pb2.ChannelTarget) -> query_coord_pb2.SyncAction:
    """The SyncDistribution UpdateVersion that brings a leader of ``channel`` to ``target``: its version,
    the channel's sealed and dropped segment ids, and its checkpoint."""
    action = query_coord_pb2.SyncAction(type=query_coord_pb2.UpdateVersion, TargetVersion=target.version,
                                        sealedInTarget=[s.ID for pt in channel.partition_targets for s in pt.segments],
                                        droppedInTarget=list(channel.dropped_segmentIDs))
    if channel.HasField("seek_position"):
        action.checkpoint.CopyFrom(channel.seek_position)
    return action


def _content(target: query_coord_pb2.CollectionTarget) -> bytes:
    """The target without its version, to tell whether a fresh pull changed anything."""
    bare = query_coord_pb2.CollectionTarget()
    bare.CopyFrom(target)
    bare.version = 0
    return bare.SerializeToString(deterministic=True)


class TargetManager:
    def __init__(self, store: MetaStore, catalog: Catalog) -> None:
        self._store = store
        self._catalog = catalog
        self._lock = threading.RLock()
        self._current: dict[int, query_coord_pb2.CollectionTarget] = {}
        self._next: dict[int, query_coord_pb2.CollectionTarget] = {}
        self._next_pulled_at: dict[int, float] = {}
        for _, raw in store.scan(_PREFIX):
            target = query_coord_pb2.CollectionTarget.FromString(raw)
            self._current[target.collectionID] = target

    # --- pulling --------------------------------------------------------------------------

    def build(self, cid: int, partition_ids: Iterable[int]) -> query_coord_pb2.CollectionTarget:
        """A fresh target of the collection's loaded partitions, read from the catalog."""
        wanted = set(partition_ids)
        coll = self._catalog.get_collection(cid)
        checkpoints = self._catalog.channel_checkpoints(cid)
        flushed = self._catalog.list_segments(cid, states=[common_pb2.Flushed])
        dropped = self._catalog.list_segments(cid, states=[common_pb2.Dropped])
        target = query_coord_pb2.CollectionTarget(collectionID=cid, version=time.time_ns())
        for name in coll.vchannels:
            ch = target.Channel_targets.add(channelName=name)
            if name in checkpoints:
                ch.seek_position.CopyFrom(checkpoints[name])
            ch.dropped_segmentIDs.extend(s.ID for s in dropped if s.insert_channel == name)
            by_partition: dict[int, list[data_coord_pb2.SegmentInfo]] = {}
            for seg in flushed:
                if seg.insert_channel == name and (seg.partitionID in wanted or seg.partitionID == ALL_PARTITIONS):
                    by_partition.setdefault(seg.partitionID, []).append(seg)
            for pid in sorted(by_partition):
                pt = ch.partition_targets.add(partitionID=pid)
                for seg in by_partition[pid]:
                    pt.segments.add(ID=seg.ID, level=seg.level, num_of_rows=seg.num_of_rows)
        return target

    def pull_next(self, cid: int, partition_ids: Iterable[int]) -> query_coord_pb2.CollectionTarget | None:
        """Refresh next; returns it, or None when it would equal current (nothing to promote)."""
        target = self.build(cid, partition_ids)
        with self._lock:
            self._next_pulled_at[cid] = time.monotonic()
            current = self._current.get(cid)
            if current is not None and _content(current) == _content(target):
                self._next.pop(cid, None)
                return None
            self._next[cid] = target
            return target

    def next_age(self, cid: int) -> float:
        pulled = self._next_pulled_at.get(cid)
        return float("inf") if pulled is None else time.monotonic() - pulled

    def promote(self, cid: int, target: query_coord_pb2.CollectionTarget) -> None:
        """next → current (only if ``target`` is still the next target)."""
        with self._lock:
            if self._next.get(cid) is not target:
                return
            self._store.put(f"{_PREFIX}{cid}", target.SerializeToString())
            self._current[cid] = target
            del self._next[cid]

    def remove(self, cid: int) -> None:
        with self._lock:
            self._store.delete(f"{_PREFIX}{cid}")
            self._current.pop(cid, None)
            self._next.pop(cid, None)
            self._next_pulled_at.pop(cid, None)

    def remove_partitions(self, cid: int, pids: Iterable[int]) -> None:
        """Drop partitions from both targets at once (releasing them must not wait for a pull)."""
        gone = set(pids)
        with self._lock:
            for targets in (self._current, self._next):
                target = targets.get(cid)
                if target is None:
                    continue
                trimmed = query_coord_pb2.CollectionTarget()
                trimmed.CopyFrom(target)
                for ch in trimmed.Channel_targets:
                    keep = [pt for pt in ch.partition_targets if pt.partitionID not in gone]
                    del ch.partition_targets[:]
                    ch.partition_targets.extend(keep)
                targets[cid] = trimmed
            if cid in self._current:
                self._store.put(f"{_PREFIX}{cid}", self._current[cid].SerializeToString())

    # --- reads ----------------------------------------------------------------------------

    def current(self, cid: int) -> query_coord_pb2.CollectionTarget | None:
        return self._current.get(cid)

    def next(self, cid: int) -> query_coord_pb2.CollectionTarget | None:
        return self._next.get(cid)

    def get(self, cid: int, scope: Scope) -> query_coord_pb2.CollectionTarget | None:
        if scope is Scope.CURRENT:
            return self._current.get(cid)
        if scope is Scope.NEXT:
            return self._next.get(cid)
        return self._next.get(cid) or self._current.get(cid)

    def segments(self, cid: int, scope: Scope) -> dict[int, SegmentRef]:
        if scope is Scope.CURRENT_OR_NEXT:
            return {**segment_refs(self._current.get(cid)), **segment_refs(self._next.get(cid))}
        return segment_refs(self.get(cid, scope))

    def channels(self, cid: int, scope: Scope) -> dict[str, query_coord_pb2.ChannelTarget]:
        out: dict[str, query_coord_pb2.ChannelTarget] = {}
        targets = ((self._current.get(cid), self._next.get(cid)) if scope is Scope.CURRENT_OR_NEXT
                   else (self.get(cid, scope),))
        for target in targets:
            for ch in target.Channel_targets if target is not None else ():
                out[ch.channelName] = ch
        return out
