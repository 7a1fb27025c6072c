"""Shard delegators (vecgrid.cluster.querynode.delegator): two QueryNodes over gRPC, sealed segments of
one channel spread over both, growing rows on the leader from the WAL, reads through the leader as a
proxy sends them (``from_shard_leader=False``)."""

from __future__ import annotations

import asyncio
import json
import time

import numpy as np
import pytest

from vecgrid.cluster.querynode import search as querynode_search
from vecgrid.gpu import exprs
from vecgrid.proto import msg_pb2, query_coord_pb2, schema_pb2
from tests.delegator_support import (GROWING_SEGMENT, LEADER, WORKER, K, close, leader_search_request, make_cluster,
                                     search)
from tests.querynode_support import DIM, assert_same_knn, dense, query_request, reference_search, search_request


@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
async def test_search_query_stream_through_the_leader(tmp_path, metric):
    c = await make_cluster(tmp_path, metric)
    try:
        # distribution: one channel + leader view with segments on both nodes
        dist = await c.leader.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        (view,) = dist.leader_views
        assert [ch.channel for ch in dist.channels] == c.ds.channels
        assert {sid: d.nodeID for sid, d in view.segment_dist.items()} == \
            {sid: (LEADER if i % 2 == 0 else WORKER) for i, sid in enumerate(c.ds.segment_ids)}
        assert sorted(s.ID for s in dist.segments) == sorted(c.ds.segment_ids[::2])

        c.insert(200, seed=11)
        ts = c.tick()
        xq = np.random.default_rng(5).standard_normal((6, DIM)).astype(np.float32)
        reply, tk = await search(c, xq, guarantee=ts)
        assert reply.channels_mvcc[c.ds.channels[0]] >= ts
        assert_same_knn(*reference_search(c.full, xq, K, c.mask()), *dense(tk, K))

        dist = await c.leader.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        assert list(dist.leader_views[0].growing_segmentIDs) == [GROWING_SEGMENT]
        assert dist.leader_views[0].num_of_growing_rows == 200

        # with a filter
        age, tag = c.ds.fid("age"), c.ds.fid("tag")
        expr = exprs.and_(exprs.compare(exprs.column(age, schema_pb2.Int32), "<", 40),
                      exprs.term(exprs.column(tag, schema_pb2.VarChar), ["red", "blue"]))
        _, tk = await search(c, xq, expr=expr, guarantee=ts)
        assert_same_knn(*reference_search(c.full, xq, K, c.mask(40, ["red", "blue"])), *dense(tk, K))

        # a delete mid-test reaches sealed segments on both nodes and the growing one
        rows = [int(c.ds.rows_of_segment(sid)[0]) for sid in c.ds.segment_ids] + [650]  # both nodes + growing
        victims = [int(c.full.pks[i]) for i in rows]
        c.delete(victims)
        ts = c.tick()
        _, tk = await search(c, c.full.vectors[rows], guarantee=ts)
        for seg in list(c.leader.node.segments.list()) + list(c.worker.node.segments.list()):
            assert len(seg.runtime_deletes), seg  # forwarded to every sealed segment on both nodes
        _, keys = dense(tk, K)
        assert not set(victims) & {k for row in keys for k in row if k is not None}
        assert_same_knn(*reference_search(c.full, c.full.vectors[rows], K, c.mask()), *dense(tk, K))

        # query: every live row with age < 10, through the leader
        qreq = query_request(c.ds, expr=exprs.compare(exprs.column(age, schema_pb2.Int32), "<", 10),
                             output=[age], from_shard_leader=False)
        qreq.req.guarantee_timestamp = ts
        got = await c.leader.call("Query", qreq)
        assert got.status.code == 0, got.status
        expected = sorted(c.full.pks[c.mask(10)].tolist())
        assert list(got.ids.int_id.data) == expected
        limited = query_request(c.ds, limit=7, from_shard_leader=False)
        got = await c.leader.call("Query", limited)
        assert list(got.ids.int_id.data) == sorted(c.full.pks[c.mask()].tolist())[:7]
        count = await c.leader.call("Query", query_request(c.ds, is_count=True, from_shard_leader=False))
        assert count.fields_data[0].scalars.long_data.data[0] == int(c.mask().sum())

        stream = await c.leader.stream("QueryStream", qreq)
        streamed = sorted(k for msg in stream for k in msg.ids.int_id.data)
        assert streamed == expected

        stats_req = query_coord_pb2.GetStatisticsRequest(dml_channels=c.ds.channels, from_shard_leader=False)
        stats_req.req.collectionID = c.ds.collection_id
        stats = await c.leader.call("GetStatistics", stats_req)
        assert stats.status.code == 0, stats.status
        assert int(stats.stats[0].value) == int(c.mask().sum())
    finally:
        await close(c)


