"""Save the indexes a QueryNode built at load, so later loads read them instead of building.

A bulk-imported segment may carry an index *definition* and no index file; the loader then
builds the index from the vectors (:mod:`vecgrid.cluster.querynode.loader`).  In Milvus an
IndexNode builds and DataCoord records a ``SegmentIndex``; here the node that already built
the index writes it to the segment's storage root (``segment_files.index_path``, through
:func:`vecgrid.cluster.index_builds.write_index_file`: atomically, with size and checksum) and returns
the :class:`~vecgrid.storage.segment_files.FileInfo`\\ s.  It never touches the catalog: the
coordinator records the files (:mod:`vecgrid.cluster.index_builds`), after checking the index is
still the live one.

The request and reply are plain Python values (Dask pickles them): this is a Dask task
handler, not a gRPC method.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from vecgrid import errors
from vecgrid.cluster.index_builds import write_index_file
from vecgrid.storage import segment_files
from vecgrid.storage.segment_files import FileInfo

if TYPE_CHECKING:   # the coordinator imports this module for the request: not the node's segments
    from vecgrid.cluster.querynode.segments import SealedSegment


@dataclass(frozen=True)
class SaveIndexRequest:
    collection_id: int
    segment_id: int
    #: vector field id -> the index id the coordinator wants saved (the node must serve that one)
    fields: Mapping[int, int] = field(default_factory=dict)


def save_segment_indexes(root: str, seg: SealedSegment, fields: Mapping[int, int]) -> dict[int, FileInfo]:
    """Write the index of each field in ``fields`` under ``root``; ``{field id: FileInfo}`` (blocking).

    A field served with another index (dropped and created again since the node loaded it) is
    refused with ``IndexNotFound``: its file would record a build of the wrong index.  A failed
    write is ``IO failed`` (1001); the coordinator's checker proposes the save again later."""
    from vecgrid.gpu.device import transient_heap   # here: the coordinator imports this module, not the engine

    with transient_heap():   # the serialized index is a transient copy of it: given back after the write
        return _save(root, seg, fields)


def _save(root: str, seg: SealedSegment, fields: Mapping[int, int]) -> dict[int, FileInfo]:
    out: dict[int, FileInfo] = {}
    for fid, index_id in sorted(fields.items()):
        served = seg.index_infos.get(fid)
        if served is None or served.indexID != index_id:
            raise errors.IndexNotFound(
                f"segment {seg.segment_id} serves index {served.indexID if served else 'none'} on field {fid}, "
                f"not {index_id}", segment=seg.segment_id, field=fid)
        data = seg.engine(fid).index_file()
        path = segment_files.index_path(seg.collection_id, seg.partition_id, seg.segment_id, fid)
        out[fid] = write_index_file(root, path, data, segment_id=seg.segment_id)
    return out
