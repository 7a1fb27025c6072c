"""Segment meta and the size and checksum of every file a segment names: DataCoord's segment meta.

Part of :class:`~.meta.Catalog` (see :mod:`.base` for the lock that owns every write). Uses
:mod:`.collections` (``_require_collection``, ``_view``) and :mod:`.indexes` (``_live_index``,
``_segment_index_records``). Growing and Importing segments are recorded here (:meth:`add_segment`;
an import reserves its Importing ones through :mod:`.import_leases`), change forward only
(:meth:`update_segment`: Growing -> Sealed -> Flushing -> Flushed -> Dropped; Importing -> Flushed or
Dropped) and are forgotten once Dropped and their files removed (:meth:`purge_segment`); sealed data
becomes visible through :mod:`.publish`.  Only Flushed segments are data: whoever reads rows lists
those (an Importing segment's files are still being written).

A segment's key never changes, so ``_segment_keys`` remembers it by id: a hit is confirmed by a read of
the key, a miss scans.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from vecgrid import errors
from vecgrid.proto import catalog_pb2, data_coord_pb2, msg_pb2

from ..kv import MetaTxn
from . import keys
from .base import ALL_PARTITIONS_ID, L, S, CatalogBase, check_int_id, copy_msg, decode, encode, state_name
from .info import CollectionInfo

# States a segment moves through, in order; it never moves back.
_STATE_RANK = {S.Growing: 1, S.Importing: 1, S.Sealed: 2, S.Flushing: 3, S.Flushed: 4, S.Dropped: 5}
_KIND_OF_LOGS = (
    ("binlogs", catalog_pb2.InsertLog),
    ("statslogs", catalog_pb2.StatsLog),
    ("deltalogs", catalog_pb2.DeltaLog),
)


def dropped_writes(records: Iterable[tuple[str, data_coord_pb2.SegmentInfo]]) -> list[tuple[str, bytes]]:
    """The puts that mark these segments Dropped (those not Dropped yet); the records are left as they are."""
    now = time.time_ns()
    out = []
    for key, seg in records:
        if seg.state != S.Dropped:
            dropped = copy_msg(seg)
            dropped.state = S.Dropped
            dropped.dropped_at = now
            out.append((key, encode(dropped)))
    return out


class SegmentMeta(CatalogBase):
    """Segment records (``datacoord-meta/s/``) and their file checksums (``datacoord-meta/file-checksum/``)."""

    # =========================================================================================
    # records

    def _segment_records(self, collection_id: int | None = None,
                         partition_id: int | None = None) -> list[tuple[str, data_coord_pb2.SegmentInfo]]:
        out = []
        for k, v in self._store.scan(keys.segment_prefix(collection_id, partition_id)):
            seg = decode(data_coord_pb2.SegmentInfo, k, v)
            self._segment_keys.put(seg.ID, k)
            out.append((k, seg))
        return out

    def _find_segment(self, segment_id: object) -> tuple[str, data_coord_pb2.SegmentInfo] | None:
        sid = check_int_id("segment id", segment_id)
        key = self._segment_keys.get(sid)
        if key is not None:
            raw = self._store.get(key)
            if raw is not None:
                return key, decode(data_coord_pb2.SegmentInfo, key, raw)
            self._segment_keys.drop(sid)
        for k, raw in self._store.scan(keys.SEGMENT_PREFIX):
            if keys.last_id(k) == sid:
                self._segment_keys.put(sid, k)
                return k, decode(data_coord_pb2.SegmentInfo, k, raw)
        return None

    def _find_segment_at(self, collection_id: int, partition_id: int,
                         segment_id: int) -> tuple[str, data_coord_pb2.SegmentInfo] | None:
        """Like :meth:`_find_segment` without a full scan: the expected key, else a known key of that id.

        Segment ids come from the allocator, so a fresh id has no record anywhere; only a caller that
        reuses an id of another partition is caught, through the key cache.
        """
        for key in (keys.segment_key(collection_id, partition_id, segment_id), self._segment_keys.get(segment_id)):
            if key is None:
                continue
            raw = self._store.get(key)
            if raw is not None:
                return key, decode(data_coord_pb2.SegmentInfo, key, raw)
        return None

    def _require_segment(self, segment_id: object) -> tuple[str, data_coord_pb2.SegmentInfo]:
        found = self._find_segment(segment_id)
        if found is None:
            raise errors.SegmentNotFound(segment=segment_id)
        return found

    @staticmethod
    def _check_partition(coll: CollectionInfo, partition_id: object, level: int) -> None:
        pid = check_int_id("partition id", partition_id)
        if pid == ALL_PARTITIONS_ID and level == L.L0:
            return
        if pid not in coll.partition_ids:
            raise errors.PartitionNotFound(f"collection {coll.name!r} has no partition with id {pid}", partition=pid)

    @staticmethod
    def _check_channel(coll: CollectionInfo, channel: object) -> None:
        if channel not in coll.vchannels:
            raise errors.ChannelNotFound(
                f"collection {coll.name!r} has channels {list(coll.vchannels)}", channel=channel
            )

    @staticmethod
    def _check_transition(segment_id: int, old: int, new: int) -> None:
        if new not in _STATE_RANK:
            raise errors.ParameterInvalid(f"segment state {state_name(new)} cannot be set")
        if _STATE_RANK[new] < _STATE_RANK.get(old, 0):
            raise errors.ParameterInvalid(
                f"segment {segment_id} cannot go from {state_name(old)} to {state_name(new)}"
            )

    def add_segment(
        self,
        collection_id: int,
        partition_id: int,
        channel: str,
        *,
        segment_id: int | None = None,
        state: int = S.Growing,
        start_position: msg_pb2.MsgPosition | None = None,
        level: int = L.L1,
        max_row_num: int = 0,
    ) -> data_coord_pb2.SegmentInfo:
        """Record a new Growing (or Importing) segment of a partition and channel; returns its meta.

        ``segment_id`` defaults to a fresh id. Sealed data is recorded with :meth:`publish_segment`.
        ``partition_id`` may be ``-1`` (all partitions) for an L0 segment.
        """
        with self._lock:
            key, seg = self._new_segment_record(collection_id, partition_id, channel, segment_id, state,
                                                start_position, level, max_row_num)
            self._store.put(key, encode(seg))
            self._segment_keys.put(seg.ID, key)
            return seg

    def _new_segment_record(self, collection_id: int, partition_id: int, channel: str, segment_id: int | None,
                            state: int, start_position: msg_pb2.MsgPosition | None, level: int,
                            max_row_num: int) -> tuple[str, data_coord_pb2.SegmentInfo]:
        """The checked key and record of a new Growing or Importing segment (id allocated last); writes
        nothing.  The caller holds ``_lock``."""
        coll = self._view(self._require_collection(collection_id))
        self._check_partition(coll, partition_id, level)
        self._check_channel(coll, channel)
        if state not in (S.Growing, S.Importing):
            raise errors.ParameterInvalid(
                f"a new segment is Growing or Importing, not {state_name(state)}; "
                "use publish_segment for sealed data"
            )
        if level not in (L.L0, L.L1, L.L2):
            raise errors.ParameterInvalid(f"segment level must be L0, L1 or L2, got {level}")
        if start_position is not None and not isinstance(start_position, msg_pb2.MsgPosition):
            raise errors.ParameterInvalid("start_position must be a msg.MsgPosition")
        if segment_id is not None:
            check_int_id("segment id", segment_id)
            if segment_id <= 0:
                raise errors.ParameterInvalid(f"segment id must be positive, got {segment_id}")
            if self._find_segment_at(coll.id, partition_id, segment_id) is not None:
                raise errors.ParameterInvalid(f"segment {segment_id} already exists")
        sid = segment_id if segment_id is not None else self._ids.allocate()
        seg = data_coord_pb2.SegmentInfo(
            ID=sid, collectionID=coll.id, partitionID=partition_id, insert_channel=channel,
            state=state, max_row_num=max_row_num, level=level,
        )
        if start_position is not None:
            seg.start_position.CopyFrom(start_position)
        return keys.segment_key(coll.id, partition_id, sid), seg

    def get_segment(self, segment_id: int) -> data_coord_pb2.SegmentInfo:
        """A segment's meta (also when Dropped, until purged); ``SegmentNotFound`` otherwise."""
        return self._require_segment(segment_id)[1]

    def list_segments(
        self,
        collection_id: int,
        partition_id: int | None = None,
        channel: str | None = None,
        states: Iterable[int] | None = None,
    ) -> list[data_coord_pb2.SegmentInfo]:
        """Segments of a collection, by id, filtered by partition, insert channel and states.

        ``states=None`` means every state, ``Dropped`` included. Works for a dropped collection too
        (its segments stay listed, Dropped, until purged).
        """
        cid = check_int_id("collection id", collection_id)
        wanted = None if states is None else set(states)
        out = [
            seg for _, seg in self._segment_records(cid, partition_id)
            if (channel is None or seg.insert_channel == channel) and (wanted is None or seg.state in wanted)
        ]
        return sorted(out, key=lambda s: s.ID)

    def segments_flushed(self, segment_ids: Iterable[int]) -> bool:
        """Whether every segment is flushed (Milvus's GetFlushState): Flushed, or Dropped or purged since
        (compacted into others, which were flushed first)."""
        for sid in segment_ids:
            try:
                if self.get_segment(sid).state not in (S.Flushed, S.Dropped):
                    return False
            except errors.SegmentNotFound:
                continue
        return True

    def flushed_rows(self, collection_id: int, partition_id: int | None = None) -> int:
        """Rows of the collection's (or partition's) Flushed data segments: Milvus's ``num_entities``
        (deletes not applied; rows still growing in the log not counted until a flush)."""
        return sum(s.num_of_rows for s in self.list_segments(collection_id, partition_id, states=[S.Flushed])
                   if s.level != L.L0)

    # =========================================================================================
    # files

    @staticmethod
    def _normalize_file(f: object) -> catalog_pb2.SegmentFile:
        if not isinstance(f, catalog_pb2.SegmentFile):
            raise errors.ParameterInvalid(f"files must be catalog.SegmentFile messages, got {type(f).__name__}")
        out = copy_msg(f)
        if not out.path:
            raise errors.ParameterInvalid("a segment file has an empty path")
        if out.size < 0:
            raise errors.ParameterInvalid(f"file {out.path!r} has a negative size {out.size}")
        if not out.checksum_algorithm or not out.checksum:
            raise errors.ParameterInvalid(
                f"file {out.path!r} has no checksum (checksum_algorithm and checksum are required)"
            )
        out.checksum_algorithm = out.checksum_algorithm.lower()
        out.checksum = out.checksum.lower()
        return out

    @classmethod
    def _file_pool(cls, *sources: Iterable[object]) -> dict[str, catalog_pb2.SegmentFile]:
        pool: dict[str, catalog_pb2.SegmentFile] = {}
        for source in sources:
            for raw in source:
                f = cls._normalize_file(raw)
                prev = pool.get(f.path)
                if prev is not None and (prev.size, prev.checksum_algorithm, prev.checksum) != (
                        f.size, f.checksum_algorithm, f.checksum):
                    raise errors.ParameterInvalid(f"file {f.path!r} is listed twice with different size or checksum")
                pool[f.path] = f
        return pool

    @staticmethod
    def _bind(entry: catalog_pb2.SegmentFile | None, path: str, kind: int, field_id: int, index_id: int,
              segment_id: int) -> catalog_pb2.SegmentFile:
        if entry is None:
            raise errors.ParameterInvalid(f"segment {segment_id}: no size and checksum given for file {path!r}")
        if entry.kind not in (catalog_pb2.FileKindUnknown, kind):
            raise errors.ParameterInvalid(
                f"file {path!r} is a {catalog_pb2.FileKind.Name(kind)} of segment {segment_id}, "
                f"but was given as {catalog_pb2.FileKind.Name(entry.kind)}"
            )
        out = copy_msg(entry)
        out.kind = kind
        out.fieldID = field_id
        out.indexID = index_id
        return out

    def _bind_segment_files(
        self,
        seg: data_coord_pb2.SegmentInfo,
        indexes: list[catalog_pb2.SegmentIndex],
        new_files: dict[str, catalog_pb2.SegmentFile],
        old_files: dict[str, catalog_pb2.SegmentFile],
    ) -> list[catalog_pb2.SegmentFile]:
        """Give every file the segment and its indexes reference a checksum entry; return the log files'.

        Entries come from ``new_files`` first, then ``old_files`` (already recorded). Binlog sizes are
        checked against (or filled into) ``Binlog.log_size``; index files move into their
        ``SegmentIndex.files``. A new file that nothing references is an error.
        """
        referenced: set[str] = set()
        log_files: list[catalog_pb2.SegmentFile] = []
        for attr, kind in _KIND_OF_LOGS:
            for fb in getattr(seg, attr):
                for b in fb.binlogs:
                    if not b.log_path:
                        raise errors.ParameterInvalid(
                            f"segment {seg.ID}: a {attr} entry of field {fb.fieldID} has no log_path"
                        )
                    entry = self._bind(new_files.get(b.log_path, old_files.get(b.log_path)), b.log_path, kind,
                                       fb.fieldID, 0, seg.ID)
                    if b.log_size == 0:
                        b.log_size = entry.size
                    elif b.log_size != entry.size:
                        raise errors.ParameterInvalid(
                            f"segment {seg.ID}: {attr} {b.log_path!r} has log_size {b.log_size} but the file is "
                            f"{entry.size} bytes"
                        )
                    if b.log_path not in referenced:
                        referenced.add(b.log_path)
                        log_files.append(entry)
        for si in indexes:
            given = self._file_pool(si.files)
            field_id = self._live_index(seg.collectionID, si.indexID).index_info.fieldID
            del si.files[:]
            for path in si.index_file_keys:
                if path in referenced:
                    raise errors.ParameterInvalid(f"segment {seg.ID}: file {path!r} is referenced twice")
                entry = self._bind(new_files.get(path, given.get(path)), path, catalog_pb2.IndexFile,
                                   field_id, si.indexID, seg.ID)
                si.files.append(entry)
                referenced.add(path)
            stray = sorted(set(given) - set(si.index_file_keys))
            if stray:
                raise errors.ParameterInvalid(f"index build {si.indexID}: file(s) {stray} are not in index_file_keys")
            if si.serialize_size == 0:
                si.serialize_size = sum(f.size for f in si.files)
        unreferenced = sorted(set(new_files) - referenced)
        if unreferenced:
            raise errors.ParameterInvalid(f"segment {seg.ID}: file(s) {unreferenced} are not referenced by the segment")
        return sorted(log_files, key=lambda f: f.path)

    def _checksums(self, seg: data_coord_pb2.SegmentInfo) -> catalog_pb2.SegmentFileChecksums:
        key = keys.segment_files_key(seg.collectionID, seg.partitionID, seg.ID)
        raw = self._store.get(key)
        if raw is None:
            return catalog_pb2.SegmentFileChecksums(collectionID=seg.collectionID, partitionID=seg.partitionID,
                                                    segmentID=seg.ID)
        return decode(catalog_pb2.SegmentFileChecksums, key, raw)

    def _files_record(self, seg: data_coord_pb2.SegmentInfo) -> dict[str, catalog_pb2.SegmentFile]:
        return {f.path: f for f in self._checksums(seg).files}

    def segment_root(self, segment_id: int) -> str:
        """The storage root a segment's file paths are relative to (``""``: the deployment default)."""
        return self._checksums(self._require_segment(segment_id)[1]).root

    def segment_files(self, segment_id: int) -> list[catalog_pb2.SegmentFile]:
        """Size and checksum of every file of a segment: its logs and its live index builds, by path."""
        _, seg = self._require_segment(segment_id)
        out = list(self._files_record(seg).values())
        for _, si in self._segment_index_records(seg.collectionID, seg.partitionID, seg.ID):
            if not si.deleted:
                out.extend(si.files)
        return sorted(out, key=lambda f: f.path)

    @staticmethod
    def _check_rows(seg: data_coord_pb2.SegmentInfo) -> None:
        if seg.num_of_rows < 0:
            raise errors.ParameterInvalid(f"segment {seg.ID}: num_of_rows must not be negative")
        if seg.state != S.Flushed:
            return  # a growing segment's synced binlogs hold only part of its rows
        for fb in seg.binlogs:
            total = sum(b.entries_num for b in fb.binlogs)
            if total and total != seg.num_of_rows:
                raise errors.ParameterInvalid(
                    f"segment {seg.ID}: the binlogs of field {fb.fieldID} hold {total} rows, but num_of_rows is "
                    f"{seg.num_of_rows}"
                )

    @staticmethod
    def _merge_field_binlogs(target: Any, extra: Iterable[data_coord_pb2.FieldBinlog]) -> None:
        for fb in extra:
            if not isinstance(fb, data_coord_pb2.FieldBinlog):
                raise errors.ParameterInvalid(f"expected data.FieldBinlog, got {type(fb).__name__}")
            for existing in target:
                if existing.fieldID == fb.fieldID:
                    existing.binlogs.extend(fb.binlogs)
                    break
            else:
                target.add().CopyFrom(fb)

    # =========================================================================================
    # changes

    def update_segment(
        self,
        segment_id: int,
        *,
        state: int | None = None,
        num_of_rows: int | None = None,
        dml_position: msg_pb2.MsgPosition | None = None,
        binlogs: Iterable[data_coord_pb2.FieldBinlog] = (),
        statslogs: Iterable[data_coord_pb2.FieldBinlog] = (),
        deltalogs: Iterable[data_coord_pb2.FieldBinlog] = (),
        files: Iterable[catalog_pb2.SegmentFile] = (),
    ) -> data_coord_pb2.SegmentInfo:
        """Change a segment in one transaction; returns the new meta.

        ``binlogs``/``statslogs``/``deltalogs`` are *appended* (per field); every file they name needs
        an entry in ``files`` (size + checksum) unless already recorded. States only move forward
        (Growing -> Sealed -> Flushing -> Flushed -> Dropped); a Dropped segment cannot change.
        """
        with self._lock:
            key, old = self._require_segment(segment_id)
            if old.state == S.Dropped:
                if state == S.Dropped:
                    return old
                raise errors.ParameterInvalid(f"segment {old.ID} is dropped")
            seg = copy_msg(old)
            if state is not None:
                self._check_transition(seg.ID, seg.state, state)
                seg.state = state
                if state == S.Dropped:
                    seg.dropped_at = time.time_ns()
            if num_of_rows is not None:
                seg.num_of_rows = check_int_id("num_of_rows", num_of_rows)
            if dml_position is not None:
                if not isinstance(dml_position, msg_pb2.MsgPosition):
                    raise errors.ParameterInvalid("dml_position must be a msg.MsgPosition")
                seg.dml_position.CopyFrom(dml_position)
            self._merge_field_binlogs(seg.binlogs, binlogs)
            self._merge_field_binlogs(seg.statslogs, statslogs)
            self._merge_field_binlogs(seg.deltalogs, deltalogs)
            self._check_rows(seg)
            record = self._checksums(old)
            old_files = {f.path: f for f in record.files}
            log_files = self._bind_segment_files(seg, [], self._file_pool(files), old_files)
            with self._store.txn() as t:
                t.put(key, encode(seg))
                if [(encode(f)) for f in log_files] != [encode(old_files[p]) for p in sorted(old_files)]:
                    del record.files[:]
                    record.files.extend(log_files)
                    t.put(keys.segment_files_key(seg.collectionID, seg.partitionID, seg.ID), encode(record))
            return seg

    def drop_segment(self, segment_id: int) -> data_coord_pb2.SegmentInfo:
        """Mark a segment Dropped (its files stay until :meth:`purge_segment`)."""
        return self.update_segment(segment_id, state=S.Dropped)

    @staticmethod
    def _mark_segments_dropped(t: MetaTxn, records: Iterable[tuple[str, data_coord_pb2.SegmentInfo]]) -> None:
        for key, value in dropped_writes(records):
            t.put(key, value)

    def purge_segment(self, segment_id: int) -> bool:
        """Forget a *Dropped* segment, its checksums and index builds (after its files were removed)."""
        with self._lock:
            found = self._find_segment(segment_id)
            if found is None:
                return False
            key, seg = found
            if seg.state != S.Dropped:
                raise errors.ParameterInvalid(f"segment {seg.ID} is {state_name(seg.state)}; drop it before purging")
            with self._store.txn() as t:
                t.delete(key)
                t.delete(keys.segment_files_key(seg.collectionID, seg.partitionID, seg.ID))
                for k, _ in self._segment_index_records(seg.collectionID, seg.partitionID, seg.ID):
                    t.delete(k)
            self._segment_keys.drop(seg.ID)
            return True
