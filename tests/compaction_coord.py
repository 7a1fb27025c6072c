"""A coordinator process with DataCoord's compaction part, for kill -9 tests (run as ``python -m
tests.compaction_coord``): what ``vecgrid coord`` runs (:class:`vecgrid.deploy.Coordinator` over a running
Dask scheduler) plus :class:`vecgrid.cluster.datacoord.compaction.Compaction` started beside it, the way the
DataCoord component will start it.

It prints ``READY <gRPC address>`` once serving, then takes commands on stdin, one per line:
``compact <collection id>`` runs an explicit compaction and prints ``COMPACTED <compaction id>`` (or
``FAILED <error>``).  A test starts it with ``VECGRID_CRASH_AT`` set to kill it at a crash point.
SIGINT / SIGTERM / end of stdin stop it cleanly."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading

from vecgrid.cluster.datacoord.compaction import Compaction
from vecgrid.cluster.querycoord.flush_handoff import FlushHandoff
from vecgrid.config import Settings
from vecgrid.deploy import Coordinator
from vecgrid.storage.layout import DataDir
from tests.querycoord_support import FAST


def settings_for(data_dir: str, scheduler: str, port: int) -> Settings:
    s = Settings.load(env={}, overrides={
        "common.data_dir": data_dir, "common.healthcheck_interval_s": 1.0, "dask.scheduler": scheduler,
        "querycoord.port": port, "querycoord.grace_s": 0.5, "querynode.grace_s": 0.5, "http.port": 0, "proxy.port": 0,
        "querycoord.next_target_interval_s": 1.0,
        # the policy stays out of the way: compactions run when the test says so
        "datacoord.compaction_min_segments": 10_000, "datacoord.l0_compaction_min_segments": 10_000,
        "datacoord.compaction_deleted_ratio": 1.0, **FAST})
    return s


async def main(args: argparse.Namespace) -> None:
    settings = settings_for(args.data_dir, args.scheduler, args.port)
    coordinator = Coordinator(settings)
    await coordinator.start(args.scheduler)
    qc = coordinator.coord

    pull_target = FlushHandoff(qc.collections, qc.targets, qc.target_observer).pull_target   # as deploy wires it

    compaction = Compaction(settings, qc.catalog, qc.client, DataDir(args.data_dir).segment_root, pull_target)
    compaction.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"READY {coordinator.addresses.grpc}", flush=True)

    lines: asyncio.Queue[str] = asyncio.Queue()

    def read_stdin() -> None:  # a daemon thread: a blocked read never holds up the exit
        for line in sys.stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, "")

    threading.Thread(target=read_stdin, daemon=True).start()

    async def commands() -> None:
        while (line := await lines.get()):
            word, _, rest = line.strip().partition(" ")
            if word == "compact":
                try:
                    print(f"COMPACTED {await compaction.compact(int(rest))}", flush=True)
                except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
                    print(f"FAILED {type(e).__name__}: {e}", flush=True)
        stop.set()

    reader = asyncio.ensure_future(commands())
    try:
        await stop.wait()
    finally:
        reader.cancel()
        await compaction.stop()
        await coordinator.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--scheduler", required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--port", type=int, required=True)
    asyncio.run(main(parser.parse_args()))
