"""Partitions, resource groups with loaded replicas, and the manual balance operations, on a 3-worker
LocalCluster; searches after each step equal a numpy reference over the loaded partitions."""

from __future__ import annotations

import asyncio
import contextlib
from typing import AsyncIterator

import pytest
import pytest_asyncio

from vecgrid.cluster.querycoord.task.task import ChannelTask, segment_task_key
from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import milvus_pb2, query_coord_pb2, rg_pb2
from tests.conftest import poll_until
from tests.proxy_support import create_collection, rows_for
from tests.querycoord_support import (Coord, assert_search_matches, fast_settings, import_partition, left_as_found,
                                      partition_ids)
from tests.querynode_support import import_collection

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

DEFAULT_RG = "__default_resource_group"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("ops")
    ds = import_collection(root, "ops", metric="IP", index="FLAT", n=800, shards=2, segment_rows=200, seed=5)
    both = import_partition(ds, root, "p1", 400)
    settings = fast_settings(ds.data_dir)
    settings.set("querycoord.next_target_interval_s", 1.0)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    cluster.import_root = root
    yield cluster, Coord(cluster.addresses.grpc, cluster.coord), ds, both
    await asyncio.wait_for(cluster.stop(), 60)


@pytest_asyncio.fixture(loop_scope="module")
async def env(cluster_env):
    """The module's cluster, given back to the next test as this one found it."""
    async with left_as_found(cluster_env[1], cluster_env[0].coord):
        yield cluster_env


