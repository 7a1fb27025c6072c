"""Monitoring of a live embedded cluster: the coordinator's Prometheus ``/metrics``, the Dask
scheduler's own ``/metrics`` with vecgrid's worker gauges, and the vecgrid page on the Dask dashboard
(its JSON route, and the Bokeh page rendered by headless Chromium)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families
from tornado.httpclient import AsyncHTTPClient

from vecgrid.deploy import EmbeddedCluster
from tests.browser import chromium_page, is_png_of_a_page, keep_screenshot
from tests.conftest import REPO, poll_until
from tests.metrics_support import conventions_broken
from tests.proxy_support import create_collection, rows_for
from tests.querycoord_support import Coord, fast_settings

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

DIM = 16
NAME = "watched"


@dataclass
class Env:
    cluster: EmbeddedCluster
    collection_id: int
    node_ids: list[int]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory):
    cluster = EmbeddedCluster(fast_settings(tmp_path_factory.mktemp("mon"), workers=2))
    await asyncio.wait_for(cluster.start(), 120)
    coll = create_collection(cluster.coord.catalog, NAME, dim=DIM, shards=2)
    await Coord(cluster.addresses.grpc, cluster.coord).load(coll.id)
    rows = rows_for(list(range(300)), DIM)
    await cluster.proxy.insert(NAME, rows)
    sealed = await cluster.proxy.flush(NAME)   # 300 rows sealed, served by the nodes once handed off
    await poll_until(lambda: {s.ID for _, s in cluster.coord.dist.segments(coll.id)} >= set(sealed), 60, 0.2,
                     "the flushed segments served")
    await cluster.proxy.insert(NAME, rows_for(list(range(300, 400)), DIM, seed=1))   # 100 growing rows
    async with asyncio.timeout(30):
        hits = await cluster.proxy.search(NAME, rows["vec"][:2], limit=1)
    assert [h[0]["id"] for h in hits] == [0, 1]
    yield Env(cluster, coll.id, sorted(n.node_id for n in cluster.coord.nodes.all()))
    await asyncio.wait_for(cluster.stop(), 60)


async def scrape(url: str) -> dict:
    response = await AsyncHTTPClient().fetch(url)
    assert response.headers["Content-Type"].startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(response.body.decode())}


def samples(family, suffix: str = "") -> dict[tuple, float]:
    return {tuple(sorted(s.labels.items())): s.value for s in family.samples if s.name == family.name + suffix}


async def scrape_text(url: str) -> str:
    response = await AsyncHTTPClient().fetch(url)
    assert response.headers["Content-Type"].startswith("text/plain")
    return response.body.decode()


def by_collection(family, suffix: str = "") -> dict[str, float]:
    """A family's samples summed per ``collection`` label."""
    out: dict[str, float] = {}
    for labels, value in samples(family, suffix).items():
        collection = dict(labels)["collection"]
        out[collection] = out.get(collection, 0) + value
    return out


