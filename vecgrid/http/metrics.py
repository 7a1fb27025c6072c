"""``GET /metrics``: the coordinator's Prometheus metrics (text format, prometheus_client).

Names follow Milvus's (``pkg/metrics``) with the ``vecgrid`` namespace:

- REST: ``vecgrid_http_request_duration_seconds{service,method,code}``, observed when Tornado
  logs a finished request.
- QueryCoord, read from its meta at scrape time: ``vecgrid_querycoord_collection_num``,
  ``..._querynode_num``, ``..._task_num{type}``, ``..._load_req_count{status}``,
  ``..._load_latency_seconds`` (request to 100 % loaded).
- Per query node (label ``node_id``): ``vecgrid_querynode_segment_num`` from the distribution the
  QueryCoord polls; ``..._growing_rows``, ``..._entity_num``, ``..._search_latency_seconds``,
  ``..._search_requests_total{status}`` and ``..._gpu_memory_bytes{kind=used|capacity}`` from the
  ``"vecgrid"`` part of each node's GetMetrics answer, which the scrape gathers with the
  QueryCoord's own GetMetrics fan-out (a node that does not answer is left out this time and
  counted in ``vecgrid_querycoord_querynode_unreachable``).
- WAL: ``vecgrid_wal_bytes`` (bytes on disk under the WAL root) and
  ``vecgrid_wal_append_latency_seconds`` (append until durable).
- Writes: ``vecgrid_proxy_inserted_rows_total{op=insert|upsert}``, rows of the inserts and upserts the
  coordinator's write path acknowledged (Milvus's ``proxy_insert_vectors_count``).
- DataCoord, when the app has one: ``vecgrid_datacoord_pending_index_rows{collection,index}`` and
  ``vecgrid_datacoord_index_rows{collection,index}`` (rows of flushed segments without / with a build of
  the index), ``vecgrid_datacoord_flush_num`` (explicit flushes running),
  ``vecgrid_datacoord_compaction_plan_num`` (compaction plans running, Milvus's
  ``datacoord_compaction_task_num``) and ``vecgrid_datacoord_index_build_num`` (index builds running).

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
from vecgrid.errors import MilvusError
from vecgrid.http.base import BaseHandler
from vecgrid.http.feathers.application import STANDARD_METHODS

access_log = logging.getLogger("tornado.access")
log = logging.getLogger(__name__)

_VERB_METHODS = {"GET": ("find", "get"), "HEAD": ("find", "get"), "POST": ("create", "create"),
                 "PUT": ("update", "update"), "PATCH": ("patch", "patch"), "DELETE": ("remove", "remove")}


def histogram_family(name: str, doc: str, labels: list[str]) -> HistogramMetricFamily:
    return HistogramMetricFamily(name, doc, labels=labels)


def add_histogram(family: HistogramMetricFamily, labels: list[str], snap: dict[str, Any]) -> None:
    """Add one :class:`~vecgrid.common.histogram.CumulativeHistogram` snapshot to ``family``."""
    buckets = [(repr(float(bound)), count) for bound, count in snap["buckets"]]
    buckets.append(("+Inf", snap["count"]))
    family.add_metric(labels, buckets, snap["sum"])


def node_families(reports: list[dict[str, Any]]) -> list[Any]:
    """The per-node families from the nodes' ``"vecgrid"`` snapshots (GetMetrics or heartbeats)."""
    # growing rows from the node itself: a polled distribution is replaced only when the node's
    # lastModifyTs moves, which inserts into growing segments do not do
    growing = GaugeMetricFamily("vecgrid_querynode_growing_rows", "Rows in a node's growing segments",
                                labels=["node_id"])
    entities = GaugeMetricFamily("vecgrid_querynode_entity_num", "Rows of the sealed segments a node serves",
                                 labels=["node_id"])
    gpu = GaugeMetricFamily("vecgrid_querynode_gpu_memory_bytes",
                            "GPU memory vecgrid has reserved for segments (used) and its budget (capacity)",
                            labels=["node_id", "kind"])
    memory = GaugeMetricFamily("vecgrid_querynode_memory_bytes",
                               "Host memory reserved for segments (used) and its budget (capacity)",
                               labels=["node_id", "kind"])
    requests = CounterMetricFamily("vecgrid_querynode_search_requests", "Search requests a node served",
                                   labels=["node_id", "status"])
    latency = histogram_family("vecgrid_querynode_search_latency_seconds",
                               "Latency of the searches a node served", ["node_id"])
    for r in reports:
        node = str(r["node_id"])
        entities.add_metric([node], r["entity_num"])
        growing.add_metric([node], r["growing_rows"])
        gpu.add_metric([node, "used"], r["gpu_memory_used_bytes"])
        gpu.add_metric([node, "capacity"], r["gpu_memory_capacity_bytes"])
        memory.add_metric([node, "used"], r["memory_used_bytes"])
        memory.add_metric([node, "capacity"], r["memory_capacity_bytes"])
        for status, count in sorted(r["search"]["requests"].items()):
            requests.add_metric([node, status], count)
        add_histogram(latency, [node], r["search"]["latency"])
    return [growing, entities, gpu, memory, requests, latency]


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
        yield GaugeMetricFamily("vecgrid_querycoord_collection_num", "Collections loaded or loading",
                                value=len(snap["collections"]))
        yield GaugeMetricFamily("vecgrid_querycoord_querynode_num", "Query nodes registered",
                                value=len(snap["nodes"]))
        yield GaugeMetricFamily("vecgrid_querycoord_querynode_unreachable",
                                "Registered query nodes whose GetMetrics failed at this scrape", value=self.unreachable)
        tasks = GaugeMetricFamily("vecgrid_querycoord_task_num", "QueryCoord tasks in flight", labels=["type"])
        for kind, count in sorted(snap["tasks"].items()):
            tasks.add_metric([kind], count)
        yield tasks
        loads = CounterMetricFamily("vecgrid_querycoord_load_req_count", "Load requests by outcome",
                                    labels=["status"])
        for status, count in sorted(snap["load"]["requests"].items()):
            loads.add_metric([status], count)
        yield loads
        latency = histogram_family("vecgrid_querycoord_load_latency_seconds",
                                   "From a load request to its collection 100 % loaded", [])
        add_histogram(latency, [], snap["load"]["latency"])
        yield latency
        segments = GaugeMetricFamily("vecgrid_querynode_segment_num", "Sealed segments a node serves",
                                     labels=["node_id"])
        for n in snap["nodes"]:
            segments.add_metric([str(n["node_id"])], n["segments"])
        yield segments
        yield from node_families(self.node_reports)
        yield GaugeMetricFamily("vecgrid_wal_bytes", "Bytes of the write-ahead log on disk", value=self.wal_bytes)
        appenders = getattr(self.coord, "appenders", None)
        if appenders is not None:
            append = histogram_family("vecgrid_wal_append_latency_seconds", "WAL appends until durable", [])
            add_histogram(append, [], appenders.append_latency.snapshot())
            yield append
        inserted = CounterMetricFamily("vecgrid_proxy_inserted_rows",
                                       "Rows of the inserts and upserts the write path acknowledged", labels=["op"])
        for op, rows in sorted(snap["inserted_rows"].items()):
            inserted.add_metric([op], rows)
        yield inserted
        if snap["datacoord"] is not None:
            yield from datacoord_families(snap["datacoord"])


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
            GaugeMetricFamily("vecgrid_datacoord_flush_num", "Explicit flushes running",
                              value=activity["flushes_in_flight"]),
            GaugeMetricFamily("vecgrid_datacoord_compaction_plan_num", "Compaction plans running",
                              value=activity["compaction_plans_in_flight"]),
            GaugeMetricFamily("vecgrid_datacoord_index_build_num", "Index builds running",
                              value=activity["index_builds_in_flight"])]


class RestMetrics:
    """The REST app's registry: one per app, so that several apps in one process do not mix."""

    def __init__(self, coord: Any = None, datacoord: Any = None) -> None:
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


class MetricsHandler(BaseHandler):
    """Prometheus scrapes this (the text format; a failed scrape is a Feathers error body, as every route's)."""

    def initialize(self, metrics: RestMetrics) -> None:
        self.metrics = metrics

    async def get(self) -> None:
        if self.metrics.coord_collector is not None:
            await self.metrics.coord_collector.gather()
        self.set_header("Content-Type", CONTENT_TYPE_LATEST)
        self.finish(generate_latest(self.metrics.registry))
