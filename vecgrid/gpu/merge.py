"""Top-k results and the one top-k merge used for segments, shards and the proxy.

A :class:`TopK` holds the hits of ``nq`` queries in Milvus's ``SearchResultData``
layout: query ``i``'s hits are ``ids[o_i:o_i + topks[i]]`` (``o`` the running sum
of ``topks``), best first, with their ``scores``.  Alongside, optionally, the row
offset of each hit in its segment (``rows``), which partial result it came from
(``sources``) and its output-field values (``fields``).

:func:`merge_topk` merges any number of partial results of the same ``nq`` — the
segments of one node, the nodes of one shard, the shards of a collection — with a
single stable ``lexsort`` when it has to (:func:`_sorted_order`); the usual shapes take cheaper
routes to the same order: one query with few hits sorts Python tuples (:func:`_one_query_order`),
parts holding the same number of hits for every query with no tied scores and no repeated key
are sorted row by row (:func:`_dense_order`), and a single part already in order is kept as is.
:func:`merge_full` is the same merge for parts still in faiss's arrays, each with ``k`` hits for every
query (a node's sealed segments of one quantizer), without making a :class:`TopK` per part first.
Semantics:

* order: ``L2`` ascending, ``IP``/``COSINE`` descending; ties broken by primary key
  ascending (numeric for Int64 keys, lexicographic for VarChar);
* a primary key seen twice for the same query (the same row in two segments during
  a hand-off, or a replica answering twice) is kept once, at its best score;
* ``round_decimal`` (Milvus: ``-1`` = off, else 0–6 digits) rounds each score half
  away from zero, as Milvus's C++ ``std::round(x * 10^d) / 10^d``, before ordering,
  so rounded ties fall back to the primary key.

numpy does the work; cupy is not worth a launch for the few thousand candidates a
merge sees, so results are merged on the host.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from vecgrid import errors
from vecgrid.gpu.columns import FieldColumn, concat_columns

__all__ = ["TopK", "merge_topk", "merge_full", "larger_is_better", "round_scores", "MAX_TOPK", "constant"]

MAX_TOPK = 16384  # Milvus's quota limit for topk (and nq)
SMALL_MERGE = 256  # hits of one query up to which merging sorts Python tuples (see _one_query_order)


# Read-only arrays of one value, by (length, value, dtype); see constant().  Any thread adds to it
# (a dict assignment is atomic; two threads racing store equal arrays), entries never change.
_CONSTANTS: dict[tuple[int, int, str], np.ndarray] = {}
_CONSTANT_MAX_LEN = 4096


def constant(n: int, value: int, dtype: Any) -> np.ndarray:
    """``np.full(n, value, dtype)``, read-only and shared between calls: a latency-bound search makes
    the same ``topks`` and ``sources`` arrays every time, and a fresh small array costs microseconds
    right after a faiss search has pushed numpy's code out of the CPU caches.  A TopK's arrays are
    only read (a write raises here instead of changing another result)."""
    key = (n, value, dtype)
    a = _CONSTANTS.get(key)
    if a is None:
        a = np.full(n, value, dtype=dtype)
        if n > _CONSTANT_MAX_LEN:
            return a
        a.flags.writeable = False
        if len(_CONSTANTS) > 1024:
            _CONSTANTS.clear()
        _CONSTANTS[key] = a
    return a


def larger_is_better(metric: str) -> bool:
    """IP and COSINE rank descending, L2 ascending."""
    return (metric or "L2").upper() != "L2"


def round_scores(scores: np.ndarray, round_decimal: int) -> np.ndarray:
    """Round half away from zero to ``round_decimal`` digits (-1: unchanged)."""
    if round_decimal is None or round_decimal < 0:
        return scores
    if round_decimal > 6:
        raise errors.ParameterInvalid(f"round_decimal {round_decimal} should be in range [-1, 6]")
    m = 10.0 ** round_decimal
    x = scores.astype(np.float64) * m
    return (np.sign(x) * np.floor(np.abs(x) + 0.5) / m).astype(np.float32)


@dataclass
class TopK:
    """Hits of ``len(topks)`` queries, concatenated query after query."""

    ids: np.ndarray
    scores: np.ndarray
    topks: np.ndarray
    k: int
    rows: np.ndarray | None = None
    sources: np.ndarray | None = None
    fields: list[FieldColumn] | None = field(default=None)  # rows aligned with ids
    # known to be in merge order (each query within k, no tied scores, no key twice in a query) and
    # ``sources`` set: merging it alone would change nothing (see LoadedSegment._plain_search)
    in_order: bool = False
    # (scores, ids) of a one-query result as Python lists, when its producer made them anyway (the
    # merge-order check): the protobuf encoder takes lists.  Set with the arrays, never after.
    hit_lists: tuple[list, list] | None = field(default=None, repr=False, compare=False)

    @property
    def nq(self) -> int:
        return len(self.topks)

    @property
    def offsets(self) -> np.ndarray:
        out = np.zeros(len(self.topks) + 1, dtype=np.int64)
        np.cumsum(self.topks, out=out[1:])
        return out

    def __len__(self) -> int:
        return len(self.ids)

    def query(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, scores) of query ``i``."""
        o = self.offsets
        return self.ids[o[i]:o[i + 1]], self.scores[o[i]:o[i + 1]]

    def dense(self, fill_id: Any = -1) -> tuple[np.ndarray, np.ndarray]:
        """(D, I) as ``nq × k`` arrays padded like faiss (id ``fill_id``, score ±inf/nan)."""
        nq, k = self.nq, self.k
        ids = np.full((nq, k), fill_id, dtype=self.ids.dtype if self.ids.dtype.kind != "U" else object)
        scores = np.full((nq, k), np.nan, dtype=np.float32)
        o = self.offsets
        for i in range(nq):
            n = o[i + 1] - o[i]
            ids[i, :n] = self.ids[o[i]:o[i + 1]]
            scores[i, :n] = self.scores[o[i]:o[i + 1]]
        return scores, ids

    @classmethod
    def empty(cls, nq: int, k: int, pk_dtype: Any = np.int64) -> "TopK":
        return cls(np.zeros(0, dtype=pk_dtype), np.zeros(0, dtype=np.float32),
                   np.zeros(nq, dtype=np.int64), k, rows=np.zeros(0, dtype=np.int64))

    @classmethod
    def from_dense(cls, D: np.ndarray, labels: np.ndarray, k: int, pks: np.ndarray | None = None, *,
                   full: bool = False) -> "TopK":
        """From faiss's ``(D, I)`` (``I == -1`` = no hit); ``pks`` maps row offsets to keys.
        ``full``: the caller knows every label is a hit (no check)."""
        nq = labels.shape[0]
        if full or labels.size == 0 or labels.min() >= 0:  # every query full: no padding to drop
            topks = constant(nq, labels.shape[1] if labels.ndim == 2 else 0, np.int64)
            rows = labels.reshape(-1)
            scores = D.reshape(-1)
        else:
            valid = labels >= 0
            topks = valid.sum(axis=1).astype(np.int64)
            rows = labels[valid]
            scores = D[valid]
        rows = rows.astype(np.int64, copy=False)
        ids = pks[rows] if pks is not None else rows
        return cls(ids, np.ascontiguousarray(scores, dtype=np.float32), topks, k, rows=rows)

    def take(self, order: np.ndarray, topks: np.ndarray, k: int) -> "TopK":
        return TopK(self.ids[order], self.scores[order], topks, k,
                    rows=None if self.rows is None else self.rows[order],
                    sources=None if self.sources is None else self.sources[order],
                    fields=None if self.fields is None else [f.take(order) for f in self.fields])


