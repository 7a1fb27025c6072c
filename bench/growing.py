"""Insert and search at once: rows that are still growing, searched with and without the interim index.

    .venv/bin/python bench/growing.py [--quick] [--rows N]

What a user does who writes and reads without waiting for a flush: two ``vecgrid serve --workers 2``
started the same way but for ``querynode.interim_index_rows`` (the default, 65,536, against 0: every
growing row compared), each with a collection of ``--rows`` clustered 128-dimensional vectors
(default 200,000; ``--quick`` 100,000; ``vecgrid.gpu.datasets.SyntheticDataset``) inserted through
REST in batches of 1,000 after an IVF_FLAT index (nlist 1024) was defined and the collection loaded,
so that every row is in one growing segment of its one channel (automatic flushes are off). Then
k = 10 searches through REST (nprobe 8): first every query once at Strong consistency (every row
visible), for the recall@10 of each server against the exact answer; then, timed at Eventually (the
rows are all there by then, and Strong would add the wait for the channel's next time tick), the two
servers and faiss in this process (an exact ``IndexFlatL2`` over the same rows, one OpenMP thread)
called in turn, call by call: ``*_p50_ms_nq1`` and ``*_qps_nq100``.

The last line is one JSON object.  Run from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import side_figures  # noqa: E402  (bench/ is first on sys.path)
from rest import Rest, start_serve, stop  # noqa: E402
from vecgrid.gpu import require_faiss  # noqa: E402
from vecgrid.gpu.datasets import SyntheticDataset  # noqa: E402

faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold

DIM, K, NLIST, NPROBE, NQ, BATCH = 128, 10, 1024, 8, 100, 1_000
VECGRID = str(Path(sys.executable).parent / "vecgrid")


def start(tmp: str, interim_rows: int | None) -> tuple[subprocess.Popen, Rest]:
    env = {**os.environ, "VECGRID_DATACOORD_FLUSH_IDLE_S": "86400"}
    if interim_rows is not None:
        env["VECGRID_QUERYNODE_INTERIM_INDEX_ROWS"] = str(interim_rows)
    served = start_serve(tmp, "--workers", "2", env=env)
    return served.proc, Rest(served.http_port)


def fill(rest: Rest, vectors: np.ndarray) -> None:
    rest.call("POST", "/collections", {"name": "bench", "dimension": DIM, "metric": "L2", "shards": 1,
                                       "indexes": [{"field": "vector", "type": "IVF_FLAT", "metric": "L2",
                                                    "params": {"nlist": NLIST}}]})
    rest.call("POST", "/collections", {"name": "bench", "wait": True}, {"X-Service-Method": "load"})
    for lo in range(0, len(vectors), BATCH):
        rest.call("POST", "/collections/bench/entities",
                  [{"id": i, "vector": vectors[i]} for i in range(lo, min(lo + BATCH, len(vectors)))])


def search(rest: Rest, xq: np.ndarray, consistency: str = "Eventually") -> list[list[int]]:
    hits = rest.call("POST", "/collections/bench/entities",
                     {"vectors": xq, "limit": K, "params": {"nprobe": NPROBE}, "consistency": consistency},
                     {"X-Service-Method": "search"})
    return [[h["id"] for h in per_query] for per_query in hits]


def recall(got: list[list[int]], want: np.ndarray) -> float:
    return float(np.mean([len(set(g) & set(w.tolist())) / K for g, w in zip(got, want)]))


async def time_sides(servers: dict[str, Rest], exact, queries: list[np.ndarray]) -> dict:
    out: dict = {}
    rounds = len(queries)
    for nq in (NQ, 1):
        async def faiss_side(i: int) -> None:
            exact.search(queries[i % rounds][:nq], K)

        def server_side(rest: Rest):
            async def side(i: int) -> None:
                search(rest, queries[i % rounds][:nq])
            return side

        out.update(await side_figures({"faiss_exact": faiss_side, **{name: server_side(r) for name, r in servers.items()}},
                                      nq, rounds))
    return out


def run(rows: int, rounds: int) -> dict:
    ds = SyntheticDataset(d=DIM, nb=rows, nq=rounds * NQ, seed=7)
    queries = [ds.xq[i * NQ:(i + 1) * NQ] for i in range(rounds)]
    faiss.omp_set_num_threads(1)
    exact = faiss.IndexFlatL2(DIM)
    exact.add(ds.xb)
    _, truth = exact.search(ds.xq, K)
    out: dict = {"rows": rows, "dim": DIM, "nlist": NLIST, "nprobe": NPROBE, "k": K}
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory() as tmp_on, tempfile.TemporaryDirectory() as tmp_off:
        try:
            servers = {}
            for name, tmp, interim_rows in (("interim", tmp_on, None), ("exact", tmp_off, 0)):
                proc, rest = start(tmp, interim_rows)
                procs.append(proc)
                fill(rest, ds.xb)
                servers[name] = rest
            for name, rest in servers.items():
                got = [hit for q in queries for hit in search(rest, q, "Strong")]
                out[f"{name}_recall_at_10"] = round(recall(got, truth), 4)
            out.update(asyncio.run(time_sides(servers, exact, queries)))
        finally:
            stop(procs)
    out["interim_p50_speedup_nq1"] = round(out["exact_p50_ms_nq1"] / out["interim_p50_ms_nq1"], 2)
    out["interim_qps_speedup_nq100"] = round(out["interim_qps_nq100"] / out["exact_qps_nq100"], 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100,000 rows and fewer rounds")
    ap.add_argument("--rows", type=int, help="rows to insert (default 200,000; --quick 100,000)")
    args = ap.parse_args()
    rows = args.rows or (100_000 if args.quick else 200_000)
    print(json.dumps(run(rows, 8 if args.quick else 20)))


if __name__ == "__main__":
    main()
