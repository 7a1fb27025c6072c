"""The three HTTP request implementations of the client: urllib, requests and httpx.

The Feathers REST client takes a request library object and hides it behind one request
function; these classes are that function for each Python library.  They all take one
:class:`HttpRequest` and answer one :class:`HttpResponse` *whatever its status* (error
statuses are the service layer's business), so the layers above never see which library
ran.  Failures below HTTP are made uniform too: a timeout becomes the Feathers ``Timeout``
(408) and a connection that cannot be made or breaks becomes ``Unavailable`` (503, what the
Feathers client answers for ``ECONNREFUSED``), each with the library's exception as
``__cause__``.  No other exception leaves a transport.

``requests`` and ``httpx`` are imported only when their transport is built: the urllib one
needs nothing beyond the standard library.

State: a transport holds only the library object it was given (or made); thread safety is
that object's (a ``requests.Session`` and an ``httpx.Client`` may be shared between threads,
an ``httpx.AsyncClient`` belongs to one event loop).
"""

from __future__ import annotations

import http.client
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Mapping

from vecgrid.common.feathers_errors import Timeout, Unavailable


@dataclass
class HttpRequest:
    """One request as the service layer builds it; ``connection`` holds per-call library options."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None = None
    connection: dict[str, Any] = field(default_factory=dict)


@dataclass
class HttpResponse:
    """Status, headers (case-insensitive lookup through :meth:`header`) and the raw body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        for key, value in self.headers.items():
            if key.lower() == wanted:
                return value
        return None


def _timeout(request: HttpRequest, cause: BaseException) -> Timeout:
    error = Timeout(f"Request {request.method} {request.url} timed out", data={"url": request.url})
    error.__cause__ = cause
    return error


def _unavailable(request: HttpRequest, cause: BaseException) -> Unavailable:
    error = Unavailable(f"{request.method} {request.url} failed: {cause}",
                        data={"url": request.url, "reason": type(cause).__name__})
    error.__cause__ = cause
    return error


def _check_connection(connection: Mapping[str, Any], allowed: tuple[str, ...] | None) -> None:
    if "headers" in connection:
        # Headers have one place (params['headers']); a second one would silently lose the first.
        raise TypeError("pass headers in params['headers'], not in params['connection']")
    if allowed is not None:
        unknown = sorted(set(connection) - set(allowed))
        if unknown:
            raise TypeError(f"connection options not understood by this transport: {unknown} "
                            f"(it takes {list(allowed)})")


class UrllibTransport:
    """The standard library's ``urllib.request`` (the counterpart of the Fetch API).

    ``opener`` defaults to ``urllib.request.build_opener()`` (environment proxies, redirects of
    GET/HEAD). Per-call connection options: ``timeout`` (seconds).
    """

    name = "urllib"
    is_async = False
    CONNECTION_OPTIONS = ("timeout",)

    def __init__(self, opener: urllib.request.OpenerDirector | None = None,
                 timeout: float | None = None) -> None:
        self.client = opener if opener is not None else urllib.request.build_opener()
        self.timeout = timeout
        self.owned = False  # nothing to close

    def send(self, request: HttpRequest) -> HttpResponse:
        _check_connection(request.connection, self.CONNECTION_OPTIONS)
        timeout = request.connection.get("timeout", self.timeout)
        raw = urllib.request.Request(request.url, data=request.body, headers=request.headers,
                                     method=request.method)
        kwargs = {} if timeout is None else {"timeout": timeout}
        try:
            with self.client.open(raw, **kwargs) as response:
                return HttpResponse(response.status, dict(response.headers.items()), response.read())
        except urllib.error.HTTPError as error:
            # An error status is an answer, not a failure of the transport.
            with error:
                return HttpResponse(error.code, dict(error.headers.items()), error.read())
        except urllib.error.URLError as error:
            if isinstance(error.reason, (TimeoutError, socket.timeout)):
                raise _timeout(request, error) from error
            raise _unavailable(request, error) from error
        except TimeoutError as error:  # a read that timed out after the headers came
            raise _timeout(request, error) from error
        except (OSError, ConnectionError) as error:
            raise _unavailable(request, error) from error
        except http.client.HTTPException as error:  # protocol errors are not OSErrors
            raise _unavailable(request, error) from error

    def close(self) -> None:
        return None


class RequestsTransport:
    """A ``requests.Session``: default-configured or with preset headers, auth, adapters.

    Per-call connection options are ``Session.request`` keyword arguments (``timeout``,
    ``verify``, ``cert``, ``proxies``, ...).
    """

    name = "requests"
    is_async = False

    def __init__(self, session: Any = None) -> None:
        import requests

        self._requests = requests
        self.owned = session is None
        self.client = session if session is not None else requests.Session()

    def send(self, request: HttpRequest) -> HttpResponse:
        _check_connection(request.connection, None)
        requests = self._requests
        try:
            response = self.client.request(request.method, request.url, data=request.body,
                                           headers=request.headers, **request.connection)
        except requests.Timeout as error:
            raise _timeout(request, error) from error
        except requests.RequestException as error:
            raise _unavailable(request, error) from error
        return HttpResponse(response.status_code, dict(response.headers), response.content)

    def close(self) -> None:
        if self.owned:
            self.client.close()


def _httpx_errors() -> tuple[Any, Any]:
    import httpx

    return httpx.TimeoutException, httpx.TransportError


class HttpxTransport:
    """A synchronous ``httpx.Client``; connection options are ``Client.request`` arguments."""

    name = "httpx"
    is_async = False

    def __init__(self, client: Any = None) -> None:
        import httpx

        self.owned = client is None
        self.client = client if client is not None else httpx.Client()
        self._timeout_error, self._transport_error = _httpx_errors()

    def send(self, request: HttpRequest) -> HttpResponse:
        _check_connection(request.connection, None)
        try:
            response = self.client.request(request.method, request.url, content=request.body,
                                           headers=request.headers, **request.connection)
        except self._timeout_error as error:
            raise _timeout(request, error) from error
        except self._transport_error as error:
            raise _unavailable(request, error) from error
        return HttpResponse(response.status_code, dict(response.headers), response.content)

    def close(self) -> None:
        if self.owned:
            self.client.close()


class AsyncHttpxTransport:
    """An ``httpx.AsyncClient``: the one asynchronous transport (service methods are coroutines)."""

    name = "httpx"
    is_async = True

    def __init__(self, client: Any) -> None:
        self.owned = False
        self.client = client
        self._timeout_error, self._transport_error = _httpx_errors()

    async def send(self, request: HttpRequest) -> HttpResponse:
        _check_connection(request.connection, None)
        try:
            response = await self.client.request(request.method, request.url, content=request.body,
                                                 headers=request.headers, **request.connection)
        except self._timeout_error as error:
            raise _timeout(request, error) from error
        except self._transport_error as error:
            raise _unavailable(request, error) from error
        return HttpResponse(response.status_code, dict(response.headers), response.content)

    async def aclose(self) -> None:
        if self.owned:
            await self.client.aclose()