def _concat_ids(parts: Sequence[TopK]) -> np.ndarray:
    arrays = [p.ids for p in parts]
    kinds = {a.dtype.kind for a in arrays if len(a)}
    if len(kinds) > 1 and not kinds <= {"i", "u"}:
        raise errors.ParameterInvalid("cannot merge results with Int64 and VarChar primary keys")
    if kinds & {"U", "O", "S"}:
        return np.concatenate([a.astype(str) for a in arrays])
    return np.concatenate([a.astype(np.int64, copy=False) for a in arrays])


def _already_merged(p: TopK, k: int, dedup: bool) -> TopK | None:
    """The common single-part case, when it needs no work: every query within ``k``, no tied
    scores within a query (so the pk tie-break cannot reorder) and no key twice in a query.
    ``None`` when the full merge is needed."""
    n = len(p.ids)
    topks = p.topks
    nq = len(topks)
    if p.ids.dtype.kind not in "iuUS":
        return None
    if 1 < n <= 64 and nq == 1:  # one small query: plain Python beats a dozen numpy calls
        # the part is in order, so a tie is two equal scores anywhere (NaN never equals NaN)
        if n > k or len(set(p.scores.tolist())) != n or (dedup and len(set(p.ids.tolist())) != n):
            return None
    elif n > 1:
        if int(topks.max()) > k:
            return None
        s = p.scores
        w = int(topks[0])
        if n == nq * w and bool((topks == w).all()):  # dense: nq x w
            if w > 1:
                S = s.reshape(nq, w)
                if bool((S[:, 1:] == S[:, :-1]).any()):
                    return None
                if dedup:
                    srt = np.sort(p.ids.reshape(nq, w), axis=1)
                    if bool((srt[:, 1:] == srt[:, :-1]).any()):
                        return None
        else:
            q = np.repeat(np.arange(nq), topks)
            same = q[1:] == q[:-1]
            if bool(((s[1:] == s[:-1]) & same).any()):
                return None
            if dedup:
                o = np.lexsort((p.ids, q))
                ids_o, q_o = p.ids[o], q[o]
                if bool(((ids_o[1:] == ids_o[:-1]) & (q_o[1:] == q_o[:-1])).any()):
                    return None
    return TopK(p.ids, p.scores, topks, k, rows=p.rows, sources=constant(n, 0, np.int32),
                fields=p.fields)


