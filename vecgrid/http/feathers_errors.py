"""The Feathers error classes by name (facts §2), over :class:`vecgrid.http.errors.FeathersError`.

``raise BadRequest("Invalid filter value $foo")`` reads like the Feathers source a reader compares
with; the body (``name``, ``message``, ``code``, ``className`` and, only when set, ``data`` and
``errors``) is :meth:`FeathersError.to_dict`, so one renderer serves both spellings and
``except FeathersError`` catches every one of them.  Stateless.
"""

from __future__ import annotations

from typing import Any

from vecgrid.http.errors import FeathersError


class _Named(FeathersError):
    code_of_class = 500

    def __init__(self, message: str = "", data: Any = None, errors: Any = None) -> None:
        super().__init__(self.code_of_class, message or self.__class__.__name__, data, errors)

    @property
    def class_name(self) -> str:
        return self.to_dict()["className"]


def _error_class(name: str, code: int) -> type[FeathersError]:
    return type(name, (_Named,), {"code_of_class": code, "__module__": __name__,
                                  "__doc__": f"Feathers ``{name}``: HTTP {code}."})


BadRequest = _error_class("BadRequest", 400)
NotAuthenticated = _error_class("NotAuthenticated", 401)
PaymentError = _error_class("PaymentError", 402)
Forbidden = _error_class("Forbidden", 403)
NotFound = _error_class("NotFound", 404)
MethodNotAllowed = _error_class("MethodNotAllowed", 405)
NotAcceptable = _error_class("NotAcceptable", 406)
Timeout = _error_class("Timeout", 408)
Conflict = _error_class("Conflict", 409)
Gone = _error_class("Gone", 410)
LengthRequired = _error_class("LengthRequired", 411)
Unprocessable = _error_class("Unprocessable", 422)
TooManyRequests = _error_class("TooManyRequests", 429)
GeneralError = _error_class("GeneralError", 500)
NotImplemented = _error_class("NotImplemented", 501)  # noqa: A001 - Feathers' name, shadows the builtin here only
BadGateway = _error_class("BadGateway", 502)
Unavailable = _error_class("Unavailable", 503)

ERROR_CLASSES: dict[str, type[FeathersError]] = {
    cls.__name__: cls for cls in (
        BadRequest, NotAuthenticated, PaymentError, Forbidden, NotFound, MethodNotAllowed, NotAcceptable,
        Timeout, Conflict, Gone, LengthRequired, Unprocessable, TooManyRequests, GeneralError,
        NotImplemented, BadGateway, Unavailable)
}
