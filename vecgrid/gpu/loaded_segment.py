"""Loaded (sealed) segments: an index on a GPU or in host memory, searched exactly under filters.

:func:`load_segment` reads a segment's index file (bytes or path), places it — on
the GPU with most budget left when the index type can live on a GPU and it fits,
else in host memory (``LoadedSegment.placement`` is ``"GPU"`` or ``"CPU"``, and
``info["placement_reason"]`` says why) — and keeps the segment's primary keys,
insert timestamps, scalar columns and deletes beside it (host memory, counted
separately from the index).  :meth:`LoadedSegment.release` frees both.
:func:`search_segments` searches sealed and growing segments and merges them;
:func:`search_request` does that from a QueryNode request's plan and placeholder
bytes and returns ``schema.SearchResultData``.

Default search params (Milvus names; override per request)
-----------------------------------------------------------
* IVF_FLAT / IVF_SQ8 / IVF_PQ / GPU_IVF_*: ``nprobe = min(nlist, max(16, nlist // 8))``
  (16 at the default nlist=128: recall@10 ≥ 0.99 on the 100,000 × 128 test set;
  8 gives ≈0.98, 4 ≈0.95).  ``nprobe`` is clamped to ``nlist``.
* HNSW (and GPU_CAGRA built as HNSW): ``ef = max(64, k)`` (recall@10 ≈ 0.98 with the
  default M=16, efConstruction=64).  ``ef < k`` is refused, as Milvus does.
* GPU_CAGRA on a GPU: ``itopk_size = max(64, k)``, ``search_width = 1``.
* topk must be in [1, 16384].

The filtered-search rule
------------------------
A request's *allowed* rows are: rows passing the filter ``Expr``, minus rows
inserted after the request's timestamp, minus rows deleted at or before it
(:class:`~vecgrid.gpu.rows.RowStore`).  Let ``count`` be their number, ``n`` the
segment's rows, ``s = count / n`` and ``need = min(k, count)``.

1. ``count == 0``: no hits.  ``count == n``: the plain index search.
2. FLAT on the host always uses rule 3's exact search.
3. Other indexes, when ``count <= max(k, 1024)`` or ``s <= 0.05``: exact search over the
   allowed rows.  When ``nq >= 20`` or ``s <= 0.1`` their vectors are gathered — a view
   of the FLAT/HNSW index's own flat storage (no second copy is kept), or IVF rows
   decoded through a direct map made on first need (n × 8 bytes) — and searched with
   faiss's BLAS brute force; otherwise the flat storage (FLAT, HNSW) is scanned under
   an ``IDSelectorBitmap``, or the IVF index searched with ``nprobe = nlist`` under it.
   Either way every allowed row is scored: exact distances for FLAT, HNSW and
   IVF_FLAT, the codes' distances for IVF_SQ8 / IVF_PQ.
4. Otherwise the index is searched under the filter with its search budget widened —
   IVF ``nprobe × s^-1/4``, HNSW/CAGRA ``ef × s^-1/2`` (both capped: nprobe ≤ nlist):
   host indexes get the ``IDSelectorBitmap`` through ``SearchParametersIVF`` /
   ``SearchParametersHNSW``; GPU indexes (no IDSelector support) are searched for
   ``k' = min(n, ceil(1.5·k/s) + k)`` neighbours (exact search instead when k' > 2048)
   which are then filtered on the host.
5. Any query that still has fewer than ``need`` hits (IVF probes reaching too few
   allowed rows, HNSW cut off by the filter, GPU over-sampling too small) is run
   again by rule 3's exact search.

So a hit never violates the filter and is never a deleted or invisible row, and
every query returns exactly ``min(k, count)`` hits.  On a GPU, rule 3 for FLAT copies
only the allowed rows off the device (``reconstruct_batch``) and brute-forces them with
cupy; other GPU indexes run it on a host copy of the index made on first need
(counted in host memory).
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import math
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Collection, Hashable, Iterable, Mapping, Sequence

import numpy as np

from vecgrid import errors
from vecgrid.common.scan_cost import default_nprobe, scanned_rows
from vecgrid.gpu import cupy_engine, require_faiss
from vecgrid.gpu.build import (GPU_MOVABLE, BuiltIndex, normalize_rows, quantizer_fingerprint, read_index_file,
                               serialize_index)
from vecgrid.gpu.columns import FieldColumn
from vecgrid.gpu.device import (Device, DeviceManager, cupy_module, default_manager, faiss_has_gpu,
                                gpu_resources, trim_host_heap)
from vecgrid.gpu.growing import GrowingSegment, brute_force_knn
from vecgrid.gpu.merge import MAX_TOPK, TopK, constant, larger_is_better, merge_full, merge_hit_lists, merge_topk
from vecgrid.gpu.plan import parse_search_plan
from vecgrid.gpu.results import decode_placeholder_group, to_search_result_data
from vecgrid.gpu.rows import RowStore, bitmap_selector, fields_from_schema
from vecgrid.proto import plan_pb2, schema_pb2

log = logging.getLogger(__name__)

__all__ = [
    "LoadedSegment", "load_segment", "search_segments", "search_request", "default_search_params",
    "fan_out_width", "probing", "FAN_OUT_WORK", "EXACT_FRACTION", "EXACT_ROWS", "FLAT_GATHER_FRACTION", "GPU_MAX_K",
]

EXACT_FRACTION = 0.05   # rule 3: exact when at most this fraction of rows is allowed
EXACT_ROWS = 1024       # rule 3: ... or at most this many rows (or k)
FLAT_GATHER_FRACTION = 0.1  # rule 2: gather + BLAS at or below this fraction (or nq >= 20)
GPU_MAX_K = 2048        # faiss GPU's largest k
DEFAULT_EF = 64
DEFAULT_ITOPK = 64


def _int(params: Mapping[str, Any], key: str, lo: int, hi: int) -> int | None:
    if key not in params or params[key] is None:
        return None
    try:
        v = int(params[key])
    except (TypeError, ValueError) as e:
        raise errors.ParameterInvalid(f"search param '{key}' ({params[key]!r}) should be an integer") from e
    if not lo <= v <= hi:
        raise errors.ParameterInvalid(f"search param '{key}' ({v}) should be in range [{lo}, {hi}]")
    return v


def default_search_params(family: str, k: int, params: Mapping[str, Any] | None = None,
                          nlist: int = 0) -> dict[str, int]:
    """Checked search params with defaults for an index family ("flat", "ivf", "hnsw", "cagra")."""
    p = dict(params or {})
    for unsupported in ("radius", "range_filter"):
        if unsupported in p:
            raise errors.ParameterInvalid("range search (radius / range_filter) is not supported by vecgrid")
    out: dict[str, int] = {}
    if family == "ivf":
        nprobe = _int(p, "nprobe", 1, 65536)
        out["nprobe"] = min(nlist, nprobe) if nprobe else default_nprobe(nlist)
    elif family == "hnsw":
        ef = _int(p, "ef", 1, 32768)
        if ef is not None and ef < k:
            raise errors.ParameterInvalid(f"ef ({ef}) should be larger than or equal to topk ({k})")
        out["ef"] = ef if ef is not None else max(DEFAULT_EF, k)
    elif family == "cagra":
        itopk = _int(p, "itopk_size", 1, 65536)
        if itopk is not None and itopk < k:
            raise errors.ParameterInvalid(f"itopk_size ({itopk}) should be larger than or equal to topk ({k})")
        out["itopk_size"] = itopk if itopk is not None else max(DEFAULT_ITOPK, k)
        out["search_width"] = _int(p, "search_width", 1, 65536) or 1
    return out


@dataclass(frozen=True)
class SharedLists:
    """The lists an unfiltered search's queries probe in one coarse quantizer (``nprobe`` per query,
    with their distances), computed once for every segment searched through that quantizer.  ``owner``
    is the sealed segment that assigned them: a growing segment probes its own rows through a copy of
    its quantizer (:meth:`GrowingSegment.search`)."""

    distances: np.ndarray
    lists: np.ndarray
    owner: "LoadedSegment"


def _family(index: Any, header: Mapping[str, Any]) -> str:
    if header.get("cagra"):
        return "cagra"
    name = type(index).__name__
    if "HNSW" in name:
        return "hnsw"
    if "IVF" in name:
        return "ivf"
    return "flat"


def _flat_view(faiss: Any, flat: Any) -> np.ndarray | None:
    """A zero-copy ``n × d`` view of an IndexFlat's vectors (``None`` if not a float flat)."""
    try:
        flat = faiss.downcast_index(flat)
        n, d = int(flat.ntotal), int(flat.d)
        if n == 0:
            return np.zeros((0, d), dtype=np.float32)
        return faiss.rev_swig_ptr(flat.get_xb(), n * d).reshape(n, d)
    except (AttributeError, TypeError):   # not a float IndexFlat (SWIG refuses it, or no get_xb): reconstructed instead
        return None


