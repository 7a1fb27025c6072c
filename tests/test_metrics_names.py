"""Metric names, labels and counts without a cluster: the load and search counters agree with their latency
histograms on a scripted workload, the REST histogram's ``service``/``method`` labels come from one
vocabulary, the two ``/metrics`` ports build the per-node families with one function, the exposition
text follows Prometheus's conventions, and the Grafana board asks only for names vecgrid exports.
(The live cluster's two ``/metrics`` endpoints are checked in tests/test_monitoring.py.)"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import tornado.web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from tornado.testing import AsyncHTTPTestCase

from vecgrid.cluster.querycoord.monitor import LoadStats
from vecgrid.cluster.querynode.monitor import NodeStats
from vecgrid.common.node_metrics import collection_labels, node_families
from vecgrid.http.base import BaseHandler
from vecgrid.http.feathers.application import Application
from vecgrid.http.feathers.rest import make_tornado_app
from vecgrid.http.metrics import MetricsHandler, RestMetrics, load_families
from vecgrid.http.milvus_v2.handler import MilvusV2Handler
from tests.conftest import REPO
from tests.metrics_support import conventions_broken

NODE = {"node_id": 3, "name": "w3", "address": "127.0.0.1:3", "gpu_memory_used_bytes": 1, "gpu_memory_capacity_bytes": 2,
        "memory_used_bytes": 3, "memory_capacity_bytes": 4,
        "collections": {"11": {"segments": 2, "rows": 70}, "12": {"segments": 1, "rows": 5}},
        "growing_rows_by_collection": {"11": 9},
        "search": {"requests": {"success": 2, "fail": 1},
                   "latency": {"buckets": [[0.1, 2], [1.0, 3]], "count": 3, "sum": 0.4}}}


def exposition(*families) -> str:
    class Fixed:
        def collect(self):
            return families

    registry = CollectorRegistry()
    registry.register(Fixed())
    return generate_latest(registry).decode()


def by_labels(text: str, name: str) -> dict[tuple, float]:
    return {tuple(sorted(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples if s.name == name}


def test_load_requests_and_the_load_latency_count_each_request_once_when_it_ends(monkeypatch):
    """The scripted workload of issue 26: loads accepted, refused, repeated while pending, released before
    loaded.  Before, a request was counted when answered and timed when loaded: 5 against 4."""
    clock = iter(range(100))
    monkeypatch.setattr("vecgrid.cluster.querycoord.monitor.time.monotonic", lambda: float(next(clock)))
    stats = LoadStats()
    stats.requested(1, ok=True)
    stats.requested(1, ok=True)        # again while loading: its own clock
    stats.requested(2, ok=False)       # refused
    stats.requested(3, ok=True)
    stats.seen({1: 40, 3: 10})
    snap = stats.snapshot()
    assert {cid: e["in_flight"] for cid, e in snap.items()} == {"1": 2, "2": 0, "3": 1}
    stats.seen({1: 100})               # 1 loaded; 3 released before it was
    stats.requested(1, ok=True)        # a loaded collection loaded again: over at the next snapshot
    stats.seen({1: 100})
    stats.requested(8, ok=False)       # two ids that name no collection: one series
    stats.requested(9, ok=False)
    stats.names.update({1: "books", 8: None, 9: None})
    labels = collection_labels({1: "books", 2: "2", 3: "3"}) | {8: "(none)", 9: "(none)"}
    text = exposition(*load_families(stats.snapshot(), labels))
    assert conventions_broken(text) == []
    requests = by_labels(text, "vecgrid_querycoord_load_requests_total")
    assert requests == {(("collection", "books"), ("status", "success")): 3,
                        (("collection", "books"), ("status", "fail")): 0,
                        (("collection", "2"), ("status", "success")): 0,
                        (("collection", "2"), ("status", "fail")): 1,
                        (("collection", "3"), ("status", "success")): 0,
                        (("collection", "3"), ("status", "fail")): 1,
                        (("collection", "(none)"), ("status", "success")): 0,
                        (("collection", "(none)"), ("status", "fail")): 2}
    counts = by_labels(text, "vecgrid_querycoord_load_latency_seconds_count")
    for (collection,) in counts:
        assert counts[(collection,)] == sum(v for k, v in requests.items() if k[0] == collection), collection
    assert sum(by_labels(text, "vecgrid_querycoord_load_requests_in_flight").values()) == 0
    # one tick a clock read: the refusal took none; books's three requests 4, 3 and 1, collection 3's 2
    assert by_labels(text, "vecgrid_querycoord_load_latency_seconds_sum") == {
        (("collection", "books"),): 8.0, (("collection", "2"),): 0.0, (("collection", "3"),): 2.0,
        (("collection", "(none)"),): 0.0}


def test_search_requests_and_the_search_latency_agree():
    stats = NodeStats()
    for i in range(7):
        stats.observe_search(0.01 * i, ok=i % 3 != 0, nq=2)
    snap = stats.snapshot()
    assert snap["requests"] == {"success": 4, "fail": 3} and snap["latency"]["count"] == 7


def test_the_node_families_carry_the_collection_and_follow_the_conventions():
    labels = collection_labels({11: "books", 12: "films"})
    text = exposition(*node_families([NODE, {"node_id": -1, **{k: v for k, v in NODE.items() if k != "node_id"}},
                                      {"node_id": 4, "error": "AttributeError: x"}], labels))
    assert conventions_broken(text) == []
    assert by_labels(text, "vecgrid_querynode_entities") == {(("collection", "books"), ("node_id", "3")): 70,
                                                             (("collection", "films"), ("node_id", "3")): 5}
    assert by_labels(text, "vecgrid_querynode_growing_rows") == {(("collection", "books"), ("node_id", "3")): 9}
    assert by_labels(text, "vecgrid_querynode_search_requests_total") == {
        (("node_id", "3"), ("status", "fail")): 1, (("node_id", "3"), ("status", "success")): 2}
    assert by_labels(text, "vecgrid_querynode_search_latency_seconds_count") == {(("node_id", "3"),): 3}


def test_two_collections_of_one_name_get_two_labels():
    assert collection_labels({1: "a", 2: "b", 3: "a"}) == {1: "a#1", 2: "b", 3: "a#3"}


def test_the_scheduler_port_exports_the_rest_ports_node_families():
    from vecgrid.dashboard.metrics import WorkerCollector

    scheduler = SimpleNamespace(
        get_metadata=lambda key, default=None: {"collections": [{"collection_id": 11, "name": "books"},
                                                                {"collection_id": 12, "name": "films"}]},
        clients={}, workers={"tcp://a": SimpleNamespace(metrics={"vecgrid": NODE})})
    dashboard = exposition(*WorkerCollector(scheduler).collect())
    rest = exposition(*node_families([NODE], collection_labels({11: "books", 12: "films"})))
    assert conventions_broken(dashboard) == []
    # every REST family, with the same samples; the scheduler adds only snapshot_failed
    rest_families = {f.name: f for f in text_string_to_metric_families(rest)}
    dashboard_families = {f.name: f for f in text_string_to_metric_families(dashboard)}
    assert set(dashboard_families) - set(rest_families) == {"vecgrid_querynode_snapshot_failed"}
    for name, family in rest_families.items():
        assert dashboard_families[name].samples == family.samples, name


# --- the REST histogram's labels ------------------------------------------------------------------------------

class Books:
    async def find(self, params):
        return []

    async def get(self, id, params):
        return {"id": id}

    async def create(self, data, params):
        return data

    async def publish(self, data, params):
        return {"published": True}


class FileHandler(BaseHandler):
    """A plain route with a path argument, as the console's and the docs' files."""

    def get(self, name: str) -> None:
        self.send_json({"name": name})


class RestLabelsTest(AsyncHTTPTestCase):
    def get_app(self) -> tornado.web.Application:
        self.metrics = RestMetrics()
        api = Application({"title": "t", "version": "1"})
        api.use("books", Books(), {"methods": ["find", "get", "create", "publish"]})
        v2_route = (r"/v2/vectordb/(collections)/(\w+)", MilvusV2Handler,
                    {"v2": None, "groups": {"collections": {"describe": None}}, "credentials": None})
        files = (r"/files/(.*)", FileHandler)
        return make_tornado_app(api, plain_handlers=[(r"/metrics", MetricsHandler, {"metrics": self.metrics}),
                                                     v2_route, files], log_function=self.metrics.log_request)

    def counts(self) -> dict[tuple[str, str, str], float]:
        text = self.fetch("/metrics").body.decode()
        assert conventions_broken(text) == []
        return {(s.labels["service"], s.labels["method"], s.labels["code"]): s.value
                for f in text_string_to_metric_families(text) for s in f.samples
                if s.name == "vecgrid_http_request_duration_seconds_count"}

    def test_feathers_methods_routes_and_plain_endpoints_share_one_vocabulary(self):
        self.fetch("/books")
        self.fetch("/books/7")
        self.fetch("/books", method="POST", body=b"{}")
        self.fetch("/books", method="POST", body=b"{}", headers={"X-Service-Method": "publish"})
        self.fetch("/books", method="POST", body=b"{}", headers={"X-Service-Method": "x" * 40})
        self.fetch("/books/7", method="DELETE")
        self.fetch("/books", method="OPTIONS")
        self.fetch("/nowhere/at/all")
        self.fetch("/v2/vectordb/collections/describe", method="POST", body=b"{}")
        self.fetch("/v2/vectordb/collections/whatever", method="POST", body=b"{}")
        self.fetch("/openapi.json")
        self.fetch("/metrics")
        for name in ("a.js", "b/c.css"):
            self.fetch(f"/files/{name}")
        counts = self.counts()
        labels = {(service, method) for service, method, _ in counts}
        assert labels == {("books", "find"), ("books", "get"), ("books", "create"), ("books", "publish"),
                          ("books", "(unsupported)"), ("books", "preflight"), ("(unmatched)", "(unmatched)"),
                          ("v2/vectordb/collections", "describe"), ("v2/vectordb/collections", "(unsupported)"),
                          ("openapi.json", "get"), ("metrics", "get"), ("files", "get")}, labels
        assert counts[("files", "get", "200")] == 2
        assert counts[("books", "(unsupported)", "405")] == 2   # the unknown custom method and DELETE
        assert counts[("(unmatched)", "(unmatched)", "404")] == 1
        verbs = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
        assert not {m for _, m in labels} & verbs and ("(unknown)" not in {s for s, _ in labels})


# --- the Grafana board ------------------------------------------------------------------------------------------

def test_the_grafana_board_uses_only_the_names_the_docs_list():
    """The live check (tests/test_monitoring.py) scrapes a cluster; this one keeps the board, the docs' metrics
    table and the naming rules in step without one."""
    board = json.loads((REPO / "docker" / "grafana" / "vecgrid-dashboard.json").read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in board["templating"]["list"] if isinstance(v.get("query"), dict)]
    wanted = {m for e in exprs for m in re.findall(r"\b(vecgrid_[a-z0-9_]+)", e)}
    documented = set(re.findall(r"`(vecgrid_[a-z0-9_]+)", (REPO / "docs" / "operations.md").read_text()))
    bases = {re.sub(r"_(bucket|count|sum)$", "", m) for m in wanted}
    assert sorted(b for b in bases if b not in documented) == []
    assert not [m for m in wanted if "_count_total" in m or m.endswith("_num") or "vecgrid_worker_" in m]
