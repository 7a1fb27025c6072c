"""gRPC edge of a QueryNode: decode, call :class:`~vecgrid.cluster.querynode.node.QueryNode`, encode.

Node identity: a Milvus client names the node it means in the gRPC metadata key
``ServerID`` (``serverid`` on the wire: gRPC lower-cases metadata keys).  Milvus's
QueryNode checks it in a server interceptor and refuses a call meant for another node
with a *gRPC error*, not a Status: the Go server returns the plain error
``node not match[expectedNodeID=X][actualNodeID=Y]`` (code 904), which reaches the
client as gRPC status ``UNKNOWN`` with that text — Milvus's clients recognise it by
the text.  vecgrid answers the same: ``UNKNOWN`` with that message, for every segment
and data method.  A missing or non-numeric key is not checked (as Milvus).  The
component RPCs (GetComponentStates, CheckHealth, ...) are not checked, so a node can be
probed before it knows its id.
"""

from __future__ import annotations

import functools
import time
from typing import Callable

import grpc
from google.protobuf import message_factory

from vecgrid import errors
from vecgrid.cluster.querynode.monitor import stats_of
from vecgrid.cluster.querynode.node import ROLE, QueryNode
from vecgrid.common.keys import SERVER_ID_KEY
from vecgrid.proto import query_coord_pb2, query_coord_pb2_grpc
from vecgrid.rpc import common
from vecgrid.rpc.server import GrpcServer
from vecgrid.rpc.service import milvus_servicer

SERVICE = query_coord_pb2.DESCRIPTOR.services_by_name["QueryNode"]


def _node_checked(fn: Callable) -> Callable:
    """Refuse the call with ``node not match`` when its ``serverid`` names another node."""
    method = SERVICE.methods_by_name[fn.__name__]
    reply_cls = message_factory.GetMessageClass(method.output_type)

    if method.server_streaming:
        @functools.wraps(fn)
        async def stream(self, request, context):
            if self._refuse_foreign(context):
                return
            async for reply in fn(self, request, context):
                yield reply
        return stream

    @functools.wraps(fn)
    async def unary(self, request, context):
        if self._refuse_foreign(context):
            return reply_cls()
        return await fn(self, request, context)
    return unary


@milvus_servicer(SERVICE, query_coord_pb2_grpc.QueryNodeServicer)
class QueryNodeServicer:
    """milvus.proto.query.QueryNode over one :class:`QueryNode`."""

    def __init__(self, node: QueryNode) -> None:
        self.node = node
        self._stats = stats_of(node)   # looked up once: every search counts in it

    def _refuse_foreign(self, context) -> bool:
        for key, value in context.invocation_metadata() or ():
            if key.lower() != SERVER_ID_KEY:
                continue
            try:
                expected = int(value)
            except (TypeError, ValueError):
                return False
            err = self.node.node_mismatch(expected)
            if err is None:
                return False
            context.set_code(grpc.StatusCode.UNKNOWN)
            context.set_details(str(err))
            return True
        return False

    # --- component -------------------------------------------------------------------------

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

    # --- segments ---------------------------------------------------------------------------

    @_node_checked
    async def LoadSegments(self, request, context):
        return await self.node.load_segments(request)

    @_node_checked
    async def ReleaseSegments(self, request, context):
        return await self.node.release_segments(request)

    @_node_checked
    async def ReleaseCollection(self, request, context):
        return await self.node.release_collection(request)

    @_node_checked
    async def LoadPartitions(self, request, context):
        return await self.node.load_partitions(request)

    @_node_checked
    async def ReleasePartitions(self, request, context):
        return await self.node.release_partitions(request)

    @_node_checked
    async def GetSegmentInfo(self, request, context):
        return await self.node.get_segment_info(request)

    @_node_checked
    async def WatchDmChannels(self, request, context):
        return await self.node.watch_dm_channels(request)

    @_node_checked
    async def UnsubDmChannel(self, request, context):
        return await self.node.unsub_dm_channel(request)

    @_node_checked
    async def SyncDistribution(self, request, context):
        return await self.node.sync_distribution(request)

    @_node_checked
    async def SyncReplicaSegments(self, request, context):
        return await self.node.sync_replica_segments(request)

    @_node_checked
    async def GetDataDistribution(self, request, context):
        return await self.node.get_data_distribution(request)

    # --- data -------------------------------------------------------------------------------

    @_node_checked
    async def GetStatistics(self, request, context):
        return await self.node.get_statistics(request)

    @_node_checked
    async def Search(self, request, context):
        # Milvus's querynode_sq_req_count / _latency: the delegator-level search a proxy sends
        started, ok = time.perf_counter(), False
        try:
            reply = await self.node.search(request)
            ok = reply.status.code == 0
            return reply
        finally:
            self._stats.observe_search(time.perf_counter() - started, ok, int(request.req.nq), request.ByteSize())

    @_node_checked
    async def SearchSegments(self, request, context):
        return await self.node.search_segments(request)

    @_node_checked
    async def Query(self, request, context):
        return await self.node.query(request)

    @_node_checked
    async def QuerySegments(self, request, context):
        return await self.node.query_segments(request)

    @_node_checked
    async def QueryStream(self, request, context):
        async for reply in self.node.query_stream(request):
            yield reply

    @_node_checked
    async def QueryStreamSegments(self, request, context):
        async for reply in self.node.query_stream_segments(request):
            yield reply

    @_node_checked
    async def Delete(self, request, context):
        return await self.node.delete(request)

    @_node_checked
    async def DeleteBatch(self, request, context):
        return await self.node.delete_batch(request)


async def serve_querynode(node: QueryNode, host: str, port: int, interceptors=(), tls=None) -> GrpcServer:
    """Start the node's gRPC server; sets ``node.address`` to the bound ``host:port``.  Callers in this
    process (the coordinator's proxy, when the node runs in its process) reach the servicer directly
    (:mod:`vecgrid.common.in_process`) until the server stops."""
    server = GrpcServer("querynode gRPC")
    servicer = QueryNodeServicer(node)
    bound = await server.start(host, port, [(query_coord_pb2_grpc.add_QueryNodeServicer_to_server,
                                             servicer, SERVICE.full_name)], interceptors, tls)
    node.address = f"{host}:{bound}"
    node.settings.querynode.port = bound  # ShowConfigurations reports what the process really uses
    server.serve_in_process(node.address, servicer)
    return server
