"""Fusing the hits of several searches into one ranking (Milvus's HybridSearch rankers).

Each search of a hybrid request (one per vector field, say) gives per query a list of hits, best
first; :func:`fuse` scores every primary key found by any of them and keeps the best ``limit`` after
``offset``, best first:

* ``rrf`` (reciprocal rank fusion): ``Σ 1 / (k + rank)``, rank counted from 1 in each list, ``k`` 60
  unless given; a list that does not hold a key adds nothing;
* ``weighted``: ``Σ weight_i × norm_i(distance)`` with one weight per search, in ``[0, 1]``, each
  distance first mapped to ``[0, 1]`` with larger meaning closer, as Milvus 2.4 does: COSINE
  ``(1 + d) / 2``, IP ``1/2 + atan(d) / π``, L2 ``1 - 2·atan(d) / π``.

A fused hit keeps the fields (``entity``) of the first list that held it.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

from vecgrid import errors

RRF_K_DEFAULT = 60.0
Hits = Sequence[Mapping[str, Any]]


def _normalizer(metric: str) -> Callable[[float], float]:
    metric = metric.upper()
    if metric == "COSINE":
        return lambda d: (1.0 + d) * 0.5
    if metric == "IP":
        return lambda d: 0.5 + math.atan(d) / math.pi
    return lambda d: 1.0 - 2.0 * math.atan(d) / math.pi


def ranker(strategy: str, params: Mapping[str, Any], searches: int) -> Callable[[int, int, float, str], float]:
    """The score one hit adds: ``(search index, rank from 1, distance, metric)``, checked against Milvus's rules."""
    strategy = (strategy or "").lower()
    if strategy == "rrf":
        k = params.get("k", RRF_K_DEFAULT)
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not 0 < k < 16384:
            raise errors.ParameterInvalid(f"The rank params k should be in range (0, 16384), got {k!r}")
        return lambda i, rank, distance, metric: 1.0 / (k + rank)
    if strategy == "weighted":
        weights = params.get("weights")
        if not isinstance(weights, list) or len(weights) != searches:
            raise errors.ParameterInvalid(f"the length of weights param mismatch with ann search requests: "
                                          f"want {searches}, got {weights!r}")
        for w in weights:
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w <= 1:
                raise errors.ParameterInvalid(f"rank param weight should be in range [0, 1], got {w!r}")
        return lambda i, rank, distance, metric: weights[i] * _normalizer(metric)(distance)
    raise errors.ParameterInvalid(f"unsupported rank type {strategy!r}: use rrf or weighted")


def fuse(per_search: Sequence[Sequence[Hits]], metrics: Sequence[str], score: Callable[[int, int, float, str], float],
         limit: int, offset: int = 0) -> list[list[dict[str, Any]]]:
    """Per query, the fused hits ``{"id", "distance": fused score, "entity"}`` of ``per_search`` (one entry
    per search: its hits per query), best first; ties by primary key, for a stable order."""
    queries = {len(s) for s in per_search}
    if len(queries) != 1:
        raise errors.ParameterInvalid(f"the searches of a hybrid search have different nq: {sorted(queries)}")
    out = []
    for q in range(queries.pop()):
        scores: dict[Any, float] = {}
        entity: dict[Any, Any] = {}
        for i, searched in enumerate(per_search):
            for rank, hit in enumerate(searched[q], start=1):
                key = hit["id"]
                scores[key] = scores.get(key, 0.0) + score(i, rank, hit["distance"], metrics[i])
                entity.setdefault(key, hit.get("entity", {}))
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], str(kv[0])))[offset:offset + limit]
        out.append([{"id": key, "distance": value, "entity": entity[key]} for key, value in ranked])
    return out
