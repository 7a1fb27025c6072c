"""Search and insert through vecgrid's REST API against faiss on the same vectors, same run.

A real ``vecgrid serve`` (2 workers, a subprocess) and one keep-alive HTTP client in this process,
bodies encoded and decoded with orjson as a tuned client would:

* ``rest_insert_rows_per_s``: rows of 1,000 × 128 batches posted as JSON to
  ``collections/bench/entities`` (validated, durable in the WAL before the answer), one client.
* the collection (FLAT, L2, 2 shards) is then flushed, its index built, and loaded; ``faiss.IndexFlatL2``
  holds the same vectors in this process.
* ``rest_p50_ms_over_faiss``: p50 of an nq=1, k=10 ``search`` through REST minus p50 of the same
  query on faiss, alternating call by call (target ≤ 2.5 ms).
* ``rest_qps_ratio_nq100``: queries per second at nq=100 through REST over faiss's, alternating
  (target ≥ 0.5).  Every REST answer is checked against faiss's ids.

    .venv/bin/python bench/rest.py [--quick]

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vecgrid.gpu import require_faiss  # noqa: E402

DIM = 128
BATCH = 1000
VECGRID = str(Path(sys.executable).with_name("vecgrid"))


READY_LINE = "Press Ctrl-C to stop."


@dataclass
class Served:
    """A ``vecgrid serve`` process and the ports it bound."""

    proc: subprocess.Popen
    http_port: int
    coord_port: int
    milvus_port: int


def start_serve(data_dir: str, *args: str, env: dict[str, str] | None = None, timeout_s: float = 180.0) -> Served:
    """``vecgrid serve --data-dir DATA_DIR ARGS...`` with every port picked by the kernel (port 0), read
    back from its banner once it is ready: no port is chosen here and closed before the server binds
    it, where another process could take it.  Its output goes to ``serve.log`` in the data dir."""
    log_path = Path(data_dir) / "serve.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:   # a file, not a pipe: nobody has to keep reading the server's logs
        proc = subprocess.Popen([VECGRID, "serve", "--data-dir", data_dir, "--http-port", "0", "--coord-port", "0",
                                 "--milvus-port", "0", "--dashboard-port", "0", *args],
                                stdout=log, stderr=subprocess.STDOUT, env={**(env or os.environ), "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + timeout_s
    while READY_LINE not in (text := log_path.read_text()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"vecgrid serve did not come up (exit {proc.poll()}):\n{text[-3000:]}")
        time.sleep(0.2)

    def port(label: str) -> int:
        return int(re.search(rf"^  {label}\s*: \S*?:(\d+)", text, re.M).group(1))
    served = Served(proc, port("REST"), port("QueryCoord gRPC"), port("Milvus gRPC"))
    wait_ready(served.http_port, proc, timeout_s)
    return served



class Rest:
    """One keep-alive connection; raises on any status but the expected one."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def call(self, method: str, path: str, body=None, headers=None, expect=(200, 201)):
        raw = orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY) if body is not None else None
        self.conn.request(method, path, body=raw, headers={"Content-Type": "application/json", **(headers or {})})
        response = self.conn.getresponse()
        data = response.read()
        if response.status not in expect:
            raise RuntimeError(f"{method} {path}: {response.status} {data[:500]!r}")
        return orjson.loads(data) if data else None

    def records(self, path: str) -> list[dict]:
        """A find's records, paginated or not."""
        answer = self.call("GET", path)
        return answer["data"] if isinstance(answer, dict) else answer

    def search(self, vectors: np.ndarray, limit: int = 10):
        return self.call("POST", "/collections/bench/entities", {"vectors": vectors, "limit": limit},
                         {"X-Service-Method": "search"})


