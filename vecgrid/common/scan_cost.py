"""How much of a segment one query compares, by index family: what the coordinator's placement and a
node's choice of thread (loop or pool) estimate a search's cost with.  No engine import: the
coordinator reads index definitions, never indexes."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

#: share of a segment's rows a graph walk (HNSW, CAGRA) compares: a few thousand rows whatever the
#: segment's size, so next to nothing of a large one
GRAPH_SCAN_FRACTION = 0.01


def default_nprobe(nlist: int) -> int:
    """The lists an IVF search probes when the request names no ``nprobe`` (the engine's default)."""
    return min(nlist, max(16, nlist // 8))


def index_family(index_type: str) -> str:
    """``flat``, ``ivf`` or ``graph`` of a Milvus index type (AUTOINDEX builds HNSW)."""
    t = (index_type or "FLAT").upper()
    if "IVF" in t:
        return "ivf"
    if t in ("HNSW", "GPU_CAGRA", "AUTOINDEX"):
        return "graph"
    return "flat"


def scan_fraction(index_params: Mapping[str, Any] | Iterable[Any]) -> float:
    """The share of a segment's rows one query of an index definition compares, at the default search
    params: all for FLAT, ``nprobe / nlist`` for IVF, :data:`GRAPH_SCAN_FRACTION` for graphs.  Takes a
    mapping or Milvus ``KeyValuePair``\\ s (``index_type``, ``params`` JSON or flat ``nlist``)."""
    kv = dict(index_params.items()) if isinstance(index_params, Mapping) else {p.key: p.value for p in index_params}
    family = index_family(str(kv.get("index_type", "FLAT")))
    if family == "graph":
        return GRAPH_SCAN_FRACTION
    if family == "flat":
        return 1.0
    params = kv.get("params")
    if isinstance(params, str):
        try:
            params = json.loads(params) if params.strip() else {}
        except ValueError:
            params = {}
    if not isinstance(params, Mapping):
        params = {}
    nlist = params.get("nlist", kv.get("nlist", 128))
    try:
        nlist = max(1, int(nlist))
    except (TypeError, ValueError):
        nlist = 128
    return default_nprobe(nlist) / nlist