def merge_topk(parts: Sequence[TopK], k: int, metric: str = "L2", round_decimal: int = -1, *,
               dedup: bool = True) -> TopK:
    """Merge partial results of the same queries into the best ``k`` per query.

    The result's ``sources[j]`` is the index in ``parts`` of hit ``j`` and ``rows[j]``
    its row there (when the parts carry rows); fields are carried when every part
    has them.  Small merges are latency-critical (nq=1 searches), hence the fast paths."""
    if not parts:
        raise errors.ParameterInvalid("nothing to merge")
    if k <= 0:
        raise errors.ParameterInvalid(f"topk ({k}) should be in range [1, {MAX_TOPK}]")
    nq = parts[0].nq
    for p in parts:
        if p.nq != nq:
            raise errors.ParameterInvalid(f"cannot merge results of {p.nq} and {nq} queries")
    if len(parts) == 1 and (round_decimal is None or round_decimal < 0):
        fast = _already_merged(parts[0], k, dedup)
        if fast is not None:
            return fast
    elif nq == 1 and (round_decimal is None or round_decimal < 0):
        fast = _merge_one_query(parts, k, larger_is_better(metric), dedup)
        if fast is not None:
            return fast
    ids = _concat_ids(parts)
    total = len(ids)
    if total == 0:
        out = TopK.empty(nq, k, ids.dtype)
        out.sources = np.zeros(0, dtype=np.int32)
        return out
    scores = round_scores(np.concatenate([p.scores for p in parts]).astype(np.float32, copy=False),
                          round_decimal)
    sources = np.concatenate([np.full(len(p), i, dtype=np.int32) for i, p in enumerate(parts)])
    have_rows = all(p.rows is not None for p in parts)
    rows = np.concatenate([p.rows for p in parts]) if have_rows else None
    have_fields = all(p.fields is not None for p in parts) and len(parts) > 0
    fields = None
    if have_fields:
        fields = concat_columns([p.fields for p in parts])

    larger = larger_is_better(metric)
    fast = _one_query_order(ids, scores, k, larger, dedup) if nq == 1 and total <= SMALL_MERGE else \
        _dense_order(parts, ids, scores, k, larger, dedup)
    order, topks = fast if fast is not None else _sorted_order(parts, ids, scores, k, larger, dedup)
    return TopK(ids[order], scores[order], topks, k,
                rows=None if rows is None else rows[order], sources=sources[order],
                fields=None if fields is None else [f.take(order) for f in fields])


