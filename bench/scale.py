"""Scale on one machine: millions of vectors bulk-imported, loaded on two workers, searched.

    .venv/bin/python bench/scale.py [--quick] [--rows N] [--nlist N] [--index IVF_FLAT --index IVF_SQ8]

For each index type (default IVF_FLAT, then IVF_SQ8), as a user would, nothing placed by hand:

1. **faiss** (``faiss_build_s``): one process reads the Parquet file, trains the index on the first
   ``256 × nlist`` rows (what faiss itself samples) and adds every row, with faiss's default threads
   (every core) — the least building this index costs; it writes the index to a file for the floor;
2. **import** (``import_s``): ``vecgrid import`` of the same file, IVF index of the same nlist
   defined, sealed segments of 512 MB (the CLI's default);
3. **load** (``load_s``): ``vecgrid serve --workers 2``, then a REST ``load`` and polling until the
   collection is loaded — the query nodes build each segment's index from its vectors (Dask tasks,
   one core per worker); ``load_vs_faiss`` = ``load_s`` / ``faiss_build_s`` (issue 24: ≤ 1.2);
4. **memory**: the resident set of every vecgrid process once the segments stay where they are and
   the memory has settled for 15 s (``processes``: role, pid, RSS, shared pages, PSS), their sum against the index's own bytes (the faiss file's size):
   ``resident_vs_index`` (issue 24: ≤ 1.3); ``pss_vs_index`` counts each page shared by these
   processes once (proportional set size: the libraries every Python process maps);
5. **search**: nq = 1 p50 and nq = 100 queries/s through vecgrid's Python proxy (``proxy``: hits as
   dicts; ``proxy_result``: the merged ``SearchResultData`` vecgrid's Milvus API and REST pass on,
   read into lists) and against ``bench/grpc_floor.py`` serving the faiss index of step 1 (its client
   encodes each call's queries and reads the hits into lists), called in turn call by call
   (``proxy_p50_ms_over_grpc_floor`` ≤ 0.5 ms and ``proxy_qps_nq100_vs_grpc_floor`` ≥ 0.8).

Data: ``--rows`` × 128 clustered float32 vectors (default 10,000,000, 5.1 GB; ``--quick`` 1,000,000),
written in chunks (the bench never holds them all); nlist default 4096 (``--quick`` 1024), nprobe 16,
k = 10.  Memory at the default size: the floor and vecgrid hold one copy of the index each (~11 GB).
The last line is one JSON object with a result per index type.  Run from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import side_figures  # noqa: E402  (bench/ is first on sys.path)
from grpc_floor import client_search, hit_lists  # noqa: E402
from rest import Rest, start_serve, stop, until  # noqa: E402
from vecgrid.cluster.proxy.proxy import Proxy  # noqa: E402
from vecgrid.common.channels import aio_channel  # noqa: E402
from vecgrid.gpu import require_faiss  # noqa: E402
from vecgrid.proto import query_coord_pb2_grpc  # noqa: E402

DIM, K, NPROBE, NQ = 128, 10, 16, 100
CHUNK = 250_000
COLLECTION = "scale"
BIN = Path(sys.executable).parent
FACTORY = {"IVF_FLAT": "IVF{nlist},Flat", "IVF_SQ8": "IVF{nlist},SQ8"}


# --- data ------------------------------------------------------------------------------------------

def clustered_chunks(rows: int, seed: int = 1234, clusters: int = 1000, intrinsic: int = 32):
    """``rows`` clustered vectors, ``CHUNK`` at a time, the same for the same seed."""
    rs = np.random.default_rng(seed)
    centers = rs.standard_normal((clusters, intrinsic), dtype=np.float32) * 4
    proj = (rs.standard_normal((intrinsic, DIM), dtype=np.float32) / np.sqrt(intrinsic)).astype(np.float32)
    for i, lo in enumerate(range(0, rows, CHUNK)):
        r = np.random.default_rng((seed, i))
        n = min(CHUNK, rows - lo)
        x = centers[r.integers(0, clusters, n)] + r.standard_normal((n, intrinsic), dtype=np.float32)
        yield lo, np.ascontiguousarray(x @ proj, dtype=np.float32)


def write_parquet(path: str, rows: int) -> np.ndarray:
    """The vectors as Parquet (``id``, ``vector``); returns 1,000 queries drawn near them."""
    schema = pa.schema([("id", pa.int64()), ("vector", pa.list_(pa.float32(), DIM))])
    queries = None
    with pq.ParquetWriter(path, schema) as writer:
        for lo, x in clustered_chunks(rows):
            if queries is None:
                queries = x[:1000] + np.random.default_rng(9).standard_normal((min(1000, len(x)), DIM),
                                                                                dtype=np.float32) * 0.1
            writer.write_table(pa.table({"id": pa.array(np.arange(lo, lo + len(x), dtype=np.int64)),
                                         "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), DIM)},
                                        schema=schema))
    return queries


# --- the faiss side (its own process: its memory is measured and then freed) ----------------------

def faiss_build(parquet: str, out: str, index_type: str, nlist: int) -> dict:
    faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold

    started = time.perf_counter()
    index = faiss.index_factory(DIM, FACTORY[index_type].format(nlist=nlist))
    sample_rows = 256 * nlist
    sample, got = [], 0
    for batch in pq.ParquetFile(parquet).iter_batches(batch_size=CHUNK, columns=["vector"]):
        sample.append(vectors_of(batch))
        got += len(sample[-1])
        if got >= sample_rows:
            break
    index.train(np.concatenate(sample)[:sample_rows])
    del sample
    for batch in pq.ParquetFile(parquet).iter_batches(batch_size=CHUNK, columns=["vector"]):
        index.add(vectors_of(batch))
    build_s = time.perf_counter() - started
    rss = psutil.Process().memory_info().rss
    faiss.write_index(index, out)
    return {"faiss_build_s": round(build_s, 2), "faiss_rss_bytes": rss, "index_bytes": os.path.getsize(out)}


def vectors_of(batch: pa.RecordBatch) -> np.ndarray:
    column = batch.column(0)
    return column.values.to_numpy(zero_copy_only=False).reshape(-1, DIM)


# --- the vecgrid side -------------------------------------------------------------------------------

def processes(serve: subprocess.Popen) -> list[dict]:
    """Every process of ``vecgrid serve`` with its role and resident set."""
    root = psutil.Process(serve.pid)
    out = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            cmd = " ".join(proc.cmdline())
            mem = proc.memory_info()
            pss = proc.memory_full_info().pss
        except psutil.NoSuchProcess:
            continue
        role = ("coordinator (REST, gRPC, Dask scheduler)" if proc is root else
                "query node (Dask worker)" if "spawn_main" in cmd else "helper: " + cmd[:60])
        # file-backed and shared pages (libraries, mapped files) apart from the process's own memory
        out.append({"role": role, "pid": proc.pid, "rss_bytes": mem.rss, "shared_bytes": mem.shared, "pss_bytes": pss})
    return out


def segment_placement(rest: Rest) -> dict:
    per_node: dict[str, int] = {}
    segments = rest.records(f"/segments?collection={COLLECTION}")
    for s in segments:
        for node in s["nodes"]:
            per_node[str(node)] = per_node.get(str(node), 0) + 1
    return {"segments": len(segments), "segments_per_node": per_node}


async def time_sides(grpc_port: int, coord_port: int, queries: np.ndarray, rounds: int) -> dict:
    floor = query_coord_pb2_grpc.QueryNodeStub(aio_channel(f"127.0.0.1:{grpc_port}"))
    proxy = Proxy(f"127.0.0.1:{coord_port}")
    out: dict = {}
    try:
        for nq in (NQ, 1):
            batches = [queries[(i * nq) % len(queries):][:nq] for i in range(rounds)]

            async def grpc_side(i: int) -> None:
                hits = await client_search(floor, batches[i % rounds], K)
                assert len(hits) == nq and len(hits[0][0]) == K

            async def proxy_side(i: int) -> None:
                hits = await proxy.search(COLLECTION, batches[i % rounds], limit=K, search_params={"nprobe": NPROBE},
                                          consistency="Eventually")
                assert len(hits) == nq and len(hits[0]) == K

            async def proxy_result_side(i: int) -> None:
                hits = hit_lists(await proxy.search_result(COLLECTION, batches[i % rounds], limit=K,
                                                           search_params={"nprobe": NPROBE}, consistency="Eventually"))
                assert len(hits) == nq and len(hits[0][0]) == K

            out.update(await side_figures({"grpc_floor": grpc_side, "proxy": proxy_side,
                                           "proxy_result": proxy_result_side}, nq, rounds))
    finally:
        await proxy.close()
    return out


def run_case(tmp: str, parquet: str, queries: np.ndarray, index_type: str, nlist: int, rounds: int) -> dict:
    out: dict = {"index": index_type, "nlist": nlist}
    index_path = f"{tmp}/{index_type}.faiss"
    built = subprocess.run([sys.executable, __file__, "--faiss-build", parquet, index_path, index_type, str(nlist)],
                           check=True, capture_output=True, text=True)
    out.update(json.loads(built.stdout.strip().splitlines()[-1]))

    data_dir = f"{tmp}/data-{index_type}"
    t0 = time.monotonic()
    subprocess.run([str(BIN / "vecgrid"), "import", parquet, "--collection", COLLECTION, "--primary-key", "id",
                    "--index", index_type, "--index-params", json.dumps({"nlist": nlist}), "--data-dir", data_dir],
                   check=True, stdout=subprocess.DEVNULL)
    out["import_s"] = round(time.monotonic() - t0, 2)
    procs: list[subprocess.Popen] = []
    try:
        env = dict(os.environ, VECGRID_DATACOORD_AUTO_COMPACTION="false")  # the imported segments as they are
        served = start_serve(data_dir, "--workers", "2", env=env)
        serve = served.proc
        procs.append(serve)
        http_port, coord_port = served.http_port, served.coord_port
        rest = Rest(http_port)
        t0 = time.monotonic()
        rest.call("POST", "/collections", {"name": COLLECTION}, {"X-Service-Method": "load"})

        def loaded() -> bool:
            try:
                return any(c["name"] == COLLECTION and c.get("loadPercent") == 100
                           for c in rest.records("/collections"))
            except (OSError, http.client.HTTPException):
                rest.conn.close()
                return False
        until("loaded", loaded, 6 * 3600, interval_s=1.0)
        out["load_s"] = round(time.monotonic() - t0, 2)
        out["load_vs_faiss"] = round(out["load_s"] / out["faiss_build_s"], 3)

        # the steady state: the placement left alone by the balancer and the memory settled (a node
        # that built an index at load writes it out afterwards: a transient copy of the index)
        last, since, deadline = None, time.monotonic(), time.monotonic() + 1800
        while time.monotonic() - since < 15 and time.monotonic() < deadline:
            placed, procs_now = segment_placement(rest), processes(serve)
            resident = sum(p["rss_bytes"] for p in procs_now)
            if last is None or placed != last[0] or abs(resident - last[1]) > 0.02 * last[1]:
                last, since = (placed, resident), time.monotonic()
            time.sleep(1)
        out.update(last[0])
        out["processes"] = procs_now
        out["resident_bytes"] = sum(p["rss_bytes"] for p in procs_now)
        out["resident_vs_index"] = round(out["resident_bytes"] / out["index_bytes"], 3)
        # the same processes with each shared page counted once (libraries are mapped in all of them)
        out["pss_bytes"] = sum(p["pss_bytes"] for p in procs_now)
        out["pss_vs_index"] = round(out["pss_bytes"] / out["index_bytes"], 3)

        floor = subprocess.Popen([sys.executable, str(Path(__file__).with_name("grpc_floor.py")), index_path,
                                  str(NPROBE)], stdout=subprocess.PIPE, text=True)
        procs.append(floor)
        grpc_port = int(floor.stdout.readline())
        out.update(asyncio.run(time_sides(grpc_port, coord_port, queries, rounds)))
    finally:
        stop(procs, timeout_s=120)
    out["proxy_p50_ms_over_grpc_floor"] = round(out["proxy_p50_ms_nq1"] - out["grpc_floor_p50_ms_nq1"], 3)
    out["proxy_qps_nq100_vs_grpc_floor"] = round(out["proxy_qps_nq100"] / out["grpc_floor_qps_nq100"], 3)
    out["proxy_result_p50_ms_over_grpc_floor"] = round(out["proxy_result_p50_ms_nq1"] - out["grpc_floor_p50_ms_nq1"],
                                                       3)
    out["proxy_result_qps_nq100_vs_grpc_floor"] = round(out["proxy_result_qps_nq100"] / out["grpc_floor_qps_nq100"],
                                                        3)
    return out


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--faiss-build":
        print(json.dumps(faiss_build(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1,000,000 rows, nlist 1024, fewer rounds")
    ap.add_argument("--rows", type=int, help="rows (default 10,000,000; --quick 1,000,000)")
    ap.add_argument("--nlist", type=int, help="IVF lists (default 4096; --quick 1024)")
    ap.add_argument("--index", action="append", choices=sorted(FACTORY), help="index types (default both)")
    ap.add_argument("--rounds", type=int, help="rounds per case (default 40; --quick 20; nq=1 runs five times as many)")
    args = ap.parse_args()
    rows = args.rows or (1_000_000 if args.quick else 10_000_000)
    nlist = args.nlist or (1024 if args.quick else 4096)
    rounds = args.rounds or (20 if args.quick else 40)
    result: dict = {"rows": rows, "dim": DIM, "nprobe": NPROBE, "k": K, "cores": psutil.cpu_count(), "cases": []}
    with tempfile.TemporaryDirectory(dir=os.environ.get("VECGRID_BENCH_TMP")) as tmp:
        parquet = f"{tmp}/vectors.parquet"
        t0 = time.monotonic()
        queries = write_parquet(parquet, rows)
        result["write_parquet_s"] = round(time.monotonic() - t0, 2)
        for index_type in args.index or ["IVF_FLAT", "IVF_SQ8"]:
            case = run_case(tmp, parquet, queries, index_type, nlist, rounds)
            print(json.dumps(case), file=sys.stderr, flush=True)
            result["cases"].append(case)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
