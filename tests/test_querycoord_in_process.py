"""The coordinator, two QueryNodes and the proxy in this one process (an in-process Dask cluster of two
thread workers): loads, searches and queries checked against numpy, partitions, replicas in resource
groups, a manual segment transfer, releases. The fast lane's view of the QueryCoord roles (jobs,
checkers, the task scheduler, the observers, the dist handlers, manual balance) and of the proxy; the
tests with worker processes (``slow``) add node loss, restarts and the CLI."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio
from distributed import LocalCluster

from vecgrid.cluster.proxy.proxy import Proxy
from vecgrid.deploy import Coordinator
from vecgrid.proto import milvus_pb2, query_coord_pb2, rg_pb2
from tests.conftest import poll_until
from tests.proxy_support import dense_hits
from tests.querycoord_support import (DEFAULT_RG, K, Coord, assert_search_matches, fast_settings, import_partition,
                                      left_as_found, partition_ids, queries)
from tests.querynode_support import assert_same_knn, import_collection, reference_search

pytest.importorskip("faiss")
pytestmark = pytest.mark.asyncio(loop_scope="module")


class InProcess:
    def __init__(self, coordinator: Coordinator, ds, both) -> None:
        self.coordinator, self.ds, self.both = coordinator, ds, both
        self.qc = coordinator.coord
        self.coord = Coord(coordinator.addresses.grpc, coordinator.coord)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("in-process")
    ds = import_collection(root, "inproc", metric="L2", index="FLAT", n=600, shards=2, segment_rows=150, seed=3)
    both = import_partition(ds, root, "p1", 300)
    settings = fast_settings(ds.data_dir, workers=2)
    settings.set("querynode.port", 0)
    async with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, asynchronous=True,
                            dashboard_address=":0") as cluster:
        coordinator = Coordinator(settings, deploy_mode="EMBEDDED")
        try:
            await coordinator.start(cluster.scheduler_address)
            await coordinator.wait_for_nodes(2)
            yield InProcess(coordinator, ds, both)
        finally:
            await asyncio.wait_for(coordinator.stop(), 60)


@pytest_asyncio.fixture(loop_scope="module")
async def env(cluster_env):
    """The module's cluster, given back to the next test as this one found it."""
    async with left_as_found(cluster_env.coord, cluster_env.qc):
        yield cluster_env


async def test_load_search_query_release(env):
    ds, coord, qc = env.both, env.coord, env.qc
    cid = ds.collection_id
    await coord.load(cid)
    await assert_search_matches(coord, ds)
    proxy = Proxy(env.coordinator.addresses.grpc)
    try:
        xq = queries(ds, seed=5)
        assert_same_knn(*reference_search(ds, xq, K), *dense_hits(await proxy.search("inproc", xq, limit=K)))
        assert await proxy.count("inproc") == len(ds.pks)
        default = env.ds   # the imported partition's rows carry no scalar columns here
        rows = await proxy.query("inproc", filter={"age": {"$lt": 5}}, limit=3, partition_names=["_default"])
        assert [r["pk"] for r in rows] == sorted(default.pks[default.columns["age"] < 5].tolist())[:3]
    finally:
        await proxy.close()
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))
    # the release's reduce tasks leave the scheduler only after their closing distribution pull, which may
    # come after the distribution shows nothing served
    await poll_until(lambda: not qc.dist.segments(cid) and not qc.dist.channels(cid) and not qc.scheduler.tasks(cid),
                     30, what="nothing served and no task left")
    assert qc.collections.ids() == []


async def test_partitions_load_and_release_one_by_one(env):
    coord, qc = env.coord, env.qc
    cid = env.ds.collection_id
    parts = partition_ids(env.coordinator, cid)
    await coord.ok(
        "LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=cid, partitionIDs=[parts["_default"]])
    )
    await coord.wait_loaded(cid)
    await assert_search_matches(coord, env.ds)   # only the default partition
    await coord.ok(
        "LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=cid, partitionIDs=[parts["p1"]])
    )
    await coord.wait_loaded(cid)
    await assert_search_matches(coord, env.both)
    await coord.ok(
        "ReleasePartitions", query_coord_pb2.ReleasePartitionsRequest(collectionID=cid, partitionIDs=[parts["p1"]])
    )
    assert all(s.partition != parts["p1"] for _, s in qc.dist.segments(cid))
    await coord.ok("ReleasePartitions", query_coord_pb2.ReleasePartitionsRequest(collectionID=cid,
                                                                   partitionIDs=[parts["_default"]]))
    reply = await coord.call("ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[cid]))
    assert reply.status.code == 101


async def test_replicas_in_two_resource_groups(env):
    coord = env.coord
    cid = env.ds.collection_id
    one = rg_pb2.ResourceGroupConfig(requests=rg_pb2.ResourceGroupLimit(node_num=1),
                                     limits=rg_pb2.ResourceGroupLimit(node_num=1))
    await coord.ok("CreateResourceGroup", milvus_pb2.CreateResourceGroupRequest(resource_group="rg1", config=one))
    await coord.load(cid, replica_number=2, resource_groups=["rg1", DEFAULT_RG])
    replicas = (await coord.ok("GetReplicas", milvus_pb2.GetReplicasRequest(collectionID=cid))).replicas
    assert sorted(r.resource_group_name for r in replicas) == sorted(["rg1", DEFAULT_RG])
    assert [len(r.node_ids) for r in replicas] == [1, 1]
    await assert_search_matches(coord, env.both, replica_index=0)
    await assert_search_matches(coord, env.both, replica_index=1)
    # the group holds a replica: it cannot be dropped (the fixture releases and drops it afterwards)
    reply = await coord.call("DropResourceGroup", milvus_pb2.DropResourceGroupRequest(resource_group="rg1"))
    assert reply.code != 0


async def test_a_segment_transferred_by_hand_is_served_from_its_new_node(env):
    coord, qc = env.coord, env.qc
    cid = env.ds.collection_id
    await coord.load(cid)
    await coord.ok("SuspendBalance", query_coord_pb2.SuspendBalanceRequest())  # else the balancer evens it out again
    (info, *_) = (await coord.ok("GetSegmentInfo", query_coord_pb2.GetSegmentInfoRequest(collectionID=cid))).infos
    source = info.node_ids[0]
    target = next(n.node_id for n in qc.nodes.all() if n.node_id != source)
    await coord.ok("TransferSegment", query_coord_pb2.TransferSegmentRequest(source_nodeID=source, target_nodeID=target,
                                                               segmentID=info.segmentID))

    async def moved() -> bool:
        (now,) = (await coord.ok("GetSegmentInfo", query_coord_pb2.GetSegmentInfoRequest(
            collectionID=cid, segmentIDs=[info.segmentID]))).infos
        return list(now.node_ids) == [target]
    await poll_until(moved, 30, what="segment moved")
    await assert_search_matches(coord, env.both)
