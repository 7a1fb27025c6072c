"""Who may call: the one auth switch, the roles, the secrets, and the credentials this process sends.

* **The switch** (``vecgrid.http.services.accounts.auth_enabled``): ``[http] auth`` = ``on``, ``off``
  or ``auto`` (on whenever the coordinator binds anything but loopback).  It covers REST and every
  gRPC service alike.
* **Roles** (:data:`ROLE_RIGHTS`): ``admin`` (every right), ``writer`` (``read``, ``write``),
  ``reader`` (``read``).  REST services and gRPC methods each name the right they need.
* **Secrets**, both in the data dir (mode 0600, :func:`data_dir_secret`), made on first use: the
  access tokens' HS256 secret (or ``[http] jwt_secret``) and the *cluster secret* with which the coordinator, its query nodes and their proxies authenticate to each other.  The
  coordinator hands both to the workers it admits (the QueryNode plugin).
* **Credentials this process sends** on every gRPC call it makes (:func:`send_authorization`), as
  Milvus's ``authorization`` metadata: ``Cluster <secret>`` inside the cluster, ``Bearer <token>``
  from the CLI.  Set once when the process starts (the coordinator, a worker's plugin, a CLI
  command), before its channels are made; read by the channel interceptors.
"""

from __future__ import annotations

import collections
import hashlib
import os
import secrets
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable

import grpc

ROLE_RIGHTS: dict[str, frozenset[str]] = {
    "admin": frozenset({"read", "write", "admin"}),
    "writer": frozenset({"read", "write"}),
    "reader": frozenset({"read"}),
}
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
#: shortest accepted secret (HS256 keys and the cluster secret), in bytes
MIN_SECRET_BYTES = 32
TOKEN_SECRET_FILE = "http_jwt_secret"
CLUSTER_SECRET_FILE = "cluster_secret"
#: the gRPC metadata key of credentials (Milvus's)
AUTHORIZATION = "authorization"
CLUSTER_SCHEME = "Cluster "
BEARER_SCHEME = "Bearer "


def rights_of_roles(roles: Iterable[str] | None) -> frozenset[str]:
    return frozenset().union(*(ROLE_RIGHTS.get(r, frozenset()) for r in roles or ()))


def data_dir_secret(data_dir: str | os.PathLike[str], name: str) -> str:
    """The data dir's secret file ``name``, created (mode 0600) with a random secret on first use;
    ``ValueError`` when the file holds fewer than :data:`MIN_SECRET_BYTES`."""
    path = Path(data_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        secret = path.read_text().strip()
        if len(secret.encode()) < MIN_SECRET_BYTES:
            raise ValueError(f"{path} holds fewer than {MIN_SECRET_BYTES} bytes; remove it to make a new one")
        return secret
    secret = secrets.token_urlsafe(48)
    with os.fdopen(fd, "w") as f:
        f.write(secret)
        f.flush()
        os.fsync(f.fileno())
    return secret


# -- what this process sends ---------------------------------------------------------------------

_sent: str | None = None  # assigned once at process start (send_authorization), then only read


def send_authorization(value: str | None) -> None:
    """The ``authorization`` value every gRPC call of this process carries (``None``: none)."""
    global _sent
    _sent = value


def sent_authorization() -> str | None:
    return _sent


def _with_authorization(metadata: Any) -> list[tuple[str, Any]] | None:
    items = list(metadata or ())
    if _sent is None or any(k == AUTHORIZATION for k, _ in items):
        return None  # nothing to add, or the caller chose its own credentials
    return [*items, (AUTHORIZATION, _sent)]


class _AioAuthUnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation, details, request):
        metadata = _with_authorization(details.metadata)
        return await continuation(details if metadata is None else details._replace(metadata=metadata), request)


class _AioAuthUnaryStream(grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation, details, request):
        metadata = _with_authorization(details.metadata)
        return await continuation(details if metadata is None else details._replace(metadata=metadata), request)


def aio_interceptors() -> list[Any]:
    """Interceptors for a ``grpc.aio`` channel that add this process's credentials to each call; none
    when it sends none (auth off), so that a call pays no interceptor on the search path."""
    return [_AioAuthUnaryUnary(), _AioAuthUnaryStream()] if _sent is not None else []


class _CallDetails(collections.namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials",
                                                           "wait_for_ready", "compression")),
                   grpc.ClientCallDetails):
    pass


class _SyncAuth(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    @staticmethod
    def _details(details: Any) -> Any:
        metadata = _with_authorization(details.metadata)
        if metadata is None:
            return details
        return _CallDetails(details.method, details.timeout, metadata, details.credentials,
                            getattr(details, "wait_for_ready", None), getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)


def authorized_channel(channel: grpc.Channel) -> grpc.Channel:
    """A blocking channel whose calls carry this process's credentials (the channel itself when none)."""
    return grpc.intercept_channel(channel, _SyncAuth()) if _sent is not None else channel


#: ``(authorization value, peer) -> rights``, or ``None`` for invalid credentials
RightsChecker = Callable[[str, str], Awaitable["frozenset[str] | None"]]


class KeptRights:
    """The rights of credentials checked lately (gRPC servers, Milvus's REST v2): a success is kept for
    ``ttl_s``, so a password is not hashed on every call; a failure is not kept (it goes through the
    login limiter every time).  At most ``entries`` are kept, under their SHA-256.  ``revision``, when
    given, counts the changes to what tokens grant (logouts, removed users, new roles): an entry kept
    before the latest one is checked again, so such a token is refused at once.

    State: the kept entries, owned by the server's event loop."""

    def __init__(self, check: RightsChecker, ttl_s: float = 30.0, entries: int = 1024,
                 revision: Callable[[], int] | None = None) -> None:
        self.check = check
        self.ttl_s = ttl_s
        self.entries = entries
        self.revision = revision or (lambda: 0)
        self._kept: dict[bytes, tuple[float, int, frozenset[str]]] = {}   # expiry, revision, rights

    async def rights(self, value: str, peer: str = "") -> frozenset[str] | None:
        key = hashlib.sha256(value.encode()).digest()
        now = time.monotonic()
        revision = self.revision()
        hit = self._kept.get(key)
        if hit is not None and hit[0] > now and hit[1] == revision:
            return hit[2]
        rights = await self.check(value, peer)
        if rights is not None:
            if len(self._kept) >= self.entries:
                self._kept = {k: v for k, v in self._kept.items() if v[0] > now and v[1] == revision}
                if len(self._kept) >= self.entries:
                    self._kept.clear()
            self._kept[key] = (now + self.ttl_s, revision, rights)
        return rights
