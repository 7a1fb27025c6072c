"""Index files of sealed segments: writing one, recording it, and who builds which segment's.

Two producers write index files (Milvus: an IndexNode builds, DataCoord records a ``SegmentIndex``):

* the **index builder** (:mod:`vecgrid.cluster.datacoord.index_builder`) builds the index of every
  segment the write path sealed (:func:`built_by_index_builder`) as a Dask task on a worker
  (:mod:`vecgrid.cluster.datanode.index_build`); until then those segments are served with exact
  search (an interim FLAT index, see :func:`vecgrid.cluster.querycoord.load_info.segment_load_info`);
* a **QueryNode** that built a bulk-imported segment's index at load saves it
  (:mod:`vecgrid.cluster.querynode.index_saver`).

Both write through :func:`write_index_file` (atomically, with size and checksum) and never touch
the catalog: the coordinator records the files with :func:`record_saved_indexes`, after checking
the index is still the live one.  The builder names its files after the build
(``index_<field>_<build>.bin``), so its writes never replace a file a saver wrote or a file an
earlier build recorded.

Once recorded, :func:`vecgrid.cluster.querycoord.load_info.segment_load_info` lists the file in
``SegmentLoadInfo.index_infos`` and every later load reads it (verified) instead of building.  A
write can be overtaken while it runs: the segment dropped (compaction, a dropped collection) or the
index dropped and created again.  Neither may record a stale build, so ``Catalog.add_index_file``
checks the live index id under its lock; such a file is skipped (garbage collection removes it).
"""

from __future__ import annotations

import logging
from typing import Mapping

from vecgrid import errors
from vecgrid.proto import common_pb2, data_coord_pb2
from vecgrid.storage import segment_files
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.segment_files import FileInfo

log = logging.getLogger(__name__)


def built_by_index_builder(seg: data_coord_pb2.SegmentInfo) -> bool:
    """Whether the index builder builds this segment's indexes (and loads serve it exactly until then).

    Segments the write path made: a flush (they carry the channel position they were sealed at,
    ``dml_position``) or a compaction (``compactionFrom``).  A bulk import records neither: its
    segments keep being indexed at their first load and saved by the node (the index checker)."""
    return (seg.state == common_pb2.Flushed and seg.level != data_coord_pb2.L0 and seg.num_of_rows > 0
            and (seg.HasField("dml_position") or len(seg.compactionFrom) > 0))


def write_index_file(root: str, path: str, data: bytes | bytearray | memoryview, *, segment_id: int) -> FileInfo:
    """Write an index file atomically to root-relative ``path``; its size and checksum (blocking).

    A failed write is ``IO failed`` (1001): the producer proposes it again later."""
    try:
        return segment_files.put_file(root, path, data)
    except (OSError, segment_files.SegmentStorageError) as e:
        raise errors.IoFailed(f"writing {path}: {e}", segment=segment_id) from None


def record_saved_indexes(catalog: Catalog, segment_id: int, index_ids: Mapping[int, int],
                         files: Mapping[int, FileInfo]) -> int:
    """Record ``files`` (field id -> file) built for ``index_ids`` (field id -> index id); returns
    how many were recorded.  A field whose live index already has a build is left as is."""
    recorded = 0
    for fid, info in sorted(files.items()):
        index_id = index_ids[fid]
        try:
            seg = catalog.get_segment(segment_id)
            if catalog.list_segment_indexes(seg.collectionID, segment_id=segment_id, index_id=index_id):
                continue
            catalog.add_index_file(segment_id, fid, info, index_id=index_id)
            recorded += 1
        except errors.MilvusError as e:  # dropped segment or index: nothing to record
            log.info("index file %s of segment %d not recorded: %s", info.path, segment_id, e)
    return recorded
