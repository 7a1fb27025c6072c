"""Sealed segments a QueryNode holds (Milvus's ``SegmentManager``, sealed half).

A :class:`SealedSegment` is one loaded segment: its identity (collection, partition,
insert channel, version, level), and per loaded vector field the engine's
:class:`~vecgrid.gpu.loaded_segment.LoadedSegment` (faiss index on a GPU or in host memory plus
the rows' keys, timestamps, scalar columns and deletes).  A collection with several
vector fields gets one engine segment per field; each keeps its own copy of the
scalar columns, and deletes are applied to all of them.

An **L0 segment** (Milvus 2.4's carrier of a channel's deletes) has no rows and no
index: it holds only its delete log, which the node applies to every other sealed
segment of the same channel (all partitions, or the L0 segment's own partition).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from vecgrid import errors
from vecgrid.common.keys import PLACEMENT_PARAM
from vecgrid.proto import common_pb2, data_coord_pb2, query_coord_pb2

ALL_PARTITIONS = -1  # an L0 segment of partition -1 deletes in every partition of its channel


@dataclass
class DeleteLog:
    """Deletes ``(pk, ts)`` as a list of array pairs (appended, never rewritten)."""

    parts: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    def add(self, pks: np.ndarray, timestamps: np.ndarray) -> None:
        if len(pks):
            self.parts.append((pks, timestamps))

    def extend(self, other: "DeleteLog") -> None:
        self.parts.extend(other.parts)

    def __len__(self) -> int:
        return sum(len(p) for p, _ in self.parts)

    @property
    def max_ts(self) -> int:
        return max((int(t.max()) for _, t in self.parts if len(t)), default=0)

    def arrays(self) -> tuple[np.ndarray, np.ndarray] | None:
        """All deletes as one ``(pks, ts)`` pair, ``None`` when empty."""
        parts = [p for p in self.parts if len(p[0])]
        if not parts:
            return None
        kinds = {p.dtype.kind for p, _ in parts}
        if kinds & {"U", "O", "S"}:
            pks = np.concatenate([p.astype(str) for p, _ in parts])
        else:
            pks = np.concatenate([p.astype(np.int64, copy=False) for p, _ in parts])
        return pks, np.concatenate([t.astype(np.uint64, copy=False) for _, t in parts])

    def nbytes(self) -> int:
        return sum(p.nbytes + t.nbytes for p, t in self.parts)


class SealedSegment:
    """One loaded sealed segment (see the module docstring)."""

    def __init__(self, *, segment_id: int, collection_id: int, partition_id: int, channel: str,
                 version: int, level: int, num_rows: int, engines: dict[int, Any],
                 index_infos: dict[int, query_coord_pb2.FieldIndexInfo],
                 load_info: query_coord_pb2.SegmentLoadInfo, deltalog: DeleteLog | None = None) -> None:
        self.segment_id = segment_id
        self.collection_id = collection_id
        self.partition_id = partition_id
        self.channel = channel
        self.version = version
        self.level = level
        self.num_rows = num_rows
        self.engines = engines            # vector field id -> vecgrid.gpu.loaded_segment.LoadedSegment
        self.index_infos = index_infos    # vector field id -> FieldIndexInfo as loaded
        self.load_info = load_info        # what it was loaded from (Index-scope reloads read it again)
        self.deltalog = deltalog or DeleteLog()   # deletes from its own delete logs (L0: its content)
        self.runtime_deletes = DeleteLog()        # deletes applied after loading (Delete RPCs, L0 segments)
        # COSINE indexes hold unit-length vectors: the original norms give the stored vectors back
        self.vector_norms: dict[int, np.ndarray] = {}
        self.loaded_at = time.time()
        self.released = False

    # -- description -------------------------------------------------------------------------
    @property
    def is_l0(self) -> bool:
        return self.level == data_coord_pb2.L0

    @property
    def rows(self) -> Any:
        """The :class:`~vecgrid.gpu.rows.RowStore` of the segment (``None`` for L0 segments)."""
        for fid in sorted(self.engines):
            return self.engines[fid].rows
        return None

    def engine(self, field_id: int) -> Any:
        """The engine segment searching vector field ``field_id``."""
        try:
            return self.engines[field_id]
        except KeyError:
            raise errors.ParameterInvalid(
                f"vector field {field_id} is not loaded in segment {self.segment_id}", segment=self.segment_id,
                field=field_id) from None

    @property
    def placement(self) -> str:
        """``GPU``, ``CPU`` or ``GPU+CPU`` (several vector fields placed apart); ``CPU`` for L0."""
        kinds = {e.placement for e in self.engines.values()}
        if not kinds:
            return "CPU"
        return kinds.pop() if len(kinds) == 1 else "GPU+CPU"

    @property
    def last_delta_timestamp(self) -> int:
        return max(self.deltalog.max_ts, self.runtime_deletes.max_ts)

    def memory_bytes(self) -> int:
        engines = sum(e.memory_bytes() for e in self.engines.values())
        norms = sum(v.nbytes for v in self.vector_norms.values())
        return engines + norms + self.deltalog.nbytes() + self.runtime_deletes.nbytes()

    def visible_rows(self, timestamp: int | None = None) -> int:
        """Rows a request at ``timestamp`` sees (inserted by then, not deleted by then)."""
        rows = self.rows
        return 0 if rows is None else rows.count(None, timestamp)

    def info(self) -> dict[str, Any]:
        return {"segment_id": self.segment_id, "collection_id": self.collection_id,
                "partition_id": self.partition_id, "channel": self.channel, "version": self.version,
                "level": data_coord_pb2.SegmentLevel.Name(self.level), "num_rows": self.num_rows,
                "placement": self.placement, "memory_bytes": self.memory_bytes(),
                "engines": {fid: e.info for fid, e in self.engines.items()}}

    # -- changes -------------------------------------------------------------------------------
    def vectors(self, field_id: int, rows: np.ndarray) -> Any:
        """The stored vectors of ``field_id`` at ``rows`` as a FieldColumn (as inserted, also for COSINE)."""
        (col,) = self.engine(field_id).rows.fetch(rows, [field_id])
        norms = self.vector_norms.get(field_id)
        if norms is not None:
            col.values = col.values * norms[rows][:, None]
        return col

    def delete(self, pks: np.ndarray, timestamps: np.ndarray) -> int:
        """Apply deletes to every engine segment; returns the rows they hide."""
        hidden = 0
        for e in self.engines.values():
            hidden = e.delete(pks, timestamps)
        self.runtime_deletes.add(pks, timestamps)
        return hidden

    def release(self) -> None:
        """Free indexes and rows (waits for searches in flight)."""
        if self.released:
            return
        self.released = True
        for e in self.engines.values():
            e.release()

    # -- protobuf ------------------------------------------------------------------------------
    def version_info(self) -> query_coord_pb2.SegmentVersionInfo:
        """The segment as GetDataDistribution reports it."""
        out = query_coord_pb2.SegmentVersionInfo(
            ID=self.segment_id, collection=self.collection_id, partition=self.partition_id,
            channel=self.channel, version=self.version, last_delta_timestamp=self.last_delta_timestamp,
            level=self.level)
        for fid, info in self.index_infos.items():
            out.index_info[fid].CopyFrom(info)
        # Where each vector field is served from: the coordinator's GetPartitionStates tells InGPU
        # from InMemory by it (Milvus's FieldIndexInfo has no such field; index_params is free-form).
        for fid, engine in self.engines.items():
            entry = out.index_info[fid]
            entry.fieldID = fid
            entry.index_params.append(common_pb2.KeyValuePair(key=PLACEMENT_PARAM, value=engine.placement))
        return out

    def segment_info(self, node_id: int) -> query_coord_pb2.SegmentInfo:
        """The segment as QueryNode.GetSegmentInfo reports it."""
        out = query_coord_pb2.SegmentInfo(
            segmentID=self.segment_id, collectionID=self.collection_id, partitionID=self.partition_id,
            nodeID=node_id, node_ids=[node_id], mem_size=self.memory_bytes(), num_rows=self.num_rows,
            dmChannel=self.channel, segment_state=common_pb2.Sealed, level=self.level,
            compactionFrom=list(self.load_info.compactionFrom),
            createdByCompaction=bool(len(self.load_info.compactionFrom)))
        for fid in sorted(self.index_infos):
            info = self.index_infos[fid]
            out.index_infos.append(info)
            out.index_name, out.indexID = info.index_name, info.indexID
        out.enable_index = bool(self.index_infos)
        return out

    def __repr__(self) -> str:
        return (f"SealedSegment(id={self.segment_id}, collection={self.collection_id}, "
                f"partition={self.partition_id}, channel={self.channel!r}, rows={self.num_rows}, "
                f"{self.placement})")


class SegmentManager:
    """The sealed segments of one node, by id."""

    def __init__(self) -> None:
        self._segments: dict[int, SealedSegment] = {}

    def __len__(self) -> int:
        return len(self._segments)

    def __contains__(self, segment_id: int) -> bool:
        return segment_id in self._segments

    def get(self, segment_id: int) -> SealedSegment | None:
        return self._segments.get(segment_id)

    def require(self, segment_id: int) -> SealedSegment:
        """The segment, or Milvus's ``segment not loaded`` (601)."""
        seg = self._segments.get(segment_id)
        if seg is None:
            raise errors.SegmentNotLoaded(segment=segment_id)
        return seg

    def put(self, seg: SealedSegment) -> SealedSegment | None:
        """Store ``seg``; returns the segment it replaces (the caller releases it)."""
        old = self._segments.get(seg.segment_id)
        self._segments[seg.segment_id] = seg
        return old

    def remove(self, segment_id: int) -> SealedSegment | None:
        return self._segments.pop(segment_id, None)

    def list(self, collection_id: int | None = None, *, partitions: Iterable[int] | None = None,
             channels: Iterable[str] | None = None, level: int | None = None,
             exclude_l0: bool = False) -> list[SealedSegment]:
        parts = None if partitions is None else set(partitions)
        chans = None if channels is None else set(channels)
        out = [s for s in self._segments.values()
               if (collection_id is None or s.collection_id == collection_id)
               and (parts is None or s.partition_id in parts)
               and (chans is None or s.channel in chans)
               and (level is None or s.level == level)
               and not (exclude_l0 and s.is_l0)]
        return sorted(out, key=lambda s: s.segment_id)

    def l0_deletes(self, collection_id: int, channel: str, partition_id: int) -> DeleteLog:
        """Deletes of the local L0 segments that apply to a segment of ``channel`` / ``partition_id``."""
        log = DeleteLog()
        for s in self.list(collection_id, channels=[channel], level=data_coord_pb2.L0):
            if s.partition_id in (ALL_PARTITIONS, partition_id):
                log.extend(s.deltalog)
        return log
