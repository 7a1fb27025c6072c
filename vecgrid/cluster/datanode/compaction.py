"""Compaction task handlers (Milvus's DataNode compactors), run as Dask tasks on a worker.

DataCoord (:mod:`vecgrid.cluster.datacoord.compaction`) decides a plan, reads everything the plan
needs from the catalog into the plain values below (segment file records, preallocated segment ids)
and submits ``compact-<plan>``; the handler reads the source files, writes the new segments' files
under the segment root with :mod:`vecgrid.storage.segment_files` and returns their records.  It
never touches the catalog: the coordinator publishes the result, and until it does nobody knows the
new files (a plan that fails or whose coordinator dies leaves only unreferenced files behind, which
garbage collection removes).  A handler may run twice (a retry, a worker lost mid-task): it writes
the same files again under the same paths, atomically, so the second run just replaces the first.

**Which delete hides which row.**  A delete ``(pk, ts)`` hides a row of that key written *before*
it (row ``Timestamp`` < ``ts``), as the query nodes apply deletes (:mod:`vecgrid.gpu.rows`).  An
upsert writes its delete and its insert at one timestamp, so the delete must not hide its own row;
hence strictly before.  Reads never go back before a flushed delete (a read's MVCC timestamp is
the leader's tsafe, past every flushed record), so a hidden row may be dropped for good.

* :func:`compact_l0` — an L0 plan: the deletes of a channel's L0 segments are written into the delete
  logs of the sealed segments whose rows they hide.  Segment files are immutable, so each such
  segment is *rewritten* under a new id: the same data file (copied byte for byte), its own delete
  log plus the L0 deletes that hide rows its own log does not, and its index files (copied; the row
  order is unchanged, so they stay right).  The coordinator publishes every rewritten segment with
  ``compactionFrom`` = its source, and the L0 segments dropped, in one catalog transaction.
* :func:`compact_mix` — a mix plan: small segments of one partition and channel merged into one, the
  rows hidden by their delete logs and by the channel's L0 deletes left out, every other row kept
  with its ``Timestamp`` (so MVCC reads stay right).  No index is copied (row positions change): the
  new segment is served by exact search until its index is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from vecgrid.common.faults import crash_point
from vecgrid.storage import segment_files
from vecgrid.storage.backend import canonical_root
from vecgrid.storage.segment_files import DATA_FILE, TIMESTAMP_FIELD, FileInfo, SegmentFiles

ALL_PARTITIONS = -1             # an L0 segment of partition -1 deletes in every partition of its channel


# --- requests and results (plain values: Dask pickles them) -------------------------------------------

@dataclass(frozen=True)
class DeleteSource:
    """An L0 segment: its delete log and the partition it deletes in (-1: every partition)."""

    segment_id: int
    partition_id: int
    record: SegmentFiles

    def applies_to(self, partition_id: int) -> bool:
        return self.partition_id in (ALL_PARTITIONS, partition_id)


@dataclass(frozen=True)
class L0Plan:
    """Write the deletes of ``deletes`` into the sealed segments of ``channel`` they hit.

    ``sealed`` are the channel's sealed (non-L0) segments when the plan was made: every row an L0
    segment can hide was flushed no later than the L0 segment itself (a flush publishes a range's rows
    and its deletes together), so none published later can be hit.  ``new_ids`` gives each of them the
    id of its rewritten copy (allocated by the coordinator; unused for a segment nothing hits)."""

    plan_id: int
    collection_id: int
    channel: str
    pk_name: str
    root: str
    deletes: tuple[DeleteSource, ...]
    sealed: tuple[SegmentFiles, ...]
    new_ids: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Rewritten:
    """A sealed segment rewritten with more deletes: ``record`` is the new segment's files."""

    source_id: int
    record: SegmentFiles
    new_deletes: int   # delete log entries added from the L0 segments


@dataclass(frozen=True)
class L0Result:
    plan_id: int
    rewritten: tuple[Rewritten, ...]


@dataclass(frozen=True)
class MixPlan:
    """Merge ``sources`` (one partition and channel) into segment ``result_id``, deleted rows dropped.

    ``deletes``: the channel's L0 segments that delete in the partition."""

    plan_id: int
    collection_id: int
    partition_id: int
    channel: str
    pk_name: str
    root: str
    sources: tuple[SegmentFiles, ...]
    deletes: tuple[DeleteSource, ...]
    result_id: int


