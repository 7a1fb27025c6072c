"""What the vecgrid dashboard page reads from the scheduler, on an in-process Dask cluster: node snapshots
from worker heartbeats, the coordinator's published state, and the coordinator client's Dask tasks in
flight; and the page's HTML from it."""

from __future__ import annotations

import pytest
from distributed import Client, Event, LocalCluster

from vecgrid import dashboard
from vecgrid.dashboard import metrics as dashboard_metrics, page
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
