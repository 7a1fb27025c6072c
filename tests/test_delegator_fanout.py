"""Shard delegators (vecgrid.cluster.querynode.delegator): two QueryNodes over gRPC, sealed segments of
one channel spread over both, growing rows on the leader from the WAL, reads through the leader as a
proxy sends them (``from_shard_leader=False``)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time

import grpc
import numpy as np
import pyarrow as pa
import pytest

from vecgrid.cluster.querynode import search as search_mod
from vecgrid.gpu import exprs as E
from vecgrid.gpu.results import from_search_result_data
from vecgrid.proto import data_coord_pb2, msg_pb2, query_coord_pb2 as Q, schema_pb2
from vecgrid.storage.dml import DeleteBatch, InsertBatch, TimeTick
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import MessageKind, Wal
from tests.querynode_support import (DIM, TAGS, NodeHarness, assert_same_knn, dense, import_collection,
                                     load_request, query_request, reference_search, search_request)

K = 10
LEADER, WORKER = 7, 8
GROWING_SEGMENT = 990001


class Cluster:
    """Leader + worker nodes, one watched channel, and a WAL writer for that channel."""

    def __init__(self, ds, leader, worker, writer):
        self.ds, self.leader, self.worker, self.writer = ds, leader, worker, writer
        self.ts = ds.import_ts + (1 << 18)
        self.partition = ds.summary["segments"][0]["partition_id"]
        self.full = ds          # ds plus the growing rows
        self.deleted: set = set()

    def next_ts(self) -> int:
        self.ts += 1 << 18
        return self.ts

    def insert(self, n: int, seed: int) -> int:
        rng = np.random.default_rng(seed)
        vectors = rng.standard_normal((n, DIM)).astype(np.float32)
        start = int(self.full.pks.max()) + 1
        pks = np.arange(start, start + n, dtype=np.int64)
        age = (np.arange(n) % 97).astype(np.int32)
        tag = np.asarray([TAGS[i % 5] for i in range(n)])
        score = rng.uniform(0, 1, n)
        ts = self.next_ts()
        batch = InsertBatch(self.ds.collection_id, self.partition, GROWING_SEGMENT, pa.array(pks, pa.int64()),
                            np.full(n, ts, np.uint64), pa.record_batch({
                                "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                                "age": pa.array(age), "tag": pa.array(tag), "score": pa.array(score)}))
        self.writer.append(MessageKind.INSERT, ts, batch.encode())
        self.writer.sync()
        cols = {"age": np.concatenate([self.full.columns["age"], age]),
                "tag": np.concatenate([self.full.columns["tag"], tag]),
                "score": np.concatenate([self.full.columns["score"], score])}
        self.full = dataclasses.replace(self.full, pks=np.concatenate([self.full.pks, pks]),
                                        vectors=np.concatenate([self.full.vectors, vectors]), columns=cols)
        return ts

    def delete(self, pks) -> int:
        ts = self.next_ts()
        self.writer.append(MessageKind.DELETE, ts, DeleteBatch(
            self.ds.collection_id, -1, pa.array(list(pks), pa.int64()), np.full(len(pks), ts, np.uint64)).encode())
        self.writer.sync()
        self.deleted |= set(int(p) for p in pks)
        return ts

    def tick(self, ts: int | None = None) -> int:
        ts = ts or self.next_ts()
        self.writer.append(MessageKind.TIMETICK, ts, TimeTick(ts).encode())
        self.writer.sync()
        return ts

    def mask(self, age_below=None, tags=None) -> np.ndarray:
        m = ~np.isin(self.full.pks, list(self.deleted))
        if age_below is not None:
            m &= self.full.columns["age"] < age_below
        if tags is not None:
            m &= np.isin(self.full.columns["tag"], tags)
        return m


async def make_cluster(tmp_path, metric: str) -> Cluster:
    ds = import_collection(tmp_path, f"deleg_{metric.lower()}", metric=metric, index="FLAT", n=600, shards=1,
                           segment_rows=150, seed=3)
    (channel,) = ds.channels
    writer = Wal(DataDir(ds.data_dir).wal_root).open_writer(channel, fsync="always")
    leader = await NodeHarness(ds.data_dir, LEADER).start()
    worker = await NodeHarness(ds.data_dir, WORKER).start()
    template = load_request(ds)
    watch = Q.WatchDmChannelsRequest(
        nodeID=LEADER, collectionID=ds.collection_id, schema=template.schema, load_meta=template.load_meta,
        index_info_list=template.index_info_list, version=1,
        infos=[data_coord_pb2.VchannelInfo(collectionID=ds.collection_id, channelName=channel)])
    watch.base.properties[f"vecgrid.node_address.{WORKER}"] = worker.node.address
    status = await leader.call("WatchDmChannels", watch)
    assert status.code == 0, status
    segs = ds.segment_ids
    for dst, ids in ((LEADER, segs[::2]), (WORKER, segs[1::2])):
        await leader.load(ds, ids, dst_node_id=dst, need_transfer=True, version=5)
    return Cluster(ds, leader, worker, writer)


async def close(c: Cluster) -> None:
    await c.leader.stop()
    await c.worker.stop()
    c.writer.close()


def _search(c: Cluster, xq, expr=None, guarantee=0, **kw):
    req = search_request(c.ds, xq, K, expr=expr, from_shard_leader=False, scope=Q.All, **kw)
    req.req.guarantee_timestamp = guarantee
    return req


async def search(c: Cluster, xq, expr=None, guarantee=0):
    reply = await c.leader.call("Search", _search(c, xq, expr, guarantee))
    assert reply.status.code == 0, reply.status
    return reply, from_search_result_data(reply.sliced_blob)


@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
async def test_search_query_stream_through_the_leader(tmp_path, metric):
    c = await make_cluster(tmp_path, metric)
    try:
        # distribution: one channel + leader view with segments on both nodes
        dist = await c.leader.call("GetDataDistribution", Q.GetDataDistributionRequest())
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

        dist = await c.leader.call("GetDataDistribution", Q.GetDataDistributionRequest())
        assert list(dist.leader_views[0].growing_segmentIDs) == [GROWING_SEGMENT]
        assert dist.leader_views[0].num_of_growing_rows == 200

        # with a filter
        age, tag = c.ds.fid("age"), c.ds.fid("tag")
        expr = E.and_(E.compare(E.column(age, schema_pb2.Int32), "<", 40),
                      E.term(E.column(tag, schema_pb2.VarChar), ["red", "blue"]))
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
        qreq = query_request(c.ds, expr=E.compare(E.column(age, schema_pb2.Int32), "<", 10),
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

        stats_req = Q.GetStatisticsRequest(dml_channels=c.ds.channels, from_shard_leader=False)
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
        pending = asyncio.ensure_future(c.leader.call("Search", _search(c, xq, guarantee=future_ts)))
        await asyncio.sleep(0.4)
        assert not pending.done()
        c.tick(future_ts)
        reply = await asyncio.wait_for(pending, 10)
        assert reply.status.code == 0 and reply.channels_mvcc[c.ds.channels[0]] >= future_ts
        # ... and times out with 10001 when none arrives
        req = _search(c, xq, guarantee=c.ts + (100 << 18))
        req.req.timeout_timestamp = (int(time.time() * 1000) + 300) << 18
        reply = await c.leader.call("Search", req)
        assert reply.status.code == 10001 and "guarantee timestamp" in reply.status.reason
        assert "records consumed; waiting for the next record" in reply.status.reason  # why: no tick came

        # a stale leader view (segment recorded on the worker but gone there) fails the whole request
        sid = c.ds.segment_ids[1]
        sync = Q.SyncDistributionRequest(collectionID=c.ds.collection_id, channel=c.ds.channels[0], actions=[
            Q.SyncAction(type=Q.Set, segmentID=424243, nodeID=WORKER, version=9)])
        assert (await c.leader.call("SyncDistribution", sync)).code == 0
        reply = await c.leader.call("Search", _search(c, xq))
        assert reply.status.code != 0 and f"worker({WORKER}) query failed" in reply.status.reason
        # Remove with the node wildcard fixes the view
        sync = Q.SyncDistributionRequest(collectionID=c.ds.collection_id, channel=c.ds.channels[0], actions=[
            Q.SyncAction(type=Q.Remove, segmentID=424243, nodeID=-1)])
        assert (await c.leader.call("SyncDistribution", sync)).code == 0
        assert (await c.leader.call("Search", _search(c, xq))).status.code == 0
        # an unknown worker in the view -> the request fails naming it
        sync.actions[0].CopyFrom(Q.SyncAction(type=Q.Set, segmentID=424244, nodeID=99, version=1))
        await c.leader.call("SyncDistribution", sync)
        reply = await c.leader.call("Search", _search(c, xq))
        assert "worker(99) query failed" in reply.status.reason
        # UpdateVersion sets the target version; unknown type -> 5
        sync = Q.SyncDistributionRequest(collectionID=c.ds.collection_id, channel=c.ds.channels[0], actions=[
            Q.SyncAction(type=Q.Remove, segmentID=424244, nodeID=-1),
            Q.SyncAction(type=Q.UpdateVersion, TargetVersion=42, sealedInTarget=[GROWING_SEGMENT],
                         checkpoint=msg_pb2.MsgPosition(timestamp=c.ts))])
        assert (await c.leader.call("SyncDistribution", sync)).code == 0
        dist = await c.leader.call("GetDataDistribution", Q.GetDataDistributionRequest())
        assert dist.leader_views[0].TargetVersion == 42 and not dist.leader_views[0].growing_segmentIDs
        sync = Q.SyncDistributionRequest(channel=c.ds.channels[0], actions=[Q.SyncAction(type=17)])
        assert (await c.leader.call("SyncDistribution", sync)).code == 5

        # ReleaseSegments with need_transfer removes the segment from the worker and the view
        rel = Q.ReleaseSegmentsRequest(collectionID=c.ds.collection_id, segmentIDs=[sid], shard=c.ds.channels[0],
                                       need_transfer=True, nodeID=WORKER, scope=Q.Historical)
        assert (await c.leader.call("ReleaseSegments", rel)).code == 0
        assert sid not in c.worker.node.segments
        dist = await c.leader.call("GetDataDistribution", Q.GetDataDistributionRequest())
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
        waiting = asyncio.ensure_future(c.leader.call("Search", _search(c, xq, guarantee=c.ts + (100 << 18))))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        started = time.monotonic()
        assert (await c.leader.call("UnsubDmChannel", Q.UnsubDmChannelRequest(
            channel_name=c.ds.channels[0]))).code == 0
        reply = await asyncio.wait_for(waiting, 5)
        assert reply.status.code == 500 and "stopped while the request waited" in reply.status.reason
        assert time.monotonic() - started < 5
        reply = await c.leader.call("Search", _search(c, xq))
        assert reply.status.code == 500
    finally:
        await close(c)


def _health_request():
    from vecgrid.proto import milvus_pb2

    return milvus_pb2.CheckHealthRequest()


async def test_calls_to_peers_go_out_before_the_leader_searches(tmp_path, monkeypatch):
    """The leader starts its gRPC sub-calls before searching its own segments, so the workers search
    while it does."""
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

        real_search = search_mod.search_segments

        def search_segments(*args):
            events.append("search")
            return real_search(*args)

        monkeypatch.setattr(peers, "stub", RecordingStub)
        monkeypatch.setattr(search_mod, "search_segments", search_segments)
        c.insert(20, seed=4)
        ts = c.tick()
        xq = np.random.default_rng(4).standard_normal((3, DIM)).astype(np.float32)
        reply, got = await search(c, xq, guarantee=ts)
        assert events[0] == "SearchSegments" and events.count("search") == 3  # leader: sealed + growing; worker
        assert_same_knn(*reference_search(c.full, xq, K), *dense(got, K))
    finally:
        await close(c)
