"""Tools for testing ANN search (after faiss ``contrib/evaluation.py``).

* :func:`knn_ground_truth` — exact k-NN in float64 numpy (optionally over a row mask),
  the reference the tests compare against.
* :func:`recall_at_k` — mean |found ∩ true| / k over queries, with ``-1`` padding ignored.
* :func:`tie_tolerant_recall` — like recall, but a hit whose reference distance ties
  the k-th true distance (within ``rtol``) counts as correct.
* :func:`check_ref_knn_with_draws` — assert two result sets are identical up to
  ties (equal distances may come in any order), as faiss's function of that name.
"""

from __future__ import annotations

import numpy as np

__all__ = ["knn_ground_truth", "recall_at_k", "tie_tolerant_recall", "check_ref_knn_with_draws"]


def knn_ground_truth(xq: np.ndarray, xb: np.ndarray, k: int, metric: str = "L2", *,
                     mask: np.ndarray | None = None, block: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``(D, I)`` in float64 (``D`` as float32; ``I == -1`` past the allowed rows).

    ``metric``: L2 (squared, ascending), IP or COSINE (descending; vectors normalised here)."""
    metric = metric.upper()
    q = np.asarray(xq, dtype=np.float64)
    b = np.asarray(xb, dtype=np.float64)
    rows = np.arange(len(b)) if mask is None else np.flatnonzero(mask)
    b = b[rows]
    if metric == "COSINE":
        q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-30)
        b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-30)
    nq = len(q)
    D = np.full((nq, k), np.inf if metric == "L2" else -np.inf, dtype=np.float64)
    I = np.full((nq, k), -1, dtype=np.int64)
    kk = min(k, len(b))
    if kk == 0:
        return D.astype(np.float32), I
    bn = (b * b).sum(1)
    for i0 in range(0, nq, block):
        qq = q[i0:i0 + block]
        ip = qq @ b.T
        if metric == "L2":
            dist = (qq * qq).sum(1)[:, None] - 2 * ip + bn[None, :]
            key = dist
        else:
            dist = ip
            key = -ip
        part = np.argpartition(key, kk - 1, axis=1)[:, :kk] if kk < len(b) else \
            np.tile(np.arange(len(b)), (len(qq), 1))
        sub = np.take_along_axis(key, part, axis=1)
        # ties: smaller row id first, as faiss does
        o = np.lexsort((part, sub), axis=-1)
        idx = np.take_along_axis(part, o, axis=1)
        D[i0:i0 + block, :kk] = np.take_along_axis(dist, idx, axis=1)
        I[i0:i0 + block, :kk] = rows[idx]
    return D.astype(np.float32), I


def recall_at_k(I: np.ndarray, Iref: np.ndarray, k: int | None = None) -> float:
    """Mean fraction of the reference's top-k (``-1`` ignored) found in ``I``'s top-k."""
    k = k or Iref.shape[1]
    total = 0.0
    count = 0
    for found, ref in zip(I[:, :k], Iref[:, :k]):
        ref = set(ref[ref >= 0].tolist())
        if not ref:
            continue
        total += len(ref & set(found[found >= 0].tolist())) / len(ref)
        count += 1
    return total / count if count else 1.0


def tie_tolerant_recall(D: np.ndarray, I: np.ndarray, Dref: np.ndarray, Iref: np.ndarray, k: int,
                        metric: str = "L2", rtol: float = 1e-5) -> float:
    """Recall where a returned hit scoring at least as well as the k-th true hit counts."""
    hits = 0
    total = 0
    asc = metric.upper() == "L2"
    for d, i, dr, ir in zip(D[:, :k], I[:, :k], Dref[:, :k], Iref[:, :k]):
        valid = ir >= 0
        n_ref = int(valid.sum())
        if n_ref == 0:
            continue
        kth = dr[valid][-1]
        tol = rtol * max(abs(float(kth)), 1.0)
        ref = set(ir[valid].tolist())
        ok = 0
        for dd, ii in zip(d, i):
            if ii < 0:
                continue
            if ii in ref or (dd <= kth + tol if asc else dd >= kth - tol):
                ok += 1
        hits += min(ok, n_ref)
        total += n_ref
    return hits / total if total else 1.0


def _cluster_tables_with_tolerance(tab1: np.ndarray, tab2: np.ndarray, thr: float) -> tuple[np.ndarray, np.ndarray]:
    """Replace values within ``thr`` of each other by a common representative (faiss's helper)."""
    tab = np.hstack([tab1, tab2])
    order = np.argsort(tab)
    rank = np.zeros(len(tab), dtype=np.int64)
    cur = 0
    prev = None
    for o in order:
        if prev is not None and tab[o] - prev > thr:
            cur += 1
        rank[o] = cur
        prev = tab[o]
    return rank[:len(tab1)], rank[len(tab1):]


def check_ref_knn_with_draws(Dref: np.ndarray, Iref: np.ndarray, Dnew: np.ndarray, Inew: np.ndarray,
                             rtol: float = 1e-5, atol: float = 0.0) -> None:
    """Assert that two k-NN results are identical up to ties (raise ``AssertionError`` otherwise).

    Distances must agree within ``rtol``/``atol``; ids may differ only among entries
    with tied distances, and the last tie group (cut by k) may hold any of its members."""
    np.testing.assert_allclose(Dref, Dnew, rtol=rtol, atol=atol)
    for i in range(len(Iref)):
        if np.array_equal(Iref[i], Inew[i]):
            continue
        finite = np.isfinite(Dref[i])
        r = rtol * (np.abs(Dref[i][finite]).max() if finite.any() else 1.0) + atol
        cref, cnew = _cluster_tables_with_tolerance(Dref[i], Dnew[i], r)
        last = cref.max()
        for g in np.unique(cref):
            if g == last:
                continue
            a = set(Iref[i][cref == g].tolist())
            b = set(Inew[i][cnew == g].tolist())
            if a != b:
                raise AssertionError(f"query {i}: ids {sorted(a)} != {sorted(b)} at tied distance group {g}")
