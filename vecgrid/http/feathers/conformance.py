"""The Feathers conformance app (``docs/feathers.md``).

The framework's proof that it behaves like a Feathers v5 server: the memory adapter, hooks and
authentication of :mod:`vecgrid.http.feathers`, exposing exactly the services the spec lists, over the one
REST handler.  The project's tests and the official Feathers JavaScript client drive it over real
HTTP; ``vecgrid conformance-app --port 3030`` starts it.

Everything is in memory: a fresh start is an empty app, with a fresh random token secret (a token
of an earlier run names a user that no longer exists).  The app's state belongs to the IOLoop that
serves it.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
from typing import Any, Callable

import tornado.httpserver
import tornado.netutil

from argon2 import PasswordHasher

from vecgrid.http.feathers.adapters.memory import MemoryService, MemoryStore
from vecgrid.http.feathers.application import Application, HookContext
from vecgrid.http.feathers.authentication import (AuthenticationService, authenticate, hash_password,
                                                  protect)
from vecgrid.http.feathers.rest import make_tornado_app

# (path, pagination, multi) of each view; a group's views share one collection.
_PEOPLE_VIEWS: tuple[tuple[str, dict | None, Any], ...] = (
    ("", None, False),
    ("-paginated", {"default": 10, "max": 100}, ["create", "patch", "remove"]),
    ("-paginated-small", {"default": 1, "max": 2}, False),
)


def _people_schema(id_field: str) -> dict[str, str]:
    return {"name": "string", "age": "number", "created": "boolean", id_field: "number"}


def _mount_people(app: Application, base: str, id_field: str) -> None:
    shared = MemoryStore()
    for suffix, paginate, multi in _PEOPLE_VIEWS:
        app.use(base + suffix, MemoryService(id=id_field, paginate=paginate, multi=multi,
                                             query_schema=_people_schema(id_field), shared=shared))


def _mount_users(app: Application, hasher: PasswordHasher) -> None:
    app.use("users", MemoryService(paginate={"default": 10, "max": 50}))
    jwt = authenticate("jwt")
    hashed = hash_password("password", hasher=hasher)
    app.service("users").hooks({
        "before": {"create": [hashed],
                   "find": [jwt], "get": [jwt], "remove": [jwt],
                   "update": [jwt, hashed],
                   "patch": [jwt, hashed]},
        "after": {"all": [protect("password")]},
    })


def _owned_by_route_user(ctx: HookContext) -> None:
    """Messages belong to the route's user: stamped on writes, required by every read and change."""
    user_id = ctx.params["route"].get("userId")
    if ctx.method in ("create", "update") and isinstance(ctx.data, dict):
        ctx.data = {**ctx.data, "userId": user_id}
    elif ctx.method == "patch" and isinstance(ctx.data, dict):
        ctx.data = {k: v for k, v in ctx.data.items() if k != "userId"}
    if ctx.method != "create":
        ctx.params["query"] = {**ctx.params.get("query", {}), "userId": user_id}


def _mount_messages(app: Application) -> None:
    app.use("users/:userId/messages", MemoryService())
    app.service("users/:userId/messages").hooks({"before": {"all": [_owned_by_route_user]}})


class EchoService:
    """Answers what it was called with: the raw parsed query, the route and the provider."""

    async def find(self, params: dict) -> dict:
        return {"method": "find", "query": params.get("query"), "route": params.get("route"),
                "provider": params.get("provider")}

    async def get(self, id: Any, params: dict) -> dict:  # noqa: A002 - Feathers signature
        return {"method": "get", "id": id, "query": params.get("query")}

    async def create(self, data: Any, params: dict) -> dict:
        return {"method": "create", "data": data, "query": params.get("query")}

    async def echo(self, data: Any, params: dict) -> dict:
        return {"method": "echo", "data": data, "query": params.get("query"),
                "route": params.get("route"), "provider": params.get("provider")}

    async def nothing(self, data: Any, params: dict) -> None:
        return None


def build_app(*, secret: str | None = None, clock: Callable[[], float] | None = None,
              login_max_failures: int = 10, login_window_s: float = 300.0,
              hasher: PasswordHasher | None = None) -> Application:
    """The conformance app's services on a fresh Feathers application.

    ``hasher``: Argon2id with argon2-cffi's defaults unless given (test suites that start many apps
    pass cheaper parameters; the wire behaviour does not depend on them).
    """
    hasher = hasher if hasher is not None else PasswordHasher()
    app = Application()
    _mount_people(app, "people", "id")
    _mount_people(app, "people-customid", "customid")
    _mount_users(app, hasher)
    auth_options: dict[str, Any] = {"max_failures": login_max_failures, "failure_window_s": login_window_s,
                                    "hasher": hasher}
    if clock is not None:
        auth_options["clock"] = clock
    app.use("authentication", AuthenticationService(secret or secrets.token_urlsafe(48), **auth_options))
    _mount_messages(app)
    app.use("echo", EchoService(), {"methods": ["find", "get", "create", "echo", "nothing"]})
    app.use("secure-echo", EchoService(), {"methods": ["find", "echo"]})
    app.service("secure-echo").hooks({"before": {"all": [authenticate("jwt")]}})
    return app


async def serve(port: int, host: str = "127.0.0.1", *, announce: Callable[[str], None] | None = None) -> None:
    """Serves a fresh conformance app until SIGINT or SIGTERM; announces its URL once listening."""
    sockets = tornado.netutil.bind_sockets(port, host)
    server = tornado.httpserver.HTTPServer(make_tornado_app(build_app()))
    server.add_sockets(sockets)
    bound = sockets[0].getsockname()[1]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    (announce or (lambda line: print(line, flush=True)))(f"Feathers conformance app listening on http://{host}:{bound}")
    try:
        await stop.wait()
    finally:
        server.stop()
        await server.close_all_connections()
