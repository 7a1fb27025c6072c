"""A search of fewer queries than the cores it may use spreads large host segments over threads
(faiss spreads a search over its queries only, so one query over ten segments ran on one core), with
the same hits as one thread searching them in turn (vecgrid.gpu.loaded_segment.search_segments)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from vecgrid.gpu import build
from vecgrid.gpu import loaded_segment as engine

faiss = pytest.importorskip("faiss")

DIM = 32


@pytest.fixture
def two_omp_threads():
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(2)
    yield
    faiss.omp_set_num_threads(before)


def segments(count: int, rows: int, index_type: str = "FLAT", params: dict | None = None
             ) -> list[engine.LoadedSegment]:
    rng = np.random.default_rng(5)
    out = []
    for i in range(count):
        x = rng.standard_normal((rows, DIM), dtype=np.float32)
        built = build.build_index(x, index_type, "L2", params or {}, use_gpu=False)
        out.append(engine.load_segment(built.to_bytes(), np.arange(i * rows, (i + 1) * rows), prefer_gpu=False,
                                       segment_id=i + 1))
    return out


def threads_searching(monkeypatch, meet: int = 0) -> set[str]:
    """The names of the threads that search segments; with ``meet``, the first search of each thread
    waits (up to 10 s) until ``meet`` threads search at once: threads take the next segment as they
    come, so only a meeting proves that they spread one search, whenever the pool's thread wakes."""
    names: set[str] = set()
    original = engine.LoadedSegment.search
    barrier = threading.Barrier(meet) if meet else None

    def recording(self, *a, **kw):
        name = threading.current_thread().name
        if barrier is not None and name not in names:
            names.add(name)
            barrier.wait(timeout=10)
        names.add(name)
        return original(self, *a, **kw)
    monkeypatch.setattr(engine.LoadedSegment, "search", recording)
    return names


def test_one_query_over_large_host_segments_runs_them_on_several_threads(monkeypatch, two_omp_threads):
    segs = segments(4, 5000)   # 4 x 5,000 rows x 32 floats: past FAN_OUT_WORK
    assert engine.fan_out_width(segs, 1, 10) == 4
    query = np.random.default_rng(9).standard_normal((1, DIM), dtype=np.float32)
    alone = engine.merge_topk([s.search(query, 10) for s in segs], 10, "L2", -1)
    names = threads_searching(monkeypatch, meet=2)
    hits = engine.search_segments(segs, query, 10)
    assert len(names) == 2
    assert np.array_equal(hits.ids, alone.ids) and np.allclose(hits.scores, alone.scores)
    assert faiss.omp_get_max_threads() == 2   # the caller's OpenMP threads are given back


def test_small_segments_many_queries_or_one_core_stay_on_the_calling_thread(monkeypatch, two_omp_threads):
    small = segments(4, 200)
    assert engine.fan_out_width(small, 1, 10) == 1
    large = segments(3, 5000)
    names = threads_searching(monkeypatch)
    queries = np.random.default_rng(9).standard_normal((8, DIM), dtype=np.float32)
    engine.search_segments(small, queries[:1], 10)
    engine.search_segments(large, queries, 10)   # 8 queries: faiss spreads them itself
    faiss.omp_set_num_threads(1)
    engine.search_segments(large, queries[:1], 10)
    assert names == {threading.current_thread().name}


def test_a_segment_failing_in_a_pool_thread_fails_the_search(monkeypatch, two_omp_threads):
    segs = segments(4, 5000)
    original = engine.LoadedSegment.search

    def failing(self, *a, **kw):
        if self.segment_id == 2:
            raise RuntimeError("segment 2 failed")
        return original(self, *a, **kw)
    monkeypatch.setattr(engine.LoadedSegment, "search", failing)
    with pytest.raises(RuntimeError, match="segment 2 failed"):
        engine.search_segments(segs, np.zeros((1, DIM), dtype=np.float32), 10)


def test_shared_ivf_lists_and_fan_out_together_find_the_same_hits(two_omp_threads, tmp_path):
    from vecgrid.cluster.index_templates import Templates, TemplateKey

    key, templates = TemplateKey(str(tmp_path), 7, 101, 9001), Templates()
    rng = np.random.default_rng(3)
    segs = []
    for i in range(4):
        built = templates.build(key, rng.standard_normal((8000, DIM), dtype=np.float32), "IVF_FLAT", "L2",
                                {"nlist": 16}, lambda *a, **kw: build.build_index(*a, use_gpu=False, **kw))
        segs.append(engine.load_segment(built.to_bytes(), np.arange(i * 8000, (i + 1) * 8000), prefer_gpu=False,
                                        segment_id=i + 1))
    params = {"nprobe": 8}
    assert engine.fan_out_width(segs, 1, 10, params=params) == 4
    # the probed lists count, not the centroids the shared assignment compares once
    assert engine.fan_out_width(segs, 1, 10, params={"nprobe": 2}) == 1
    for query in rng.standard_normal((5, 1, DIM), dtype=np.float32):
        alone = engine.merge_topk([s.search(query, 10, params=params) for s in segs], 10, "L2", -1)
        hits = engine.search_segments(segs, query, 10, params=params)
        assert np.array_equal(hits.ids, alone.ids) and np.allclose(hits.scores, alone.scores)


def test_a_late_pool_thread_leaves_its_share_to_the_caller(monkeypatch, two_omp_threads):
    """Threads take the next segment as they come: when the pool's thread is busy elsewhere (here,
    held until the search is over), the calling thread searches every segment itself and returns
    without waiting for it."""
    segs = segments(4, 5000)
    query = np.random.default_rng(9).standard_normal((1, DIM), dtype=np.float32)
    alone = engine.merge_topk([s.search(query, 10) for s in segs], 10, "L2", -1)
    engine.search_segments(segs, query, 10)   # the pool exists
    release = threading.Event()
    for _ in range(engine._fan_out_pool._max_workers):   # every pool thread is busy
        engine._fan_out_pool.submit(release.wait, 5)
    names = threads_searching(monkeypatch)
    try:
        hits = engine.search_segments(segs, query, 10)
    finally:
        release.set()
    assert names == {threading.current_thread().name}
    assert np.array_equal(hits.ids, alone.ids) and np.allclose(hits.scores, alone.scores)
