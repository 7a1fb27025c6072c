"""The REST transport: one Tornado handler mapping HTTP to service methods (facts file §1-§4, §8, §10).

Every request goes through ``FeathersHandler``: ``prepare()`` resolves the path to a
service and checks the body size, the verb methods call the service through its hooks,
and every failure leaves as a Feathers error body (``write_error`` is the one renderer
for errors Tornado raises itself). A handler instance serves one request on the
server's IOLoop and owns its own fields.
"""

from __future__ import annotations

import json
import logging
import math
import re
import uuid
from typing import Any

import orjson
import tornado.web

from vecgrid.http.feathers.application import STANDARD_METHODS, Application, RouteMatch
from vecgrid.common.feathers_errors import (BadRequest, FeathersError, GeneralError,
                                          MethodNotAllowed, NotFound, PayloadTooLarge,
                                          error_for_status)
from vecgrid.http.feathers.openapi import openapi_document
from vecgrid.http.feathers.query import parse_query_string

log = logging.getLogger(__name__)

JSON_CONTENT_TYPE = "application/json; charset=utf-8"
PREFLIGHT_METHODS = "GET,HEAD,PUT,POST,DELETE,PATCH"
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DRAIN_BYTES = 1024 * 1024

_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
# orjson reads integers beyond the int64/uint64 range as floats; a body with a run of 19 digits
# takes the standard library's exact path instead (rare: vecgrid sends such ids as strings).
_LONG_DIGITS = b"0" * 19
# Every digit as "0": a run of 19 is then a substring search, where a regex scan of a body of vectors
# cost 40 % of an insert's time on the loop.
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_NOT_JSON_LITERAL = re.compile(rb"-?(?:NaN|Infinity)")


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON of a result: arrays too (Tornado's ``write`` refuses lists).

    Through orjson (numpy arrays and scalars included, without per-element Python work). A
    non-finite float becomes ``null``, as ``JSON.stringify`` writes it in a Feathers server (JSON
    has no NaN). Keys that are not strings are written as ``str`` would (``1`` → ``"1"``, ``None``
    → ``"null"``), as the standard library does. What orjson refuses but JSON can carry (integers
    beyond 64 bits, numpy arrays of strings) goes through the standard library with the same rules;
    anything else that is not JSON raises ``TypeError`` (a 500 with a request id).
    """
    try:
        return orjson.dumps(value, option=_ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        return json.dumps(_finite(value), separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False).encode()


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy arrays and scalars
        return _finite(value.tolist())
    return value


def decode_json(raw: bytes | str) -> Any:
    """A JSON body by ``JSON.parse`` rules: ``ValueError`` for ``NaN``/``Infinity`` literals, numbers
    beyond double range (JavaScript would read Infinity and answer null) and lone surrogates, so a
    malformed body is a 400, not a crash later. Integers keep every digit."""
    data = raw.encode() if isinstance(raw, str) else raw
    if _LONG_DIGITS in data.translate(_DIGITS_AS_ZERO):
        return json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as error:
        # Name the literal JavaScript refuses, rather than orjson's "unexpected character".
        start = error.pos - 1 if data[error.pos - 1:error.pos] == b"-" else error.pos  # orjson points past a sign
        token = _NOT_JSON_LITERAL.match(data, start)
        if token is None:
            raise
        raise ValueError(f"{token.group().decode()} is not JSON (line {error.lineno} column {error.colno})") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text} is out of range")
    return number


def _unsupported(method: str) -> MethodNotAllowed:
    return MethodNotAllowed(f"Method `{method}` is not supported by this endpoint.")


@tornado.web.stream_request_body
class FeathersHandler(tornado.web.RequestHandler):
    """Maps one HTTP request to one service call and its answer."""

    SUPPORTED_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")

    def initialize(self, app: Application, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self._chunks: list[bytes] = []
        self._body_size = 0
        self._match: RouteMatch | None = None

    # -- shared per-request work -------------------------------------------------------
    def set_default_headers(self) -> None:
        # Runs before initialize() and again after clear() on errors: reads app settings.
        cors_origins = self.application.settings.get("feathers_cors_origins", "*")
        origin = self.request.headers.get("Origin")
        if cors_origins == "*":
            self.set_header("Access-Control-Allow-Origin", "*")
        elif origin and origin in cors_origins:
            self.set_header("Access-Control-Allow-Origin", origin)
        self.set_header("Vary", "Origin")

    def prepare(self) -> None:
        # Our own limit rules: Tornado's would close the connection with a bare 400. A
        # chunked body (no Content-Length) is read and dropped up to DRAIN_BYTES past the
        # limit so that it can still get the 413 body; beyond that Tornado closes.
        self.request.connection.set_max_body_size(self.max_body_bytes + DRAIN_BYTES)
        length = self.request.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            raise self._too_large()
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

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(f"Request body is larger than {self.max_body_bytes} bytes",
                               data={"limit": self.max_body_bytes})

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
            await self._fail(BadRequest("You can not replace multiple instances. Did you mean 'patch'?"))
            return
        await self._dispatch("update", with_body=True)

    async def patch(self, *_: str) -> None:
        await self._dispatch("patch", with_body=True)

    async def delete(self, *_: str) -> None:
        await self._dispatch("remove")

    def options(self, *_: str) -> None:
        # Preflight (§10); a bare OPTIONS gets the same answer rather than a 404/405.
        self.set_header("Access-Control-Allow-Methods", PREFLIGHT_METHODS)
        requested = self.request.headers.get("Access-Control-Request-Headers")
        if requested:
            self.set_header("Access-Control-Allow-Headers", requested)
        self.set_status(204)
        self.finish()

    # -- the mapping -------------------------------------------------------------------
    async def _dispatch(self, method: str, *, with_body: bool = False, status: int = 200,
                        with_id: bool = True) -> None:
        registered = self.match.service
        try:
            if not registered.exposes(method):
                raise _unsupported(method)
            data = self._body() if with_body else None
            params = self._params()
            result = await registered.call(method, id=self._match.id if with_id else None,
                                           data=data, params=params)
        except Exception as error:  # noqa: BLE001 - every failure becomes a Feathers body
            await self._fail(error)
            return
        self._answer(result, status, params)

    async def _dispatch_custom(self, method: str) -> None:
        registered = self.match.service
        try:
            if method in STANDARD_METHODS or method not in registered.custom_methods:
                raise _unsupported(method)
            params = self._params()
            result = await registered.call(method, data=self._body(), params=params)
        except Exception as error:  # noqa: BLE001 - every failure becomes a Feathers body
            await self._fail(error)
            return
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
        self.set_status(status)
        self.set_header("Content-Type", JSON_CONTENT_TYPE)
        self.finish(encode_json(result))

    async def _fail(self, error: BaseException) -> None:
        if not isinstance(error, FeathersError):
            error = self._general_error(error)
        self._write_feathers_error(error)

    def _general_error(self, error: BaseException) -> GeneralError:
        request_id = uuid.uuid4().hex
        log.error("request %s %s %s failed (request id %s)", self.request.method,
                  self.request.path, type(error).__name__, request_id,
                  exc_info=(type(error), error, error.__traceback__))
        return GeneralError(f"Internal server error (request id {request_id})",
                            data={"requestId": request_id})

    def _write_feathers_error(self, error: FeathersError) -> None:
        if self._finished:
            return
        self.set_status(error.code)
        self.set_header("Content-Type", JSON_CONTENT_TYPE)
        for name, value in getattr(error, "headers", {}).items():  # e.g. Retry-After on a 429
            self.set_header(name, value)
        self.finish(encode_json(error.to_dict()))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Errors raised outside ``_dispatch`` (prepare, Tornado itself): same Feathers body."""
        exc_info = kwargs.get("exc_info")
        error = exc_info[1] if exc_info else None
        if isinstance(error, FeathersError):
            feathers_error = error
        elif isinstance(error, tornado.web.HTTPError):
            feathers_error = error_for_status(status_code, error.reason or self._reason)
        elif error is not None:
            feathers_error = self._general_error(error)
        else:
            feathers_error = error_for_status(status_code, self._reason)
        self.clear_header("Content-Type")
        if isinstance(feathers_error, PayloadTooLarge):
            # Refused before its body was read: Tornado closes the connection after this answer.
            self.set_header("Connection", "close")
        self.set_status(feathers_error.code)
        self.set_header("Content-Type", JSON_CONTENT_TYPE)
        self.finish(encode_json(feathers_error.to_dict()))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        # Feathers errors are answers, not server faults; everything else is logged with
        # its request id by _general_error.
        if isinstance(value, (FeathersError, tornado.web.HTTPError)):
            return
        if value is not None and not isinstance(value, Exception):
            super().log_exception(typ, value, tb)


class OpenAPIHandler(tornado.web.RequestHandler):
    """``GET /openapi.json``: the document of the services, built per request from the registry
    (cheap, and never stale if a service is mounted after the server started)."""

    SUPPORTED_METHODS = ("GET", "HEAD", "OPTIONS")

    def initialize(self, app: Application) -> None:
        self.app = app

    set_default_headers = FeathersHandler.set_default_headers
    write_error = FeathersHandler.write_error
    log_exception = FeathersHandler.log_exception
    _general_error = FeathersHandler._general_error
    options = FeathersHandler.options

    def get(self) -> None:
        settings = self.app.settings
        document = openapi_document(self.app, title=settings.get("title", "Feathers API"),
                                    version=str(settings.get("version", "1.0.0")),
                                    description=settings.get("description"))
        self.set_header("Content-Type", JSON_CONTENT_TYPE)
        self.finish(encode_json(document))

    def head(self) -> None:
        self.get()


def make_tornado_app(app: Application, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                     cors_origins: str | list[str] = "*", plain_handlers: list | None = None,
                     **tornado_settings: Any) -> tornado.web.Application:
    """The Tornado application serving every service of ``app`` through one handler.

    ``plain_handlers`` are Tornado routes matched first (``/health``, ``/metrics``: endpoints
    that are not services); then ``GET /openapi.json``, the OpenAPI 3.1 document of the
    services (``app.settings`` ``title``/``version``/``description`` fill its ``info``);
    every other path is the services'.
    """
    handler_args = {"app": app, "max_body_bytes": max_body_bytes}
    routes = list(plain_handlers or []) + [
        (r"/openapi\.json", OpenAPIHandler, {"app": app}),
        (r"/.*", FeathersHandler, handler_args),
    ]
    return tornado.web.Application(routes, feathers_cors_origins=cors_origins, **tornado_settings)
