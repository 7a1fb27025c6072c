"""QueryNode micro-batching (SearchBatcher): concurrent small searches of the same segments and plan
become one engine search whose hits are split back — each caller gets what it would get alone."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.cluster.querynode import search
from vecgrid.gpu.results import from_search_result_data
from tests.querynode_support import DIM, NodeHarness, import_collection, search_request

pytest.importorskip("faiss")

K = 10


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("qn-batch")
    return {
        "ivf": import_collection(root, "ivf", metric="L2", index="IVF_FLAT", index_params={"nlist": 8},
                                 n=2000, seed=4),
        "str": import_collection(root, "str", metric="COSINE", index="FLAT", n=1200, shards=1,
                                 segment_rows=500, str_pk=True, seed=5),
    }


@pytest.fixture
async def qn(datasets):
    h = await NodeHarness(next(iter(datasets.values())).data_dir).start()
    yield h
    await h.stop()


def _target(h: NodeHarness, req):
    node = h.node
    coll = node.collections.require(req.req.collectionID)
    segments = node._select(coll, req.req.partitionIDs, req.segmentIDs, req.scope, req.dml_channels)
    return coll, segments


def _same_reply(got, alone) -> None:
    assert got.status.code == 0 and alone.status.code == 0
    assert got.num_queries == alone.num_queries and got.top_k == alone.top_k
    assert got.metric_type == alone.metric_type
    assert list(got.sealed_segmentIDs_searched) == list(alone.sealed_segmentIDs_searched)
    assert list(got.channelIDs_searched) == list(alone.channelIDs_searched)
    assert got.all_search_count == alone.all_search_count
    a, b = from_search_result_data(got.sliced_blob), from_search_result_data(alone.sliced_blob)
    assert a.topks.tolist() == b.topks.tolist()
    assert a.ids.tolist() == b.ids.tolist()
    np.testing.assert_array_equal(a.scores, b.scores)


@pytest.mark.parametrize("name", ["ivf", "str"])
async def test_concurrent_searches_are_batched_and_split_back(qn, datasets, monkeypatch, name):
    ds = datasets[name]
    await qn.load(ds)
    rng = np.random.default_rng(3)
    sizes = [1] * 9 + [3, 2, 1]  # mostly single queries, a few small batches of their own
    reqs = [search_request(ds, np.vstack([ds.vectors[[7 * i]], rng.standard_normal((n - 1, DIM))]).astype(np.float32),
                           K) for i, n in enumerate(sizes)]
    batches = []
    real = search.search_batch

    def spy(coll, segments, items, channels):
        batches.append(len(items))
        return real(coll, segments, items, channels)

    monkeypatch.setattr(search, "search_batch", spy)
    batcher = qn.node.batcher
    monkeypatch.setattr(batcher, "window_s", 30.0)  # every search after the first is within the window
    got = await asyncio.gather(*(batcher.search(*_target(qn, r)[:2], r.req, r.dml_channels) for r in reqs))
    assert batches == [len(reqs) - 1]  # the first ran at once; the others arrived while it ran: one batch
    for r, g in zip(reqs, got):
        coll, segments = _target(qn, r)
        _same_reply(g, search.search_segments(coll, segments, r.req, r.dml_channels))
        assert g.reqID == r.req.reqID


async def test_a_malformed_request_fails_alone(qn, datasets, monkeypatch):
    ds = datasets["ivf"]
    await qn.load(ds)
    good = [search_request(ds, ds.vectors[[i]], K) for i in (1, 2, 3)]
    bad = search_request(ds, ds.vectors[[4]], K, placeholder=b"\xff\x00 not a placeholder group")
    batcher = qn.node.batcher
    monkeypatch.setattr(batcher, "window_s", 30.0)
    reqs = [good[0], bad, good[1], good[2]]
    got = await asyncio.gather(*(batcher.search(*_target(qn, r), r.req, r.dml_channels) for r in reqs),
                               return_exceptions=True)
    assert isinstance(got[1], errors.ParameterInvalid)
    for r, g in zip(reqs[::2] + reqs[3:], [got[0], got[2], got[3]]):
        coll, segments = _target(qn, r)
        _same_reply(g, search.search_segments(coll, segments, r.req, r.dml_channels))
