"""The interim index of growing segments (vecgrid.gpu.growing.InterimIndex, Milvus's
``queryNode.segcore.interimIndex``): from ``rows`` rows on, an unfiltered search of a growing segment
goes through an IVF index of its rows; it finds what brute force finds on clustered rows, a read sees
only its snapshot's rows, deleted and later rows never come back, a filtered search stays exact, and
a FLAT collection never gets one."""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid.cluster.querynode.node import interim_index
from vecgrid.config import QueryNodeSettings
from vecgrid.gpu import exprs
from vecgrid.gpu.growing import GrowingSegment, InterimIndex, brute_force_knn

pytest.importorskip("faiss")

DIM, N = 32, 6_000
INTERIM = InterimIndex(rows=2_000, nlist=16, nprobe=4)


def clustered(rng: np.random.Generator, n: int, centers: np.ndarray) -> np.ndarray:
    return (centers[rng.integers(0, len(centers), n)] + 0.3 * rng.standard_normal((n, DIM))).astype(np.float32)


@pytest.fixture()
def data():
    rng = np.random.default_rng(11)
    centers = rng.standard_normal((40, DIM)).astype(np.float32) * 4
    return clustered(rng, N, centers), clustered(rng, 30, centers)


def growing(vectors: np.ndarray, interim: InterimIndex | None, metric: str = "L2") -> GrowingSegment:
    g = GrowingSegment(DIM, metric, interim=interim)
    g.insert(np.arange(len(vectors)), vectors, timestamps=np.full(len(vectors), 10, np.uint64),
             columns={101: np.arange(len(vectors), dtype=np.int64) % 7})
    return g


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean([len(set(x) & set(y)) / len(y) for x, y in zip(a, b)]))


@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
def test_it_finds_what_brute_force_finds_and_reports_true_distances(data, metric):
    xb, xq = data
    g, exact = growing(xb, INTERIM, metric), growing(xb, None, metric)
    got, want = g.search(xq, 10), exact.search(xq, 10)
    assert g._interim_index is not None and g._interim_rows == N
    assert overlap(got.ids.reshape(-1, 10), want.ids.reshape(-1, 10)) >= 0.95
    # the distances are the rows' own: the same as brute force gives for those rows
    base = xb / np.linalg.norm(xb, axis=1, keepdims=True) if metric == "COSINE" else xb
    q = xq / np.linalg.norm(xq, axis=1, keepdims=True) if metric == "COSINE" else xq
    rows = got.ids.reshape(-1, 10)
    ref = ((q[:, None, :] - base[rows]) ** 2).sum(-1) if metric == "L2" else (q[:, None, :] * base[rows]).sum(-1)
    np.testing.assert_allclose(got.scores.reshape(-1, 10), ref, rtol=1e-4, atol=1e-3)
    assert g.nbytes() > exact.nbytes()   # the index's copy of the rows is counted


def test_below_its_rows_and_when_filtered_the_search_stays_exact(data):
    xb, xq = data
    small = growing(xb[:1_500], INTERIM)
    D, I = brute_force_knn(xq, xb[:1_500], 10, "L2")
    assert small.search(xq, 10).ids.reshape(-1, 10).tolist() == I.tolist()
    assert small._interim_index is None
    g = growing(xb, INTERIM)
    expr = exprs.compare(exprs.column(101), "==", 3)
    got = g.search(xq, 10, expr=expr)
    allowed = np.flatnonzero(np.arange(N) % 7 == 3)
    _, Iref = brute_force_knn(xq, xb[allowed], 10, "L2")
    assert got.ids.reshape(-1, 10).tolist() == allowed[Iref].tolist()
    assert g._interim_index is None


