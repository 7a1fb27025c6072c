"""gRPC edge of the coordinator: decode, call :class:`~vecgrid.cluster.querycoord.QueryCoord`, encode."""

from __future__ import annotations

from vecgrid import errors
from vecgrid.cluster.querycoord import QueryCoord
from vecgrid.rpc import common
from vecgrid.rpc.proto import query_coord_pb2, query_coord_pb2_grpc
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


async def serve_querycoord(coord: QueryCoord, host: str, port: int, extra_services=()) -> GrpcServer:
    """Start the QueryCoord gRPC server (plus ``extra_services``); sets ``coord.address``."""
    server = GrpcServer("querycoord gRPC")
    bound = await server.start(host, port, [(query_coord_pb2_grpc.add_QueryCoordServicer_to_server,
                                             QueryCoordServicer(coord), SERVICE.full_name), *extra_services])
    coord.address = f"{host}:{bound}"
    coord.settings.querycoord.port = bound  # ShowConfigurations reports what the process really uses
    return server
