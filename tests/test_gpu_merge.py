"""Top-k merge (segments, shards, proxy) and SearchResultData output."""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.gpu.columns import FieldColumn
from vecgrid.gpu.merge import TopK, merge_full, merge_topk, round_scores
from vecgrid.gpu.results import (decode_placeholder_group, encode_placeholder_group, from_search_result_data, merge_search_results, to_search_result_data)
from vecgrid.proto import common_pb2, schema_pb2


def random_part(rs, nq, k, pk_pool, metric, *, decimals=None):
    topks = rs.integers(0, k + 1, nq)
    ids, scores = [], []
    for t in topks:
        pk = rs.choice(pk_pool, size=t, replace=False)
        sc = rs.random(t).astype(np.float32)
        if decimals is not None:
            sc = np.round(sc, decimals).astype(np.float32)
        sc = np.sort(sc) if metric == "L2" else -np.sort(-sc)
        ids.append(pk)
        scores.append(sc)
    return TopK(np.concatenate(ids).astype(np.int64), np.concatenate(scores), topks.astype(np.int64), k,
                rows=np.arange(int(topks.sum()), dtype=np.int64))


def reference_merge(parts, k, metric):
    """Per query: best score per pk, sorted by (score, pk), first k."""
    nq = parts[0].nq
    out = []
    for q in range(nq):
        best = {}
        for p in parts:
            ids, sc = p.query(q)
            for i, s in zip(ids.tolist(), sc.tolist()):
                if i not in best or (s < best[i] if metric == "L2" else s > best[i]):
                    best[i] = s
        items = sorted(best.items(), key=lambda t: ((t[1] if metric == "L2" else -t[1]), t[0]))
        out.append(items[:k])
    return out


@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
def test_merge_matches_reference(metric):
    rs = np.random.default_rng(3)
    pool = np.arange(60)
    parts = [random_part(rs, 25, 8, pool, metric, decimals=2) for _ in range(4)]  # rounding makes ties
    merged = merge_topk(parts, 8, metric)
    ref = reference_merge(parts, 8, metric)
    assert merged.nq == 25 and merged.k == 8
    for q in range(25):
        ids, sc = merged.query(q)
        assert ids.tolist() == [i for i, _ in ref[q]]
        np.testing.assert_array_equal(sc, np.array([s for _, s in ref[q]], dtype=np.float32))
    # sources / rows point back into the parts
    for j in range(len(merged)):
        p = parts[merged.sources[j]]
        assert p.ids[merged.rows[j]] == merged.ids[j]


def test_merge_tie_break_by_pk_and_direction():
    a = TopK(np.array([9, 4, 7]), np.array([1.0, 1.0, 2.0], np.float32), np.array([3]), 3)
    b = TopK(np.array([2, 5]), np.array([1.0, 0.5], np.float32), np.array([2]), 3)
    l2 = merge_topk([a, b], 4, "L2")
    assert l2.ids.tolist() == [5, 2, 4, 9] and l2.scores.tolist() == [0.5, 1, 1, 1]
    ip = merge_topk([a, b], 4, "IP")
    assert ip.ids.tolist() == [7, 2, 4, 9]
    # same in any order of the parts (stable, deterministic)
    assert merge_topk([b, a], 4, "L2").ids.tolist() == l2.ids.tolist()


def test_merge_dedups_primary_keys_keeping_best():
    a = TopK(np.array([1, 2]), np.array([0.1, 0.3], np.float32), np.array([2]), 2)
    b = TopK(np.array([2, 3]), np.array([0.2, 0.25], np.float32), np.array([2]), 2)
    m = merge_topk([a, b], 3, "L2")
    assert m.ids.tolist() == [1, 2, 3] and np.allclose(m.scores, [0.1, 0.2, 0.25])
    assert m.sources.tolist() == [0, 1, 1]