async def test_partitions(env):
    cluster, coord, ds, both = env
    cid = ds.collection_id
    parts = partition_ids(cluster, cid)
    default, p1 = parts["_default"], parts["p1"]
    await coord.ok("LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=cid, partitionIDs=[default]))
    await coord.wait_loaded(cid)
    await assert_search_matches(coord, ds)           # only the default partition is searched
    reply = await coord.call(
        "ShowPartitions", query_coord_pb2.ShowPartitionsRequest(collectionID=cid, partitionIDs=[p1])
    )
    assert reply.status.code == 201
    reply = await coord.call(
        "GetPartitionStates", query_coord_pb2.GetPartitionStatesRequest(collectionID=cid, partitionIDs=[p1])
    )
    assert reply.status.code == 201
    # another replica number for loaded partitions is refused
    reply = await coord.call(
        "LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=cid, partitionIDs=[p1], replica_number=2)
    )
    assert reply.code == 1100
    await coord.ok("LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=cid, partitionIDs=[p1]))
    # the collection stays Loaded, so searchable, while p1 loads (Milvus: 103 only before the first load ends)
    assert (
        await coord.call("GetShardLeaders", query_coord_pb2.GetShardLeadersRequest(collectionID=cid))
    ).status.code == 0
    assert cluster.coord.collections.is_loaded(cid)
    await coord.wait_loaded(cid)
    shown = await coord.ok("ShowPartitions", query_coord_pb2.ShowPartitionsRequest(collectionID=cid))
    assert sorted(shown.partitionIDs) == sorted([default, p1]) and list(shown.inMemory_percentages) == [100, 100]
    await assert_search_matches(coord, both)

    await coord.ok("ReleasePartitions", query_coord_pb2.ReleasePartitionsRequest(collectionID=cid, partitionIDs=[p1]))
    assert all(s.partition != p1 for _, s in cluster.coord.dist.segments(cid))

    async def default_only():
        try:
            await assert_search_matches(coord, ds)
        except AssertionError:
            return False
        return True
    await poll_until(default_only, 20, what="p1 out of the search")
    # releasing every loaded partition releases the collection
    await coord.ok(
        "ReleasePartitions", query_coord_pb2.ReleasePartitionsRequest(collectionID=cid, partitionIDs=[default])
    )
    reply = await coord.call("ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[cid]))
    assert reply.status.code == 101


async def test_new_partition_of_a_loaded_collection(env):
    cluster, coord, ds, both = env
    cid = ds.collection_id
    await coord.load(cid)
    created = cluster.coord.catalog.create_partition(cid, "p2")
    try:
        await coord.ok("SyncNewCreatedPartition", query_coord_pb2.SyncNewCreatedPartitionRequest(
            collectionID=cid, partitionID=created.partitionID))
        shown = await coord.ok("ShowPartitions", query_coord_pb2.ShowPartitionsRequest(collectionID=cid,
                                                                         partitionIDs=[created.partitionID]))
        assert list(shown.inMemory_percentages) == [100]
        await assert_search_matches(coord, both)
        await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))
    finally:
        assert cluster.coord.catalog.drop_partition(cid, "p2")  # the other tests know two partitions


async def test_replicas_in_resource_groups(env):
    cluster, coord, ds, both = env
    cid = ds.collection_id
    config = rg_pb2.ResourceGroupConfig(requests=rg_pb2.ResourceGroupLimit(node_num=1),
                                        limits=rg_pb2.ResourceGroupLimit(node_num=1))
    await coord.ok("CreateResourceGroup", milvus_pb2.CreateResourceGroupRequest(resource_group="rg1", config=config))
    await coord.ok("CreateResourceGroup", milvus_pb2.CreateResourceGroupRequest(resource_group="rg2", config=config))
    await coord.load(cid, replica_number=2, resource_groups=["rg1", "rg2"])
    replicas = (await coord.ok("GetReplicas", milvus_pb2.GetReplicasRequest(collectionID=cid))).replicas
    assert sorted(r.resource_group_name for r in replicas) == ["rg1", "rg2"]
    assert [len(r.node_ids) for r in replicas] == [1, 1]
    await assert_search_matches(coord, both, replica_index=0)
    await assert_search_matches(coord, both, replica_index=1)
    # a group holding replicas cannot be dropped
    empty = rg_pb2.ResourceGroupConfig(requests=rg_pb2.ResourceGroupLimit(node_num=0),
                                       limits=rg_pb2.ResourceGroupLimit(node_num=0))
    await coord.ok("UpdateResourceGroups", query_coord_pb2.UpdateResourceGroupsRequest(resource_groups={"rg2": empty}))
    reply = await coord.call("DropResourceGroup", milvus_pb2.DropResourceGroupRequest(resource_group="rg2"))
    assert reply.code == 1100 and "release it first" in reply.reason
    # move rg2's replica into the default group (which has the spare node now)
    await coord.ok("TransferReplica", query_coord_pb2.TransferReplicaRequest(source_resource_group="rg2",
                                                               target_resource_group=DEFAULT_RG,
                                                               collectionID=cid, num_replica=1))

    async def moved():
        reps = (await coord.ok("GetReplicas", milvus_pb2.GetReplicasRequest(collectionID=cid))).replicas
        return sorted(r.resource_group_name for r in reps) == sorted(["rg1", DEFAULT_RG]) and \
            all(len(r.shard_replicas) == len(ds.channels) and r.node_ids for r in reps)
    await poll_until(moved, 30, what="replica in the default group")
    await poll_until(lambda: not cluster.coord.scheduler.tasks(cid), 30, what="moves done")
    await assert_search_matches(coord, both, replica_index=0)
    await assert_search_matches(coord, both, replica_index=1)
    await coord.ok("DropResourceGroup", milvus_pb2.DropResourceGroupRequest(resource_group="rg2"))
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))
    await coord.ok("UpdateResourceGroups", query_coord_pb2.UpdateResourceGroupsRequest(resource_groups={"rg1": empty}))
    await coord.ok("DropResourceGroup", milvus_pb2.DropResourceGroupRequest(resource_group="rg1"))


