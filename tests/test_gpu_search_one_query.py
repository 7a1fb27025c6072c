"""The unfiltered single-query host path (LoadedSegment._plain_search, search_segments
skipping the merge of one segment in order, the encoder taking the hit lists): the same hits, order
and protobuf as the general path — tied scores and a key twice included, where the merge decides."""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid.gpu import build, device
from vecgrid.gpu.merge import TopK, constant, merge_topk
from vecgrid.gpu.results import to_search_result_data
from vecgrid.gpu.loaded_segment import load_segment, search_segments

pytest.importorskip("faiss")

N, D, K = 2_000, 16, 10
INDEXES = [("FLAT", {}), ("IVF_FLAT", {"nlist": 16}), ("HNSW", {"M": 16, "efConstruction": 64})]


@pytest.fixture(scope="module")
def mgr():
    return device.DeviceManager(0.8, use_gpu=False)


def tied_data(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Vectors where row 0's vector is stored again at rows 7, 11 and 13 (four tied distances to any
    query) and where rows 5 and 9 share a primary key; keys run backwards so that faiss's order of the
    ties (by row) is the opposite of the key order the merge wants."""
    rng = np.random.default_rng(seed)
    xb = rng.standard_normal((N, D)).astype(np.float32)
    xb[[7, 11, 13]] = xb[0]
    pks = np.arange(N, dtype=np.int64)[::-1] * 3 + 1
    pks[9] = pks[5]
    return xb, pks


def reference(seg, xq, k, metric="L2"):
    """The general path: the segment's search merged by merge_topk (no fast path)."""
    part = seg.search(xq, k, metric=metric)
    plain = TopK(part.ids, part.scores, part.topks, part.k, rows=part.rows)  # not marked in order
    return merge_topk([plain], k, metric)


@pytest.mark.parametrize("index_type,params", INDEXES)
def test_tied_scores_are_ordered_by_primary_key(index_type, params, mgr):
    xb, pks = tied_data()
    seg = load_segment(build.build_index_file(xb, index_type, "L2", params, use_gpu=False), pks, manager=mgr)
    got = search_segments([seg], xb[0], K)
    assert got.nq == 1 and len(got) == K
    ties = got.ids[:4]
    assert sorted(ties.tolist()) == sorted(pks[[0, 7, 11, 13]].tolist())
    assert ties.tolist() == sorted(ties.tolist())  # the merge's tie-break: key ascending
    assert not got.in_order or len(set(got.scores.tolist())) == K
    ref = reference(seg, xb[0][None, :], K)
    np.testing.assert_array_equal(got.ids, ref.ids)
    np.testing.assert_array_equal(got.scores, ref.scores)
    np.testing.assert_array_equal(got.rows, ref.rows)


@pytest.mark.parametrize("index_type,params", INDEXES)
def test_a_key_twice_is_kept_once(index_type, params, mgr):
    xb, pks = tied_data()
    xb[9] = xb[5] + 1e-3  # rows 5 and 9 (same key) are both among the nearest of row 5's vector
    seg = load_segment(build.build_index_file(xb, index_type, "L2", params, use_gpu=False), pks, manager=mgr)
    got = search_segments([seg], xb[5], K)
    assert len(set(got.ids.tolist())) == len(got.ids)
    assert got.ids.tolist().count(int(pks[5])) == 1
    ref = reference(seg, xb[5][None, :], K)
    np.testing.assert_array_equal(got.ids, ref.ids)
    np.testing.assert_array_equal(got.scores, ref.scores)


@pytest.mark.parametrize("index_type,params", INDEXES)
def test_single_query_matches_the_general_path(index_type, params, mgr):
    rng = np.random.default_rng(11)
    xb = rng.standard_normal((N, D)).astype(np.float32)
    pks = rng.permutation(N).astype(np.int64) * 5
    seg = load_segment(build.build_index_file(xb, index_type, "L2", params, use_gpu=False), pks, manager=mgr)
    xq = rng.standard_normal((20, D)).astype(np.float32)
    for q in xq:
        got = search_segments([seg], q, K)
        assert got.in_order  # random data: no ties, unique keys
        assert got.sources is not None and not got.sources.any() and len(got.sources) == K
        ref = reference(seg, q[None, :], K)
        np.testing.assert_array_equal(got.ids, ref.ids)
        np.testing.assert_array_equal(got.rows, ref.rows)
        np.testing.assert_array_equal(got.scores, ref.scores)
        assert to_search_result_data(got) == to_search_result_data(ref)
    # and as a batch: the same hits query by query
    batch = search_segments([seg], xq, K)
    for i, q in enumerate(xq):
        one = search_segments([seg], q, K)
        ids, scores = batch.query(i)
        np.testing.assert_array_equal(ids, one.ids)
        np.testing.assert_array_equal(scores, one.scores)


def test_fewer_rows_than_k(mgr):
    rng = np.random.default_rng(5)
    xb = rng.standard_normal((6, D)).astype(np.float32)
    pks = np.arange(6, dtype=np.int64) + 100
    for index_type, params in INDEXES:
        if index_type == "IVF_FLAT":
            params = {"nlist": 2}
        seg = load_segment(build.build_index_file(xb, index_type, "L2", params, use_gpu=False), pks, manager=mgr)
        got = search_segments([seg], xb[2], K)
        assert got.topks.tolist() == [6] and sorted(got.ids.tolist()) == pks.tolist()
        assert got.ids[0] == 102


