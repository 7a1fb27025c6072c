"""The cupy engine: FLAT and IVF_FLAT segments searched on a GPU with cupy alone.

faiss-gpu wheels exist for CUDA 12 only, while cupy ships wheels for CUDA 11, 12 and 13, so a GPU
node whose faiss is a CPU build still serves its FLAT and IVF_FLAT segments from GPU memory with
this engine (``device.gpu_engine()`` picks it; faiss-gpu stays preferred when installed).  Index
files are the same: a segment is read with faiss (CPU), its arrays are copied to the device, and
:meth:`EngineIndex.to_host` gives back a faiss index with the same content.

What lives on the device
------------------------
* FLAT: the ``n × d`` float32 vectors and, for L2, their squared norms.
* IVF_FLAT: the ``nlist × d`` centroids (and norms), the vectors grouped by inverted list in list
  order (``n × d``), where each list starts (``nlist + 1``) and the row of each stored vector
  (``n`` int64) — the faiss ``ArrayInvertedLists`` laid end to end.

How a search runs (one launch per step for a whole batch of queries)
---------------------------------------------------------------------
1. Scores by one GEMM (cuBLAS through cupy) per tile of the base, the tile sized so that its
   ``nq × m`` score matrix stays under :data:`SCRATCH_BYTES`.
2. ``select_tile``: a block per ``(query, chunk of columns)`` turns scores into keys (L2:
   ``‖y‖² − 2·x·y``, the query's norm added back at the end; IP: ``−x·y``), drops rows the
   filter/visibility mask forbids, keeps each thread's best ``k`` and merges them into the block's
   best ``k``.  ``merge`` runs the same kernel over those candidates until one block per query
   is left.
3. IVF_FLAT: the coarse step is steps 1-2 over the centroids (``nprobe`` best lists per query, by
   the quantizer's metric, as faiss does); then ``ivf_scan`` runs a block per ``(query, probed
   list)``, a warp per stored vector (exact distances, as faiss's IVF_FLAT scanner), and ``merge``
   keeps the best ``k``.

Order is by key, then by row (smaller first), so results do not depend on thread timing and the
numpy implementation gives the same ids.  A row is a hit only once, and a query gets
``min(k, allowed rows reached)`` hits, padded with ``-1``.

Two implementations of the kernels
----------------------------------
:class:`CudaKernels` (cupy ``RawModule``) and :class:`NumpyKernels` (numpy, the reference) share
one contract; the engine's code (tiling, the coarse step, merging, masks, distances, padding) is
the same for both.  CI runs the engine on :class:`NumpyKernels` against faiss, and a GPU run checks
the CUDA kernels against the numpy ones on the same inputs.

Ownership: an :class:`EngineIndex` is touched only on its device's owner thread
(:meth:`vecgrid.gpu.device.Device.run`), like faiss GPU indexes; its arrays are never written
after construction except the lazily made row-to-position map of IVF (made on that thread).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

__all__ = [
    "SUPPORTED", "MAX_K", "SCRATCH_BYTES", "EngineIndex", "FlatIndex", "IVFFlatIndex", "NumpyKernels",
    "CudaKernels", "kernels_for", "from_faiss", "device_bytes",
]

#: built types this engine serves (the others stay on the host when faiss has no GPU build)
SUPPORTED = ("FLAT", "IVF_FLAT")
#: largest k (and nprobe through the kernel) per launch; a larger k is served by the host copy
MAX_K = 1024
#: largest score matrix of one GEMM tile
SCRATCH_BYTES = 256 << 20
#: queries per launch (a CUDA grid's y dimension is at most 65,535)
QUERY_BATCH = 4096
THREADS = 128
CHUNK = 8192

_L2, _IP = "L2", "IP"

KERNEL_SOURCE = r"""
#define VG_INF __int_as_float(0x7f800000)

// (a, ia) comes before (b, ib): the smaller key, then the smaller row; row -1 (padding) last.
__device__ __forceinline__ bool before(float a, long long ia, float b, long long ib) {
    if (a != b) return a < b;
    return (unsigned long long)ia < (unsigned long long)ib;
}