@dataclass(frozen=True)
class MixResult:
    """``record`` is None when every row of the sources was deleted (nothing to publish)."""

    plan_id: int
    record: SegmentFiles | None
    rows_in: int
    rows_out: int


# --- which delete hides which row ----------------------------------------------------------------------

def _keys(column: Any) -> np.ndarray:
    """Primary keys as a numpy array that sorts and compares: int64, or fixed-width unicode."""
    if isinstance(column, (pa.ChunkedArray, pa.Array)):
        column = column.to_numpy(zero_copy_only=False)
    arr = np.asarray(column)
    if arr.dtype.kind in "OSU":
        return arr.astype(str)
    return arr.astype(np.int64, copy=False)


@dataclass(frozen=True)
class Deletes:
    """Delete entries ``(pk, ts)``, and per key its latest delete (keys sorted) to look rows up in."""

    pks: np.ndarray
    ts: np.ndarray

    @classmethod
    def of(cls, parts: list[tuple[np.ndarray, np.ndarray]], like: np.ndarray) -> Deletes:
        parts = [(p, t) for p, t in parts if len(p)]
        if not parts:
            return cls(like[:0], np.empty(0, np.uint64))
        return cls(np.concatenate([p for p, _ in parts]), np.concatenate([t for _, t in parts]).astype(np.uint64))

    def __len__(self) -> int:
        return len(self.pks)

    def latest(self) -> tuple[np.ndarray, np.ndarray]:
        """``(unique keys sorted, latest delete ts of each)``."""
        if not len(self.pks):
            return self.pks, self.ts
        order = np.argsort(self.ts, kind="stable")
        order = order[np.argsort(self.pks[order], kind="stable")]
        pks, ts = self.pks[order], self.ts[order]
        last = np.ones(len(pks), bool)
        last[:-1] = pks[1:] != pks[:-1]
        return pks[last], ts[last]

    def hidden(self, row_pks: np.ndarray, row_ts: np.ndarray) -> np.ndarray:
        """Which rows a delete hides: one of their key later than the row."""
        keys, latest = self.latest()
        if not len(keys) or not len(row_pks):
            return np.zeros(len(row_pks), bool)
        pos = np.minimum(np.searchsorted(keys, row_pks), len(keys) - 1)
        return (keys[pos] == row_pks) & (row_ts < latest[pos])

    def hiding_any(self, row_pks: np.ndarray, row_ts: np.ndarray) -> np.ndarray:
        """Which entries hide at least one of the rows (``row_pks``/``row_ts``)."""
        if not len(self.pks) or not len(row_pks):
            return np.zeros(len(self.pks), bool)
        # per key, the earliest row: an entry hides a row of its key iff it is later than that one
        order = np.argsort(row_ts, kind="stable")
        order = order[np.argsort(row_pks[order], kind="stable")]
        keys, ts = row_pks[order], row_ts[order]
        first = np.ones(len(keys), bool)
        first[1:] = keys[1:] != keys[:-1]
        keys, earliest = keys[first], ts[first]
        pos = np.minimum(np.searchsorted(keys, self.pks), len(keys) - 1)
        return (keys[pos] == self.pks) & (earliest[pos] < self.ts)

    def select(self, mask: np.ndarray) -> Deletes:
        return Deletes(self.pks[mask], self.ts[mask])


def _read_deletes(record: SegmentFiles) -> tuple[np.ndarray, np.ndarray]:
    table = segment_files.read_deltalog(record)
    return _keys(table.column("pk")), table.column("ts").to_numpy().astype(np.uint64)


