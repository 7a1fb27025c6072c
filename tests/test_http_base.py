"""The one HTTP base (vecgrid.http.base): every route's handler derives from it, answers JSON through its
encoder (no ``NaN`` on the wire) and fails with a Feathers error body, the plain routes and the Dask
dashboard's route as the Feathers services do."""

from __future__ import annotations

import json
import math
from unittest import mock

import tornado.web
from distributed.http.utils import get_handlers
from tornado.testing import AsyncHTTPTestCase

from vecgrid import dashboard
from vecgrid.http import app as rest_app
from vecgrid.http.base import BaseHandler
from vecgrid.http.feathers.rest import FeathersHandler, OpenAPIHandler
from vecgrid.http.metrics import MetricsHandler, RestMetrics


def strict_json(raw: bytes):
    """``JSON.parse``: ``NaN`` and ``Infinity`` are not JSON."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(raw, parse_constant=refuse)


def test_every_handler_derives_from_the_one_base_and_renders_errors_with_it():
    [(_, state_handler, _)] = dashboard.routes
    handlers = (FeathersHandler, OpenAPIHandler, MetricsHandler, rest_app.HealthHandler, rest_app.VersionHandler,
                state_handler)
    for handler in handlers:
        assert issubclass(handler, BaseHandler), handler
        assert (handler.write_error, handler.send_json) == (BaseHandler.write_error, BaseHandler.send_json), handler


class FailingCollector:
    async def gather(self) -> None:
        raise RuntimeError("the scrape's GetMetrics fan-out broke")


class Scheduler:
    """What the dashboard's route reads of a Dask scheduler."""

    def __init__(self, cluster=None, workers=None) -> None:
        self.cluster, self.clients = cluster, {}
        if workers is not None:
            self.workers = workers

    def get_metadata(self, key, default=None):
        return self.cluster


class PlainRoutesTest(AsyncHTTPTestCase):
    """``/health``, ``/version`` and ``/metrics`` as ``make_app`` routes them, and the dashboard's route as
    Dask routes it (``distributed.http.utils.get_handlers``, which passes the scheduler as ``dask_server``)."""

    def get_app(self):
        self.metrics = RestMetrics()
        self.scheduler = Scheduler(workers={})
        return tornado.web.Application([
            (r"/health", rest_app.HealthHandler, {"coord": None}),
            (r"/version", rest_app.VersionHandler),
            (r"/metrics", MetricsHandler, {"metrics": self.metrics}),
            *get_handlers(self.scheduler, [dashboard.ROUTE_MODULE], prefix="/"),
        ])

    def get(self, path: str, method: str = "GET"):
        response = self.fetch(path, method=method, raise_error=False, body=b"{}" if method == "POST" else None)
        return response, strict_json(response.body) if response.body else None

    def assert_feathers_error(self, path: str, code: int, name: str, method: str = "GET") -> dict:
        response, body = self.get(path, method)
        assert response.code == code and response.headers["Content-Type"] == "application/json; charset=utf-8"
        assert (body["name"], body["code"]) == (name, code) and set(body) >= {"message", "className"}, body
        return body

    def test_health_answers_strict_json(self):
        # Before the one base, /health wrote json.dumps' NaN, which no JSON parser reads.
        report = {"status": "ok", "components": [{"name": "wal", "lag_s": math.nan, "reason": "żółw"}]}
        with mock.patch.object(rest_app, "cluster_health", mock.AsyncMock(return_value=report)):
            response, body = self.get("/health")
        assert response.code == 200 and body["components"] == [{"name": "wal", "lag_s": None, "reason": "żółw"}]

    def test_a_failing_health_probe_is_a_general_error_with_a_request_id(self):
        # Before, the plain routes' own renderer answered a bare "Internal server error" without an id to
        # find the logged traceback by.
        failing = mock.AsyncMock(side_effect=RuntimeError("the coordinator is gone"))
        with mock.patch.object(rest_app, "cluster_health", failing):
            body = self.assert_feathers_error("/health", 500, "GeneralError")
        assert body["message"] == f"Internal server error (request id {body['data']['requestId']})"
        assert "gone" not in body["message"]

    def test_version_and_an_unsupported_verb(self):
        response, body = self.get("/version")
        assert response.code == 200 and body["version"]
        self.assert_feathers_error("/version", 405, "MethodNotAllowed", method="POST")

    def test_metrics_fail_with_a_feathers_error(self):
        # Before, /metrics derived from Tornado's handler and answered errors with its HTML page.
        self.metrics.coord_collector = FailingCollector()
        body = self.assert_feathers_error("/metrics", 500, "GeneralError")
        assert "requestId" in body["data"]
        self.assert_feathers_error("/metrics", 405, "MethodNotAllowed", method="POST")
        self.metrics.coord_collector = None
        response = self.fetch("/metrics")
        assert response.code == 200 and response.headers["Content-Type"].startswith("text/plain")

    def test_the_dashboard_route_answers_strict_json(self):
        # Before, the route wrote json.dumps' NaN (the published state carries floats: times, rates).
        self.scheduler.cluster = {"time": math.nan, "tasks": {}}
        response, body = self.get("/vecgrid/api/state")
        assert response.code == 200 and response.headers["Content-Type"] == "application/json; charset=utf-8"
        assert body["cluster"] == {"time": None, "tasks": {}} and body["nodes"] == []

    def test_the_dashboard_route_fails_with_a_feathers_error(self):
        # Before, a failure was Tornado's HTML error page.
        del self.scheduler.workers   # the state cannot be read
        body = self.assert_feathers_error("/vecgrid/api/state", 500, "GeneralError")
        assert "requestId" in body["data"]
        self.assert_feathers_error("/vecgrid/api/state", 405, "MethodNotAllowed", method="POST")