def merge_full(D: np.ndarray, rows: np.ndarray, keys: Sequence[np.ndarray], k: int, metric: str) -> TopK | None:
    """:func:`merge_topk` of ``S`` parts that each found ``k`` hits for every query, given as faiss gives
    them: ``D`` and ``rows`` of shape ``(S, nq, k)``, and ``keys[s]`` part ``s``'s integer primary key
    of each row.  One sort per query over all the parts' hits, without making a :class:`TopK` per part
    first; a stable sort by score and key only where scores tie within a query's best ``k + 1`` (it
    costs eight times as much).  ``None`` (use :func:`merge_topk`) on a part short of hits, a NaN or
    infinite score, or a key found twice among a query's chosen hits."""
    count, nq, width = D.shape
    if width != k or not all(key.dtype.kind in "iu" for key in keys) or bool((rows < 0).any()):
        return None   # a part short of hits for some query (faiss's -1 rows)
    scores = D.transpose(1, 0, 2).reshape(nq, count * k)   # query by query: part 0's hits, part 1's, ...
    if not np.isfinite(scores).all():
        return None
    ids = np.empty((count, nq, k), dtype=np.int64)
    for s in range(count):
        np.take(keys[s], rows[s], out=ids[s])
    ids = ids.transpose(1, 0, 2).reshape(nq, count * k)
    rank_key = -scores if larger_is_better(metric) else scores
    order = np.argsort(rank_key, axis=1)
    ranked = np.take_along_axis(rank_key, order[:, :k + 1], axis=1)
    if bool((ranked[:, 1:] == ranked[:, :-1]).any()):
        # a tie where it decides: merge_topk's order, score then key (then part and position: stable)
        order = np.lexsort((ids, rank_key), axis=-1)
    order = order[:, :k]
    chosen = np.take_along_axis(ids, order, axis=1)
    if k > 1:
        in_key_order = np.sort(chosen, axis=1)
        if bool((in_key_order[:, 1:] == in_key_order[:, :-1]).any()):
            return None   # a key twice: merge_topk keeps it once and takes the next hit
    flat = (order + np.arange(nq, dtype=np.int64)[:, None] * (count * k)).reshape(-1)
    sources = (order // k).astype(np.int32).reshape(-1)
    part_rows = rows.transpose(1, 0, 2).reshape(-1)[flat].astype(np.int64, copy=False)
    return TopK(chosen.reshape(-1), np.ascontiguousarray(scores.reshape(-1)[flat]), constant(nq, k, np.int64), k,
                rows=part_rows, sources=sources)


def _merge_one_query(parts: Sequence[TopK], k: int, larger: bool, dedup: bool) -> TopK | None:
    """:func:`merge_topk` of one query's few integer-keyed hits without fields (a leader's sealed and
    growing parts at nq=1) on Python lists: no array is concatenated or indexed until the merged
    ``k``.  ``None`` (the general path) for anything else, or a NaN score."""
    total = 0
    for p in parts:
        if p.fields is not None or p.ids.dtype.kind not in "iu" or (p.rows is None and len(p.ids)):
            return None
        total += len(p.ids)
    if total > SMALL_MERGE:
        return None
    lists = []
    for p in parts:
        scores, keys = p.hit_lists if p.hit_lists is not None else (p.scores.tolist(), p.ids.tolist())
        lists.append((scores, keys, p.rows.tolist() if len(keys) else []))
    return merge_hit_lists(lists, k, larger, dedup)


def merge_hit_lists(parts: Sequence[tuple[list, list, list]], k: int, larger: bool, dedup: bool = True) -> TopK | None:
    """The merged best ``k`` of one query's hits given as Python lists per part, ``(scores, integer keys,
    rows)``, in :func:`merge_topk`'s order: score, then key (Milvus's order), then part and position;
    a key found twice kept once (``dedup``); ``sources`` are the parts' positions.  ``None`` on a NaN
    score, which Python's sort does not order as numpy does.  The latency-bound merge: no array is made
    until the merged ``k``, and the tuples are built and taken apart by ``zip`` (each Python step
    costs microseconds right after a search)."""
    hits: list = []   # (score, negated when larger is better; key; part; position in it; row)
    keys_seen: set = set()
    for i, (scores, keys, rows) in enumerate(parts):
        if any(map(math.isnan, scores)):
            return None
        hits += zip([-s for s in scores] if larger else scores, keys, itertools.repeat(i), itertools.count(), rows)
        keys_seen.update(keys)
    hits.sort()
    if dedup and len(keys_seen) < len(hits):
        seen: set = set()
        hits = [h for h in hits if not (h[1] in seen or seen.add(h[1]))]
    if not hits:
        return TopK(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), np.zeros(1, dtype=np.int64), k,
                    rows=np.zeros(0, dtype=np.int64), sources=np.zeros(0, dtype=np.int32), hit_lists=([], []))
    scores, keys, sources, _, rows = zip(*hits[:k])
    score_list = [-s for s in scores] if larger else list(scores)
    key_list = list(keys)
    return TopK(np.array(key_list, dtype=np.int64), np.array(score_list, dtype=np.float32),
                np.array([len(key_list)], dtype=np.int64), k, rows=np.array(rows, dtype=np.int64),
                sources=np.array(sources, dtype=np.int32), hit_lists=(score_list, key_list))


