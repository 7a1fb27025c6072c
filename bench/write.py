"""The write path: inserts through the proxy against the bare WAL, read-your-writes cost, flush speed.

A 2-worker embedded cluster (as ``vecgrid serve``), one collection of dim 128 with two channels,
bulk-imported and loaded; this process is the coordinator, and the benchmark calls the coordinator's
own proxy (``Coordinator.proxy``: the Python API the REST app and the CLI's gRPC service call).

* ``insert_rows_per_s``: batches of 1,000 rows through ``proxy.insert`` (validation, routing, one
  timestamp, durable in the WAL before the answer), four writers at a time; ``bare_wal_rows_per_s``
  is the same batches encoded and appended to a fresh WAL directly (group commit, four writers),
  in the same run.
* ``strong_extra_ms_p50`` / ``_p99``: a Strong search (nq=1, k=10) minus a Bounded one, taken in
  alternating pairs, idle and (``..._stream``) while a writer inserts 5,000 rows/s (1,000 every
  200 ms).  Strong used to wait for the next time tick (200 ms).
* ``search_qps_ratio_stream``: Bounded searches per second during the insert stream over idle.
* ``flush_rows_per_s``: rows of the channels' growing data over the time of ``proxy.flush`` (WAL to
  published segments).

    .venv/bin/python bench/write.py [--quick]

The last line is one JSON object.  Reuses the test helpers in ``tests/`` (run from the repository root).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import embedded_settings  # noqa: E402
from tests.querycoord_support import Coord  # noqa: E402
from tests.querynode_support import DIM, import_collection, random_table  # noqa: E402
from vecgrid.deploy import EmbeddedCluster  # noqa: E402
from vecgrid.storage.dml import InsertBatch  # noqa: E402
from vecgrid.storage.wal import MessageKind, Wal  # noqa: E402

BATCH = 1000
WRITERS = 4
STREAM_ROWS_PER_S = 5000
STREAM_PERIOD_S = BATCH / STREAM_ROWS_PER_S


class Rows:
    """Batches of fresh rows (new primary keys) in the collection's schema."""

    def __init__(self, template: pa.Table, first_pk: int) -> None:
        self.template, self.next_pk = template, first_pk

    def batch(self) -> pa.Table:
        pks = np.arange(self.next_pk, self.next_pk + BATCH, dtype=np.int64)
        self.next_pk += BATCH
        start = int(pks[0]) % (self.template.num_rows - BATCH)
        return self.template.slice(start, BATCH).set_column(0, "pk", pa.array(pks))


def bare_wal_rows_per_s(root: str, batches: list[pa.Table]) -> float:
    """The same batches encoded and appended to a fresh WAL by four threads (group commit)."""
    from concurrent.futures import ThreadPoolExecutor
    wal = Wal(root)
    writer = wal.open_writer("bench-dml_0_1v0")
    ts = iter(range(1, 1 << 40))

    def append(table: pa.Table) -> None:
        t = next(ts)
        payload = InsertBatch(1, 2, 3, table.column(0).combine_chunks(), np.full(table.num_rows, t, np.uint64),
                              table.drop_columns(["pk"])).encode()
        writer.append(MessageKind.INSERT, t, payload)

    try:
        start = time.perf_counter()
        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(append, batches))
        return sum(b.num_rows for b in batches) / (time.perf_counter() - start)
    finally:
        writer.close()


async def insert_rows_per_s(proxy, name: str, batches: list[pa.Table]) -> float:
    queue = list(batches)

    async def writer() -> None:
        while queue:
            await proxy.insert(name, queue.pop())

    start = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(WRITERS)))
    return sum(b.num_rows for b in batches) / (time.perf_counter() - start)


async def strong_extra(proxy, name: str, queries: np.ndarray, pairs: int) -> dict:
    """Alternating Strong and Bounded searches: the latency Strong adds (p50, p99 of each, in ms)."""
    strong, bounded = [], []
    for i in range(pairs):
        q = queries[i % len(queries)][None, :]
        for level, into in (("Strong", strong), ("Bounded", bounded)) if i % 2 else \
                (("Bounded", bounded), ("Strong", strong)):
            t = time.perf_counter()
            await proxy.search(name, q, limit=10, consistency=level)
            into.append((time.perf_counter() - t) * 1e3)
    s, b = np.asarray(strong), np.asarray(bounded)
    return {"p50": float(np.percentile(s, 50) - np.percentile(b, 50)),
            "p99": float(np.percentile(s, 99) - np.percentile(b, 99)),
            "strong_p50_ms": float(np.percentile(s, 50)), "bounded_p50_ms": float(np.percentile(b, 50))}