async def test_coordinator_metrics_have_the_querycoord_node_and_wal_families(env):
    url = env.cluster.addresses.http + "/metrics"

    async def settled():
        families = await scrape(url)
        timed = samples(families["vecgrid_querycoord_load_latency_seconds"], "_count").get(
            (("collection", NAME),), 0) >= 1
        sealed = by_collection(families["vecgrid_querynode_entities"]) == {NAME: 300}
        growing = by_collection(families["vecgrid_querynode_growing_rows"]) == {NAME: 100}
        return families if timed and sealed and growing else None

    # the load's clock stops when a snapshot first sees it at 100 %; the growing copies of the
    # flushed rows go when the delegators take the sealed segments
    families = await poll_until(settled, 60, 0.3, "the load timed, 300 sealed rows and 100 growing ones")
    assert samples(families["vecgrid_querycoord_querynodes"]) == {(): 2}
    assert samples(families["vecgrid_querycoord_collections"]) == {(): 1}
    assert samples(families["vecgrid_querycoord_load_requests"], "_total") == {
        (("collection", NAME), ("status", "success")): 1, (("collection", NAME), ("status", "fail")): 0}
    assert samples(families["vecgrid_querycoord_load_requests_in_flight"]) == {(("collection", NAME),): 0}
    assert "vecgrid_querycoord_tasks" in families
    assert samples(families["vecgrid_querycoord_querynodes_unreachable"]) == {(): 0}
    nodes = [str(n) for n in env.node_ids]
    info = samples(families["vecgrid_querynode_info"])
    assert {dict(k)["node_id"] for k in info} == set(nodes) and set(info.values()) == {1}
    searches = samples(families["vecgrid_querynode_search_requests"], "_total")
    assert {dict(k)["node_id"] for k in searches} == set(nodes)
    # one search per shard leader: two channels, so the delegators served at least two
    assert sum(v for k, v in searches.items() if dict(k)["status"] == "success") >= 2
    latency = samples(families["vecgrid_querynode_search_latency_seconds"], "_count")
    assert {dict(k)["node_id"] for k in latency} == set(nodes) and sum(latency.values()) >= 2
    gpu = samples(families["vecgrid_querynode_gpu_memory_bytes"])
    assert {(dict(k)["node_id"], dict(k)["kind"]) for k in gpu} == {(n, k) for n in nodes for k in ("used", "capacity")}
    memory = samples(families["vecgrid_querynode_memory_bytes"])
    assert all(v > 0 for k, v in memory.items() if dict(k)["kind"] == "capacity")
    # the nodes' own segment counts, per collection: the distribution the coordinator polled catches up
    segments = by_collection(families["vecgrid_querynode_segments"])
    assert set(segments) == {NAME} and segments[NAME] >= 1
    assert {dict(k)["node_id"] for k in samples(families["vecgrid_querynode_segments"])} <= set(nodes)
    assert samples(families["vecgrid_wal_bytes"])[()] > 0
    assert samples(families["vecgrid_wal_append_latency_seconds"], "_count")[()] >= 1
    # exactly the 400 rows the fixture inserted, none upserted
    assert samples(families["vecgrid_proxy_inserted_rows"], "_total") == {
        (("collection", NAME), ("op", "insert")): 400, (("collection", NAME), ("op", "upsert")): 0}
    # the FLAT index: the 300 flushed rows are indexed or pending, nothing else
    index = (("collection", NAME), ("index", "vec"))
    pending = samples(families["vecgrid_datacoord_pending_index_rows"])[index]
    assert pending + samples(families["vecgrid_datacoord_index_rows"])[index] == 300
    for name in ("vecgrid_datacoord_flushes_in_flight", "vecgrid_datacoord_compaction_plans_in_flight",
                 "vecgrid_datacoord_index_builds_in_flight"):
        assert samples(families[name])[()] >= 0
    # the whole text: no _created, no _count_total, counters end in _total, no _num gauges
    assert conventions_broken(await scrape_text(url)) == []