def test_round_decimal_like_milvus():
    s = np.array([0.12345, -0.12355, 2.5, -2.5, 1.0049], np.float32)
    np.testing.assert_allclose(round_scores(s, 3), [0.123, -0.124, 2.5, -2.5, 1.005], atol=1e-6)
    np.testing.assert_allclose(round_scores(np.array([2.5, -2.5, 0.5], np.float32), 0), [3, -3, 1])
    assert round_scores(s, -1) is s
    with pytest.raises(errors.ParameterInvalid):
        round_scores(s, 7)
    # rounding happens before ordering, so rounded ties fall back to the pk
    a = TopK(np.array([8, 3]), np.array([0.1201, 0.1204], np.float32), np.array([2]), 2)
    m = merge_topk([a], 2, "L2", round_decimal=3)
    assert m.ids.tolist() == [3, 8] and np.allclose(m.scores, [0.12, 0.12])


def test_varchar_keys_and_empty_parts():
    a = TopK(np.array(["b", "a"]), np.array([1.0, 1.0], np.float32), np.array([2, 0]), 2)
    b = TopK.empty(2, 2, np.int64)
    m = merge_topk([a, b], 2, "L2")
    assert m.ids.tolist() == ["a", "b"] and m.topks.tolist() == [2, 0]
    e = merge_topk([TopK.empty(3, 5)], 5, "IP")
    assert e.topks.tolist() == [0, 0, 0] and len(e) == 0
    with pytest.raises(errors.ParameterInvalid):
        merge_topk([TopK.empty(3, 5), TopK.empty(2, 5)], 5)


def test_search_result_data_round_trip_and_node_merge():
    rs = np.random.default_rng(5)
    pool = np.arange(1000, 1100)
    parts = [random_part(rs, 6, 5, pool, "IP") for _ in range(3)]
    for p in parts:
        n = len(p)
        p.fields = [
            FieldColumn("tag", 101, schema_pb2.VarChar, np.array([f"t{i}" for i in p.ids.tolist()])),
            FieldColumn("n", 102, schema_pb2.Int32, (p.ids % 7).astype(np.int32)),
            FieldColumn("vec", 103, schema_pb2.FloatVector,
                        np.repeat(p.ids[:, None].astype(np.float32), 4, axis=1), 4),
            FieldColumn("flag", 104, schema_pb2.Bool, p.ids % 2 == 0),
        ]
        assert len(p.fields[0]) == n
    blobs = [to_search_result_data(p).SerializeToString() for p in parts]
    back = from_search_result_data(blobs[0])
    np.testing.assert_array_equal(back.ids, parts[0].ids)
    np.testing.assert_array_equal(back.topks, parts[0].topks)
    merged = merge_search_results(blobs, 5, "IP", round_decimal=-1, primary_field_name="pk")
    assert merged.num_queries == 6 and merged.top_k == 5 and merged.primary_field_name == "pk"
    assert list(merged.output_fields) == ["tag", "n", "vec", "flag"]
    ref = merge_topk(parts, 5, "IP")
    assert list(merged.ids.int_id.data) == ref.ids.tolist()
    assert list(merged.topks) == ref.topks.tolist()
    tags = list(merged.fields_data[0].scalars.string_data.data)
    assert tags == [f"t{i}" for i in ref.ids.tolist()]
    assert list(merged.fields_data[1].scalars.int_data.data) == (ref.ids % 7).tolist()
    vec = np.asarray(merged.fields_data[2].vectors.float_vector.data).reshape(-1, 4)
    np.testing.assert_array_equal(vec[:, 0], ref.ids.astype(np.float32))
    assert list(merged.fields_data[3].scalars.bool_data.data) == (ref.ids % 2 == 0).tolist()


def test_str_ids_in_result_data():
    t = TopK(np.array(["x", "y"]), np.array([0.5, 0.25], np.float32), np.array([1, 1]), 1)
    srd = to_search_result_data(t)
    assert srd.ids.WhichOneof("id_field") == "str_id" and list(srd.ids.str_id.data) == ["x", "y"]
    assert list(srd.scores) == [0.5, 0.25] and list(srd.topks) == [1, 1]
    assert from_search_result_data(srd).ids.tolist() == ["x", "y"]


