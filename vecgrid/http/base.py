"""The one base handler every vecgrid REST handler derives from.

Following Tornado's structure: ``initialize`` only stores what the route passes
in, handlers raise :class:`FeathersError` (or ``tornado.web.HTTPError``), and
:meth:`write_error` is the single place that renders errors — always a Feathers
error body, never a stack trace.  JSON is encoded explicitly (``send_json``) so
arrays are allowed, unlike ``RequestHandler.write(dict)``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import tornado.web

from vecgrid.common.feathers_errors import FeathersError, error_for_status

log = logging.getLogger(__name__)

JSON_TYPE = "application/json; charset=utf-8"


class BaseHandler(tornado.web.RequestHandler):
    def initialize(self, **context: Any) -> None:
        self.context = context

    def send_json(self, body: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", JSON_TYPE)
        self.finish(json.dumps(body))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, FeathersError):
            error = exc
        elif isinstance(exc, tornado.web.HTTPError):
            error = error_for_status(exc.status_code, exc.log_message or self._reason)
        else:
            error = error_for_status(500, "Internal server error" if status_code == 500 else self._reason)
        self.set_status(error.code)
        self.set_header("Content-Type", JSON_TYPE)
        self.finish(json.dumps(error.to_dict()))

    def log_exception(self, typ, value, tb) -> None:
        if isinstance(value, FeathersError):
            log.debug("%s %s -> %d %s", self.request.method, self.request.uri, value.code, value.message)
        else:
            super().log_exception(typ, value, tb)
