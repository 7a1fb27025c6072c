"""Load sealed segments from storage into the engine (Milvus's ``segments.Loader``).

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
  and records the file, so later loads of the segment read it instead.  An entry with
  ``enable_index=False`` and no file is a segment whose index DataCoord's index builder has
  not built yet: it is served with an **interim FLAT index** (exact search, the field's
  metric) and reported with ``enable_index=False``, until an Index-scope reload brings the
  built file (:mod:`vecgrid.cluster.querycoord.checkers.index_checker`).  Every index served
  for real is reported with ``enable_index=True``.

Every file is checked before it is decoded: its size against ``Binlog.log_size`` /
``FieldIndexInfo.index_size`` (when non-zero), and its checksum when the request
carries one in ``base.properties["vecgrid.checksum.<path>"] = "<algo>:<hex>"``
(:func:`checksums_from_properties`).  A missing, truncated, altered or undecodable
file raises ``SegmentLoadFailed`` (604) naming the file; paths that leave the
storage root are refused the same way.  Files are read through the storage backends
of :mod:`vecgrid.storage.backend` (a local directory or an fsspec URL).

Two layers:

* :class:`SegmentBuilder` reads one segment's files and builds its engine segments.  It is
  blocking (file reads, Parquet decoding, index builds) and runs in worker threads only.
* :class:`SegmentLoader` is what the node's ``LoadSegments`` calls: a batch all or nothing
  (L0 segments first, their deletes reaching the channel's other segments), a segment
  loading at most once at a time, Index-scope reloads that carry deletes over, Delta-scope
  delete logs.  It runs on the node's event loop and sends the blocking work to threads
  through :class:`LoadThreads`, which makes sure that what a thread built is served or
  released even when its waiter is cancelled.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vecgrid import errors
from vecgrid.cluster.cores import available_cores, faiss_threads
from vecgrid.cluster.index_templates import TEMPLATES, TemplateKey
from vecgrid.cluster.querynode.collections import Collection, CollectionManager, field_dim
from vecgrid.cluster.querynode.segments import ALL_PARTITIONS, DeleteLog, SealedSegment, SegmentManager
from vecgrid.gpu.device import transient_heap
from vecgrid.proto import data_coord_pb2, query_coord_pb2, schema_pb2
from vecgrid.storage.backend import CorruptSegmentError, FileInfo, Storage, open_storage
from vecgrid.storage.mapped import disk_backed
from vecgrid.storage.segment_files import TIMESTAMP_FIELD

DATA_GROUP_FIELD_ID = 0         # FieldBinlog.fieldID of the one column group of data.parquet
# index types whose index keeps no exact copy of the vectors: the raw vectors are kept as a column (on
# disk, mapped: vecgrid.storage.mapped) so that queries can return them
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


def release_all(segments: Iterable[SealedSegment]) -> None:
    """Release segments (blocking: waits for searches in flight, frees device memory)."""
    for seg in segments:
        seg.release()


@dataclass
class _Columns:
    """A segment's rows decoded for the engine."""

    num_rows: int
    pks: np.ndarray
    timestamps: np.ndarray | None
    scalars: dict[int, np.ndarray]   # scalar field id -> values
    vectors: dict[int, np.ndarray]   # FloatVector field id -> n x dim


class _IndexSpec(NamedTuple):
    """How one vector field is indexed: the collection's definition, else the load info's; FLAT
    while ``interim`` (the index is not built yet: exact search with the definition's metric)."""

    index_type: str
    metric: str
    build_params: dict[str, Any]
    field_info: query_coord_pb2.FieldIndexInfo | None   # the load info's entry for the field
    interim: bool = False


