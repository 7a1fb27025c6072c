"""One query over a host sealed segment and a growing segment compared exactly (a leader with rows
inserted since its load, at nq=1): search_segments merges the two hit lists itself
(loaded_segment._one_query_with_growing) and answers exactly what the general path (sharing, fan-out,
parts, merge_topk) answers — ties by key, a key in both segments once, rows not visible left out —
and leaves to that path what it does not cover."""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid.gpu import build, device
from vecgrid.gpu import loaded_segment as engine
from vecgrid.gpu.growing import GrowingSegment, InterimIndex
from vecgrid.gpu.merge import merge_hit_lists

pytest.importorskip("faiss")

N, GROWN, DIM, K = 3_000, 200, 16, 10
INDEXES = [("IVF_FLAT", {"nlist": 16}), ("FLAT", {}), ("HNSW", {"M": 16, "efConstruction": 64})]


@pytest.fixture(scope="module")
def mgr():
    return device.DeviceManager(0.8, use_gpu=False)


def segments(mgr, metric="L2", index=INDEXES[0], seed=5, grown=GROWN, interim=InterimIndex(), pk_base=10**6):
    rng = np.random.default_rng(seed)
    xb = rng.standard_normal((N, DIM)).astype(np.float32)
    xg = rng.standard_normal((grown, DIM)).astype(np.float32)
    sealed = engine.load_segment(build.build_index_file(xb, index[0], metric, index[1], use_gpu=False),
                                 np.arange(N, dtype=np.int64), manager=mgr, segment_id=1,
                                 timestamps=np.full(N, 1, np.uint64))
    growing = GrowingSegment(DIM, metric, interim=interim)
    growing.insert(np.arange(grown, dtype=np.int64) + pk_base, xg, timestamps=np.arange(grown, dtype=np.uint64) + 10)
    return sealed, growing, xb, xg


def general(segs, q, monkeypatch, **kw):
    """search_segments without the one-query path."""
    with monkeypatch.context() as m:
        m.setattr(engine, "_one_query_with_growing", lambda *a, **k: None)
        return engine.search_segments(segs, q, K, **kw)


def assert_same(got, ref):
    np.testing.assert_array_equal(got.ids, ref.ids)
    np.testing.assert_array_equal(got.scores, ref.scores)
    np.testing.assert_array_equal(got.rows, ref.rows)
    np.testing.assert_array_equal(got.sources, ref.sources)
    np.testing.assert_array_equal(got.topks, ref.topks)


def taken(monkeypatch) -> list:
    """Answers of the one-query path, recorded as search_segments returns them."""
    answers: list = []
    one_query = engine._one_query_with_growing

    def recording(*a, **kw):
        out = one_query(*a, **kw)
        answers.append(out)
        return out
    monkeypatch.setattr(engine, "_one_query_with_growing", recording)
    return answers


@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
@pytest.mark.parametrize("index", INDEXES, ids=[i[0] for i in INDEXES])
def test_the_same_hits_as_the_general_path(mgr, metric, index, monkeypatch):
    sealed, growing, xb, xg = segments(mgr, metric, index)
    rng = np.random.default_rng(1)
    queries = [*rng.standard_normal((20, DIM)).astype(np.float32), xg[3], xb[7]]
    for order in ([sealed, growing.snapshot()], [growing.snapshot(), sealed]):
        for q in queries:
            ref = general(order, q, monkeypatch, metric=metric)
            answers = taken(monkeypatch)
            got = engine.search_segments(order, q, K, metric=metric)
            monkeypatch.undo()
            assert answers and answers[0] is got   # the one-query path answered
            assert_same(got, ref)
            assert got.hit_lists == (got.scores.tolist(), got.ids.tolist())


def test_ties_are_ordered_by_key_and_a_key_in_both_segments_is_kept_once(mgr, monkeypatch):
    sealed, growing, xb, _ = segments(mgr, pk_base=0)   # growing keys 0..199 are also sealed rows' keys
    growing.insert(np.array([10**7, 5], dtype=np.int64), np.stack([xb[0], xb[0]]),
                   timestamps=np.array([50, 50], dtype=np.uint64))
    segs = [sealed, growing.snapshot()]
    answers = taken(monkeypatch)
    got = engine.search_segments(segs, xb[0], K)
    monkeypatch.undo()
    assert answers[0] is got
    # xb[0] three times: sealed key 0, growing keys 5 and 10**7 at distance 0, ordered by key
    assert got.ids[:3].tolist() == [0, 5, 10**7] and got.scores[:3].tolist() == [0.0, 0.0, 0.0]
    assert len(set(got.ids.tolist())) == K
    assert_same(got, general(segs, xb[0], monkeypatch))


