"""QueryNode SearchSegments / Search over gRPC against a numpy reference: FLAT and IVF_FLAT, L2 / IP / COSINE,
Int64 and VarChar keys, filters, output fields, segment and partition selection, deletes and MVCC, errors."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.cluster.querynode import search
from vecgrid.gpu import exprs
from vecgrid.gpu.results import encode_placeholder_group, from_search_result_data
from vecgrid.proto import internal_pb2, query_coord_pb2, schema_pb2
from tests.querynode_support import (DIM, NodeHarness, assert_same_knn, dense, import_collection, reference_search,
                                     search_request)

pytest.importorskip("faiss")

K = 10


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("qn-search")
    return {
        "flat_l2": import_collection(root, "flat_l2", metric="L2", index="FLAT", n=2000, seed=1),
        "ivf_ip": import_collection(root, "ivf_ip", metric="IP", index="IVF_FLAT", index_params={"nlist": 8},
                                    n=2000, seed=2),
        "cos_str": import_collection(root, "cos_str", metric="COSINE", index="FLAT", n=1500, shards=1,
                                     segment_rows=600, str_pk=True, seed=3),
    }


@pytest.fixture
async def qn(datasets):
    h = await NodeHarness(next(iter(datasets.values())).data_dir).start()
    yield h
    await h.stop()


def _queries(ds, nq: int = 6, seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    fresh = rng.standard_normal((nq - 2, DIM)).astype(np.float32)
    return np.vstack([ds.vectors[[5, 123]], fresh])  # two queries equal to stored rows


async def _search(h, req):
    reply = await h.call("SearchSegments", req)
    assert reply.status.code == 0, reply.status
    return reply, from_search_result_data(reply.sliced_blob)


def _mask(ds, age_below=None, tags=None, drop_rows=()):
    mask = np.ones(len(ds.pks), dtype=bool)
    if age_below is not None:
        mask &= ds.columns["age"] < age_below
    if tags is not None:
        mask &= np.isin(ds.columns["tag"], tags)
    mask[list(drop_rows)] = False
    return mask


@pytest.mark.parametrize("name", ["flat_l2", "ivf_ip", "cos_str"])
async def test_search_matches_numpy(qn, datasets, name):
    ds = datasets[name]
    await qn.load(ds)
    xq = _queries(ds)
    reply, tk = await _search(qn, search_request(ds, xq, K))
    assert reply.metric_type == ds.metric and reply.num_queries == len(xq) and reply.top_k == K
    assert sorted(reply.sealed_segmentIDs_searched) == sorted(ds.segment_ids)
    assert list(reply.channelIDs_searched) == ds.channels
    assert reply.all_search_count == len(ds.pks)
    assert list(tk.topks) == [K] * len(xq)
    D, keys = dense(tk, K)
    assert_same_knn(*reference_search(ds, xq, K), D, keys)
    if ds.metric != "IP":  # a stored vector finds itself first
        assert keys[0, 0] == ds.pks[5] and keys[1, 0] == ds.pks[123]

    # a filter (Expr tree) and output fields, the primary key and the vector included
    age, tag, vec, pk = ds.fid("age"), ds.fid("tag"), ds.vec_fid, ds.fid(ds.pk_name)
    pk_type = schema_pb2.VarChar if name == "cos_str" else schema_pb2.Int64
    expr = exprs.and_(exprs.compare(exprs.column(age, schema_pb2.Int32), "<", 40),
                  exprs.term(exprs.column(tag, schema_pb2.VarChar), ["red", "blue"]))
    reply, tk = await _search(qn, search_request(ds, xq, K, expr=expr, output=[age, tag, vec, pk]))
    D, keys = dense(tk, K)
    assert_same_knn(*reference_search(ds, xq, K, _mask(ds, 40, ["red", "blue"])), D, keys)
    assert [c.name for c in tk.fields] == ["age", "tag", "vec", ds.pk_name]
    row_of = {k: i for i, k in enumerate(ds.pks.tolist())}
    rows = np.asarray([row_of[k] for k in tk.ids.tolist()])
    np.testing.assert_array_equal(tk.fields[0].values, ds.columns["age"][rows])
    np.testing.assert_array_equal(tk.fields[1].values, ds.columns["tag"][rows])
    np.testing.assert_allclose(tk.fields[2].values, ds.vectors[rows], rtol=1e-6)
    assert tk.fields[3].values.tolist() == tk.ids.tolist()
    assert all(v < 40 for v in tk.fields[0].values) and set(tk.fields[1].values) <= {"red", "blue"}

    # a filter on the primary key
    few = ds.pks[[5, 9, 700]].tolist()
    pk_expr = exprs.term(exprs.column(pk, pk_type, is_primary_key=True), few)
    reply, tk = await _search(qn, search_request(ds, xq[:2], K, expr=pk_expr))
    assert list(tk.topks) == [3, 3] and set(tk.ids.tolist()) == set(few)

    # Search from a shard leader is SearchSegments
    leader = await qn.call("Search", search_request(ds, xq, K))
    plain = await qn.call("SearchSegments", search_request(ds, xq, K))
    assert leader.status.code == 0 and leader.sliced_blob == plain.sliced_blob


async def test_segment_partition_and_scope_selection(qn, datasets):
    ds = datasets["flat_l2"]
    await qn.load(ds)
    xq = _queries(ds)
    chosen = ds.segment_ids[:2]
    rows = np.concatenate([ds.rows_of_segment(s) for s in chosen])
    mask = np.zeros(len(ds.pks), dtype=bool)
    mask[rows] = True
    reply, tk = await _search(qn, search_request(ds, xq, K, segment_ids=chosen))
    assert sorted(reply.sealed_segmentIDs_searched) == sorted(chosen)
    assert_same_knn(*reference_search(ds, xq, K, mask), *dense(tk, K))

    # one channel's segments when no segment is named
    channel = ds.channels[1]
    rows = np.concatenate([ds.rows_of_segment(s) for s in ds.segments_of(channel)])
    mask[:] = False
    mask[rows] = True
    reply, tk = await _search(qn, search_request(ds, xq, K, channels=[channel]))
    assert sorted(reply.sealed_segmentIDs_searched) == sorted(ds.segments_of(channel))
    assert_same_knn(*reference_search(ds, xq, K, mask), *dense(tk, K))

    # a partition the collection does not have: nothing to search
    reply, tk = await _search(qn, search_request(ds, xq, K, partitions=[987654]))
    assert len(tk) == 0 and list(tk.topks) == [0] * len(xq) and not reply.sealed_segmentIDs_searched
    # scope Streaming: no growing data on a worker
    reply, tk = await _search(qn, search_request(ds, xq, K, scope=query_coord_pb2.Streaming))
    assert len(tk) == 0
    # round_decimal and topk larger than the rows allowed
    reply, tk = await _search(qn, search_request(ds, xq[:1], 50, expr=exprs.compare(
        exprs.column(ds.fid("age"), schema_pb2.Int32), "==", 3)))
    assert tk.topks[0] == int(np.count_nonzero(ds.columns["age"] == 3))


async def test_deletes_and_mvcc(qn, datasets):
    ds = datasets["ivf_ip"]
    await qn.load(ds)
    xq = _queries(ds)
    _, tk = await _search(qn, search_request(ds, xq, K))
    top = tk.ids[:3].tolist()  # query 0's best three
    row_of = {k: i for i, k in enumerate(ds.pks.tolist())}
    delete_ts = ds.import_ts + 100
    by_segment = {}
    for sid in ds.segment_ids:
        keys = set(ds.pks[ds.rows_of_segment(sid)].tolist())
        for k in top:
            if k in keys:
                by_segment.setdefault(sid, []).append(k)
    for sid, keys in by_segment.items():
        status = await qn.call(
            "Delete",
            query_coord_pb2.DeleteRequest(
                collection_id=ds.collection_id,
                segment_id=sid,
                primary_keys={"int_id": {"data": keys}},
                timestamps=[delete_ts] * len(keys),
                scope=query_coord_pb2.Historical,
            ),
        )
        assert status.code == 0, status
    drop = [row_of[k] for k in top]
    _, tk = await _search(qn, search_request(ds, xq, K))
    assert not set(top) & set(tk.ids.tolist())
    assert_same_knn(*reference_search(ds, xq, K, _mask(ds, drop_rows=drop)), *dense(tk, K))
    # a snapshot before the delete still sees the rows; one before the import sees nothing
    _, tk = await _search(qn, search_request(ds, xq, K, mvcc=delete_ts - 1))
    assert tk.ids[:3].tolist() == top
    _, tk = await _search(qn, search_request(ds, xq, K, mvcc=ds.import_ts - 1))
    assert len(tk) == 0


async def test_hybrid_sub_requests(qn, datasets):
    ds = datasets["flat_l2"]
    await qn.load(ds)
    xq = _queries(ds, 3)
    one = search_request(ds, xq, 5).req
    two = search_request(ds, xq[:2], 7, expr=exprs.compare(exprs.column(ds.fid("age"), schema_pb2.Int32), ">", 50)).req
    req = search_request(ds, xq, 5)
    req.req.is_advanced = True
    for sub in (one, two):
        req.req.sub_reqs.add(serialized_expr_plan=sub.serialized_expr_plan, placeholder_group=sub.placeholder_group,
                             nq=sub.nq, topk=sub.topk, metricType="L2")
    reply = await qn.call("SearchSegments", req)
    assert reply.status.code == 0 and reply.is_advanced and len(reply.sub_results) == 2
    first, second = (from_search_result_data(s.sliced_blob) for s in reply.sub_results)
    assert [s.req_index for s in reply.sub_results] == [0, 1] and reply.sub_results[1].top_k == 7
    assert_same_knn(*reference_search(ds, xq, 5), *dense(first, 5))
    assert_same_knn(*reference_search(ds, xq[:2], 7, ds.columns["age"] > 50), *dense(second, 7))


async def test_search_errors(qn, datasets):
    ds = datasets["flat_l2"]
    xq = _queries(ds, 2)

    async def status(req, method="SearchSegments"):
        return (await qn.call(method, req)).status

    st = await status(search_request(ds, xq, K))
    assert st.code == 101 and st.reason == f"collection not loaded[collection={ds.collection_id}]"
    await qn.load(ds, ds.segment_ids[:2])
    st = await status(search_request(ds, xq, K, segment_ids=[ds.segment_ids[0], ds.segment_ids[3]]))
    assert st.code == 601 and st.reason == f"segment not loaded[segment={ds.segment_ids[3]}]"
    st = await status(search_request(ds, xq, K, plan=b"\xff\xff\xff not a plan"))
    assert st.code == 1100 and "cannot decode the search plan" in st.reason
    st = await status(search_request(ds, xq, K, placeholder=b"\x0a\x05garbage-bytes"))
    assert st.code == 1100 and "placeholder" in st.reason
    st = await status(search_request(ds, xq, K, placeholder=encode_placeholder_group(np.ones((2, DIM + 1)))))
    assert st.code == 1100 and "dimension" in st.reason
    st = await status(search_request(ds, xq, 16385))
    assert st.code == 1100 and "16384" in st.reason
    st = await status(search_request(ds, xq, K, metric="IP"))
    assert st.code == 1100 and "metric type not match" in st.reason
    st = await status(search_request(ds, xq, K, output=[4242]))
    assert st.code == 1700
    st = await status(
        search_request(ds, xq, K, expr=exprs.compare(exprs.column(ds.fid("tag"), schema_pb2.VarChar), ">", 3))
    )
    assert st.code == 1100
    # Search from a proxy needs the channel's delegator (milestone 2)
    st = await status(search_request(ds, xq, K, from_shard_leader=False), "Search")
    assert st.code == 500 and st.reason.startswith(f"channel not found[channel={ds.channels[0]}]")
    st = await status(search_request(datasets["cos_str"], xq, K, from_shard_leader=False), "Search")
    assert st.code == 101  # the collection comes first
    # a bad request changed nothing
    reply, tk = await _search(qn, search_request(ds, xq, K, segment_ids=ds.segment_ids[:2]))
    assert len(tk) == 2 * K


async def test_empty_request_plan_arms(qn, datasets):
    ds = datasets["flat_l2"]
    await qn.load(ds, ds.segment_ids[:1])
    inner = internal_pb2.SearchRequest(collectionID=ds.collection_id)
    reply = await qn.call("SearchSegments", query_coord_pb2.SearchRequest(req=inner, from_shard_leader=True))
    assert reply.status.code == 1100 and "not a vector search plan" in reply.status.reason


@pytest.fixture
def offloaded(monkeypatch) -> list:
    """The functions the search module hands to a worker thread, in order."""
    handed: list = []
    real_to_thread = search.asyncio.to_thread

    async def to_thread(fn, *args, **kwargs):
        handed.append(fn)
        return await real_to_thread(fn, *args, **kwargs)

    monkeypatch.setattr(search.asyncio, "to_thread", to_thread)
    return handed


async def test_tiny_searches_run_on_the_loop_larger_ones_in_a_thread(qn, datasets, monkeypatch, offloaded):
    """A search of a few hundred microseconds is not worth a thread hand-off; the answer is the same
    either way."""
    ds = datasets["flat_l2"]
    await qn.load(ds)
    req = search_request(ds, _queries(ds), K)
    assert search.search_work(qn.node.segments.list(ds.collection_id), req.req) <= search.INLINE_SEARCH_WORK
    inline, _ = await _search(qn, req)
    assert search.search_segments not in offloaded
    monkeypatch.setattr(search, "INLINE_SEARCH_WORK", 0)
    monkeypatch.setattr(search, "LONE_SEARCH_WORK", 0)   # a lone search's bound too
    threaded, _ = await _search(qn, req)
    assert search.search_segments in offloaded
    assert inline.sliced_blob == threaded.sliced_blob


async def test_a_lone_search_stays_on_the_loop_up_to_its_bound_not_beside_other_work(qn, datasets, monkeypatch,
                                                                                   offloaded):
    """A search above the tiny bound still runs on the loop when nothing else is pending or running on the
    node (a lone client: the thread hand-off would only add to its latency), and goes to a thread when
    another search is running; the answer is the same either way."""
    ds = datasets["flat_l2"]
    await qn.load(ds)
    node = qn.node
    req = search_request(ds, _queries(ds), K)
    work = search.search_work(qn.node.segments.list(ds.collection_id), req.req)
    assert 0 < work <= search.LONE_SEARCH_WORK
    monkeypatch.setattr(search, "INLINE_SEARCH_WORK", work - 1)   # above the tiny bound
    node.batcher._last_arrival = float("-inf")
    lone = await node.search_segments(req)
    assert search.search_segments not in offloaded
    node.batcher._running[("another search",)] = 1   # a batch of another key searching in a thread
    try:
        node.batcher._last_arrival = float("-inf")
        beside = await node.search_segments(req)
    finally:
        del node.batcher._running[("another search",)]
    assert search.search_segments in offloaded
    assert lone.sliced_blob == beside.sliced_blob


async def test_concurrent_small_searches_share_one_engine_search(qn, datasets, monkeypatch):
    """Micro-batching: searches arriving together for the same segments and plan become one engine
    search of all their queries, and each caller gets what it would have got alone — also the
    caller whose request is malformed (its own error) and one with another plan (searched apart)."""
    ds = datasets["ivf_ip"]
    await qn.load(ds)
    xq = _queries(ds, nq=8)
    reqs = [search_request(ds, xq[i:i + 1], K, output=[ds.field_ids["age"]]) for i in range(8)]
    alone = [(await _search(qn, r))[0] for r in reqs]
    other_plan = search_request(ds, xq[:1], K + 1)
    bad = search_request(ds, xq[:1, :DIM - 1], K)
    calls = []
    real = search.engine_search

    def engine_search(engines, queries, k, **kw):
        calls.append(len(queries))
        return real(engines, queries, k, **kw)

    monkeypatch.setattr(search, "engine_search", engine_search)
    node = qn.node
    node.batcher.window_s = 3600.0  # the searches above came within the window: these are not alone
    replies = await asyncio.gather(*(node.search_segments(r) for r in reqs), node.search_segments(other_plan),
                                   node.search_segments(bad), return_exceptions=True)
    assert sorted(calls) == [1, 8]   # the eight together, the other plan alone, the bad one never
    for got, want in zip(replies[:8], alone):
        assert got.sliced_blob == want.sliced_blob and got.num_queries == 1
        assert list(got.sealed_segmentIDs_searched) == list(want.sealed_segmentIDs_searched)
    assert from_search_result_data(replies[8].sliced_blob).k == K + 1
    assert isinstance(replies[9], errors.ParameterInvalid)


async def test_a_lone_search_waits_for_no_batch_window(qn, datasets, monkeypatch):
    """A search with no other of its kind pending or running leaves at once — on the loop when tiny, else on
    the next loop iteration — and never waits out ``batch_window_ms``, even right after another search."""
    ds = datasets["flat_l2"]
    await qn.load(ds)
    node = qn.node
    node.batcher.window_s = 3600.0   # a window nothing could hide: a lone search that waited it would hang
    xq = _queries(ds, nq=2)
    timers = []
    loop = asyncio.get_running_loop()
    real_call_later = loop.call_later

    def call_later(delay, callback, *args, **kwargs):
        if getattr(callback, "__self__", None) is node.batcher:
            timers.append(delay)
        return real_call_later(delay, callback, *args, **kwargs)
    monkeypatch.setattr(loop, "call_later", call_later)
    for inline_work in (search.INLINE_SEARCH_WORK, 0):   # tiny (on the loop), then in a thread
        monkeypatch.setattr(search, "INLINE_SEARCH_WORK", inline_work)
        monkeypatch.setattr(search, "LONE_SEARCH_WORK", inline_work)
        for i in range(2):   # the second comes right after the first, within the window
            reply = await asyncio.wait_for(node.search_segments(search_request(ds, xq[i:i + 1], K)), 30)
            assert reply.status.code == 0 and reply.num_queries == 1
    assert timers == []
