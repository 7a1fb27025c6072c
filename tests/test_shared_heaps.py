"""Sealed segments sharing one trained quantizer searched in one result heap per query
(vecgrid.gpu.loaded_segment._heap_chain): an unfiltered search over host IVF_FLAT / IVF_SQ segments
built from one training gives the hits of one faiss index over all their rows, without a part per
segment to merge; spread over threads it makes one chain per thread; whatever the heaps cannot
decide as the merge does (ties, a key twice, a short query) and an index kind without a heap view
are searched segment by segment."""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid.gpu import loaded_segment as engine
from vecgrid.gpu.build import build_index, normalize_rows
from vecgrid.gpu.growing import GrowingSegment, InterimIndex

faiss = pytest.importorskip("faiss")

DIM, ROWS, NLIST, NPROBE, K = 32, 6_000, 64, 4, 10
PARAMS = {"nprobe": NPROBE}
KEY_STEP = 10**6   # segment i holds keys i * KEY_STEP + row


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(31)
    centers = rng.standard_normal((50, DIM)).astype(np.float32) * 3

    def clustered(n: int) -> np.ndarray:
        return (centers[rng.integers(0, len(centers), n)] + 0.5 * rng.standard_normal((n, DIM))).astype(np.float32)
    return [clustered(ROWS) for _ in range(4)], clustered(200)


def sealed_segments(parts, index_type="IVF_FLAT", metric="L2", keys=None):
    first = build_index(parts[0], index_type, metric, {"nlist": NLIST}, use_gpu=False)
    built = [first] + [build_index(x, index_type, metric, {"nlist": NLIST}, use_gpu=False, trained=first.trained)
                       for x in parts[1:]]
    keys = keys or [np.arange(len(x)) + i * KEY_STEP for i, x in enumerate(parts)]
    return [engine.load_segment(b.to_bytes(), k, prefer_gpu=False, segment_id=i + 1,
                                timestamps=np.full(len(k), 1, np.uint64)) for i, (b, k) in enumerate(zip(built, keys))]


def one_index(segs, parts, q, metric="L2", k=K):
    """One faiss index of the segments' kind over all their rows in their lists: (keys, distances)."""
    ref = faiss.clone_index(faiss.downcast_index(segs[0]._ivf))
    ref.reset()
    rows = np.vstack(parts)
    ref.add(normalize_rows(rows) if metric == "COSINE" else rows)
    q = normalize_rows(q) if metric == "COSINE" else q
    D, I = ref.search(q, k, params=faiss.SearchParametersIVF(nprobe=NPROBE))
    return (I // ROWS) * KEY_STEP + I % ROWS, D


def one_by_one(segs, q, k=K):
    """The merge of every segment searched on its own."""
    return engine.merge_topk([s.search(q, k, params=PARAMS) for s in segs], k, segs[0].metric)


@pytest.fixture
def no_part_per_segment(monkeypatch):
    """Fails a search that searches a sealed segment on its own."""
    def refuse(self, *a, **kw):
        raise AssertionError(f"segment {self.segment_id} searched on its own")
    monkeypatch.setattr(engine.LoadedSegment, "search", refuse)


@pytest.fixture
def two_threads(monkeypatch):
    """A search that has leased two cores, with segments large enough to spread over them."""
    own = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(2)
    monkeypatch.setattr(engine, "FAN_OUT_WORK", 0)
    yield
    faiss.omp_set_num_threads(own)


def assert_sources_name_the_rows(got, segs):
    keys = [segs[s].rows.pks[r] for s, r in zip(got.sources.tolist(), got.rows.tolist())]
    assert keys == got.ids.tolist()


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_SQ8"])
@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
def test_segments_of_one_training_give_the_hits_of_one_index_over_their_rows(data, index_type, metric):
    parts, xq = data
    segs = sealed_segments(parts, index_type, metric)
    want_keys, want_d = one_index(segs, parts, xq[:100], metric)
    expected = one_by_one(segs, xq[:100])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine.LoadedSegment, "search", lambda self, *a, **kw: pytest.fail("searched on its own"))
        got = engine.search_segments(segs, xq[:100], K, params=PARAMS)
    assert got.ids.reshape(-1, K).tolist() == want_keys.tolist()
    np.testing.assert_allclose(got.scores.reshape(-1, K), want_d, rtol=1e-5, atol=1e-4)
    assert got.ids.tolist() == expected.ids.tolist()   # what the merge of the parts gives
    assert len(set(got.sources.tolist())) == len(segs)
    assert_sources_name_the_rows(got, segs)


