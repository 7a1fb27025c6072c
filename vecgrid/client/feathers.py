"""A Feathers REST client for Python: the semantics of ``@feathersjs/rest-client`` and
``@feathersjs/authentication-client`` (facts file §11, seed "Client library").

``rest(base_url)`` picks a request library, and the app it gives hands out services::

    app = rest("http://localhost:3030").requests(requests.Session())
    people = app.service("people")
    people.create({"name": "Doug"})
    people.find({"query": {"name": {"$in": ["Doug", "Ann"]}, "$limit": 5}})
    echo = app.service("echo", methods=["echo"])        # custom methods are declared
    echo.echo({"x": 1})                                   # POST /echo + X-Service-Method: echo

What a call sends (§11): ``find`` → ``GET /path?<qs.stringify(query)>``, ``get`` →
``GET /path/<encodeURIComponent(id)>``, ``create`` → ``POST`` with a JSON body, ``update`` /
``patch`` / ``remove`` → ``PUT`` / ``PATCH`` / ``DELETE`` on ``/path/<id>`` or on ``/path``
when the id is ``None`` (multi), custom methods → ``POST /path`` with ``X-Service-Method``.
Every request says ``Accept: application/json``. ``params`` may hold ``query``, ``route``
(values for the path's ``:placeholders``), ``headers`` (win over every other header) and
``connection`` (options of the request library for this call, e.g. ``{"timeout": 5}``); a dict
given as ``response_headers`` receives the answer's headers (lower-case names), error or not.

Answers: a 2xx body is decoded from JSON, a 204 is ``None``; an error status raises the
Feathers error class named by the body's ``name`` (``vecgrid.common.feathers_errors``), or
the class of the status with the message ``JSON parsing error`` when the body is not JSON.
The raised error carries ``response`` (the :class:`~vecgrid.client.transports.HttpResponse`).

Events: after a successful ``create``/``update``/``patch``/``remove`` the calling service
emits ``created``/``updated``/``patched``/``removed`` once per record (a multi call's list
is emitted element by element), locally only, as the Feathers client does. Listeners get
``(record, context)`` or just ``(record)`` when they take one argument; an exception of a
listener is raised to the caller of the service method.

Authentication: ``app.authenticate({"strategy": "local", "email": ..., "password": ...})``
keeps the answer's ``accessToken`` (in ``app.authentication.storage``) and sends it with
every later call as ``Authorization: Bearer <token>``; ``app.re_authenticate()`` logs in
again with the stored token (``strategy: jwt``); ``app.logout()`` calls ``DELETE
/authentication`` and forgets the token. A 401-407 answer to a login removes the stored
token, as the Feathers authentication client does.

Sync and async: ``rest(url).urllib()``, ``.requests(session)`` and ``.httpx(httpx.Client())``
give an :class:`App` whose methods return results; ``.httpx(httpx.AsyncClient())`` gives an
:class:`AsyncApp` whose service and authentication methods are coroutines.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from qs_codec import encode as qs_encode

from vecgrid.client.transports import (AsyncHttpxTransport, HttpRequest, HttpResponse, HttpxTransport,
                                       RequestsTransport, UrllibTransport)
from vecgrid.common.feathers_errors import (BY_CODE, ERROR_CLASSES, BadRequest, FeathersError,
                                            GeneralError, NotAuthenticated)

STANDARD_METHODS = ("find", "get", "create", "update", "patch", "remove")
EVENT_OF_METHOD = {"create": "created", "update": "updated", "patch": "patched", "remove": "removed"}
# encodeURIComponent leaves these unescaped besides letters and digits.
_URI_COMPONENT_SAFE = "-_.!~*'()"


def encode_uri_component(value: Any) -> str:
    """JavaScript's ``encodeURIComponent`` of ``String(value)`` (booleans as ``true``/``false``)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = str(value)
    return urllib.parse.quote(text, safe=_URI_COMPONENT_SAFE)


def _jsonable(value: Any) -> Any:
    # numpy arrays and scalars (and anything else with tolist): one C-level conversion each.
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encode_body(data: Any) -> bytes:
    """Strict JSON: NaN and infinities are refused here rather than sent as invalid JSON."""
    try:
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                          default=_jsonable).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise BadRequest(f"Request data is not JSON: {error}") from error