// Insert into a thread's sorted list of at most k entries.  thr: the list's last key once full
// (+inf before), kept in a register so that the scans reject most entries with one compare.
__device__ __forceinline__ void push(float* lv, long long* li, int& c, int k, float v, long long id,
                                     float& thr) {
    if (c == k && !before(v, id, lv[k - 1], li[k - 1])) return;
    int p = (c < k) ? c++ : k - 1;
    while (p > 0 && before(v, id, lv[p - 1], li[p - 1])) {
        lv[p] = lv[p - 1];
        li[p] = li[p - 1];
        --p;
    }
    lv[p] = v;
    li[p] = id;
    if (c == k) thr = lv[k - 1];
}

__device__ __forceinline__ void warp_best(float& v, long long& id, int& t) {
    for (int off = 16; off > 0; off >>= 1) {
        float ov = __shfl_down_sync(0xffffffffu, v, off);
        long long oi = __shfl_down_sync(0xffffffffu, id, off);
        int ot = __shfl_down_sync(0xffffffffu, t, off);
        if (before(ov, oi, v, id)) { v = ov; id = oi; t = ot; }
    }
}

// The block's best k of every thread's sorted list: k rounds of a block-wide arg-best, the
// winning thread moving to its next entry.  blockDim.x is a multiple of 32.
__device__ void block_merge(const float* lv, const long long* li, int c, int k,
                            float* out_v, long long* out_i) {
    __shared__ float sv[32];
    __shared__ long long si[32];
    __shared__ int st[32];
    __shared__ int winner;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    int h = 0;
    for (int r = 0; r < k; ++r) {
        float v = h < c ? lv[h] : VG_INF;
        long long id = h < c ? li[h] : -1LL;
        int t = threadIdx.x;
        warp_best(v, id, t);
        if (lane == 0) { sv[warp] = v; si[warp] = id; st[warp] = t; }
        __syncthreads();
        if (warp == 0) {
            v = lane < nw ? sv[lane] : VG_INF;
            id = lane < nw ? si[lane] : -1LL;
            t = lane < nw ? st[lane] : -1;
            warp_best(v, id, t);
            if (lane == 0) {
                out_v[r] = v;
                out_i[r] = id;
                winner = id == -1LL ? -1 : t;
            }
        }
        __syncthreads();
        if (winner < 0) {  // every list is exhausted: the rest is padding
            if (threadIdx.x == 0) {
                for (int rr = r + 1; rr < k; ++rr) { out_v[rr] = VG_INF; out_i[rr] = -1LL; }
            }
            break;
        }
        if ((int)threadIdx.x == winner) ++h;
    }
}

// Ascending bitonic sort of blockDim.x (a power of two) floats in shared memory, one per thread.
__device__ void block_sort(float* a) {
    const int n = blockDim.x, i = threadIdx.x;
    for (int size = 2; size <= n; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            __syncthreads();
            const int j = i ^ stride;
            if (j > i) {
                const float x = a[i], y = a[j];
                if ((x > y) == ((i & size) == 0)) { a[i] = y; a[j] = x; }
            }
        }
    }
    __syncthreads();
}