@pytest.mark.parametrize("shape", [(1, 4), (3, 8), (2, 128), (200, 33), (0, 8)])
@pytest.mark.parametrize("tag", ["$0", "t" * 200])
def test_a_hand_encoded_placeholder_group_is_protobufs_own_encoding(shape, tag):
    """encode_placeholder_group writes the wire bytes itself (the proxy's hot path): they must be exactly
    what protobuf writes, lengths past one varint byte included (a 132-byte row, a 200-byte tag)."""
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ours = encode_placeholder_group(x, tag)
    theirs = common_pb2.PlaceholderGroup(placeholders=[common_pb2.PlaceholderValue(
        tag=tag, type=common_pb2.FloatVector, values=[r.tobytes() for r in x])]).SerializeToString()
    assert ours == theirs
    assert encode_placeholder_group(x.astype(np.float64), tag) == theirs   # converted to float32 first


def test_placeholder_group_round_trip():
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_array_equal(decode_placeholder_group(encode_placeholder_group(x), 8), x)
    with pytest.raises(errors.ParameterInvalid):
        decode_placeholder_group(encode_placeholder_group(x), 16)
    half = common_pb2.PlaceholderGroup(placeholders=[common_pb2.PlaceholderValue(
        tag="$0", type=common_pb2.Float16Vector, values=[r.astype(np.float16).tobytes() for r in x])])
    np.testing.assert_allclose(decode_placeholder_group(half.SerializeToString()), x, atol=1e-2)
    binary = common_pb2.PlaceholderGroup(placeholders=[common_pb2.PlaceholderValue(
        tag="$0", type=common_pb2.BinaryVector, values=[b"\x01"])])
    with pytest.raises(errors.ParameterInvalid):
        decode_placeholder_group(binary.SerializeToString())


def test_single_part_fast_path_agrees_with_full_merge():
    rs = np.random.default_rng(8)
    for trial in range(30):
        nq, k = 6, 5
        dense = trial % 2 == 0
        part = random_part(rs, nq, k, np.arange(12), "L2", decimals=1 if trial % 3 == 0 else None)
        if dense:
            part = TopK(rs.choice(12, nq * k), np.sort(rs.integers(0, 4, (nq, k)).astype(np.float32), axis=1).ravel(),
                        np.full(nq, k), k, rows=np.arange(nq * k))
        fast = merge_topk([part], k, "L2")
        full = merge_topk([part, TopK.empty(nq, k)], k, "L2")  # two parts: never the single-part path
        np.testing.assert_array_equal(fast.ids, full.ids)
        np.testing.assert_array_equal(fast.scores, full.scores)
        np.testing.assert_array_equal(fast.topks, full.topks)
    # a repeated key within one query is merged away even from a single part
    dup = TopK(np.array([4, 4, 2]), np.array([0.1, 0.2, 0.3], np.float32), np.array([3]), 3)
    assert merge_topk([dup], 3, "L2").ids.tolist() == [4, 2]


def dense_part(rs, nq, width, k, metric, *, decimals=None, varchar=False):
    """A part holding ``width`` hits for every query (what a segment or a node answers)."""
    ids = np.stack([rs.choice(30, width, replace=False) for _ in range(nq)]).reshape(-1)
    sc = rs.random((nq, width))
    if decimals is not None:
        sc = np.round(sc, decimals)
    sc = np.sort(sc, axis=1) if metric == "L2" else -np.sort(-sc, axis=1)
    keys = np.array([f"k{i:02d}" for i in ids]) if varchar else ids.astype(np.int64)
    return TopK(keys, sc.astype(np.float32).reshape(-1), np.full(nq, width, dtype=np.int64), k,
                rows=np.arange(nq * width, dtype=np.int64))