def convert_error(payload: Any, status: int) -> FeathersError:
    """The Feathers error of an error body (the Feathers client's ``errors.convert``)."""
    if isinstance(payload, dict):
        cls = ERROR_CLASSES.get(payload.get("name")) if isinstance(payload.get("name"), str) else None
        message = payload.get("message")
        message = message if isinstance(message, str) else json.dumps(payload)
        if cls is None:
            cls = BY_CODE.get(status, GeneralError)
        return cls(message, payload.get("data"), payload.get("errors"))
    return BY_CODE.get(status, GeneralError)(str(payload))


def decode_response(response: HttpResponse) -> Any:
    """A 2xx body as JSON (204 → None), or the Feathers error of an error answer raised."""
    if 200 <= response.status < 300:
        if response.status == 204 or not response.body:
            return None
        try:
            return json.loads(response.body)
        except ValueError as cause:
            error = GeneralError("JSON parsing error", data={"status": response.status})
            error.response = response  # type: ignore[attr-defined]
            raise error from cause
    try:
        payload = json.loads(response.body)
    except ValueError:
        error = BY_CODE.get(response.status, GeneralError)("JSON parsing error")
    else:
        error = convert_error(payload, response.status)
    error.response = response  # type: ignore[attr-defined]
    raise error


# -- events ------------------------------------------------------------------------------------
@dataclass
class EventContext:
    """What a listener gets besides the record: the call that caused the event."""

    app: Any
    service: Any
    path: str
    method: str
    event: str
    id: Any = None
    data: Any = None
    params: dict = field(default_factory=dict)
    result: Any = None


def _takes_context(listener: Callable[..., Any]) -> bool:
    try:
        inspect.signature(listener).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # no signature (some builtins): give it the record only
        return False
    return True


class EventEmitter:
    """``on``/``off``/``once``/``emit`` in the Node way: listeners run in order, synchronously.

    The listener table is guarded by a lock (listeners may be added from any thread); ``emit``
    runs a snapshot of it outside the lock.
    """

    def __init__(self) -> None:
        self._listeners: dict[str, list[tuple[Callable[..., Any], bool, bool]]] = {}
        self._listeners_lock = threading.Lock()

    def on(self, event: str, listener: Callable[..., Any]) -> Callable[..., Any]:
        """Adds ``listener`` (called once per emit, in the order added); returns it."""
        return self._add(event, listener, once=False)

    def once(self, event: str, listener: Callable[..., Any]) -> Callable[..., Any]:
        return self._add(event, listener, once=True)

    def off(self, event: str, listener: Callable[..., Any] | None = None) -> None:
        """Removes one registration of ``listener`` (the latest), or every listener of ``event``."""
        with self._listeners_lock:
            entries = self._listeners.get(event, [])
            if listener is None:
                entries.clear()
                return
            for index in range(len(entries) - 1, -1, -1):
                if entries[index][0] == listener:
                    del entries[index]
                    return

    def listeners(self, event: str) -> list[Callable[..., Any]]:
        with self._listeners_lock:
            return [entry[0] for entry in self._listeners.get(event, [])]

    def _add(self, event: str, listener: Callable[..., Any], *, once: bool) -> Callable[..., Any]:
        if not callable(listener):
            raise TypeError("an event listener must be callable")
        with self._listeners_lock:
            self._listeners.setdefault(event, []).append((listener, once, _takes_context(listener)))
        return listener

    def _take(self, event: str) -> list[tuple[Callable[..., Any], bool, bool]]:
        with self._listeners_lock:
            entries = self._listeners.get(event, [])
            snapshot = list(entries)
            entries[:] = [entry for entry in entries if not entry[1]]
        return snapshot

    def emit(self, event: str, *args: Any) -> list[Any]:
        """Calls the listeners with ``args`` (the first only, for one-argument listeners)."""
        returned = []
        for listener, _once, takes_context in self._take(event):
            returned.append(listener(*args) if takes_context or len(args) < 2 else listener(args[0]))
        return returned


