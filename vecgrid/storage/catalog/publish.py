"""Publishing sealed segments: the storage layer's atomic publish point, and index builds of segments.

Part of :class:`~.meta.Catalog` (see :mod:`.base` for the lock that owns every write). Uses
:mod:`.collections` (``_require_collection``, ``_view``), :mod:`.indexes` (``_live_index``,
``_field_indexes``, ``_segment_index_records``), :mod:`.segments` (lookups, checks, file binding) and
:mod:`.checkpoints` (``_checked_position``, ``_commit_with_checkpoints``).

A publish is planned, then committed: :meth:`PublishMeta._plan_publish` checks everything and decides
every write of one segment as a :class:`TxnPlan` (validate the segment, validate its index builds, bind
its files, find its compaction sources, then allocate ids and encode the writes), allocating ids only
once nothing can be refused; :meth:`PublishMeta._commit_publish` writes the plans of one call in ONE
transaction together with their channel checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vecgrid import errors
from vecgrid.proto import catalog_pb2, common_pb2, data_coord_pb2, msg_pb2

from ..kv import MetaTxn
from . import keys, segment_bridge
from .base import L, S, CatalogBase, copy_msg, encode, state_name
from .info import CollectionInfo
from .segments import dropped_writes

if TYPE_CHECKING:
    from vecgrid.storage.segment_files import FileInfo
    from vecgrid.storage.segment_files import SegmentFiles as SegmentFilesRecord


@dataclass
class TxnPlan:
    """One segment's publish, checked and decided; nothing of it is written yet.

    ``writes`` are the puts of the segment meta, its file checksums, its index builds and its
    compaction sources marked Dropped (empty when the identical segment is published again);
    ``checkpoint`` is its insert channel's new checkpoint, written only if it still advances at commit.
    """

    segment: data_coord_pb2.SegmentInfo
    writes: list[tuple[str, bytes]]
    checkpoint: msg_pb2.MsgPosition | None = None
    reserved: bytes | None = None   # the Importing record it replaces: the commit is guarded by it

    @property
    def key(self) -> str:
        return keys.segment_key(self.segment.collectionID, self.segment.partitionID, self.segment.ID)


class PublishMeta(CatalogBase):
    """Sealed segments becoming visible with their files, index builds and checkpoint."""

    # =========================================================================================
    # publish

    def publish_segment(
        self,
        segment: data_coord_pb2.SegmentInfo,
        files: Iterable[catalog_pb2.SegmentFile],
        *,
        checkpoint: msg_pb2.MsgPosition | None = None,
        indexes: Iterable[catalog_pb2.SegmentIndex] = (),
        root: str = "",
    ) -> data_coord_pb2.SegmentInfo:
        """Make a sealed segment visible: the storage layer's atomic publish point.

        ``segment`` is the full meta (collectionID, partitionID, insert_channel, num_of_rows, binlogs,
        statslogs, deltalogs, start/dml positions, level, compactionFrom); ``files`` gives the size and
        checksum of every file it (and ``indexes``) names. ``ID`` 0 allocates a new id; an existing
        Growing/Sealed record of the same id (the segment being sealed) is replaced. The stored state is
        ``Flushed`` (Milvus's state for a sealed segment whose files are written); a ``Legacy`` level
        becomes ``L1``. ``indexes`` are index builds shipped with the segment (``indexID`` and
        ``index_file_keys`` set; their files' checksums may be in ``files`` or in ``SegmentIndex.files``).
        Segments named in ``compactionFrom`` become Dropped. ``checkpoint`` advances the insert
        channel's checkpoint (an older one is ignored, as Milvus does). ``root`` is the storage root
        the file paths are relative to (kept with the checksums; see :meth:`segment_root`).

        Segment meta, file checksums, index records, compacted-from drops and the checkpoint are written
        in ONE store transaction: before it commits nothing is visible, after it all of it is. Publishing
        the identical segment again returns it unchanged.
        """
        with self._lock:
            plan = self._plan_publish(segment, files, checkpoint, indexes, root)
            self._commit_publish([plan])
            return plan.segment

    def publish_segments(self, items: Iterable[tuple[data_coord_pb2.SegmentInfo, Iterable[catalog_pb2.SegmentFile],
                                                     Mapping[str, Any]]]) -> list[data_coord_pb2.SegmentInfo]:
        """:meth:`publish_segment` for several segments in ONE transaction: all become visible or none.

        Each item is ``(segment, files, options)`` with the keyword options of :meth:`publish_segment`.
        A bulk import publishes its segments this way, so a crash mid-import publishes nothing.
        """
        with self._lock:
            plans = [self._plan_publish(seg, files, opts.get("checkpoint"), opts.get("indexes", ()),
                                        opts.get("root", "")) for seg, files, opts in items]
            self._commit_publish(plans)
            return [plan.segment for plan in plans]

    def _commit_publish(self, plans: list[TxnPlan]) -> None:
        writes = [w for plan in plans for w in plan.writes]

        def write(t: MetaTxn) -> None:
            for plan in plans:
                if plan.reserved is not None:
                    # an import's reservation: the collector drops it once the import's lease is stale,
                    # and then may remove its files; read again on every attempt (a lost guard retries)
                    if self._store.get(plan.key) != plan.reserved:
                        raise errors.ServiceUnavailable(
                            f"segment {plan.segment.ID} is no longer reserved for its import (dropped: the "
                            "import's lease went stale, or the collection was dropped); nothing was published")
                    t.expect(plan.key, plan.reserved)
            for key, value in writes:
                t.put(key, value)

        self._commit_with_checkpoints(write, [p.checkpoint for p in plans if p.checkpoint is not None])
        for plan in plans:
            self._segment_keys.put(plan.segment.ID, plan.key)

    def _plan_publish(self, segment: object, files: Iterable[object], checkpoint: object,
                      indexes: Iterable[object], root: object) -> TxnPlan:
        """Check one publish and decide its writes; writes nothing. The caller holds ``_lock``."""
        seg, coll, old = self._validate_segment(segment, root)
        old_files = self._files_record(old) if old is not None else {}
        index_records = self._validated_index_records(coll, seg, indexes)
        log_files = self._bind_segment_files(seg, index_records, self._file_pool(files), old_files)
        drops = self._compaction_sources(coll, seg)
        cp = None if checkpoint is None else self._checked_position(seg.insert_channel, checkpoint)
        if old is not None and old.state == S.Flushed:
            same = (
                encode(old) == encode(seg)
                and [encode(f) for f in log_files] == [encode(old_files[p]) for p in sorted(old_files)]
                and self._checksums(old).root == root
                and not index_records
            )
            if not same:
                raise errors.ParameterInvalid(f"segment {seg.ID} is already published")
            return TxnPlan(seg, [], cp)
        reserved = encode(old) if old is not None and old.state == S.Importing else None
        return TxnPlan(seg, self._build_ops(coll, seg, index_records, log_files, root, drops), cp, reserved)

    def _validate_segment(self, segment: object, root: object) -> tuple[
            data_coord_pb2.SegmentInfo, CollectionInfo, data_coord_pb2.SegmentInfo | None]:
        """The segment meta to store (a copy, Flushed), its collection, and its current record if any.

        A record of the same id is the segment being sealed (Growing/Sealed), one an import reserved
        (Importing: :mod:`.import_leases`), or a segment published before (Flushed); it must be of the
        same collection, partition and channel, and not Dropped.
        """
        if not isinstance(segment, data_coord_pb2.SegmentInfo):
            raise errors.ParameterInvalid(f"segment must be a data.SegmentInfo, got {type(segment).__name__}")
        if not isinstance(root, str):
            raise errors.ParameterInvalid(f"root must be a string, got {type(root).__name__}")
        seg = copy_msg(segment)
        coll = self._view(self._require_collection(seg.collectionID))
        if seg.level == L.Legacy:
            seg.level = L.L1
        self._check_partition(coll, seg.partitionID, seg.level)
        self._check_channel(coll, seg.insert_channel)
        if seg.state not in (S.SegmentStateNone, S.Sealed, S.Flushing, S.Flushed):
            raise errors.ParameterInvalid(
                f"a published segment is sealed; state {state_name(seg.state)} cannot be published"
            )
        seg.state = S.Flushed
        self._check_rows(seg)
        if not seg.ID:
            return seg, coll, None
        if seg.ID < 0:
            raise errors.ParameterInvalid(f"segment id must be positive, got {seg.ID}")
        found = self._find_segment_at(seg.collectionID, seg.partitionID, seg.ID)
        if found is None:
            return seg, coll, None
        old = found[1]
        if (old.collectionID, old.partitionID, old.insert_channel) != (
                seg.collectionID, seg.partitionID, seg.insert_channel):
            raise errors.ParameterInvalid(
                f"segment {seg.ID} exists in collection {old.collectionID}, partition {old.partitionID}, "
                f"channel {old.insert_channel!r}"
            )
        if old.state == S.Dropped:
            raise errors.ParameterInvalid(f"segment {seg.ID} is dropped")
        if not seg.HasField("start_position") and old.HasField("start_position"):
            seg.start_position.CopyFrom(old.start_position)
        return seg, coll, old

    def _validated_index_records(self, coll: CollectionInfo, seg: data_coord_pb2.SegmentInfo,
                                 indexes: Iterable[object]) -> list[catalog_pb2.SegmentIndex]:
        """Copies of the index builds shipped with the segment, each of a live index, at most one per index."""
        out: list[catalog_pb2.SegmentIndex] = []
        for raw in indexes:
            if not isinstance(raw, catalog_pb2.SegmentIndex):
                raise errors.ParameterInvalid(
                    f"indexes must be catalog.SegmentIndex messages, got {type(raw).__name__}"
                )
            si = copy_msg(raw)
            self._live_index(coll.id, si.indexID)
            if si.segmentID not in (0, seg.ID) or si.collectionID not in (0, coll.id) or \
                    si.partitionID not in (0, seg.partitionID):
                raise errors.ParameterInvalid(f"index build {si.indexID} names another segment")
            if not si.index_file_keys:
                raise errors.ParameterInvalid(f"index build of index {si.indexID} has no index_file_keys")
            if any(s.indexID == si.indexID for s in out):
                raise errors.ParameterInvalid(f"index {si.indexID} is built twice for segment {seg.ID}")
            out.append(si)
        return out

    def _compaction_sources(self, coll: CollectionInfo,
                            seg: data_coord_pb2.SegmentInfo) -> list[tuple[str, data_coord_pb2.SegmentInfo]]:
        """The records of the segments ``compactionFrom`` names: other segments of the same collection."""
        out = []
        for src in seg.compactionFrom:
            found = self._find_segment(src)
            if found is None:
                raise errors.SegmentNotFound(f"segment {src} in compactionFrom", segment=src)
            if found[1].collectionID != coll.id or src == seg.ID:
                raise errors.ParameterInvalid(
                    f"segment {src} in compactionFrom is not another segment of collection {coll.id}"
                )
            out.append(found)
        return out

    def _build_ops(self, coll: CollectionInfo, seg: data_coord_pb2.SegmentInfo,
                   index_records: list[catalog_pb2.SegmentIndex], log_files: list[catalog_pb2.SegmentFile],
                   root: str, drops: list[tuple[str, data_coord_pb2.SegmentInfo]]) -> list[tuple[str, bytes]]:
        """Everything is checked: allocate the segment id, build ids and a timestamp, and encode the puts."""
        if not seg.ID:
            seg.ID = self._ids.allocate()
        ts = self._tso.allocate() if index_records else 0
        for si in index_records:
            si.collectionID, si.partitionID, si.segmentID = coll.id, seg.partitionID, seg.ID
            si.buildID = si.buildID or self._ids.allocate()
            si.num_rows = si.num_rows or seg.num_of_rows
            si.state = common_pb2.Finished
            si.create_time = si.create_time or ts
            si.finished_time = si.finished_time or ts
        checksums = catalog_pb2.SegmentFileChecksums(collectionID=seg.collectionID, partitionID=seg.partitionID,
                                                     segmentID=seg.ID, files=log_files, root=root)
        writes = [(keys.segment_key(seg.collectionID, seg.partitionID, seg.ID), encode(seg)),
                  (keys.segment_files_key(seg.collectionID, seg.partitionID, seg.ID), encode(checksums))]
        writes += [(keys.segment_index_key(si.collectionID, si.partitionID, si.segmentID, si.buildID), encode(si))
                   for si in index_records]
        return writes + dropped_writes(drops)

    # =========================================================================================
    # index builds and segment_files records

    def add_segment_index(
        self, index: catalog_pb2.SegmentIndex, files: Iterable[catalog_pb2.SegmentFile] = ()
    ) -> catalog_pb2.SegmentIndex:
        """Record an index built for a Flushed segment (``segmentID``, ``indexID``, ``index_file_keys``).

        Every index file needs a size and checksum, in ``files`` or ``index.files``. A previous live
        build of the same index for the segment is marked deleted in the same transaction.
        """
        with self._lock:
            if not isinstance(index, catalog_pb2.SegmentIndex):
                raise errors.ParameterInvalid(f"index must be a catalog.SegmentIndex, got {type(index).__name__}")
            si = copy_msg(index)
            _, seg = self._require_segment(si.segmentID)
            if seg.state != S.Flushed:
                raise errors.ParameterInvalid(
                    f"segment {seg.ID} is {state_name(seg.state)}; only Flushed segments get indexes"
                )
            self._live_index(seg.collectionID, si.indexID)
            if not si.index_file_keys:
                raise errors.ParameterInvalid(f"index build of index {si.indexID} has no index_file_keys")
            self._bind_segment_files(data_coord_pb2.SegmentInfo(ID=seg.ID, collectionID=seg.collectionID), [si],
                                     self._file_pool(files), {})
            previous = [(k, old) for k, old in self._segment_index_records(seg.collectionID, seg.partitionID, seg.ID)
                        if old.indexID == si.indexID and not old.deleted]
            ts = self._tso.allocate()
            si.collectionID, si.partitionID = seg.collectionID, seg.partitionID
            si.buildID = self._ids.allocate()
            si.num_rows = si.num_rows or seg.num_of_rows
            si.state = common_pb2.Finished
            si.deleted = False
            si.create_time = si.create_time or ts
            si.finished_time = si.finished_time or ts
            with self._store.txn() as t:
                for k, old in previous:
                    old.deleted = True
                    t.put(k, encode(old))
                t.put(keys.segment_index_key(si.collectionID, si.partitionID, si.segmentID, si.buildID), encode(si))
            return si

    def publish_segment_files(
        self,
        record: SegmentFilesRecord,
        insert_channel: str,
        *,
        checkpoint: msg_pb2.MsgPosition | None = None,
        start_position: msg_pb2.MsgPosition | None = None,
        dml_position: msg_pb2.MsgPosition | None = None,
        level: int = L.L1,
        compaction_from: Iterable[int] = (),
    ) -> data_coord_pb2.SegmentInfo:
        """:meth:`publish_segment` for a record returned by ``segment_files.write_segment``.

        The record's index files (``record.indexes``: field id -> file) become builds of each field's
        live index. See :mod:`.segment_bridge` for how the files map onto ``SegmentInfo``.
        """
        return self.publish_segment_records([dict(
            record=record, insert_channel=insert_channel, checkpoint=checkpoint, start_position=start_position,
            dml_position=dml_position, level=level, compaction_from=compaction_from)])[0]

    def publish_segment_records(self, items: Iterable[Mapping[str, Any]]) -> list[data_coord_pb2.SegmentInfo]:
        """Several :meth:`publish_segment_files` calls (keyword dicts) in ONE transaction."""
        with self._lock:
            return self.publish_segments([self._record_publish_args(**item) for item in items])

    def _record_publish_args(self, record: SegmentFilesRecord, insert_channel: str, *,
                             checkpoint: msg_pb2.MsgPosition | None = None,
                             start_position: msg_pb2.MsgPosition | None = None,
                             dml_position: msg_pb2.MsgPosition | None = None,
                             level: int = L.L1, compaction_from: Iterable[int] = (),
                             ) -> tuple[data_coord_pb2.SegmentInfo, list[catalog_pb2.SegmentFile], dict[str, Any]]:
        seg, files = segment_bridge.to_segment_info(record, insert_channel)
        seg.level = level
        for name, position in (("start_position", start_position), ("dml_position", dml_position)):
            if position is not None:
                if not isinstance(position, msg_pb2.MsgPosition):
                    raise errors.ParameterInvalid(f"{name} must be a msg.MsgPosition")
                getattr(seg, name).CopyFrom(position)
        seg.compactionFrom.extend(compaction_from)
        indexes = []
        if record.indexes:
            live = {fi.index_info.fieldID: fi.index_info.indexID
                    for _, fi in self._field_indexes(self._require_collection(record.collection_id).ID)}
            for field_id, info in sorted(record.indexes.items()):
                if field_id not in live:
                    raise errors.IndexNotFound(f"field {field_id} has no index", collection=record.collection_id)
                indexes.append(segment_bridge.to_segment_index(info, live[field_id], field_id))
        return seg, files, {"checkpoint": checkpoint, "indexes": indexes, "root": record.root}

    def segment_files_record(self, segment_id: int) -> SegmentFilesRecord:
        """The ``segment_files.SegmentFiles`` record to open (and verify) a segment with.

        Only for segments in that layout (one data file, at most one delete log, one file per index).
        """
        _, seg = self._require_segment(segment_id)
        checksums = self._checksums(seg)
        builds = [si for _, si in self._segment_index_records(seg.collectionID, seg.partitionID, seg.ID)
                  if not si.deleted]
        return segment_bridge.to_record(checksums.root, seg, {f.path: f for f in checksums.files}, builds)

    def add_index_file(self, segment_id: int, field_id: int, info: FileInfo, *,
                       index_id: int | None = None) -> catalog_pb2.SegmentIndex:
        """Record the index file of vector field ``field_id`` (``segment_files.put_file``'s result).

        ``index_id``: the index the file was built for; when the field's live index is another
        (dropped and created again since), ``IndexNotFound`` and nothing is recorded."""
        with self._lock:
            _, seg = self._require_segment(segment_id)
            live = {fi.index_info.fieldID: fi.index_info.indexID for _, fi in self._field_indexes(seg.collectionID)}
            if field_id not in live:
                raise errors.IndexNotFound(f"field {field_id} has no index", collection=seg.collectionID)
            if index_id is not None and live[field_id] != index_id:
                raise errors.IndexNotFound(f"index {index_id} of field {field_id} is no longer live "
                                           f"(the live one is {live[field_id]})", collection=seg.collectionID)
            build = segment_bridge.to_segment_index(info, live[field_id], field_id)
            build.segmentID = seg.ID
            return self.add_segment_index(build)
