"""Feathers error classes and their JSON body (facts file §2).

In ``common`` because both ends use it: the REST transport, hooks and services raise these,
and vecgrid's Python client (``vecgrid.client``) rebuilds the class from a body's ``name``,
as the Feathers client does, so names and codes must match Feathers exactly.
"""

from __future__ import annotations

from typing import Any


class FeathersError(Exception):
    """Base of every error a Feathers server answers; the body is ``to_dict()``."""

    name = "GeneralError"
    code = 500
    class_name = "general-error"

    def __init__(self, message: str | None = None, data: Any = None, errors: Any = None) -> None:
        self.message = message if message is not None else "Error"
        super().__init__(self.message)
        self.data = data
        self.errors = errors

    @property
    def className(self) -> str:  # noqa: N802 - the wire key's spelling
        return self.class_name

    def to_dict(self) -> dict[str, Any]:
        """The wire body: ``data``/``errors`` only when set, nothing else (no stack)."""
        body: dict[str, Any] = {"name": self.name, "message": self.message, "code": self.code,
                                "className": self.class_name}
        if self.data is not None:
            body["data"] = self.data
        if self.errors is not None:
            body["errors"] = self.errors
        return body

    def __repr__(self) -> str:
        return f"{self.name}({self.message!r})"


def _define(name: str, code: int, class_name: str) -> type[FeathersError]:
    return type(name, (FeathersError,), {"name": name, "code": code, "class_name": class_name,
                                         "__doc__": f"Feathers {name} ({code})."})


BadRequest = _define("BadRequest", 400, "bad-request")
NotAuthenticated = _define("NotAuthenticated", 401, "not-authenticated")
PaymentError = _define("PaymentError", 402, "payment-error")
Forbidden = _define("Forbidden", 403, "forbidden")
NotFound = _define("NotFound", 404, "not-found")
MethodNotAllowed = _define("MethodNotAllowed", 405, "method-not-allowed")
NotAcceptable = _define("NotAcceptable", 406, "not-acceptable")
Timeout = _define("Timeout", 408, "timeout")
Conflict = _define("Conflict", 409, "conflict")
Gone = _define("Gone", 410, "gone")
LengthRequired = _define("LengthRequired", 411, "length-required")
# 413 is not a Feathers class; the transport answers oversized bodies with this one so that
# the body still has the Feathers shape (clients fall back to the status).
PayloadTooLarge = _define("PayloadTooLarge", 413, "payload-too-large")
Unprocessable = _define("Unprocessable", 422, "unprocessable")
TooManyRequests = _define("TooManyRequests", 429, "too-many-requests")
GeneralError = _define("GeneralError", 500, "general-error")
NotImplemented = _define("NotImplemented", 501, "not-implemented")  # noqa: A001 - Feathers name
BadGateway = _define("BadGateway", 502, "bad-gateway")
Unavailable = _define("Unavailable", 503, "unavailable")

BY_CODE: dict[int, type[FeathersError]] = {
    cls.code: cls for cls in (BadRequest, NotAuthenticated, PaymentError, Forbidden, NotFound,
                              MethodNotAllowed, NotAcceptable, Timeout, Conflict, Gone,
                              LengthRequired, PayloadTooLarge, Unprocessable, TooManyRequests,
                              GeneralError, NotImplemented, BadGateway, Unavailable)
}


ERROR_CLASSES: dict[str, type[FeathersError]] = {cls.name: cls for cls in BY_CODE.values()}


def error_for_status(code: int, message: str, data: Any = None) -> FeathersError:
    """The Feathers error of an HTTP status (GeneralError for statuses Feathers has no class for)."""
    return BY_CODE.get(code, GeneralError)(message, data)
