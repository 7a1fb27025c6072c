"""kill -9 of the coordinator on the write and flush path, in cluster mode (stock Dask scheduler, two
`vecgrid worker`s whose shard leaders outlive the coordinator): after the WAL fsync but before the
reply, after the Parquet write but before the publish, after the publish but before the hand-off and
the trim of the log.  A coordinator restarted over the same data dir serves every acknowledged insert
exactly once (and the durable, unacknowledged one, once), never an acknowledged delete, and nothing
half-published — at once and through the flush and hand-off of everything left."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.cluster.proxy.proxy import Proxy
from vecgrid.common.faults import CRASH_AT_ENV
from vecgrid.proto import common_pb2, data_coord_pb2
from vecgrid.storage import segment_files
from tests.conftest import poll_until
from tests.datacoord_support import reply_point
from tests.querynode_support import DIM, catalog, import_collection

pytestmark = [pytest.mark.slow, pytest.mark.fault]
BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
DRIVER = [sys.executable, "-c", "from tests.datacoord_support import crash_driver; crash_driver()"]
NEW = 10_000_000


class Processes:
    """The processes a test started, stopped (by their own ids) when it ends."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def spawn(self, args: list[str], env=ENV) -> subprocess.Popen:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=env, cwd=REPO)
        self.procs.append(proc)
        return proc

    @staticmethod
    async def line(proc: subprocess.Popen, prefix: str, timeout: float = 120, contains: str = "") -> str:
        """The rest of the next line of ``proc`` that starts with ``prefix`` (and holds ``contains``)."""
        seen = []
        async with asyncio.timeout(timeout):
            while line := await asyncio.to_thread(proc.stdout.readline):
                seen.append(line)
                if line.startswith(prefix) and contains in line:
                    return line[len(prefix):].strip()
        pytest.fail(f"no line starting {prefix!r}:\n" + "".join(seen[-60:]))

    @staticmethod
    def drain(proc: subprocess.Popen) -> None:
        """Keep reading a process nobody reads any more, so that it never blocks on a full pipe."""
        threading.Thread(target=lambda: [None for _ in iter(proc.stdout.readline, "")], daemon=True).start()

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


class Expected:
    """What the restarted coordinator must serve, from the driver's lines."""

    def __init__(self, base: np.ndarray) -> None:
        self.rows = set(base.tolist())
        self.deleted: set[int] = set()

    def read(self, output: str) -> None:
        pending = None
        for line in output.splitlines():
            word, _, rest = line.partition(" ")
            if word == "PENDING":
                pending = rest
            elif word == "ACK":
                op, keys = rest.split(" ", 1)
                (self.rows if op == "insert" else self.deleted).update(json.loads(keys))
                pending = None
        if pending is not None:  # killed after the write was durable: it is in the log all the same
            op, keys = pending.split(" ", 1)
            (self.rows if op == "insert" else self.deleted).update(json.loads(keys))

    @property
    def live(self) -> set[int]:
        return self.rows - self.deleted


async def leaders_ready(proxy: Proxy, cid: int) -> bool:
    try:
        await proxy.shard_leaders(cid)
    except errors.ChannelNotAvailable:
        proxy.invalidate(cid)
        return False
    return True


async def assert_served_once(proxy: Proxy, name: str, expected: Expected, rounds: int = 3) -> None:
    live = expected.live
    for _ in range(rounds):
        keys = [r["pk"] for r in await proxy.query(name)]
        assert len(keys) == len(set(keys)), f"{len(keys) - len(set(keys))} rows served twice"
        assert set(keys) == live, f"missing {sorted(live - set(keys))[:5]}, unexpected {sorted(set(keys) - live)[:5]}"
        assert await proxy.count(name) == len(live)
    for pk in sorted(k for k in live if k >= NEW)[::40]:
        vector = np.random.default_rng(pk).standard_normal(DIM).astype(np.float32)
        hits = (await proxy.search(name, vector, limit=3))[0]
        assert hits[0]["id"] == pk and len({h["id"] for h in hits}) == len(hits)


