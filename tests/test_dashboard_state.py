"""What the vecgrid dashboard page reads from the scheduler, on an in-process Dask cluster: node snapshots
from worker heartbeats, the coordinator's published state, and the coordinator client's Dask tasks in
flight; the page's HTML tables and chart data from it (the pure parts: rates, latency quantiles from
histogram deltas, the partition strip, the per-node bars); and a browser tab that closes without a
traceback in the scheduler's log."""

from __future__ import annotations

import copy
import logging
import math

import pytest
from distributed import Client, Event, LocalCluster

from vecgrid import dashboard
from vecgrid.common.histogram import CumulativeHistogram
from vecgrid.dashboard import metrics as dashboard_metrics, page, plots
from tests.conftest import poll_until

SNAPSHOT = {"node_id": 7, "name": "w0", "address": "127.0.0.1:1", "hostname": "h", "state": "Healthy",
            "device": "GPU", "gpus": [], "gpu_memory_used_bytes": 3 << 30, "gpu_memory_capacity_bytes": 60 << 30,
            "memory_used_bytes": 1 << 20, "memory_capacity_bytes": 8 << 30, "process_rss_bytes": 1,
            "host_memory_total_bytes": 1, "segment_num": 4, "entity_num": 1000, "growing_rows": 5,
            "channels": ["c0"], "collections": {}, "placement": {},
            "search": {"requests": {"success": 3, "fail": 0}, "nq_total": 3,
                       "latency": {"buckets": [], "count": 3, "sum": 0.1}}, "time": 0.0}


def blocked(event_name: str) -> int:
    Event(event_name).wait()
    return 1


@pytest.mark.asyncio
async def test_state_from_heartbeats_metadata_and_the_coordinators_tasks():
    async with LocalCluster(n_workers=1, processes=False, asynchronous=True, dashboard_address=":0") as cluster, \
            Client(cluster, asynchronous=True) as client:
        scheduler = cluster.scheduler
        # the worker plugin's part: a heartbeat metric
        worker = next(iter(cluster.workers.values()))
        worker.metrics[dashboard.WORKER_METRIC] = lambda w: SNAPSHOT
        # the coordinator's part: its state as metadata, naming its client
        cluster_state = {"querycoord": {"state": "Healthy", "node_id": 1, "address": "127.0.0.1:19531"},
                         "nodes": [{"node_id": 7, "state": "Normal"}],
                         "collections": [{"collection_id": 1, "name": "<b>books</b>", "load_percentage": 100,
                                          "replicas": [{"id": 4, "nodes": [7], "resource_group": "rg"}],
                                          "partitions": [{"partition_id": 2, "name": "_default", "state": "InGPU",
                                                          "load_percentage": 100}],
                                          "segments_per_node": {"7": 4}}],
                         "tasks": {"segment_grow": 2}, "tasks_waiting": 0, "wal_appends": 10,
                         "dask_client": client.id, "time": 0.0}
        await client.set_metadata(dashboard.METADATA_KEY, cluster_state)
        release = Event("release", client=client)
        future = client.submit(blocked, "release", key="load-segment-1-node-7-1")
        await poll_until(lambda: dashboard.dask_tasks(scheduler, cluster_state), 30, 0.05, "the task in flight")
        await poll_until(lambda: dashboard.state(scheduler)["nodes"], 30, 0.1, "a heartbeat with the snapshot")

        state = dashboard.state(scheduler)
        assert state["cluster"]["collections"][0]["name"] == "<b>books</b>"
        assert [n["node_id"] for n in state["nodes"]] == [7]
        assert state["dask_tasks"] == [{"prefix": "load-segment", "state": "processing", "count": 1}]
        # another client's tasks are not vecgrid's
        assert dashboard.dask_tasks(scheduler, {"dask_client": "someone-else"}) == []

        html = page.render(state, page.Rates())
        assert "&lt;b&gt;books&lt;/b&gt;" in html and "<b>books</b>" not in html   # names are escaped
        assert "_default: InGPU 100 %" in html and "3,072 MiB / 61,440 MiB" in html
        # the node's own state and the coordinator's view of it, side by side under clear names
        assert "<th>node id</th><th>worker</th>" in html and "<th>node state</th><th>coordinator view</th>" in html
        assert "<td>7</td><td>w0</td><td>127.0.0.1:1</td><td>GPU</td><td>Healthy</td><td>Normal</td>" in html
        assert "load-segment" in html and "segment_grow" in html

        await release.set()
        assert await future == 1
        await poll_until(lambda: not dashboard.dask_tasks(scheduler, cluster_state), 30, 0.05, "the task done")