def assert_merged_as_reference(parts, merged, k, metric, nq):
    """``merged`` holds the reference merge's keys and scores per query, each hit traced to its part."""
    ref = reference_merge(parts, k, metric)
    for q in range(nq):
        ids, sc = merged.query(q)
        assert ids.tolist() == [i for i, _ in ref[q]]
        np.testing.assert_array_equal(sc, np.array([s for _, s in ref[q]], dtype=np.float32))
    for j in range(len(merged)):
        assert parts[merged.sources[j]].ids[merged.rows[j]] == merged.ids[j]


@pytest.mark.parametrize("nq", [1, 7])
@pytest.mark.parametrize("metric", ["L2", "IP"])
def test_dense_and_one_query_merges_match_reference(nq, metric):
    """Parts that are full for every query take the row-wise (nq > 1) or the one-query merge; with
    tied scores, repeated keys and VarChar keys they agree with the reference."""
    rs = np.random.default_rng(nq)
    for trial in range(60):
        k = int(rs.integers(1, 9))
        parts = [dense_part(rs, nq, int(rs.integers(0, k + 1)), k, metric, varchar=trial % 4 == 1,
                            decimals=1 if trial % 3 == 0 else None) for _ in range(int(rs.integers(1, 4)))]
        assert_merged_as_reference(parts, merge_topk(parts, k, metric), k, metric, nq)


@pytest.mark.parametrize("nq", [1, 3])
@pytest.mark.parametrize("metric", ["L2", "IP"])
def test_nan_scores_rank_last_on_every_merge_path(nq, metric):
    a = TopK(np.arange(2 * nq), np.tile(np.array([np.nan, 0.5], np.float32), nq), np.full(nq, 2), 4)
    b = TopK(np.arange(100, 100 + 2 * nq), np.tile(np.array([0.25, 0.75], np.float32), nq), np.full(nq, 2), 4)
    extra = TopK(np.array([999]), np.array([9.0], np.float32), np.array([1] + [0] * (nq - 1)), 4)
    merged = merge_topk([a, b], 4, metric)
    general = merge_topk([a, b, extra], 4, metric)  # ragged parts: the lexsort merge
    expect = [0.25, 0.5, 0.75] if metric == "L2" else [0.75, 0.5, 0.25]
    for q in range(nq):
        ids, sc = merged.query(q)
        assert sc[:3].tolist() == expect and np.isnan(sc[3])
        if q:
            assert general.query(q)[0].tolist() == ids.tolist()


def one_query_parts(rs, k, metric):
    """2-3 parts of one query: up to k of 25 keys each (a key may be in two parts), scores rounded to
    one decimal (ties), each part in the metric's order."""
    for _ in range(int(rs.integers(2, 4))):
        n = int(rs.integers(0, k + 1))
        ids = rs.choice(25, n, replace=False).astype(np.int64)
        sc = np.round(rs.random(n), 1).astype(np.float32)
        yield ids, (np.sort(sc) if metric == "L2" else -np.sort(-sc))


@pytest.mark.parametrize("metric", ["L2", "IP"])
def test_one_query_list_merge_agrees_with_the_array_merge(metric):
    """nq=1 over several small integer-keyed parts (a leader's sealed part with its Python hit lists,
    and its growing part) merges on lists; ids, scores, rows and sources equal the array merge's,
    ties and a key found twice included."""
    rs = np.random.default_rng(11)
    for trial in range(80):
        k = int(rs.integers(1, 11))
        parts = []
        for ids, sc in one_query_parts(rs, k, metric):
            n = len(ids)
            rows = rs.permutation(100)[:n].astype(np.int64)
            lists = (sc.tolist(), ids.tolist()) if trial % 2 else None
            parts.append(TopK(ids, sc, np.array([n], np.int64), k, rows=rows, hit_lists=lists))
        merged = merge_topk(parts, k, metric)
        assert merged.hit_lists is not None   # the list path answered
        general = merge_topk(parts + [TopK.empty(1, k)], k, metric, round_decimal=6)  # forced off it
        ref = reference_merge(parts, k, metric)
        assert merged.ids.tolist() == [i for i, _ in ref[0]] == general.ids.tolist()
        assert merged.scores.dtype == np.float32 and merged.scores.tolist() == general.scores.tolist()
        assert merged.rows.tolist() == general.rows.tolist()
        assert merged.sources.tolist() == general.sources.tolist()
        assert merged.topks.tolist() == [len(ref[0])]
        assert merged.hit_lists == (merged.scores.tolist(), merged.ids.tolist())