def _one_query_order(ids: np.ndarray, scores: np.ndarray, k: int, larger: bool,
                     dedup: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """The merge order of one query with few hits (a latency-bound nq=1 search): sorting Python
    tuples beats a dozen numpy calls.  ``None`` (use :func:`_sorted_order`) when a score is NaN,
    which Python's sort does not order as numpy does."""
    sl = scores.tolist()
    if any(x != x for x in sl):
        return None
    keys = ids.tolist()
    sign = -1.0 if larger else 1.0
    ranked = sorted(range(len(sl)), key=lambda j: (sign * sl[j], keys[j]))
    if dedup:
        seen: set = set()
        ranked = [j for j in ranked if not (keys[j] in seen or seen.add(keys[j]))]
    order = np.asarray(ranked[:k], dtype=np.int64)
    return order, np.asarray([len(order)], dtype=np.int64)


def _dense_order(parts: Sequence[TopK], ids: np.ndarray, scores: np.ndarray, k: int, larger: bool,
                 dedup: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """The merge order of the usual case without a global sort: each query's candidates form one row
    of an ``nq x W`` matrix (a part short of hits for a query fills its row with a blank that sorts
    last), sorted row-wise.  ``None`` (use :func:`_sorted_order`) when a query has tied scores (the
    primary key decides) or a key twice (kept once), or blanks meet a score that is not finite."""
    nq = parts[0].nq
    blank = len(ids)   # the index of the blank candidate, appended to the scores below
    blocks, offset, ragged = [], 0, False
    for p in parts:
        topks = p.topks
        w = int(topks.max()) if len(topks) else 0
        if w and w * nq == len(p.ids):   # as many hits for every query (the sum says so: none has more)
            blocks.append(np.arange(offset, offset + nq * w, dtype=np.int64).reshape(nq, w))
        elif w:
            starts = np.cumsum(topks) - topks
            column = np.arange(w, dtype=np.int64)
            block = offset + starts[:, None] + column
            block[column >= topks[:, None]] = blank
            blocks.append(block)
            ragged = True
        offset += len(p.ids)
    if not blocks:
        return None
    flat = np.hstack(blocks) if len(blocks) > 1 else blocks[0]   # [query, candidate] -> index in ids
    width = flat.shape[1]
    key = -scores if larger else scores
    if ragged:
        if not np.isfinite(key).all():
            return None
        key = np.append(key, np.float32(np.inf))
    key = key[flat]
    pos = np.argsort(key, axis=1, kind="stable")
    key = np.take_along_axis(key, pos, axis=1)
    if bool((key[:, 1:] == key[:, :-1]).any()) and \
            (not ragged or bool(((key[:, 1:] == key[:, :-1]) & (key[:, 1:] != np.inf)).any())):
        return None
    if dedup and width > 1:
        if ragged:   # blanks take a key no hit has (one less than the least), so they never match a hit
            filler = ids.min() - 1 if ids.dtype.kind in "iu" and ids.min() > np.iinfo(ids.dtype).min else None
            if filler is None:
                return None
            keys = np.sort(np.append(ids, filler)[flat], axis=1)
            same = (keys[:, 1:] == keys[:, :-1]) & (keys[:, 1:] != filler)
        else:
            keys = np.sort(ids[flat], axis=1)
            same = keys[:, 1:] == keys[:, :-1]
        if bool(same.any()):
            return None
    take = min(k, width)
    chosen = np.take_along_axis(flat, pos[:, :take], axis=1)
    if not ragged:
        return chosen.reshape(-1), np.full(nq, take, dtype=np.int64)
    found = chosen != blank   # blanks sort last: each query's hits come first
    return chosen[found], found.sum(axis=1).astype(np.int64)


def _sorted_order(parts: Sequence[TopK], ids: np.ndarray, scores: np.ndarray, k: int, larger: bool,
                  dedup: bool) -> tuple[np.ndarray, np.ndarray]:
    """The merge order in general: one stable lexsort by (query, score, primary key), duplicates of a
    (query, key) dropped after their best, each query cut at ``k``."""
    nq = parts[0].nq
    total = len(ids)
    qidx = np.concatenate([np.repeat(np.arange(nq, dtype=np.int64), p.topks) for p in parts])
    if ids.dtype.kind in "iu":
        pk_key = ids
    else:  # VarChar: order-preserving integer codes
        _, pk_key = np.unique(ids, return_inverse=True)
        pk_key = pk_key.reshape(-1)
    key = -scores if larger else scores
    # np.lexsort is stable; last key is primary: query, then score, then primary key
    order = np.lexsort((pk_key, key, qidx))
    q_sorted = qidx[order]
    if dedup and total > 1:
        pk_sorted = pk_key[order]
        o2 = np.lexsort((pk_sorted, q_sorted))  # stable: the best of each (query, pk) comes first
        qa, pa = q_sorted[o2], pk_sorted[o2]
        dup = np.zeros(total, dtype=bool)
        dup[1:] = (qa[1:] == qa[:-1]) & (pa[1:] == pa[:-1])
        if dup.any():
            keep = np.ones(total, dtype=bool)
            keep[o2[dup]] = False
            order = order[keep]
            q_sorted = q_sorted[keep]
    counts = np.bincount(q_sorted, minlength=nq)
    starts = np.zeros(nq, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    rank = np.arange(len(order), dtype=np.int64) - starts[q_sorted]
    sel = rank < k
    order = order[sel]
    topks = np.minimum(counts, k).astype(np.int64)
    return order, topks