# -- services ----------------------------------------------------------------------------------
class _NoId:
    def __repr__(self) -> str:
        return "NO_ID"


NO_ID: Any = _NoId()


class _ServiceBase(EventEmitter):
    """A remote service at ``path``: builds requests; the sync/async subclasses send them."""

    def __init__(self, app: Any, path: str, methods: Iterable[str] = ()) -> None:
        super().__init__()
        self.app = app
        self.path = path.strip("/")
        self.base = f"{app.base_url}/{self.path}" if self.path else app.base_url
        self.methods: list[str] = list(STANDARD_METHODS)
        self._custom: set[str] = set()
        self.declare(methods)

    def declare(self, methods: Iterable[str]) -> None:
        """Adds custom methods (``methods`` of ``app.service``); standard names are already there."""
        for name in methods:
            if name in STANDARD_METHODS or name in self._custom:
                continue
            if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"{name!r} cannot be a custom method name")
            if hasattr(type(self), name):
                raise ValueError(f"custom method {name!r} would hide the client's own {name!r}")
            self._custom.add(name)
            self.methods.append(name)

    def __getattr__(self, name: str) -> Any:
        custom = self.__dict__.get("_custom")
        if custom is not None and name in custom:
            def call(data: Any = None, params: Mapping[str, Any] | None = None) -> Any:
                return self._call(name, data=data, params=params)

            call.__name__ = name
            return call
        raise AttributeError(f"{type(self).__name__!r} for {self.__dict__.get('path')!r} has no "
                             f"attribute {name!r} (declare custom methods with "
                             f"app.service(path, methods=[...]))")

    # What the Feathers client class lets a subclass override.
    def get_query(self, query: Mapping[str, Any] | None) -> str:
        """The query string with its ``?``, or ``''`` when empty (``qs.stringify`` rules)."""
        text = qs_encode(dict(query)) if query else ""
        return f"?{text}" if text else ""

    def make_url(self, query: Mapping[str, Any] | None, id: Any = NO_ID,  # noqa: A002
                 route: Mapping[str, Any] | None = None) -> str:
        route = route or {}
        parsed = urllib.parse.urlsplit(self.base)
        segments = parsed.path.split("/")
        for index, segment in enumerate(segments):
            if segment.startswith(":"):
                name = segment[1:]
                if name not in route or route[name] is None:
                    raise BadRequest(f"route placeholder :{name} of {self.path!r} has no value "
                                     f"in params['route']")
                segments[index] = encode_uri_component(route[name])
        url = urllib.parse.urlunsplit(parsed._replace(path="/".join(segments)))
        if id is not NO_ID and id is not None:
            url += "/" + encode_uri_component(id)
        return url + self.get_query(query)

    def _build(self, method: str, id: Any, data: Any, params: Mapping[str, Any]) -> HttpRequest:  # noqa: A002
        if method in ("get", "update", "patch", "remove") and id is NO_ID:
            raise TypeError(f"{method}() needs an id")
        if method == "get" and id is None:
            raise BadRequest("id for 'get' can not be None")
        verb = {"find": "GET", "get": "GET", "create": "POST", "update": "PUT",
                "patch": "PATCH", "remove": "DELETE"}.get(method, "POST")
        url_id = id if method in ("get", "update", "patch", "remove") else NO_ID
        url = self.make_url(params.get("query"), url_id, params.get("route"))
        headers: dict[str, str] = {"Accept": "application/json", **self.app.headers}
        token = params.get("accessToken")
        if token:
            options = self.app.authentication.options
            headers[options.header] = f"{options.scheme} {token}"
        custom = method not in STANDARD_METHODS
        body = None
        if method in ("create", "update", "patch") or custom:
            if data is not None:
                body = encode_body(data)
                headers["Content-Type"] = "application/json"
            elif custom:
                headers["Content-Type"] = "application/json"
        headers.update({str(k): str(v) for k, v in (params.get("headers") or {}).items()})
        if custom:
            headers["X-Service-Method"] = method
        connection = dict(params.get("connection") or {})
        return HttpRequest(verb, url, headers, body, connection)

    def _check_method(self, method: str) -> None:
        if method not in self.methods:
            raise AttributeError(f"service {self.path!r} has no method {method!r}")

    def _context(self, method: str, id: Any, data: Any, params: dict, result: Any) -> EventContext:  # noqa: A002
        return EventContext(app=self.app, service=self, path=self.path, method=method,
                            event=EVENT_OF_METHOD[method], id=None if id is NO_ID else id,
                            data=data, params=params, result=result)

    @staticmethod
    def _records(result: Any) -> list[Any]:
        return result if isinstance(result, list) else [result]


