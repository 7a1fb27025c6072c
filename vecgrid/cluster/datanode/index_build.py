"""Build one sealed segment's index for one vector field: a Dask task handler (Milvus's IndexNode job).

DataCoord's index builder (:mod:`vecgrid.cluster.datacoord.index_builder`) submits
:func:`build_segment_index` as the Dask task ``build-index-<segment>-…`` with an
:class:`IndexBuildRequest`; on the worker it

1. reads the segment's vector column from ``data.parquet``, size and checksum verified before
   anything is decoded (:func:`vecgrid.storage.segment_files.read_segment`, as every reader does);
2. builds the field's index with :func:`vecgrid.gpu.build.build_index` — on the worker's GPU when it
   has one (the device's owner thread), else on the host with the host's free cores — an IVF index
   from the index's trained template when there is one (:mod:`vecgrid.cluster.index_templates`);
3. writes the index file under the segment's directory, named after the build
   (``index_<field>_<build>.bin``), atomically with size and checksum
   (:func:`vecgrid.cluster.index_builds.write_index_file`, shared with the QueryNode's index saver);

and returns its :class:`~vecgrid.storage.segment_files.FileInfo`.  Plain values in and out (Dask
pickles them); it never touches the catalog: the coordinator records the file.

It is a plain (not async) function, so Dask runs it in the worker's task threads, never on the
worker's event loop where the QueryNode's gRPC server and load tasks run.  Nothing is kept between
calls.  A retry of the same build (the task failed, or its worker died) writes the same path again:
the rename makes the last complete write the file, and only the attempt whose result the
coordinator receives is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pyarrow as pa

from vecgrid import errors
from vecgrid.cluster.cores import available_cores, faiss_threads
from vecgrid.cluster.index_builds import write_index_file
from vecgrid.common.faults import crash_point
from vecgrid.storage import segment_files
from vecgrid.storage.segment_files import FileInfo, SegmentFiles

#: crash point between the build and the write (kill -9 tests of a worker mid-build)
CRASH_BEFORE_WRITE = "datanode.index_build.before_write"


@dataclass(frozen=True)
class IndexBuildRequest:
    """One field's index build of one sealed segment."""

    root: str                 # the storage root the segment's paths are relative to
    collection_id: int
    partition_id: int
    segment_id: int
    num_rows: int
    data: FileInfo            # the segment's data.parquet
    field_id: int
    field_name: str
    dim: int
    index_id: int             # the live index of the field the file is built for
    build_id: int             # names the file; one per submission
    index_params: Mapping[str, str] = field(default_factory=dict)  # the index definition's params

    @property
    def path(self) -> str:
        return segment_files.index_path(self.collection_id, self.partition_id, self.segment_id, self.field_id,
                                         build_id=self.build_id)


def build_segment_index(req: IndexBuildRequest) -> FileInfo:
    """Read, build, write (see the module doc); the written file.  Blocking.

    A missing or altered data file is ``SegmentLoadFailed`` (604) naming it, bad index params
    ``ParameterInvalid``, a failed write ``IO failed``: the task fails and Dask retries it."""
    from vecgrid.gpu.device import transient_heap   # the coordinator imports this module for the request

    # the segment's table and the index's bytes go back to the system (see the loader's build)
    with transient_heap(), faiss_threads(available_cores()):   # the host's free cores (Dask's workers: one)
        data = _build(req)
    crash_point(CRASH_BEFORE_WRITE)
    return write_index_file(req.root, req.path, data, segment_id=req.segment_id)


def _build(req: IndexBuildRequest) -> bytes:
    from vecgrid.cluster.index_templates import TEMPLATES, TemplateKey
    from vecgrid.gpu import build

    vectors = read_vectors(req)
    index_type, metric, params = build.parse_index_params(dict(req.index_params))
    key = TemplateKey(req.root, req.collection_id, req.field_id, req.index_id) if req.index_id else None
    try:
        return TEMPLATES.build(key, vectors, index_type, metric, params, build.build_index).to_bytes()
    except errors.MilvusError:
        raise
    except Exception as e:  # noqa: BLE001 - faiss errors surface as many kinds
        raise errors.ServiceInternal(f"building the {index_type} index of field {req.field_id} of segment "
                                     f"{req.segment_id} failed: {e}", segment=req.segment_id) from None


def read_vectors(req: IndexBuildRequest) -> np.ndarray:
    """The field's vectors, ``num_rows x dim`` float32, from the verified data file."""
    files = SegmentFiles(root=req.root, collection_id=req.collection_id, partition_id=req.partition_id,
                         segment_id=req.segment_id, num_rows=req.num_rows, data=req.data)
    try:
        table = segment_files.read_segment(files, [req.field_name])
        column = table.column(req.field_name)
        arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        if not (pa.types.is_fixed_size_list(arr.type) or pa.types.is_list(arr.type)):
            raise ValueError(f"column {req.field_name!r} has type {arr.type}, not a vector column")
        values = arr.flatten().to_numpy(zero_copy_only=False)
        return np.ascontiguousarray(values, dtype=np.float32).reshape(len(arr), req.dim)
    except (segment_files.SegmentStorageError, pa.ArrowException, OSError, ValueError, KeyError) as e:
        raise errors.SegmentLoadFailed(f"{req.data.path}: {e}", segment=req.segment_id) from None