def test_the_page_shows_rows_inserted_per_second_and_the_datacoords_work():
    activity = {"flushes_in_flight": 1, "compaction_plans_in_flight": 2, "index_builds_in_flight": 3,
                "indexes": [{"collection": "books", "index_name": "vec", "state": "InProgress", "indexed_rows": 1000,
                             "total_rows": 4000, "pending_index_rows": 3000, "progress": 25}]}
    cluster_state = {"querycoord": {"state": "Healthy", "node_id": 1, "address": "a"}, "nodes": [], "collections": [],
                     "tasks": {}, "tasks_waiting": 0, "wal_appends": 10, "inserted_rows": {"insert": 100, "upsert": 0},
                     "datacoord": activity, "dask_client": None, "time": 100.0}
    rates = page.Rates()
    first = page.render({"cluster": cluster_state, "nodes": [], "time": 100.0}, rates)
    assert "rows inserted (inserts and upserts)</td><td>–" in first        # no rate before a second refresh
    later = {**cluster_state, "inserted_rows": {"insert": 350, "upsert": 50}, "wal_appends": 12, "time": 102.0}
    html = page.render({"cluster": later, "nodes": [], "time": 102.0}, rates)
    assert "rows inserted (inserts and upserts)</td><td>150.0/s" in html   # (400 - 100) rows in 2 s
    assert "WAL appends (write batches and time ticks)</td><td>1.0/s" in html
    assert "compaction plans</td><td>2" in html and "index builds</td><td>3" in html
    assert "<td>books</td><td>vec</td><td>InProgress</td><td>1,000 / 4,000</td><td>3,000</td><td>25 %</td>" in html


def test_a_node_whose_snapshot_fails_is_shown_with_why_not_dropped(caplog):
    """Dask drops an exception raised by a worker.metrics callable; the plugin's callable turns it
    into the snapshot, and the page and the scheduler's /metrics show that node as failing."""
    from types import SimpleNamespace

    from vecgrid.cluster.querynode import monitor

    class BrokenNode:  # no segments to list: node_snapshot fails
        node_id, name, address, segments = 9, "w9", "127.0.0.1:9", None

    node = BrokenNode()
    snap = monitor.heartbeat_snapshot(node)
    assert snap["node_id"] == 9 and snap["error"].startswith("AttributeError")
    monitor.heartbeat_snapshot(node)
    assert len([r for r in caplog.records if r.name == monitor.__name__]) == 1  # logged once per error

    data = {"cluster": None, "time": 1.0,
            "nodes": [{"worker": "tcp://a", **SNAPSHOT}, {"worker": "tcp://b", **snap}]}
    html = page.render(data, page.Rates())
    assert "could not be read" in html and "AttributeError" in html and "w0" in html

    # the scheduler's /metrics: the REST port's vecgrid_querynode_* families, the collection named from the
    # published state; the failing node only in snapshot_failed
    served = {**SNAPSHOT, "collections": {"1": {"segments": 4, "rows": 1000}}, "growing_rows_by_collection": {"1": 5}}
    published = {"collections": [{"collection_id": 1, "name": "books"}]}
    scheduler = SimpleNamespace(get_metadata=lambda key, default=None: published, clients={}, workers={
        "tcp://a": SimpleNamespace(metrics={dashboard.WORKER_METRIC: served}),
        "tcp://b": SimpleNamespace(metrics={dashboard.WORKER_METRIC: snap})})
    families = {f.name: f for f in dashboard_metrics.WorkerCollector(scheduler).collect()}
    failed = {s.labels["node_id"]: s.value for s in families["vecgrid_querynode_snapshot_failed"].samples}
    assert failed == {"7": 0, "9": 1}
    for name, value in (("vecgrid_querynode_segments", 4), ("vecgrid_querynode_entities", 1000),
                        ("vecgrid_querynode_growing_rows", 5)):
        assert [(s.labels, s.value) for s in families[name].samples] == [
            ({"node_id": "7", "collection": "books"}, value)], name
    assert {s.labels["node_id"] for s in families["vecgrid_querynode_gpu_memory_bytes"].samples} == {"7"}


