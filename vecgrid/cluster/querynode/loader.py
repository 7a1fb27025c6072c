"""Load sealed segments from storage into the engine (Milvus's ``segmentLoader``).

What a :class:`query.SegmentLoadInfo` points at, relative to the node's storage root
(``settings.common.data_dir``; see :mod:`vecgrid.storage.layout`):

* ``binlog_paths``: the column group ``FieldBinlog(fieldID=0)`` whose binlog(s) are the
  segment's ``data.parquet`` — every field plus the ``Timestamp`` column (row insert
  timestamps, for MVCC);
* ``deltalogs``: ``deltalog.parquet`` files, columns ``pk`` and ``ts``;
* ``index_infos``: one ``FieldIndexInfo`` per vector field; when its
  ``index_file_paths`` is empty the index is **built at load** from the vectors with
  the field's ``index.IndexInfo`` (index type, metric, build params).  The coordinator's
  index checker then has one node save it (:mod:`~vecgrid.cluster.querynode.index_saver`)
  and records the file, so later loads of the segment read it instead.

Every file is checked before it is decoded: its size against ``Binlog.log_size`` /
``FieldIndexInfo.index_size`` (when non-zero), and its checksum when the request
carries one in ``base.properties["vecgrid.checksum.<path>"] = "<algo>:<hex>"``
(:func:`checksums_from_properties`).  A missing, truncated, altered or undecodable
file raises ``SegmentLoadFailed`` (604) naming the file; paths that leave the
storage root are refused the same way.

:class:`SegmentLoader` is blocking (file reads, Parquet decoding, index builds): the node
runs it in a worker thread, never on an event loop, through :class:`LoadThreads`, which makes
sure that what a thread built is served or released even when its waiter is cancelled.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vecgrid import errors
from vecgrid.cluster.querynode.collections import Collection, field_dim
from vecgrid.cluster.querynode.segments import DeleteLog, SealedSegment
from vecgrid.proto import data_coord_pb2, query_coord_pb2, schema_pb2

TIMESTAMP_COLUMN = "Timestamp"  # vecgrid.storage.bulk_import.TIMESTAMP_FIELD: Milvus's system field 1
DATA_GROUP_FIELD_ID = 0         # FieldBinlog.fieldID of the one column group of data.parquet
# index types whose index keeps no exact copy of the vectors: the raw vectors are kept as a column
# so that queries can return them
LOSSY_INDEX_TYPES = frozenset({"IVF_SQ8", "IVF_PQ", "GPU_IVF_PQ"})

_keys = itertools.count(1)
log = logging.getLogger(__name__)

def _failed(segment_id: int, reason: str) -> errors.MilvusError:
    return errors.SegmentLoadFailed(reason, segment=segment_id)


def _check_rel(segment_id: int, path: str) -> None:
    parts = path.split("/")
    if not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise _failed(segment_id, f"file path {path!r} is not a path inside the storage root")


def _to_numpy(col: pa.ChunkedArray) -> np.ndarray:
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def _vectors(col: pa.ChunkedArray, dim: int) -> np.ndarray:
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if not (pa.types.is_fixed_size_list(arr.type) or pa.types.is_list(arr.type)):
        raise ValueError(f"vector column has type {arr.type}")
    values = arr.flatten().to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(values, dtype=np.float32).reshape(len(arr), dim)


def _json_column(col: pa.ChunkedArray) -> np.ndarray:
    out = np.empty(len(col), dtype=object)
    out[:] = [b"{}" if v is None else (v if isinstance(v, bytes) else str(v).encode()) for v in col.to_pylist()]
    return out


class SegmentLoader:
    """Reads segment files under ``root`` and builds engine segments on ``devices``."""

    def __init__(self, root: str, devices: Callable[[], Any]) -> None:
        self.root = root
        self._devices = devices  # () -> vecgrid.gpu.device.DeviceManager (created lazily)

    # -- files ---------------------------------------------------------------------------------
    def _size(self, rel: str) -> int | None:
        if "://" in self.root:
            import fsspec.core

            fs, base = fsspec.core.url_to_fs(self.root)
            try:
                return int(fs.size(f"{base.rstrip('/')}/{rel}"))
            except FileNotFoundError:
                return None
        try:
            return os.stat(os.path.join(self.root, *rel.split("/"))).st_size
        except FileNotFoundError:
            return None

    def _read_raw(self, rel: str) -> bytes:
        if "://" in self.root:
            import fsspec.core

            fs, base = fsspec.core.url_to_fs(self.root)
            with fs.open(f"{base.rstrip('/')}/{rel}", "rb") as f:
                return f.read()
        with open(os.path.join(self.root, *rel.split("/")), "rb") as f:
            return f.read()

    def read_file(self, segment_id: int, rel: str, size: int, checksum: str | None) -> Any:
        """The verified content of root-relative ``rel`` (bytes-like)."""
        from vecgrid.storage import segment_files

        _check_rel(segment_id, rel)
        actual = self._size(rel)
        if actual is None:
            raise _failed(segment_id, f"{rel}: file is missing")
        if size and actual != size:
            kind = "truncated" if actual < size else "longer than recorded"
            raise _failed(segment_id, f"{rel}: {kind} ({actual} bytes, expected {size})")
        try:
            if checksum:
                return segment_files.get_file(self.root, segment_files.FileInfo(rel, actual, checksum))
            data = self._read_raw(rel)
        except segment_files.CorruptSegmentError as e:
            raise _failed(segment_id, str(e)) from None
        except (OSError, ValueError) as e:
            raise _failed(segment_id, f"{rel}: {e}") from None
        if len(data) != actual:
            raise _failed(segment_id, f"{rel}: file changed size while being read")
        return data

    def _parquet(self, segment_id: int, rel: str, data: Any, columns: list[str],
                 optional: tuple[str, ...] = ()) -> pa.Table:
        """Decode ``columns`` (all required) and those of ``optional`` the file has."""
        try:
            pf = pq.ParquetFile(pa.BufferReader(pa.py_buffer(data)))
            names = pf.schema_arrow.names
            missing = [c for c in columns if c not in names]
            if missing:
                raise _failed(segment_id, f"{rel}: no column(s) {missing} (it has {names})")
            return pf.read(columns=columns + [c for c in optional if c in names], use_threads=True)
        except errors.MilvusError:
            raise
        except (pa.ArrowException, OSError, ValueError) as e:
            raise _failed(segment_id, f"{rel}: not a readable Parquet file: {e}") from None

    # -- delete logs ---------------------------------------------------------------------------
    def read_deltalogs(self, info: query_coord_pb2.SegmentLoadInfo, checksums: Mapping[str, str]) -> DeleteLog:
        """The deletes of a segment's delete logs."""
        log = DeleteLog()
        for group in info.deltalogs:
            for binlog in group.binlogs:
                data = self.read_file(info.segmentID, binlog.log_path, binlog.log_size,
                                      checksums.get(binlog.log_path))
                table = self._parquet(info.segmentID, binlog.log_path, data, ["pk", "ts"])
                pks = _to_numpy(table.column("pk"))
                if pks.dtype.kind == "O":
                    pks = pks.astype(str)
                log.add(pks, _to_numpy(table.column("ts")).astype(np.uint64))
        return log

    def read_primary_keys(self, coll: Collection, info: query_coord_pb2.SegmentLoadInfo) -> np.ndarray | None:
        """Only the primary-key column of a segment, for the shard leader's pk statistics.

        The worker that loads the segment verifies its files; this read decodes one column and
        returns None when the file cannot be read (the leader then treats the segment as holding
        every key).
        """
        pk = coll.pk_field.name
        try:
            keys = []
            for group in info.binlog_paths:
                if group.fieldID != DATA_GROUP_FIELD_ID:
                    continue
                for binlog in group.binlogs:
                    _check_rel(info.segmentID, binlog.log_path)
                    if "://" in self.root:
                        import fsspec.core

                        fs, base = fsspec.core.url_to_fs(self.root)
                        with fs.open(f"{base.rstrip('/')}/{binlog.log_path}", "rb") as f:
                            table = pq.read_table(f, columns=[pk])
                    else:
                        table = pq.read_table(os.path.join(self.root, *binlog.log_path.split("/")), columns=[pk])
                    keys.append(_to_numpy(table.column(pk)))
            return np.concatenate(keys) if keys else None
        except (errors.MilvusError, pa.ArrowException, OSError, ValueError):
            return None

    # -- segments ------------------------------------------------------------------------------
    def _read_rows(self, coll: Collection, info: query_coord_pb2.SegmentLoadInfo,
                   checksums: Mapping[str, str]) -> pa.Table:
        sid = info.segmentID
        groups = [g for g in info.binlog_paths if g.fieldID == DATA_GROUP_FIELD_ID]
        if not groups or not any(len(g.binlogs) for g in groups):
            have = [g.fieldID for g in info.binlog_paths]
            raise _failed(sid, "no data binlog: a vecgrid segment keeps every field in one data.parquet, listed as "
                               f"FieldBinlog(fieldID={DATA_GROUP_FIELD_ID}) (the request lists field ids {have})")
        wanted = [coll.pk_field.name] + [f.name for f in coll.scalar_fields] + [f.name for f in coll.vector_fields]
        tables = []
        for binlog in (b for g in groups for b in g.binlogs):
            data = self.read_file(sid, binlog.log_path, binlog.log_size, checksums.get(binlog.log_path))
            table = self._parquet(sid, binlog.log_path, data, wanted, optional=(TIMESTAMP_COLUMN,))
            if binlog.entries_num and table.num_rows != binlog.entries_num:
                raise _failed(sid, f"{binlog.log_path}: {table.num_rows} rows, the binlog says {binlog.entries_num}")
            tables.append(table)
        try:
            table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        except pa.ArrowInvalid as e:
            raise _failed(sid, f"data files do not share one schema: {e}") from None
        if info.num_of_rows and table.num_rows != info.num_of_rows:
            raise _failed(sid, f"data has {table.num_rows} rows, the load info says {info.num_of_rows}")
        return table

    def load(self, coll: Collection, info: query_coord_pb2.SegmentLoadInfo, *, version: int,
             checksums: Mapping[str, str], extra_deletes: DeleteLog | None = None) -> SealedSegment:
        """Load one segment (blocking).  ``extra_deletes``: the channel's L0 deletes for it."""
        from vecgrid.gpu import build
        from vecgrid.gpu.search import load_segment

        sid = info.segmentID
        deltalog = self.read_deltalogs(info, checksums)
        common = dict(segment_id=sid, collection_id=coll.id, partition_id=info.partitionID,
                      channel=info.insert_channel, version=version, level=info.level, load_info=info,
                      deltalog=deltalog)
        if info.level == data_coord_pb2.L0:
            return SealedSegment(num_rows=0, engines={}, index_infos={}, **common)

        vector_fields = [f for f in coll.vector_fields if f.data_type == schema_pb2.FloatVector]
        unsupported = [f.name for f in coll.vector_fields if f.data_type != schema_pb2.FloatVector]
        if unsupported:
            raise errors.ParameterInvalid(f"vector fields {unsupported} are not FloatVector; vecgrid serves "
                                          "FloatVector fields only", collection=coll.id)
        if not vector_fields:
            raise errors.ParameterInvalid("no vector field is loaded (load_fields must name one)",
                                          collection=coll.id)
        table = self._read_rows(coll, info, checksums)
        n = table.num_rows
        try:
            pks = _to_numpy(table.column(coll.pk_field.name))
            if pks.dtype.kind == "O":
                pks = pks.astype(str)
            timestamps = (_to_numpy(table.column(TIMESTAMP_COLUMN)).astype(np.uint64)
                          if TIMESTAMP_COLUMN in table.column_names else None)
            columns: dict[int, np.ndarray] = {}
            for f in coll.scalar_fields:
                col = table.column(f.name)
                columns[f.fieldID] = _json_column(col) if f.data_type == schema_pb2.JSON else _to_numpy(col)
            vectors = {f.fieldID: _vectors(table.column(f.name), field_dim(f)) for f in vector_fields}
        except (pa.ArrowException, ValueError, KeyError) as e:
            raise _failed(sid, f"cannot decode the segment's columns: {e}") from None
        del table

        deletes = DeleteLog()
        deletes.extend(deltalog)
        if extra_deletes is not None:
            deletes.extend(extra_deletes)
        delete_arrays = deletes.arrays()
        devices = self._devices()
        engines: dict[int, Any] = {}
        index_infos: dict[int, query_coord_pb2.FieldIndexInfo] = {}
        norms: dict[int, np.ndarray] = {}
        try:
            for f in vector_fields:
                fid = f.fieldID
                field_info = next((x for x in info.index_infos if x.fieldID == fid), None)
                index_info = coll.indexes.get(fid)
                params = list(index_info.index_params) if index_info is not None and len(index_info.index_params) \
                    else list(field_info.index_params) if field_info is not None else []
                if not params:
                    raise errors.IndexNotFound(f"vector field {f.name!r} has no index", collection=coll.name or coll.id,
                                               field=fid)
                index_type, metric, build_params = build.parse_index_params(params)
                recorded = query_coord_pb2.FieldIndexInfo()
                if field_info is not None:
                    recorded.CopyFrom(field_info)
                elif index_info is not None:
                    recorded.fieldID, recorded.index_name, recorded.indexID = fid, index_info.index_name, \
                        index_info.indexID
                    recorded.index_params.extend(index_info.index_params)
                recorded.num_rows = recorded.num_rows or n
                if field_info is not None and len(field_info.index_file_paths):
                    if len(field_info.index_file_paths) != 1:
                        raise _failed(sid, f"field {fid}: index of {len(field_info.index_file_paths)} files; "
                                           "vecgrid index files are single files")
                    path = field_info.index_file_paths[0]
                    data = self.read_file(sid, path, field_info.index_size, checksums.get(path))
                    where = path
                else:
                    try:
                        data = build.build_index(vectors[fid], index_type, metric, build_params,
                                                 manager=devices).to_bytes()
                    except errors.MilvusError:
                        raise
                    except Exception as e:  # noqa: BLE001 - faiss errors
                        raise _failed(sid, f"building the {index_type} index of field {fid} failed: {e}") from None
                    recorded.index_size = len(data)
                    where = f"the {index_type} index built for field {fid}"
                cols = dict(columns)
                if index_type in LOSSY_INDEX_TYPES:
                    cols[fid] = vectors[fid]  # the index cannot give the vectors back exactly
                elif metric == "COSINE":  # the index holds them normalised: keep the norms
                    norms[fid] = np.linalg.norm(vectors[fid], axis=1).astype(np.float32)
                try:
                    engine = load_segment(data, pks, columns=cols, timestamps=timestamps, deletes=delete_arrays,
                                          schema=coll.schema, segment_id=sid, field_id=fid,
                                          pk_field_id=coll.pk_field.fieldID, manager=devices,
                                          key=("querynode-segment", sid, fid, next(_keys)))
                except errors.MemoryLimitExceeded:
                    raise
                except Exception as e:  # noqa: BLE001 - a corrupt index file surfaces as many kinds
                    raise _failed(sid, f"{where}: cannot load it: {e}") from None
                engines[fid] = engine
                if engine.metric != metric:
                    raise _failed(sid, f"{where}: index metric {engine.metric} differs from the field's "
                                       f"index definition ({metric})")
                if engine.dim != field_dim(f):
                    raise _failed(sid, f"{where}: index dimension {engine.dim} differs from the field's "
                                       f"dim {field_dim(f)}")
                index_infos[fid] = recorded
        except BaseException:
            for engine in engines.values():
                engine.release()
            raise
        seg = SealedSegment(num_rows=n, engines=engines, index_infos=index_infos, **common)
        seg.vector_norms = norms
        return seg