def wait_ready(port: int, proc: subprocess.Popen, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"vecgrid serve exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError("vecgrid serve did not become healthy")


def until(what: str, check, timeout_s: float, interval_s: float = 0.5):
    """``check()``'s first true answer, asked every ``interval_s``; TimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(interval_s)
    raise TimeoutError(what)


def stop(procs: list[subprocess.Popen], timeout_s: float = 60.0) -> None:
    """SIGTERM each process, the last started first; kill one that does not exit in ``timeout_s``."""
    for proc in reversed(procs):
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_indexed(rest: Rest, timeout_s: float = 600.0) -> None:
    """Until the flushed segments' index is built: loaded before that, they are served from an interim
    index and reloaded with the built one by the index checker (every 10 s), inside the timed rounds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        (index,) = rest.call("GET", "/collections/bench/indexes")
        if index["state"] == "Finished" and index["pendingRows"] == 0:
            return
        time.sleep(0.2)
    raise TimeoutError("the index was not built")


def run(quick: bool) -> dict:
    rows, rounds_nq1, rounds_nq100 = (50_000, 300, 20) if quick else (200_000, 1000, 50)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((rows, DIM), dtype=np.float32)
    queries = rng.standard_normal((256, DIM), dtype=np.float32)
    # One OpenMP thread: the cluster's two workers search their halves with one thread each on this
    # host's cores (querynode.faiss_threads), and faiss's spinning threads, sharing the cores with the
    # server's processes, made its own figures erratic (2-14 ms at nq=1).
    faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold
    faiss.omp_set_num_threads(1)
    index = faiss.IndexFlatL2(DIM)
    index.add(vectors)

    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "VECGRID_DATACOORD_FLUSH_IDLE_S": "86400", "VECGRID_DATACOORD_AUTO_COMPACTION": "false"}
        served = start_serve(tmp, "--workers", "2", env=env)
        proc = served.proc
        try:
            rest = Rest(served.http_port)
            rest.call("POST", "/collections", {"name": "bench", "dimension": DIM, "metric": "L2", "shards": 2,
                                               "indexes": [{"field": "vector", "type": "FLAT", "metric": "L2"}]})
            start = time.perf_counter()
            for lo in range(0, rows, BATCH):
                batch = [{"id": i, "vector": vectors[i]} for i in range(lo, min(lo + BATCH, rows))]
                rest.call("POST", "/collections/bench/entities", batch)
            insert_rows_per_s = rows / (time.perf_counter() - start)
            rest.call("POST", "/collections", {"name": "bench"}, {"X-Service-Method": "flush"})
            wait_indexed(rest)
            rest.call("POST", "/collections", {"name": "bench", "wait": True}, {"X-Service-Method": "load"})
            rest.search(queries[:1])  # warm: leaders cached

            rest_ms, faiss_ms = [], []
            for i in range(rounds_nq1):
                q = queries[i % len(queries)][None, :]
                t = time.perf_counter()
                hits = rest.search(q)
                rest_ms.append((time.perf_counter() - t) * 1e3)
                t = time.perf_counter()
                _, ids = index.search(q, 10)
                faiss_ms.append((time.perf_counter() - t) * 1e3)
                assert [h["id"] for h in hits[0]] == ids[0].tolist(), (hits[0], ids[0])

            rest_s = faiss_s = 0.0
            for i in range(rounds_nq100):
                q = np.roll(queries, i, axis=0)[:100]
                t = time.perf_counter()
                hits = rest.search(q)
                rest_s += time.perf_counter() - t
                t = time.perf_counter()
                _, ids = index.search(q, 10)
                faiss_s += time.perf_counter() - t
                assert len(hits) == 100 and [h["id"] for h in hits[99]] == ids[99].tolist()
        finally:
            stop([proc])
    rest_p50, faiss_p50 = float(np.percentile(rest_ms, 50)), float(np.percentile(faiss_ms, 50))
    return {
        "rows": rows, "dim": DIM,
        "rest_insert_rows_per_s": round(insert_rows_per_s),
        "rest_p50_ms_nq1": round(rest_p50, 3), "faiss_p50_ms_nq1": round(faiss_p50, 3),
        "rest_p99_ms_nq1": round(float(np.percentile(rest_ms, 99)), 3),
        "rest_p50_ms_over_faiss": round(rest_p50 - faiss_p50, 3),
        "rest_qps_nq100": round(rounds_nq100 * 100 / rest_s, 1), "faiss_qps_nq100": round(rounds_nq100 * 100 / faiss_s, 1),
        "rest_qps_ratio_nq100": round(faiss_s / rest_s, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="50,000 rows and fewer rounds (under 2 minutes)")
    args = ap.parse_args()
    print(json.dumps(run(args.quick)))


if __name__ == "__main__":
    main()
