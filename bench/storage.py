"""Storage benchmarks: WAL append throughput and sealed-segment write/read throughput.

* WAL: rows of dim 128 (int64 pk, a float vector, a short string) in batches of 1,000, each batch
  encoded as an InsertBatch payload and appended with group-commit fsync every 10 ms by several
  producer threads (acknowledged appends only are counted). Target: >= 200,000 rows/s.
* WAL tailing: a writer in another process appends a 1,000-byte record every 30 ms; a reader here
  waits on the channel's committed mark. Latency = when the reader got a record minus when the
  writer's append returned (wall clocks of the same host). Target: p90 < 50 ms (the reader is woken
  when the mark is written: inotify; it polls the mark every 5 ms where that cannot be watched).
* Segments: ``write_segment`` then ``read_segment`` of a table with the same columns, from a warm
  local disk (a temp dir; one untimed read first so the page cache is warm). MB/s counts the bytes
  of ``data.parquet`` and includes checksum verification on read. Target: read >= 500 MB/s.

The last line printed is one JSON object with ``wal_rows_per_s``, ``wal_tail_p90_ms``,
``segment_write_mb_per_s`` and ``segment_read_mb_per_s`` (medians over repeats where repeated). ``--quick`` runs in well under two
minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vecgrid.storage.dml import InsertBatch  # noqa: E402
from vecgrid.storage.kv import SQLiteMetaStore  # noqa: E402
from vecgrid.storage.segment_files import read_segment, write_segment  # noqa: E402
from vecgrid.storage.tso import TimestampOracle  # noqa: E402
from vecgrid.storage.wal import MessageKind, Wal  # noqa: E402

DIM = 128
BATCH_ROWS = 1_000


def _columns(n: int, dim: int, seed: int) -> pa.RecordBatch:
    rng = np.random.default_rng(seed)
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * dim, dtype=np.float32)), dim)
    tags = pa.array([f"tag-{i % 97}" for i in range(n)])
    return pa.record_batch({"vector": vectors, "tag": tags})


def bench_wal(workdir: str, seconds: float, producers: int, group_commit_ms: float) -> dict[str, float]:
    """Rows/s acknowledged by a WAL writer fed by ``producers`` threads for ``seconds``."""
    store = SQLiteMetaStore(os.path.join(workdir, "meta.db"))
    tso = TimestampOracle(store)
    wal = Wal(os.path.join(workdir, "wal"))
    writer = wal.open_writer("by-dev-rootcoord-dml_0_449123v0", fsync="group", group_commit_ms=group_commit_ms)
    # Distinct pre-built column data per producer; pks and timestamps are fresh for every batch.
    templates = [_columns(BATCH_ROWS, DIM, seed) for seed in range(producers)]
    counts = [0] * producers
    latencies: list[list[float]] = [[] for _ in range(producers)]
    stop = threading.Event()
    start_barrier = threading.Barrier(producers + 1)

    def produce(i: int) -> None:
        start_barrier.wait()
        pk = i << 40
        while not stop.is_set():
            ts0 = tso.allocate(BATCH_ROWS)
            batch = InsertBatch(
                collection_id=449123,
                partition_id=449124,
                segment_id=449125 + i,
                primary_keys=np.arange(pk, pk + BATCH_ROWS, dtype=np.int64),
                timestamps=np.arange(ts0, ts0 + BATCH_ROWS, dtype=np.uint64),
                columns=templates[i],
            )
            t0 = time.perf_counter()
            writer.append(MessageKind.INSERT, ts0 + BATCH_ROWS - 1, batch.encode())
            latencies[i].append(time.perf_counter() - t0)
            counts[i] += BATCH_ROWS
            pk += BATCH_ROWS

    threads = [threading.Thread(target=produce, args=(i,), daemon=True) for i in range(producers)]
    for t in threads:
        t.start()
    start_barrier.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    writer.close()
    store.close()
    lat = sorted(x for per in latencies for x in per)
    payload = len(
        InsertBatch(1, 1, 1, np.arange(BATCH_ROWS), 1, templates[0]).encode()
    )
    rows = sum(counts)
    return {
        "rows_per_s": rows / elapsed,
        "mb_per_s": rows / BATCH_ROWS * payload / elapsed / 1e6,
        "append_p50_ms": lat[len(lat) // 2] * 1e3 if lat else float("nan"),
        "append_p99_ms": lat[int(len(lat) * 0.99)] * 1e3 if lat else float("nan"),
        "payload_bytes": payload,
    }


_TAIL_WRITER = """
import sys, time
sys.path.insert(0, {repo!r})
from vecgrid.storage.wal import Wal, MessageKind
w = Wal({root!r}).open_writer({channel!r})
sys.stdout.write("ready\\n"); sys.stdout.flush()
sys.stdin.readline()
for i in range({records}):
    time.sleep({every_s})
    pos = w.append(MessageKind.INSERT, i, b"x" * 1000)
    sys.stdout.write(f"{{pos.offset}} {{time.time()}}\\n"); sys.stdout.flush()