@pytest.mark.parametrize("metric", ["L2", "IP"])
@pytest.mark.parametrize("text_keys", [False, True])
def test_one_query_messages_merge_on_lists_as_the_array_merge(metric, text_keys):
    """Partial results of one query without fields (an nq=1 search over several nodes or shards) merge
    straight off the messages: the same ids, scores and topks as the array merge of the same parts,
    ties, a key found twice and empty parts included."""
    from vecgrid.gpu import results

    rs = np.random.default_rng(17)
    for _ in range(60):
        k = int(rs.integers(1, 11))
        parts = []
        for ids, sc in one_query_parts(rs, k, metric):
            keys = ids.astype(str) if text_keys else ids
            parts.append(to_search_result_data(TopK(keys, sc, np.array([len(ids)], np.int64), k)).SerializeToString())
        fast = results._merge_one_query([schema_pb2.SearchResultData.FromString(b) for b in parts], k, metric, "pk")
        assert fast is not None   # the list path answers these
        merged = merge_search_results(parts, k, metric, primary_field_name="pk")
        general = merge_search_results([from_search_result_data(b) for b in parts], k, metric,
                                       primary_field_name="pk")   # TopK parts: the array path
        assert merged == fast
        assert list(merged.scores) == list(general.scores)
        assert merged.ids == general.ids and list(merged.topks) == list(general.topks)
        assert merged.num_queries == general.num_queries == 1 and merged.top_k == general.top_k == k
        assert merged.primary_field_name == "pk"


def test_one_query_messages_merge_leaves_the_rest_to_the_array_merge():
    """Keys of both kinds are refused as by the array merge; results of several queries, a NaN score
    and parts that are all empty take the array path."""
    from vecgrid.gpu import results

    def blob(keys, scores, nq=1):
        return to_search_result_data(TopK(np.asarray(keys), np.asarray(scores, np.float32),
                                          np.array([len(keys)] + [0] * (nq - 1), np.int64), 3)).SerializeToString()

    with pytest.raises(errors.ParameterInvalid):
        merge_search_results([blob([1, 2], [0.1, 0.2]), blob(["a"], [0.3])], 3, "L2")
    msgs = [schema_pb2.SearchResultData.FromString(b) for b in (blob([1], [0.1], nq=2), blob([2], [0.2], nq=2))]
    assert results._merge_one_query(msgs, 3, "L2", "") is None
    assert merge_search_results(msgs, 3, "L2").num_queries == 2
    nan = [schema_pb2.SearchResultData.FromString(b) for b in (blob([1], [float("nan")]), blob([2], [0.2]))]
    assert results._merge_one_query(nan, 3, "L2", "") is None
    empty = schema_pb2.SearchResultData(num_queries=0, top_k=3)
    assert results._merge_one_query([empty, empty], 3, "L2", "") is None
    assert merge_search_results([empty, empty], 3, "L2").num_queries == 0


def ragged_part(rs, nq, k, metric, keys_from, *, ties=False):
    """A part holding 0..k hits per query (an IVF segment whose probed lists hold fewer than k rows for
    some queries), keys drawn from ``keys_from`` + 0..29."""
    counts = rs.integers(0, k + 1, nq)
    ids = np.concatenate([rs.choice(30, c, replace=False) for c in counts]).astype(np.int64) + keys_from
    scores = []
    for c in counts:
        sc = np.round(rs.random(c), 1) if ties else rs.random(c)
        scores.append(np.sort(sc) if metric == "L2" else -np.sort(-sc))
    return TopK(ids, np.concatenate(scores).astype(np.float32), counts.astype(np.int64), k,
                rows=np.arange(len(ids), dtype=np.int64))


