"""The REST transport: one Tornado handler mapping HTTP to service methods (facts file §1-§4, §8, §10).

Every request goes through ``FeathersHandler``: ``prepare()`` resolves the path to a
service and checks the body size, the verb methods call the service through its hooks and
raise what fails, and :meth:`~vecgrid.http.base.BaseHandler.write_error` renders every failure
as a Feathers error body. A handler instance serves one request on the server's IOLoop and owns
its own fields.
"""

from __future__ import annotations

from typing import Any

import tornado.web

from vecgrid.common.feathers_errors import BadRequest, MethodNotAllowed, NotFound, PayloadTooLarge
from vecgrid.http.base import BaseHandler, decode_json
from vecgrid.http.feathers.application import STANDARD_METHODS, Application, RouteMatch
from vecgrid.http.feathers.openapi import openapi_document
from vecgrid.http.feathers.query import parse_query_string

PREFLIGHT_METHODS = "GET,HEAD,PUT,POST,DELETE,PATCH"
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DRAIN_BYTES = 1024 * 1024


def _unsupported(method: str) -> MethodNotAllowed:
    return MethodNotAllowed(f"Method `{method}` is not supported by this endpoint.")


class CorsHandler(BaseHandler):
    """The transport's CORS (§10): the allowed origin on every answer, errors included, and the
    preflight answer to ``OPTIONS``."""

    def set_default_headers(self) -> None:
        # Runs before initialize() and again after clear() on errors: reads app settings.
        cors_origins = self.application.settings.get("feathers_cors_origins", "*")
        origin = self.request.headers.get("Origin")
        if cors_origins == "*":
            self.set_header("Access-Control-Allow-Origin", "*")
        elif origin and origin in cors_origins:
            self.set_header("Access-Control-Allow-Origin", origin)
        self.set_header("Vary", "Origin")

    def options(self, *_: str) -> None:
        # Preflight; a bare OPTIONS gets the same answer rather than a 404/405.
        self.set_header("Access-Control-Allow-Methods", PREFLIGHT_METHODS)
        requested = self.request.headers.get("Access-Control-Request-Headers")
        if requested:
            self.set_header("Access-Control-Allow-Headers", requested)
        self.set_status(204)
        self.finish()