# --- the charts' data -----------------------------------------------------------------------------------

def test_counter_rate_needs_an_earlier_reading_and_a_counter_that_did_not_go_back():
    assert plots.counter_rate(None, 10.0, 5) is None
    assert plots.counter_rate((10.0, 5), 12.0, 25) == 10.0
    assert plots.counter_rate((10.0, 5), 10.0, 25) is None     # no time passed
    assert plots.counter_rate((10.0, 50), 12.0, 25) is None    # a restarted counter


def test_latency_quantiles_come_from_the_buckets_observed_in_the_interval():
    hist = CumulativeHistogram((0.01, 0.1, 1.0))
    for _ in range(100):
        hist.observe(0.5)                 # slow searches before the interval
    before = hist.snapshot()
    assert plots.histogram_quantile(before, hist.snapshot(), 0.5) is None     # nothing observed since
    for _ in range(98):
        hist.observe(0.005)
    hist.observe(0.05)
    hist.observe(5.0)                     # above the last bound
    after = hist.snapshot()
    # only the interval's 100 searches count: 98 in (0, 0.01], 1 in (0.01, 0.1], 1 above 1.0
    assert plots.histogram_quantile(before, after, 0.5) == pytest.approx(0.01 * 50 / 98)
    assert plots.histogram_quantile(before, after, 0.99) == pytest.approx(0.1)
    assert plots.histogram_quantile(before, after, 1.0) == 1.0               # the last finite bound
    # the whole history, without an earlier snapshot: the slow searches dominate the median
    assert plots.histogram_quantile(None, after, 0.5) == pytest.approx(0.1 + 0.9 * (100 - 99) / 100)


def _node(node_id: int, t: float, searches: int, hist: CumulativeHistogram, **extra) -> dict:
    snap = copy.deepcopy(SNAPSHOT)
    snap.update(node_id=node_id, time=t, search={"requests": {"success": searches, "fail": 0}, "nq_total": searches,
                                                  "latency": hist.snapshot()}, **extra)
    return snap


def test_a_nodes_points_come_from_new_snapshots_only():
    hist = CumulativeHistogram()
    reading, point = plots.node_point(None, _node(2, 100.0, 10, hist))
    assert point is None                                              # the first snapshot: nothing to compare
    same, point = plots.node_point(reading, _node(2, 100.0, 10, hist))
    assert point is None and same == reading                          # a page refresh between two heartbeats
    for _ in range(40):
        hist.observe(0.02)
    reading, point = plots.node_point(reading, _node(2, 102.0, 50, hist))
    assert point["time"] == 102_000 and point["rate"] == 20.0
    assert 10 < point["p50"] < 25 and 10 < point["p99"] <= 25         # ms, inside the (10, 25] ms bucket
    _, point = plots.node_point(reading, _node(2, 103.0, 50, hist))
    assert point["rate"] == 0 and math.isnan(point["p50"])            # no search: a gap, not a zero latency
    restarted, point = plots.node_point(reading, _node(2, 104.0, 3, CumulativeHistogram()))
    assert point is None and restarted.searches == 3                  # counters restarted: start again