class SegmentBuilder:
    """Reads one segment's files under ``root`` and builds its engine segments on ``devices``.

    Blocking; stateless between calls, so any number of worker threads may use it at once."""

    def __init__(self, root: str, devices: Callable[[], Any]) -> None:
        self.root = root
        self._devices = devices  # () -> vecgrid.gpu.device.DeviceManager (created lazily)

    @functools.cached_property
    def storage(self) -> Storage:
        """The root's backend, opened on first use (an s3:// root needs s3fs only once read)."""
        return open_storage(self.root)

    # -- files ---------------------------------------------------------------------------------
    def read_file(self, segment_id: int, rel: str, size: int, checksum: str | None) -> memoryview:
        """The verified content of root-relative ``rel``."""
        _check_rel(segment_id, rel)
        actual = self.storage.size(rel)
        if actual is None:
            raise _failed(segment_id, f"{rel}: file is missing")
        if size and actual != size:
            kind = "truncated" if actual < size else "longer than recorded"
            raise _failed(segment_id, f"{rel}: {kind} ({actual} bytes, expected {size})")
        try:
            if checksum:
                return memoryview(self.storage.read_verified(FileInfo(rel, actual, checksum)))
            return memoryview(self.storage.read_all(rel, actual))
        except CorruptSegmentError as e:
            raise _failed(segment_id, str(e)) from None
        except (OSError, ValueError) as e:
            raise _failed(segment_id, f"{rel}: {e}") from None

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

    # -- delete logs and keys ------------------------------------------------------------------
    def read_deltalogs(self, info: query_coord_pb2.SegmentLoadInfo, checksums: Mapping[str, str]) -> DeleteLog:
        """The deletes of a segment's delete logs."""
        log_ = DeleteLog()
        for group in info.deltalogs:
            for binlog in group.binlogs:
                data = self.read_file(info.segmentID, binlog.log_path, binlog.log_size,
                                      checksums.get(binlog.log_path))
                table = self._parquet(info.segmentID, binlog.log_path, data, ["pk", "ts"])
                pks = _to_numpy(table.column("pk"))
                if pks.dtype.kind == "O":
                    pks = pks.astype(str)
                log_.add(pks, _to_numpy(table.column("ts")).astype(np.uint64))
        return log_

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
                    local = self.storage.local_path(binlog.log_path)
                    if local is not None:  # Arrow reads a path natively, no Python file object
                        table = pq.read_table(local, columns=[pk])
                    else:
                        with self.storage.open_read(binlog.log_path) as f:
                            table = pq.read_table(f, columns=[pk])
                    keys.append(_to_numpy(table.column(pk)))
            return np.concatenate(keys) if keys else None
        except (errors.MilvusError, pa.ArrowException, OSError, ValueError):
            return None

    # -- one segment ---------------------------------------------------------------------------
    def build(self, coll: Collection, info: query_coord_pb2.SegmentLoadInfo, *, version: int,
              checksums: Mapping[str, str], extra_deletes: DeleteLog | None = None) -> SealedSegment:
        """Load one segment; all or nothing.  ``extra_deletes``: the channel's L0 deletes for it.

        What the load read and built on the way (the segment's table, its vectors, the index file's
        bytes: several times the index) is given back to the OS once it is dropped, else the
        allocators keep it and the node's resident memory stays at its peak."""
        with transient_heap():
            return self._build(coll, info, version=version, checksums=checksums, extra_deletes=extra_deletes)

    def _build(self, coll: Collection, info: query_coord_pb2.SegmentLoadInfo, *, version: int,
               checksums: Mapping[str, str], extra_deletes: DeleteLog | None) -> SealedSegment:
        sid = info.segmentID
        deltalog = self.read_deltalogs(info, checksums)
        identity = dict(segment_id=sid, collection_id=coll.id, partition_id=info.partitionID,
                        channel=info.insert_channel, version=version, level=info.level, load_info=info,
                        deltalog=deltalog)
        if info.level == data_coord_pb2.L0:
            return SealedSegment(num_rows=0, engines={}, index_infos={}, **identity)
        vector_fields = self._vector_fields(coll)
        columns = self._decode_columns(sid, coll, self._read_rows(coll, info, checksums), vector_fields)
        deletes = DeleteLog()
        deletes.extend(deltalog)
        if extra_deletes is not None:
            deletes.extend(extra_deletes)
        delete_arrays = deletes.arrays()
        engines: dict[int, Any] = {}
        index_infos: dict[int, query_coord_pb2.FieldIndexInfo] = {}
        norms: dict[int, np.ndarray] = {}
        try:
            for f in vector_fields:
                spec = self._index_spec(coll, info, f)
                data, recorded, where = self._index(sid, f, spec, coll, columns, checksums)
                engines[f.fieldID] = self._load_engine(sid, f, spec, data, where, coll, columns, delete_arrays)
                index_infos[f.fieldID] = recorded
                if spec.metric == "COSINE" and spec.index_type not in LOSSY_INDEX_TYPES:
                    # the index holds them normalised: keep the norms to give the stored vectors back
                    norms[f.fieldID] = np.linalg.norm(columns.vectors[f.fieldID], axis=1).astype(np.float32)
        except BaseException:
            for engine in engines.values():
                engine.release()
            raise
        seg = SealedSegment(num_rows=columns.num_rows, engines=engines, index_infos=index_infos, **identity)
        seg.vector_norms = norms
        return seg

    @staticmethod
    def _vector_fields(coll: Collection) -> list[schema_pb2.FieldSchema]:
        """The loaded vector fields, all of them FloatVector (vecgrid serves no other kind)."""
        unsupported = [f.name for f in coll.vector_fields if f.data_type != schema_pb2.FloatVector]
        if unsupported:
            raise errors.ParameterInvalid(f"vector fields {unsupported} are not FloatVector; vecgrid serves "
                                          "FloatVector fields only", collection=coll.id)
        if not coll.vector_fields:
            raise errors.ParameterInvalid("no vector field is loaded (load_fields must name one)",
                                          collection=coll.id)
        return list(coll.vector_fields)

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
            table = self._parquet(sid, binlog.log_path, data, wanted, optional=(TIMESTAMP_FIELD,))
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

    @staticmethod
    def _decode_columns(sid: int, coll: Collection, table: pa.Table,
                        vector_fields: Sequence[schema_pb2.FieldSchema]) -> _Columns:
        try:
            pks = _to_numpy(table.column(coll.pk_field.name))
            if pks.dtype.kind == "O":
                pks = pks.astype(str)
            timestamps = (_to_numpy(table.column(TIMESTAMP_FIELD)).astype(np.uint64)
                          if TIMESTAMP_FIELD in table.column_names else None)
            scalars: dict[int, np.ndarray] = {}
            for f in coll.scalar_fields:
                col = table.column(f.name)
                scalars[f.fieldID] = _json_column(col) if f.data_type == schema_pb2.JSON else _to_numpy(col)
            vectors = {f.fieldID: _vectors(table.column(f.name), field_dim(f)) for f in vector_fields}
        except (pa.ArrowException, ValueError, KeyError) as e:
            raise _failed(sid, f"cannot decode the segment's columns: {e}") from None
        return _Columns(table.num_rows, pks, timestamps, scalars, vectors)

    @staticmethod
    def _index_spec(coll: Collection, info: query_coord_pb2.SegmentLoadInfo,
                    f: schema_pb2.FieldSchema) -> _IndexSpec:
        from vecgrid.gpu import build

        field_info = next((x for x in info.index_infos if x.fieldID == f.fieldID), None)
        index_info = coll.indexes.get(f.fieldID)
        params = list(index_info.index_params) if index_info is not None and len(index_info.index_params) \
            else list(field_info.index_params) if field_info is not None else []
        if not params:
            raise errors.IndexNotFound(f"vector field {f.name!r} has no index", collection=coll.name or coll.id,
                                       field=f.fieldID)
        index_type, metric, build_params = build.parse_index_params(params)
        if field_info is not None and not field_info.enable_index and not len(field_info.index_file_paths):
            return _IndexSpec("FLAT", metric, {}, field_info, interim=True)
        return _IndexSpec(index_type, metric, build_params, field_info)

    def _index(self, sid: int, f: schema_pb2.FieldSchema, spec: _IndexSpec, coll: Collection,
               columns: _Columns, checksums: Mapping[str, str]) -> tuple[Any, query_coord_pb2.FieldIndexInfo, str]:
        """The field's index: its file read when the load info lists one, else built from the vectors.

        Returns ``(data, recorded, where)``: the file's bytes or the built index, the ``FieldIndexInfo``
        the node reports for it, and how errors name it (its path, or "the … index built for field …")."""
        from vecgrid.gpu import build

        fid, field_info = f.fieldID, spec.field_info
        recorded = query_coord_pb2.FieldIndexInfo()
        index_info = coll.indexes.get(fid)
        if field_info is not None:
            recorded.CopyFrom(field_info)
        elif index_info is not None:
            recorded.fieldID, recorded.index_name, recorded.indexID = fid, index_info.index_name, index_info.indexID
            recorded.index_params.extend(index_info.index_params)
        recorded.num_rows = recorded.num_rows or columns.num_rows
        recorded.enable_index = not spec.interim
        if field_info is not None and len(field_info.index_file_paths):
            if len(field_info.index_file_paths) != 1:
                raise _failed(sid, f"field {fid}: index of {len(field_info.index_file_paths)} files; "
                                   "vecgrid index files are single files")
            path = field_info.index_file_paths[0]
            return self.read_file(sid, path, field_info.index_size, checksums.get(path)), recorded, path
        key = TemplateKey(self.root, coll.id, fid, recorded.indexID) if recorded.indexID else None
        try:
            with faiss_threads(available_cores()):   # the host's free cores, as a search leases them
                built = TEMPLATES.build(key, columns.vectors[fid], spec.index_type, spec.metric, spec.build_params,
                                        functools.partial(build.build_index, manager=self._devices()))
            recorded.index_size = built.file_size   # counted once: the engine budgets the same figure
        except errors.MilvusError:
            raise
        except Exception as e:  # noqa: BLE001 - faiss errors
            raise _failed(sid, f"building the {spec.index_type} index of field {fid} failed: {e}") from None
        # handed to the engine as it is, not serialized and read back (the index saver writes the file later)
        return built, recorded, f"the {spec.index_type} index built for field {fid}"

    def _load_engine(self, sid: int, f: schema_pb2.FieldSchema, spec: _IndexSpec, data: Any, where: str,
                     coll: Collection, columns: _Columns, deletes: tuple[np.ndarray, np.ndarray] | None) -> Any:
        """The field's engine segment (index placed on a device, rows beside it), checked against
        the field's definition; released again when the check fails."""
        from vecgrid.gpu.loaded_segment import load_segment

        fid = f.fieldID
        cols = dict(columns.scalars)
        if spec.index_type in LOSSY_INDEX_TYPES:
            # the index cannot give the vectors back exactly; output fields read them, searches never: on
            # disk, mapped, not in the node's memory
            cols[fid] = disk_backed(columns.vectors[fid])
        try:
            engine = load_segment(data, columns.pks, columns=cols, timestamps=columns.timestamps, deletes=deletes,
                                  schema=coll.schema, segment_id=sid, field_id=fid,
                                  pk_field_id=coll.pk_field.fieldID, manager=self._devices(),
                                  key=("querynode-segment", sid, fid, next(_keys)))
        except errors.MemoryLimitExceeded:
            raise
        except Exception as e:  # noqa: BLE001 - a corrupt index file surfaces as many kinds
            raise _failed(sid, f"{where}: cannot load it: {e}") from None
        problem = None
        if engine.metric != spec.metric:
            problem = f"index metric {engine.metric} differs from the field's index definition ({spec.metric})"
        elif engine.dim != field_dim(f):
            problem = f"index dimension {engine.dim} differs from the field's dim {field_dim(f)}"
        if problem is not None:
            engine.release()
            raise _failed(sid, f"{where}: {problem}")
        return engine


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
        #: failures nobody was left to see (a release that lost budget, deletes a cancelled caller
        #: left half applied): the node reports them in CheckHealth until it is restarted
        self.problems: list[str] = []

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

    async def _release(self, segments: list[SealedSegment], settle: Callable[[], None] | None) -> None:
        try:
            await asyncio.to_thread(release_all, segments)
        except Exception as e:  # noqa: BLE001 - nobody awaits this: the budget is lost, the node says so
            self._unhealthy(f"releasing {len(segments)} abandoned segment(s) failed: {type(e).__name__}: {e}", e)
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
            error = work.exception()
            if error is not None:  # its caller is gone: nobody retries, so the node turns unhealthy
                self._unhealthy(f"{getattr(fn, '__name__', fn)} failed after its caller was cancelled: "
                                f"{type(error).__name__}: {error}", error)
            raise asyncio.CancelledError
        return work.result()

    def _unhealthy(self, problem: str, error: BaseException) -> None:
        log.error("%s", problem, exc_info=error)
        self.problems.append(problem)

    @property
    def releasing(self) -> int:
        """Releases of abandoned segments still running."""
        return len(self._releases)

    async def close(self) -> None:
        """Wait for the releases in flight (a node closing must not leave them to a dead loop)."""
        while self._releases:
            await asyncio.wait(set(self._releases))