async def test_errors_and_strong_consistency(tmp_path):
    c = await make_cluster(tmp_path, "L2")
    try:
        xq = np.random.default_rng(1).standard_normal((2, DIM)).astype(np.float32)
        # unknown channel -> 500 channel not found
        reply = await c.leader.call("Search", search_request(c.ds, xq, K, channels=["by-dev-nope_0v0"],
                                                             from_shard_leader=False))
        assert reply.status.code == 500 and "channel not found" in reply.status.reason
        # a partition that is not loaded -> 201
        bad = search_request(c.ds, xq, K, partitions=[424242], from_shard_leader=False)
        reply = await c.leader.call("Search", bad)
        assert reply.status.code == 201, reply.status

        # strong consistency: waits for a time tick past the guarantee timestamp
        c.insert(20, seed=2)
        future_ts = c.ts + (3 << 18)
        pending = asyncio.ensure_future(c.leader.call("Search", leader_search_request(c, xq, guarantee=future_ts)))
        await asyncio.sleep(0.4)
        assert not pending.done()
        c.tick(future_ts)
        reply = await asyncio.wait_for(pending, 10)
        assert reply.status.code == 0 and reply.channels_mvcc[c.ds.channels[0]] >= future_ts
        # ... and times out with 10001 when none arrives
        req = leader_search_request(c, xq, guarantee=c.ts + (100 << 18))
        req.req.timeout_timestamp = (int(time.time() * 1000) + 300) << 18
        reply = await c.leader.call("Search", req)
        assert reply.status.code == 10001 and "guarantee timestamp" in reply.status.reason
        assert "records consumed; waiting for the next record" in reply.status.reason  # why: no tick came

        # a stale leader view (a segment of a loaded partition recorded on the worker but gone there) fails the
        # whole request
        sid = c.ds.segment_ids[1]
        (partition,) = c.leader.node.collections.get(c.ds.collection_id).partitions
        sync = query_coord_pb2.SyncDistributionRequest(
            collectionID=c.ds.collection_id,
            channel=c.ds.channels[0],
            actions=[
                query_coord_pb2.SyncAction(
                    type=query_coord_pb2.Set, segmentID=424243, nodeID=WORKER, version=9, partitionID=partition
                )
            ],
        )
        assert (await c.leader.call("SyncDistribution", sync)).code == 0
        reply = await c.leader.call("Search", leader_search_request(c, xq))
        assert reply.status.code != 0 and f"worker({WORKER}) query failed" in reply.status.reason
        # Remove with the node wildcard fixes the view
        sync = query_coord_pb2.SyncDistributionRequest(
            collectionID=c.ds.collection_id,
            channel=c.ds.channels[0],
            actions=[query_coord_pb2.SyncAction(type=query_coord_pb2.Remove, segmentID=424243, nodeID=-1)],
        )
        assert (await c.leader.call("SyncDistribution", sync)).code == 0
        assert (await c.leader.call("Search", leader_search_request(c, xq))).status.code == 0
        # an unknown worker in the view -> the request fails naming it
        sync.actions[0].CopyFrom(
            query_coord_pb2.SyncAction(
                type=query_coord_pb2.Set, segmentID=424244, nodeID=99, version=1, partitionID=partition
            )
        )
        await c.leader.call("SyncDistribution", sync)
        reply = await c.leader.call("Search", leader_search_request(c, xq))
        assert "worker(99) query failed" in reply.status.reason
        # UpdateVersion sets the target version; unknown type -> 5
        sync = query_coord_pb2.SyncDistributionRequest(
            collectionID=c.ds.collection_id,
            channel=c.ds.channels[0],
            actions=[
                query_coord_pb2.SyncAction(type=query_coord_pb2.Remove, segmentID=424244, nodeID=-1),
                query_coord_pb2.SyncAction(
                    type=query_coord_pb2.UpdateVersion,
                    TargetVersion=42,
                    sealedInTarget=[GROWING_SEGMENT],
                    checkpoint=msg_pb2.MsgPosition(timestamp=c.ts),
                ),
            ],
        )
        assert (await c.leader.call("SyncDistribution", sync)).code == 0
        dist = await c.leader.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        assert dist.leader_views[0].TargetVersion == 42 and not dist.leader_views[0].growing_segmentIDs
        sync = query_coord_pb2.SyncDistributionRequest(
            channel=c.ds.channels[0], actions=[query_coord_pb2.SyncAction(type=17)]
        )
        assert (await c.leader.call("SyncDistribution", sync)).code == 5

        # ReleaseSegments with need_transfer removes the segment from the worker and the view
        rel = query_coord_pb2.ReleaseSegmentsRequest(
            collectionID=c.ds.collection_id,
            segmentIDs=[sid],
            shard=c.ds.channels[0],
            need_transfer=True,
            nodeID=WORKER,
            scope=query_coord_pb2.Historical,
        )
        assert (await c.leader.call("ReleaseSegments", rel)).code == 0
        assert sid not in c.worker.node.segments
        dist = await c.leader.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        assert sid not in dist.leader_views[0].segment_dist

        # health: a tsafe lagging wall clock makes the node unhealthy with one JSON reason
        health = await c.leader.stub.CheckHealth(_health_request())
        assert health.isHealthy
        c.leader.node.max_tt_delay_s = 0.0
        health = await c.leader.stub.CheckHealth(_health_request())
        assert not health.isHealthy and len(health.reasons) == 1
        msg = json.loads(health.reasons[0])["unhealthy_cluster_msgs"][0]
        assert msg["role"] == "querynode" and msg["node_id"] == LEADER and msg["reason"]["unhealthy_level"] == 3

        # UnsubDmChannel stops the delegator: a search waiting for tsafe then answers "channel not found"
        # at once (the client asks for the leaders again), not a timeout naming tsafe 0
        waiting = asyncio.ensure_future(c.leader.call("Search", leader_search_request(c, xq, guarantee=c.ts + (100 << 18))))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        started = time.monotonic()
        assert (await c.leader.call("UnsubDmChannel", query_coord_pb2.UnsubDmChannelRequest(
            channel_name=c.ds.channels[0]))).code == 0
        reply = await asyncio.wait_for(waiting, 5)
        assert reply.status.code == 500 and "stopped while the request waited" in reply.status.reason
        assert time.monotonic() - started < 5
        reply = await c.leader.call("Search", leader_search_request(c, xq))
        assert reply.status.code == 500
    finally:
        await close(c)