@pytest.mark.parametrize("metric", ["L2", "IP"])
def test_ragged_parts_merge_row_wise_and_match_reference(metric, monkeypatch):
    """Parts short of hits for some queries (a sealed IVF segment and a growing segment probed through
    its lists) merge row by row, blanks sorting last; with ties or a key in two parts they take the
    general merge; both agree with the reference."""
    import vecgrid.gpu.merge as merge_module

    rs = np.random.default_rng(5)
    general = merge_module._sorted_order
    calls = []
    monkeypatch.setattr(merge_module, "_sorted_order", lambda *a: calls.append(1) or general(*a))
    for trial in range(60):
        k, nq = int(rs.integers(1, 9)), 7
        clash = trial % 3 == 0   # tied scores and keys found by two parts
        parts = [ragged_part(rs, nq, k, metric, 0 if clash else 100 * i, ties=clash) for i in range(2)]
        before = len(calls)
        assert_merged_as_reference(parts, merge_topk(parts, k, metric), k, metric, nq)
        if not clash:
            assert len(calls) == before, "distinct scores and keys merge row by row"


def full_parts(rs, count, nq, k, metric, *, rows_per_part=50, decimals=None, shared_keys=False):
    """faiss's arrays of ``count`` parts, each with ``k`` hits per query sorted best first, and each part's
    row -> key map (keys overlap across parts when ``shared_keys``: the same row loaded twice)."""
    D = rs.random((count, nq, k)).astype(np.float32)
    if decimals is not None:
        D = np.round(D, decimals).astype(np.float32)
    D = np.sort(D, axis=2) if metric == "L2" else -np.sort(-D, axis=2)
    rows = np.stack([np.stack([rs.choice(rows_per_part, size=k, replace=False) for _ in range(nq)])
                     for _ in range(count)]).astype(np.int64)
    keys = [(np.arange(rows_per_part, dtype=np.int64) * 7 + (0 if shared_keys else s * 1000))[::-1].copy()
            for s in range(count)]
    return D, rows, keys


def as_parts(D, rows, keys, k):
    return [TopK.from_dense(D[s], rows[s], k, keys[s]) for s in range(len(keys))]


@pytest.mark.parametrize("metric", ["L2", "IP"])
@pytest.mark.parametrize("nq", [1, 37])
def test_full_parts_merge_as_merge_topk_merges_them(metric, nq):
    # ties on scores (two decimals) break by key, then part: the order merge_topk gives
    rs = np.random.default_rng(nq)
    for decimals in (None, 2):
        D, rows, keys = full_parts(rs, 6, nq, 10, metric, decimals=decimals)
        got = merge_full(D, rows, keys, 10, metric)
        want = merge_topk(as_parts(D, rows, keys, 10), 10, metric)
        assert got is not None
        for field in ("ids", "scores", "topks", "rows", "sources"):
            assert np.array_equal(getattr(got, field), getattr(want, field)), (field, decimals)


def test_full_parts_merge_declines_what_only_merge_topk_handles():
    rs = np.random.default_rng(3)
    D, rows, keys = full_parts(rs, 3, 4, 5, "L2", shared_keys=True, rows_per_part=6)
    assert merge_full(D, rows, keys, 5, "L2") is None   # a key twice among the chosen: kept once there
    D, rows, keys = full_parts(rs, 3, 4, 5, "L2")
    short = rows.copy()
    short[1, 2, 4] = -1   # faiss's padding: a part short of hits for one query
    assert merge_full(D, short, keys, 5, "L2") is None
    nan = D.copy()
    nan[0, 0, 0] = np.nan
    assert merge_full(nan, rows, keys, 5, "L2") is None
    assert merge_full(D, rows, [k.astype(str) for k in keys], 5, "L2") is None   # VarChar keys
    assert merge_full(D[:, :, :4], rows[:, :, :4], keys, 5, "L2") is None   # fewer than k per query
    assert merge_full(D, rows, keys, 5, "L2") is not None
