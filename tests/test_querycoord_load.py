"""QueryCoord on Dask, end to end: a LocalCluster of 3 worker processes, bulk-imported data, loads and
releases through the coordinator's gRPC stubs, searches through the shard leaders it reports, checked
against numpy after every step."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
import pytest_asyncio

from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import milvus_pb2, query_coord_pb2
from tests.conftest import poll_until
from tests.querycoord_support import Coord, assert_search_matches, fast_settings, left_as_found
from tests.querynode_support import import_collection

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("qc")
    ds = import_collection(root, "books", metric="L2", index="FLAT", n=1200, shards=2, segment_rows=200, seed=4)
    cluster = EmbeddedCluster(fast_settings(ds.data_dir))
    await asyncio.wait_for(cluster.start(), 120)
    yield cluster, Coord(cluster.addresses.grpc, cluster.coord), ds
    await asyncio.wait_for(cluster.stop(), 60)


@pytest_asyncio.fixture(loop_scope="module")
async def env(cluster_env):
    """The module's cluster, given back to the next test as this one found it."""
    async with left_as_found(cluster_env[1], cluster_env[0].coord):
        yield cluster_env



async def test_load_search_release(env):
    cluster, coord, ds = env
    cid = ds.collection_id
    # not loaded yet
    reply = await coord.call("ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[cid]))
    assert reply.status.code == 101
    reply = await coord.call("GetShardLeaders", query_coord_pb2.GetShardLeadersRequest(collectionID=cid))
    assert reply.status.code == 101
    assert (await coord.ok("GetReplicas", milvus_pb2.GetReplicasRequest(collectionID=cid))).replicas == []

    await coord.load(cid)
    shards = await coord.leaders(cid)
    assert sorted(s.channel_name for s in shards) == sorted(ds.channels)
    assert all(len(s.node_ids) == 1 for s in shards)
    await assert_search_matches(coord, ds)

    # every segment is loaded once, spread over the three nodes
    infos = (await coord.ok("GetSegmentInfo", query_coord_pb2.GetSegmentInfoRequest(collectionID=cid))).infos
    assert sorted(i.segmentID for i in infos) == sorted(ds.segment_ids)
    assert all(len(i.node_ids) == 1 for i in infos)
    assert len({i.node_ids[0] for i in infos}) >= 2
    states = (await coord.ok("GetPartitionStates", query_coord_pb2.GetPartitionStatesRequest(collectionID=cid)))
    assert [(p.state, p.inMemory_percentage) for p in states.partition_descriptions] == [
        (query_coord_pb2.InMemory, 100)
    ]
    shown = await coord.ok("ShowPartitions", query_coord_pb2.ShowPartitionsRequest(collectionID=cid))
    assert list(shown.inMemory_percentages) == [100]
    (replica,) = (await coord.ok("GetReplicas", milvus_pb2.GetReplicasRequest(collectionID=cid))).replicas
    assert len(replica.node_ids) == 3 and replica.resource_group_name == "__default_resource_group"
    assert sorted(s.dm_channel_name for s in replica.shard_replicas) == sorted(ds.channels)

    # loading again with the same settings is a no-op success
    await coord.ok("LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=cid))
    assert await coord.percentage(cid) == 100

    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))
    reply = await coord.call("ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[cid]))
    assert reply.status.code == 101
    for node in cluster.coord.nodes.all():
        dist = cluster.coord.dist.node(node.node_id)
        assert dist is None or not dist.segments and not dist.channels
    # releasing what is not loaded succeeds
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))


async def test_two_replicas_and_update_load_config(env):
    cluster, coord, ds = env
    cid = ds.collection_id
    await coord.load(cid, replica_number=2)
    replicas = (await coord.ok("GetReplicas", milvus_pb2.GetReplicasRequest(collectionID=cid))).replicas
    assert len(replicas) == 2
    assert not set(replicas[0].node_ids) & set(replicas[1].node_ids)
    shards = await coord.leaders(cid)
    assert all(len(s.node_ids) == 2 for s in shards)
    await assert_search_matches(coord, ds, replica_index=0)
    await assert_search_matches(coord, ds, replica_index=1)
    infos = (await coord.ok("GetSegmentInfo", query_coord_pb2.GetSegmentInfoRequest(collectionID=cid))).infos
    assert all(len(i.node_ids) == 2 and len(set(i.replica_ids)) == 2 for i in infos)

    # too many replicas for the group: 304, nothing changes
    reply = await coord.call(
        "UpdateLoadConfig", query_coord_pb2.UpdateLoadConfigRequest(collectionIDs=[cid], replica_number=4)
    )
    assert reply.code == 304
    # loading again with another replica number turns into an update
    await coord.ok("LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=cid, replica_number=1))
    await poll_until(lambda: len(cluster.coord.replicas.of_collection(cid)) == 1, 10, what="one replica")

    async def one_leader_each():
        reply = await coord.call("GetShardLeaders", query_coord_pb2.GetShardLeadersRequest(collectionID=cid))
        return reply.status.code == 0 and all(len(s.node_ids) == 1 for s in reply.shards)
    await poll_until(one_leader_each, 30, what="one leader per channel")
    await assert_search_matches(coord, ds)
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))