@tornado.web.stream_request_body
class FeathersHandler(CorsHandler):
    """Maps one HTTP request to one service call and its answer."""

    SUPPORTED_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")

    def initialize(self, app: Application, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self._chunks: list[bytes] = []
        self._body_size = 0
        self._match: RouteMatch | None = None

    # -- shared per-request work -------------------------------------------------------
    def prepare(self) -> None:
        # Our own limit rules: Tornado's would close the connection with a bare 400. A
        # chunked body (no Content-Length) is read and dropped up to DRAIN_BYTES past the
        # limit so that it can still get the 413 body; beyond that Tornado closes.
        self.request.connection.set_max_body_size(self.max_body_bytes + DRAIN_BYTES)
        length = self.request.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            # Refused before its body was read: Tornado closes the connection after this answer.
            raise self._too_large(headers={"Connection": "close"})
        if self.request.method == "OPTIONS":
            return
        # An unknown path is answered by the verb method, once the body is read: raised here, the
        # answer would leave an unread body on the connection and Tornado would close it under a
        # keep-alive client.
        self._match = self.app.lookup(self.request.path)

    def data_received(self, chunk: bytes) -> None:
        self._body_size += len(chunk)
        if self._body_size <= self.max_body_bytes:
            self._chunks.append(chunk)
        else:
            self._chunks.clear()  # chunked upload over the limit: refused once it is read

    @property
    def match(self) -> RouteMatch:
        """The service the path names; 404 when none does."""
        if self._match is None:
            raise NotFound(f"Path {self.request.path} not found")
        return self._match

    def _too_large(self, headers: dict[str, str] | None = None) -> PayloadTooLarge:
        error = PayloadTooLarge(f"Request body is larger than {self.max_body_bytes} bytes",
                                data={"limit": self.max_body_bytes})
        if headers:
            error.headers = headers  # answered by write_error with the body
        return error

    # -- verbs -------------------------------------------------------------------------
    async def get(self, *_: str) -> None:
        await self._dispatch("find" if self.match.id is None else "get")

    async def head(self, *_: str) -> None:
        await self.get()

    async def post(self, *_: str) -> None:
        custom = self.request.headers.get("X-Service-Method")
        if custom is not None:
            await self._dispatch_custom(custom)
        else:
            await self._dispatch("create", with_body=True, status=201, with_id=False)

    async def put(self, *_: str) -> None:
        if self.match.id is None and self.match.service.exposes("update"):
            # Refused before any body parsing or hook: nothing may change (§3).
            raise BadRequest("You can not replace multiple instances. Did you mean 'patch'?")
        await self._dispatch("update", with_body=True)

    async def patch(self, *_: str) -> None:
        await self._dispatch("patch", with_body=True)

    async def delete(self, *_: str) -> None:
        await self._dispatch("remove")

    # -- the mapping -------------------------------------------------------------------
    async def _dispatch(self, method: str, *, with_body: bool = False, status: int = 200,
                        with_id: bool = True) -> None:
        registered = self.match.service
        if not registered.exposes(method):
            raise _unsupported(method)
        data = self._body() if with_body else None
        params = self._params()
        result = await registered.call(method, id=self._match.id if with_id else None,
                                       data=data, params=params)
        self._answer(result, status, params)

    async def _dispatch_custom(self, method: str) -> None:
        registered = self.match.service
        if method in STANDARD_METHODS or method not in registered.custom_methods:
            raise _unsupported(method)
        params = self._params()
        result = await registered.call(method, data=self._body(), params=params)
        self._answer(result, 200, params)

    def _params(self) -> dict:
        return {
            "query": parse_query_string(self.request.query),
            "route": dict(self._match.route),
            "provider": "rest",
            "headers": {k.lower(): v for k, v in self.request.headers.items()},
            "ip": self.request.remote_ip,  # per-address limits (authentication)
        }

    def _body(self) -> Any:
        if self._body_size > self.max_body_bytes:
            raise self._too_large()
        raw = b"".join(self._chunks)
        if not raw:
            return None
        content_type = self.request.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
        if content_type in ("application/x-www-form-urlencoded", "text/plain"):
            text = self._text(raw)
            if content_type == "text/plain":
                return text
            return parse_query_string(text)  # extended urlencoded bodies: qs, as Express's body parser
        try:
            return decode_json(raw)  # checks UTF-8 itself: no decoded copy of a large body
        except ValueError as error:
            self._text(raw)  # the UTF-8 message where that is the fault
            raise BadRequest(f"Invalid JSON body: {error}") from None

    @staticmethod
    def _text(raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BadRequest("Request body is not valid UTF-8") from error

    def _answer(self, result: Any, status: int, params: dict | None = None) -> None:
        # A service (or hook) answers headers by filling params["response_headers"] (e.g. X-Vecgrid-Ts).
        for name, value in ((params or {}).get("response_headers") or {}).items():
            self.set_header(name, str(value))
        if result is None:
            self.set_status(204)
            self.finish()
            return
        self.send_json(result, status)


class OpenAPIHandler(CorsHandler):
    """``GET /openapi.json``: the document of the services, built per request from the registry
    (cheap, and never stale if a service is mounted after the server started)."""

    SUPPORTED_METHODS = ("GET", "HEAD", "OPTIONS")

    def initialize(self, app: Application, extra: dict[str, Any] | None = None) -> None:
        self.app = app
        self.extra = extra

    def get(self) -> None:
        settings = self.app.settings
        self.send_json(openapi_document(self.app, title=settings.get("title", "Feathers API"),
                                        version=str(settings.get("version", "1.0.0")),
                                        description=settings.get("description"), extra=self.extra))

    def head(self) -> None:
        self.get()


def plain_openapi(handlers: list, more: list[dict[str, Any]] = ()) -> dict[str, Any]:
    """The ``OPENAPI`` declarations of the plain handlers' classes and ``more``, merged (a
    declaration shared by several routes counts once)."""
    out: dict[str, Any] = {"paths": {}, "schemas": {}, "tags": []}
    seen: set[int] = set()
    declarations = [getattr(r[1], "OPENAPI", None) if isinstance(r, tuple) and len(r) > 1 else None
                    for r in handlers] + list(more)
    for declared in declarations:
        if not declared or id(declared) in seen:
            continue
        seen.add(id(declared))
        for path, item in declared.get("paths", {}).items():
            out["paths"].setdefault(path, {}).update(item)
        out["schemas"].update(declared.get("schemas", {}))
        out["tags"] += [t for t in declared.get("tags", []) if t not in out["tags"]]
    return out


def make_tornado_app(app: Application, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                     cors_origins: str | list[str] = "*", plain_handlers: list | None = None,
                     openapi: list[dict[str, Any]] = (), **tornado_settings: Any) -> tornado.web.Application:
    """The Tornado application serving every service of ``app`` through one handler.

    ``plain_handlers`` are Tornado routes matched first (``/health``, ``/metrics``: endpoints
    that are not services); then ``GET /openapi.json``, the OpenAPI 3.1 document of the
    services (``app.settings`` ``title``/``version``/``description`` fill its ``info``) and of
    the plain handlers whose class declares ``OPENAPI = {"paths": ..., "schemas": ..., "tags": ...}``
    or that ``openapi`` declares in the same form; every other path is the services'.
    """
    handler_args = {"app": app, "max_body_bytes": max_body_bytes}
    routes = list(plain_handlers or []) + [
        (r"/openapi\.json", OpenAPIHandler, {"app": app, "extra": plain_openapi(plain_handlers or [], openapi)}),
        (r"/.*", FeathersHandler, handler_args),
    ]
    return tornado.web.Application(routes, feathers_cors_origins=cors_origins, **tornado_settings)
