"""How many rows one query compares in a segment, by index family: what the coordinator's placement
and a node's choice of thread (loop or pool) estimate a search's cost with.  No engine import: the
coordinator reads index definitions, never indexes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping


def default_nprobe(nlist: int) -> int:
    """The lists an IVF search probes when the request names no ``nprobe`` (the engine's default)."""
    return min(nlist, max(16, nlist // 8))


def scanned_rows(family: str, rows: int, *, nlist: int = 0, nprobe: int = 0, topk: int = 10, ef: int = 0) -> int:
    """Rows one query compares in a segment of ``rows``: all of them for a flat scan, the centroids and
    the probed lists for IVF (``nprobe`` 0: the default), a graph walk's few thousand for any other
    family (HNSW, CAGRA)."""
    if family == "flat":
        return rows
    if family == "ivf":
        nlist = max(1, nlist)
        return nlist + rows * min(nlist, nprobe or default_nprobe(nlist)) // nlist
    return min(rows, 64 * max(topk, ef, 64))


@dataclass(frozen=True)
class IndexShape:
    """What :func:`scanned_rows` needs of an index definition."""

    family: str = "flat"   # flat, ivf or graph
    nlist: int = 0

    def scanned_rows(self, rows: int) -> int:
        """Rows one query compares in a segment of ``rows`` at the default search params."""
        return scanned_rows(self.family, rows, nlist=self.nlist)


def index_shape(index_params: Mapping[str, Any] | Iterable[Any]) -> IndexShape:
    """The shape of an index definition: a mapping or Milvus ``KeyValuePair``\\ s (``index_type``, and
    ``nlist`` flat or in the ``params`` JSON).  AUTOINDEX builds HNSW."""
    kv = dict(index_params.items()) if isinstance(index_params, Mapping) else {p.key: p.value for p in index_params}
    index_type = str(kv.get("index_type", "FLAT")).upper()
    if index_type in ("HNSW", "GPU_CAGRA", "AUTOINDEX"):
        return IndexShape("graph")
    if "IVF" not in index_type:
        return IndexShape("flat")
    params = kv.get("params")
    if isinstance(params, str):
        try:
            params = json.loads(params) if params.strip() else {}
        except ValueError:
            params = {}
    if not isinstance(params, Mapping):
        params = {}
    try:
        nlist = max(1, int(params.get("nlist", kv.get("nlist", 128))))
    except (TypeError, ValueError):
        nlist = 128
    return IndexShape("ivf", nlist)
