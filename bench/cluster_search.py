"""Search speed as a user gets it: bulk import, insert, load, wait, search; the system places the data.

    .venv/bin/python bench/cluster_search.py [--quick] [--balancer NAME] [--rows N] [--segments N] [--inserted N]
                                             [--workers N] [--in-process]

What it does, as a user would (nothing is placed by hand):

1. writes ``--rows`` × 128 float32 vectors (default 200,000; ``--quick`` 50,000) to a Parquet file
   and bulk-imports it with ``vecgrid import`` (one shard, IVF_FLAT nlist 1024), which cuts the
   segments as it does for any user (``datacoord.segment_max_rows``: one segment up to a million
   rows).  ``--segments N`` cuts N segments instead and turns automatic compaction off, so that
   every run places the same N segments (the compactor would merge such small ones, in one run
   during the load and in another after it);
2. starts ``vecgrid serve --workers 2`` (``--workers``) on that data dir (``--balancer`` sets
   ``querycoord.balancer``; default: the configured default, ``LocalityAwareBalancer``; ``--in-process``:
   one worker, its query node in the coordinator's process, ``dask.in_process``);
3. inserts 1,000 more rows through REST (``--inserted``), loads the collection through REST and waits until it is
   loaded and its segments stay where they are for 7 s (the balance checker runs every 3 s);
4. reports where the segments landed: ``segments_on_leader`` of ``segments``, per node;
5. times k = 10, nprobe 8 searches at nq = 1 (p50) and nq = 100 (queries/s), the sides called in
   turn call by call in a new shuffled order every round, all from this process:

   * ``faiss``: an IVF_FLAT index over the same rows (same nlist) in this process: trained on the
     imported vectors, as vecgrid's segment is, with the inserted rows added to its lists (the
     floors below serve this index);
   * ``faiss_segments``: one such index per imported segment's rows, searched in turn and merged
     in this process — the least any system that indexes per segment (vecgrid, Milvus) pays for
     the collection as imported; at nq = 100 four indexes cost about twice one (four coarse
     quantizers of nlist centroids each, four times the lists to visit), which bounds
     ``proxy_qps_nq100_vs_grpc_floor`` with ``--segments 4``;
   * ``grpc_floor``: ``bench/grpc_floor.py``, a bare Python gRPC server in its own process serving
     that index (the least any Python gRPC search server costs), its client encoding each call's
     queries and reading every query's ids and distances back as lists (the least any client does);
   * ``proxy``: vecgrid's :class:`~vecgrid.cluster.proxy.proxy.Proxy` in this process (as the CLI and
     a Python application use it) against the coordinator's gRPC port (Eventually consistency); its
     hits are dicts;
   * ``proxy_result``: the same ``Proxy`` answering ``search_result`` (the merged
     ``SearchResultData``, what vecgrid's Milvus API and REST pass on), read as the floor's client
     reads its reply;
   * ``http_floor``: ``bench/http_floor.py``, a bare Tornado JSON handler serving that index;
   * ``rest``: the REST ``search`` custom method, one keep-alive connection, orjson bodies; the
     vectors, for both HTTP sides, written as a client writes a float32 array's values (``JSON.
     stringify`` or Python's ``json``: doubles, 17 significant digits);
   * ``rest_b64``: the same with the queries as ``vectors_b64`` (base64 float32).

Every side loads faiss as vecgrid does (``vecgrid.gpu.require_faiss``: OpenBLAS kernels named for
this CPU, the same BLAS threshold; see ``vecgrid/gpu/blas.py``), so all compute with the same BLAS.

The last line is one JSON object: the placement, the p50s and QPS of every side, and
``proxy_p50_ms_over_grpc_floor``, ``proxy_qps_nq100_vs_grpc_floor`` (and ``proxy_result_…``),
``rest_p50_ms_over_http_floor`` and ``rest_qps_nq100_vs_http_floor`` (issue 24's targets: ≤ 0.5 ms,
≥ 0.8, ≤ 1.5 ms, ≥ 0.7), and ``grpc_hop_p50_ms`` (the gRPC floor's p50 less faiss's: one bare hop, which a
REST search pays on top of the HTTP floor whenever its leader runs in another process).
Run from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import side_figures  # noqa: E402  (bench/ is first on sys.path)
from grpc_floor import client_search, hit_lists  # noqa: E402
from rest import Rest, start_serve, stop, until  # noqa: E402
from vecgrid.cluster.proxy.proxy import Proxy  # noqa: E402
from vecgrid.gpu.build import build_index_file, read_index_file, serialize_index  # noqa: E402
from vecgrid.gpu import require_faiss  # noqa: E402
from vecgrid.proto import query_coord_pb2_grpc  # noqa: E402
from vecgrid.common.channels import aio_channel  # noqa: E402

DIM, K, NLIST, NPROBE, NQ = 128, 10, 1024, 8, 100
INSERTED = 1_000   # rows inserted through REST after the import (--inserted), still growing when searched
INSERT_BATCH = 5_000
COLLECTION = "bench"
BIN = Path(sys.executable).parent


def placement(rest: Rest) -> dict:
    """Where the loaded segments are, against their channel's leader (one replica)."""
    leaders = {ch["name"]: ch["leaders"][0]["node"] for ch in rest.records(f"/channels?collection={COLLECTION}")
               if ch["leaders"]}
    segments = rest.records(f"/segments?collection={COLLECTION}")
    per_node: dict[str, int] = {}
    on_leader = 0
    for s in segments:
        for node in s["nodes"]:
            per_node[str(node)] = per_node.get(str(node), 0) + 1
        on_leader += int(leaders.get(s["channel"]) in s["nodes"])
    return {"segments": len(segments), "segments_on_leader": on_leader, "segments_per_node": per_node,
            "leaders": leaders}


