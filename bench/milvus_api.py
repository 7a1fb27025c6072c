"""Milvus's own client against vecgrid and against Milvus Lite: the same pymilvus, the same data, one run.

    .venv/bin/python bench/milvus_api.py [--quick] [--rows N] [--in-process]

What each side does, as a pymilvus user does (the client script runs in the client's own venv,
``tests/milvus_clients.py``; one side after the other, each against a fresh collection):

1. creates a collection (``id`` Int64 key, 128-d ``vector``: ``bench/scale.py``'s clustered vectors,
   queries drawn near stored rows), inserts ``--rows`` rows (default
   200,000; ``--quick`` 20,000) in batches of 10,000 row dicts — timed: ``insert_rows_per_s``;
2. flush, IVF_FLAT index (nlist 1024; ``--quick`` 128), load — timed: ``index_and_load_s``;
3. searches at the collection's default consistency, k = 10, ``nprobe`` 8: single queries (p50, p99)
   and batches of 100 (queries/s); recall@10 of the batches against exact neighbours.

The sides:

* ``vecgrid_pymilvus25`` and ``lite25``: pymilvus 2.5.18 against ``vecgrid serve --workers 2`` (with
  ``--in-process``: one worker whose query node runs in the coordinator's process, so a search crosses
  one Python hop, as on the floor) and against Milvus Lite 2.5.1 (its C++ server, a local file);
* ``vecgrid_pymilvus3`` and ``lite3``: pymilvus 3.0.2 against vecgrid and against Milvus Lite 3.2.2
  (pure Python on faiss and pyarrow);
* ``floor_pymilvus25``: pymilvus 2.5.18 against ``bench/milvus_floor.py``, a bare Python MilvusService
  serving the same IVF_FLAT index from one process (searches only): what one Python hop of this API
  costs, the yardstick of vecgrid's two (client → coordinator → shard leader);
* ``faiss``: the same IVF_FLAT index in this process (``add`` as its insert rate), the floor of any
  server.

The last line is one JSON object: every side's figures, and issue 25's ratios —
``vecgrid_p50_vs_lite25`` (≤ 1), ``vecgrid_qps_vs_lite25`` (≥ 2, at vecgrid's recall),
``vecgrid_insert_vs_lite25`` (≥ 3) — and ``vecgrid_p50_ms_over_floor``, ``vecgrid_qps_vs_floor``.
Run from the repository root.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rest import start_serve, stop  # noqa: E402  (bench/ is first on sys.path)
from scale import clustered_chunks  # noqa: E402
from tests.milvus_clients import client_python  # noqa: E402
from vecgrid.gpu.build import build_index_file  # noqa: E402
from vecgrid.gpu import require_faiss  # noqa: E402

BIN = Path(sys.executable).parent
DIM, K, NPROBE, BATCH, NQ = 128, 10, 8, 10_000, 100

CLIENT = r'''
import json, sys, time
import numpy as np
from pymilvus import DataType, MilvusClient

uri, data, queries, truth, nlist, nprobe, single_rounds, batch_rounds, budget_s, mode = sys.argv[1:11]
nlist, nprobe, single_rounds, batch_rounds, budget_s = int(nlist), int(nprobe), int(single_rounds), \
    int(batch_rounds), float(budget_s)
x, xq, gt = np.load(data), np.load(queries), np.load(truth)
client = MilvusClient(uri)
insert_s = load_s = None
if mode == "full":   # else "search": a server holding the collection already (the floor)
    if client.has_collection("bench"):
        client.drop_collection("bench")
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=x.shape[1])
    client.create_collection("bench", schema=schema)
    t0 = time.perf_counter()
    for lo in range(0, len(x), 10000):
        client.insert("bench", [{"id": i, "vector": x[i]} for i in range(lo, min(lo + 10000, len(x)))])
    insert_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    client.flush("bench")
    index_params = client.prepare_index_params()
    index_params.add_index("vector", index_type="IVF_FLAT", metric_type="L2", params={"nlist": nlist})
    client.create_index("bench", index_params)
    client.load_collection("bench")
    load_s = time.perf_counter() - t0
params = {"metric_type": "L2", "params": {"nprobe": nprobe}}
for i in range(5):   # warm-up: connections, caches
    client.search("bench", [xq[i]], limit=10, search_params=params)
single = []
deadline = time.perf_counter() + budget_s
for i in range(single_rounds):
    t0 = time.perf_counter()
    client.search("bench", [xq[i % len(xq)]], limit=10, search_params=params)
    single.append(time.perf_counter() - t0)
    if time.perf_counter() > deadline and len(single) >= 20:
        break
batches, found = [], 0
nq = 100
deadline = time.perf_counter() + budget_s
for r in range(batch_rounds):
    lo = (r * nq) % len(xq)
    t0 = time.perf_counter()
    hits = client.search("bench", xq[lo:lo + nq].tolist(), limit=10, search_params=params)
    batches.append(time.perf_counter() - t0)
    found += sum(len(set(h["id"] for h in q) & set(gt[lo + j].tolist())) for j, q in enumerate(hits))
    if time.perf_counter() > deadline and len(batches) >= 3:
        break
if mode == "full":
    client.drop_collection("bench")
print(json.dumps({"insert_rows_per_s": insert_s and round(len(x) / insert_s),
                  "index_and_load_s": load_s and round(load_s, 2),
                  "p50_ms_nq1": round(float(np.percentile(single, 50)) * 1e3, 3),
                  "p99_ms_nq1": round(float(np.percentile(single, 99)) * 1e3, 3),
                  "qps_nq100": round(nq * len(batches) / sum(batches), 1),
                  "recall_at_10": round(found / (len(batches) * nq * 10), 4),
                  "single_queries": len(single), "batches": len(batches)}))
'''


def run_client(name: str, uri: str, files: list[str], nlist: int, single: int, batches: int, budget_s: float,
               mode: str = "full") -> dict:
    python = client_python(name)
    done = subprocess.run([str(python), "-c", CLIENT, uri, *files, str(nlist), str(NPROBE), str(single),
                           str(batches), str(budget_s), mode], capture_output=True, text=True, timeout=3600,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if done.returncode != 0:
        raise RuntimeError(f"{name} against {uri} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def faiss_side(x: np.ndarray, xq: np.ndarray, gt: np.ndarray, nlist: int, single: int, batches: int) -> dict:
    faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold

    t0 = time.perf_counter()
    index = faiss.IndexIVFFlat(faiss.IndexFlatL2(DIM), DIM, nlist)
    index.train(x)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    index.add(x)
    add_s = time.perf_counter() - t0
    index.nprobe = NPROBE
    lat = []
    for i in range(single):
        t0 = time.perf_counter()
        index.search(xq[i % len(xq)][None, :], K)
        lat.append(time.perf_counter() - t0)
    took, found = [], 0
    for r in range(batches):
        lo = (r * NQ) % len(xq)
        t0 = time.perf_counter()
        _, ids = index.search(xq[lo:lo + NQ], K)
        took.append(time.perf_counter() - t0)
        found += sum(len(set(ids[j].tolist()) & set(gt[lo + j].tolist())) for j in range(NQ))
    return {"insert_rows_per_s": round(len(x) / add_s), "index_and_load_s": round(train_s, 2),
            "p50_ms_nq1": round(float(np.percentile(lat, 50)) * 1e3, 3),
            "p99_ms_nq1": round(float(np.percentile(lat, 99)) * 1e3, 3),
            "qps_nq100": round(NQ * len(took) / sum(took), 1), "recall_at_10": round(found / (len(took) * NQ * K), 4)}


def start_vecgrid(tmp: str, procs: list[subprocess.Popen], in_process: bool) -> str:
    env = dict(os.environ, VECGRID_DASK_IN_PROCESS="true") if in_process else None
    served = start_serve(f"{tmp}/data", "--workers", "1" if in_process else "2", env=env)
    procs.append(served.proc)
    return f"http://127.0.0.1:{served.milvus_port}"


def run(quick: bool, rows: int | None, in_process: bool = False) -> dict:
    rows = rows or (20_000 if quick else 200_000)
    nlist = 128 if quick else 1024
    single, batches, budget_s = (100, 10, 20.0) if quick else (500, 30, 60.0)
    x = np.concatenate([chunk for _, chunk in clustered_chunks(rows)])
    rng = np.random.default_rng(7)   # queries near stored rows, as a user's are
    xq = (x[rng.choice(rows, 1000, replace=False)] + 0.5 * rng.standard_normal((1000, DIM))).astype(np.float32)
    faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold
    exact = faiss.IndexFlatL2(DIM)
    exact.add(x)
    _, gt = exact.search(xq, K)
    out: dict = {"rows": rows, "dim": DIM, "nlist": nlist, "nprobe": NPROBE, "k": K, "cores": os.cpu_count(),
                 "in_process": in_process}
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory() as tmp:
        files = [f"{tmp}/x.npy", f"{tmp}/q.npy", f"{tmp}/gt.npy"]
        for path, array in zip(files, (x, xq, gt)):
            np.save(path, array)
        try:
            uri = start_vecgrid(tmp, procs, in_process)
            out["vecgrid_pymilvus25"] = run_client("lite-2.5", uri, files, nlist, single, batches, budget_s)
            out["vecgrid_pymilvus3"] = run_client("lite-3", uri, files, nlist, single, batches, budget_s)
            index_path = f"{tmp}/floor.index"
            Path(index_path).write_bytes(build_index_file(x, "IVF_FLAT", "L2", {"nlist": nlist}, use_gpu=False))
            floor = subprocess.Popen([sys.executable, str(Path(__file__).parent / "milvus_floor.py"), index_path,
                                      str(NPROBE)], stdout=subprocess.PIPE, text=True)
            procs.append(floor)
            floor_uri = f"http://127.0.0.1:{floor.stdout.readline().strip()}"
            out["floor_pymilvus25"] = run_client("lite-2.5", floor_uri, files, nlist, single, batches, budget_s,
                                                 mode="search")
        finally:
            stop(procs)
        out["lite25"] = run_client("lite-2.5", f"{tmp}/lite25.db", files, nlist, single, batches, budget_s)
        out["lite3"] = run_client("lite-3", f"{tmp}/lite3.db", files, nlist, min(single, 60), min(batches, 5),
                                  budget_s)
    out["faiss"] = faiss_side(x, xq, gt, nlist, single, batches)
    vg, lite = out["vecgrid_pymilvus25"], out["lite25"]
    out["vecgrid_p50_vs_lite25"] = round(vg["p50_ms_nq1"] / lite["p50_ms_nq1"], 3)
    out["vecgrid_qps_vs_lite25"] = round(vg["qps_nq100"] / lite["qps_nq100"], 3)
    out["vecgrid_insert_vs_lite25"] = round(vg["insert_rows_per_s"] / lite["insert_rows_per_s"], 3)
    out["vecgrid_p50_ms_over_floor"] = round(vg["p50_ms_nq1"] - out["floor_pymilvus25"]["p50_ms_nq1"], 3)
    out["vecgrid_qps_vs_floor"] = round(vg["qps_nq100"] / out["floor_pymilvus25"]["qps_nq100"], 3)
    out["vecgrid_p50_vs_lite3"] = round(out["vecgrid_pymilvus3"]["p50_ms_nq1"] / out["lite3"]["p50_ms_nq1"], 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20,000 rows, nlist 128, fewer queries")
    ap.add_argument("--rows", type=int, help="rows (default 200,000; --quick 20,000)")
    ap.add_argument("--in-process", action="store_true",
                    help="vecgrid with one worker whose query node runs in the coordinator's process")
    args = ap.parse_args()
    print(json.dumps(run(args.quick, args.rows, args.in_process)))


if __name__ == "__main__":
    main()
