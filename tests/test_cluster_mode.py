"""Cluster mode as documented: stock `dask scheduler`, `vecgrid worker`, `vecgrid coord`, separate processes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import psutil
import pytest

from vecgrid.proto import milvus_pb2, query_coord_pb2, query_coord_pb2_grpc

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def _wait_for_line(proc, pattern: str, timeout: float) -> re.Match:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return match
    pytest.fail(f"no line matching {pattern!r}:\n" + "".join(seen))


def _spawn(procs: list, args: list[str]) -> subprocess.Popen:
    """Start a process whose output the test reads; ``procs`` collects it for the teardown."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
    procs.append(proc)
    return proc


def _start_scheduler(procs: list, port: int = 0) -> tuple[subprocess.Popen, str]:
    """A stock ``dask scheduler`` on loopback and its address, read from its log: port 0 lets it pick a
    free one itself (one picked beforehand could be taken by another test meanwhile); a restart passes
    the port its first start got."""
    proc = _spawn(procs, [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                          "--dashboard-address", "127.0.0.1:0"])
    return proc, _wait_for_line(proc, r"Scheduler at:\s+(tcp://127\.0\.0\.1:\d+)", 60).group(1)


def _drain(proc) -> None:
    """Read what a process prints from now on (its pipe must not fill up and block it), and keep none of it."""
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()


def _listening_addresses(pid: int) -> list[tuple[str, int]]:
    """``(ip, port)`` of every listening TCP socket of a process and its children; an IPv4 address that
    grpc listens on through an IPv6 socket (``::ffff:127.0.0.1``) as IPv4."""
    parent = psutil.Process(pid)
    return sorted((c.laddr.ip.removeprefix("::ffff:"), c.laddr.port)
                  for p in [parent, *parent.children(recursive=True)]
                  for c in p.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN)