w.close()
"""


def bench_wal_tail(workdir: str, records: int, every_ms: float = 30.0) -> dict[str, float]:
    """Delay between a writer process acknowledging an append and a reader here getting it."""
    channel = "by-dev-rootcoord-dml_1_449123v1"
    root = os.path.join(workdir, "wal-tail")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = _TAIL_WRITER.format(repo=repo, root=root, channel=channel, records=records, every_s=every_ms / 1e3)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the WAL writer process did not start")
        seen: dict[int, float] = {}
        with Wal(root).open_reader(channel) as reader:
            proc.stdin.write("go\n")
            proc.stdin.flush()
            while len(seen) < records:
                rec = reader.read(timeout=30)
                if rec is None:
                    raise RuntimeError(f"the reader got nothing for 30 s after {len(seen)} records")
                seen[rec.offset] = time.time()
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    acked = {int(a): float(b) for a, b in (line.split() for line in out.splitlines())}
    delays = sorted((seen[k] - acked[k]) * 1e3 for k in acked)  # negative: read before the writer printed
    return {"p50_ms": delays[len(delays) // 2], "p90_ms": delays[int(0.9 * len(delays))], "max_ms": delays[-1]}


def bench_segments(workdir: str, rows: int, repeats: int) -> dict[str, float]:
    """Write and read MB/s (data.parquet bytes) of a ``rows`` x dim-128 segment."""
    rng = np.random.default_rng(7)
    cols = _columns(rows, DIM, 11)
    table = pa.table(
        {
            "pk": pa.array(np.arange(rows, dtype=np.int64)),
            "ts": pa.array(rng.integers(1 << 40, 1 << 50, rows, dtype=np.uint64)),
            "vector": cols.column("vector"),
            "tag": cols.column("tag"),
        }
    )
    root = os.path.join(workdir, "segments")
    write_rates, read_rates = [], []
    files = None
    for i in range(repeats):
        t0 = time.perf_counter()
        files = write_segment(root, 1, 2, 100 + i, table)
        write_rates.append(files.data.size / 1e6 / (time.perf_counter() - t0))
    assert files is not None
    read_segment(files)  # warm the page cache
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = read_segment(files)
        read_rates.append(files.data.size / 1e6 / (time.perf_counter() - t0))
    assert out.num_rows == rows
    return {
        "write_mb_per_s": statistics.median(write_rates),
        "read_mb_per_s": statistics.median(read_rates),
        "read_best_mb_per_s": max(read_rates),
        "file_mb": files.data.size / 1e6,
        "table_mb": table.nbytes / 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short run (< 2 min on 2 cores)")
    parser.add_argument("--producers", type=int, default=4, help="concurrent WAL appenders")
    parser.add_argument("--group-commit-ms", type=float, default=10.0)
    parser.add_argument("--dir", default=None, help="working directory (default: a temp dir)")
    args = parser.parse_args(argv)

    wal_seconds = 6.0 if args.quick else 30.0
    seg_rows = 200_000 if args.quick else 1_000_000
    repeats = 5 if args.quick else 7

    with tempfile.TemporaryDirectory(dir=args.dir, prefix="vecgrid-bench-storage-") as workdir:
        wal = bench_wal(workdir, wal_seconds, args.producers, args.group_commit_ms)
        print(
            f"WAL append (dim {DIM}, {BATCH_ROWS}-row InsertBatch payloads of {wal['payload_bytes']} B, "
            f"{args.producers} producers, group commit {args.group_commit_ms:g} ms): "
            f"{wal['rows_per_s']:,.0f} rows/s, {wal['mb_per_s']:.0f} MB/s, "
            f"append p50 {wal['append_p50_ms']:.1f} ms, p99 {wal['append_p99_ms']:.1f} ms",
            flush=True,
        )
        tail = bench_wal_tail(workdir, 100 if args.quick else 500)
        print(
            f"WAL tailing across processes (a 1,000-byte record every 30 ms): "
            f"p50 {tail['p50_ms']:.1f} ms, p90 {tail['p90_ms']:.1f} ms, max {tail['max_ms']:.1f} ms "
            f"(target p90 < 50 ms)",
            flush=True,
        )
        seg = bench_segments(workdir, seg_rows, repeats)
        print(
            f"segment ({seg_rows:,} rows, data.parquet {seg['file_mb']:.0f} MB, table {seg['table_mb']:.0f} MB): "
            f"write {seg['write_mb_per_s']:.0f} MB/s, read {seg['read_mb_per_s']:.0f} MB/s "
            f"(best {seg['read_best_mb_per_s']:.0f} MB/s)",
            flush=True,
        )
    print(
        json.dumps(
            {
                "wal_rows_per_s": round(wal["rows_per_s"]),
                "wal_tail_p90_ms": round(tail["p90_ms"], 1),
                "segment_write_mb_per_s": round(seg["write_mb_per_s"], 1),
                "segment_read_mb_per_s": round(seg["read_mb_per_s"], 1),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