def _copy_headers(response: HttpResponse, params: Mapping[str, Any]) -> None:
    # Opt-in: a dict given as params["response_headers"] receives the answer's headers (lower-case
    # names), e.g. vecgrid's X-Vecgrid-Ts of a write; Feathers itself has no way to read them.
    wanted = params.get("response_headers")
    if isinstance(wanted, dict):
        wanted.update({name.lower(): value for name, value in response.headers.items()})


def _as_params(params: Mapping[str, Any] | None) -> dict:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise TypeError("params must be a mapping with query, route, headers and connection")
    return dict(params)


class Service(_ServiceBase):
    """A remote service whose methods block and return the decoded answer."""

    def find(self, params: Mapping[str, Any] | None = None) -> Any:
        return self._call("find", params=params)

    def get(self, id: Any, params: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
        return self._call("get", id=id, params=params)

    def create(self, data: Any, params: Mapping[str, Any] | None = None) -> Any:
        return self._call("create", data=data, params=params)

    def update(self, id: Any, data: Any, params: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
        return self._call("update", id=id, data=data, params=params)

    def patch(self, id: Any, data: Any, params: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
        return self._call("patch", id=id, data=data, params=params)

    def remove(self, id: Any, params: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
        return self._call("remove", id=id, params=params)

    def _call(self, method: str, *, id: Any = NO_ID, data: Any = None,  # noqa: A002
              params: Mapping[str, Any] | None = None) -> Any:
        self._check_method(method)
        params = _as_params(params)
        call_params = self.app.authentication.params_for(self.path, method, params)
        request = self._build(method, id, data, call_params)
        response = self.app.transport.send(request)
        _copy_headers(response, params)
        result = decode_response(response)
        event = EVENT_OF_METHOD.get(method)
        if event is not None:
            context = self._context(method, id, data, params, result)
            for record in self._records(result):
                self.emit(event, record, context)
        return result


class AsyncService(_ServiceBase):
    """A remote service whose methods are coroutines (an ``httpx.AsyncClient`` app).

    Listeners may be coroutine functions; they are awaited in order before the call returns.
    """

    async def find(self, params: Mapping[str, Any] | None = None) -> Any:
        return await self._call("find", params=params)

    async def get(self, id: Any, params: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
        return await self._call("get", id=id, params=params)

    async def create(self, data: Any, params: Mapping[str, Any] | None = None) -> Any:
        return await self._call("create", data=data, params=params)

    async def update(self, id: Any, data: Any, params: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
        return await self._call("update", id=id, data=data, params=params)

    async def patch(self, id: Any, data: Any, params: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
        return await self._call("patch", id=id, data=data, params=params)

    async def remove(self, id: Any, params: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
        return await self._call("remove", id=id, params=params)

    async def _call(self, method: str, *, id: Any = NO_ID, data: Any = None,  # noqa: A002
                    params: Mapping[str, Any] | None = None) -> Any:
        self._check_method(method)
        params = _as_params(params)
        call_params = await self.app.authentication.params_for(self.path, method, params)
        request = self._build(method, id, data, call_params)
        response = await self.app.transport.send(request)
        _copy_headers(response, params)
        result = decode_response(response)
        event = EVENT_OF_METHOD.get(method)
        if event is not None:
            context = self._context(method, id, data, params, result)
            for record in self._records(result):
                for returned in self.emit(event, record, context):
                    if inspect.isawaitable(returned):
                        await returned
        return result


# -- authentication ----------------------------------------------------------------------------
class MemoryStorage:
    """Where the access token is kept by default: this process's memory (one lock)."""

    def __init__(self) -> None:
        self._items: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._items.get(key)

    def set(self, key: str, value: str) -> None:
        with self._lock:
            self._items[key] = value

    def remove(self, key: str) -> None:
        with self._lock:
            self._items.pop(key, None)


@dataclass
class AuthenticationOptions:
    """The Feathers authentication client's options (same names, Python spelling)."""

    path: str = "authentication"
    header: str = "Authorization"
    scheme: str = "Bearer"
    storage_key: str = "feathers-jwt"
    jwt_strategy: str = "jwt"
    storage: Any = field(default_factory=MemoryStorage)


def _drops_token(error: BaseException) -> bool:
    # NotAuthenticated, PaymentError, Forbidden, NotFound, MethodNotAllowed, NotAcceptable.
    return isinstance(error, FeathersError) and 400 < error.code < 408


class _AuthenticationBase:
    def __init__(self, app: Any, options: AuthenticationOptions) -> None:
        self.app = app
        self.options = options

    @property
    def storage(self) -> Any:
        return self.options.storage

    def get_access_token(self) -> str | None:
        return self.storage.get(self.options.storage_key)

    def set_access_token(self, token: str) -> None:
        self.storage.set(self.options.storage_key, token)

    def remove_access_token(self) -> None:
        self.storage.remove(self.options.storage_key)

    def reset(self) -> None:
        raise NotImplementedError

    def _handle_error(self, error: BaseException) -> None:
        """After a failed login or logout: 401-407 also forget the stored token, as Feathers does."""
        if _drops_token(error):
            self.remove_access_token()
        self.reset()

    def _skips(self, path: str, method: str) -> bool:
        return path == self.options.path.strip("/") and method == "create"

    @staticmethod
    def _merge(auth_result: Any, params: dict) -> dict:
        # The authentication result goes under the caller's params (theirs win), as in Feathers.
        if isinstance(auth_result, dict):
            return {**auth_result, **params}
        return params


class AuthenticationClient(_AuthenticationBase):
    """Login state of a blocking :class:`App`; guarded by one lock (apps may be shared by threads)."""

    def __init__(self, app: Any, options: AuthenticationOptions) -> None:
        super().__init__(app, options)
        self._lock = threading.RLock()
        self._result: Any = None
        self.authenticated = False

    @property
    def result(self) -> Any:
        with self._lock:
            return self._result

    def params_for(self, path: str, method: str, params: dict) -> dict:
        if self._skips(path, method):
            return params
        return self._merge(self.result, params)

    def reset(self) -> None:
        with self._lock:
            self._result = None
            self.authenticated = False

    def authenticate(self, data: Mapping[str, Any] | None = None,
                     params: Mapping[str, Any] | None = None) -> Any:
        if data is None:
            return self.re_authenticate()
        service = self.app.service(self.options.path)
        try:
            result = service.create(dict(data), params)
        except FeathersError as error:
            self._handle_error(error)
            raise
        with self._lock:
            self._result = result
            self.authenticated = True
        token = result.get("accessToken") if isinstance(result, dict) else None
        if token:
            self.set_access_token(token)
        self.app.emit("login", result)
        self.app.emit("authenticated", result)
        return result

    def re_authenticate(self, force: bool = False, strategy: str | None = None,
                        params: Mapping[str, Any] | None = None) -> Any:
        with self._lock:
            if self._result is not None and not force:
                return self._result
        token = self.get_access_token()
        if not token:
            error = NotAuthenticated("No accessToken found in storage")
            self._handle_error(error)
            raise error
        return self.authenticate({"strategy": strategy or self.options.jwt_strategy,
                                  "accessToken": token}, params)

    def logout(self) -> Any:
        """The logout answer, or None when the server no longer knew the token (401-407)."""
        try:
            result = self.app.service(self.options.path).remove(None)
        except FeathersError as error:
            self._handle_error(error)
            if _drops_token(error):
                return None
            raise
        self.remove_access_token()
        self.reset()
        self.app.emit("logout", result)
        return result


class AsyncAuthenticationClient(_AuthenticationBase):
    """Login state of an :class:`AsyncApp`, owned by its event loop.

    A login in progress is a shared future, as the Feathers client keeps a promise: calls made
    meanwhile wait for it and carry its token (or fail with its error).
    """

    def __init__(self, app: Any, options: AuthenticationOptions) -> None:
        super().__init__(app, options)
        self._pending: asyncio.Future | None = None
        self.authenticated = False

    async def params_for(self, path: str, method: str, params: dict) -> dict:
        if self._skips(path, method) or self._pending is None:
            return params
        return self._merge(await asyncio.shield(self._pending), params)

    def reset(self) -> None:
        self._pending = None
        self.authenticated = False

    async def authenticate(self, data: Mapping[str, Any] | None = None,
                           params: Mapping[str, Any] | None = None) -> Any:
        if data is None:
            return await self.re_authenticate()
        pending = asyncio.ensure_future(self._login(dict(data), params))
        self._pending = pending
        return await asyncio.shield(pending)

    async def _login(self, data: dict, params: Mapping[str, Any] | None) -> Any:
        service = self.app.service(self.options.path)
        try:
            result = await service.create(data, params)
        except FeathersError as error:
            self._handle_error(error)
            raise
        self.authenticated = True
        token = result.get("accessToken") if isinstance(result, dict) else None
        if token:
            self.set_access_token(token)
        for returned in self.app.emit("login", result) + self.app.emit("authenticated", result):
            if inspect.isawaitable(returned):
                await returned
        return result

    async def re_authenticate(self, force: bool = False, strategy: str | None = None,
                              params: Mapping[str, Any] | None = None) -> Any:
        if self._pending is not None and not force:
            return await asyncio.shield(self._pending)
        token = self.get_access_token()
        if not token:
            error = NotAuthenticated("No accessToken found in storage")
            self._handle_error(error)
            raise error
        return await self.authenticate({"strategy": strategy or self.options.jwt_strategy,
                                        "accessToken": token}, params)

    async def logout(self) -> Any:
        # remove() waits for a login in progress (params_for); its failure is handled below
        # like the logout's own, as the Feathers client chains them.
        try:
            result = await self.app.service(self.options.path).remove(None)
        except FeathersError as error:
            self._handle_error(error)
            if _drops_token(error):
                return None
            raise
        self.remove_access_token()
        self.reset()
        for returned in self.app.emit("logout", result):
            if inspect.isawaitable(returned):
                await returned
        return result


# -- applications ------------------------------------------------------------------------------
class _AppBase(EventEmitter):
    service_class: type[_ServiceBase] = _ServiceBase

    def __init__(self, base_url: str, transport: Any, *, headers: Mapping[str, str] | None = None,
                 service_class: type | None = None,
                 authentication: AuthenticationOptions | None = None) -> None:
        super().__init__()
        self.base_url = base_url.rstrip("/")
        self.transport = transport
        self.headers: dict[str, str] = {str(k): str(v) for k, v in (headers or {}).items()}
        if service_class is not None:
            if not (isinstance(service_class, type) and issubclass(service_class, type(self).service_class)):
                raise TypeError(f"service_class must subclass {type(self).service_class.__name__}")
            self.service_class = service_class
        self._services: dict[str, _ServiceBase] = {}
        self._services_lock = threading.Lock()
        self.authentication = self._auth_client(authentication or AuthenticationOptions())

    def _auth_client(self, options: AuthenticationOptions) -> Any:
        raise NotImplementedError

    @property
    def rest(self) -> Any:
        """The request library object the app was configured with (``app.rest`` in Feathers)."""
        return self.transport.client

    def configure(self, fn: Callable[[Any], Any]) -> Any:
        """Runs ``fn(app)`` (a plugin); returns the app for chaining."""
        fn(self)
        return self

    def configure_authentication(self, **options: Any) -> Any:
        """Replaces the authentication options (``path``, ``header``, ``scheme``, ``storage``, ...)."""
        self.authentication = self._auth_client(AuthenticationOptions(**options))
        return self

    def service(self, path: str, methods: Iterable[str] | None = None) -> Any:
        """The service at ``path`` (one instance per path, so its listeners stay), with ``methods``
        (custom method names) declared on it."""
        key = path.strip("/")
        with self._services_lock:
            service = self._services.get(key)
            if service is None:
                service = self.service_class(self, key, methods or ())
                self._services[key] = service
            elif methods:
                service.declare(methods)
        return service


class App(_AppBase):
    """A Feathers client app whose calls block (urllib, requests, httpx.Client)."""

    service_class = Service

    def _auth_client(self, options: AuthenticationOptions) -> AuthenticationClient:
        return AuthenticationClient(self, options)

    def authenticate(self, data: Mapping[str, Any] | None = None,
                     params: Mapping[str, Any] | None = None) -> Any:
        return self.authentication.authenticate(data, params)

    def re_authenticate(self, force: bool = False, strategy: str | None = None,
                        params: Mapping[str, Any] | None = None) -> Any:
        return self.authentication.re_authenticate(force, strategy, params)

    def logout(self) -> Any:
        return self.authentication.logout()

    def close(self) -> None:
        """Closes the request library object when the app made it itself."""
        self.transport.close()

    def __enter__(self) -> "App":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncApp(_AppBase):
    """A Feathers client app over ``httpx.AsyncClient``: service methods are coroutines."""

    service_class = AsyncService

    def _auth_client(self, options: AuthenticationOptions) -> AsyncAuthenticationClient:
        return AsyncAuthenticationClient(self, options)

    async def authenticate(self, data: Mapping[str, Any] | None = None,
                           params: Mapping[str, Any] | None = None) -> Any:
        return await self.authentication.authenticate(data, params)

    async def re_authenticate(self, force: bool = False, strategy: str | None = None,
                              params: Mapping[str, Any] | None = None) -> Any:
        return await self.authentication.re_authenticate(force, strategy, params)

    async def logout(self) -> Any:
        return await self.authentication.logout()

    async def aclose(self) -> None:
        await self.transport.aclose()

    async def __aenter__(self) -> "AsyncApp":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class RestClient:
    """``rest(base_url)``: picks the request library; each selector gives a configured app.

    ``headers`` of a selector go with every request of that app (e.g. a preset
    ``Authorization`` for one server); ``service_class`` is a :class:`Service` (or
    :class:`AsyncService`) subclass, e.g. one overriding ``get_query``.
    """

    def __init__(self, base_url: str) -> None:
        if not isinstance(base_url, str) or not base_url:
            raise ValueError("rest() needs the server's base URL, e.g. 'http://localhost:3030'")
        self.base_url = base_url

    def urllib(self, opener: Any = None, *, headers: Mapping[str, str] | None = None,
               timeout: float | None = None, service_class: type | None = None,
               authentication: AuthenticationOptions | None = None) -> App:
        """The standard library (``urllib.request``); ``timeout`` is the default per request."""
        return App(self.base_url, UrllibTransport(opener, timeout), headers=headers,
                   service_class=service_class, authentication=authentication)

    def requests(self, session: Any = None, *, headers: Mapping[str, str] | None = None,
                 service_class: type | None = None,
                 authentication: AuthenticationOptions | None = None) -> App:
        """A ``requests.Session`` (a new default one when omitted; ``app.close()`` closes that one)."""
        return App(self.base_url, RequestsTransport(session), headers=headers,
                   service_class=service_class, authentication=authentication)

    def httpx(self, client: Any = None, *, headers: Mapping[str, str] | None = None,
              service_class: type | None = None,
              authentication: AuthenticationOptions | None = None) -> App | AsyncApp:
        """An ``httpx.Client`` (→ :class:`App`) or ``httpx.AsyncClient`` (→ :class:`AsyncApp`)."""
        import httpx

        if isinstance(client, httpx.AsyncClient):
            return AsyncApp(self.base_url, AsyncHttpxTransport(client), headers=headers,
                            service_class=service_class, authentication=authentication)
        if client is not None and not isinstance(client, httpx.Client):
            raise TypeError("httpx() takes an httpx.Client or an httpx.AsyncClient")
        return App(self.base_url, HttpxTransport(client), headers=headers,
                   service_class=service_class, authentication=authentication)


def rest(base_url: str) -> RestClient:
    """The client configurator of the server at ``base_url`` (see the module docstring)."""
    return RestClient(base_url)
