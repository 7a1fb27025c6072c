"""Record index files a QueryNode saved as the segment's index builds (DataCoord's ``SegmentIndex``).

Once recorded, :func:`vecgrid.cluster.querycoord.load_info.segment_load_info` lists the file in
``SegmentLoadInfo.index_infos`` and every later load reads it (verified) instead of building.
The catalog lives in the coordinator's process, so this runs there, after the node's
``save_index`` task returned.  A save can be overtaken while it runs: the segment dropped
(compaction, a dropped collection) or the index dropped and created again.  Neither may
record a stale build, so ``Catalog.add_index_file`` checks the live index id under its lock;
such a file is skipped (the checker saves the new index once a node serves it).
"""

from __future__ import annotations

import logging
from typing import Mapping

from vecgrid import errors
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.segment_files import FileInfo

log = logging.getLogger(__name__)


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