async def bounded_qps(proxy, name: str, queries: np.ndarray, seconds: float) -> float:
    done, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        await proxy.search(name, queries[done % len(queries)][None, :], limit=10, consistency="Bounded")
        done += 1
    return done / seconds


async def stream(proxy, name: str, rows: Rows, stop: asyncio.Event) -> int:
    """Insert 1,000 rows every 200 ms until ``stop``; returns the rows inserted."""
    inserted, next_at = 0, time.perf_counter()
    while not stop.is_set():
        await proxy.insert(name, rows.batch())
        inserted += BATCH
        next_at += STREAM_PERIOD_S
        await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
    return inserted


async def run(quick: bool) -> dict:
    base_rows, insert_batches, pairs, qps_s = (20_000, 100, 300, 3.0) if quick else (100_000, 500, 1000, 10.0)
    with tempfile.TemporaryDirectory() as tmp:
        ds = import_collection(Path(tmp), "writes", metric="L2", index="FLAT", n=base_rows, shards=2,
                               segment_rows=base_rows // 2, seed=3)
        template, _, _, _ = random_table(20_000, 4, "pk", False)
        rows = Rows(template, int(ds.pks.max()) + 1)
        batches = [rows.batch() for _ in range(insert_batches)]
        bare = bare_wal_rows_per_s(str(Path(tmp) / "bare-wal"), batches)

        settings = embedded_settings(Path(ds.data_dir), workers=2)
        settings.datacoord.flush_idle_s = 24 * 3600.0       # only the explicit flush below seals
        settings.datacoord.segment_max_rows = 10_000_000
        settings.datacoord.segment_max_mb = 1e6
        cluster = EmbeddedCluster(settings)
        await asyncio.wait_for(cluster.start(), 120)
        try:
            await Coord(cluster.addresses.grpc, cluster.coord).load(ds.collection_id)
            proxy = cluster.proxy
            queries = np.random.default_rng(5).standard_normal((64, DIM)).astype(np.float32)
            await proxy.search("writes", queries[:1], limit=10)    # warm: leaders cached, tsafe caught up

            idle = await strong_extra(proxy, "writes", queries, pairs)
            qps_idle = await bounded_qps(proxy, "writes", queries, qps_s)
            inserted = await insert_rows_per_s(proxy, "writes", batches)

            stop = asyncio.Event()
            streaming = asyncio.create_task(stream(proxy, "writes", rows, stop))
            await asyncio.sleep(1.0)
            busy = await strong_extra(proxy, "writes", queries, pairs)
            qps_stream = await bounded_qps(proxy, "writes", queries, qps_s)
            stop.set()
            streamed = await streaming

            growing = len(batches) * BATCH + streamed
            t = time.perf_counter()
            await proxy.flush("writes")
            flush_s = time.perf_counter() - t
            total = await proxy.count("writes")
            assert total == base_rows + growing, (total, base_rows + growing)
        finally:
            await asyncio.wait_for(cluster.stop(), 60)
    return {
        "insert_rows_per_s": round(inserted), "bare_wal_rows_per_s": round(bare),
        "insert_over_bare_wal": round(inserted / bare, 3),
        "strong_extra_ms_p50": round(idle["p50"], 3), "strong_extra_ms_p99": round(idle["p99"], 3),
        "strong_extra_ms_p50_stream": round(busy["p50"], 3), "strong_extra_ms_p99_stream": round(busy["p99"], 3),
        "strong_p50_ms": round(idle["strong_p50_ms"], 3), "bounded_p50_ms": round(idle["bounded_p50_ms"], 3),
        "search_qps_idle": round(qps_idle, 1), "search_qps_stream": round(qps_stream, 1),
        "search_qps_ratio_stream": round(qps_stream / qps_idle, 3),
        "flush_rows": growing, "flush_rows_per_s": round(growing / flush_s), "count_after_flush": total,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller data and fewer rounds (under 2 minutes)")
    args = ap.parse_args()
    print(json.dumps(asyncio.run(run(args.quick))))


if __name__ == "__main__":
    main()