async def test_load_and_search_counts_agree_with_their_latency_counts_on_a_scripted_workload(env):
    """Issue 26: load requests counted 5 against 4 timed.  Two more loads of the loaded collection, one of a
    partition it does not have and one of a collection that does not exist (refused), three searches: every
    request counted once, with its outcome, and timed once."""
    from vecgrid.proto import query_coord_pb2

    url = env.cluster.addresses.http + "/metrics"
    coord = Coord(env.cluster.addresses.grpc, env.cluster.coord)
    before = await scrape(url)
    searched_before = sum(samples(before["vecgrid_querynode_search_latency_seconds"], "_count").values())
    for _ in range(2):
        await coord.ok("LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=env.collection_id))
    refused = [query_coord_pb2.LoadPartitionsRequest(collectionID=env.collection_id, partitionIDs=[987654321]),
               query_coord_pb2.LoadCollectionRequest(collectionID=987654321)]
    for request in refused:
        reply = await coord.call(type(request).__name__.removesuffix("Request"), request)
        assert reply.code != 0, reply
    rows = rows_for(list(range(3)), DIM)
    async with asyncio.timeout(30):
        for i in range(3):
            await env.cluster.proxy.search(NAME, rows["vec"][i:i + 1], limit=1)

    async def ended():
        families = await scrape(url)
        pending = sum(samples(families["vecgrid_querycoord_load_requests_in_flight"]).values())
        return families if pending == 0 else None

    families = await poll_until(ended, 30, 0.2, "every load request ended")
    requests = samples(families["vecgrid_querycoord_load_requests"], "_total")
    assert requests[(("collection", NAME), ("status", "success"))] == 3
    assert requests[(("collection", NAME), ("status", "fail"))] == 1
    assert requests[(("collection", "(none)"), ("status", "fail"))] == 1   # no such collection
    counted = by_collection(families["vecgrid_querycoord_load_requests"], "_total")
    timed = by_collection(families["vecgrid_querycoord_load_latency_seconds"], "_count")
    assert counted == timed == {NAME: 4, "(none)": 1}
    # searches: per node, success + fail = the latency histogram's count; the three new ones among them
    counts = samples(families["vecgrid_querynode_search_requests"], "_total")
    latency = samples(families["vecgrid_querynode_search_latency_seconds"], "_count")
    for node in env.node_ids:
        key = (("node_id", str(node)),)
        assert sum(v for k, v in counts.items() if dict(k)["node_id"] == str(node)) == latency[key], node
    assert sum(latency.values()) >= searched_before + 3


async def test_scheduler_metrics_keep_dasks_and_add_the_rest_ports_node_families(env):
    dashboard = env.cluster.addresses.dashboard.rsplit("/status", 1)[0]
    nodes = {str(n) for n in env.node_ids}

    async def both_nodes():
        families = await scrape(dashboard + "/metrics")
        found = samples(families["vecgrid_querynode_info"]) if "vecgrid_querynode_info" in families else {}
        # a heartbeat sent before the coordinator registered the node says node -1, which has no series
        entities = by_collection(families["vecgrid_querynode_entities"]) if found else {}
        return families if {dict(k)["node_id"] for k in found} == nodes and entities == {NAME: 300} else None

    families = await poll_until(both_nodes, 30, 0.5, "both registered nodes' vecgrid series on the scheduler")
    assert "dask_scheduler_workers" in families    # Dask's own, untouched
    assert {dict(k)["node_id"] for k in samples(families["vecgrid_querynode_gpu_memory_bytes"])} == nodes
    assert "vecgrid_querynode_search_requests" in families
    assert samples(families["vecgrid_querynode_snapshot_failed"]) == {(("node_id", n),): 0 for n in nodes}
    # one name per series: the scheduler's port has the REST port's node families, under the same labels
    rest = await scrape(env.cluster.addresses.http + "/metrics")
    node_families = {name for name in rest if name.startswith("vecgrid_querynode_")}
    assert node_families <= set(families)
    for name in node_families:
        assert {s.name for s in families[name].samples} <= {s.name for s in rest[name].samples} | {name}, name
        assert {tuple(sorted(s.labels)) for s in families[name].samples} == {
            tuple(sorted(s.labels)) for s in rest[name].samples}, name
    assert not [name for name in families if name.startswith("vecgrid_worker_")]
    assert conventions_broken(await scrape_text(dashboard + "/metrics")) == []


async def test_dashboard_state_route_shows_the_collection_and_both_nodes(env):
    dashboard = env.cluster.addresses.dashboard.rsplit("/status", 1)[0]

    async def published():
        state = json.loads((await AsyncHTTPClient().fetch(dashboard + "/vecgrid/api/state")).body)
        ok = (state["cluster"] and state["cluster"]["collections"]
              and sorted(n["node_id"] for n in state["nodes"]) == env.node_ids
              and sum(n["entity_num"] for n in state["nodes"]) == 300
              # published once a second: a state from before the fixture's last insert says 300 rows
              and state["cluster"]["inserted_rows"] == {"insert": 400, "upsert": 0}
              # the coordinator's view comes from its distribution pulls: it catches up with the heartbeats
              and sum(state["cluster"]["collections"][0]["segments_per_node"].values())
              == sum(n["segment_num"] for n in state["nodes"])
              # index builds, index saves and loads the checkers start run on a busy host for a while:
              # the page lists each Dask task of the coordinator's in flight until it ends
              and state["dask_tasks"] == [])
        return state if ok else None

    state = await poll_until(published, 60, 0.5, "the coordinator's state with the 400 inserted rows, both nodes' "
                             "heartbeats and no task left")
    [coll] = state["cluster"]["collections"]
    [index] = [i for i in state["cluster"]["datacoord"]["indexes"] if i["collection"] == NAME]
    assert index["total_rows"] == 300 and index["indexed_rows"] + index["pending_index_rows"] == 300
    assert (coll["name"], coll["load_percentage"], len(coll["replicas"])) == (NAME, 100, 1)
    assert [p["name"] for p in coll["partitions"]] == ["_default"]
    assert {p["state"] for p in coll["partitions"]} <= {"InGPU", "PartialInGPU", "InMemory"}
    assert sorted(n["node_id"] for n in state["nodes"]) == env.node_ids
    assert sum(n["entity_num"] for n in state["nodes"]) == 300
    assert sum(coll["segments_per_node"].values()) == sum(n["segment_num"] for n in state["nodes"]) >= 1
    assert state["cluster"]["dask_client"] == env.cluster.client.id
    # what the page's charts are computed from: each node's cumulative search counters and latency buckets
    assert all(n["search"]["latency"]["buckets"] and "success" in n["search"]["requests"] and n["time"] > 0
               for n in state["nodes"])
    listed = json.loads((await AsyncHTTPClient().fetch(dashboard + "/individual-plots.json")).body)
    assert "/individual-vecgrid" in listed.values()


# --- the page in a browser ------------------------------------------------------------------------------

async def test_dashboard_page_in_headless_chromium(env, tmp_path):
    """The live page after the load and a stream of searches and inserts: its charts' data sources (read from
    the Bokeh document in the page) hold non-zero series for the nodes and the cluster, its tables are below,
    the screenshot is a drawn page (kept as docs/dashboard.png), and closing the tab logs no traceback on
    the scheduler (in this process)."""
    import logging

    from bokeh.server.tornado import BokehTornado

    dashboard = env.cluster.addresses.dashboard.rsplit("/status", 1)[0]
    scheduler = env.cluster.cluster.scheduler
    [bokeh] = [a for a in scheduler.http_application.applications if isinstance(a, BokehTornado)]
    errors: list[logging.LogRecord] = []
    catcher = logging.Handler(logging.ERROR)
    catcher.emit = errors.append   # some of these loggers do not propagate under Dask's logging config
    loggers = [logging.getLogger(n) for n in ("", "tornado", "tornado.application", "bokeh", "asyncio")]
    for logger in loggers:
        logger.addHandler(catcher)
    stop = asyncio.Event()

    async def workload():   # searches on both shard leaders and inserts, until the charts show them
        rows = rows_for(list(range(2)), DIM)
        next_id = 10_000
        while not stop.is_set():
            async with asyncio.timeout(30):
                await env.cluster.proxy.search(NAME, rows["vec"], limit=1)
                await env.cluster.proxy.insert(NAME, rows_for(list(range(next_id, next_id + 20)), DIM, seed=next_id))
            next_id += 20
            await asyncio.sleep(0.05)

    # every chart source of the page by name: {name: {column: [values]}} (null for a missing one)
    names = [f"vecgrid-node-{n}" for n in env.node_ids] + ["vecgrid-inserted", "vecgrid-tasks", "vecgrid-nodes",
                                                           "vecgrid-partitions"]
    read_sources = ("(() => { const doc = (window.Bokeh && Bokeh.documents[0]); if (!doc) return null; const out = {};"
                    f" for (const name of {json.dumps(names)}) {{ const m = doc.get_model_by_name(name);"
                    " if (!m) { out[name] = null; continue; }"
                    " const entries = m.data instanceof Map ? [...m.data.entries()] : Object.entries(m.data);"
                    " out[name] = Object.fromEntries(entries.map(([k, v]) => [k, Array.from(v)])); }"
                    " return out; })()")
    loaded = {"InGPU", "PartialInGPU", "InMemory"}
    try:
        async with chromium_page(tmp_path / "profile") as devtools:
            await devtools.call("Page.navigate", url=dashboard + "/individual-vecgrid")
            stream = asyncio.create_task(workload())
            try:
                async def charted():
                    src = await devtools.evaluate(read_sources)
                    if not src or any(src[name] is None for name in names) or stream.done():
                        return None
                    nodes, strip = src["vecgrid-nodes"], src["vecgrid-partitions"]
                    ok = (any(max(src[f"vecgrid-node-{n}"]["rate"], default=0) > 0 for n in env.node_ids)
                          # some seconds of history, so that the screenshot shows lines, not dots
                          and all(len(src[f"vecgrid-node-{n}"]["rate"]) >= 8 for n in env.node_ids)
                          and any(v is not None and v > 0 for n in env.node_ids
                                  for v in src[f"vecgrid-node-{n}"]["p50"])
                          and max(src["vecgrid-inserted"]["rows"], default=0) > 0
                          and src["vecgrid-tasks"]["time"]
                          and nodes["node"] == [f"node {n}" for n in env.node_ids]
                          and all(v > 0 for v in nodes["memory_used"] + nodes["memory_budget"])
                          and sum(nodes["rows"]) >= 300 and sum(nodes["segments"]) >= 1
                          and strip["cell"] == [f"{NAME}/_default"] and strip["state"][0] in loaded)
                    return src if ok else None

                src = await poll_until(charted, 90, 0.5, "the charts with searches, inserts, memory and the strip")
            finally:
                stop.set()
                await stream   # its failure fails the test
            nodes = src["vecgrid-nodes"]
            assert all(b >= u for b, u in zip(nodes["gpu_budget"], nodes["gpu_used"]))
            assert nodes["gpu_note"] == ["" if b > 0 else "no GPU" for b in nodes["gpu_budget"]]
            text = await devtools.text()
            # the tables below the charts, with their labels
            assert all(a in text for a in [n.address for n in env.cluster.coord.nodes.all()])
            assert re.search(r"_default: (InGPU|PartialInGPU|InMemory) 100 %", text)
            for label in ("Query nodes", "node id", "worker", "node state", "coordinator view",
                          "Segments per node", "partition state: InGPU"):   # (chart titles are drawn, not text)
                assert label in text, label
            png = await devtools.screenshot()
            assert is_png_of_a_page(png)
            keep_screenshot(png, "dashboard.png")   # the README's picture
            target = (await devtools.call("Target.getTargetInfo"))["targetInfo"]["targetId"]
            await devtools.call("Target.createTarget", url="about:blank")   # the browser outlives the tab
            await devtools.call("Target.closeTarget", targetId=target)
            await poll_until(lambda: not bokeh._clients, 30, 0.1, "the closed tab's connection gone")
    finally:
        for logger in loggers:
            logger.removeHandler(catcher)
    assert [f"{r.name}: {r.getMessage()}" for r in errors if r.name.startswith(("bokeh", "tornado"))
            or (r.exc_info and isinstance(r.exc_info[1], AssertionError))] == []


# --- /health ------------------------------------------------------------------------------------------

async def test_health_names_every_component_and_fails_with_the_one_that_cannot_serve(env):
    from tornado.httpclient import HTTPClientError

    url = env.cluster.addresses.http + "/health"
    health = json.loads((await AsyncHTTPClient().fetch(url)).body)
    assert health["status"] == "ok"
    by_name = {c["name"]: c for c in health["components"]}
    assert set(by_name) == {"coordinator", "scheduler", "metadata-store", "wal",
                            *(f"querynode-{n}" for n in env.node_ids)}
    assert by_name["wal"]["root"] == env.cluster.coord.appenders.wal.root
    # a WAL root that cannot be written: the whole answer is 503, naming the WAL
    root = env.cluster.coord.appenders.wal.root
    moved = root + ".away"
    os.rename(root, moved)
    try:
        with pytest.raises(HTTPClientError) as err:
            await AsyncHTTPClient().fetch(url)
        assert err.value.code == 503
        health = json.loads(err.value.response.body)
        assert health["status"] == "unavailable"
        bad = [c for c in health["components"] if not c["healthy"]]
        assert [c["name"] for c in bad] == ["wal"] and "missing" in bad[0]["reason"]
    finally:
        os.rename(moved, root)
    assert json.loads((await AsyncHTTPClient().fetch(url)).body)["status"] == "ok"


# --- the Grafana dashboard ------------------------------------------------------------------------------

async def test_grafana_dashboard_queries_only_metrics_the_cluster_exports(env):
    """Every series docker/grafana/vecgrid-dashboard.json asks Prometheus for is exported by the live
    coordinator or scheduler, under the names the panels use."""
    dashboard = json.loads((REPO / "docker" / "grafana" / "vecgrid-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in dashboard["templating"]["list"] if isinstance(v.get("query"), dict)]
    wanted = {m for e in exprs for m in re.findall(r"\b((?:vecgrid|dask)_[a-z0-9_]+)", e)}
    scheduler = env.cluster.addresses.dashboard.rsplit("/status", 1)[0]
    # one REST call of its own: the request histogram has series only once a request was served, and
    # this test must not count on the module's other tests running first
    await AsyncHTTPClient().fetch(env.cluster.addresses.http + "/collections")
    exported: set[str] = set()
    for url in (env.cluster.addresses.http + "/metrics", scheduler + "/metrics"):
        for family in (await scrape(url)).values():
            exported.add(family.name)   # a family without samples now (no task in flight) still counts
            exported.update(s.name for s in family.samples)
    assert len(wanted) >= 15 and sorted(wanted - exported) == []
    assert all(p["datasource"]["uid"] == "${datasource}" for p in dashboard["panels"] if p["type"] != "row")


# --- a stock `dask scheduler --preload vecgrid.dashboard` --------------------------------------------------

async def test_stock_dask_scheduler_serves_the_page_with_the_preload(tmp_path):
    """What the compose file's scheduler runs: the page is listed and its route answers, before any
    coordinator publishes (the page says so), and vecgrid's collector sits beside Dask's own metrics."""
    import sys

    from tornado.httpclient import HTTPClientError

    # port 0 for both, read back from the scheduler's log: ports picked beforehand by the test can be
    # taken by another test's server meanwhile (make test runs in parallel)
    log_path = tmp_path / "scheduler.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "dask"), "scheduler", "--host", "127.0.0.1",
                                 "--port", "0", "--dashboard-address", "127.0.0.1:0",
                                 "--preload", "vecgrid.dashboard"],
                                stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)

    async def dashboard_url():
        found = re.search(r"dashboard at:\s+(http://127\.0\.0\.1:\d+)", log_path.read_text())
        return found and found.group(1)

    try:
        base = await poll_until(dashboard_url, 60, 0.1, "the stock scheduler's dashboard address in its log")

        async def up():
            try:
                return json.loads((await AsyncHTTPClient().fetch(base + "/individual-plots.json")).body)
            except (OSError, HTTPClientError):  # not listening yet
                return None

        listed = await poll_until(up, 60, 0.3, "the stock scheduler's dashboard")
        assert listed.get("Individual Vecgrid") == "/individual-vecgrid"
        state = json.loads((await AsyncHTTPClient().fetch(base + "/vecgrid/api/state")).body)
        assert state["cluster"] is None and state["nodes"] == []
        page = (await AsyncHTTPClient().fetch(base + "/individual-vecgrid")).body.decode()
        assert "bokeh" in page.lower()
        families = await scrape(base + "/metrics")
        assert "dask_scheduler_workers" in families and "vecgrid_querynode_segments" in families
    finally:
        proc.terminate()
        proc.wait(30)