class SegmentLoader:
    """The node's segment loads, as Milvus's ``segments.Loader``: LoadSegments of scope Full,
    Index and Delta, each all or nothing, ending in the :class:`SegmentManager`.

    State and owners: ``_loading`` (segment id → future done when that load settled) and every
    change to the managers are the node's event loop's; a segment being built is its worker
    thread's until :class:`LoadThreads` hands it back, then this loader's until it is put (or
    released).  Putting segments and applying deletes to served ones happen under the node's DML
    lock (``dml_lock()``), which its Delete handlers take too.
    """

    def __init__(self, root: str, devices: Callable[[], Any], segments: SegmentManager,
                 collections: CollectionManager, dml_lock: Callable[[], asyncio.Lock],
                 on_change: Callable[[], None]) -> None:
        self.builder = SegmentBuilder(root, devices)
        self.segments = segments
        self.collections = collections
        self._dml_lock = dml_lock
        self._changed = on_change
        self._loading: dict[int, asyncio.Future] = {}
        self._threads = LoadThreads()

    # -- what the delegator and the index saver read ---------------------------------------------
    @property
    def root(self) -> str:
        return self.builder.root

    def read_deltalogs(self, info: query_coord_pb2.SegmentLoadInfo, checksums: Mapping[str, str]) -> DeleteLog:
        return self.builder.read_deltalogs(info, checksums)

    def read_primary_keys(self, coll: Collection, info: query_coord_pb2.SegmentLoadInfo) -> np.ndarray | None:
        return self.builder.read_primary_keys(coll, info)

    @property
    def loading(self) -> set[int]:
        """Segments whose load has not settled (served or released) yet."""
        return set(self._loading)

    @property
    def problems(self) -> list[str]:
        """Failures of abandoned work that left this node unfit to serve (for CheckHealth)."""
        return list(self._threads.problems)

    async def close(self) -> None:
        await self._threads.close()

    # -- scope Full --------------------------------------------------------------------------
    async def load_full(self, coll: Collection, req: query_coord_pb2.LoadSegmentsRequest,
                        checksums: Mapping[str, str]) -> None:
        """Load the listed segments not loaded yet (L0 first), all or nothing, and commit ``coll``."""
        infos = list({i.segmentID: i for i in req.infos}.values())
        await self._wait_for_loads([i.segmentID for i in infos])
        todo = [i for i in infos if i.segmentID not in self.segments]
        if not todo:  # already loaded (Milvus's loader skips them)
            self.collections.commit(coll)
            return
        settled = asyncio.get_running_loop().create_future()
        for info in todo:
            self._loading[info.segmentID] = settled

        def settle() -> None:  # the segments are served or released: a waiting load may go on
            for info in todo:
                if self._loading.get(info.segmentID) is settled:
                    del self._loading[info.segmentID]
            if not settled.done():
                settled.set_result(None)

        known = coll.id in self.collections
        try:
            l0 = self._l0_snapshot(coll.id, todo)
            loaded = await self._threads.run(self._load_batch, coll, todo, req.version, checksums, l0,
                                             settle=settle)
        except asyncio.CancelledError:
            raise  # settled once the thread's segments are released
        except BaseException:
            settle()
            raise
        served = False
        try:
            if known and coll.id not in self.collections:  # ReleaseCollection while loading
                raise errors.CollectionNotLoaded("released while its segments were loading", collection=coll.id)
            async with self._dml_lock():
                self._put(coll, loaded)
                served = True  # the manager's from here on, whatever happens next
                await self._apply_new_l0(coll, loaded)
        except BaseException:
            if served:
                settle()
            else:
                self._threads.discard(loaded, settle)
            raise
        settle()

    async def _wait_for_loads(self, ids: Iterable[int]) -> None:
        while True:
            pending = {self._loading[i] for i in ids if i in self._loading}
            if not pending:
                return
            # asyncio.wait, not gather: a cancelled waiter (a client gone) must not cancel the shared
            # future of a load another request is still running
            await asyncio.wait(pending)

    def _l0_snapshot(self, coll_id: int, infos: Sequence[query_coord_pb2.SegmentLoadInfo]) -> dict[int, DeleteLog]:
        """For each non-L0 segment to load, the deletes of the L0 segments of its channel held here
        (taken on the loop; L0 segments of the same request are added by :meth:`_load_batch`)."""
        return {i.segmentID: self.segments.l0_deletes(coll_id, i.insert_channel, i.partitionID)
                for i in infos if i.level != data_coord_pb2.L0}

    def _load_batch(self, coll: Collection, infos: Sequence[query_coord_pb2.SegmentLoadInfo], version: int,
                    checksums: Mapping[str, str], l0: dict[int, DeleteLog]) -> list[SealedSegment]:
        """Build ``infos`` (L0 first), all or nothing.  Runs in a worker thread."""
        loaded: list[SealedSegment] = []
        batch_l0: list[SealedSegment] = []
        try:
            for info in sorted(infos, key=lambda i: i.level != data_coord_pb2.L0):
                extra = None
                if info.level != data_coord_pb2.L0:
                    extra = DeleteLog()
                    extra.extend(l0.get(info.segmentID, DeleteLog()))
                    for seg in batch_l0:
                        if seg.channel == info.insert_channel and seg.partition_id in (ALL_PARTITIONS,
                                                                                        info.partitionID):
                            extra.extend(seg.deltalog)
                seg = self.builder.build(coll, info, version=version, checksums=checksums, extra_deletes=extra)
                loaded.append(seg)
                if seg.is_l0:
                    batch_l0.append(seg)
        except BaseException:
            release_all(loaded)
            raise
        return loaded

    def _put(self, coll: Collection, loaded: list[SealedSegment]) -> None:
        """Serve ``loaded`` and commit ``coll`` with their partitions, in one step (no await)."""
        partitions = {s.partition_id for s in loaded if not s.is_l0 and s.partition_id != ALL_PARTITIONS}
        self.collections.commit(coll.updated(add_partitions=partitions))
        for seg in loaded:
            self.segments.put(seg)
        self._changed()

    async def _apply_new_l0(self, coll: Collection, loaded: list[SealedSegment]) -> None:
        """An L0 segment's deletes reach every sealed segment of its channel (and partition, unless
        it is of all partitions) served before it; those of its own batch got them when built."""
        new_l0 = [s for s in loaded if s.is_l0]
        if not new_l0:
            return
        ids = {s.segment_id for s in loaded}
        targets = [(seg, l0s) for l0s in new_l0
                   for seg in self.segments.list(coll.id, channels=[l0s.channel], exclude_l0=True)
                   if seg.segment_id not in ids and l0s.partition_id in (ALL_PARTITIONS, seg.partition_id)]
        await self._threads.run_to_end(self._apply_l0, targets)

    @staticmethod
    def _apply_l0(targets: list[tuple[SealedSegment, SealedSegment]]) -> None:
        for seg, l0 in targets:
            arrays = l0.deltalog.arrays()
            if arrays is not None:
                seg.delete(*arrays)

    # -- scope Delta -------------------------------------------------------------------------
    async def load_delta(self, infos: Sequence[query_coord_pb2.SegmentLoadInfo], checksums: Mapping[str, str]) -> None:
        """Apply the listed delete logs to segments already loaded (others skipped)."""
        work = [(self.segments.get(i.segmentID), i) for i in infos]
        work = [(s, i) for s, i in work if s is not None]
        logs = await asyncio.to_thread(lambda: [self.builder.read_deltalogs(i, checksums) for _, i in work])
        async with self._dml_lock():
            def apply() -> None:
                for (seg, _), deletes in zip(work, logs):
                    arrays = deletes.arrays()
                    if arrays is not None:
                        seg.delete(*arrays)
            await self._threads.run_to_end(apply)
        if work:
            self._changed()

    # -- scope Index -------------------------------------------------------------------------
    async def reload_indexes(self, coll: Collection, req: query_coord_pb2.LoadSegmentsRequest,
                             checksums: Mapping[str, str]) -> None:
        """Load the listed segments again with their new index infos and swap them in (deletes
        applied since the first load carried over); unknown segments skipped."""
        work = [i for i in req.infos if (s := self.segments.get(i.segmentID)) is not None and not s.is_l0]
        if not work:
            self.collections.commit(coll)
            return
        olds = {i.segmentID: self.segments.get(i.segmentID) for i in work}
        seen = {sid: len(s.runtime_deletes.parts) for sid, s in olds.items()}
        l0 = self._l0_snapshot(coll.id, work)

        def load_all() -> list[SealedSegment]:
            out = []
            try:
                for info in work:
                    old = olds[info.segmentID]
                    seg = self.builder.build(coll, info, version=req.version or old.version, checksums=checksums,
                                             extra_deletes=l0.get(info.segmentID))
                    out.append(seg)
                    for pks, ts in old.runtime_deletes.parts[:seen[info.segmentID]]:
                        seg.delete(pks, ts)
            except BaseException:
                release_all(out)
                raise
            return out

        def catch_up(fresh: list[SealedSegment]) -> None:
            for seg in fresh:  # deletes that arrived while loading
                for pks, ts in olds[seg.segment_id].runtime_deletes.parts[seen[seg.segment_id]:]:
                    seg.delete(pks, ts)

        fresh = await self._threads.run(load_all)
        try:
            async with self._dml_lock():
                await self._threads.run_to_end(catch_up, fresh)
                self.collections.commit(coll)
                replaced = [self.segments.put(seg) for seg in fresh]
        except BaseException:
            self._threads.discard(fresh)
            raise
        self._changed()
        await asyncio.to_thread(release_all, [s for s in replaced if s is not None])
