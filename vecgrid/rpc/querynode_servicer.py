"""gRPC edge of a QueryNode: decode, call :class:`~vecgrid.cluster.querynode.node.QueryNode`, encode."""

from __future__ import annotations

from vecgrid import errors
from vecgrid.cluster.querynode.node import ROLE, QueryNode
from vecgrid.rpc import common
from vecgrid.rpc.proto import query_coord_pb2, query_coord_pb2_grpc
from vecgrid.rpc.server import GrpcServer
from vecgrid.rpc.service import milvus_servicer

SERVICE = query_coord_pb2.DESCRIPTOR.services_by_name["QueryNode"]


@milvus_servicer(SERVICE, query_coord_pb2_grpc.QueryNodeServicer)
class QueryNodeServicer:
    """milvus.proto.query.QueryNode over one :class:`QueryNode`."""

    def __init__(self, node: QueryNode) -> None:
        self.node = node

    async def GetComponentStates(self, request, context):
        return common.component_states(self.node.lifecycle, ROLE)

    async def GetTimeTickChannel(self, request, context):
        return common.string_response(self.node.time_tick_channel())

    async def GetStatisticsChannel(self, request, context):
        return common.string_response(self.node.statistics_channel())

    async def ShowConfigurations(self, request, context):
        return common.configurations(self.node.configurations(request.pattern))

    async def GetMetrics(self, request, context):
        return common.metrics(self.node.metrics(request.request), self.node.lifecycle.component_name)

    async def CheckHealth(self, request, context):
        try:
            return common.health(self.node.health_reasons())
        except errors.MilvusError as err:
            return common.unhealthy(err)


async def serve_querynode(node: QueryNode, host: str, port: int) -> GrpcServer:
    """Start the node's gRPC server; sets ``node.address`` to the bound ``host:port``."""
    server = GrpcServer("querynode gRPC")
    bound = await server.start(host, port, [(query_coord_pb2_grpc.add_QueryNodeServicer_to_server,
                                             QueryNodeServicer(node), SERVICE.full_name)])
    node.address = f"{host}:{bound}"
    node.settings.querynode.port = bound  # ShowConfigurations reports what the process really uses
    return server
