"""A grpc.aio server with the standard health and reflection services.

Both the coordinator and every query node serve through :class:`GrpcServer`.
Health reports SERVING for each Milvus service once started and NOT_SERVING as
soon as shutdown begins, before ``stop(grace)`` drains in-flight calls, so load
balancers stop routing first.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable, Sequence

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from vecgrid.common import in_process
from vecgrid.common.limits import GRPC_MESSAGE_OPTIONS

log = logging.getLogger(__name__)

_OPTIONS = [
    *GRPC_MESSAGE_OPTIONS,
    # Without this, a second server could silently share a port that is already in use.
    ("grpc.so_reuseport", 0),
]


class _GenericHandlersOnly:
    """What generated ``add_*Servicer_to_server`` functions are given instead of the server: the services'
    generic handlers reach it, their registered-method tables do not.

    grpc.aio keeps one pending request task per registered method and, after every call it accepts,
    waits on all of them again (``asyncio.wait``): a QueryNode's ~30 methods made that ~60 callback changes
    and a scan per call on the event loop (a leader's nq=1 p90 went from 1.44x to 1.22-1.32x its p50 without
    them; a server with one generic handler never had it).  Generic handlers are looked up by method
    name per call instead.  Reflection is added to the server itself: it picks its servicer by the
    server's type, and its one method costs one task."""

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: Iterable[grpc.GenericRpcHandler]) -> None:
        self._server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, service_name: str, method_handlers: dict) -> None:
        """Dropped on purpose (see the class doc): the same handlers came as generic ones."""


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
        self._in_process: list[str] = []   # addresses registered with vecgrid.common.in_process

    async def start(self, host: str, port: int,
                    services: Iterable[tuple[Callable, object, str]],
                    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
                    tls: grpc.ServerCredentials | None = None) -> int:
        """Bind ``host:port`` (0 = any free port) and serve; returns the bound port.

        ``services`` holds ``(add_XServicer_to_server, servicer, full_service_name)``; ``interceptors``
        run before every call (:class:`vecgrid.rpc.auth.ServerAuth` when auth is on); ``tls``: serve TLS only.
        """
        server = grpc.aio.server(options=_OPTIONS, interceptors=list(interceptors) or None)
        generic_only = _GenericHandlersOnly(server)
        for add, servicer, name in services:
            add(servicer, generic_only)
            self.service_names.append(name)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, generic_only)
        reflection.enable_server_reflection(
            [*self.service_names, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
        try:
            address = f"{host}:{port}"
            bound = server.add_secure_port(address, tls) if tls is not None else server.add_insecure_port(address)
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

    def serve_in_process(self, address: str, servicer: object) -> None:
        """Let callers of this process reach ``servicer`` at ``address`` without gRPC, until :meth:`stop`."""
        in_process.register(address, servicer)
        self._in_process.append(address)

    async def stop(self, grace: float) -> None:
        for address in self._in_process:
            in_process.unregister(address)
        self._in_process.clear()
        if self.server is None:
            return
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        self.server = None