def test_a_read_sees_only_its_snapshot_and_never_deleted_or_later_rows(data):
    xb, xq = data
    g = growing(xb[:4_000], INTERIM)
    early = g.snapshot()
    g.insert(np.arange(4_000, N), xb[4_000:], timestamps=np.full(N - 4_000, 20, np.uint64),
             columns={101: np.arange(4_000, N, dtype=np.int64) % 7})
    g.snapshot().search(xq, 10)   # the later read adds the new rows to the index
    assert g._interim_rows == N
    # the earlier read goes through the same index, which now holds rows it must not see
    assert early.search(xq, 10).ids.max() < 4_000
    # MVCC: a read at ts 10 does not see the rows inserted at 20, even through the full index
    assert g.search(xq, 10, timestamp=15).ids.max() < 4_000
    # deletes: the best hit of every query, deleted at ts 30, is gone from reads at 30 and later
    best = np.unique(g.search(xq, 1).ids)
    assert g.delete(best, 30) == len(best)
    after = g.search(xq, 10, timestamp=30).ids
    assert not set(after.tolist()) & set(best.tolist())
    assert set(g.search(xq, 10, timestamp=29).ids.tolist()) & set(best.tolist())
    # the earlier read, deletes applied through a bitmap of its 4,000 rows, still sees only those
    hits = early.search(xq, 10, timestamp=30).ids
    assert hits.max() < 4_000 and not set(hits.tolist()) & set(best.tolist())


def test_a_query_whose_probed_lists_hold_too_few_rows_is_answered_exactly(data):
    """One probed list of a two-list index holds fewer rows than k allows after deletes hide most of
    them: the query gets its k hits from the rows outside, found exactly."""
    xb, xq = data
    g = growing(xb, InterimIndex(rows=2_000, nlist=16, nprobe=1))
    keep = np.zeros(N, dtype=bool)
    keep[::500] = True          # 12 rows left visible, scattered over the lists
    g.delete(np.flatnonzero(~keep), 50)
    got = g.search(xq, 10, timestamp=60)
    assert got.topks.tolist() == [10] * len(xq)
    _, Iref = brute_force_knn(xq, xb[keep], 10, "L2")
    assert got.ids.reshape(-1, 10).tolist() == np.flatnonzero(keep)[Iref].tolist()


def test_which_collections_get_one():
    settings = QueryNodeSettings()
    assert interim_index(settings, "FLAT") is None
    assert interim_index(settings, "GPU_BRUTE_FORCE") is None   # exact too (FLAT without a GPU)
    assert interim_index(settings, "IVF_FLAT") == InterimIndex(settings.interim_index_rows,
                                                               settings.interim_index_nlist,
                                                               settings.interim_index_nprobe)
    assert interim_index(settings, "HNSW") is not None
    settings.interim_index_rows = 0
    assert interim_index(settings, "IVF_SQ8") is None


def test_reads_while_the_pipeline_inserts_and_deletes(data):
    """Three reader threads search fresh snapshots while a writer inserts and deletes (the pipeline
    thread's part): the index grows under its lock and no read sees a row past its snapshot."""
    import threading
    import time

    xb, xq = data
    g = growing(xb[:2_000], INTERIM)
    done, failures = threading.Event(), []
    read_rows, searched = [0], threading.Condition()   # the most rows a finished read saw

    def write() -> None:
        for lo in range(2_000, N, 250):
            g.insert(np.arange(lo, lo + 250), xb[lo:lo + 250], timestamps=np.full(250, lo, np.uint64),
                     columns={101: np.arange(lo, lo + 250, dtype=np.int64) % 7})
            if lo % 1_000 == 0:
                g.delete(np.arange(lo - 50, lo), lo + 1)
            with searched:   # a read of these rows overlaps the next insert, however busy the machine
                searched.wait_for(lambda: read_rows[0] >= lo + 250 or failures, 10)
            time.sleep(0.002)
        done.set()

    def read() -> None:
        try:
            while not done.is_set():
                snapshot = g.snapshot()
                hits = snapshot.search(xq, 10)
                assert hits.ids.max() < snapshot.num_rows
                with searched:
                    read_rows[0] = max(read_rows[0], snapshot.num_rows)
                    searched.notify_all()
        except Exception as e:  # noqa: BLE001 - reported by the test
            failures.append(e)
            done.set()

    threads = [threading.Thread(target=read) for _ in range(3)] + [threading.Thread(target=write)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not failures, failures
    assert g._interim_rows > 2_000