def _row_keys(record: SegmentFiles, pk_name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(pks, insert timestamps)`` of a segment's rows; only those two columns are decoded."""
    try:
        table = segment_files.read_segment(record, [pk_name, TIMESTAMP_FIELD])
    except KeyError:  # written without insert timestamps: older than every delete
        table = segment_files.read_segment(record, [pk_name])
    return _keys(table.column(pk_name)), _timestamps(table)


def _timestamps(table: pa.Table) -> np.ndarray:
    if TIMESTAMP_FIELD not in table.column_names:
        return np.zeros(table.num_rows, np.uint64)
    return table.column(TIMESTAMP_FIELD).to_numpy().astype(np.uint64)


def _l0_deletes(sources: tuple[DeleteSource, ...], partition_id: int, like: np.ndarray) -> Deletes:
    return Deletes.of([_read_deletes(s.record) for s in sources if s.applies_to(partition_id)], like)


# --- L0 compaction -----------------------------------------------------------------------------------

def compact_l0(plan: L0Plan) -> L0Result:
    """Rewrite each sealed segment the plan's L0 deletes hit (see the module docstring)."""
    from vecgrid.gpu.device import transient_heap   # the coordinator imports this module for the plans

    with transient_heap():   # on a query node's worker: the segments' tables go back to the system after
        return _compact_l0(plan)


def _compact_l0(plan: L0Plan) -> L0Result:
    read = {s.segment_id: _read_deletes(s.record) for s in plan.deletes}
    hits = []
    for seg in plan.sealed:
        pks, ts = _row_keys(seg, plan.pk_name)
        own = Deletes.of([_read_deletes(seg)], pks)
        l0 = Deletes.of([read[s.segment_id] for s in plan.deletes if s.applies_to(seg.partition_id)], pks)
        alive = ~own.hidden(pks, ts)
        useful = l0.select(l0.hiding_any(pks[alive], ts[alive]))
        if len(useful):
            hits.append((seg, own, useful))
    crash_point("compaction-task")   # a worker lost mid-task: Dask runs it again elsewhere
    return L0Result(plan.plan_id, tuple(Rewritten(seg.segment_id, _rewrite(plan, seg, own, useful), len(useful))
                                        for seg, own, useful in hits))


def _rewrite(plan: L0Plan, seg: SegmentFiles, own: Deletes, added: Deletes) -> SegmentFiles:
    """The segment under its new id: data and index files copied, the delete log ``own`` + ``added``."""
    new_id = plan.new_ids[seg.segment_id]

    def copy(info: FileInfo, rel: str) -> FileInfo:
        algorithm = info.checksum.partition(":")[0]
        return segment_files.put_file(plan.root, rel, segment_files.get_file(seg.root, info), checksum=algorithm)

    data_path = f"{segment_files.segment_dir(seg.collection_id, seg.partition_id, new_id)}/{DATA_FILE}"
    record = SegmentFiles(root=canonical_root(plan.root), collection_id=seg.collection_id,
                          partition_id=seg.partition_id, segment_id=new_id, num_rows=seg.num_rows,
                          data=copy(seg.data, data_path))
    for field_id, info in sorted(seg.indexes.items()):
        rel = segment_files.index_path(seg.collection_id, seg.partition_id, new_id, field_id)
        record = record.with_index(field_id, copy(info, rel))
    return segment_files.write_deltalog(record, np.concatenate([own.pks, added.pks]),
                                        np.concatenate([own.ts, added.ts]))


# --- mix compaction ----------------------------------------------------------------------------------

def compact_mix(plan: MixPlan) -> MixResult:
    """Merge the plan's segments into one, leaving out every row a delete hides."""
    from vecgrid.gpu.device import transient_heap

    with transient_heap():   # as compact_l0
        return _compact_mix(plan)


def _compact_mix(plan: MixPlan) -> MixResult:
    kept: list[pa.Table] = []
    rows_in = 0
    l0: Deletes | None = None
    for seg in plan.sources:
        table = segment_files.read_segment(seg)
        rows_in += table.num_rows
        pks, ts = _keys(table.column(plan.pk_name)), _timestamps(table)
        if l0 is None:
            l0 = _l0_deletes(plan.deletes, plan.partition_id, pks)
        deletes = Deletes.of([_read_deletes(seg), (l0.pks, l0.ts)], pks)
        hidden = deletes.hidden(pks, ts)
        kept.append(table.filter(pa.array(~hidden)) if hidden.any() else table)
    merged = pa.concat_tables(kept) if kept else None
    crash_point("compaction-task")   # a worker lost mid-task: Dask runs it again elsewhere
    if merged is None or merged.num_rows == 0:
        return MixResult(plan.plan_id, None, rows_in, 0)
    record = segment_files.write_segment(plan.root, plan.collection_id, plan.partition_id, plan.result_id, merged)
    return MixResult(plan.plan_id, record, rows_in, merged.num_rows)