@pytest.mark.parametrize("count, chained", [(4, [[0, 3], [1, 2]]), (3, [[0, 1]]), (2, [])])
def test_one_query_spread_over_two_threads_makes_one_chain_per_thread(data, two_threads, monkeypatch, count,
                                                                       chained):
    parts, xq = data
    segs = sealed_segments(parts[:count])
    chains = []
    real = engine._heap_chain
    monkeypatch.setattr(engine, "_heap_chain", lambda s, chain, *a: chains.append(list(chain)) or real(s, chain, *a))
    monkeypatch.setattr(engine, "_scan_work", lambda seg, *a: seg.segment_id)   # the largest to the lightest chain
    for q in xq[:20]:
        chains.clear()
        got = engine.search_segments(segs, q[None], K, params=PARAMS)
        want_keys, want_d = one_index(segs, parts[:count], q[None])
        assert got.ids.tolist() == want_keys[0].tolist()
        assert_sources_name_the_rows(got, segs)   # a segment alone (two segments, two threads) keeps its own
        assert sorted(sorted(c) for c in chains) == chained


def test_a_growing_segment_filed_in_the_lists_ends_a_chain(data, no_part_per_segment):
    parts, xq = data
    segs = sealed_segments(parts[:3])
    g = GrowingSegment(DIM, "L2", interim=InterimIndex())
    g.insert(np.arange(ROWS) + 3 * KEY_STEP, parts[3], timestamps=np.full(ROWS, 10, np.uint64))

    def refuse(*a, **kw):
        raise AssertionError("the growing rows searched on their own")
    q = xq[:100]
    while not g.filed_in(segs[0]):   # files its rows once they met nlist queries
        engine.search_segments([*segs, g], q, K, params=PARAMS)
    g.search = refuse
    got = engine.search_segments([*segs, g], q, K, params=PARAMS)
    want_keys, _ = one_index(segs, parts, q)
    assert got.ids.reshape(-1, K).tolist() == want_keys.tolist()
    assert (got.sources == 3).any()
    assert_sources_name_the_rows(got, [*segs, g])


def test_ties_and_a_key_in_two_segments_are_decided_as_the_merge_decides(data):
    parts, xq = data
    twin = [parts[0], parts[0].copy(), parts[2]]   # every row of segment 0 again in segment 1
    keys = [np.arange(ROWS), np.arange(ROWS) + KEY_STEP, np.arange(ROWS) + 2 * KEY_STEP]
    for case_keys in (keys, [keys[0], keys[0], keys[2]]):   # equal vectors under other keys, then the same keys
        segs = sealed_segments(twin, keys=case_keys)
        expected = one_by_one(segs, xq[:50])
        got = engine.search_segments(segs, xq[:50], K, params=PARAMS)
        assert got.ids.tolist() == expected.ids.tolist()
        np.testing.assert_allclose(got.scores, expected.scores, rtol=1e-6)
        assert_sources_name_the_rows(got, segs)


def test_a_query_short_of_k_hits_is_searched_segment_by_segment(data):
    parts, xq = data
    segs = sealed_segments([p[:300] for p in parts])   # about 5 rows a list: 4 lists hold fewer than k=100
    expected = one_by_one(segs, xq[:20], k=100)
    got = engine.search_segments(segs, xq[:20], 100, params=PARAMS)
    assert got.ids.tolist() == expected.ids.tolist()
    assert (got.topks == 100).all()   # the segments searched exactly, each short of its 100


def test_an_index_without_a_heap_view_is_searched_on_its_own(data, monkeypatch):
    parts, xq = data
    segs = sealed_segments(parts[:3], "IVF_PQ")
    assert not segs[0].chains() and len({s.quantizer_key for s in segs}) == 1
    searched = []
    real = engine.LoadedSegment.search
    monkeypatch.setattr(engine.LoadedSegment, "search",
                        lambda self, *a, **kw: searched.append(self.segment_id) or real(self, *a, **kw))
    got = engine.search_segments(segs, xq[:30], K, params=PARAMS)
    assert sorted(searched) == [1, 2, 3]
    assert got.ids.tolist() == one_by_one(segs, xq[:30]).ids.tolist()
    assert_sources_name_the_rows(got, segs)


def test_a_released_segment_in_a_chain_fails_the_search(data):
    parts, xq = data
    segs = sealed_segments(parts[:2])
    segs[1].release()
    with pytest.raises(Exception, match="released"):
        engine.search_segments(segs, xq[:10], K, params=PARAMS)


def test_a_search_with_another_metric_is_refused_as_each_segment_refuses_it(data):
    parts, xq = data
    segs = sealed_segments(parts[:3])
    with pytest.raises(engine.errors.ParameterInvalid, match="metric type not match"):
        engine.search_segments(segs, xq[:10], K, params=PARAMS, metric="IP")
