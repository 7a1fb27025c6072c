"""Search engine: device discovery and faiss indexes on GPU or CPU.

faiss comes from one of two extras that provide the same module: ``vecgrid[cpu]``
(faiss-cpu) or ``vecgrid[gpu]`` (faiss-gpu, cupy).  Nothing here imports faiss at
package import time, so the coordinator and the tooling run without it.

Modules (one job each, as faiss ``contrib``):

* ``blas``      — OpenBLAS kernels for this CPU and faiss's BLAS threshold (set before faiss loads);
* ``device``    — GPU discovery, one ``StandardGpuResources`` and one owner thread per
  GPU per process, memory budgets and per-segment accounting, free-memory counters;
* ``build``     — Milvus index names/params → faiss; build, serialise, read index files;
* ``search``    — ``load_segment`` / ``LoadedSegment`` (GPU or host placement, the
  filtered-search rule), ``search_segments``, ``search_request``;
* ``filter``    — ``plan.Expr`` → row bitset (numpy, or cupy on a GPU);
* ``rows``      — primary keys, timestamps, scalar columns and deletes of a segment;
* ``growing``   — brute-force search over unsealed rows (``GrowingSegment``);
* ``merge``     — ``TopK`` and the one top-k merge (segments, shards, proxy);
* ``results``   — ``SearchResultData`` / ``FieldData`` encoding, placeholder decoding;
* ``plan``      — decoding a serialized search/query ``PlanNode``;
* ``exprs``     — builders of ``plan.Expr`` trees and plans (tests, benchmarks);
* ``evaluation``, ``datasets`` — recall helpers and seeded synthetic data.

GPU indexes must only be touched through ``Device.run`` (their device's owner thread).
"""

from __future__ import annotations

import importlib
from types import ModuleType

_INSTALL_HINT = (
    "faiss is not installed: install vecgrid with the 'cpu' extra (pip install 'vecgrid[cpu]') "
    "or, on a CUDA machine, the 'gpu' extra (pip install 'vecgrid[gpu]') — never both"
)


class FaissMissing(ImportError):
    """faiss is needed but neither faiss-cpu nor faiss-gpu is installed."""


_faiss: ModuleType | None = None   # set by the first require_faiss (two first callers do the same, harmlessly)


def require_faiss() -> ModuleType:
    """Import faiss or raise :class:`FaissMissing` naming the extra to install.  The first import
    names OpenBLAS's kernels for this CPU first (see :mod:`vecgrid.gpu.blas`)."""
    global _faiss
    if _faiss is not None:
        return _faiss
    from vecgrid.gpu import blas

    kernels_known = blas.before_import()
    try:
        faiss = importlib.import_module("faiss")
    except ImportError as e:
        raise FaissMissing(_INSTALL_HINT) from e
    blas.after_import(faiss, kernels_known)
    _faiss = faiss
    return faiss


def faiss_available() -> bool:
    try:
        require_faiss()
    except FaissMissing:
        return False
    return True