async def _segment_versions(coord) -> set[tuple[int, int, int]]:
    """``(node id, segment id, version)`` of every sealed segment, as the nodes themselves report them."""
    from tests.querynode_support import RemoteNode

    out = set()
    for info in (await coord.ok("ListQueryNode", query_coord_pb2.ListQueryNodeRequest())).nodeInfos:
        dist = await RemoteNode(info.ID, info.address).call(
            "GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        out |= {(info.ID, s.ID, s.version) for s in dist.segments}
    return out


def _stop(proc) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def test_stock_scheduler_with_vecgrid_worker_and_coord(tmp_path):
    procs = []

    def spawn(args):
        return _spawn(procs, args)

    try:
        _, scheduler_addr = _start_scheduler(procs)
        worker = spawn([str(BIN / "vecgrid"), "worker", "--scheduler", scheduler_addr, "--host", "127.0.0.1",
                        "--name", "gpu-box-1", "--node-port", "0", "--resources", "GPU=1"])
        _wait_for_line(worker, r"vecgrid worker gpu-box-1 at tcp://127\.0\.0\.1:", 60)
        coord = spawn([str(BIN / "vecgrid"), "coord", "--scheduler", scheduler_addr, "--data-dir",
                       str(tmp_path), "--coord-port", "0", "--http-port", "0", "--milvus-port", "0"])
        grpc_addr = _wait_for_line(coord, r"QueryCoord gRPC : (\S+)", 60).group(1)

        with grpc.insecure_channel(grpc_addr) as channel:
            stub = query_coord_pb2_grpc.QueryCoordStub(channel)
            deadline = time.monotonic() + 30
            while True:
                nodes = stub.ListQueryNode(query_coord_pb2.ListQueryNodeRequest(), timeout=10).nodeInfos
                if nodes or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert len(nodes) == 1 and nodes[0].state == "Normal"
            with grpc.insecure_channel(nodes[0].address) as node_channel:
                node = query_coord_pb2_grpc.QueryNodeStub(node_channel)
                states = node.GetComponentStates(milvus_pb2.GetComponentStatesRequest(), timeout=10)
                assert states.state.nodeID == nodes[0].ID and states.state.state_code == 1
        # --host 127.0.0.1: nothing of the worker listens wider (nanny, worker, its HTTP server, QueryNode gRPC)
        listening = _listening_addresses(worker.pid)
        assert nodes[0].address in {f"{ip}:{port}" for ip, port in listening}
        assert {ip for ip, _ in listening} == {"127.0.0.1"}, listening
    finally:
        codes = [_stop(p) for p in reversed(procs)]
    assert codes[0] == 0  # the coordinator exits cleanly on SIGINT


@pytest.mark.fault
async def test_kill_9_of_the_coordinator_keeps_loaded_collections_served(tmp_path):
    """Cluster mode, coordinator SIGKILLed after a load: a new one over the same data dir serves the
    collection at once, and the nodes keep their segments (same versions: nothing loaded again)."""
    from tests.querycoord_support import Coord, assert_search_matches
    from tests.querynode_support import import_collection

    ds = import_collection(tmp_path, "k9", metric="L2", index="FLAT", n=800, shards=2, segment_rows=200, seed=3)
    procs = []
    scheduler_addr = ""

    def spawn(args):
        return _spawn(procs, args)

    def start_coord(coord_port: int):
        proc = spawn([str(BIN / "vecgrid"), "coord", "--scheduler", scheduler_addr, "--data-dir", ds.data_dir,
                      "--coord-port", str(coord_port), "--http-port", "0", "--milvus-port", "0"])
        return proc, _wait_for_line(proc, r"QueryCoord gRPC : (\S+)", 60).group(1)

    try:
        _, scheduler_addr = _start_scheduler(procs)
        for name in ("w1", "w2"):
            _wait_for_line(spawn([str(BIN / "vecgrid"), "worker", "--scheduler", scheduler_addr, "--name", name,
                                  "--node-port", "0"]), rf"vecgrid worker {name} at", 60)
        # a free port the coordinator picks itself: one picked here could be taken while the workers start
        first, address = start_coord(0)
        coord = Coord(address)
        deadline = time.monotonic() + 30
        while len((await coord.ok("ListQueryNode", query_coord_pb2.ListQueryNodeRequest())).nodeInfos) < 2:
            assert time.monotonic() < deadline, "workers did not register"
            time.sleep(0.2)
        await coord.load(ds.collection_id)
        await assert_search_matches(coord, ds)
        before = await _segment_versions(coord)
        assert len({sid for _, sid, _ in before}) == len(ds.segment_ids)

        first.kill()                     # SIGKILL: no shutdown code runs
        first.wait()
        second, address = start_coord(int(address.rsplit(":", 1)[1]))   # restarted where the nodes stream from
        coord = Coord(address)
        await coord.wait_loaded(ds.collection_id, 30)
        await assert_search_matches(coord, ds)
        assert await _segment_versions(coord) == before
    finally:
        for p in reversed(procs):
            _stop(p)


@pytest.mark.fault
async def test_the_query_nodes_outlive_a_killed_scheduler_and_rejoin_its_restart(tmp_path):
    """kill -9 of the scheduler: the workers stay up and their nodes keep serving the loaded collection;
    the scheduler started again on its address gets them back (the same processes, the same segment
    versions), and the coordinator registers the node plugin with it again: a worker that joins later
    becomes a query node."""
    from distributed import Client

    from tests.querycoord_support import Coord, assert_search_matches
    from tests.querynode_support import import_collection
    from vecgrid.cluster.querynode.session import PLUGIN_NAME

    ds = import_collection(tmp_path, "sk", metric="L2", index="FLAT", n=600, shards=2, segment_rows=200, seed=4)
    procs = []
    scheduler_addr = ""

    def start_scheduler():
        nonlocal scheduler_addr
        # the restart on the address the workers know: the port the first start picked
        proc, scheduler_addr = _start_scheduler(procs, int(scheduler_addr.rsplit(":", 1)[1]) if scheduler_addr else 0)
        _drain(proc)
        return proc

    def start_worker(name):
        proc = _spawn(procs, [str(BIN / "vecgrid"), "worker", "--scheduler", scheduler_addr, "--name", name,
                              "--node-port", "0"])
        _wait_for_line(proc, rf"vecgrid worker {name} at", 60)
        _drain(proc)
        return proc

    async def node_count(coord):
        return len((await coord.ok("ListQueryNode", query_coord_pb2.ListQueryNodeRequest())).nodeInfos)

    async def wait_for(what, check, timeout=60.0):
        deadline = time.monotonic() + timeout
        while not await check():
            assert time.monotonic() < deadline, what
            time.sleep(0.5)

    async def plugins_on_scheduler():
        async with Client(scheduler_addr, asynchronous=True, timeout=10) as client:
            on_workers = await client.run(lambda dask_worker: PLUGIN_NAME in dask_worker.plugins)
            on_scheduler = await client.run_on_scheduler(
                lambda dask_scheduler: PLUGIN_NAME in dask_scheduler.worker_plugins)
        return on_workers, on_scheduler

    try:
        scheduler = start_scheduler()
        workers = [start_worker(name) for name in ("w1", "w2")]
        coord_proc = _spawn(procs, [str(BIN / "vecgrid"), "coord", "--scheduler", scheduler_addr, "--data-dir",
                                    ds.data_dir, "--coord-port", "0", "--http-port", "0", "--milvus-port", "0"])
        coord = Coord(_wait_for_line(coord_proc, r"QueryCoord gRPC : (\S+)", 60).group(1))
        _drain(coord_proc)

        async def two_nodes():
            return await node_count(coord) == 2
        await wait_for("both workers registered", two_nodes)
        # no balance move may land inside the window this test compares (a loaded CI machine saw one)
        await coord.ok("SuspendBalance", query_coord_pb2.SuspendBalanceRequest())
        await coord.load(ds.collection_id)
        before = await _segment_versions(coord)
        worker_pids = [sorted(p.pid for p in psutil.Process(w.pid).children(recursive=True)) for w in workers]

        scheduler.kill()                 # SIGKILL: the workers and the coordinator lose it at once
        scheduler.wait()
        time.sleep(3)                    # a stock worker has closed by now
        assert all(w.poll() is None for w in workers)
        await assert_search_matches(coord, ds)
        assert await node_count(coord) == 2

        start_scheduler()

        async def rejoined():
            try:
                on_workers, on_scheduler = await plugins_on_scheduler()
            except (OSError, TimeoutError):
                return False
            return on_scheduler and len(on_workers) == 2 and all(on_workers.values())
        await wait_for("the workers back on the new scheduler, and the plugin registered with it", rejoined)
        assert [sorted(p.pid for p in psutil.Process(w.pid).children(recursive=True)) for w in workers] == worker_pids
        await assert_search_matches(coord, ds)
        assert await _segment_versions(coord) == before   # nothing was loaded again

        start_worker("w3")

        async def three_nodes():
            return await node_count(coord) == 3
        await wait_for("a worker that joined the new scheduler became a query node", three_nodes)
    finally:
        for p in reversed(procs):
            _stop(p)


async def test_writes_through_a_cluster_mode_coordinator(tmp_path):
    """The write path in cluster mode: a proxy in this process writes over the coordinator's WriteService;
    Strong reads see each acknowledged write at once, a flush seals it, and the counts stay exact."""
    import numpy as np
    import pyarrow as pa

    from tests.querycoord_support import Coord
    from tests.querynode_support import import_collection, random_table
    from vecgrid.cluster.proxy.proxy import Proxy

    ds = import_collection(tmp_path, "w9", metric="L2", index="FLAT", n=400, shards=2, segment_rows=200, seed=5)
    procs = []
    try:
        _, scheduler_addr = _start_scheduler(procs)
        for name in ("w1", "w2"):
            _wait_for_line(_spawn(procs, [str(BIN / "vecgrid"), "worker", "--scheduler", scheduler_addr,
                                          "--name", name, "--node-port", "0"]), rf"vecgrid worker {name} at", 60)
        coord_proc = _spawn(procs, [str(BIN / "vecgrid"), "coord", "--scheduler", scheduler_addr, "--data-dir",
                                    ds.data_dir, "--coord-port", "0", "--http-port", "0", "--milvus-port", "0"])
        address = _wait_for_line(coord_proc, r"QueryCoord gRPC : (\S+)", 60).group(1)
        coord = Coord(address)
        deadline = time.monotonic() + 30
        while len((await coord.ok("ListQueryNode", query_coord_pb2.ListQueryNodeRequest())).nodeInfos) < 2:
            assert time.monotonic() < deadline, "workers did not register"
            time.sleep(0.2)
        await coord.load(ds.collection_id)

        table, _, vectors, _ = random_table(100, 9, "pk", False)
        new = np.arange(10_000, 10_100, dtype=np.int64)
        table = table.set_column(0, "pk", pa.array(new))
        async with Proxy(address) as proxy:
            done = await proxy.insert("w9", table)
            assert done.insert_cnt == 100 and sorted(done.ids) == new.tolist()
            assert await proxy.count("w9") == 500                      # Strong: the write is seen at once
            hits = await proxy.search("w9", vectors[:3], limit=1)
            assert [h[0]["id"] for h in hits] == new[:3].tolist()
            assert (await proxy.delete("w9", ids=new[:10].tolist())).delete_cnt == 10
            assert await proxy.count("w9") == 490
            assert await proxy.flush("w9")
            assert await proxy.count("w9") == 490
            assert {r["pk"] for r in await proxy.query("w9", filter={"pk": {"$gte": 10_000}})} == set(new[10:].tolist())
    finally:
        for p in reversed(procs):
            _stop(p)
