"""gRPC edge of the coordinator: decode, call :class:`~vecgrid.cluster.querycoord.QueryCoord`, encode."""

from __future__ import annotations

from vecgrid import errors
from vecgrid.cluster.querycoord import QueryCoord
from vecgrid.rpc import common
from vecgrid.rpc.proto import milvus_pb2, query_coord_pb2, query_coord_pb2_grpc
from vecgrid.rpc.server import GrpcServer
from vecgrid.rpc.service import milvus_servicer
from vecgrid.rpc.status import success

SERVICE = query_coord_pb2.DESCRIPTOR.services_by_name["QueryCoord"]


@milvus_servicer(SERVICE, query_coord_pb2_grpc.QueryCoordServicer)
class QueryCoordServicer:
    """milvus.proto.query.QueryCoord over one :class:`QueryCoord`."""

    def __init__(self, coord: QueryCoord) -> None:
        self.coord = coord

    async def GetComponentStates(self, request, context):
        # Milvus's QueryCoord leaves ComponentInfo.role empty in the 2.4 line.
        return common.component_states(self.coord.lifecycle, role="")

    async def GetTimeTickChannel(self, request, context):
        return common.string_response(self.coord.time_tick_channel())

    async def GetStatisticsChannel(self, request, context):
        return common.string_response(self.coord.statistics_channel())

    async def ShowConfigurations(self, request, context):
        return common.configurations(self.coord.configurations(request.pattern))

    async def GetMetrics(self, request, context):
        return common.metrics(await self.coord.metrics(request.request), self.coord.lifecycle.component_name)

    async def CheckHealth(self, request, context):
        try:
            return common.health(self.coord.health_reasons())
        except errors.MilvusError as err:
            return common.unhealthy(err)

    async def ListQueryNode(self, request, context):
        nodes = self.coord.list_query_nodes()
        return query_coord_pb2.ListQueryNodeResponse(
            status=success(),
            nodeInfos=[query_coord_pb2.NodeInfo(ID=n.node_id, address=n.address, state=n.state) for n in nodes],
        )

    async def GetQueryNodeDistribution(self, request, context):
        channels, segments = self.coord.query_node_distribution(request.nodeID)
        return query_coord_pb2.GetQueryNodeDistributionResponse(
            status=success(), ID=request.nodeID, channel_names=channels, sealed_segmentIDs=segments)

    async def SuspendNode(self, request, context):
        self.coord.suspend_node(request.nodeID)
        return success()

    async def ResumeNode(self, request, context):
        self.coord.resume_node(request.nodeID)
        return success()

    # --- resource groups ---------------------------------------------------------------------

    async def CreateResourceGroup(self, request, context):
        self.coord.create_resource_group(request.resource_group,
                                         request.config if request.HasField("config") else None)
        return success()

    async def UpdateResourceGroups(self, request, context):
        self.coord.update_resource_groups(dict(request.resource_groups))
        return success()

    async def DropResourceGroup(self, request, context):
        self.coord.drop_resource_group(request.resource_group)
        return success()

    async def TransferNode(self, request, context):
        self.coord.transfer_node(request.source_resource_group, request.target_resource_group, request.num_node)
        return success()

    async def TransferReplica(self, request, context):
        self.coord.transfer_replica(request.source_resource_group, request.target_resource_group,
                                    request.collectionID, request.num_replica)
        return success()

    async def ListResourceGroups(self, request, context):
        return milvus_pb2.ListResourceGroupsResponse(status=success(),
                                                     resource_groups=self.coord.list_resource_groups())

    async def DescribeResourceGroup(self, request, context):
        return query_coord_pb2.DescribeResourceGroupResponse(
            status=success(), resource_group=self.coord.describe_resource_group(request.resource_group))


async def serve_querycoord(coord: QueryCoord, host: str, port: int, extra_services=()) -> GrpcServer:
    """Start the QueryCoord gRPC server (plus ``extra_services``); sets ``coord.address``."""
    server = GrpcServer("querycoord gRPC")
    bound = await server.start(host, port, [(query_coord_pb2_grpc.add_QueryCoordServicer_to_server,
                                             QueryCoordServicer(coord), SERVICE.full_name), *extra_services])
    coord.address = f"{host}:{bound}"
    coord.settings.querycoord.port = bound  # ShowConfigurations reports what the process really uses
    return server