def stable_placement(rest: Rest, quiet_s: float = 7.0, timeout_s: float = 120.0) -> dict:
    """The placement once it has not changed for ``quiet_s`` (balance moves after a load are part of it)."""
    deadline = time.monotonic() + timeout_s
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        now = placement(rest)
        key = json.dumps(now, sort_keys=True)
        if key != last:
            last, since = key, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return now
        time.sleep(0.5)
    raise TimeoutError("the segments kept moving")


def start_floor(script: str, index_path: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name(script)), index_path, str(NPROBE)],
                            stdout=subprocess.PIPE, text=True)
    return proc, int(proc.stdout.readline())


def merged_search(indexes: list, xq: np.ndarray, k: int, params) -> np.ndarray:
    """The ``k`` nearest over several indexes whose ids are local to each (offsets added): their ids."""
    parts = [index.search(xq, k, params=params) for index in indexes]
    distances = np.hstack([d for d, _ in parts])
    ids = np.hstack([i + offset for (_, i), offset in zip(parts, np.cumsum([0] + [x.ntotal for x in indexes[:-1]]))])
    best = np.argpartition(distances, k - 1, axis=1)[:, :k]
    return np.take_along_axis(ids, best, axis=1)


async def time_sides(rest: Rest, floor_http: Rest, grpc_port: int, coord_port: int, index, segment_indexes: list,
                     queries) -> dict:
    """p50/p99 at nq=1 and queries/s at nq=100 of every side, called in turn (see the module doc)."""
    faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold

    params = faiss.SearchParametersIVF(nprobe=NPROBE)
    floor_stub = query_coord_pb2_grpc.QueryNodeStub(aio_channel(f"127.0.0.1:{grpc_port}"))
    proxy = Proxy(f"127.0.0.1:{coord_port}")
    rounds = len(queries)
    out: dict = {}
    try:
        for nq in (NQ, 1):
            as_json = [q[:nq].tolist() for q in queries]   # float32 values as doubles, as clients send them
            b64 = [base64.b64encode(q[:nq].astype("<f4").tobytes()).decode() for q in queries]

            async def faiss_side(i: int) -> None:
                index.search(queries[i % rounds][:nq], K, params=params)

            async def faiss_segments_side(i: int) -> None:
                merged_search(segment_indexes, queries[i % rounds][:nq], K, params)

            async def grpc_side(i: int) -> None:
                hits = await client_search(floor_stub, queries[i % rounds][:nq], K)
                assert len(hits) == nq and len(hits[0][0]) == K

            async def proxy_side(i: int) -> None:
                hits = await proxy.search(COLLECTION, queries[i % rounds][:nq], limit=K,
                                          search_params={"nprobe": NPROBE}, consistency="Eventually")
                assert len(hits) == nq and len(hits[0]) == K

            async def proxy_result_side(i: int) -> None:
                srd = await proxy.search_result(COLLECTION, queries[i % rounds][:nq], limit=K,
                                                search_params={"nprobe": NPROBE}, consistency="Eventually")
                hits = hit_lists(srd)
                assert len(hits) == nq and len(hits[0][0]) == K

            async def http_side(i: int) -> None:
                hits = floor_http.call("POST", "/search", {"vectors": as_json[i % rounds], "limit": K})
                assert len(hits) == nq

            def rest_search(query: dict) -> None:
                hits = rest.call("POST", f"/collections/{COLLECTION}/entities",
                                 {**query, "limit": K, "params": {"nprobe": NPROBE}, "consistency": "Eventually"},
                                 {"X-Service-Method": "search"})
                assert len(hits) == nq and len(hits[0]) == K

            async def rest_side(i: int) -> None:
                rest_search({"vectors": as_json[i % rounds]})

            async def rest_b64_side(i: int) -> None:
                rest_search({"vectors_b64": b64[i % rounds]})

            sides = {"faiss": faiss_side, "faiss_segments": faiss_segments_side, "grpc_floor": grpc_side,
                     "proxy": proxy_side, "proxy_result": proxy_result_side, "http_floor": http_side,
                     "rest": rest_side, "rest_b64": rest_b64_side}
            out.update(await side_figures(sides, nq, rounds))
    finally:
        await proxy.close()
    return out


