"""The BLAS under faiss: kernels for this CPU, and the batch size from which faiss hands distances to it.

faiss-cpu's wheels bring their own OpenBLAS (0.3.15 in faiss-cpu 1.15), which picks its kernels by the
CPU's model when it loads. A model newer than that release gets the generic SSE3 ("Prescott") kernels:
on a Sapphire Rapids host its sgemm ran 3.5x slower than numpy's (0.81 against 0.23 ms for 100 x 1,000
distances at d = 128) and an IVF's k-means training 3.8x slower (4.6 against 1.2 s for 50,000 rows,
nlist 1,024, one thread). OpenBLAS reads ``OPENBLAS_CORETYPE`` when it loads, so :func:`before_import`
names the kernels from the CPU's own feature flags, before faiss (and its OpenBLAS) is imported, unless
the user already named them. Only a core type that any CPU with those features runs is named: AVX-512
(F, CD, BW, DQ, VL) → ``SKYLAKEX``, AVX2 with FMA → ``HASWELL``; anything else is left to OpenBLAS.

faiss computes a batch of exact distances (a flat index, an IVF's coarse assignment, a growing
segment's brute force) with its own SIMD loop below ``distance_compute_blas_threshold`` query floats
(nq x d; 128,000 by default, set for the slow kernels) and with BLAS above. With the right kernels BLAS
wins from about 8 queries whatever d (1.20 against 0.43 ms at nq = 100 over 1,000 rows, d = 128), so
:func:`after_import` lowers it to :data:`BLAS_FROM_QUERY_FLOATS` when the kernels are known.

Both run once per process, from :func:`vecgrid.gpu.require_faiss`.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Iterable, MutableMapping

CORE_TYPE_VARIABLE = "OPENBLAS_CORETYPE"
_AVX512 = frozenset({"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"})

#: Query floats (nq x d) from which faiss computes exact distances with BLAS once the kernels are known:
#: 32 queries at d = 128, 6 at d = 768 (measured crossover: about 8 queries at either).
BLAS_FROM_QUERY_FLOATS = 4096


def core_type(flags: Iterable[str]) -> str | None:
    """The OpenBLAS core type for a CPU with these feature flags (``/proc/cpuinfo``), or None."""
    have = set(flags)
    if _AVX512 <= have:
        return "SKYLAKEX"
    if {"avx2", "fma"} <= have:
        return "HASWELL"
    return None


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> list[str]:
    """The first processor's feature flags; empty where there is no ``/proc/cpuinfo`` (not Linux)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return line.partition(":")[2].split()
    except OSError:
        pass
    return []


def before_import(environ: MutableMapping[str, str] = os.environ, flags: Iterable[str] | None = None) -> bool:
    """Name OpenBLAS's kernels for this CPU unless the user did, while faiss is not loaded yet (later it
    would not read the setting); child processes inherit it. True when kernels are named now or were
    already (the user's choice, or this process's earlier call)."""
    if environ.get(CORE_TYPE_VARIABLE):
        return True
    if "faiss" in sys.modules:
        return False
    chosen = core_type(cpu_flags() if flags is None else flags)
    if chosen is None:
        return False
    environ[CORE_TYPE_VARIABLE] = chosen
    return True


def after_import(faiss: ModuleType, kernels_known: bool) -> None:
    """With known kernels, BLAS from :data:`BLAS_FROM_QUERY_FLOATS` query floats (never raised above faiss's
    own threshold)."""
    if kernels_known and faiss.cvar.distance_compute_blas_threshold > BLAS_FROM_QUERY_FLOATS:
        faiss.cvar.distance_compute_blas_threshold = BLAS_FROM_QUERY_FLOATS