// keys = alpha * S[q, j] + bias[j]; rows col_offset + j (or ids[q, j] when given).  Two passes over
// the block's chunk: each thread's smallest key first, whose k-th smallest over the block bounds the
// chunk's k-th smallest key (k disjoint groups each hold a key at or below it); then only keys at or
// below that bound are kept, so the lists see a few dozen entries instead of most of the chunk.
extern "C" __global__ void select_tile(
        const float* S, int m, long long ld, const float* bias, float alpha,
        const unsigned char* allowed, const long long* ids, long long col_offset,
        int k, int chunk, float* out_v, long long* out_i) {
    __shared__ float group_min[1024];
    const int q = blockIdx.y, b = blockIdx.x;
    const long long start = (long long)b * chunk;
    long long end = start + chunk;
    if (end > m) end = m;
    float lv[KMAX];
    long long li[KMAX];
    int c = 0;
    float thr = VG_INF;
    const float* row = S + (long long)q * ld;
    float bound = VG_INF;
    if (k <= (int)blockDim.x) {
        float mn = VG_INF;
        for (long long j = start + threadIdx.x; j < end; j += blockDim.x) {
            const long long id = ids ? ids[(long long)q * ld + j] : col_offset + j;
            if (id < 0 || (allowed && !allowed[id])) continue;
            const float key = alpha * row[j] + (bias ? bias[j] : 0.0f);
            if (key < mn) mn = key;   // NaN never is
        }
        group_min[threadIdx.x] = mn;
        block_sort(group_min);
        bound = group_min[k - 1];
    }
    for (long long j = start + threadIdx.x; j < end; j += blockDim.x) {
        const long long id = ids ? ids[(long long)q * ld + j] : col_offset + j;
        if (id < 0 || (allowed && !allowed[id])) continue;
        const float key = alpha * row[j] + (bias ? bias[j] : 0.0f);
        if (!(key <= bound) || !(key <= thr)) continue;   // above the bound or the list's last, or NaN
        push(lv, li, c, k, key, id, thr);
    }
    const long long o = ((long long)q * gridDim.x + b) * k;
    block_merge(lv, li, c, k, out_v + o, out_i + o);
}