async def test_transfer_channel_and_load_balance(env):
    cluster, coord, ds, both = env
    cid = ds.collection_id
    await coord.load(cid)
    await coord.ok("SuspendBalance", query_coord_pb2.SuspendBalanceRequest())
    try:
        (shard, *_) = await coord.leaders(cid)
        source = shard.node_ids[0]
        target = next(n.node_id for n in cluster.coord.nodes.all() if n.node_id != source)
        reply = await coord.call("TransferChannel", query_coord_pb2.TransferChannelRequest(
            source_nodeID=source, target_nodeID=target, channel_name="no-such-channel"))
        assert reply.code == 500
        await coord.ok("TransferChannel", query_coord_pb2.TransferChannelRequest(
            source_nodeID=source, target_nodeID=target, channel_name=shard.channel_name))

        async def channel_moved():
            leaders = {s.channel_name: list(s.node_ids) for s in await coord.leaders(cid)}
            return leaders[shard.channel_name] == [target]
        await poll_until(channel_moved, 30, what="channel moved")
        await assert_search_matches(coord, both)

        # LoadBalance: everything off one node, waiting for the moves
        holder = next(n for n, _ in cluster.coord.dist.segments(cid))
        reply = await coord.call("LoadBalance", query_coord_pb2.LoadBalanceRequest(source_nodeIDs=[holder, target],
                                                                     collectionID=cid))
        assert reply.code == 1100
        await coord.ok("LoadBalance", query_coord_pb2.LoadBalanceRequest(source_nodeIDs=[holder], collectionID=cid))
        await cluster.coord.dist_controller.pull(holder)
        assert not [s for n, s in cluster.coord.dist.segments(cid) if n == holder]
        await assert_search_matches(coord, both)
        # every other node holds what it held: the distribution check passes for a node against itself
        await coord.ok("CheckQueryNodeDistribution", query_coord_pb2.CheckQueryNodeDistributionRequest(
            source_nodeID=holder, target_nodeID=holder))
    finally:
        await coord.ok("ResumeBalance", query_coord_pb2.ResumeBalanceRequest())
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))


@contextlib.asynccontextmanager
async def moved_by_hand_only(coord: Coord, cid: int) -> AsyncIterator[None]:
    """The collection loaded with automatic balancing suspended, so that only the test moves anything;
    balancing resumed and the collection released afterwards."""
    await coord.load(cid)
    await coord.ok("SuspendBalance", query_coord_pb2.SuspendBalanceRequest())
    try:
        yield
    finally:
        await coord.ok("ResumeBalance", query_coord_pb2.ResumeBalanceRequest())
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))


async def channel_moved_there_and_back(cluster, coord: Coord, cid: int) -> AsyncIterator[int]:
    """TransferChannel of the collection's first channel to the other node and back, three times; yields
    each target once the channel is held there alone, named its shard leader, and the move's task has
    settled (a transfer while it has one is skipped: idempotent)."""
    (shard, *_) = await coord.leaders(cid)
    [replica] = cluster.coord.replicas.of_collection(cid)
    first = shard.node_ids[0]
    other = next(n.node_id for n in cluster.coord.nodes.all() if n.node_id != first)
    for source, target in [(first, other), (other, first)] * 3:
        await coord.ok("TransferChannel", query_coord_pb2.TransferChannelRequest(
            source_nodeID=source, target_nodeID=target, channel_name=shard.channel_name))

        async def moved(target=target) -> bool:
            held = [n for n, c in cluster.coord.dist.channels(cid) if c.channel == shard.channel_name]
            leaders = {s.channel_name: list(s.node_ids) for s in await coord.leaders(cid)}
            return held == [target] and leaders[shard.channel_name] == [target] and \
                not cluster.coord.scheduler.has(ChannelTask(cid, replica.ID, shard.channel_name).key)
        await poll_until(moved, 30, what=f"channel moved to node {target}")
        yield target


@contextlib.asynccontextmanager
async def asked_throughout(cluster, coord: Coord, ds) -> AsyncIterator[list[str]]:
    """While the block runs, GetShardLeaders and a search through the proxy every few milliseconds;
    yields the failures (checked, with the searches made, on the way out)."""
    cid = ds.collection_id
    failures: list[str] = []
    searches = 0
    asking = True

    async def ask() -> None:
        nonlocal searches
        while asking:
            reply = await coord.call("GetShardLeaders", query_coord_pb2.GetShardLeadersRequest(collectionID=cid))
            if reply.status.code != 0:
                failures.append(reply.status.reason)
            try:
                hits = await cluster.proxy.search(ds.name, ds.vectors[:1], limit=5, consistency="Eventually")
                assert len(hits[0]) == 5
                searches += 1
            except Exception as e:  # noqa: BLE001 - every failure is reported by the assert below
                failures.append(f"search: {e!r}")
            await asyncio.sleep(0.005)
    asker = asyncio.ensure_future(ask())
    try:
        yield failures
    finally:
        asking = False
        await asker
    assert failures == [] and searches > 0


