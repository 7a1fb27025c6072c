"""Between :mod:`vecgrid.storage.segment_files` records and the catalog's Milvus-shaped segment meta.

:func:`~vecgrid.storage.segment_files.write_segment` returns a ``SegmentFiles`` record (one
``data.parquet`` holding every field, an optional ``deltalog.parquet``, one index file per vector
field, each with size and ``"<algorithm>:<hex>"`` checksum). The catalog stores the same facts the
way Milvus's DataCoord does, so that QueryCoord-side code can build ``SegmentLoadInfo`` from them:

* ``data.parquet`` -> ``SegmentInfo.binlogs = [FieldBinlog(fieldID=0, [Binlog(log_path, log_size,
  entries_num=num_rows)])]``: one column group holding all fields, as Milvus's storage v2 does, so
  ``storage_version`` is 2 (a per-field FieldBinlog would count the file's size once per field);
* ``deltalog.parquet`` -> ``SegmentInfo.deltalogs = [FieldBinlog(fieldID=0, [Binlog(...)])]``;
* index file of field F -> a ``SegmentIndex`` of F's live index with that one file;
* sizes and checksums -> ``catalog.SegmentFile`` entries (algorithm and hex digest apart).

:func:`to_record` rebuilds the ``SegmentFiles`` record a reader opens the segment with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vecgrid import errors
from vecgrid.proto import catalog_pb2, data_coord_pb2

if TYPE_CHECKING:  # imported lazily at run time: the catalog does not need it to load
    from vecgrid.storage.segment_files import FileInfo, SegmentFiles

#: Milvus's storage v2: files hold column groups of several fields.
STORAGE_VERSION_PACKED = 2
#: FieldBinlog.fieldID of the one column group (every field) of ``data.parquet``.
ALL_FIELDS_GROUP_ID = 0


def split_checksum(checksum: str) -> tuple[str, str]:
    """``"crc32:0a1b2c3d"`` -> ``("crc32", "0a1b2c3d")``."""
    algorithm, sep, digest = str(checksum).partition(":")
    if not sep or not algorithm or not digest:
        raise errors.ParameterInvalid(f"malformed checksum {checksum!r} (expected '<algorithm>:<hex digest>')")
    return algorithm.lower(), digest.lower()


def catalog_file(info: FileInfo, kind: int, field_id: int = 0, index_id: int = 0) -> catalog_pb2.SegmentFile:
    algorithm, digest = split_checksum(info.checksum)
    return catalog_pb2.SegmentFile(path=info.path, size=info.size, checksum_algorithm=algorithm, checksum=digest,
                                   kind=kind, fieldID=field_id, indexID=index_id)


def file_info(entry: catalog_pb2.SegmentFile) -> FileInfo:
    from vecgrid.storage.segment_files import FileInfo

    return FileInfo(entry.path, entry.size, f"{entry.checksum_algorithm}:{entry.checksum}")


def to_segment_info(record: SegmentFiles, insert_channel: str) -> tuple[data_coord_pb2.SegmentInfo,
                                                                         list[catalog_pb2.SegmentFile]]:
    """The segment meta (binlogs / deltalogs) and log-file checksums of a ``SegmentFiles`` record."""
    seg = data_coord_pb2.SegmentInfo(
        ID=record.segment_id,
        collectionID=record.collection_id,
        partitionID=record.partition_id,
        insert_channel=insert_channel,
        num_of_rows=record.num_rows,
        storage_version=STORAGE_VERSION_PACKED,
    )
    seg.binlogs.add(fieldID=ALL_FIELDS_GROUP_ID).binlogs.add(
        entries_num=record.num_rows, log_path=record.data.path, log_size=record.data.size)
    files = [catalog_file(record.data, catalog_pb2.InsertLog, ALL_FIELDS_GROUP_ID)]
    if record.deltalog is not None:
        seg.deltalogs.add(fieldID=ALL_FIELDS_GROUP_ID).binlogs.add(
            log_path=record.deltalog.path, log_size=record.deltalog.size)
        files.append(catalog_file(record.deltalog, catalog_pb2.DeltaLog, ALL_FIELDS_GROUP_ID))
    return seg, files


def to_segment_index(info: FileInfo, index_id: int, field_id: int) -> catalog_pb2.SegmentIndex:
    return catalog_pb2.SegmentIndex(indexID=index_id, index_file_keys=[info.path],
                                    files=[catalog_file(info, catalog_pb2.IndexFile, field_id, index_id)])


def to_record(
    root: str,
    seg: data_coord_pb2.SegmentInfo,
    files: Mapping[str, catalog_pb2.SegmentFile],
    indexes: list[catalog_pb2.SegmentIndex],
) -> SegmentFiles:
    """Rebuild the ``SegmentFiles`` record of a segment stored in that layout (``indexes``: live builds).

    Raises ``ParameterInvalid`` for a segment whose files do not fit the record (several data files
    or delete logs, multi-file indexes).
    """
    from vecgrid.storage.segment_files import SegmentFiles

    data = [b.log_path for fb in seg.binlogs for b in fb.binlogs]
    deltas = [b.log_path for fb in seg.deltalogs for b in fb.binlogs]
    if len(data) != 1 or len(deltas) > 1:
        raise errors.ParameterInvalid(
            f"segment {seg.ID} has {len(data)} data file(s) and {len(deltas)} delete log(s); a SegmentFiles "
            "record holds exactly one data file and at most one delete log"
        )
    index_files: dict[int, Any] = {}
    for si in indexes:
        if len(si.files) != 1:
            raise errors.ParameterInvalid(f"segment {seg.ID}: index {si.indexID} has {len(si.files)} files, not 1")
        index_files[si.files[0].fieldID] = file_info(si.files[0])
    return SegmentFiles(
        root=root,
        collection_id=seg.collectionID,
        partition_id=seg.partitionID,
        segment_id=seg.ID,
        num_rows=seg.num_of_rows,
        data=file_info(files[data[0]]),
        deltalog=file_info(files[deltas[0]]) if deltas else None,
        indexes=index_files,
    )