def _native_search(faiss: Any, index: Any) -> Callable[..., None]:
    """``index.search_c`` without its Python frame: the SWIG function it wraps, bound to ``index``.
    After a single-query search each Python frame costs a microsecond or more (the search evicted
    the interpreter's code from the CPU caches), so the plain path calls C directly."""
    native = getattr(faiss, "_swigfaiss", None)
    for cls in type(index).__mro__:
        if "search_c" in vars(cls):
            fn = getattr(native, f"{cls.__name__}_search", None)
            return functools.partial(fn, index) if fn is not None else index.search_c
    return index.search_c


class LoadedSegment:
    """A sealed segment's vector index (on a GPU or in host memory) and its rows."""

    def __init__(self, *, index: Any, header: Mapping[str, Any], rows: RowStore, device: Device,
                 manager: DeviceManager, key: Hashable, index_bytes: int, segment_id: int = 0,
                 field_id: int = 0, placement_reason: str = "") -> None:
        self.faiss = require_faiss()
        # swig_ptr without its Python wrapper (see _native_search)
        self._swig_ptr = getattr(getattr(self.faiss, "_swigfaiss", None), "swig_ptr", self.faiss.swig_ptr)
        self.index = index
        self.header = dict(header)
        self.rows = rows
        self.device = device
        self.manager = manager
        self.key = key
        self.index_bytes = int(index_bytes)
        self.segment_id = segment_id
        self.field_id = field_id
        self.placement_reason = placement_reason
        self.metric: str = self.header.get("metric", "L2")
        self.index_type: str = self.header.get("index_type", "FLAT")
        self.dim = int(index.d)
        self.num_rows = int(index.ntotal)
        self.family = _family(index, self.header)
        self.nlist = int(self.faiss.extract_index_ivf(index).nlist) if self.family == "ivf" and \
            not device.is_gpu else int(self.header.get("params", {}).get("nlist", getattr(index, "nlist", 0)))
        self._fm = "L2" if self.metric == "L2" else "IP"
        self._host = not device.is_gpu  # a segment never moves
        self._on_cupy = isinstance(index, cupy_engine.EngineIndex)
        self._search_c = _native_search(self.faiss, index) if self._host else None
        #: host IVF segments with equal keys share their coarse quantizer (built from one trained
        #: index): search_segments assigns the queries to lists once for all of them
        self.quantizer_key = quantizer_fingerprint(index) if self._host and self.family == "ivf" else None
        self._ivf = self.faiss.extract_index_ivf(index) if self.quantizer_key is not None else None
        if self._ivf is not None:
            # spread a search over its queries inside search_preassigned too (the default, 0, does it
            # only in search), so a search given its lists runs on as many threads as one that is not
            self._ivf.parallel_mode = 3
        self._xb: np.ndarray | None = None
        if not device.is_gpu:
            if self.family == "flat":
                self._xb = _flat_view(self.faiss, index)
            elif self.family in ("hnsw", "cagra"):
                self._xb = _flat_view(self.faiss, index.storage)
        self._host_copy: Any = None
        self._params_cache: dict[Any, Any] = {}
        self._default_sp: dict[int, dict[str, int]] = {}
        self._checked_sp: dict[Any, dict[str, int]] = {}   # a request's params, by (k, items); like _default_sp
        self._one_query_consts: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # by k; see _plain_search
        # faiss params of the default search params, by k; like _default_sp and _one_query_consts, filled
        # by any search thread (a dict assignment is atomic, and every writer stores equal values)
        self._params_by_k: dict[int, Any] = {}
        # a sealed segment's keys never change (rows are only hidden by deletes): one view, no
        # property call per search; and whether the merge keeps their type (it makes object keys str)
        self._pks = rows.pks
        self._pk_passes_merge = self._pks.dtype.kind in "iuUS"
        self._storage: Any = None
        # _inflight and _closed (under _lock): searches enter and leave, release() waits on _gate
        # for none left.  Searches take the plain lock (a C call; a Condition's own enter is Python).
        self._lock = threading.Lock()
        self._gate = threading.Condition(self._lock)
        self._map_lock = threading.Lock()  # adding the IVF direct map vs. serialising the index
        self._inflight = 0
        self._closed = False
        self._fallbacks: dict[str, int] = {}  # GPU faults served by a host path, by kind (under _gate)
        self.rows.vector_getter = self._vectors_of
        self.rows.vector_fields[field_id] = self.dim

    # -- description ---------------------------------------------------------------------------
    @property
    def placement(self) -> str:
        return self.device.kind

    @property
    def info(self) -> dict[str, Any]:
        return {
            "segment_id": self.segment_id, "field_id": self.field_id, "index_type": self.index_type,
            "built_type": self.header.get("built_type"), "metric": self.metric,
            "params": self.header.get("params", {}), "fallback": self.header.get("fallback"),
            "placement": self.placement, "device": self.device.name,
            "engine": "cupy" if self._on_cupy else "faiss-gpu" if self.device.is_gpu else "faiss",
            "placement_reason": self.placement_reason, "num_rows": self.num_rows,
            "num_deleted": self.rows.num_deleted, "index_bytes": self.index_bytes,
            "column_bytes": self.rows.nbytes(), "released": self._closed,
            "fallbacks": dict(self._fallbacks),
        }

    @property
    def pks(self) -> np.ndarray:
        return self.rows.pks

    def memory_bytes(self) -> int:
        """Accounted bytes: the index plus keys, columns and delete state."""
        return self.index_bytes + self.rows.nbytes()

    # -- lifecycle -----------------------------------------------------------------------------
    def _enter(self) -> None:
        with self._lock:
            if self._closed:
                raise errors.SegmentNotLoaded(f"segment {self.segment_id} was released")
            self._inflight += 1

    def _exit(self) -> None:
        with self._lock:
            self._inflight -= 1
            if not self._inflight and self._closed:  # only release() waits
                self._gate.notify_all()

    def _fell_back(self, kind: str, error: BaseException, instead: str) -> None:
        """A GPU call failed and another path serves the request: correct, but an exact host search
        is 10-100x slower, so it must not pass unseen.  Warns once per segment and kind (a faulty
        device would flood the log otherwise); ``info["fallbacks"]`` counts every one."""
        with self._gate:
            first = kind not in self._fallbacks
            self._fallbacks[kind] = self._fallbacks.get(kind, 0) + 1
        if first:
            log.warning("segment %d field %d on %s: %s failed (%s: %s), served by %s instead; later ones are "
                        "counted in its info['fallbacks'], not logged", self.segment_id, self.field_id,
                        self.device.name, kind, type(error).__name__, error, instead)

    def release(self) -> None:
        """Free the index (GPU or host memory) and the rows; waits for searches in flight."""
        with self._gate:
            if self._closed:
                return
            self._closed = True
            self._gate.wait_for(lambda: not self._inflight)
        self._xb = None

        def drop() -> None:
            if self._on_cupy:
                self.index.release()
            self.index = self._search_c = None   # _search_c holds the index too
            self._host_copy = None
            self._storage = None

        self.device.run(drop)
        self.device.release(self.key)
        self.manager.host.release((self.key, "rows"))
        self.manager.host.release((self.key, "host_copy"))
        self.manager.host.release((self.key, "direct_map"))
        self.rows = RowStore(np.zeros(0, dtype=self.rows.pks.dtype))
        self._pks = self.rows.pks
        trim_host_heap()

    def delete(self, pks: Any, timestamps: Any = None) -> int:
        """Apply deletes ``(pk, ts)`` to this segment (see :meth:`RowStore.delete`)."""
        hidden = self.rows.delete(pks, timestamps)
        try:
            self.manager.host.reserve((self.key, "rows"), self.rows.nbytes())
        except errors.MemoryLimitExceeded:
            pass  # deletes are never refused; the excess shows in the accounting next load
        return hidden

    # -- index file ----------------------------------------------------------------------------
    def index_file(self) -> bytes:
        """This index as an index file (:func:`~vecgrid.gpu.build.serialize_index`, same header).

        A QueryNode saves an index it built at load with this, so that later loads of the segment
        read the file instead of building again.  A GPU index is copied to the host on its owner
        thread first (a host copy kept for exact searches is reused, else the copy is dropped)."""
        self._enter()
        try:
            return self.device.run(self._serialize)
        finally:
            self._exit()

    def _serialize(self) -> bytes:
        if self.device.is_gpu:
            index = self._host_copy if self._host_copy is not None else self._copy_to_host()
        else:
            index = self.index
        with self._map_lock:  # not while _reconstruct adds the IVF direct map
            return serialize_index(index, self.header)

    # -- host-side helpers ---------------------------------------------------------------------
    def _copy_to_host(self) -> Any:
        """A host copy of the GPU index (on the owner thread)."""
        if self._on_cupy:
            return self.index.to_host(self.faiss)
        if self.family == "cagra":
            cpu = self.faiss.IndexHNSWCagra()
            self.index.copyTo(cpu)
            return cpu
        return self.faiss.index_gpu_to_cpu(self.index)

    def _host_index(self) -> Any:
        """The index in host memory (a copy for GPU-placed segments, made once)."""
        if not self.device.is_gpu:
            return self.index
        if self._host_copy is None:
            self._host_copy = self._copy_to_host()
            self.manager.host.reserve((self.key, "host_copy"), self.index_bytes)
        return self._host_copy

    def _host_vectors(self) -> np.ndarray | None:
        if self._xb is not None:
            return self._xb
        idx = self._host_index()
        fam = "flat" if "Flat" in type(idx).__name__ and "IVF" not in type(idx).__name__ else self.family
        if fam == "flat":
            return _flat_view(self.faiss, idx)
        if fam in ("hnsw", "cagra"):
            return _flat_view(self.faiss, idx.storage)
        return None

    def _vectors_of(self, field_id: int, rows: np.ndarray) -> np.ndarray | None:
        """The indexed vectors of ``rows`` (output fields); for COSINE the normalised ones."""
        if field_id != self.field_id or self._closed:
            return None
        if self.device.is_gpu and (self.family == "flat" or self._on_cupy) and self._host_copy is None:
            try:
                return self.device.run(self.index.reconstruct_batch, np.asarray(rows, dtype=np.int64))
            except Exception as e:  # noqa: BLE001 - no reconstruct_batch on this GPU index, or a fault
                self._fell_back("gpu vector reconstruct", e, "the host copy of the index")
        xb = self.device.run(self._host_vectors)
        if xb is not None:
            return xb[rows]
        if self.header.get("built_type") == "IVF_FLAT":  # lossless: the stored vectors
            return self.device.run(self._reconstruct, np.asarray(rows, dtype=np.int64))
        return None

    # -- search --------------------------------------------------------------------------------
    def search_params(self, k: int, params: Mapping[str, Any] | None = None) -> dict[str, int]:
        """The checked search params of a request, defaults filled in."""
        if not params:
            sp = self._default_sp.get(k)
            if sp is None:
                fam = "hnsw" if self.family == "cagra" and not self.device.is_gpu else self.family
                sp = self._default_sp[k] = default_search_params(fam, k, None, self.nlist)
                if len(self._default_sp) > 256:
                    self._default_sp.clear()
            return sp
        try:  # a client repeats its params ({"nprobe": 8}): checked once per segment, then looked up
            key: Any = (k, tuple(sorted(params.items())))
            hash(key)
        except TypeError:   # a value that is not hashable: checked every time
            key = None
        sp = self._checked_sp.get(key) if key is not None else None
        if sp is None:
            fam = "hnsw" if self.family == "cagra" and not self.device.is_gpu else self.family
            sp = default_search_params(fam, k, params, self.nlist)
            if key is not None:
                if len(self._checked_sp) > 256:
                    self._checked_sp.clear()
                self._checked_sp[key] = sp
        return sp

    def assign(self, queries: np.ndarray, k: int, params: Mapping[str, Any] | None = None) -> SharedLists:
        """The lists an unfiltered search of ``queries`` for ``k`` with ``params`` probes in this host
        IVF segment — what :meth:`search` takes as ``assign`` for every segment with the same
        :attr:`quantizer_key`, and a growing segment for its rows."""
        if self._ivf is None:
            raise ValueError(f"segment {self.segment_id} has no shareable quantizer")
        xq = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, self.dim)
        if self.metric == "COSINE":
            xq = normalize_rows(xq)
        sp = (None if params else self._default_sp.get(k)) or self.search_params(k, params)
        distances, lists = self._ivf.quantizer.search(xq, int(sp["nprobe"]))
        return SharedLists(distances, lists, self)

    def quantizer_copy(self) -> Any:
        """A copy of this host IVF segment's coarse quantizer, for a growing segment to file its rows
        in the same lists (a copy: this segment may be released first)."""
        if self._ivf is None:
            raise ValueError(f"segment {self.segment_id} has no shareable quantizer")
        return self.faiss.clone_index(self._ivf.quantizer)

    def search(self, queries: np.ndarray, k: int, *, expr: plan_pb2.Expr | None = None,
               timestamp: int | None = None, params: Mapping[str, Any] | None = None,
               metric: str | None = None, mask: np.ndarray | None = None,
               assign: SharedLists | None = None) -> TopK:
        """Top-``k`` of each query among the allowed rows (see the module's rule).

        ``assign``: the queries' lists from :meth:`assign` of a segment with the same
        :attr:`quantizer_key`, used when every row is allowed (else the search assigns its own).
        Returns a :class:`TopK` whose ``ids`` are primary keys and ``rows`` row offsets."""
        if metric and metric != self.metric and metric.upper() != self.metric:
            raise errors.ParameterInvalid(f"metric type not match: expected={self.metric}, actual={metric.upper()}")
        if not 1 <= k <= MAX_TOPK:
            raise errors.ParameterInvalid(f"topk ({k}) should be in range [1, {MAX_TOPK}]")
        xq = np.ascontiguousarray(queries, dtype=np.float32)
        shape = xq.shape
        if len(shape) == 1:
            xq = xq.reshape(1, -1)
            shape = xq.shape
        if len(shape) != 2 or shape[1] != self.dim:
            raise errors.ParameterInvalid(
                f"the dimension of query vectors ({xq.shape[-1]}) does not match the index's ({self.dim})")
        if self.metric == "COSINE":
            xq = normalize_rows(xq)
        sp = (None if params else self._default_sp.get(k)) or self.search_params(k, params)
        with self._lock:  # _enter() inlined: after a search each Python frame costs microseconds
            if self._closed:
                raise errors.SegmentNotLoaded(f"segment {self.segment_id} was released")
            self._inflight += 1
        try:
            if expr is None and mask is None and self._host and shape[0] and \
                    self.rows.visibility(timestamp) is None:
                return self._plain_search(xq, k, sp, assign)  # every row: the latency-bound common case
            xp = np
            if self.device.is_gpu and expr is not None:
                xp = cupy_module() or np
            allowed = self.rows.mask(expr, timestamp, xp=xp)
            if mask is not None:
                m = np.asarray(mask, dtype=bool)
                allowed = m if allowed is None else allowed & m
            n = self.num_rows
            count = n if allowed is None else int(np.count_nonzero(allowed))
            pks = self.rows.pks
            if count == 0 or len(xq) == 0:
                return TopK.empty(len(xq), k, pks.dtype)
            if count == n:
                allowed = None
            if self.device.is_gpu:
                D, I = self.device.run(self._search_dense, xq, k, sp, allowed, count)
            else:
                D, I = self._search_dense(xq, k, sp, allowed, count)
            return TopK.from_dense(D, I, k, pks)
        finally:
            with self._lock:  # _exit() inlined
                self._inflight -= 1
                if not self._inflight and self._closed:
                    self._gate.notify_all()

    def search_with_growing(self, growing: Any, queries: np.ndarray, k: int, assign: SharedLists, *,
                            timestamp: int | None = None, params: Mapping[str, Any] | None = None,
                            metric: str | None = None, sources: tuple[int, int] = (0, 1)) -> TopK | None:
        """The merged top-``k`` of an unfiltered search over this host IVF segment and ``growing``
        (a growing segment or snapshot whose rows are all filed in this segment's lists, see
        :meth:`GrowingSegment.filed_in`) in one result heap per query: this segment's hits are
        searched first, then ``growing``'s filed rows in the same lists go on into the same heaps
        (:meth:`GrowingSegment.continue_heap`), so no second part is made and merged.  In merge
        order; ``sources`` (this segment's, ``growing``'s) tell the hits apart.

        ``None`` when the shape does not allow it (then search both as usual); a tie, a key found in
        both or a query short of ``k`` hits gives both parts merged as usual instead."""
        n = growing.num_rows
        if not (self._host and self._ivf is not None and self._pk_passes_merge and 1 <= k <= MAX_TOPK
                and growing.metric == self.metric and (not metric or metric.upper() == self.metric)
                and self.num_rows + n >= k and growing.filed_in(self)
                and growing.rows.pks.dtype.kind == self._pks.dtype.kind):
            return None
        raw = np.ascontiguousarray(queries, dtype=np.float32)
        if raw.ndim != 2 or raw.shape[1] != self.dim or self.rows.visibility(timestamp) is not None:
            return None
        xq = normalize_rows(raw) if self.metric == "COSINE" else raw
        sp = (None if params else self._default_sp.get(k)) or self.search_params(k, params)
        self._enter()
        try:
            D, I = self._plain_dense(xq, k, sp, assign)
            # faiss's best-first rows reversed are heaps (worst first); this segment's rows take labels
            # from _HEAP_SEALED up, which the growing rows (their offsets) never reach
            heap_d = np.ascontiguousarray(D[:, ::-1])
            heap_i = np.ascontiguousarray(np.where(I >= 0, I + _HEAP_SEALED, -1)[:, ::-1])
            merged = None
            if growing.continue_heap(xq, heap_d, heap_i, assign, timestamp):
                merged = _one_heap_topk(heap_d, heap_i, k, self._pks, growing.rows.pks, sources, self._fm == "IP")
            if merged is None:
                parts = [self._plain_topk(xq, D, I, k), growing.search(raw, k, timestamp=timestamp, assign=assign)]
                merged = merge_topk(parts, k, self.metric)
                merged.sources = np.asarray(sources, dtype=np.int32)[merged.sources]
            return merged
        finally:
            self._exit()

    def _plain_search(self, xq: np.ndarray, k: int, sp: Mapping[str, int],
                      assign: SharedLists | None = None) -> TopK:
        """Every row allowed, host index: :meth:`_search_dense` without its general steps.

        A single HNSW query takes ~0.1-0.2 ms in faiss, and right after it every numpy call, Python
        frame and protobuf call around it costs 1-3 us (the search has evicted their code and data
        from the CPU caches; a tight loop shows a fifth of that), so this path makes few: faiss's
        ``search_c`` straight into the result arrays, one label read as a Python int, and for one
        query the merge-order check (no tie, no key twice) on Python lists, which then go along for
        the protobuf encoder.  A single segment's result in merge order is the merged result:
        search_segments skips the merge."""
        D, I = self._plain_dense(xq, k, sp, assign)
        return self._plain_topk(xq, D, I, k)

    def _plain_dense(self, xq: np.ndarray, k: int, sp: Mapping[str, int],
                     assign: SharedLists | None = None) -> tuple[np.ndarray, np.ndarray]:
        """faiss's ``(D, I)`` of an unfiltered host search (rows as labels, best first, -1 padding last)."""
        nq = len(xq)
        D = np.empty((nq, k), dtype=np.float32)
        I = np.empty((nq, k), dtype=np.int64)
        swig_ptr = self._swig_ptr
        params = self._params_by_k.get(k) if sp is self._default_sp.get(k) else None
        if params is None:
            params = self._plain_params(k, sp)
        if assign is None or self._ivf is None or assign.lists.shape != (nq, params.nprobe):
            self._search_c(nq, swig_ptr(xq), k, swig_ptr(D), swig_ptr(I), params)
        else:
            dq, iq = assign.distances, assign.lists
            self._ivf.search_preassigned_c(nq, swig_ptr(xq), k, swig_ptr(iq), swig_ptr(dq), swig_ptr(D),
                                           swig_ptr(I), False, params)
        return D, I

    def _plain_topk(self, xq: np.ndarray, D: np.ndarray, I: np.ndarray, k: int) -> TopK:
        """The :class:`TopK` of :meth:`_plain_dense`'s arrays (queries short of hits searched exactly)."""
        nq = len(xq)
        need = min(k, self.num_rows)
        # faiss packs hits first, -1 padding last
        if nq == 1 and need == k:
            if I.item(k - 1) >= 0:
                rows = I.reshape(-1)
                ids = self._pks[rows]
                score_list, id_list = D.tolist()[0], ids.tolist()
                consts = self._one_query_consts.get(k)
                if consts is None:
                    consts = self._one_query_consts[k] = (constant(1, k, np.int64), constant(k, 0, np.int32))
                # faiss returns them best first, so a tie is two equal scores anywhere (NaN never equals NaN)
                if self._pk_passes_merge and len(set(score_list)) == k and len(set(id_list)) == k:
                    return TopK(ids, D.reshape(-1), consts[0], k, rows=rows, sources=consts[1], in_order=True,
                                hit_lists=(score_list, id_list))
                return TopK(ids, D.reshape(-1), consts[0], k, rows=rows)
        elif not np.count_nonzero(I[:, need - 1] < 0):
            out = TopK.from_dense(D, I, k, self._pks, full=need == k)
            # in merge order when no query has tied scores (faiss sorts each row) and no key is stored
            # twice (a row is found once per query): search_segments then skips the merge
            if need == k and self._pk_passes_merge and (k == 1 or not (D[:, 1:] == D[:, :-1]).any()) \
                    and self.rows.keys_unique():
                out.in_order, out.sources = True, constant(nq * k, 0, np.int32)
            return out
        short = I[:, need - 1] < 0
        if self.family != "flat":  # FLAT is exhaustive: what it left empty (a NaN query) stays so
            D2, I2 = self._exact(xq[short], k, None)
            D[short], I[short] = D2, I2
        return TopK.from_dense(D, I, k, self._pks)

    def _search_dense(self, xq: np.ndarray, k: int, sp: Mapping[str, int], allowed: np.ndarray | None,
                      count: int) -> tuple[np.ndarray, np.ndarray]:
        n = self.num_rows
        need = min(k, count)
        s = count / n
        if allowed is None:
            D, I = self._index_search(xq, k, sp, None, 1.0)
        elif self.family == "flat" and not self.device.is_gpu:
            D, I = self._exact(xq, k, allowed)  # rule 2
        elif count <= max(k, EXACT_ROWS) or s <= EXACT_FRACTION:
            D, I = self._exact(xq, k, allowed)
        else:
            D, I = self._index_search(xq, k, sp, allowed, s)
        if self.family == "flat" and allowed is None and not self.device.is_gpu:
            return D, I  # exhaustive: always min(k, n) hits
        short = I[:, need - 1] < 0  # faiss packs hits first, -1 padding last
        if short.any():
            D2, I2 = self._exact(xq[short], k, allowed)
            D = D.copy() if not D.flags.writeable else D
            I = I.copy() if not I.flags.writeable else I
            D[short], I[short] = D2, I2
        return D, I

    def _index_search(self, xq: np.ndarray, k: int, sp: Mapping[str, int], allowed: np.ndarray | None,
                      s: float) -> tuple[np.ndarray, np.ndarray]:
        """The index's own search (rule 4 when ``allowed`` is given, ``s`` its fraction of rows)."""
        faiss = self.faiss
        if self.device.is_gpu:
            return self._gpu_search(xq, k, sp, allowed, s)
        if allowed is None:
            params = self._plain_params(k, sp)
            return self.index.search(xq, k, params=params)
        sel, bits = bitmap_selector(faiss, allowed)
        if self.family == "ivf":
            nprobe = min(self.nlist, max(1, math.ceil(sp["nprobe"] * _widen("ivf", s))))
            params = faiss.SearchParametersIVF(nprobe=nprobe, sel=sel) if sel is not None else \
                faiss.SearchParametersIVF(nprobe=nprobe)
        elif self.family in ("hnsw", "cagra"):
            ef = max(k, math.ceil(sp["ef"] * _widen("hnsw", s)))
            params = faiss.SearchParametersHNSW(efSearch=ef, sel=sel) if sel is not None else \
                faiss.SearchParametersHNSW(efSearch=ef)
        else:
            params = faiss.SearchParameters(sel=sel) if sel is not None else None
        D, I = self.index.search(xq, k, params=params)
        del bits
        return D, I

    def _plain_params(self, k: int, sp: Mapping[str, int]) -> Any:
        """Unfiltered host search parameters, cached (they are read-only during a search); those of
        the default params also by ``k`` alone (see _plain_search)."""
        if self.family == "ivf":
            key: Any = ("ivf", sp["nprobe"])
        elif self.family in ("hnsw", "cagra"):
            key = ("hnsw", max(k, sp["ef"]))
        else:
            return None
        params = self._params_cache.get(key)
        if params is None:
            if key[0] == "ivf":
                params = self.faiss.SearchParametersIVF(nprobe=key[1])
            else:
                params = self.faiss.SearchParametersHNSW(efSearch=key[1])
            if len(self._params_cache) > 64:
                self._params_cache.clear()
            self._params_cache[key] = params
        if sp is self._default_sp.get(k):
            if len(self._params_by_k) > 256:
                self._params_by_k.clear()
            self._params_by_k[k] = params
        return params

    def _gpu_search(self, xq: np.ndarray, k: int, sp: Mapping[str, int], allowed: np.ndarray | None,
                    s: float) -> tuple[np.ndarray, np.ndarray]:
        if self._on_cupy:
            return self._cupy_search(xq, k, sp, allowed, s)
        faiss = self.faiss
        n = self.num_rows
        if allowed is None:
            kk = k
        else:
            kk = min(n, math.ceil(1.5 * k / s) + k)
        if kk > GPU_MAX_K:
            return self._exact(xq, k, allowed)
        params = None
        if self.family == "ivf":
            nprobe = min(self.nlist, max(1, math.ceil(sp["nprobe"] * _widen("ivf", s))))
            try:
                self.index.nprobe = nprobe
            except Exception as e:  # noqa: BLE001 - the same search through search parameters
                self._fell_back("setting nprobe on the gpu index", e, "search parameters")
                params = faiss.SearchParametersIVF(nprobe=nprobe)
        elif self.family == "cagra":
            params = faiss.SearchParametersCagra()
            params.itopk_size = max(sp["itopk_size"], kk)
            params.search_width = sp["search_width"]
        try:
            D, I = self.index.search(xq, kk, params=params) if params is not None else self.index.search(xq, kk)
        except RuntimeError as e:  # e.g. a k' beyond what this GPU index supports, or a GPU fault
            self._fell_back("gpu search", e, "an exact search on the host")
            return self._exact(xq, k, allowed)
        if allowed is None:
            return D, I
        ok = (I >= 0) & allowed[np.where(I >= 0, I, 0)]
        return _compact(D, I, ok, k, self._fm)

    def _cupy_search(self, xq: np.ndarray, k: int, sp: Mapping[str, int], allowed: np.ndarray | None,
                     s: float) -> tuple[np.ndarray, np.ndarray]:
        """The cupy engine applies the mask on the device, so rule 4 needs no over-sampling: the
        index searched for ``k`` under the mask, IVF with its widened ``nprobe``."""
        if k > cupy_engine.MAX_K:
            return self._exact(xq, k, allowed)
        nprobe = None
        if self.family == "ivf":
            nprobe = min(self.nlist, max(1, math.ceil(sp["nprobe"] * _widen("ivf", s))))
        try:
            return self.index.search(xq, k, nprobe=nprobe, allowed=allowed)
        except Exception as e:  # noqa: BLE001 - a GPU fault: the host copy serves it, counted
            self._fell_back("cupy search", e, "an exact search on the host")
            return self._exact(xq, k, allowed, on_device=False)

    def _exact(self, xq: np.ndarray, k: int, allowed: np.ndarray | None, *,
               on_device: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Every allowed row scored (rule 3): on the device (cupy engine; IVF with every list
        probed), or gather + BLAS brute force, or a selector scan."""
        if self._on_cupy and on_device and k <= cupy_engine.MAX_K:
            try:
                return self.index.search(xq, k, nprobe=self.nlist, allowed=allowed)
            except Exception as e:  # noqa: BLE001 - a GPU fault: the host paths below, counted
                self._fell_back("cupy exact search", e, "an exact search on the host")
        faiss = self.faiss
        n = self.num_rows
        rows = None if allowed is None else np.flatnonzero(allowed)
        if self.device.is_gpu and self.family == "flat" and rows is not None and self._host_copy is None:
            try:  # only the allowed rows leave the GPU
                sub = self.index.reconstruct_batch(rows.astype(np.int64))
            except Exception as e:  # noqa: BLE001 - faiss errors: the host copy below
                self._fell_back("gpu vector reconstruct", e, "an exact search on the host copy")
                sub = None
            if sub is not None:
                return _mapped(brute_force_knn(xq, sub, k, self._fm, xp=cupy_module() or np), rows)
        count = n if rows is None else len(rows)
        xb = self._host_vectors()
        if rows is None and xb is not None:
            return brute_force_knn(xq, xb, k, self._fm)
        if rows is not None and (xq.shape[0] >= 20 or count <= FLAT_GATHER_FRACTION * n):
            sub = xb[rows] if xb is not None else self._reconstruct(rows)
            if sub is not None:
                return _mapped(brute_force_knn(xq, sub, k, self._fm), rows)
        sel, bits = bitmap_selector(faiss, allowed)
        if xb is not None:  # scan the flat storage under the selector: no copy
            params = faiss.SearchParameters(sel=sel)
            D, I = self._flat_storage().search(xq, k, params=params)
        else:
            idx = self._host_index()
            nlist = int(faiss.extract_index_ivf(idx).nlist)
            params = faiss.SearchParametersIVF(nprobe=nlist, sel=sel) if sel is not None else \
                faiss.SearchParametersIVF(nprobe=nlist)
            D, I = idx.search(xq, k, params=params)
        del bits
        return D, I

    def _flat_storage(self) -> Any:
        """The IndexFlat holding the vectors: the index itself (FLAT) or an HNSW's storage."""
        idx = self._host_index()
        if self.family == "flat":
            return idx
        if self._storage is None:
            self._storage = self.faiss.downcast_index(idx.storage)
        return self._storage

    def _reconstruct(self, rows: np.ndarray) -> np.ndarray | None:
        """Decoded vectors of IVF rows through a direct map (made on first need, n × 8 bytes)."""
        if self.family != "ivf":
            return None
        idx = self._host_index()
        ivf = self.faiss.extract_index_ivf(idx)
        with self._map_lock:
            if ivf.direct_map.type == 0:  # NoMap
                ivf.make_direct_map(True)
                try:
                    self.manager.host.reserve((self.key, "direct_map"), self.num_rows * 8)
                except errors.MemoryLimitExceeded:
                    pass  # small next to the index; shows in the accounting of the next load
        return idx.reconstruct_batch(rows.astype(np.int64))

    def fetch(self, rows: np.ndarray, fields: Iterable[int | str]) -> list[FieldColumn]:
        """Output-field values at ``rows`` (scalar columns, the primary key, or the indexed vectors)."""
        return self.rows.fetch(rows, fields)

    def __repr__(self) -> str:
        return (f"LoadedSegment(id={self.segment_id}, {self.index_type}/{self.metric}, rows={self.num_rows}, "
                f"{self.placement} {self.device.name})")


#: The first label of a sealed segment's rows in a result heap it shares with a growing segment's
#: (whose rows are labelled by their offsets): see LoadedSegment.search_with_growing.
_HEAP_SEALED = 1 << 62


def _one_heap_topk(D: np.ndarray, I: np.ndarray, k: int, sealed_pks: np.ndarray, growing_pks: np.ndarray,
                   sources: tuple[int, int], larger: bool) -> TopK | None:
    """The :class:`TopK` of the heaps (``D``, ``I``: worst hit first) shared by a sealed and a growing
    segment (labels from :data:`_HEAP_SEALED` up: the sealed rows), best first; ``None`` when a query
    has fewer than ``k`` hits, tied scores (the primary key orders them) or a key twice (kept once):
    the usual merge decides those."""
    nq = len(I)
    if nq == 1:   # the latency-bound shape: Python lists, as LoadedSegment._plain_search
        hits = sorted(zip(D.tolist()[0], I.tolist()[0]), reverse=larger)   # a tie returns None below
        scores, labels = [h[0] for h in hits], [h[1] for h in hits]
        if labels[-1] < 0 or len(set(scores)) != k:
            return None
        ids = [sealed_pks.item(j - _HEAP_SEALED) if j >= _HEAP_SEALED else growing_pks.item(j) for j in labels]
        if len(set(ids)) != k:
            return None
        sealed = [j >= _HEAP_SEALED for j in labels]
        rows = np.array([j - _HEAP_SEALED if s else j for j, s in zip(labels, sealed)], dtype=np.int64)
        return TopK(np.array(ids, dtype=sealed_pks.dtype), np.array(scores, dtype=np.float32),
                    constant(1, k, np.int64), k, rows=rows,
                    sources=np.array([sources[0] if s else sources[1] for s in sealed], dtype=np.int32),
                    in_order=True, hit_lists=(scores, ids))
    faiss = require_faiss()
    heaps = faiss.float_minheap_array_t() if larger else faiss.float_maxheap_array_t()
    heaps.nh, heaps.k, heaps.val, heaps.ids = nq, k, faiss.swig_ptr(D), faiss.swig_ptr(I)
    heaps.reorder()   # best first, as a search returns them
    if (I[:, k - 1] < 0).any() or (k > 1 and (D[:, 1:] == D[:, :-1]).any()):
        return None
    sealed = I >= _HEAP_SEALED
    rows = np.where(sealed, I - _HEAP_SEALED, I)
    ids = np.where(sealed, sealed_pks[np.where(sealed, rows, 0)], growing_pks[np.where(sealed, 0, rows)])
    if k > 1:
        ordered = np.sort(ids, axis=1)
        if (ordered[:, 1:] == ordered[:, :-1]).any():
            return None
    return TopK(ids.reshape(-1), D.reshape(-1), constant(nq, k, np.int64), k, rows=rows.reshape(-1),
                sources=np.where(sealed, sources[0], sources[1]).astype(np.int32).reshape(-1), in_order=True)


def _widen(family: str, s: float) -> float:
    """Rule 4's budget factor for a filter passing a fraction ``s`` of the rows."""
    return s ** -0.25 if family == "ivf" else s ** -0.5


def _mapped(DI: tuple[np.ndarray, np.ndarray], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Labels of a search over ``rows``' vectors turned back into row offsets."""
    D, I = DI
    valid = I >= 0
    return D, np.where(valid, rows[np.where(valid, I, 0)], -1)


def _compact(D: np.ndarray, I: np.ndarray, ok: np.ndarray, k: int, fm: str) -> tuple[np.ndarray, np.ndarray]:
    """Keep, per row, the first ``k`` entries where ``ok`` (order preserved), padded with -1."""
    nq = D.shape[0]
    Dout = np.full((nq, k), np.inf if fm == "L2" else -np.inf, dtype=np.float32)
    Iout = np.full((nq, k), -1, dtype=np.int64)
    rank = np.cumsum(ok, axis=1) - 1
    keep = ok & (rank < k)
    r, c = np.nonzero(keep)
    Dout[r, rank[r, c]] = D[r, c]
    Iout[r, rank[r, c]] = I[r, c]
    return Dout, Iout


def _to_gpu(faiss: Any, index: Any, header: Mapping[str, Any], device: Device) -> Any:
    if device.engine == "cupy":
        return cupy_engine.from_faiss(faiss, index, cupy_engine.kernels_for(cupy_module()))
    res = gpu_resources(device.device_id)
    if header.get("cagra"):
        cfg = faiss.GpuIndexCagraConfig()
        cfg.device = device.device_id
        g = faiss.GpuIndexCagra(res, index.d, index.metric_type, cfg)
        g.copyFrom(index)
        return g
    co = faiss.GpuClonerOptions()
    co.useFloat16 = False
    return faiss.index_cpu_to_gpu(res, device.device_id, index, co)


def _lists_in_order(faiss: Any, index: Any) -> None:
    """Lay an IVF index's lists out one after another, as reading its file does.  An index just built
    holds each list where its appends left it, scattered over the heap, and was searched 14% slower
    than the same index read back from its file (1M rows, nprobe 16: 96 against 84 ms at nq=100);
    copying the lists in order takes 0.5 s there."""
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is None:
        return
    lists = faiss.downcast_InvertedLists(ivf.invlists)
    if not isinstance(lists, faiss.ArrayInvertedLists):
        return
    fresh = faiss.ArrayInvertedLists(lists.nlist, lists.code_size)
    for i in range(lists.nlist):
        n = lists.list_size(i)
        if n:
            fresh.add_entries(i, n, lists.get_ids(i), lists.get_codes(i))
    ivf.replace_invlists(fresh, True)   # frees the old lists; the index owns the new ones
    fresh.this.disown()


def load_segment(index_file: BuiltIndex | bytes | bytearray | memoryview | str | os.PathLike[str], pks: Any, *,
                 columns: Mapping[int, Any] | None = None, timestamps: Any = None,
                 deletes: tuple[Any, Any] | None = None,
                 schema: schema_pb2.CollectionSchema | Sequence[schema_pb2.FieldSchema] | None = None,
                 segment_id: int = 0, field_id: int = 0, pk_field_id: int | None = None,
                 manager: DeviceManager | None = None, prefer_gpu: bool = True,
                 key: Hashable | None = None) -> LoadedSegment:
    """Load a segment's index file and rows.

    ``index_file``: the file (bytes or a path), or an index just built (:class:`BuiltIndex`, taken as it is
    with its lists laid out in order: serializing a 1M-row IVF_FLAT to read it back cost 4.7 s of a 14 s
    load).  ``pks``: the primary key of each row (row i is faiss id i); ``columns``: scalar
    field id → values, for filters and output fields; ``timestamps``: insert
    timestamps (MVCC); ``deletes``: ``(pks, timestamps)`` of the segment's delete log;
    ``schema``: field names and types for output fields.  Raises
    :class:`errors.MemoryLimitExceeded` when neither a GPU nor the host has budget."""
    faiss = require_faiss()
    manager = manager or default_manager()
    if isinstance(index_file, BuiltIndex):
        index, header = index_file.index, dict(index_file.header)
        nbytes = index_file.file_size
        _lists_in_order(faiss, index)
    else:
        index, header = read_index_file(index_file)
        if isinstance(index_file, (str, os.PathLike)):
            nbytes = os.path.getsize(index_file)
        else:
            nbytes = memoryview(index_file).nbytes
    n = int(index.ntotal)
    key = key if key is not None else ("segment", segment_id, field_id, id(index))
    rows = RowStore(pks, columns=columns, timestamps=timestamps, fields=fields_from_schema(schema),
                    pk_field_id=pk_field_id)
    if rows.n != n:
        raise errors.ParameterInvalid(f"segment {segment_id} has {rows.n} primary keys but its index has {n} rows")
    cagra = bool(header.get("cagra"))
    built = header.get("built_type", "FLAT")
    if manager.engine == "cupy":
        gpu_capable = built in cupy_engine.SUPPORTED and not cagra
        nbytes = max(nbytes, cupy_engine.device_bytes(faiss, index))
    else:
        gpu_capable = faiss_has_gpu() and (built in GPU_MOVABLE or (cagra and hasattr(faiss, "GpuIndexCagra")))
    if not manager.gpus:
        reason = "no GPU in this process"
    elif not prefer_gpu:
        reason = "host placement requested"
    elif not gpu_capable:
        reason = f"{built} has no cupy engine (it runs FLAT and IVF_FLAT)" if manager.engine == "cupy" \
            else f"{built} is CPU-only"
    else:
        reason = ""
    device = manager.place(key, nbytes, prefer_gpu=prefer_gpu, gpu_capable=gpu_capable)
    if device.is_gpu:
        try:
            index = device.run(_to_gpu, faiss, index, header, device)
            reason = f"on {device.name} ({device.engine})"
        except Exception as e:  # e.g. a PQ layout the GPU cannot hold
            device.release(key)
            device = manager.host
            manager.host.reserve(key, nbytes)
            reason = f"GPU placement failed: {e}"
    elif manager.gpus and not reason:
        reason = "GPU memory budget exhausted"
    try:
        manager.host.reserve((key, "rows"), rows.nbytes())
    except errors.MemoryLimitExceeded:
        device.release(key)
        raise
    seg = LoadedSegment(index=index, header=header, rows=rows, device=device, manager=manager, key=key,
                        index_bytes=nbytes, segment_id=segment_id, field_id=field_id,
                        placement_reason=reason)
    if deletes is not None:
        seg.delete(*deletes)
    trim_host_heap()  # the reader's transient buffers
    return seg


def search_segments(segments: Sequence[LoadedSegment | GrowingSegment], queries: np.ndarray, k: int, *,
                    expr: plan_pb2.Expr | None = None, timestamp: int | None = None,
                    params: Mapping[str, Any] | None = None, metric: str | None = None,
                    round_decimal: int = -1, output_fields: Sequence[int | str] = ()) -> TopK:
    """Search sealed and growing segments, merge into the best ``k`` per query, fetch output fields.

    GPU segments run on their devices' owner threads concurrently with host ones."""
    if len(segments) == 1 and type(segments[0]) is LoadedSegment and segments[0]._host and not output_fields \
            and (round_decimal is None or round_decimal < 0):
        # the latency-bound shape: one host segment, nothing to fetch; its search checks the queries
        seg = segments[0]
        part = seg.search(queries, k, expr=expr, timestamp=timestamp, params=params, metric=metric or seg.metric)
        return part if part.in_order else merge_topk([part], k, metric or seg.metric, round_decimal)
    xq = np.ascontiguousarray(queries, dtype=np.float32)
    if xq.ndim == 1:
        xq = xq.reshape(1, -1)
    if not segments:
        return TopK.empty(len(xq), k)
    metric = metric or getattr(segments[0], "metric", "L2")
    if len(segments) == 1:  # the common shape of a latency-bound search: no futures, maybe no merge
        seg = segments[0]
        if isinstance(seg, LoadedSegment) and not seg._host:
            part = seg.device.submit(seg.search, xq, k, expr=expr, timestamp=timestamp, params=params,
                                     metric=metric).result()
        else:
            part = seg.search(xq, k, expr=expr, timestamp=timestamp, params=params, metric=metric)
        if part.in_order and (round_decimal is None or round_decimal < 0):
            merged = part
        else:
            merged = merge_topk([part], k, metric, round_decimal)
    elif (merged := _one_query_with_growing(segments, xq, k, expr, timestamp, params, metric, round_decimal,
                                            output_fields)) is not None:
        return merged
    elif (merged := _search_one_quantizer(segments, xq, k, expr, timestamp, params, metric,
                                          round_decimal)) is not None:
        pass   # sealed segments of one quantizer: their output fields are gathered below
    else:
        pending: dict[int, Any] = {}
        shared = _shared_assignments(segments, xq, k, expr, timestamp, params)
        kw = dict(expr=expr, timestamp=timestamp, params=params, metric=metric)
        paired = _one_heap_pair(segments, shared) if round_decimal is None or round_decimal < 0 else None
        one_heap = None if paired is None else segments[paired[0]].search_with_growing(
            segments[paired[1]], xq, k, shared[paired[0]], timestamp=timestamp, params=params, metric=metric,
            sources=paired)
        rest = [i for i in range(len(segments)) if one_heap is None or i not in paired]
        host: list[int] = []
        for i in rest:
            seg = segments[i]
            if isinstance(seg, LoadedSegment) and seg.device.is_gpu:
                pending[i] = seg.device.submit(seg.search, xq, k, **kw)
            else:
                host.append(i)

        def search_host(i: int) -> TopK:
            return segments[i].search(xq, k, assign=shared[i], **kw) if i in shared else \
                segments[i].search(xq, k, **kw)

        threads = _omp_threads()   # the cores this search leased: only fewer queries than those can fan out
        if len(xq) < threads:
            threads = min(fan_out_width(segments, len(xq), k, expr=expr, params=params, probed=shared.keys()),
                          threads)
        if threads > 1 and len(xq) < threads:
            pending.update(_fan_out(host, search_host, threads, lambda i: _scan_work(segments[i], 1, k, expr,
                                                                                   params, i in shared)))
        else:
            pending.update((i, search_host(i)) for i in host)
        parts = [pending[i] if isinstance(pending[i], TopK) else pending[i].result() for i in rest]
        if one_heap is None:
            merged = merge_topk(parts, k, metric, round_decimal)
        else:
            merged = one_heap if not parts else _merged_with_one_heap(one_heap, paired, parts, rest, k, metric)
    if output_fields and len(merged):
        merged.fields = _gather_fields(segments, merged, output_fields)
    elif output_fields:
        merged.fields = _empty_fields(segments, output_fields)
    return merged


def _one_query_with_growing(segments: Sequence[Any], xq: np.ndarray, k: int, expr: plan_pb2.Expr | None,
                            timestamp: int | None, params: Mapping[str, Any] | None, metric: str,
                            round_decimal: int | None, output_fields: Sequence[int | str]) -> TopK | None:
    """:func:`search_segments` of one unfiltered query over a host sealed segment and a growing segment
    whose rows it compares exactly (a leader with the rows inserted since its load, at nq=1): the two
    hit lists merged as lists, without the general path's sharing, fan-out and parts, which cost about
    0.1 ms of a 0.3 ms search.  The same answer as that path; ``None`` where it does not apply, and
    where that path would spread the two segments over the cores the search leased (rows enough to
    scan, :func:`fan_out_width`): one after the other here, they took 2.4 times as long (a leader's
    growing rows during a stream of inserts)."""
    if len(xq) != 1 or len(segments) != 2 or expr is not None or output_fields or \
            (round_decimal is not None and round_decimal >= 0):
        return None
    at = 0 if type(segments[0]) is LoadedSegment else 1
    sealed, growing = segments[at], segments[1 - at]
    if type(sealed) is not LoadedSegment or not sealed._host or not hasattr(growing, "exact_hits") or \
            sealed._pks.dtype.kind not in "iu" or growing.metric != sealed.metric:
        return None
    if _omp_threads() > 1 and fan_out_width(segments, 1, k, params=params) > 1:
        return None
    # the general path probes the growing rows through the sealed lists when it shares them (sharing_groups)
    shares = sealed.quantizer_key is not None and sealed.dim == growing.dim and \
        sealed.rows.visibility(timestamp) is None
    hits = growing.exact_hits(xq, k, owner=sealed if shares else None, timestamp=timestamp)
    if hits is None:
        return None
    part = sealed.search(xq, k, timestamp=timestamp, params=params, metric=metric)
    scores, keys = part.hit_lists if part.hit_lists is not None else (part.scores.tolist(), part.ids.tolist())
    lists = [(scores, keys, part.rows.tolist()), hits]
    return merge_hit_lists(lists if at == 0 else lists[::-1], k, larger_is_better(metric))


def _search_one_quantizer(segments: Sequence[Any], xq: np.ndarray, k: int, expr: plan_pb2.Expr | None,
                          timestamp: int | None, params: Mapping[str, Any] | None, metric: str,
                          round_decimal: int | None) -> TopK | None:
    """:func:`search_segments` of an unfiltered search over host IVF segments that all share one
    quantizer and show every row at ``timestamp`` (a collection's sealed segments, the common shape at
    scale): the queries assigned to lists once, each segment's lists scanned by faiss straight into its
    slice of one result array (spread over the leased cores as the general path spreads them), one
    merge.  The general path's answer without its per-segment steps (sharing groups, a checked
    :meth:`LoadedSegment.search` per segment, the cost estimates twice), which cost 0.15-0.45 ms of
    1-1.5 ms over ten segments at nq=1 (``bench/segments.py``).  ``None`` where it does not apply."""
    first = segments[0]
    if expr is not None or not 1 <= k <= MAX_TOPK or type(first) is not LoadedSegment or \
            first.quantizer_key is None or xq.shape[1] != first.dim or metric.upper() != first.metric:
        return None
    for seg in segments:
        if type(seg) is not LoadedSegment or seg.quantizer_key != first.quantizer_key or not seg.num_rows or \
                seg.rows.visibility(timestamp) is not None:
            return None
    sp = first.search_params(k, params)
    lists = first.assign(xq, k, params)
    queries = normalize_rows(xq) if first.metric == "COSINE" else xq
    nq, count = len(queries), len(segments)
    D = np.empty((count, nq, k), dtype=np.float32)
    I = np.empty((count, nq, k), dtype=np.int64)
    ptr = first._swig_ptr
    xq_p, lists_p, coarse_p = ptr(queries), ptr(lists.lists), ptr(lists.distances)

    # faiss straight into the slices (each scan writes only its own), and the hit lists made on this
    # thread after the scans: each segment's _plain_search in the fan-out threads took 0.05-0.1 ms more
    # over ten segments (bench/segments.py --quick, alternated)
    def scan(i: int) -> None:
        seg = segments[i]
        seg._ivf.search_preassigned_c(nq, xq_p, k, lists_p, coarse_p, ptr(D[i]), ptr(I[i]), False,
                                      seg._plain_params(k, sp))

    entered = 0
    try:
        for seg in segments:   # none is released under the scans (LoadedSegment.search does the same)
            seg._enter()
            entered += 1
        threads = _omp_threads()
        if nq < threads and fan_out_width(segments, nq, k, params=params) > 1:
            _fan_out(range(count), scan, threads, lambda i: segments[i].num_rows)
        else:   # faiss spreads each segment's scan over the queries
            for i in range(count):
                scan(i)
        merged = merge_full(D, I, [seg._pks for seg in segments], k, metric) \
            if round_decimal is None or round_decimal < 0 else None
        if merged is None:   # hits short (searched exactly), ties with a key twice, rounding, VarChar keys
            parts = [segments[i]._plain_topk(queries, D[i], I[i], k) for i in range(count)]
    finally:
        for seg in segments[:entered]:
            seg._exit()
    return merged if merged is not None else merge_topk(parts, k, metric, round_decimal)


#: Query floats × rows compared (vecgrid.common.scan_cost) from which a search of fewer queries than
#: the cores it leased spreads its host segments over threads (faiss spreads a search over its
#: queries, so one query runs on one core): about half a millisecond of scanning, ten thread handoffs.
FAN_OUT_WORK = 500_000

_fan_out_lock = threading.Lock()
_fan_out_pool: concurrent.futures.ThreadPoolExecutor | None = None  # made once under _fan_out_lock


def _scan_work(seg: Any, nq: int, k: int, expr: plan_pb2.Expr | None, params: Mapping[str, Any] | None,
               probed: bool = False) -> int:
    """Query floats × rows compared of ``nq`` queries in ``seg`` (a filter: every row), an IVF
    segment's centroids left out: segments sharing a quantizer compare them once, before the fan-out;
    a growing segment ``probed`` through a sealed segment's lists (:func:`probing`) compares only the
    rows it filed in the probed lists, and those it has not filed yet."""
    p = params or {}
    try:
        nprobe, ef = int(p.get("nprobe") or 0), int(p.get("ef") or 0)
    except (TypeError, ValueError):  # the segment's search refuses them
        nprobe = ef = 0
    if probed and hasattr(seg, "rows_probed"):
        return nq * seg.dim * seg.rows_probed(nprobe)
    family = "flat" if expr is not None else getattr(seg, "family", "flat")
    nlist = int(getattr(seg, "nlist", 0) or 1)
    rows = scanned_rows(family, int(seg.num_rows), nlist=nlist, nprobe=nprobe, topk=k, ef=ef)
    return nq * seg.dim * (rows - nlist if family == "ivf" else rows)


def _on_host(seg: Any) -> bool:
    return seg._host if isinstance(seg, LoadedSegment) else getattr(seg, "xp", np) is np


def fan_out_width(segments: Sequence[Any], nq: int, k: int, *, expr: plan_pb2.Expr | None = None,
                  params: Mapping[str, Any] | None = None, probed: Collection[int] = ()) -> int:
    """The threads a search of ``nq`` queries can use beyond one per query: its host segments when
    it has several and they scan at least :data:`FAN_OUT_WORK` (then :func:`search_segments` runs
    them on as many threads as it finds cores), else 1.  ``probed``: positions of the segments given
    a sealed segment's lists (:func:`probing`), which a growing segment's scan then follows."""
    host = [i for i, s in enumerate(segments) if _on_host(s)]
    if len(host) < 2 or sum(_scan_work(segments[i], nq, k, expr, params, i in probed) for i in host) < FAN_OUT_WORK:
        return 1
    return len(host)


def _omp_threads() -> int:
    """The threads this thread's faiss work may use (a node's search: the cores it leased)."""
    return int(require_faiss().omp_get_max_threads())


def _one_omp_thread() -> None:
    require_faiss().omp_set_num_threads(1)


def _fan_out(items: Sequence[int], run: Callable[[int], Any], threads: int,
             cost: Callable[[int], int]) -> dict[int, Any]:
    """``run`` of every item, spread over ``threads``: this thread and pool threads, each taking the
    next item, largest first, until none is left — so a pool thread that wakes late (a busy or
    virtualised host) finds less to do, and none at all once this thread has taken the last one:
    this thread waits only for items started elsewhere.  Each thread runs faiss on one OpenMP
    thread — this one too meanwhile, since OpenMP threads idling after a region spin on the cores
    the others need."""
    global _fan_out_pool
    order = sorted(items, key=cost, reverse=True)
    with _fan_out_lock:
        if _fan_out_pool is None:
            _fan_out_pool = concurrent.futures.ThreadPoolExecutor(
                max(1, (os.cpu_count() or 2) - 1), thread_name_prefix="vecgrid-fan-out", initializer=_one_omp_thread)
        pool = _fan_out_pool
    # the items taken, those running, the results and the first failure: under `turn`, which a
    # finished item notifies; `closed` once this thread has stopped taking items
    turn = threading.Condition()
    taken, running, closed = 0, 0, False
    out: dict[int, TopK] = {}
    failures: list[BaseException] = []

    def work() -> None:
        nonlocal taken, running
        while True:
            with turn:
                if closed or failures or taken == len(order):
                    return
                i = order[taken]
                taken += 1
                running += 1
            try:
                result = run(i)
            except BaseException as e:  # noqa: BLE001 - raised by the calling thread
                with turn:
                    failures.append(e)
            else:
                with turn:
                    out[i] = result
            finally:
                with turn:
                    running -= 1
                    turn.notify_all()

    for _ in range(min(threads, len(order)) - 1):
        pool.submit(work)
    faiss = require_faiss()
    own = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        work()
    finally:
        faiss.omp_set_num_threads(own)
        with turn:   # none outlives the search, even when this part failed
            closed = True
            turn.wait_for(lambda: not running)
    if failures:
        raise failures[0]
    return out


def sharing_groups(segments: Sequence[Any], nq: int, dim: int, expr: plan_pb2.Expr | None,
                   timestamp: int | None) -> list[list[int]]:
    """Positions in ``segments`` of the groups an unfiltered search of ``nq`` queries assigns to lists
    once: a host IVF segment with every row visible at ``timestamp`` first (whose quantizer assigns
    them), the others sharing its quantizer, then the growing segments that probe their rows through
    it (a growing segment whose rows are filed in one of the quantizers, through that one); only groups
    of two or more.  :func:`search_segments` searches by them, and a node's cost
    estimate counts by them (``vecgrid.cluster.querynode.search.search_work``)."""
    if expr is not None:
        return []
    groups: dict[str, list[int]] = {}
    growing: list[int] = []
    for i, seg in enumerate(segments):
        key = getattr(seg, "quantizer_key", None)
        if key is not None and dim == seg.dim and seg.rows.visibility(timestamp) is None:
            groups.setdefault(key, []).append(i)
        elif hasattr(seg, "probes_lists_of"):
            growing.append(i)
    owners = {key: segments[members[0]] for key, members in groups.items()}
    takers: dict[str, list[int]] = {key: [] for key in groups}
    for i in growing:
        seg = segments[i]
        probed = [key for key, owner in owners.items() if seg.probes_lists_of(owner, nq)]
        if probed:   # the lists its rows are filed in already (whatever the order of the segments), else the first
            takers[next((key for key in probed if seg.filed_in(owners[key])), probed[0])].append(i)
    return [members + takers[key] for key, members in groups.items() if len(members) + len(takers[key]) > 1]


def probing(segments: Sequence[Any], nq: int, dim: int, expr: plan_pb2.Expr | None,
            timestamp: int | None) -> set[int]:
    """Positions of the growing segments an unfiltered search of ``nq`` queries probes through a
    sealed segment's lists (:func:`sharing_groups`): what a cost estimate counts by
    :meth:`GrowingSegment.rows_probed`."""
    return {i for group in sharing_groups(segments, nq, dim, expr, timestamp) for i in group
            if hasattr(segments[i], "rows_probed")}


def _one_heap_pair(segments: Sequence[Any], shared: Mapping[int, SharedLists]) -> tuple[int, int] | None:
    """Positions of a sealed segment and a growing segment whose rows are all filed in its lists,
    which one search can take in the same result heaps (LoadedSegment.search_with_growing): the
    first such growing segment among those given lists."""
    for i, lists in shared.items():
        seg = segments[i]
        if hasattr(seg, "continue_heap") and seg.filed_in(lists.owner):
            owner = next((j for j, s in enumerate(segments) if s is lists.owner), None)
            if owner is not None:
                return owner, i
    return None


def _merged_with_one_heap(one_heap: TopK, paired: tuple[int, int], parts: Sequence[TopK], positions: Sequence[int],
                          k: int, metric: str) -> TopK:
    """:func:`merge_topk` of a two-segment part of :meth:`LoadedSegment.search_with_growing` and the
    parts of the segments at ``positions``, ``sources`` as positions in the search's segments: the
    growing segment's hits go into the merge with their rows as ``-1 - row``, to be told apart."""
    sealed_at, growing_at = paired
    grown = one_heap.sources == growing_at
    first = TopK(one_heap.ids, one_heap.scores, one_heap.topks, k,
                 rows=np.where(grown, -1 - one_heap.rows, one_heap.rows))
    merged = merge_topk([first, *parts], k, metric)
    sources = np.asarray([sealed_at, *positions], dtype=np.int32)[merged.sources]
    if merged.rows is not None:
        grown = (merged.sources == 0) & (merged.rows < 0)
        sources[grown] = growing_at
        merged.rows = np.where(grown, -1 - merged.rows, merged.rows)
    merged.sources = sources
    return merged


def _shared_assignments(segments: Sequence[Any], xq: np.ndarray, k: int, expr: plan_pb2.Expr | None,
                        timestamp: int | None, params: Mapping[str, Any] | None) -> dict[int, SharedLists]:
    """Position in ``segments`` -> the queries' lists, for every group of :func:`sharing_groups`:
    assigned once per quantizer instead of once per segment (a coarse quantizer of nlist centroids
    costs as much as scanning the probed lists at nq=100)."""
    out: dict[int, SharedLists] = {}
    for group in sharing_groups(segments, len(xq), xq.shape[1], expr, timestamp):
        lists = segments[group[0]].assign(xq, k, params)
        out.update((i, lists) for i in group)
    return out


def _gather_fields(segments: Sequence[Any], merged: TopK, output_fields: Sequence[int | str]) -> list[FieldColumn]:
    assert merged.sources is not None and merged.rows is not None
    cols: list[FieldColumn] | None = None
    for src in np.unique(merged.sources):
        where = np.flatnonzero(merged.sources == src)
        part = segments[int(src)].fetch(merged.rows[where], output_fields)
        if cols is None:
            cols = []
            for c in part:
                shape = (len(merged),) + c.values.shape[1:]
                dtype = c.values.dtype if c.values.dtype.kind != "U" else object
                cols.append(FieldColumn(c.name, c.field_id, c.data_type, np.empty(shape, dtype=dtype),
                                        c.dim, c.is_dynamic))
        for dst, c in zip(cols, part):
            dst.values[where] = c.values
    for c in cols or []:
        if c.values.dtype == object and c.data_type in (schema_pb2.VarChar, schema_pb2.String):
            c.values = c.values.astype(str)
    return cols or []


def _empty_fields(segments: Sequence[Any], output_fields: Sequence[int | str]) -> list[FieldColumn]:
    for seg in segments:
        if seg.rows.n:
            return seg.fetch(np.zeros(0, dtype=np.int64), output_fields)
    return []


def search_request(segments: Sequence[LoadedSegment | GrowingSegment], serialized_expr_plan: bytes,
                   placeholder_group: bytes, *, timestamp: int | None = None,
                   output_fields: Sequence[int | str] | None = None,
                   primary_field_name: str = "") -> schema_pb2.SearchResultData:
    """A QueryNode search: decode the plan and query vectors, search, merge, encode.

    ``output_fields`` defaults to the plan's ``output_field_ids``."""
    plan = parse_search_plan(serialized_expr_plan)
    dim = segments[0].dim if segments else None
    xq = decode_placeholder_group(placeholder_group, dim)
    fields = list(plan.output_field_ids) if output_fields is None else list(output_fields)
    topk = search_segments(segments, xq, plan.topk, expr=plan.expr, timestamp=timestamp,
                           params=plan.search_params, metric=plan.metric or None,
                           round_decimal=plan.round_decimal, output_fields=fields)
    total = sum(s.num_rows for s in segments)
    return to_search_result_data(topk, output_fields=[c.name for c in (topk.fields or [])],
                                 primary_field_name=primary_field_name, all_search_count=total)