async def test_load_errors_change_nothing(env):
    cluster, coord, ds = env
    cid = ds.collection_id
    reply = await coord.call(
        "LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=cid, replica_number=4)
    )
    assert reply.code == 304 and "resource group node not enough" in reply.reason
    reply = await coord.call(
        "LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=cid, resource_groups=["nope"])
    )
    assert reply.code == 300
    reply = await coord.call("LoadCollection", query_coord_pb2.LoadCollectionRequest(
        collectionID=cid, replica_number=2, resource_groups=["a", "b", "c"]))
    assert reply.code == 65535
    reply = await coord.call("LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=cid, refresh=True))
    assert reply.code == 101
    reply = await coord.call("ReleasePartitions", query_coord_pb2.ReleasePartitionsRequest(collectionID=cid))
    assert reply.code == 1100
    assert cluster.coord.collections.ids() == [] and cluster.coord.replicas.of_collection(cid) == []
    reply = await coord.call("ShowCollections", query_coord_pb2.ShowCollectionsRequest())
    assert reply.status.code == 0 and list(reply.collectionIDs) == []


async def test_checkers_and_balance_switches(env):
    cluster, coord, ds = env
    listed = (await coord.ok("ListCheckers", query_coord_pb2.ListCheckersRequest())).checkerInfos
    assert [(c.id, c.desc, c.activated, c.found) for c in listed] == [
        (1, "channel_checker", True, True), (2, "segment_checker", True, True), (3, "balance_checker", True, True),
        (4, "index_checker", True, True), (5, "leader_checker", True, True)]
    (unknown,) = (await coord.ok("ListCheckers", query_coord_pb2.ListCheckersRequest(checkerIDs=[9]))).checkerInfos
    assert (unknown.id, unknown.found, unknown.desc) == (9, False, "")
    reply = await coord.call("ActivateChecker", query_coord_pb2.ActivateCheckerRequest(checkerID=6))
    assert reply.code == 5 and "checker type not found" in reply.reason
    await coord.ok("DeactivateChecker", query_coord_pb2.DeactivateCheckerRequest(checkerID=2))
    (seg,) = (await coord.ok("ListCheckers", query_coord_pb2.ListCheckersRequest(checkerIDs=[2]))).checkerInfos
    assert not seg.activated
    await coord.ok("ActivateChecker", query_coord_pb2.ActivateCheckerRequest(checkerID=2))
    await coord.ok("SuspendBalance", query_coord_pb2.SuspendBalanceRequest())
    assert not (await coord.ok("CheckBalanceStatus", query_coord_pb2.CheckBalanceStatusRequest())).is_active
    await coord.ok("ResumeBalance", query_coord_pb2.ResumeBalanceRequest())
    assert (await coord.ok("CheckBalanceStatus", query_coord_pb2.CheckBalanceStatusRequest())).is_active


async def test_partitions_transfers_and_restart_safe_meta(env):
    cluster, coord, ds = env
    cid = ds.collection_id
    await coord.load(cid)
    # manual transfer of one segment, copy mode keeps the source copy
    infos = (await coord.ok("GetSegmentInfo", query_coord_pb2.GetSegmentInfoRequest(collectionID=cid))).infos
    nodes = [n.node_id for n in cluster.coord.nodes.all()]
    seg = infos[0]
    source = seg.node_ids[0]
    target = next(n for n in nodes if n != source)
    reply = await coord.call("TransferSegment", query_coord_pb2.TransferSegmentRequest(
        source_nodeID=source, target_nodeID=target, segmentID=999999))
    assert reply.code == 600
    reply = await coord.call(
        "TransferSegment", query_coord_pb2.TransferSegmentRequest(source_nodeID=12345, target_nodeID=target)
    )
    assert reply.code == 901
    # an operator suspends automatic balancing first, or the balancer evens the nodes out again
    await coord.ok("SuspendBalance", query_coord_pb2.SuspendBalanceRequest())
    await coord.ok("TransferSegment", query_coord_pb2.TransferSegmentRequest(source_nodeID=source, target_nodeID=target,
                                                               segmentID=seg.segmentID))

    async def moved():
        (info,) = (await coord.ok("GetSegmentInfo", query_coord_pb2.GetSegmentInfoRequest(collectionID=cid,
                                                                           segmentIDs=[seg.segmentID]))).infos
        return list(info.node_ids) == [target]
    await poll_until(moved, 30, what="segment moved")
    await assert_search_matches(coord, ds)
    # copy mode: the segment ends up on both nodes (the segment checker, which drops the older of two
    # copies in a replica, is switched off meanwhile)
    await coord.ok("DeactivateChecker", query_coord_pb2.DeactivateCheckerRequest(checkerID=2))
    await coord.ok("TransferSegment", query_coord_pb2.TransferSegmentRequest(source_nodeID=target, target_nodeID=source,
                                                               segmentID=seg.segmentID, copy_mode=True))

    async def copied():
        (info,) = (await coord.ok("GetSegmentInfo", query_coord_pb2.GetSegmentInfoRequest(collectionID=cid,
                                                                           segmentIDs=[seg.segmentID]))).infos
        return sorted(info.node_ids) == sorted([source, target])
    await poll_until(copied, 30, what="segment copied")
    await assert_search_matches(coord, ds)
    await coord.ok("ActivateChecker", query_coord_pb2.ActivateCheckerRequest(checkerID=2))

    async def deduplicated():
        (info,) = (await coord.ok("GetSegmentInfo", query_coord_pb2.GetSegmentInfoRequest(collectionID=cid,
                                                                           segmentIDs=[seg.segmentID]))).infos
        return list(info.node_ids) == [source]   # the newer copy stays
    await poll_until(deduplicated, 30, what="older copy released")
    await assert_search_matches(coord, ds)
    await coord.ok("ResumeBalance", query_coord_pb2.ResumeBalanceRequest())
    # distribution check: the target does not hold everything the source holds
    reply = await coord.call("CheckQueryNodeDistribution", query_coord_pb2.CheckQueryNodeDistributionRequest(
        source_nodeID=source, target_nodeID=target))
    assert reply.code in (501, 602)
    # meta is persisted: a second manager over the same store sees the load
    from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
    from vecgrid.cluster.querycoord.meta.replica_manager import ReplicaManager
    assert CollectionManager(cluster.coord.store).is_loaded(cid)
    assert len(ReplicaManager(cluster.coord.store).of_collection(cid)) == 1
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))


