"""Loaded collections and partitions, as Milvus's ``meta.CollectionManager``.

A load is a ``query.CollectionLoadInfo`` plus one ``query.PartitionLoadInfo`` per
loaded partition, persisted under ``querycoord-collection/`` and
``querycoord-partitions/`` so a restarted coordinator serves what was loaded.  Load
percentages are kept in memory only: after a restart the collection observer
recomputes them from the targets and the distribution (a collection that was Loaded
stays Loaded, so it is searchable at once).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from vecgrid.proto import query_coord_pb2
from vecgrid.storage.kv import MetaStore

_COLL = "querycoord-collection/"
_PART = "querycoord-partitions/"


def _coll_key(cid: int) -> str:
    return f"{_COLL}{cid}"


def _part_key(cid: int, pid: int) -> str:
    return f"{_PART}{cid}/{pid}"


@dataclass
class LoadProgress:
    """What the collection observer tracks for one load (not persisted)."""
    partitions: dict[int, int] = field(default_factory=dict)   # partition id -> percentage
    refresh_progress: int = 0
    last_progress_at: float = field(default_factory=time.monotonic)


class CollectionManager:
    def __init__(self, store: MetaStore) -> None:
        self._store = store
        self._lock = threading.RLock()
        self._collections: dict[int, query_coord_pb2.CollectionLoadInfo] = {}
        self._partitions: dict[int, dict[int, query_coord_pb2.PartitionLoadInfo]] = {}
        self._progress: dict[int, LoadProgress] = {}
        for _, raw in store.scan(_COLL):
            info = query_coord_pb2.CollectionLoadInfo.FromString(raw)
            self._collections[info.collectionID] = info
            self._partitions.setdefault(info.collectionID, {})
        for _, raw in store.scan(_PART):
            part = query_coord_pb2.PartitionLoadInfo.FromString(raw)
            if part.collectionID in self._collections:
                self._partitions[part.collectionID][part.partitionID] = part
        for cid, info in self._collections.items():
            done = 100 if info.status == query_coord_pb2.Loaded else 0
            self._progress[cid] = LoadProgress(
                {pid: 100 if p.status == query_coord_pb2.Loaded else done for pid, p in self._partitions[cid].items()})

    # --- reads ----------------------------------------------------------------------------

    def get(self, cid: int) -> query_coord_pb2.CollectionLoadInfo | None:
        return self._collections.get(cid)

    def ids(self) -> list[int]:
        return sorted(self._collections)

    def partition_ids(self, cid: int) -> list[int]:
        return sorted(self._partitions.get(cid, {}))

    def partition(self, cid: int, pid: int) -> query_coord_pb2.PartitionLoadInfo | None:
        return self._partitions.get(cid, {}).get(pid)

    def progress(self, cid: int) -> LoadProgress:
        return self._progress.setdefault(cid, LoadProgress())

    def partition_percentage(self, cid: int, pid: int) -> int:
        return self.progress(cid).partitions.get(pid, 0)

    def percentage(self, cid: int) -> int:
        """Integer average of the partitions' percentages (Milvus's collection percentage)."""
        parts = [self.partition_percentage(cid, pid) for pid in self.partition_ids(cid)]
        return sum(parts) // len(parts) if parts else 0

    def is_loaded(self, cid: int) -> bool:
        info = self._collections.get(cid)
        return info is not None and info.status == query_coord_pb2.Loaded

    def is_loading(self, cid: int) -> bool:
        """The collection or one of its partitions is still loading."""
        info = self._collections.get(cid)
        return info is not None and (info.status != query_coord_pb2.Loaded or any(
            p.status != query_coord_pb2.Loaded for p in self._partitions.get(cid, {}).values()))

    # --- writes ---------------------------------------------------------------------------

    def put(
        self, info: query_coord_pb2.CollectionLoadInfo, partitions: list[query_coord_pb2.PartitionLoadInfo]
    ) -> None:
        """Record a (new or extended) load in one transaction."""
        with self._lock, self._store.txn() as txn:
            txn.put(_coll_key(info.collectionID), info.SerializeToString())
            for part in partitions:
                txn.put(_part_key(part.collectionID, part.partitionID), part.SerializeToString())
        with self._lock:
            self._collections[info.collectionID] = info
            parts = self._partitions.setdefault(info.collectionID, {})
            progress = self.progress(info.collectionID)
            for part in partitions:
                parts[part.partitionID] = part
                progress.partitions.setdefault(part.partitionID, 100 if part.status == query_coord_pb2.Loaded else 0)
            progress.last_progress_at = time.monotonic()

    def update(self, info: query_coord_pb2.CollectionLoadInfo) -> None:
        with self._lock:
            self._store.put(_coll_key(info.collectionID), info.SerializeToString())
            self._collections[info.collectionID] = info

    def remove(self, cid: int) -> None:
        with self._lock, self._store.txn() as txn:
            txn.delete(_coll_key(cid))
            for pid in self._partitions.get(cid, {}):
                txn.delete(_part_key(cid, pid))
        with self._lock:
            self._collections.pop(cid, None)
            self._partitions.pop(cid, None)
            self._progress.pop(cid, None)

    def remove_partitions(self, cid: int, pids: list[int]) -> None:
        with self._lock, self._store.txn() as txn:
            for pid in pids:
                txn.delete(_part_key(cid, pid))
        with self._lock:
            for pid in pids:
                self._partitions.get(cid, {}).pop(pid, None)
                self.progress(cid).partitions.pop(pid, None)
            # Loading a partition marks the collection Loading; once the partitions still loading are
            # gone (released, or their load timed out) the rest is Loaded again, or the collection would
            # stay Loading (not searchable) and time out as a whole.
            info = self._collections.get(cid)
            parts = self._partitions.get(cid, {})
            if info is not None and info.status != query_coord_pb2.Loaded and parts and \
                    all(p.status == query_coord_pb2.Loaded for p in parts.values()):
                loaded = query_coord_pb2.CollectionLoadInfo()
                loaded.CopyFrom(info)
                loaded.status = query_coord_pb2.Loaded
                self.update(loaded)

    def set_progress(self, cid: int, pid: int, percentage: int) -> None:
        """Record a partition's percentage (never lower while loading); persist Loaded at 100."""
        with self._lock:
            progress = self.progress(cid)
            old = progress.partitions.get(pid, 0)
            part = self.partition(cid, pid)
            if part is None or (percentage <= old and part.status != query_coord_pb2.Loaded):
                return
            if part.status == query_coord_pb2.Loaded:
                return
            progress.partitions[pid] = percentage
            progress.last_progress_at = time.monotonic()
            if percentage >= 100:
                done = query_coord_pb2.PartitionLoadInfo()
                done.CopyFrom(part)
                done.status = query_coord_pb2.Loaded
                self._store.put(_part_key(cid, pid), done.SerializeToString())
                self._partitions[cid][pid] = done
                info = self._collections.get(cid)
                if info is not None and info.status != query_coord_pb2.Loaded and all(
                        p.status == query_coord_pb2.Loaded for p in self._partitions[cid].values()):
                    loaded = query_coord_pb2.CollectionLoadInfo()
                    loaded.CopyFrom(info)
                    loaded.status = query_coord_pb2.Loaded
                    self.update(loaded)
