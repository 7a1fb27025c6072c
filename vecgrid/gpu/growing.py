"""Growing data: exact brute-force search over rows not yet sealed.

:func:`brute_force_knn` is the exact k-NN kernel shared by growing segments and by
the exact fallback of filtered search:

* host: numpy arrays through faiss's BLAS kernel (``faiss.knn``), the very routine
  ``IndexFlat`` runs, so a growing segment returns what a FLAT index over the same
  rows returns (same distances, same order); pure numpy when faiss is missing;
* GPU: cupy — one matmul for the inner products (plus the norms for L2) and a
  top-k selection on the device.

:class:`GrowingSegment` keeps the appended rows (vectors, keys, insert timestamps,
scalar columns) and deletes, and searches them under the request's timestamp
(MVCC: rows inserted after it are invisible) and filter.  The channel pipeline thread
inserts while other threads read: a read takes the row count once
(:meth:`GrowingSegment.snapshot`) and searches, counts and fetches below it.

**Interim index** (Milvus's ``queryNode.segcore.interimIndex``): a growing segment of a collection
whose index is approximate anyway (IVF, HNSW, ...) may be given :class:`InterimIndex` settings.
Once it holds ``rows`` rows, an unfiltered search goes through an IVF index of its rows (``nlist``
lists trained on a sample of them, ``nprobe`` probed) instead of comparing every row: brute force
over 200,000 growing rows costs tens of milliseconds a query.  The index is built by the first such
search and takes the rows added since on each later one; it holds a copy of the vectors (the
segment's memory doubles).  A filtered search stays exact, and so does an exact (FLAT, GPU_BRUTE_FORCE) collection's.

**Probed through a sealed segment's lists**: when an unfiltered search also covers a host IVF
segment (:class:`~vecgrid.gpu.loaded_segment.SharedLists`), the queries' lists in its quantizer are
known before any segment is scanned, so the growing rows need no training: the interim index is
built over a copy of that quantizer, whatever the row count, and the search scans the same lists
there — the growing rows are found as they will be once sealed into an index of those lists (a
query may find fewer than ``k`` of them: the sealed segment's hits fill the merged answer).  It is
used once comparing every row would cost more than the extra calls (:data:`SHARED_LISTS_FROM_WORK`).
Filing a row in its list costs ``nlist`` distances once, comparing it with a query one: the rows
added since the index last grew are compared exactly until they have met ``nlist`` queries, then
filed, so the index pays for itself.  A search without such lists (one partition, say) past ``rows``
goes through the same index, assigning its queries itself: one interim index per segment, trained
here only when there is none.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from vecgrid import errors
from vecgrid.common.scan_cost import default_nprobe
from vecgrid.gpu import require_faiss
from vecgrid.gpu.build import normalize_rows
from vecgrid.gpu.columns import FieldColumn
from vecgrid.gpu.merge import MAX_TOPK, TopK, larger_is_better, merge_topk
from vecgrid.gpu.rows import RowStore, _Grow, bitmap_selector, fields_from_schema
from vecgrid.proto import plan_pb2, schema_pb2

__all__ = ["brute_force_knn", "GrowingSegment", "GrowingSnapshot", "InterimIndex"]


@dataclass(frozen=True)
class InterimIndex:
    """When and how a growing segment searches through an interim IVF index (see the module doc)."""

    rows: int = 65_536   # from this many rows on
    nlist: int = 128
    nprobe: int = 16


#: Query floats x rows from which a growing segment's rows are probed through a sealed segment's lists
#: rather than compared (about 0.1 ms of BLAS: below it, the separate coarse assignment and the merge
#: of a second part cost more than comparing every row: one query over 8,192 rows at d = 128, 100 over 82).
SHARED_LISTS_FROM_WORK = 1 << 20


def _numpy_knn(xq: np.ndarray, xb: np.ndarray, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    ip = xq @ xb.T
    if metric == "L2":
        d = (xq * xq).sum(1)[:, None] - 2 * ip + (xb * xb).sum(1)[None, :]
        order_key = d
    else:
        d = ip
        order_key = -ip
    kk = min(k, xb.shape[0])
    part = np.argpartition(order_key, kk - 1, axis=1)[:, :kk] if kk < xb.shape[0] else \
        np.tile(np.arange(xb.shape[0]), (xq.shape[0], 1))
    sub = np.take_along_axis(order_key, part, axis=1)
    o = np.argsort(sub, axis=1, kind="stable")
    idx = np.take_along_axis(part, o, axis=1)
    D = np.take_along_axis(d, idx, axis=1).astype(np.float32)
    return _pad(D, idx.astype(np.int64), k, metric)


def _pad(D: np.ndarray, I: np.ndarray, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    if D.shape[1] >= k:
        return D, I
    nq = D.shape[0]
    fill = np.float32(np.inf if metric == "L2" else -np.inf)
    D2 = np.full((nq, k), fill, dtype=np.float32)
    I2 = np.full((nq, k), -1, dtype=np.int64)
    D2[:, :D.shape[1]] = D
    I2[:, :I.shape[1]] = I
    return D2, I2


def _cupy_knn(cp: Any, xq: np.ndarray, xb: Any, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    q = cp.asarray(xq)
    b = cp.asarray(xb)
    ip = q @ b.T
    if metric == "L2":
        d = (q * q).sum(1)[:, None] - 2 * ip + (b * b).sum(1)[None, :]
        key = d
    else:
        d = ip
        key = -ip
    kk = min(k, b.shape[0])
    if kk < b.shape[0]:
        part = cp.argpartition(key, kk - 1, axis=1)[:, :kk]
    else:
        part = cp.tile(cp.arange(b.shape[0]), (q.shape[0], 1))
    sub = cp.take_along_axis(key, part, axis=1)
    o = cp.argsort(sub, axis=1)
    idx = cp.take_along_axis(part, o, axis=1)
    D = cp.take_along_axis(d, idx, axis=1).astype(cp.float32)
    return _pad(cp.asnumpy(D), cp.asnumpy(idx).astype(np.int64), k, metric)


def brute_force_knn(xq: np.ndarray, xb: Any, k: int, metric: str = "L2", *,
                    xp: Any = np) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``(D, I)`` (``nq × k``, padded with ``-1``) of ``xq`` against ``xb``.

    ``metric`` is ``"L2"`` (squared distances, ascending) or ``"IP"`` (descending);
    normalise both sides beforehand for COSINE.  ``xp=cupy`` computes on the GPU."""
    nq = xq.shape[0]
    if xb.shape[0] == 0 or k <= 0:
        return _pad(np.zeros((nq, 0), np.float32), np.zeros((nq, 0), np.int64), max(k, 0), metric)
    if xp is not np:
        return _cupy_knn(xp, xq, xb, k, metric)
    try:
        faiss = require_faiss()
    except ImportError:
        return _numpy_knn(np.asarray(xq, np.float32), np.asarray(xb, np.float32), k, metric)
    fm = faiss.METRIC_L2 if metric == "L2" else faiss.METRIC_INNER_PRODUCT
    D, I = faiss.knn(np.ascontiguousarray(xq, dtype=np.float32), np.ascontiguousarray(xb, dtype=np.float32),
                     k, metric=fm)
    return D, I