def assert_nothing_published_twice(data_dir: str, cid: int) -> None:
    store, cat = catalog(data_dir)
    try:
        keys: list[int] = []
        for seg in cat.list_segments(cid, states=[common_pb2.Flushed]):
            record = cat.segment_files_record(seg.ID)   # every published file verifies (size, checksum)
            if seg.level == data_coord_pb2.L0:
                segment_files.read_deltalog(record)
            else:
                keys += segment_files.read_segment(record).column("pk").to_pylist()
        assert len(keys) == len(set(keys)), "a row is in two published segments"
    finally:
        store.close()


async def test_kill_9_at_the_write_and_flush_crash_points(tmp_path):
    ds = import_collection(tmp_path, "crash", metric="L2", index="FLAT", n=300, shards=2, segment_rows=150, seed=11)
    cid = ds.collection_id
    base = [int(k) for k in ds.pks]
    # port 0 where a server starts first, read back from its output (one picked beforehand could be taken
    # meanwhile); each coordinator after the first takes the port the first got, where the nodes stream from
    scheduler, coord_port = "", 0
    procs = Processes()
    expected = Expected(ds.pks)

    def keys(first: int, n: int) -> list[int]:
        return list(range(NEW + first, NEW + first + n))

    async def crashing(ops: list, crash_at: str) -> str:
        nonlocal coord_port
        proc = procs.spawn(DRIVER + [scheduler, ds.data_dir, str(coord_port), str(cid), str(DIM), json.dumps(ops)],
                           env={**ENV, CRASH_AT_ENV: crash_at})
        output, _ = await asyncio.to_thread(proc.communicate, None, 240)
        assert proc.returncode == -signal.SIGKILL, f"not killed at {crash_at}:\n{output[-4000:]}"
        coord_port = int(re.search(r"^READY \S+:(\d+)$", output, re.M).group(1))
        expected.read(output)
        return output

    try:
        dask = procs.spawn([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
                            "--dashboard-address", "127.0.0.1:0"])
        scheduler = (await Processes.line(dask, "", 60, contains="Scheduler at:")).rsplit(None, 1)[-1]
        Processes.drain(dask)
        for name in ("w1", "w2"):
            worker = procs.spawn([str(BIN / "vecgrid"), "worker", "--scheduler", scheduler, "--name", name,
                                  "--node-port", "0"])
            await Processes.line(worker, f"vecgrid worker {name} at", 60)
            Processes.drain(worker)

        # 1. killed after the WAL fsync of the last insert, before its reply
        out = await crashing([["insert", keys(0, 50)], ["insert", keys(50, 50)], ["delete", [base[0], NEW + 5]],
                              ["insert", keys(100, 50)]], reply_point(3))
        assert out.count("ACK ") == 3 and "PENDING insert" in out
        # 2. killed after the flush wrote its Parquet files, before the publish
        out = await crashing([["insert", keys(150, 50)], ["delete", [NEW + 10, base[1], NEW + 120]], ["flush"]],
                             "flush.before_publish")
        assert "FLUSHED" not in out
        # 3. killed after the publish, before the hand-off and the trim of the log
        out = await crashing([["insert", keys(200, 50)], ["delete", [NEW + 20, NEW + 160, base[2]]], ["flush"]],
                             "flush.after_publish")
        assert "FLUSHED" not in out

        # 4. a coordinator that stays: served exactly once at once, and after flushing everything left
        proc = procs.spawn(DRIVER + [scheduler, ds.data_dir, str(coord_port), str(cid), str(DIM), '[["serve"]]'])
        address = await Processes.line(proc, "READY ", 180)
        async with Proxy(address) as proxy:
            # loaded is not yet led: each channel's leader reports serviceable a moment later (seen once
            # as "no available shard leader" in a full run on a busy machine)
            await poll_until(lambda: leaders_ready(proxy, cid), 60, interval=0.2, what="every channel led")
            await assert_served_once(proxy, ds.name, expected)
            proc.stdin.write("flush\n")
            proc.stdin.flush()
            await Processes.line(proc, "FLUSHED ", 120)
            await assert_served_once(proxy, ds.name, expected, rounds=1)
            proc.stdin.write("handoff\n")
            proc.stdin.flush()
            await Processes.line(proc, "HANDED_OFF", 120)
            await assert_served_once(proxy, ds.name, expected)
        assert_nothing_published_twice(ds.data_dir, cid)
        proc.stdin.write("quit\n")
        proc.stdin.flush()
        assert await asyncio.to_thread(proc.wait, 60) == 0
    finally:
        procs.stop_all()
