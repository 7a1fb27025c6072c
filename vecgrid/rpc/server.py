"""A grpc.aio server with the standard health and reflection services.

Both the coordinator and every query node serve through :class:`GrpcServer`.
Health reports SERVING for each Milvus service once started and NOT_SERVING as
soon as shutdown begins, before ``stop(grace)`` drains in-flight calls, so load
balancers stop routing first.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from vecgrid.common.limits import GRPC_MESSAGE_OPTIONS

log = logging.getLogger(__name__)

_OPTIONS = [
    *GRPC_MESSAGE_OPTIONS,
    # Without this, a second server could silently share a port that is already in use.
    ("grpc.so_reuseport", 0),
]


class PortInUse(OSError):
    """The address a server was asked to listen on cannot be bound."""


class GrpcServer:
    """One listening gRPC server hosting Milvus services plus health and reflection."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.server: grpc.aio.Server | None = None
        self.health = health.aio.HealthServicer()
        self.port = 0
        self.service_names: list[str] = []

    async def start(self, host: str, port: int,
                    services: Iterable[tuple[Callable, object, str]]) -> int:
        """Bind ``host:port`` (0 = any free port) and serve; returns the bound port.

        ``services`` holds ``(add_XServicer_to_server, servicer, full_service_name)``.
        """
        server = grpc.aio.server(options=_OPTIONS)
        for add, servicer, name in services:
            add(servicer, server)
            self.service_names.append(name)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        reflection.enable_server_reflection(
            [*self.service_names, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
        try:
            bound = server.add_insecure_port(f"{host}:{port}")
        except RuntimeError as e:
            raise PortInUse(f"{self.what}: cannot listen on {host}:{port} ({e})") from None
        if bound == 0:
            raise PortInUse(f"{self.what}: cannot listen on {host}:{port} (address in use or unavailable)")
        await server.start()
        self.server, self.port = server, bound
        for name in self.service_names:
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        await self.health.set("", health_pb2.HealthCheckResponse.SERVING)
        return bound

    async def stop(self, grace: float) -> None:
        if self.server is None:
            return
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        self.server = None