class GrowingSegment:
    """Rows of one channel not yet sealed, searched brute force.

    ``xp``: numpy (default) or cupy to hold the vectors and search on a GPU."""

    def __init__(self, dim: int, metric: str = "L2", *, segment_id: int = 0, field_id: int = 0,
                 schema: schema_pb2.CollectionSchema | None = None, pk_field_id: int | None = None,
                 xp: Any = np, with_timestamps: bool = True, interim: InterimIndex | None = None) -> None:
        self.segment_id = segment_id
        self.field_id = field_id
        self.dim = int(dim)
        self.metric = (metric or "L2").upper()
        self.xp = xp
        self._vecs = _Grow(np.zeros((0, self.dim), dtype=np.float32))
        # (cupy mirror of the first n vectors, n): replaced whole by any search thread
        self._dev_mirror: tuple[Any, int] = (None, 0)
        self.rows = RowStore(np.zeros(0, dtype=np.int64), timestamps=np.zeros(0, np.uint64)
                             if with_timestamps else None, fields=fields_from_schema(schema),
                             pk_field_id=pk_field_id)
        self.rows.vector_getter = self._vectors_of
        self.rows.vector_fields[field_id] = self.dim
        self._lock = threading.Lock()
        self.placement = "GPU" if xp is not np else "CPU"
        self.interim = interim if xp is np else None
        # the interim IVF index over the first _interim_rows rows (row offsets as ids), its quantizer's
        # fingerprint when copied from a sealed segment (None: trained here) and the queries that
        # compared the rows beyond it exactly since it last grew: built, added to and searched under
        # _interim_lock, by whichever search thread needs it
        self._interim_index: Any = None
        self._interim_rows = 0
        self._interim_key: str | None = None
        self._tail_queries = 0
        # a second IVF index over the interim index's lists that adds to a search's heaps instead of
        # starting its own (see continue_heap), made, kept and dropped with the interim index, and its
        # search params by nprobe: under _interim_lock too
        self._heap_view: Any = None
        self._heap_params: dict[int, Any] = {}
        self._interim_lock = threading.Lock()

    @property
    def num_rows(self) -> int:
        return self.rows.n

    def snapshot(self) -> "GrowingSnapshot":
        """The segment as one read sees it: its rows now, not those inserted later."""
        return GrowingSnapshot(self, self.num_rows)

    def insert(self, pks: Any, vectors: np.ndarray, *, timestamps: Any = None,
               columns: Mapping[int, Any] | None = None) -> None:
        v = np.ascontiguousarray(vectors, dtype=np.float32)
        if v.ndim != 2 or v.shape[1] != self.dim:
            raise errors.ParameterInvalid(f"vectors of shape {v.shape} do not have dimension {self.dim}")
        if len(np.asarray(pks)) != len(v):
            raise errors.ParameterInvalid("as many primary keys as vectors are needed")
        if self.metric == "COSINE":
            v = normalize_rows(v)
        with self._lock:
            # vectors first: a concurrent search sees at most rows.n rows, all with vectors
            self._vecs.append(v)
            self.rows.append(pks, timestamps=timestamps, columns=columns)

    def delete(self, pks: Any, timestamps: Any = None) -> int:
        return self.rows.delete(pks, timestamps)

    def _vectors_of(self, field_id: int, rows: np.ndarray) -> np.ndarray | None:
        if field_id != self.field_id:
            return None
        v = self._vecs.view()[rows]
        return v

    def _device_vectors(self, n: int) -> Any:
        mirror, mirrored = self._dev_mirror
        if mirror is None or mirrored < n:
            mirror = self.xp.asarray(self._vecs.view()[:n])
            self._dev_mirror = (mirror, n)
        return mirror[:n]  # this thread's mirror: another search may replace it with a shorter one

    def probes_lists_of(self, owner: Any, nq: int, num_rows: int | None = None) -> bool:
        """Whether an unfiltered search of ``nq`` queries probes this segment's (first ``num_rows``)
        rows through the lists of ``owner``'s quantizer (a host IVF segment of the same field's index;
        see the module doc): when comparing them all would cost more than the calls it takes."""
        n = self.rows.n if num_rows is None else num_rows
        return self.interim is not None and owner.dim == self.dim and owner.metric == self.metric and \
            nq * n * self.dim >= SHARED_LISTS_FROM_WORK

    def filed_in(self, owner: Any, num_rows: int | None = None) -> bool:
        """Whether the first ``num_rows`` rows (default: all) are filed in the lists of ``owner``'s
        quantizer.  Read without the lock (a choice of path): :meth:`continue_heap` checks again under it."""
        n = self.rows.n if num_rows is None else num_rows
        key = self._interim_key
        return n > 0 and key is not None and key == owner.quantizer_key and self._interim_rows >= n

    def rows_probed(self, nprobe: int, num_rows: int | None = None) -> int:
        """Rows one query compares when probed through a sealed segment's lists (``nprobe`` of them, 0:
        the default): the filed rows in those lists, on average, and every row not filed yet (a cost
        estimate)."""
        n = self.rows.n if num_rows is None else num_rows
        index = self._interim_index   # read once: a search may replace it meanwhile
        if index is None or self._interim_key is None:
            return n
        filed = min(self._interim_rows, n)
        return filed * min(nprobe or default_nprobe(index.nlist), index.nlist) // index.nlist + n - filed

    def search(self, queries: np.ndarray, k: int, *, expr: plan_pb2.Expr | None = None,
               timestamp: int | None = None, params: Mapping[str, Any] | None = None,
               metric: str | None = None, num_rows: int | None = None, assign: Any = None) -> TopK:
        """Top-``k`` among visible rows passing ``expr``; rows are the growing offsets.  Exact, or
        through the interim index (see the module doc).

        ``num_rows``: the read's snapshot of the row count (default: the count now, read once).
        ``assign``: the queries' :class:`~vecgrid.gpu.loaded_segment.SharedLists` in a sealed
        segment's quantizer, for a segment that :meth:`probes_lists_of` its owner."""
        if metric and metric.upper() != self.metric:
            raise errors.ParameterInvalid(f"metric type not match: expected={self.metric}, actual={metric.upper()}")
        if not 1 <= k <= MAX_TOPK:
            raise errors.ParameterInvalid(f"topk ({k}) should be in range [1, {MAX_TOPK}]")
        xq = np.ascontiguousarray(queries, dtype=np.float32)
        if xq.ndim != 2 or xq.shape[1] != self.dim:
            raise errors.ParameterInvalid(f"query dimension {xq.shape[-1]} does not match {self.dim}")
        if self.metric == "COSINE":
            xq = normalize_rows(xq)
        rows = self.rows  # release() replaces it
        n = rows.n if num_rows is None else num_rows
        if n == 0:
            return TopK.empty(len(xq), k, rows.pks.dtype)
        base = self._device_vectors(n) if self.xp is not np else self._vecs.view()[:n]
        if expr is None and self.interim is not None:
            if assign is not None and self.probes_lists_of(assign.owner, len(xq), n):
                return self._probe_shared_lists(xq, base, k, rows, n, timestamp, assign)
            if n >= self.interim.rows:
                return self._interim_search(xq, base, k, rows, n, timestamp)
        return _exact_topk(xq, base, k, self.metric, rows, n, expr, timestamp, self.xp)

    def exact_hits(self, xq: np.ndarray, k: int, *, owner: Any = None, num_rows: int | None = None,
                   timestamp: int | None = None) -> tuple[list, list, list] | None:
        """``(scores, keys, rows)`` of one unfiltered query's (``xq``: 1 × dim, as given) best ``k`` among
        the first ``num_rows`` rows visible at ``timestamp``, best first, as Python lists: what
        :meth:`search` finds when it compares every row, for the latency-bound merge beside a sealed
        segment (``owner``, whose lists an unfiltered search may probe instead, see
        :meth:`probes_lists_of`).  ``None`` when :meth:`search` would go another way (those lists, the
        interim index, a GPU) or the keys are not integers."""
        n = self.rows.n if num_rows is None else num_rows
        if self.xp is not np or not 1 <= k <= MAX_TOPK or self.rows.pks.dtype.kind not in "iu" or \
                (self.interim is not None and (n >= self.interim.rows or
                                               (owner is not None and self.probes_lists_of(owner, 1, n)))):
            return None
        if n == 0:
            return [], [], []
        q = normalize_rows(xq) if self.metric == "COSINE" else xq
        mask = self.rows.visibility(timestamp, n)
        if mask is not None and not mask.any():
            return [], [], []
        D, I = _exact_dense(q, self._vecs.view()[:n], k, "L2" if self.metric == "L2" else "IP", mask)
        rows = [r for r in I.tolist()[0] if r >= 0]
        return D.tolist()[0][:len(rows)], self.rows.pks[rows].tolist(), rows

    def _probe_shared_lists(self, xq: np.ndarray, base: np.ndarray, k: int, rows: RowStore, n: int,
                            timestamp: int | None, assign: Any) -> TopK:
        """Top-``k`` among the first ``n`` rows visible at ``timestamp``: those filed in the interim
        index over ``assign.owner``'s quantizer found in the queries' lists, the rest compared exactly
        (and filed once they have been compared with ``nlist`` queries; see the module doc)."""
        faiss = require_faiss()
        owner = assign.owner
        allowed = rows.visibility(timestamp, n)
        sel, bits = bitmap_selector(faiss, allowed)   # bits: alive while the search runs
        with self._interim_lock:
            index = self._interim_index
            if index is None or self._interim_key != owner.quantizer_key:
                index = self._replace_interim(_ivf_over(faiss, owner.quantizer_copy()), owner.quantizer_key)
            if self._interim_rows < n:
                self._tail_queries += len(xq)
                if self._tail_queries >= index.nlist:   # the tail has been compared nlist times: file it
                    index.add(base[self._interim_rows:n])
                    self._interim_rows, self._tail_queries = n, 0
            filed = min(self._interim_rows, n)
            if filed:
                if sel is None and self._interim_rows > n:   # rows the index holds beyond this read's n
                    sel = faiss.IDSelectorRange(0, n)
                params = faiss.SearchParametersIVF(nprobe=assign.lists.shape[1], sel=sel)
                D = np.empty((len(xq), k), dtype=np.float32)
                I = np.empty((len(xq), k), dtype=np.int64)
                ptr = faiss.swig_ptr   # the wrapper's search_preassigned takes no params (no selector)
                index.search_preassigned_c(len(xq), ptr(xq), k, ptr(assign.lists), ptr(assign.distances), ptr(D),
                                           ptr(I), False, params)
        pks = rows.pks[:n]
        parts = [TopK.from_dense(D, I, k, pks)] if filed else []
        if filed < n:   # the rows not filed yet: exactly
            fm = "L2" if self.metric == "L2" else "IP"
            D, I = _exact_dense(xq, base[filed:], k, fm, None if allowed is None else allowed[filed:])
            parts.append(TopK.from_dense(D, np.where(I >= 0, I + filed, -1), k, pks))
        return parts[0] if len(parts) == 1 else merge_topk(parts, k, self.metric)

    def continue_heap(self, xq: np.ndarray, distances: np.ndarray, labels: np.ndarray, assign: Any,
                      num_rows: int | None = None, timestamp: int | None = None) -> bool:
        """Go on with a search over ``assign.owner``'s lists into its hits so far: ``distances`` and
        ``labels`` hold a faiss heap per query (its worst hit first, labels none of this segment's rows
        take), and end up holding the best of both, still as heaps.  ``xq``: the queries as searched
        (normalised for COSINE).  Only when the first ``num_rows`` rows are all filed in those lists
        and visible at ``timestamp``; else ``False``, nothing changed."""
        n = self.rows.n if num_rows is None else num_rows
        if n == 0 or self.rows.visibility(timestamp, n) is not None:
            return False
        faiss = require_faiss()
        with self._interim_lock:
            index = self._interim_index
            if index is None or self._interim_key != assign.owner.quantizer_key or self._interim_rows < n:
                return False
            view = self._heap_view
            if view is None:
                view = self._heap_view = _heap_view(faiss, index)
            nprobe = assign.lists.shape[1]
            if self._interim_rows > n:   # rows the index holds beyond this read's n
                params = faiss.SearchParametersIVF(nprobe=nprobe, sel=faiss.IDSelectorRange(0, n))
            else:   # read-only during a search: one per nprobe
                params = self._heap_params.get(nprobe)
                if params is None:
                    params = self._heap_params[nprobe] = faiss.SearchParametersIVF(nprobe=nprobe)
            ptr = faiss.swig_ptr
            view.search_preassigned_c(len(xq), ptr(xq), labels.shape[1], ptr(assign.lists), ptr(assign.distances),
                                      ptr(distances), ptr(labels), False, params)
        return True

    def _replace_interim(self, index: Any, key: str | None) -> Any:
        """Start a new interim index (under ``_interim_lock``): empty, ``key`` its quantizer's."""
        self._interim_index, self._interim_rows, self._interim_key, self._tail_queries = index, 0, key, 0
        self._heap_view = None
        return index

    def _interim_search(self, xq: np.ndarray, base: np.ndarray, k: int, rows: RowStore, n: int,
                        timestamp: int | None) -> TopK:
        """Top-``k`` among the first ``n`` rows visible at ``timestamp``, through the interim index;
        a query that finds fewer than ``k`` rows in its probed lists is searched exactly."""
        faiss = require_faiss()
        allowed = rows.visibility(timestamp, n)
        sel, bits = bitmap_selector(faiss, allowed)   # bits: alive while the search runs
        with self._interim_lock:
            index = self._interim_index
            if index is None:   # one over a sealed segment's quantizer serves too: it holds its centroids
                index = self._replace_interim(_train_interim(faiss, base, self.metric, self.interim), None)
            if self._interim_rows < n:
                index.add(base[self._interim_rows:n])
                self._interim_rows = n
            if sel is None and self._interim_rows > n:   # rows the index holds beyond this read's n
                sel = faiss.IDSelectorRange(0, n)
            params = faiss.SearchParametersIVF(nprobe=min(self.interim.nprobe, index.nlist), sel=sel)
            D, I = index.search(xq, k, params=params)
        need = min(k, n if allowed is None else int(np.count_nonzero(allowed)))
        short = I[:, need - 1] < 0 if need else np.zeros(len(xq), dtype=bool)
        if short.any():  # fewer than k in the probed lists: those queries compare every row
            fm = "L2" if self.metric == "L2" else "IP"
            D[short], I[short] = _exact_dense(xq[short], base, k, fm, allowed)
        return TopK.from_dense(D, I, k, rows.pks[:n])

    def fetch(self, rows: np.ndarray, fields: Iterable[int | str]) -> list[FieldColumn]:
        return self.rows.fetch(rows, fields)

    def nbytes(self) -> int:
        index = self._interim_index
        interim = 0 if index is None else self._interim_rows * (self.dim * 4 + 8) + index.nlist * self.dim * 4
        return self._vecs.buf.nbytes + self.rows.nbytes() + interim

    def release(self) -> None:
        self._dev_mirror = (None, 0)
        self._vecs = _Grow(np.zeros((0, self.dim), dtype=np.float32))
        self.rows = RowStore(np.zeros(0, dtype=np.int64))
        with self._interim_lock:
            self._replace_interim(None, None)

    @property
    def larger_is_better(self) -> bool:
        return larger_is_better(self.metric)