async def test_a_moving_channel_always_has_a_shard_leader(env):
    """GetShardLeaders answers and searches through the proxy succeed throughout channel moves (Milvus
    keeps the old leader listed until the new one serves) while the channel moves there and back three
    times."""
    cluster, coord, ds, _ = env
    cid = ds.collection_id
    async with moved_by_hand_only(coord, cid), asked_throughout(cluster, coord, ds):
        async for _ in channel_moved_there_and_back(cluster, coord, cid):
            pass


async def test_a_moving_segment_is_always_searchable(env):
    """Searches through the proxy succeed while a sealed segment moves between nodes there and back three
    times (the leader routes to the new copy before the old one is released)."""
    cluster, coord, ds, _ = env
    cid = ds.collection_id
    async with moved_by_hand_only(coord, cid), asked_throughout(cluster, coord, ds):
        first, seg = next((n, s) for n, s in cluster.coord.dist.segments(cid))
        [replica] = cluster.coord.replicas.of_collection(cid)
        other = next(n.node_id for n in cluster.coord.nodes.all() if n.node_id != first)
        for source, target in [(first, other), (other, first)] * 3:
            await coord.ok("TransferSegment", query_coord_pb2.TransferSegmentRequest(
                source_nodeID=source, target_nodeID=target, segmentID=seg.ID))

            def moved(target=target) -> bool:
                return [n for n, s in cluster.coord.dist.segments(cid) if s.ID == seg.ID] == [target] \
                    and not cluster.coord.scheduler.has(segment_task_key(replica.ID, seg.ID))
            await poll_until(moved, 30, what=f"segment {seg.ID} moved to node {target}")


async def test_writes_during_channel_moves_are_all_served(env):
    """Rows inserted and deleted through the proxy while the collection's channel moves there and back
    three times are all served afterwards, deletes included (the new leader reads the channel on from
    where the old one's view was): on a collection of its own, so the others' searches stay as they were."""
    cluster, coord, _, _ = env
    coll = create_collection(cluster.coord.catalog, "ops_writes", dim=16, shards=1)
    written: list[int] = []
    moving = True

    async def write() -> None:
        batch = 0
        while moving or batch < 3:
            keys = list(range(batch * 10, batch * 10 + 10))
            await cluster.proxy.insert("ops_writes", rows_for(keys, 16, seed=batch))
            written.extend(keys)
            if batch % 4 == 3:
                await cluster.proxy.delete("ops_writes", keys[:2])
                del written[-10:-8]
            batch += 1
            await asyncio.sleep(0.01)
    async with moved_by_hand_only(coord, coll.id):
        writer = asyncio.ensure_future(write())
        try:
            async for _ in channel_moved_there_and_back(cluster, coord, coll.id):
                # served at once: the new leader got the target version with the copied view
                await cluster.proxy.query("ops_writes", filter="pk >= 0", output_fields=["pk"], limit=16384)
        finally:
            moving = False
            await writer
        found = await cluster.proxy.query("ops_writes", filter="pk >= 0", output_fields=["pk"], limit=16384)
        assert sorted(r["pk"] for r in found) == sorted(written)


async def test_segments_imported_into_a_loaded_collection_are_served(env):
    """On a collection of its own: the rows it imports would change what the other tests search."""
    cluster, coord, _, _ = env
    own = import_collection(cluster.import_root, "ops_imported", metric="IP", index="FLAT", n=400, shards=2,
                            segment_rows=200, seed=15)
    cid = own.collection_id
    await coord.load(cid)
    version = cluster.coord.targets.current(cid).version
    more = import_partition(own, cluster.import_root, "_default", 300, key_offset=20_000_000)

    async def served():
        current = cluster.coord.targets.current(cid)
        if current is None or current.version == version:
            return False
        try:
            await assert_search_matches(coord, more)
        except AssertionError:
            return False
        return True
    await poll_until(served, 40, 0.2, "the new segments in the current target and served")
    # refresh asks for a new target at once; ShowCollections reports 100 once it is current
    await coord.ok("LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=cid, refresh=True))

    async def refreshed():
        reply = await coord.ok("ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[cid]))
        return list(reply.refresh_progress) == [100] and list(reply.inMemory_percentages) == [100]
    await poll_until(refreshed, 20, what="refresh done")
    assert cluster.coord.collections.get(cid).field_indexID == {}
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))
