"""Two QueryNodes in a LocalCluster (real Dask worker processes started by the plugin), driven over gRPC
as an external client: sealed segments of one channel on both nodes, growing rows on the leader from the
WAL, reads through the leader equal a numpy reference, and a delete mid-test is honoured everywhere."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from vecgrid.deploy import EmbeddedCluster
from vecgrid.gpu import exprs
from vecgrid.proto import data_coord_pb2, query_coord_pb2, query_coord_pb2_grpc, schema_pb2
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import Wal
from tests.conftest import aio_channel, embedded_settings, poll_until
from tests.delegator_support import K, Cluster, search
from tests.querynode_support import (DIM, RemoteNode, assert_same_knn, dense, import_collection, load_request,
                                     query_request, reference_search)

pytestmark = [pytest.mark.slow]


async def _equals(awaitable, expected) -> bool:
    return (await awaitable) == expected


async def test_two_nodes_in_a_local_cluster(tmp_path):
    ds = import_collection(tmp_path, "lc", metric="IP", index="FLAT", n=600, shards=1, segment_rows=150, seed=9)
    cluster = EmbeddedCluster(embedded_settings(ds.data_dir))
    await asyncio.wait_for(cluster.start(), 120)
    (channel,) = ds.channels
    writer = Wal(DataDir(ds.data_dir).wal_root).open_writer(channel, fsync="always")
    try:
        (a, a_addr), (b, b_addr) = cluster.addresses.query_nodes
        leader, worker = RemoteNode(a, a_addr), RemoteNode(b, b_addr)
        template = load_request(ds, dst_node_id=a)
        watch = query_coord_pb2.WatchDmChannelsRequest(
            nodeID=a, collectionID=ds.collection_id, schema=template.schema, load_meta=template.load_meta,
            index_info_list=template.index_info_list, version=1,
            infos=[data_coord_pb2.VchannelInfo(collectionID=ds.collection_id, channelName=channel)])
        watch.base.properties[f"vecgrid.node_address.{b}"] = b_addr
        assert (await leader.call("WatchDmChannels", watch)).code == 0
        segs = ds.segment_ids
        await leader.load(ds, segs[::2], dst_node_id=a, need_transfer=True, version=3)
        await leader.load(ds, segs[1::2], dst_node_id=b, need_transfer=True, version=3)

        # The coordinator learns the distribution by polling every node (dist handlers).
        coord = query_coord_pb2_grpc.QueryCoordStub(aio_channel(cluster.addresses.grpc))

        async def reported(node_id):
            reply = await coord.GetQueryNodeDistribution(
                query_coord_pb2.GetQueryNodeDistributionRequest(nodeID=node_id)
            )
            assert reply.status.code == 0, reply.status
            return list(reply.channel_names), sorted(reply.sealed_segmentIDs)

        # each node is polled on its own timer: a's report says nothing about whether b's poll came yet
        await poll_until(lambda: _equals(reported(a), ([channel], sorted(segs[::2]))), timeout=10,
                         what="the leader's distribution at the coordinator")
        await poll_until(lambda: _equals(reported(b), ([], sorted(segs[1::2]))), timeout=10,
                         what="the worker's distribution at the coordinator")
        assert cluster.coord.dist.node(a).mem_capacity_mb > 0
        assert [v.channel for _, v in cluster.coord.dist.leader_views(ds.collection_id)] == [channel]

        c = Cluster(ds, leader, worker, writer)
        dist = await leader.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        assert {sid: d.nodeID for sid, d in dist.leader_views[0].segment_dist.items()} == \
            {sid: (a if i % 2 == 0 else b) for i, sid in enumerate(segs)}
        worker_dist = await worker.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        assert sorted(s.ID for s in worker_dist.segments) == sorted(segs[1::2])

        c.insert(100, seed=4)
        ts = c.tick()
        xq = np.random.default_rng(2).standard_normal((5, DIM)).astype(np.float32)
        _, tk = await search(c, xq, guarantee=ts)
        assert_same_knn(*reference_search(c.full, xq, K, c.mask()), *dense(tk, K))

        age = ds.fid("age")
        _, tk = await search(c, xq, expr=exprs.compare(exprs.column(age, schema_pb2.Int32), "<", 30), guarantee=ts)
        assert_same_knn(*reference_search(c.full, xq, K, c.mask(30)), *dense(tk, K))

        rows = [int(ds.rows_of_segment(sid)[0]) for sid in segs] + [620]  # rows on both nodes + a growing one
        victims = [int(c.full.pks[i]) for i in rows]
        c.delete(victims)
        ts = c.tick()
        _, tk = await search(c, c.full.vectors[rows], guarantee=ts)
        _, keys = dense(tk, K)
        assert not set(victims) & {k for row in keys for k in row if k is not None}
        assert_same_knn(*reference_search(c.full, c.full.vectors[rows], K, c.mask()), *dense(tk, K))

        count_req = query_request(ds, is_count=True, from_shard_leader=False)
        count_req.req.guarantee_timestamp = ts
        count = await leader.call("Query", count_req)
        assert count.fields_data[0].scalars.long_data.data[0] == int(c.mask().sum())
        stream_req = query_request(ds, expr=exprs.compare(exprs.column(age, schema_pb2.Int32), "<", 10), output=[age],
                                   from_shard_leader=False)
        stream_req.req.guarantee_timestamp = ts
        streamed = sorted(k for msg in await leader.stream("QueryStream", stream_req) for k in msg.ids.int_id.data)
        assert streamed == sorted(c.full.pks[c.mask(10)].tolist())
    finally:
        writer.close()
        await asyncio.wait_for(cluster.stop(), 60)