// One block per (query, probe); a warp per stored vector.  Keys: squared L2, or -inner product.
extern "C" __global__ void ivf_scan(
        const float* xq, int d, const float* xb, const long long* list_start,
        const long long* probes, int nprobe, const long long* row_of,
        const unsigned char* allowed, int ip, int k, float* out_v, long long* out_i) {
    const int q = blockIdx.y, p = blockIdx.x;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    float lv[KMAX];
    long long li[KMAX];
    int c = 0;
    float thr = VG_INF;
    const long long l = probes[(long long)q * nprobe + p];
    const float* qv = xq + (long long)q * d;
    if (l >= 0) {
        const long long s = list_start[l], e = list_start[l + 1];
        for (long long v = s + warp; v < e; v += nw) {
            const long long r = row_of[v];
            if (allowed && !allowed[r]) continue;   // the same v for the whole warp
            const float* x = xb + v * (long long)d;
            float acc = 0.0f;
            for (int t = lane; t < d; t += 32) {
                const float a = qv[t], y = x[t];
                if (ip) acc += a * y; else { const float df = a - y; acc += df * df; }
            }
            for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
            if (lane == 0) {
                const float key = ip ? -acc : acc;
                if (key <= thr) push(lv, li, c, k, key, r, thr);
            }
        }
    }
    const long long o = ((long long)q * nprobe + p) * k;
    block_merge(lv, li, c, k, out_v + o, out_i + o);
}
"""


def _kmax(k: int) -> int:
    kmax = 16
    while kmax < k:
        kmax *= 2
    return kmax


class NumpyKernels:
    """The kernels' contract in numpy: the reference the CUDA kernels are checked against, and the
    engine's array module in CPU tests.  Every function returns ``(keys, rows)``, float32 and int64,
    best first per query by (key, row), padded with ``(inf, -1)``."""

    name = "numpy"
    xp = np

    @staticmethod
    def asnumpy(a: Any) -> np.ndarray:
        return np.asarray(a)

    def free_cached(self) -> None:
        """Nothing is cached by numpy."""

    @staticmethod
    def _best(keys: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        bad = np.isnan(keys) | (rows < 0)
        keys = np.where(bad, np.float32(np.inf), keys).astype(np.float32)
        rows = np.where(bad, -1, rows).astype(np.int64)
        order = np.lexsort((rows.view(np.uint64), keys), axis=-1)[:, :k]
        keys, rows = np.take_along_axis(keys, order, 1), np.take_along_axis(rows, order, 1)
        if keys.shape[1] < k:
            pad = k - keys.shape[1]
            keys = np.pad(keys, ((0, 0), (0, pad)), constant_values=np.inf)
            rows = np.pad(rows, ((0, 0), (0, pad)), constant_values=-1)
        return keys, rows

    def select_tile(self, S: np.ndarray, k: int, *, alpha: float, bias: np.ndarray | None,
                    allowed: np.ndarray | None, col_offset: int) -> tuple[np.ndarray, np.ndarray]:
        keys = np.float32(alpha) * S + (bias[None, :] if bias is not None else np.float32(0))
        rows = np.broadcast_to(np.arange(col_offset, col_offset + S.shape[1], dtype=np.int64), S.shape)
        if allowed is not None:
            rows = np.where(allowed[rows].astype(bool), rows, -1)
        return self._best(keys, rows, k)

    def merge(self, keys: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self._best(keys, rows, k)

    def ivf_scan(self, xq: np.ndarray, xb: np.ndarray, list_start: np.ndarray, probes: np.ndarray,
                 row_of: np.ndarray, allowed: np.ndarray | None, ip: bool, k: int) -> tuple[np.ndarray, np.ndarray]:
        nq, nprobe = probes.shape
        keys = np.full((nq, nprobe * k), np.inf, dtype=np.float32)
        rows = np.full((nq, nprobe * k), -1, dtype=np.int64)
        for q in range(nq):
            for p, lst in enumerate(probes[q]):
                if lst < 0:
                    continue
                s, e = int(list_start[lst]), int(list_start[lst + 1])
                x, r = xb[s:e], row_of[s:e]
                if allowed is not None:
                    keep = allowed[r].astype(bool)
                    x, r = x[keep], r[keep]
                if ip:
                    kv = -(x @ xq[q])
                else:
                    kv = ((x - xq[q]) ** 2).sum(1)
                bk, br = self._best(kv.astype(np.float32)[None, :], r[None, :], k)
                keys[q, p * k:(p + 1) * k], rows[q, p * k:(p + 1) * k] = bk[0], br[0]
        return keys, rows


class CudaKernels:
    """The kernels on a GPU: one ``RawModule`` per power-of-two bound of ``k`` (compiled on first use
    by NVRTC, cached on disk by cupy)."""

    name = "cuda"

    def __init__(self, cp: Any) -> None:
        self.xp = cp
        self._modules: dict[int, Any] = {}
        self._lock = threading.Lock()  # the modules dict: compiled once per bound, any thread

    def asnumpy(self, a: Any) -> np.ndarray:
        return self.xp.asnumpy(a)

    def free_cached(self) -> None:
        """Give cupy's pooled free blocks back to the driver (so the free-memory counter sees them)."""
        self.xp.get_default_memory_pool().free_all_blocks()

    def _fn(self, name: str, k: int) -> Any:
        kmax = _kmax(k)
        with self._lock:
            mod = self._modules.get(kmax)
            if mod is None:
                mod = self.xp.RawModule(code=KERNEL_SOURCE, options=("-std=c++14", f"-DKMAX={kmax}"))
                self._modules[kmax] = mod
        return mod.get_function(name)

    @staticmethod
    def _ptr(a: Any) -> Any:
        return a if a is not None else np.uint64(0)

    def _select(self, S: Any, k: int, alpha: float, bias: Any, allowed: Any, ids: Any,
                col_offset: int, chunk: int) -> tuple[Any, Any]:
        cp = self.xp
        nq, m = S.shape
        blocks = max(1, -(-m // chunk))
        out_v = cp.empty((nq, blocks * k), dtype=cp.float32)
        out_i = cp.empty((nq, blocks * k), dtype=cp.int64)
        self._fn("select_tile", k)(
            (blocks, nq), (THREADS,),
            (S, np.int32(m), np.int64(S.shape[1]), self._ptr(bias), np.float32(alpha), self._ptr(allowed),
             self._ptr(ids), np.int64(col_offset), np.int32(k), np.int32(chunk), out_v, out_i))
        return out_v, out_i

    def select_tile(self, S: Any, k: int, *, alpha: float, bias: Any, allowed: Any,
                    col_offset: int) -> tuple[Any, Any]:
        return self._select(S, k, alpha, bias, allowed, None, col_offset, max(CHUNK, 16 * k))

    def merge(self, keys: Any, rows: Any, k: int) -> tuple[Any, Any]:
        keys, rows = self.xp.ascontiguousarray(keys), self.xp.ascontiguousarray(rows)
        while True:
            m = keys.shape[1]
            chunk = m if m <= 4 * max(CHUNK, 16 * k) else max(CHUNK, 16 * k)
            keys, rows = self._select(keys, k, 1.0, None, None, rows, 0, chunk)
            if chunk == m:
                return keys, rows

    def ivf_scan(self, xq: Any, xb: Any, list_start: Any, probes: Any, row_of: Any, allowed: Any,
                 ip: bool, k: int) -> tuple[Any, Any]:
        cp = self.xp
        nq, nprobe = probes.shape
        out_v = cp.empty((nq, nprobe * k), dtype=cp.float32)
        out_i = cp.empty((nq, nprobe * k), dtype=cp.int64)
        self._fn("ivf_scan", k)(
            (nprobe, nq), (THREADS,),
            (xq, np.int32(xq.shape[1]), xb, list_start, probes, np.int32(nprobe), row_of, self._ptr(allowed),
             np.int32(1 if ip else 0), np.int32(k), out_v, out_i))
        return out_v, out_i


_cuda_kernels: dict[int, CudaKernels] = {}  # by array module; under _cuda_kernels_lock (any GPU's owner thread)
_cuda_kernels_lock = threading.Lock()


def kernels_for(xp: Any) -> NumpyKernels | CudaKernels:
    """The kernels of an array module: numpy's reference, or the CUDA ones of cupy (one per module)."""
    if xp is np:
        return NumpyKernels()
    with _cuda_kernels_lock:
        kern = _cuda_kernels.get(id(xp))
        if kern is None:
            kern = _cuda_kernels[id(xp)] = CudaKernels(xp)
        return kern


class EngineIndex:
    """A segment's index on the engine's device: the subset of a faiss index that
    :class:`~vecgrid.gpu.loaded_segment.LoadedSegment` uses (``d``, ``ntotal``, ``search``,
    ``reconstruct_batch``), plus a filter mask applied on the device and :meth:`to_host`."""

    kind = ""

    def __init__(self, kernels: NumpyKernels | CudaKernels, d: int, ntotal: int, metric: str) -> None:
        self.kernels = kernels
        self.xp = kernels.xp
        self.d = d
        self.ntotal = ntotal
        self.metric = metric  # "L2" or "IP" (COSINE is IP over normalised vectors)

    def device_bytes(self) -> int:
        raise NotImplementedError

    def release(self) -> None:
        """Drop the device arrays and hand their memory back."""
        for name, value in list(vars(self).items()):
            if isinstance(value, self.xp.ndarray):
                setattr(self, name, None)
        self.kernels.free_cached()

    def _mask(self, allowed: Any) -> Any:
        if allowed is None:
            return None
        return self.xp.ascontiguousarray(self.xp.asarray(allowed), dtype=self.xp.uint8)

    def search(self, xq: np.ndarray, k: int, *, nprobe: int | None = None,
               allowed: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """``(D, I)`` like faiss (``nq × k``, best first, ``-1`` rows padded with ±inf) of the
        rows ``allowed`` permits (all when ``None``).  ``nprobe`` applies to IVF only."""
        if not 1 <= k <= MAX_K:
            raise ValueError(f"k ({k}) is outside [1, {MAX_K}] of the cupy engine")
        xq = np.ascontiguousarray(xq, dtype=np.float32)
        nq = xq.shape[0]
        D = np.empty((nq, k), dtype=np.float32)
        I = np.empty((nq, k), dtype=np.int64)
        mask = self._mask(allowed)
        for s in range(0, nq, QUERY_BATCH):
            q = self.xp.asarray(xq[s:s + QUERY_BATCH])
            keys, rows = self._search_keys(q, k, nprobe, mask)
            D[s:s + len(q)] = self.kernels.asnumpy(keys)
            I[s:s + len(q)] = self.kernels.asnumpy(rows)
        return self._distances(xq, D, I), I

    def _search_keys(self, q: Any, k: int, nprobe: int | None, mask: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def _distances(self, xq: np.ndarray, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return _keys_to_distances(keys, rows, self.metric)

    def reconstruct_batch(self, rows: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def to_host(self, faiss: Any) -> Any:
        """A faiss index in host memory with the same content (for index files and host paths)."""
        raise NotImplementedError


def _keys_to_distances(keys: np.ndarray, rows: np.ndarray, metric: str) -> np.ndarray:
    D = keys if metric == _L2 else -keys
    return np.where(rows < 0, np.float32(np.inf if metric == _L2 else -np.inf), D).astype(np.float32)


def _tiled_topk(kernels: Any, q: Any, base: Any, bias: Any, alpha: float, k: int, mask: Any) -> tuple[Any, Any]:
    """Best ``k`` (key, row) per query of ``alpha·q·baseᵀ + bias`` over every allowed row of ``base``."""
    xp = kernels.xp
    nq, n = q.shape[0], base.shape[0]
    if n == 0:
        return (xp.full((nq, k), np.inf, dtype=xp.float32), xp.full((nq, k), -1, dtype=xp.int64))
    tile = max(CHUNK, (SCRATCH_BYTES // 4 // max(nq, 1)) // CHUNK * CHUNK)
    if n <= tile and n <= CHUNK:  # one block per query: its k are the answer, no merge launch
        return kernels.select_tile(q @ base.T, k, alpha=alpha, bias=bias, allowed=mask, col_offset=0)
    keys, rows = [], []
    for t0 in range(0, n, tile):
        t1 = min(n, t0 + tile)
        S = q @ base[t0:t1].T
        kv, kr = kernels.select_tile(S, k, alpha=alpha, bias=None if bias is None else bias[t0:t1],
                                     allowed=mask, col_offset=t0)
        keys.append(kv)
        rows.append(kr)
        del S
    return kernels.merge(xp.concatenate(keys, axis=1), xp.concatenate(rows, axis=1), k)


class FlatIndex(EngineIndex):
    """Exact search: GEMM tiles and the block selection."""

    kind = "FLAT"

    def __init__(self, kernels: Any, xb: np.ndarray, metric: str) -> None:
        super().__init__(kernels, int(xb.shape[1]), int(xb.shape[0]), metric)
        # a copy (numpy's asarray would keep a view of the faiss index's memory, freed with it)
        self.xb = self.xp.array(xb, dtype=np.float32, order="C")
        self.norms = (self.xb * self.xb).sum(1) if metric == _L2 else None

    def device_bytes(self) -> int:
        return _flat_bytes(self.ntotal, self.d, self.metric)

    def _search_keys(self, q: Any, k: int, nprobe: int | None, mask: Any) -> tuple[Any, Any]:
        return _tiled_topk(self.kernels, q, self.xb, self.norms, -2.0 if self.metric == _L2 else -1.0, k, mask)

    def _distances(self, xq: np.ndarray, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if self.metric == _L2:  # ‖x‖² + (‖y‖² − 2·x·y), never below 0 (rounding), as faiss's BLAS path
            keys = np.maximum(keys + np.einsum("ij,ij->i", xq, xq)[:, None], np.float32(0))
        return _keys_to_distances(keys, rows, self.metric)

    def reconstruct_batch(self, rows: np.ndarray) -> np.ndarray:
        return self.kernels.asnumpy(self.xb[self.xp.asarray(np.asarray(rows, dtype=np.int64))])

    def to_host(self, faiss: Any) -> Any:
        index = faiss.IndexFlat(self.d, faiss.METRIC_L2 if self.metric == _L2 else faiss.METRIC_INNER_PRODUCT)
        if self.ntotal:
            index.add(self.kernels.asnumpy(self.xb))
        return index


class IVFFlatIndex(EngineIndex):
    """IVF_FLAT: coarse GEMM + selection over the centroids, then the probed lists scanned."""

    kind = "IVF_FLAT"

    def __init__(self, kernels: Any, centroids: np.ndarray, coarse_metric: str, xb_by_list: np.ndarray,
                 list_start: np.ndarray, row_of: np.ndarray, metric: str, nprobe: int = 1) -> None:
        super().__init__(kernels, int(centroids.shape[1]), int(xb_by_list.shape[0]), metric)
        xp = self.xp
        self.nlist = int(centroids.shape[0])
        self.nprobe = nprobe
        self.coarse_metric = coarse_metric
        self.centroids = xp.asarray(np.ascontiguousarray(centroids, dtype=np.float32))
        self.centroid_norms = (self.centroids * self.centroids).sum(1) if coarse_metric == _L2 else None
        self.xb = xp.asarray(np.ascontiguousarray(xb_by_list, dtype=np.float32))
        self.list_start = xp.asarray(np.asarray(list_start, dtype=np.int64))
        self.row_of = xp.asarray(np.asarray(row_of, dtype=np.int64))
        self._pos_of_row: Any = None  # row -> position in xb, made on the first reconstruct

    def device_bytes(self) -> int:
        return _ivf_bytes(self.ntotal, self.d, self.nlist, self.coarse_metric)

    def probes(self, q: Any, nprobe: int) -> Any:
        """The ``nprobe`` lists whose centroids are nearest each query (the quantizer's metric)."""
        xp = self.xp
        nprobe = max(1, min(nprobe, self.nlist))
        if nprobe == self.nlist:
            return xp.broadcast_to(xp.arange(self.nlist, dtype=xp.int64), (q.shape[0], self.nlist)).copy()
        alpha = -2.0 if self.coarse_metric == _L2 else -1.0
        if nprobe <= MAX_K:
            _, lists = _tiled_topk(self.kernels, q, self.centroids, self.centroid_norms, alpha, nprobe, None)
            return xp.ascontiguousarray(lists)
        keys = alpha * (q @ self.centroids.T)
        if self.centroid_norms is not None:
            keys = keys + self.centroid_norms[None, :]
        return xp.ascontiguousarray(xp.argsort(keys, axis=1)[:, :nprobe]).astype(xp.int64)

    def _search_keys(self, q: Any, k: int, nprobe: int | None, mask: Any) -> tuple[Any, Any]:
        lists = self.probes(q, self.nprobe if nprobe is None else nprobe)
        keys, rows = self.kernels.ivf_scan(q, self.xb, self.list_start, lists, self.row_of, mask,
                                           self.metric == _IP, k)
        return self.kernels.merge(keys, rows, k)

    def reconstruct_batch(self, rows: np.ndarray) -> np.ndarray:
        xp = self.xp
        if self._pos_of_row is None:
            pos = xp.empty(self.ntotal, dtype=xp.int64)
            pos[self.row_of] = xp.arange(self.ntotal, dtype=xp.int64)
            self._pos_of_row = pos
        return self.kernels.asnumpy(self.xb[self._pos_of_row[xp.asarray(np.asarray(rows, dtype=np.int64))]])

    def to_host(self, faiss: Any) -> Any:
        fm = faiss.METRIC_L2 if self.metric == _L2 else faiss.METRIC_INNER_PRODUCT
        quantizer = faiss.IndexFlat(self.d, faiss.METRIC_L2 if self.coarse_metric == _L2 else
                                    faiss.METRIC_INNER_PRODUCT)
        quantizer.add(self.kernels.asnumpy(self.centroids))
        index = faiss.IndexIVFFlat(quantizer, self.d, self.nlist, fm)
        index.is_trained = True
        xb = self.kernels.asnumpy(self.xb)
        row_of = self.kernels.asnumpy(self.row_of)
        starts = self.kernels.asnumpy(self.list_start)
        for lst in range(self.nlist):
            s, e = int(starts[lst]), int(starts[lst + 1])
            if e > s:
                ids = np.ascontiguousarray(row_of[s:e])
                codes = np.ascontiguousarray(xb[s:e]).view(np.uint8)
                index.invlists.add_entries(lst, e - s, faiss.swig_ptr(ids), faiss.swig_ptr(codes))
        index.ntotal = self.ntotal
        index.nprobe = self.nprobe
        return index


def _metric_name(faiss: Any, metric_type: int) -> str:
    if metric_type == faiss.METRIC_L2:
        return _L2
    if metric_type == faiss.METRIC_INNER_PRODUCT:
        return _IP
    raise ValueError(f"faiss metric {metric_type} has no cupy engine")


def _flat_vectors(faiss: Any, flat: Any) -> np.ndarray:
    n, d = int(flat.ntotal), int(flat.d)
    if n == 0:
        return np.zeros((0, d), dtype=np.float32)
    return faiss.rev_swig_ptr(faiss.downcast_index(flat).get_xb(), n * d).reshape(n, d)


def _ivf_flat_parts(faiss: Any, index: Any) -> tuple[Any, ...]:
    ivf = faiss.extract_index_ivf(index)
    if type(faiss.downcast_index(index)).__name__ != "IndexIVFFlat":
        raise ValueError(f"{type(index).__name__} has no cupy engine (IVF_FLAT only)")
    d, nlist = int(ivf.d), int(ivf.nlist)
    centroids = ivf.quantizer.reconstruct_n(0, nlist)
    invlists = ivf.invlists
    sizes = np.array([invlists.list_size(i) for i in range(nlist)], dtype=np.int64)
    list_start = np.zeros(nlist + 1, dtype=np.int64)
    np.cumsum(sizes, out=list_start[1:])
    n = int(list_start[-1])
    xb = np.empty((n, d), dtype=np.float32)
    row_of = np.empty(n, dtype=np.int64)
    for lst in np.flatnonzero(sizes):
        s, e = int(list_start[lst]), int(list_start[lst + 1])
        size = e - s
        codes = faiss.rev_swig_ptr(invlists.get_codes(int(lst)), size * d * 4)
        xb[s:e] = np.frombuffer(codes, dtype=np.float32).reshape(size, d)
        row_of[s:e] = faiss.rev_swig_ptr(invlists.get_ids(int(lst)), size)
    return centroids, ivf.quantizer.metric_type, xb, list_start, row_of, ivf.metric_type, int(ivf.nprobe)


def from_faiss(faiss: Any, index: Any, kernels: NumpyKernels | CudaKernels) -> EngineIndex:
    """The engine's form of a host faiss FLAT or IVF_FLAT index (its arrays copied to the device)."""
    concrete = faiss.downcast_index(index)  # a second wrapper: ``index`` keeps owning the C++ object
    name = type(concrete).__name__
    if name in ("IndexFlat", "IndexFlatL2", "IndexFlatIP"):
        return FlatIndex(kernels, _flat_vectors(faiss, concrete), _metric_name(faiss, concrete.metric_type))
    if "IVF" in name:
        centroids, qm, xb, starts, row_of, metric, nprobe = _ivf_flat_parts(faiss, index)
        return IVFFlatIndex(kernels, centroids, _metric_name(faiss, qm), xb, starts, row_of,
                            _metric_name(faiss, metric), nprobe)
    raise ValueError(f"{name} has no cupy engine (FLAT and IVF_FLAT only)")


def _flat_bytes(n: int, d: int, metric: str) -> int:
    return n * d * 4 + (n * 4 if metric == _L2 else 0)  # vectors, and their norms for L2


def _ivf_bytes(n: int, d: int, nlist: int, coarse_metric: str) -> int:
    # vectors and their rows, centroids (and their norms for L2), where each list starts
    return n * (d * 4 + 8) + nlist * d * 4 + (nlist * 4 if coarse_metric == _L2 else 0) + (nlist + 1) * 8


def device_bytes(faiss: Any, index: Any) -> int:
    """What :func:`from_faiss` will hold on the device for ``index`` (for the memory budget)."""
    n, d = int(index.ntotal), int(index.d)
    if "IVF" in type(faiss.downcast_index(index)).__name__:
        ivf = faiss.extract_index_ivf(index)
        return _ivf_bytes(n, d, int(ivf.nlist), _metric_name(faiss, ivf.quantizer.metric_type))
    return _flat_bytes(n, d, _metric_name(faiss, index.metric_type))
