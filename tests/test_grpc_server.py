"""GrpcServer: services reach grpc.aio as generic handlers only (see ``_GenericHandlersOnly``)."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from vecgrid.proto import query_coord_pb2, query_coord_pb2_grpc
from vecgrid.rpc.server import GrpcServer


def _pending_registered_calls() -> int:
    return sum("_request_registered_call" in repr(t) for t in asyncio.all_tasks())


async def test_a_many_method_service_adds_no_per_method_request_tasks_and_still_answers():
    """grpc.aio keeps a pending request task per registered method and waits on all of them after every
    call it accepts: QueryCoord's methods made ~40 of them, scanned per call on the loop.  Only reflection
    (one method, added on the server itself) may keep one; the servicer's methods still answer."""
    server = GrpcServer("test")
    port = await server.start("127.0.0.1", 0, [(query_coord_pb2_grpc.add_QueryCoordServicer_to_server,
                                                query_coord_pb2_grpc.QueryCoordServicer(),
                                                "milvus.proto.query.QueryCoord")])
    try:
        assert _pending_registered_calls() <= 1
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as e:   # the base servicer's answer, routed to it
                await query_coord_pb2_grpc.QueryCoordStub(channel).ShowCollections(
                    query_coord_pb2.ShowCollectionsRequest()
                )
            assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
            health = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="milvus.proto.query.QueryCoord"))
            assert health.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(0)