def release_all(segments: Sequence[SealedSegment]) -> None:
    """Release segments (blocking: waits for searches in flight, frees device memory)."""
    for seg in segments:
        seg.release()


class LoadThreads:
    """The worker threads of segment loads, and the release of what a cancelled load built.

    ``asyncio.to_thread`` cancelled goes on in its thread and drops what the thread returns.  Built
    segments hold device and host reservations (:meth:`vecgrid.gpu.device.Device.reserve`, a keyed
    table with no finalizer), so a LoadSegments cancelled mid-build (a Dask task timeout, a gRPC
    deadline) leaked its budget and later loads failed with MemoryLimitExceeded.  Here the thread's
    future is shielded; when the waiter is cancelled a done-callback hands the thread's segments to
    :meth:`discard` once it ends.  Milvus's loader frees a failed load's segments the same way
    (``segmentLoader.Load``'s deferred release), but Go contexts do not drop a running result.

    Owned by the node's event loop: every method runs on it.
    """

    def __init__(self) -> None:
        self._releases: set[asyncio.Task] = set()

    async def run(self, fn: Callable[..., list[SealedSegment]], *args: Any,
                  settle: Callable[[], None] | None = None) -> list[SealedSegment]:
        """``fn(*args)`` in a worker thread; its segments are the caller's once this returns.

        ``settle`` runs when the segments of a cancelled call are released (a load marks its
        segments as loading until then, so a retry does not build a second copy beside them)."""
        work = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            work.add_done_callback(lambda done: self._abandoned(done, settle))
            raise

    def _abandoned(self, done: asyncio.Future, settle: Callable[[], None] | None) -> None:
        if done.cancelled() or done.exception() is not None:
            # the thread rolled its own segments back; its caller is gone, so the log is the only reader
            if not done.cancelled():
                log.warning("a cancelled segment load failed after its caller left: %s", done.exception())
            if settle is not None:
                settle()
            return
        self.discard(done.result(), settle)

    def discard(self, segments: Sequence[SealedSegment], settle: Callable[[], None] | None = None) -> None:
        """Release segments nobody will serve, in a worker thread, without awaiting it (the caller
        may be cancelled; a second cancel must not stop the release)."""
        release = asyncio.ensure_future(self._release(list(segments), settle))
        self._releases.add(release)
        release.add_done_callback(self._releases.discard)

    @staticmethod
    async def _release(segments: list[SealedSegment], settle: Callable[[], None] | None) -> None:
        try:
            await asyncio.to_thread(release_all, segments)
        except Exception:  # noqa: BLE001 - nobody awaits this: the log and a leaked budget are the trace
            log.error("releasing %d abandoned segment(s) failed", len(segments), exc_info=True)
        finally:
            if settle is not None:
                settle()

    async def run_to_end(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker thread, returning (or raising the cancel) only once it ended.

        For work done under the node's DML lock: a cancel must not free the lock while the thread
        still applies deletes that the lock serialises."""
        work = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        cancelled = False
        while not work.done():
            try:
                await asyncio.wait([work])
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError
        return work.result()

    @property
    def releasing(self) -> int:
        """Releases of abandoned segments still running."""
        return len(self._releases)

    async def close(self) -> None:
        """Wait for the releases in flight (a node closing must not leave them to a dead loop)."""
        while self._releases:
            await asyncio.wait(set(self._releases))