def _health_request():
    from vecgrid.proto import milvus_pb2

    return milvus_pb2.CheckHealthRequest()


async def test_calls_to_peers_go_out_before_the_leader_searches(tmp_path, monkeypatch):
    """The leader starts its gRPC sub-calls before searching its own segments, so the workers search
    while it does; its own sealed segments and the growing rows are one search (one part to merge)."""
    c = await make_cluster(tmp_path, "L2")
    try:
        events = []
        peers = c.leader.node.peers
        stub_of = peers.stub

        class RecordingStub:
            def __init__(self, node_id):
                self.stub = stub_of(node_id)

            def __getattr__(self, method):
                def call(*args, **kwargs):
                    events.append(method)
                    return getattr(self.stub, method)(*args, **kwargs)
                return call

        real_search = querynode_search.search_segments

        def search_segments(*args):
            events.append("search")
            return real_search(*args)

        monkeypatch.setattr(peers, "stub", RecordingStub)
        monkeypatch.setattr(querynode_search, "search_segments", search_segments)
        c.insert(20, seed=4)
        ts = c.tick()
        xq = np.random.default_rng(4).standard_normal((3, DIM)).astype(np.float32)
        reply, got = await search(c, xq, guarantee=ts)
        assert events[0] == "SearchSegments" and events.count("search") == 2  # the leader's (sealed and growing), the worker's
        assert_same_knn(*reference_search(c.full, xq, K), *dense(got, K))
    finally:
        await close(c)


async def test_growing_rows_of_an_ivf_collection_are_searched_through_their_interim_index(tmp_path):
    """The leader gives its channel's growing segments the interim index of a collection with an
    approximate index: past ``interim_index_rows`` a search goes through it and still finds every
    growing row that is a query's own vector, at distance 0, alongside the sealed segments."""
    c = await make_cluster(tmp_path, "L2", index="IVF_FLAT", index_params={"nlist": 2}, interim_rows=100)
    try:
        c.insert(400, seed=5)
        ts = c.tick()
        xq, pks = c.full.vectors[-400:][::40], c.full.pks[-400:][::40]
        _, got = await search(c, xq, guarantee=ts)
        (growing,) = c.leader.node.delegator_for(c.ds.channels[0]).pipeline.growing.values()
        assert growing.interim is not None and growing._interim_rows == 400
        scores, ids = dense(got, K)
        assert ids[:, 0].tolist() == pks.tolist()
        np.testing.assert_allclose(scores[:, 0], 0, atol=1e-3)
    finally:
        await close(c)