def test_rows_not_visible_at_the_timestamp_and_deleted_rows_are_left_out(mgr, monkeypatch):
    sealed, growing, _, xg = segments(mgr)
    growing.delete(np.array([10**6 + 3]), np.array([500], dtype=np.uint64))
    sealed.delete(np.array([1, 2, 3]), np.array([500], dtype=np.uint64).repeat(3))
    segs = [sealed, growing.snapshot()]
    for ts in (None, 12, 100, 1000):
        answers = taken(monkeypatch)
        got = engine.search_segments(segs, xg[3], K, timestamp=ts)
        monkeypatch.undo()
        assert answers[0] is got
        assert_same(got, general(segs, xg[3], monkeypatch, timestamp=ts))
        visible = set(range(10**6, 10**6 + min(GROWN, (ts or 10**9) - 9)))
        if ts is None or ts >= 500:
            visible.discard(10**6 + 3)
            assert not {1, 2, 3} & set(got.ids.tolist())
        assert {i for i in got.ids.tolist() if i >= 10**6} <= visible
    # row 3 of the growing segment is the query itself: found at distance 0 until it was deleted
    assert engine.search_segments(segs, xg[3], K, timestamp=100).ids[0] == 10**6 + 3


def test_fewer_rows_than_k_and_an_empty_growing_segment(mgr, monkeypatch):
    rng = np.random.default_rng(2)
    xb = rng.standard_normal((4, DIM)).astype(np.float32)
    sealed = engine.load_segment(build.build_index_file(xb, "FLAT", "L2", {}, use_gpu=False),
                                 np.arange(4, dtype=np.int64), manager=mgr)
    growing = GrowingSegment(DIM, "L2")
    for rows in (0, 3):
        if rows:
            growing.insert(np.arange(rows, dtype=np.int64) + 100, xb[:rows] + 0.5, timestamps=np.ones(rows, np.uint64))
        segs = [sealed, growing.snapshot()]
        answers = taken(monkeypatch)
        got = engine.search_segments(segs, xb[1], K)
        monkeypatch.undo()
        assert answers[0] is got and len(got) == 4 + rows and got.topks.tolist() == [4 + rows]
        assert_same(got, general(segs, xb[1], monkeypatch))


def test_what_it_leaves_to_the_general_path(mgr, monkeypatch):
    sealed, growing, _, xg = segments(mgr)
    q = xg[0]
    cases = {
        "rows the interim index serves":
            [sealed, segments(mgr, grown=300, interim=InterimIndex(rows=256))[1].snapshot()],
        "rows probed through the sealed lists":
            [sealed, segments(mgr, grown=2 ** 20 // DIM, interim=InterimIndex(rows=10**6))[1].snapshot()],
        "three segments": [sealed, growing.snapshot(), segments(mgr, seed=6)[0]],
        "two sealed segments": [sealed, segments(mgr, seed=6)[0]],
    }
    for name, segs in cases.items():
        answers = taken(monkeypatch)
        got = engine.search_segments(segs, q, K)
        monkeypatch.undo()
        assert answers in ([], [None]), name
        assert_same(got, general(segs, q, monkeypatch))
    answers = taken(monkeypatch)
    engine.search_segments([sealed, growing.snapshot()], np.stack([q, q]), K)   # two queries
    engine.search_segments([sealed, growing.snapshot()], q, K, output_fields=[0])   # rows to fetch
    assert answers == [None, None]


def test_segments_with_rows_enough_to_spread_over_the_cores_go_the_general_way(mgr, monkeypatch):
    """A leader whose growing rows pile up (a stream of inserts): with two cores leased and scans worth
    spreading, the general path searches the two segments on two threads; one after the other, the
    one-query path made searches during `bench/write.py`'s stream 2.4 times slower."""
    faiss = pytest.importorskip("faiss")
    sealed = segments(mgr, index=("FLAT", {}))[0]
    grown = engine.FAN_OUT_WORK // DIM   # the growing rows alone scan enough to spread
    growing = segments(mgr, grown=grown, interim=InterimIndex(rows=10**7))[1]
    segs, q = [sealed, growing.snapshot()], np.ones(DIM, np.float32)
    spread: list = []
    fan_out = engine._fan_out
    monkeypatch.setattr(engine, "_fan_out", lambda *a, **kw: spread.append(a[0]) or fan_out(*a, **kw))
    before = faiss.omp_get_max_threads()
    try:
        faiss.omp_set_num_threads(2)
        answers = taken(monkeypatch)
        got = engine.search_segments(segs, q, K)
        assert answers == [None] and spread == [[0, 1]]
        faiss.omp_set_num_threads(1)    # one core leased: nothing to spread, the one-query path answers
        got_one = engine.search_segments(segs, q, K)
        assert answers[1] is got_one
    finally:
        faiss.omp_set_num_threads(before)
    monkeypatch.undo()
    assert_same(got, general(segs, q, monkeypatch))
    assert_same(got_one, got)


def test_a_nan_score_goes_to_the_general_merge():
    assert merge_hit_lists([([1.0, float("nan")], [1, 2], [0, 1]), ([0.5], [3], [0])], K, False) is None
    merged = merge_hit_lists([([1.0, 2.0], [1, 2], [0, 1]), ([0.5, 2.0], [3, 1], [0, 4])], 3, False)
    assert merged.ids.tolist() == [3, 1, 2] and merged.sources.tolist() == [1, 0, 0]
    larger = merge_hit_lists([([2.0, 1.0], [1, 2], [0, 1]), ([2.0, 0.5], [0, 3], [0, 4])], 3, True)
    assert larger.ids.tolist() == [0, 1, 2] and larger.scores.tolist() == [2.0, 2.0, 1.0]
