"""Operator and resource-group RPCs of QueryCoord over gRPC, on an embedded cluster."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio

from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import milvus_pb2, query_coord_pb2, query_coord_pb2_grpc, rg_pb2
from tests.conftest import aio_channel, embedded_settings
from tests.querycoord_support import Coord, left_as_found

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]
DEFAULT = "__default_resource_group"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(tmp_path_factory):
    cluster = EmbeddedCluster(embedded_settings(tmp_path_factory.mktemp("data")))
    await asyncio.wait_for(cluster.start(), 120)
    yield cluster
    await asyncio.wait_for(cluster.stop(), 60)


@pytest_asyncio.fixture(loop_scope="module")
async def stub(cluster):
    """QueryCoord's stub; the groups, transfers and suspended nodes a test leaves are given back after it."""
    async with left_as_found(Coord(cluster.addresses.grpc), cluster.coord):
        yield query_coord_pb2_grpc.QueryCoordStub(aio_channel(cluster.addresses.grpc))


def config(requests, limits):
    return rg_pb2.ResourceGroupConfig(requests=rg_pb2.ResourceGroupLimit(node_num=requests),
                                      limits=rg_pb2.ResourceGroupLimit(node_num=limits))


async def test_resource_group_lifecycle(stub):
    listed = await stub.ListResourceGroups(milvus_pb2.ListResourceGroupsRequest())
    assert list(listed.resource_groups) == [DEFAULT]
    default = (await stub.DescribeResourceGroup(query_coord_pb2.DescribeResourceGroupRequest(resource_group=DEFAULT)))
    assert default.status.code == 0 and default.resource_group.num_available_node == 2
    assert all(n.address for n in default.resource_group.nodes)

    status = await stub.CreateResourceGroup(milvus_pb2.CreateResourceGroupRequest(resource_group="rg1", config=config(1, 1)))
    assert status.code == 0
    rg1 = (await stub.DescribeResourceGroup(query_coord_pb2.DescribeResourceGroupRequest(resource_group="rg1"))).resource_group
    assert rg1.num_available_node == 1 and rg1.capacity == 1

    assert (await stub.TransferNode(milvus_pb2.TransferNodeRequest(
        source_resource_group=DEFAULT, target_resource_group="rg1", num_node=1))).code == 0
    rg1 = (await stub.DescribeResourceGroup(query_coord_pb2.DescribeResourceGroupRequest(resource_group="rg1"))).resource_group
    assert rg1.num_available_node == 2 and rg1.config.requests.node_num == 2

    status = await stub.UpdateResourceGroups(query_coord_pb2.UpdateResourceGroupsRequest(resource_groups={"rg1": config(0, 0)}))
    assert status.code == 0
    assert (await stub.DropResourceGroup(milvus_pb2.DropResourceGroupRequest(resource_group="rg1"))).code == 0
    default = (await stub.DescribeResourceGroup(query_coord_pb2.DescribeResourceGroupRequest(resource_group=DEFAULT)))
    assert default.resource_group.num_available_node == 2


async def test_resource_group_errors_over_the_wire(stub):
    codes = [
        (await stub.CreateResourceGroup(milvus_pb2.CreateResourceGroupRequest(resource_group=""))).code,
        (await stub.CreateResourceGroup(milvus_pb2.CreateResourceGroupRequest(resource_group="x", config=config(2, 1)))).code,
        (await stub.DescribeResourceGroup(query_coord_pb2.DescribeResourceGroupRequest(resource_group="nope"))).status.code,
        (await stub.DropResourceGroup(milvus_pb2.DropResourceGroupRequest(resource_group=DEFAULT))).code,
        (await stub.TransferNode(milvus_pb2.TransferNodeRequest(source_resource_group=DEFAULT,
                                                                target_resource_group=DEFAULT, num_node=1))).code,
        (await stub.TransferReplica(query_coord_pb2.TransferReplicaRequest(
            source_resource_group=DEFAULT, target_resource_group="nope", collectionID=1, num_replica=1))).code,
    ]
    assert codes == [1101, 303, 300, 1100, 1100, 300]
    await stub.CreateResourceGroup(milvus_pb2.CreateResourceGroupRequest(resource_group="other", config=config(0, 0)))
    reply = await stub.TransferReplica(query_coord_pb2.TransferReplicaRequest(
        source_resource_group=DEFAULT, target_resource_group="other", collectionID=1, num_replica=1))
    assert reply.code == 1100 and "Collection not loaded" in reply.reason


async def test_suspend_resume_and_node_distribution(stub):
    nodes = (await stub.ListQueryNode(query_coord_pb2.ListQueryNodeRequest())).nodeInfos
    node = nodes[0].ID
    dist = await stub.GetQueryNodeDistribution(query_coord_pb2.GetQueryNodeDistributionRequest(nodeID=node))
    assert dist.status.code == 0 and dist.ID == node and list(dist.sealed_segmentIDs) == []
    assert (await stub.GetQueryNodeDistribution(query_coord_pb2.GetQueryNodeDistributionRequest(nodeID=999))).status.code == 901
    assert (await stub.SuspendNode(query_coord_pb2.SuspendNodeRequest(nodeID=node))).code == 0
    default = (await stub.DescribeResourceGroup(query_coord_pb2.DescribeResourceGroupRequest(resource_group=DEFAULT)))
    assert node not in [n.node_id for n in default.resource_group.nodes]
    # Suspend does not change the node's state string (Milvus 2.4).
    assert {n.state for n in (await stub.ListQueryNode(query_coord_pb2.ListQueryNodeRequest())).nodeInfos} == {"Normal"}
    assert (await stub.ResumeNode(query_coord_pb2.ResumeNodeRequest(nodeID=node))).code == 0
    default = (await stub.DescribeResourceGroup(query_coord_pb2.DescribeResourceGroupRequest(resource_group=DEFAULT)))
    assert node in [n.node_id for n in default.resource_group.nodes]
    assert (await stub.SuspendNode(query_coord_pb2.SuspendNodeRequest(nodeID=999))).code == 901
