"""Feathers errors: the JSON bodies a Feathers server answers, keyed by HTTP status."""

from __future__ import annotations

import re
from typing import Any

_NAMES = {
    400: "BadRequest", 401: "NotAuthenticated", 402: "PaymentError", 403: "Forbidden",
    404: "NotFound", 405: "MethodNotAllowed", 406: "NotAcceptable", 408: "Timeout",
    409: "Conflict", 410: "Gone", 411: "LengthRequired", 422: "Unprocessable",
    429: "TooManyRequests", 500: "GeneralError", 501: "NotImplemented", 502: "BadGateway",
    503: "Unavailable",
}


def _class_name(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


class FeathersError(Exception):
    """An HTTP error rendered as ``{"name", "message", "code", "className"[, "data"][, "errors"]}``."""

    def __init__(self, code: int, message: str, data: Any = None, errors: Any = None) -> None:
        if code not in _NAMES:
            code = 500
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.errors = errors

    @property
    def name(self) -> str:
        return _NAMES[self.code]

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"name": self.name, "message": self.message, "code": self.code,
                                "className": _class_name(self.name)}
        if self.data is not None:
            body["data"] = self.data
        if self.errors is not None:
            body["errors"] = self.errors
        return body


def not_found(message: str, data: Any = None) -> FeathersError:
    return FeathersError(404, message, data)
