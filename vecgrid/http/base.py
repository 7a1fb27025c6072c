"""The one base handler every vecgrid HTTP handler derives from, and the JSON of the wire.

Every route is a :class:`BaseHandler`: the Feathers services and ``/openapi.json``
(:mod:`vecgrid.http.feathers.rest`), ``/health`` and ``/version`` (:mod:`vecgrid.http.app`),
``/metrics`` (:mod:`vecgrid.http.metrics`) and the Dask dashboard's ``/vecgrid/api/state``
(:mod:`vecgrid.dashboard`).  Following Tornado's structure:

- ``initialize`` only stores what the route passes in (each handler names its own arguments);
- ``prepare`` does the work every verb of a handler shares (the Feathers handler's body limit and
  service lookup);
- verbs answer with :meth:`BaseHandler.send_json`, the one place a JSON answer is encoded
  (:func:`encode_json`: arrays too, which ``RequestHandler.write(dict)`` refuses), and fail by
  raising :class:`FeathersError` (or ``tornado.web.HTTPError``);
- :meth:`BaseHandler.write_error` is the one renderer of errors: always a Feathers error body
  ``{"name", "message", "code", "className", ...}``, never a stack trace.  Anything that is neither a
  Feathers nor an HTTP error is a 500 ``GeneralError`` with a request id, logged here with its traceback.

Importing this module is light (Tornado, orjson and :mod:`vecgrid.common.feathers_errors`): a stock
Dask scheduler imports it with ``--preload vecgrid.dashboard``.
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

from vecgrid.common.feathers_errors import FeathersError, GeneralError, error_for_status

log = logging.getLogger(__name__)

JSON_CONTENT_TYPE = "application/json; charset=utf-8"

_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
# orjson reads integers beyond the int64/uint64 range as floats; a body with a run of 19 digits
# takes the standard library's exact path instead (rare: vecgrid sends such ids as strings).
_LONG_DIGITS = b"0" * 19
# Every digit as "0": a run of 19 is then a substring search, where a regex scan of a body of vectors
# cost 40 % of an insert's time on the loop.
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_FLOAT_AFTER_DIGITS = frozenset(b".eE")   # what makes a run of digits a float's integer part
_NOT_JSON_LITERAL = re.compile(rb"-?(?:NaN|Infinity)")


# --- JSON of the wire -----------------------------------------------------------------------------

def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON of an answer: arrays too (Tornado's ``write`` refuses lists).

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
    if _has_long_integer(data):
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


def _has_long_integer(data: bytes) -> bool:
    """Whether ``data`` holds a run of 19 digits or more that is not part of a float: orjson reads an
    integer beyond 64 bits as a float, so such a body goes to the standard library's decoder. The
    digits of a fraction (after a ``.``) and a float's integer part (before ``.``, ``e`` or ``E``) are
    read as floats either way: float vectors as JavaScript and Python write them (17 significant
    digits: 0.000123... is a run of 20) stay with orjson, ~10x faster over a 100 x 128 query."""
    zeros = data.translate(_DIGITS_AS_ZERO)
    at = zeros.find(_LONG_DIGITS)
    while at >= 0:
        end = at + len(_LONG_DIGITS)
        while end < len(zeros) and zeros[end] == 48:   # "0": the run goes on
            end += 1
        fraction = at > 0 and zeros[at - 1] == 46         # "."
        if not fraction and (end == len(zeros) or zeros[end] not in _FLOAT_AFTER_DIGITS):
            return True
        at = zeros.find(_LONG_DIGITS, end)
    return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text} is out of range")
    return number


# --- the handler ----------------------------------------------------------------------------------

class BaseHandler(tornado.web.RequestHandler):
    """What every vecgrid handler shares: JSON answers and Feathers error bodies."""

    def send_json(self, body: Any, status: int = 200) -> None:
        """Finish the request with ``body`` as JSON (:func:`encode_json`)."""
        self.set_status(status)
        self.set_header("Content-Type", JSON_CONTENT_TYPE)
        self.finish(encode_json(body))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Every error as a Feathers body: the error raised when it is a Feathers one (its
        ``headers``, e.g. ``Retry-After`` on a 429, included); an HTTP error as the Feathers class of
        its status; anything else as a 500 with a request id."""
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
        for name, value in getattr(feathers_error, "headers", {}).items():
            self.set_header(name, value)
        self.send_json(feathers_error.to_dict(), feathers_error.code)

    def _general_error(self, error: BaseException) -> GeneralError:
        request_id = uuid.uuid4().hex
        log.error("request %s %s %s failed (request id %s)", self.request.method,
                  self.request.path, type(error).__name__, request_id,
                  exc_info=(type(error), error, error.__traceback__))
        return GeneralError(f"Internal server error (request id {request_id})",
                            data={"requestId": request_id})

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        # Feathers and HTTP errors are answers, not server faults; every other exception is logged
        # with its request id by write_error.
        if isinstance(value, (FeathersError, tornado.web.HTTPError)):
            return
        if value is not None and not isinstance(value, Exception):
            super().log_exception(typ, value, tb)