def _exact_topk(xq: np.ndarray, base: Any, k: int, metric: str, rows: RowStore, n: int,
                expr: plan_pb2.Expr | None, timestamp: int | None, xp: Any = np) -> TopK:
    """Exact top-``k`` of ``xq`` (normalised for COSINE already) among the first ``n`` rows of ``base``
    that are visible at ``timestamp`` and pass ``expr``."""
    fm = "L2" if metric == "L2" else "IP"
    pks = rows.pks[:n]
    mask = rows.mask(expr, timestamp, n)
    if mask is not None and not mask.any():
        return TopK.empty(len(xq), k, pks.dtype)
    D, I = _exact_dense(xq, base, k, fm, mask, xp)
    # faiss packs a query's hits first: one query whose last label is a row is full (no padding scan)
    return TopK.from_dense(D, I, k, pks, full=len(I) == 1 and I.item(-1) >= 0)


def _exact_dense(xq: np.ndarray, base: Any, k: int, fm: str, mask: np.ndarray | None,
                 xp: Any = np) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``(D, I)`` of ``xq`` among the rows of ``base`` that ``mask`` allows (``None``: all);
    ``I`` holds row offsets of ``base``, ``-1`` where fewer than ``k`` rows are allowed."""
    if mask is None:
        return brute_force_knn(xq, base, k, fm, xp=xp)
    allowed = np.flatnonzero(mask)
    sub = base[xp.asarray(allowed)] if xp is not np else base[allowed]
    D, I = brute_force_knn(xq, sub, k, fm, xp=xp)
    valid = I >= 0
    return D, np.where(valid, allowed[np.where(valid, I, 0)], -1)


def _ivf_over(faiss: Any, quantizer: Any) -> Any:
    """An empty IVF index filing rows in the lists of ``quantizer`` (trained: its centroids), with
    its metric; faiss's wrapper keeps the quantizer alive with it."""
    return faiss.IndexIVFFlat(quantizer, quantizer.d, quantizer.ntotal, quantizer.metric_type)