def test_varchar_keys(mgr):
    rng = np.random.default_rng(8)
    xb = rng.standard_normal((N, D)).astype(np.float32)
    xb[[3, 4]] = xb[1]
    pks = np.array([f"k{i:05d}" for i in range(N)])[::-1].copy()
    seg = load_segment(build.build_index_file(xb, "HNSW", "L2", {"M": 16}, use_gpu=False), pks, manager=mgr)
    got = search_segments([seg], xb[1], K)
    assert got.ids[:3].tolist() == sorted(pks[[1, 3, 4]].tolist())
    srd = to_search_result_data(got)
    assert list(srd.ids.str_id.data) == got.ids.tolist()
    plain = TopK(got.ids, got.scores, got.topks, got.k)
    assert srd == to_search_result_data(plain)


def test_encoder_takes_the_hit_lists_as_the_arrays():
    ids = np.array([5, 3, 9], dtype=np.int64)
    scores = np.array([0.5, 1.25, 2.0], dtype=np.float32)
    with_lists = TopK(ids, scores, np.array([3]), 4, hit_lists=(scores.tolist(), ids.tolist()))
    without = TopK(ids, scores, np.array([3]), 4)
    a = to_search_result_data(with_lists, all_search_count=7, primary_field_name="pk")
    b = to_search_result_data(without, all_search_count=7, primary_field_name="pk")
    assert a == b and list(a.ids.int_id.data) == [5, 3, 9] and a.top_k == 4 and list(a.topks) == [3]
    empty = to_search_result_data(TopK.empty(2, 3))
    assert empty.ids.HasField("int_id") and list(empty.topks) == [0, 0] and empty.num_queries == 2


def test_constant_arrays_are_shared_and_read_only():
    a = constant(3, 10, np.int64)
    assert a.tolist() == [10, 10, 10] and a.dtype == np.int64
    assert constant(3, 10, np.int64) is a
    with pytest.raises(ValueError):
        a[0] = 1
    big = constant(1 << 20, 0, np.int32)
    assert len(big) == 1 << 20 and not big.any()


@pytest.mark.parametrize("n", [0, 10, 64, 65, 1000, 20_000])
def test_encoder_same_bytes_for_any_number_of_hits(n):
    """Many hits go in as packed score bytes (not a list of floats): the same message, byte for byte,
    as one built field by field — NaN, infinities and -0.0 included."""
    from vecgrid.proto import schema_pb2
    rng = np.random.default_rng(n)
    ids = rng.integers(-2**62, 2**62, n)
    scores = rng.standard_normal(n).astype(np.float32)
    scores[:min(n, 3)] = [np.nan, np.inf, -0.0][:min(n, 3)]
    topks = np.full(max(1, n // 10), 10) if n else np.zeros(3, np.int64)
    got = to_search_result_data(TopK(ids, scores, topks, 10), all_search_count=5, primary_field_name="pk",
                                output_fields=["a"])
    ref = schema_pb2.SearchResultData(num_queries=len(topks), top_k=10, all_search_count=5, topks=topks.tolist(),
                                      primary_field_name="pk", output_fields=["a"])
    ref.scores.extend(scores.tolist())
    ref.ids.int_id.data.extend(ids.tolist())
    ref.ids.int_id.SetInParent()
    assert got.SerializeToString() == ref.SerializeToString()


@pytest.mark.parametrize("index_type,params", INDEXES)
def test_query_batch_in_order_only_without_ties_and_repeated_keys(index_type, params, mgr):
    """nq > 1: the batch skips the merge only when no query has a tie and no key is stored twice;
    either way it equals the merged general path."""
    xb, pks = tied_data()
    rng = np.random.default_rng(2)
    xq = np.vstack([rng.standard_normal((5, D)).astype(np.float32), xb[0], xb[5]])
    distinct = np.arange(N, dtype=np.int64)[::-1] * 3 + 1
    for keys, queries, expect_in_order in ((pks, xq, False), (distinct, xq, False), (distinct, xq[:5], True),
                                           (pks, xq[:5], False)):
        seg = load_segment(build.build_index_file(xb, index_type, "L2", params, use_gpu=False), keys, manager=mgr)
        got = search_segments([seg], queries, K)
        assert got.in_order == expect_in_order
        ref = reference(seg, queries, K)
        np.testing.assert_array_equal(got.ids, ref.ids)
        np.testing.assert_array_equal(got.scores, ref.scores)
        np.testing.assert_array_equal(got.topks, ref.topks)
        np.testing.assert_array_equal(got.sources, ref.sources)


def test_keys_unique_follows_inserts():
    from vecgrid.gpu.rows import RowStore
    rows = RowStore(np.array([3, 1, 2], dtype=np.int64))
    assert rows.keys_unique()
    rows.append(np.array([4], dtype=np.int64))
    assert rows.keys_unique()
    rows.append(np.array([1], dtype=np.int64))
    assert not rows.keys_unique()