def run(rows: int, rounds: int, balancer: str | None, workers: int = 2, in_process: bool = False,
        segments: int | None = None, inserted: int = INSERTED) -> dict:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((rows, DIM), dtype=np.float32)
    extra = rng.standard_normal((inserted, DIM), dtype=np.float32)
    queries = [rng.standard_normal((NQ, DIM), dtype=np.float32) for _ in range(rounds)]
    nlist = min(NLIST, max(1, rows // 39))
    out: dict = {"rows": rows, "inserted_rows": inserted, "dim": DIM, "nlist": nlist, "nprobe": NPROBE, "k": K}
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            table = pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)),
                              "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM)})
            pq.write_table(table, f"{tmp}/vectors.parquet")
            cut = ["--segment-rows", str(-(-rows // segments))] if segments else []
            subprocess.run([str(BIN / "vecgrid"), "import", f"{tmp}/vectors.parquet", "--collection", COLLECTION,
                            "--primary-key", "id", "--index", "IVF_FLAT", "--index-params",
                            json.dumps({"nlist": nlist}), *cut, "--data-dir", f"{tmp}/data"],
                           check=True, stdout=subprocess.DEVNULL)
            env = dict(os.environ)
            if segments:
                # no automatic compaction: it may merge the small segments during one run's load and not another's
                env["VECGRID_DATACOORD_AUTO_COMPACTION"] = "false"
            if balancer:
                env["VECGRID_QUERYCOORD_BALANCER"] = balancer
            if in_process:
                env["VECGRID_DASK_IN_PROCESS"] = "true"
            served = start_serve(f"{tmp}/data", "--workers", str(workers), env=env)
            procs.append(served.proc)
            coord_port = served.coord_port
            rest = Rest(served.http_port)
            for lo in range(0, inserted, INSERT_BATCH):
                rest.call("POST", f"/collections/{COLLECTION}/entities",
                          [{"id": rows + i, "vector": extra[i]} for i in range(lo, min(lo + INSERT_BATCH, inserted))])
            t0 = time.monotonic()
            rest.call("POST", "/collections", {"name": COLLECTION, "wait": True}, {"X-Service-Method": "load"})
            until("loaded", lambda: any(c["name"] == COLLECTION and c.get("loadPercent") == 100
                                        for c in rest.records("/collections")), 300)
            out["load_s"] = round(time.monotonic() - t0, 2)
            out.update(stable_placement(rest))

            # the floors serve the rows the collection holds: the imported ones, trained on as vecgrid trains
            # its segment, and the inserted ones added to the same lists (ids follow on, as inserted)
            index, header = read_index_file(build_index_file(vectors, "IVF_FLAT", "L2", {"nlist": nlist},
                                                             use_gpu=False))
            if inserted:
                index.add(extra)
            index_path = f"{tmp}/floor.index"
            Path(index_path).write_bytes(serialize_index(index, header))
            per_segment = -(-rows // out["segments"])   # as imported: equal cuts
            segment_indexes = [read_index_file(build_index_file(vectors[lo:lo + per_segment], "IVF_FLAT", "L2",
                                                                {"nlist": nlist}, use_gpu=False))[0]
                               for lo in range(0, rows, per_segment)]
            grpc_proc, grpc_port = start_floor("grpc_floor.py", index_path)
            procs.append(grpc_proc)
            http_proc, http_floor_port = start_floor("http_floor.py", index_path)
            procs.append(http_proc)
            floor_http = Rest(http_floor_port)

            out.update(asyncio.run(time_sides(rest, floor_http, grpc_port, coord_port, index, segment_indexes, queries)))
        finally:
            stop(procs)
    out["proxy_p50_ms_over_grpc_floor"] = round(out["proxy_p50_ms_nq1"] - out["grpc_floor_p50_ms_nq1"], 3)
    out["proxy_qps_nq100_vs_grpc_floor"] = round(out["proxy_qps_nq100"] / out["grpc_floor_qps_nq100"], 3)
    out["proxy_result_p50_ms_over_grpc_floor"] = round(out["proxy_result_p50_ms_nq1"] - out["grpc_floor_p50_ms_nq1"],
                                                       3)
    out["proxy_result_qps_nq100_vs_grpc_floor"] = round(out["proxy_result_qps_nq100"] / out["grpc_floor_qps_nq100"],
                                                        3)
    out["faiss_segments_qps_nq100_vs_grpc_floor"] = round(out["faiss_segments_qps_nq100"] / out["grpc_floor_qps_nq100"],
                                                          3)
    out["rest_p50_ms_over_http_floor"] = round(out["rest_p50_ms_nq1"] - out["http_floor_p50_ms_nq1"], 3)
    # the least a REST search pays over the HTTP floor while its leader is another process: one bare gRPC hop
    out["grpc_hop_p50_ms"] = round(out["grpc_floor_p50_ms_nq1"] - out["faiss_p50_ms_nq1"], 3)
    out["rest_qps_nq100_vs_http_floor"] = round(out["rest_qps_nq100"] / out["http_floor_qps_nq100"], 3)
    out["rest_b64_qps_nq100_vs_http_floor"] = round(out["rest_b64_qps_nq100"] / out["http_floor_qps_nq100"], 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="50,000 rows and fewer rounds (a few minutes)")
    ap.add_argument("--rows", type=int, help="rows to import (default 200,000; --quick 50,000)")
    ap.add_argument("--rounds", type=int, help="rounds per case (default 60; --quick 20; nq=1 runs five times as many)")
    ap.add_argument("--segments", type=int,
                    help="import this many equal segments, automatic compaction off (default: as vecgrid import cuts)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes of vecgrid serve (default 2)")
    ap.add_argument("--inserted", type=int, default=INSERTED,
                    help=f"rows inserted through REST after the import, still growing (default {INSERTED:,})")
    ap.add_argument("--balancer", help="querycoord.balancer of the cluster (default: vecgrid's default)")
    ap.add_argument("--in-process", action="store_true",
                    help="one worker whose query node runs in the coordinator's process (dask.in_process)")
    args = ap.parse_args()
    if args.in_process:
        args.workers = 1
    rows = args.rows or (50_000 if args.quick else 200_000)
    rounds = args.rounds or (20 if args.quick else 60)
    result = run(rows, rounds, args.balancer, args.workers, args.in_process, args.segments, args.inserted)
    result["balancer"] = args.balancer or "default"
    result["workers"] = args.workers
    result["in_process"] = args.in_process
    result["segments_asked"] = args.segments or "as imported"
    print(json.dumps(result))


if __name__ == "__main__":
    main()