def test_partition_strip_has_one_cell_per_partition_coloured_by_state():
    cluster = {"collections": [
        {"name": "books", "partitions": [
            {"partition_id": 1, "name": "_default", "state": "InGPU", "load_percentage": 100},
            {"partition_id": 2, "name": "", "state": "PartialInMemory", "load_percentage": 40}]},
        {"name": "films", "partitions": [{"partition_id": 3, "name": "p", "state": "Weird", "load_percentage": 0}]}]}
    strip = plots.partition_strip(cluster)
    assert strip["cell"] == ["books/_default", "books/2", "films/p"]   # a partition without a name shows its id
    assert strip["colour"] == [plots.PARTITION_STATES["InGPU"], plots.PARTITION_STATES["PartialInMemory"],
                               plots.UNKNOWN_STATE_COLOUR]
    assert strip["text"][1] == "PartialInMemory 40 %"
    assert plots.partition_strip(None)["cell"] == []


def test_node_bars_show_memory_against_budget_and_no_gpu_for_a_cpu_node():
    gpu = _node(3, 1.0, 0, CumulativeHistogram())
    cpu = _node(2, 1.0, 0, CumulativeHistogram(), device="CPU", name="w1", gpu_memory_capacity_bytes=0)
    bars = plots.node_bars([gpu, cpu, {"node_id": 9, "name": "w9", "error": "AttributeError: x"}])
    assert bars["node"] == ["node 2", "node 3"] and bars["worker"] == ["w1", "w0"]   # by id; the failing one out
    assert bars["memory_used"] == [1.0, 1.0] and bars["memory_budget"] == [8192.0, 8192.0]   # MiB
    assert bars["gpu_used"] == [0.0, 3072.0] and bars["gpu_budget"] == [0.0, 61440.0]
    assert bars["gpu_note"] == ["no GPU", ""]
    assert bars["segments"] == [4, 4] and bars["rows"] == [1000, 1000] and bars["growing"] == [5, 5]


def test_the_charts_fill_from_two_refreshes():
    hist = CumulativeHistogram()
    cluster = {"querycoord": {"state": "Healthy", "node_id": 1, "address": "a"}, "nodes": [],
               "collections": [{"collection_id": 1, "name": "books", "load_percentage": 100, "replicas": [],
                                "segments_per_node": {}, "partitions": [{
                                    "partition_id": 1, "name": "_default", "state": "InGPU",
                                    "load_percentage": 100}]}],
               "tasks": {"segment_grow": 2}, "tasks_waiting": 1, "wal_appends": 10,
               "inserted_rows": {"insert": 100, "upsert": 0}, "dask_client": None, "time": 100.0}
    charts = plots.VecgridPlots()
    unregistered = {**SNAPSHOT, "node_id": -1, "name": "x", "time": 1.0}   # a heartbeat before registration
    charts.update({"cluster": cluster, "nodes": [_node(2, 100.0, 0, hist), unregistered],
                   "dask_tasks": [{"prefix": "load-segment", "state": "processing", "count": 3}], "time": 100.5})
    assert set(charts.node_sources) == {2}                            # a node not registered yet has no line
    for _ in range(30):
        hist.observe(0.004)
    charts.update({"cluster": {**cluster, "inserted_rows": {"insert": 300, "upsert": 100}, "wal_appends": 14,
                               "time": 102.0},
                   "nodes": [_node(2, 101.0, 30, hist)], "dask_tasks": [], "time": 102.5})
    node = charts.node_sources[2].data
    assert charts.node_sources[2].name == "vecgrid-node-2"
    assert list(node["rate"]) == [30.0] and list(node["p50"]) == [pytest.approx(2.5)]
    assert list(charts.inserted_source.data["rows"]) == [150.0] and list(charts.inserted_source.data["wal"]) == [2.0]
    assert list(charts.tasks_source.data["querycoord"]) == [2, 2] and list(charts.tasks_source.data["dask"]) == [3, 0]
    assert list(charts.bars_source.data["node"]) == ["node 2"] and list(charts.memory.x_range.factors) == ["node 2"]
    assert list(charts.partition_source.data["state"]) == ["InGPU"]
    assert list(charts.partitions.x_range.factors) == ["books/_default"]


