"""Authentication and rights on every gRPC service (auth on: :func:`vecgrid.common.auth.auth_enabled`).

A call carries Milvus's ``authorization`` metadata:

* ``Cluster <secret>``: the cluster's own processes (coordinator, query nodes, their proxies) —
  every method;
* ``base64(user:password)`` (as pymilvus sends it) or ``Bearer <access token>``: a user, whose roles
  give rights (:func:`right_of` says which right each method needs).  The coordinator checks both
  forms against the users (the REST app's login and tokens); a query node has no users and takes
  only access tokens, for read methods.

A call without valid credentials fails with ``UNAUTHENTICATED``; one beyond the caller's rights with
``PERMISSION_DENIED``; neither runs the method.  Health and reflection stay open (load balancers and
container health checks ask them; they answer no data).

State: the kept rights of checked credentials (:class:`~vecgrid.common.auth.KeptRights`), owned by the
server's event loop.
"""

from __future__ import annotations

import hmac
from typing import Callable

import grpc

from vecgrid.common.auth import AUTHORIZATION, BEARER_SCHEME, CLUSTER_SCHEME, KeptRights, RightsChecker
from vecgrid.common.feathers_errors import FeathersError

#: services any caller may use
OPEN_SERVICES = ("grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
                 "grpc.reflection.v1.ServerReflection")
#: services only the cluster's own processes use
CLUSTER_SERVICES = ("vecgrid.wal.ChannelStream",)
READ_PREFIXES = ("Get", "Show", "List", "Describe", "Check", "Has", "Search", "Query", "AllocTimestamp")
#: QueryCoord methods that change what is loaded (REST gives them to writers, as a collection's load)
LOAD_METHODS = ("LoadCollection", "LoadPartitions", "ReleaseCollection", "ReleasePartitions",
                "SyncNewCreatedPartition", "UpdateLoadConfig")
#: Milvus's public API: reads need ``read``, database changes ``admin``, every other change ``write``
#: (as the REST app gives its writers collections, indexes, loads and data)
MILVUS_SERVICE = "milvus.proto.milvus.MilvusService"
MILVUS_READ_METHODS = ("Connect",)
MILVUS_ADMIN_METHODS = ("CreateDatabase", "DropDatabase", "AlterDatabase")



def right_of(service: str, method: str) -> str:
    """The right a method needs: ``read``, ``write``, ``admin``, or ``cluster`` (the cluster's own)."""
    if service in CLUSTER_SERVICES:
        return "cluster"
    read = method.startswith(READ_PREFIXES)
    if service == "milvus.proto.query.QueryNode":
        return "read" if read else "cluster"  # loads, releases, deletes, syncs: the coordinator's
    if service == "vecgrid.write.WriteService":
        return "read" if read else "write"
    if service == MILVUS_SERVICE:
        if read or method in MILVUS_READ_METHODS:
            return "read"
        return "admin" if method in MILVUS_ADMIN_METHODS else "write"
    if read:
        return "read"
    if service == "milvus.proto.query.QueryCoord" and method in LOAD_METHODS:
        return "write"
    return "admin"


def _refusal(handler: grpc.RpcMethodHandler, code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    """A handler of ``handler``'s kind that fails with ``code`` without running the method."""

    async def unary(request, context):
        await context.abort(code, message)

    async def stream(request, context):
        await context.abort(code, message)
        yield  # pragma: no cover - abort raises

    kw = dict(request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer)
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(stream, **kw)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(unary, **kw)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(stream, **kw)
    return grpc.unary_unary_rpc_method_handler(unary, **kw)


class ServerAuth(grpc.aio.ServerInterceptor):
    """Checks every call's credentials before its method runs (see the module)."""

    def __init__(self, cluster_secret: str, check_user: RightsChecker | None,
                 revision: Callable[[], int] | None = None) -> None:
        """``revision``: the count of logouts the user checks honour (see KeptRights)."""
        self._cluster = (CLUSTER_SCHEME + cluster_secret).encode()
        self._check_user = check_user
        self._rights = KeptRights(self._user_rights, revision=revision)

    async def intercept_service(self, continuation, details):
        handler = await continuation(details)
        service, _, method = details.method.lstrip("/").partition("/")
        if handler is None or service in OPEN_SERVICES:
            return handler
        value = next((v for k, v in details.invocation_metadata or () if k == AUTHORIZATION), None)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if not value:
            return _refusal(handler, grpc.StatusCode.UNAUTHENTICATED,
                            "authentication required: send 'authorization' metadata (base64 user:password, "
                            "or Bearer <access token>)")
        if hmac.compare_digest(value.encode(), self._cluster):
            return handler
        rights = await self._rights.rights(value, "")  # grpc.aio gives interceptors no peer address
        if rights is None:
            return _refusal(handler, grpc.StatusCode.UNAUTHENTICATED, "invalid credentials")
        need = right_of(service, method)
        if need not in rights:
            what = "the cluster's own processes" if need == "cluster" else f"the '{need}' right"
            return _refusal(handler, grpc.StatusCode.PERMISSION_DENIED, f"{service}.{method} needs {what}")
        return handler

    async def _user_rights(self, value: str, peer: str) -> frozenset[str] | None:
        if self._check_user is None or value.startswith(CLUSTER_SCHEME):
            return None
        return await self._check_user(value, peer)


def token_rights_checker(verify_access_token: Callable[[str], dict]) -> RightsChecker:
    """A query node's check: an access token (signature, audience, expiry) gives the ``read`` right."""

    async def rights(value: str, peer: str) -> frozenset[str] | None:
        if value[:len(BEARER_SCHEME)].lower() != BEARER_SCHEME.lower():
            return None
        try:
            verify_access_token(value[len(BEARER_SCHEME):].strip())
        except FeathersError:
            return None
        return frozenset({"read"})

    return rights
