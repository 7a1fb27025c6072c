"""kill -9 of the coordinator in the middle of a compaction, in cluster mode (stock ``dask scheduler``,
two ``vecgrid worker`` processes, the coordinator as its own process: :mod:`tests.compaction_coord`).

The coordinator is killed at ``compaction-after-task`` (the task's files written, nothing published) and at
``compaction-after-publish`` (the catalog swapped, QueryCoord not told), then started again over the same
data directory.  Each time: nothing half-published is in the catalog (the rows it makes visible are
exactly the live ones, each once), reads through the proxy count every live pk exactly once and no
deleted one, the new coordinator's targets follow what the catalog says, and it compacts what is left."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import signal
import subprocess
import sys
import threading

import pytest

from vecgrid.cluster.proxy.proxy import Proxy
from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.common.faults import CRASH_AT_ENV
from vecgrid.proto import common_pb2, data_coord_pb2, query_coord_pb2
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import Wal
from tests.compaction_support import delete_and_flush, visible_rows
from tests.conftest import REPO, poll_until
from tests.querycoord_support import Coord
from tests.querynode_support import RemoteNode, import_collection

pytestmark = [pytest.mark.slow, pytest.mark.fault]
BIN = os.path.dirname(sys.executable)
FLUSHED, DROPPED = common_pb2.Flushed, common_pb2.Dropped


class Process:
    """A child process whose output lines are drained by a thread (a full pipe never blocks it)."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None, stdin: bool = False) -> None:
        self.args = args
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                                     stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, pattern: str, timeout: float) -> re.Match:
        """The first output line matching ``pattern`` (blocking: call it in a thread)."""
        import time
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = ""
            if line is None or line == "":
                tail = "".join(self.seen[-40:])
                pytest.fail(f"{self.args[:3]}: no line matching {pattern!r} "
                            f"({'exited ' + str(self.proc.poll()) if line is None else 'timed out'}):\n{tail}")
            self.seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


class Checks:
    """What the test reads: the catalog (its own store connection) and reads through a proxy."""

    def __init__(self, ds, live: list[int], deleted: set[int]) -> None:
        self.ds, self.live, self.deleted = ds, live, deleted
        data = DataDir(ds.data_dir)
        self.store = data.open_store()
        self.catalog = data.open_catalog(self.store, tso_key="tso/compaction-crash-test")

    def close(self) -> None:
        self.store.close()

    def flushed(self) -> dict[int, data_coord_pb2.SegmentInfo]:
        return {s.ID: s for s in self.catalog.list_segments(self.ds.collection_id, states=[FLUSHED])}

    def assert_catalog_consistent(self) -> None:
        """The catalog makes exactly the live rows visible, each once: nothing half-published."""
        rows = visible_rows(self.catalog, self.ds.collection_id)
        assert sorted(rows) == self.live
        assert all(len(found) == 1 for found in rows.values())

    async def assert_reads(self, address: str) -> None:
        async with Proxy(address) as proxy:
            count = await proxy.count(self.ds.name, consistency="Strong")
            pks = sorted(row["pk"] for row in await proxy.query(self.ds.name, consistency="Strong"))
        assert not self.deleted & set(pks), sorted(self.deleted & set(pks))[:5]
        assert pks == self.live, f"{len(pks)} pks read, {len(set(pks))} distinct, {len(self.live)} live"
        assert count == len(self.live)

    async def handed_off(self, coord: Coord) -> bool:
        """Every shard leader's view holds exactly the catalog's segments of its channel."""
        flushed = self.flushed()
        for shard in await coord.leaders(self.ds.collection_id):
            for node_id, addr in zip(shard.node_ids, shard.node_addrs):
                dist = await RemoteNode(node_id, addr).call(
                    "GetDataDistribution", query_coord_pb2.GetDataDistributionRequest()
                )
                views = [v for v in dist.leader_views if v.channel == shard.channel_name]
                wanted = {sid for sid, s in flushed.items() if s.insert_channel == shard.channel_name}
                if len(views) != 1 or set(views[0].segment_dist) != wanted:
                    return False
        return True