def test_the_banner_prints_the_vecgrid_page():
    from vecgrid.deploy import Addresses, describe

    addresses = Addresses()
    addresses.dashboard = "http://127.0.0.1:8787/status"
    banner = describe(addresses, "embedded cluster")
    assert "  Dask dashboard  : http://127.0.0.1:8787/status\n  vecgrid page    : " \
           "http://127.0.0.1:8787/individual-vecgrid\n" in banner
    assert "vecgrid page" not in describe(Addresses(), "coordinator")      # no dashboard, no page


# --- a tab that closes ----------------------------------------------------------------------------------

class Errors(logging.Handler):
    """Every record at ERROR or above of the loggers a tab's close could log through (some of them do not
    propagate to the root under Dask's logging config)."""

    LOGGERS = ("", "tornado", "tornado.application", "tornado.general", "bokeh", "distributed", "asyncio")

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: dict[int, logging.LogRecord] = {}

    def emit(self, record: logging.LogRecord) -> None:
        self.records[id(record)] = record

    def __enter__(self) -> "Errors":
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self)
        return self

    def __exit__(self, *exc) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self)

    def text(self) -> str:
        return "\n".join(f"{r.name}: {r.getMessage()} {r.exc_info[1]!r}" if r.exc_info else
                         f"{r.name}: {r.getMessage()}" for r in self.records.values())


@pytest.mark.slow
@pytest.mark.asyncio
async def test_closing_a_tab_logs_no_traceback(tmp_path):
    """Two tabs on the page; one closes normally, the other after Bokeh's keep-alive has already dropped its
    client (what ``BokehTornado._keep_alive`` does when a ping finds the socket closing, before Tornado's
    ``on_close``): Bokeh's ``on_close`` used to raise ``AssertionError`` there, logged as an uncaught
    exception.  Both sessions end and nothing is logged at ERROR."""
    from bokeh.server.tornado import BokehTornado

    from tests.browser import chromium_page

    import dask

    # closed tabs' sessions are discarded after a second instead of Bokeh's 15 s
    bokeh_app = {**dask.config.get("distributed.scheduler.dashboard.bokeh-application"),
                 "unused_session_lifetime_milliseconds": 1000}
    with dask.config.set({"distributed.scheduler.dashboard.bokeh-application": bokeh_app}):
        cluster = await LocalCluster(n_workers=1, processes=False, asynchronous=True, dashboard_address="127.0.0.1:0")
    async with cluster:
        scheduler = cluster.scheduler
        url = f"http://127.0.0.1:{scheduler.http_server.port}{dashboard.PAGE}"
        [bokeh] = [a for a in scheduler.http_application.applications if isinstance(a, BokehTornado)]
        context = bokeh._applications[dashboard.PAGE]
        with Errors() as errors:
            async with chromium_page(tmp_path / "profile") as devtools:
                async def open_tab() -> str:
                    target = (await devtools.call("Target.createTarget", url=url))["targetId"]
                    return target

                first, second = await open_tab(), await open_tab()
                await poll_until(lambda: len(bokeh._clients) == 2, 60, 0.2, "two tabs connected to the page")
                await poll_until(lambda: all(s.document.roots for s in context.sessions), 30, 0.2, "both documents")
                await devtools.call("Target.closeTarget", targetId=first)
                await poll_until(lambda: len(bokeh._clients) == 1, 30, 0.1, "the first tab's connection closed")
                [left] = list(bokeh._clients)
                handler = left._socket

                def keep_alive_first() -> None:  # the keep-alive's ping found the socket closing first
                    bokeh.client_lost(left)
                    type(handler).on_close(handler)

                handler.on_close = keep_alive_first
                await devtools.call("Target.closeTarget", targetId=second)
                await poll_until(lambda: not bokeh._clients and handler.ws_connection is None, 30, 0.1,
                                 "the second tab's connection closed")
                # the closed tabs' sessions are discarded by Bokeh's cleanup (unused for a second): their
                # documents destroyed, their periodic callbacks removed
                await poll_until(lambda: not list(context.sessions), 30, 0.2, "both sessions discarded")
        assert errors.text() == ""