def _heap_view(faiss: Any, index: Any) -> Any:
    """An IVF index over ``index``'s lists and quantizer that adds its hits to the heaps it is given
    (faiss's ``PARALLEL_MODE_NO_HEAP_INIT``: no emptying first, no sorting after), over its queries
    in parallel as a sealed segment's search (mode 3); it keeps ``index``, which owns the lists, alive."""
    view = faiss.IndexIVFFlat(index.quantizer, index.d, index.nlist, index.metric_type)
    view.replace_invlists(index.invlists, False)
    view.parallel_mode = 3 | view.PARALLEL_MODE_NO_HEAP_INIT
    view.referenced_objects = [*getattr(view, "referenced_objects", []), index]   # as faiss's own wrappers keep theirs
    return view


def _train_interim(faiss: Any, base: np.ndarray, metric: str, settings: InterimIndex) -> Any:
    """An empty IVF index of ``settings.nlist`` lists trained on an even sample of ``base`` (up to
    faiss's 256 rows per list; rows are often inserted in some order, so not just the first ones)."""
    n, dim = base.shape
    nlist = max(1, min(settings.nlist, n // 39))   # faiss's 39 training rows a list at least
    fm = faiss.METRIC_L2 if metric == "L2" else faiss.METRIC_INNER_PRODUCT
    quantizer = faiss.IndexFlatL2(dim) if fm == faiss.METRIC_L2 else faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFFlat(quantizer, dim, nlist, fm)   # faiss's wrapper keeps the quantizer alive
    index.train(np.ascontiguousarray(base[::max(1, n // (256 * nlist))]))
    return index


class GrowingSnapshot:
    """The first ``num_rows`` rows of a growing segment: what one read searches, counts and fetches
    while the pipeline thread goes on inserting (rows below ``num_rows`` never change but for
    deletes, which hide rows by timestamp)."""

    def __init__(self, segment: GrowingSegment, num_rows: int) -> None:
        self.segment = segment
        self.num_rows = num_rows

    @property
    def rows(self) -> RowStore:
        return self.segment.rows

    @property
    def field_id(self) -> int:
        return self.segment.field_id

    @property
    def dim(self) -> int:
        return self.segment.dim

    @property
    def metric(self) -> str:
        return self.segment.metric

    @property
    def placement(self) -> str:
        return self.segment.placement

    @property
    def larger_is_better(self) -> bool:
        return self.segment.larger_is_better

    def probes_lists_of(self, owner: Any, nq: int) -> bool:
        return self.segment.probes_lists_of(owner, nq, self.num_rows)

    def rows_probed(self, nprobe: int) -> int:
        return self.segment.rows_probed(nprobe, self.num_rows)

    def filed_in(self, owner: Any) -> bool:
        return self.segment.filed_in(owner, self.num_rows)

    def continue_heap(self, xq: np.ndarray, distances: np.ndarray, labels: np.ndarray, assign: Any,
                      timestamp: int | None = None) -> bool:
        return self.segment.continue_heap(xq, distances, labels, assign, self.num_rows, timestamp)

    def search(self, queries: np.ndarray, k: int, **kw: Any) -> TopK:
        return self.segment.search(queries, k, num_rows=self.num_rows, **kw)

    def exact_hits(self, xq: np.ndarray, k: int, *, owner: Any = None,
                   timestamp: int | None = None) -> tuple[list, list, list] | None:
        return self.segment.exact_hits(xq, k, owner=owner, num_rows=self.num_rows, timestamp=timestamp)

    def fetch(self, rows: np.ndarray, fields: Iterable[int | str]) -> list[FieldColumn]:
        return self.segment.fetch(rows, fields)

    def count(self, expr: plan_pb2.Expr | None = None, timestamp: int | None = None) -> int:
        """Rows of the snapshot passing ``expr``, visible at ``timestamp``."""
        return self.rows.count(expr, timestamp, self.num_rows)

    def other_field(self, field_id: int) -> "GrowingFieldSnapshot":
        """The snapshot searched on another vector field of its rows (a multi-vector collection)."""
        return GrowingFieldSnapshot(self, field_id)


class GrowingFieldSnapshot:
    """Another vector field of a growing snapshot, searched exactly over its stored column: the segment
    keeps its own vectors for one field only, and a collection may have several (hybrid search).
    The search copies the snapshot's column (growing segments are small: ``max_growing_mb``); the
    request's ``metric`` is the field's index metric (the proxy puts it in the plan)."""

    family = "flat"
    placement = "CPU"

    def __init__(self, snapshot: GrowingSnapshot, field_id: int) -> None:
        self.snapshot = snapshot
        self.field_id = field_id
        self.num_rows = snapshot.num_rows
        self.dim = int(snapshot.rows.vector_fields.get(field_id) or snapshot.rows.resolve_field(field_id).dim)

    @property
    def rows(self) -> RowStore:
        return self.snapshot.rows

    def search(self, queries: np.ndarray, k: int, *, expr: plan_pb2.Expr | None = None,
               timestamp: int | None = None, params: Mapping[str, Any] | None = None,
               metric: str | None = None) -> TopK:
        if not metric:
            raise errors.ParameterInvalid(f"a search of vector field {self.field_id} needs its metric")
        metric = metric.upper()
        if not 1 <= k <= MAX_TOPK:
            raise errors.ParameterInvalid(f"topk ({k}) should be in range [1, {MAX_TOPK}]")
        xq = np.ascontiguousarray(queries, dtype=np.float32)
        if xq.ndim != 2 or xq.shape[1] != self.dim:
            raise errors.ParameterInvalid(f"query dimension {xq.shape[-1]} does not match {self.dim}")
        n = self.num_rows
        if n == 0:
            return TopK.empty(len(xq), k, self.rows.pks.dtype)
        (col,) = self.rows.fetch(np.arange(n), [self.field_id])
        values = col.values
        base = np.ascontiguousarray(np.stack(values) if values.dtype == object else values, dtype=np.float32)
        if metric == "COSINE":
            xq, base = normalize_rows(xq), normalize_rows(base)
        return _exact_topk(xq, base.reshape(n, self.dim), k, metric, self.rows, n, expr, timestamp)

    def fetch(self, rows: np.ndarray, fields: Iterable[int | str]) -> list[FieldColumn]:
        return self.snapshot.fetch(rows, fields)
