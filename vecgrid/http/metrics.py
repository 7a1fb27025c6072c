"""``GET /metrics``: the coordinator's Prometheus metrics (text format, prometheus_client).

Names follow Milvus's (``pkg/metrics``) with the ``vecgrid`` namespace, in Prometheus's conventions where
the two differ: counters end in ``_total`` (never ``_count_total``), gauges name what they count (no
``_num``), no ``_created`` series.  docs/operations.md maps every name to Milvus's.

- REST: ``vecgrid_http_request_duration_seconds{service,method,code}``, observed when Tornado logs a finished
  request; :meth:`RestMetrics.labels` gives ``service`` and ``method`` from one vocabulary.
- QueryCoord, read from its meta at scrape time: ``vecgrid_querycoord_collections``,
  ``..._querynodes``, ``..._querynodes_unreachable``, ``..._tasks{type}``,
  ``..._load_requests_total{collection,status}``, ``..._load_latency_seconds{collection}`` and
  ``..._load_requests_in_flight{collection}`` (:class:`~vecgrid.cluster.querycoord.monitor.LoadStats`: each
  request is counted and timed once, when its outcome is known).
- Per query node: the ``vecgrid_querynode_*`` families of :func:`vecgrid.common.node_metrics.node_families`
  (the Dask scheduler's ``/metrics`` exports the same ones from the heartbeats) from the ``"vecgrid"``
  part of each node's GetMetrics answer, which the scrape gathers with the QueryCoord's own GetMetrics
  fan-out (a node that does not answer is left out this time and counted in
  ``vecgrid_querycoord_querynodes_unreachable``).
- WAL: ``vecgrid_wal_bytes`` (bytes on disk under the WAL root) and
  ``vecgrid_wal_append_latency_seconds`` (append until durable).
- Writes: ``vecgrid_proxy_inserted_rows_total{collection,op=insert|upsert}``, rows of the inserts and upserts the
  coordinator's write path acknowledged (Milvus's ``proxy_insert_vectors_count``).
- DataCoord, when the app has one: ``vecgrid_datacoord_pending_index_rows{collection,index}`` and
  ``vecgrid_datacoord_index_rows{collection,index}`` (rows of flushed segments without / with a build of
  the index), ``vecgrid_datacoord_flushes_in_flight``, ``vecgrid_datacoord_compaction_plans_in_flight``
  (Milvus's ``datacoord_compaction_task_num``) and ``vecgrid_datacoord_index_builds_in_flight``.

``/metrics`` asks for no credentials, as Milvus's metrics port does: it carries counts and collection
names, no rows.

State: the registry and its histogram are prometheus_client objects (thread-safe); the collector
reads the QueryCoord on the event loop that serves the scrape, where the QueryCoord's state lives,
and the node reports the handler gathered just before on that loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Any, Iterable

import tornado.web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from vecgrid.cluster.querycoord.monitor import cluster_snapshot, read_catalog_names
from vecgrid.common.node_metrics import (add_histogram, collection_label, collection_labels, node_families,
                                         prometheus_conventions)
from vecgrid.errors import MilvusError
from vecgrid.http.base import BaseHandler
from vecgrid.http.feathers.application import STANDARD_METHODS
from vecgrid.http.feathers.rest import FeathersHandler
from vecgrid.http.milvus_v2.handler import MilvusV2Handler

access_log = logging.getLogger("tornado.access")
log = logging.getLogger(__name__)

#: the Feathers method of each HTTP verb, on a collection (no id) and on an item
_VERB_METHODS = {"GET": ("find", "get"), "HEAD": ("find", "get"), "POST": ("create", "create"),
                 "PUT": ("update", "update"), "PATCH": ("patch", "patch"), "DELETE": ("remove", "remove")}
#: ``service`` of a request no route serves (Feathers' 404), and ``method`` of a verb or custom method
#: the route does not offer: one bucket each, whatever the path or header says
UNMATCHED, UNSUPPORTED = "(unmatched)", "(unsupported)"
#: ``collection`` of the load requests refused for ids that name no collection (one series for all)
NO_COLLECTION = "(none)"
#: ``method`` of a CORS preflight (OPTIONS), which no Feathers method answers
PREFLIGHT = "preflight"


def directory_bytes(root: str) -> int:
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except FileNotFoundError:  # removed by retention while walking: no longer counts
                continue
    return total


class QueryCoordCollector(Collector):
    """The QueryCoord, node and WAL families, computed when scraped (see the module docstring)."""

    def __init__(self, coord: Any, datacoord: Any = None) -> None:
        self.coord, self.datacoord = coord, datacoord
        self.activity: dict[str, Any] | None = None    # the DataCoord's work in flight, by gather
        self.node_reports: list[dict[str, Any]] = []   # set by :meth:`gather` before each collect
        self.unreachable = 0
        self.wal_bytes = 0
        self.names: dict[int, tuple[str, dict[int, str]]] = {}   # collection and partition names, by gather

    def describe(self) -> list:
        return []  # nothing to check at registration: the families are computed at scrape time

    async def gather(self) -> None:
        """Ask every node for its GetMetrics (the QueryCoord's fan-out) and size the WAL.  A coordinator
        not serving yet answers no node: all of them count as unreachable."""
        try:
            doc = json.loads(await self.coord.metrics(json.dumps({"metric_type": "system_info"})))
        except MilvusError as e:
            log.warning("no node metrics at this scrape: %s", e)
            self.node_reports, self.unreachable = [], len(self.coord.nodes.all())
        else:
            nodes = doc["cluster"]["connected_nodes"]
            self.node_reports = [n["vecgrid"] for n in nodes if "vecgrid" in n]
            self.unreachable = len(nodes) - len(self.node_reports)
        self.names = await read_catalog_names(self.coord)
        self.activity = await self.datacoord.activity() if self.datacoord is not None else None
        wal = getattr(getattr(self.coord, "appenders", None), "wal", None)
        self.wal_bytes = await asyncio.to_thread(directory_bytes, wal.root) if wal is not None else 0

    def collect(self) -> Iterable[Any]:
        snap = cluster_snapshot(self.coord, self.names, self.activity)
        # the node families' labels from the collections loaded, as the scheduler's port makes them; the
        # load families' also name collections released or dropped since (LoadStats' cache), and give one
        # series to all refused loads of ids that name no collection (collections of one label add up)
        labels = collection_labels({cid: name for cid, (name, _) in self.names.items() if name != str(cid)})
        stats = self.coord.load_stats
        load_labels = {cid: name or NO_COLLECTION for cid, name in stats.names.items()} | labels
        yield GaugeMetricFamily("vecgrid_querycoord_collections", "Collections loaded or loading",
                                value=len(snap["collections"]))
        yield GaugeMetricFamily("vecgrid_querycoord_querynodes", "Query nodes registered", value=len(snap["nodes"]))
        yield GaugeMetricFamily("vecgrid_querycoord_querynodes_unreachable",
                                "Registered query nodes whose GetMetrics failed at this scrape", value=self.unreachable)
        tasks = GaugeMetricFamily("vecgrid_querycoord_tasks", "QueryCoord tasks in flight", labels=["type"])
        for kind, count in sorted(snap["tasks"].items()):
            tasks.add_metric([kind], count)
        yield tasks
        yield from load_families(snap["load"], load_labels)
        yield from node_families(self.node_reports, labels)
        yield GaugeMetricFamily("vecgrid_wal_bytes", "Bytes of the write-ahead log on disk", value=self.wal_bytes)
        appenders = getattr(self.coord, "appenders", None)
        if appenders is not None:
            append = HistogramMetricFamily("vecgrid_wal_append_latency_seconds", "WAL appends until durable",
                                           labels=[])
            add_histogram(append, [], appenders.append_latency.snapshot())
            yield append
        inserted = CounterMetricFamily("vecgrid_proxy_inserted_rows",
                                       "Rows of the inserts and upserts the write path acknowledged",
                                       labels=["collection", "op"])
        by_label: dict[tuple[str, str], int] = {}   # collections of one label (dropped, unknown) add up
        for cid, counts in snap["inserted_rows_by_collection"].items():
            for op, rows in counts.items():
                key = (collection_label(load_labels, cid), op)
                by_label[key] = by_label.get(key, 0) + rows
        for key, rows in sorted(by_label.items()):
            inserted.add_metric(list(key), rows)
        yield inserted
        if snap["datacoord"] is not None:
            yield from datacoord_families(snap["datacoord"])


def load_families(load: dict[str, Any], labels: dict[int, str]) -> list[Any]:
    """The load families from :meth:`~vecgrid.cluster.querycoord.monitor.LoadStats.snapshot`: the counter and
    the histogram count each request once, when its outcome is known, so their counts agree.  Collections
    that share a label (:data:`NO_COLLECTION`) are added up."""
    merged: dict[str, dict[str, Any]] = {}
    for cid, entry in load.items():
        collection = collection_label(labels, cid)
        into = merged.get(collection)
        if into is None:
            merged[collection] = {"requests": dict(entry["requests"]), "latency": entry["latency"],
                                  "in_flight": entry["in_flight"]}
            continue
        for status, count in entry["requests"].items():
            into["requests"][status] = into["requests"].get(status, 0) + count
        into["latency"] = _add_histograms(into["latency"], entry["latency"])
        into["in_flight"] += entry["in_flight"]
    requests = CounterMetricFamily("vecgrid_querycoord_load_requests", "Load requests by collection and outcome",
                                   labels=["collection", "status"])
    latency = HistogramMetricFamily("vecgrid_querycoord_load_latency_seconds",
                                    "From a load request to its outcome (100 % loaded, released or refused)",
                                    labels=["collection"])
    in_flight = GaugeMetricFamily("vecgrid_querycoord_load_requests_in_flight",
                                  "Load requests accepted whose collection is not 100 % loaded yet",
                                  labels=["collection"])
    for collection, entry in merged.items():
        for status, count in sorted(entry["requests"].items()):
            requests.add_metric([collection, status], count)
        add_histogram(latency, [collection], entry["latency"])
        in_flight.add_metric([collection], entry["in_flight"])
    return [requests, latency, in_flight]


def _add_histograms(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two snapshots of histograms with the same buckets, added up."""
    return {"buckets": [[bound, x + y] for (bound, x), (_, y) in zip(a["buckets"], b["buckets"])],
            "count": a["count"] + b["count"], "sum": a["sum"] + b["sum"]}


def datacoord_families(activity: dict[str, Any]) -> list[Any]:
    """The DataCoord's families from its ``activity()`` (see the module docstring)."""
    pending = GaugeMetricFamily("vecgrid_datacoord_pending_index_rows",
                                "Rows of flushed segments not indexed yet, per index", labels=["collection", "index"])
    indexed = GaugeMetricFamily("vecgrid_datacoord_index_rows", "Rows of flushed segments indexed, per index",
                                labels=["collection", "index"])
    for index in activity["indexes"]:
        labels = [index["collection"], index["index_name"]]
        pending.add_metric(labels, index["pending_index_rows"])
        indexed.add_metric(labels, index["indexed_rows"])
    return [pending, indexed,
            GaugeMetricFamily("vecgrid_datacoord_flushes_in_flight", "Explicit flushes running",
                              value=activity["flushes_in_flight"]),
            GaugeMetricFamily("vecgrid_datacoord_compaction_plans_in_flight", "Compaction plans running",
                              value=activity["compaction_plans_in_flight"]),
            GaugeMetricFamily("vecgrid_datacoord_index_builds_in_flight", "Index builds running",
                              value=activity["index_builds_in_flight"])]


class RestMetrics:
    """The REST app's registry: one per app, so that several apps in one process do not mix."""

    def __init__(self, coord: Any = None, datacoord: Any = None) -> None:
        prometheus_conventions()
        self.registry = CollectorRegistry()
        self.requests = Histogram("vecgrid_http_request_duration_seconds",
                                  "REST request latency by service, method and status",
                                  ["service", "method", "code"], registry=self.registry)
        self.coord_collector: QueryCoordCollector | None = None
        if coord is not None:
            self.coord_collector = QueryCoordCollector(coord, datacoord)
            self.registry.register(self.coord_collector)

    def observe(self, handler: tornado.web.RequestHandler) -> None:
        service, method = self.labels(handler)
        self.requests.labels(service, method, str(handler.get_status())).observe(handler.request.request_time())

    @staticmethod
    def labels(handler: tornado.web.RequestHandler) -> tuple[str, str]:
        """``(service, method)`` of a finished request, from one vocabulary:

        - a Feathers service: its path (``users``, ``collections/:collection/entities``) and the Feathers
          method the request called (find, get, create, update, patch, remove or a custom method), or
          ``(unsupported)`` for one the service does not offer, ``preflight`` for a CORS OPTIONS;
        - Milvus's RESTful API v2: ``v2/vectordb/<group>`` and the action (``describe``, ``search``...), or
          ``(unsupported)`` for an action the group does not have;
        - a plain endpoint (``/health``, ``/version``, ``/metrics``, ``/openapi.json``, ``/console/...``,
          ``/docs/...``, ``/``): the first segment of its path (``/`` for the root) and ``get``
          (``preflight`` for OPTIONS, ``(unsupported)`` for another verb);
        - a path no route serves: ``(unmatched)`` for both, so that paths never make new series.
        """
        verb = handler.request.method or ""
        if isinstance(handler, FeathersHandler):
            return _feathers_labels(handler, verb)
        if isinstance(handler, MilvusV2Handler):
            group, action = (list(handler.path_args) + ["", ""])[:2]
            known = action in handler.groups.get(group, {})
            return f"v2/vectordb/{group}", action if known and verb == "POST" else UNSUPPORTED
        if isinstance(handler, BaseHandler):
            # a plain route: every one starts with a fixed segment (the files under /console/ and
            # /docs/static/ count as their route's)
            method = "get" if verb in ("GET", "HEAD") else PREFLIGHT if verb == "OPTIONS" else UNSUPPORTED
            return handler.request.path.strip("/").split("/")[0] or "/", method
        return UNMATCHED, UNMATCHED

    def log_request(self, handler: tornado.web.RequestHandler) -> None:
        """Tornado's ``log_function``: the metric, then Tornado's usual access log line."""
        self.observe(handler)
        status = handler.get_status()
        log = access_log.info if status < 400 else access_log.warning if status < 500 else access_log.error
        log("%d %s %.2fms", status, handler._request_summary(), 1000.0 * handler.request.request_time())


def _feathers_labels(handler: FeathersHandler, verb: str) -> tuple[str, str]:
    match = handler._match
    if verb == "OPTIONS":   # prepare() does not look the path up for a preflight
        match = handler.app.lookup(handler.request.path)
        return (match.service.path, PREFLIGHT) if match is not None else (UNMATCHED, UNMATCHED)
    if match is None:
        return UNMATCHED, UNMATCHED
    service = match.service
    custom = handler.request.headers.get("X-Service-Method")
    if verb == "POST" and custom is not None:
        return service.path, custom if custom in service.custom_methods else UNSUPPORTED
    if verb not in _VERB_METHODS:
        return service.path, UNSUPPORTED
    on_collection, on_item = _VERB_METHODS[verb]
    method = on_item if match.id is not None and verb != "POST" else on_collection
    return service.path, method if method in STANDARD_METHODS and service.exposes(method) else UNSUPPORTED


class MetricsHandler(BaseHandler):
    """Prometheus scrapes this (the text format; a failed scrape is a Feathers error body, as every route's)."""

    def initialize(self, metrics: RestMetrics) -> None:
        self.metrics = metrics

    async def get(self) -> None:
        if self.metrics.coord_collector is not None:
            await self.metrics.coord_collector.gather()
        self.set_header("Content-Type", CONTENT_TYPE_LATEST)
        self.finish(generate_latest(self.metrics.registry))