async def test_check_health_aggregates_nodes(env):
    cluster, coord, ds = env
    reply = await coord.ok("CheckHealth", milvus_pb2.CheckHealthRequest())
    assert reply.isHealthy, json.dumps(list(reply.reasons))


async def test_time_ticks_let_strong_searches_through(env):
    cluster, coord, ds = env
    cid = ds.collection_id
    await coord.load(cid)
    from vecgrid.storage.tso import hybrid_now
    from tests.querynode_support import RemoteNode, search_request
    (shard, *_) = await coord.leaders(cid)
    node = RemoteNode(shard.node_ids[0], shard.node_addrs[0])
    xq = np.zeros((1, ds.vectors.shape[1]), np.float32)
    req = search_request(ds, xq, 5, channels=[shard.channel_name], from_shard_leader=False, scope=query_coord_pb2.All)
    req.req.guarantee_timestamp = hybrid_now()     # strong consistency: wait for everything written so far
    reply = await node.call("Search", req)
    assert reply.status.code == 0, reply.status
    assert reply.channels_mvcc[shard.channel_name] >= req.req.guarantee_timestamp
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))


async def test_idle_channel_checkpoints_follow_the_time_ticks(env):
    """A loaded collection nobody writes to: its checkpoints move to the latest ticks, the next target takes
    them as seek positions, the leaders get that target's version, and searches are unchanged."""
    cluster, coord, ds = env
    cid = ds.collection_id
    await coord.load(cid)
    qc = cluster.coord
    await asyncio.sleep(0.5)                       # a few time ticks on every channel
    await qc.wal_retention.round()
    checkpoints = qc.catalog.channel_checkpoints(cid)
    assert set(checkpoints) == set(ds.channels)

    def promoted() -> bool:
        current = qc.targets.current(cid)
        if current is None or any(ch.seek_position.timestamp != checkpoints[ch.channelName].timestamp
                                  for ch in current.Channel_targets):
            return False
        views = [view for _, view in qc.dist.leader_views(cid)]
        return len(views) == len(ds.channels) and all(v.TargetVersion == current.version for v in views)
    await poll_until(promoted, 30, 0.1, what="target with the new checkpoints current on every leader")
    await assert_search_matches(coord, ds)
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))