async def test_kill_9_of_the_coordinator_in_the_middle_of_a_compaction(tmp_path):
    ds = import_collection(tmp_path, "crash", metric="L2", index="FLAT", n=800, shards=2, segment_rows=100, seed=9)
    cid = ds.collection_id
    # deletes logged and flushed into L0 segments before any coordinator runs (with the coordinator's oracle)
    data = DataDir(ds.data_dir)
    store = data.open_store()
    catalog = data.open_catalog(store)
    appenders = ChannelAppenders(Wal(data.wal_root), catalog.allocate_timestamp, catalog.allocate_segment_id)
    gone: set[int] = set()
    try:
        for ch in ds.channels:   # every 9th row of each segment
            keys = [int(ds.pks[r]) for s in ds.segments_of(ch) for r in ds.rows_of_segment(s)[::9]]
            delete_and_flush(catalog, appenders, data.segment_root, cid, {ch: keys})
            gone |= set(keys)
    finally:
        appenders.close()
        store.close()
    checks = Checks(ds, sorted(set(ds.pks.tolist()) - gone), gone)
    checks.assert_catalog_consistent()

    # port 0 where a server starts first, read back from its log: one picked beforehand could be taken
    # meanwhile; a restarted coordinator takes the port its first start got (the nodes stream from it)
    scheduler_address, coord_port = "", 0
    procs: list[Process] = []

    async def start(cmd: list[str], pattern: str, env: dict[str, str] | None = None, stdin: bool = False):
        proc = Process(cmd, env, stdin)
        procs.append(proc)
        return proc, await asyncio.to_thread(proc.wait_for, pattern, 90)

    async def start_coord(crash_at: str | None = None) -> tuple[Process, Coord, str]:
        nonlocal coord_port
        proc, match = await start([sys.executable, "-m", "tests.compaction_coord", "--scheduler", scheduler_address,
                                   "--data-dir", ds.data_dir, "--port", str(coord_port)], r"READY (\S+)",
                                  {CRASH_AT_ENV: crash_at} if crash_at else None, stdin=True)
        address = match.group(1)
        coord_port = int(address.rsplit(":", 1)[1])
        coord = Coord(address)
        await poll_until(lambda: _nodes(coord, 2), 60, 0.2, "both workers registered")
        return proc, coord, address

    async def killed(proc: Process) -> None:
        code = await asyncio.to_thread(proc.proc.wait, 120)
        assert code == -signal.SIGKILL, "".join(proc.seen[-30:])

    try:
        _, match = await start([os.path.join(BIN, "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                "--dashboard-address", "127.0.0.1:0"], r"Scheduler at:\s+(tcp://127\.0\.0\.1:\d+)")
        scheduler_address = match.group(1)
        for name in ("w1", "w2"):
            await start([os.path.join(BIN, "vecgrid"), "worker", "--scheduler", scheduler_address, "--name", name,
                         "--node-port", "0"], rf"vecgrid worker {name} at")

        # 1. killed once the task returned, before the publish: the catalog is as it was
        proc, coord, address = await start_coord("compaction-after-task")
        await coord.load(cid)
        await checks.assert_reads(address)
        before = checks.flushed()
        proc.send(f"compact {cid}")
        await killed(proc)
        assert checks.flushed().keys() == before.keys()
        checks.assert_catalog_consistent()
        proc, coord, address = await start_coord()
        await coord.wait_loaded(cid, 60)
        await checks.assert_reads(address)
        proc.stop()

        # 2. killed after the publish, before QueryCoord was told: the restarted one's targets follow
        proc, coord, address = await start_coord("compaction-after-publish")
        await coord.wait_loaded(cid, 60)
        proc.send(f"compact {cid}")
        await killed(proc)
        after = checks.flushed()
        new = [s for sid, s in after.items() if sid not in before]
        assert new, "nothing was published before the crash point"
        replaced = {src for s in new for src in s.compactionFrom}
        assert set(before) - set(after) == replaced & set(before)   # nothing dropped without its successor
        assert all(checks.catalog.get_segment(src).state == DROPPED for src in replaced)
        checks.assert_catalog_consistent()
        proc, coord, address = await start_coord()
        await coord.wait_loaded(cid, 60)

        async def read_until_handed_off() -> bool:
            await checks.assert_reads(address)       # every round, all through the hand-off
            return await checks.handed_off(coord)
        await poll_until(read_until_handed_off, 90, 0.2, "the restarted coordinator's targets following the catalog")

        # 3. the restarted coordinator compacts what is left
        proc.send(f"compact {cid}")
        await asyncio.to_thread(proc.wait_for, r"COMPACTED \d+", 120)
        await poll_until(read_until_handed_off, 90, 0.2, "the last compaction handed off")
        final = checks.flushed().values()
        assert sorted(s.insert_channel for s in final) == sorted(ds.channels)
        assert all(s.level != data_coord_pb2.L0 and not len(s.deltalogs) for s in final)
        checks.assert_catalog_consistent()
    finally:
        for p in reversed(procs):
            p.stop()
        checks.close()


async def _nodes(coord: Coord, n: int) -> bool:
    reply = await coord.ok("ListQueryNode", query_coord_pb2.ListQueryNodeRequest())
    return len(reply.nodeInfos) >= n
