"""``GET /metrics``: the coordinator's Prometheus metrics (text format, prometheus_client).

Today: REST request latency per service, method and status (observed when Tornado logs a finished
request), and the QueryCoord's collection and query-node counts, read at scrape time.  The
monitoring work adds the node, segment, search and WAL families to the same registry.

State: the registry and its histogram are prometheus_client objects (thread-safe); the collector
reads the QueryCoord on the event loop that serves the scrape, where the QueryCoord's state lives.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

import tornado.web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from vecgrid.http.feathers.application import STANDARD_METHODS

access_log = logging.getLogger("tornado.access")

_VERB_METHODS = {"GET": ("find", "get"), "HEAD": ("find", "get"), "POST": ("create", "create"),
                 "PUT": ("update", "update"), "PATCH": ("patch", "patch"), "DELETE": ("remove", "remove")}


class QueryCoordCollector(Collector):
    """Gauges of the QueryCoord's meta, computed when scraped."""

    def __init__(self, coord: Any) -> None:
        self.coord = coord

    def collect(self) -> Iterable[GaugeMetricFamily]:
        yield GaugeMetricFamily("vecgrid_querycoord_collection_num", "Collections loaded or loading",
                                value=len(self.coord.collections.ids()))
        yield GaugeMetricFamily("vecgrid_querycoord_querynode_num", "Query nodes registered",
                                value=len(self.coord.nodes.all()))


class RestMetrics:
    """The REST app's registry: one per app, so that several apps in one process do not mix."""

    def __init__(self, coord: Any = None) -> None:
        self.registry = CollectorRegistry()
        self.requests = Histogram("vecgrid_http_request_duration_seconds",
                                  "REST request latency by service, method and status",
                                  ["service", "method", "code"], registry=self.registry)
        if coord is not None:
            self.registry.register(QueryCoordCollector(coord))

    def observe(self, handler: tornado.web.RequestHandler) -> None:
        service, method = self.labels(handler)
        self.requests.labels(service, method, str(handler.get_status())).observe(handler.request.request_time())

    @staticmethod
    def labels(handler: tornado.web.RequestHandler) -> tuple[str, str]:
        """``(service path, Feathers method)``; plain endpoints are their path and HTTP verb."""
        match = getattr(handler, "_match", None)
        verb = handler.request.method or ""
        if match is None:
            known = isinstance(handler, MetricsHandler) or handler.request.path in ("/health", "/version")
            return (handler.request.path if known else "(unknown)"), verb
        custom = handler.request.headers.get("X-Service-Method")
        if verb == "POST" and custom is not None:
            return match.service.path, custom if custom in match.service.custom_methods else "(unknown)"
        collection, item = _VERB_METHODS.get(verb, (verb, verb))
        method = item if match.id is not None else collection
        return match.service.path, method if method in STANDARD_METHODS else verb

    def log_request(self, handler: tornado.web.RequestHandler) -> None:
        """Tornado's ``log_function``: the metric, then Tornado's usual access log line."""
        self.observe(handler)
        status = handler.get_status()
        log = access_log.info if status < 400 else access_log.warning if status < 500 else access_log.error
        log("%d %s %.2fms", status, handler._request_summary(), 1000.0 * handler.request.request_time())


class MetricsHandler(tornado.web.RequestHandler):
    """Prometheus scrapes this."""

    def initialize(self, metrics: RestMetrics) -> None:
        self.metrics = metrics

    def get(self) -> None:
        self.set_header("Content-Type", CONTENT_TYPE_LATEST)
        self.finish(generate_latest(self.metrics.registry))
