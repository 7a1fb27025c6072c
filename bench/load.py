"""Load a collection through the coordinator vs reading and indexing the same segments directly.

Data: ``rows`` × 128 clustered float32 vectors (``vecgrid.gpu.datasets.SyntheticDataset``) with
an int64 primary key, bulk-imported into 2 shards of sealed segments (default 1,000,000 rows in
8 segments, 4 per shard; ``--quick``: 100,000 rows in 4), with an IVF_FLAT index
defined (nlist 1024; ``--quick`` 256) and no index files, so loading builds the index.

* **cluster** (``load_seconds``): an embedded cluster of 2 Dask worker processes (the QueryNodes)
  and the coordinator; this process is the client.  Timed from sending ``LoadCollection``
  (replica_number 1) until ``ShowCollections`` reports 100 % (polled every 50 ms); the
  collection is released afterwards.  Cluster start-up is not timed: the workers are up and
  registered with the coordinator before the clock starts.
* **direct** (``direct_seconds``): what the two workers have to do, without a coordinator,
  Dask or RPCs — two processes, each given half of the segments (balanced by rows), each
  reading its segments' files with ``vecgrid.storage.segment_files.read_segment`` (checksums
  verified), decoding primary keys and vectors, building the index the collection defines
  with ``vecgrid.gpu.build.build_index`` (the QueryNode loader's call, on the GPU when there
  is one) and loading it with ``vecgrid.gpu.loaded_segment.load_segment``.  The processes get the
  environment Dask's nanny gives its workers (``OMP_NUM_THREADS=1`` etc. by default), so both
  sides compute with the same threads.  Both import their libraries and open the catalog
  first, then start together; the time is from the start until both are done.  It runs
  before the cluster, so both sides read from the same warm page cache.

``load_ratio`` = ``load_seconds`` / ``direct_seconds``; target <= 1.3.  The last line printed
is one JSON object with these figures.  ``--quick`` finishes in under two minutes on a
2-core machine; ``--direct-only`` measures only the direct side.

    .venv/bin/python bench/load.py [--quick] [--rows N] [--segment-rows N] [--index IVF_FLAT] [--nlist N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing as mp
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vecgrid.gpu.datasets import SyntheticDataset  # noqa: E402
from vecgrid.cluster.datanode.bulk_import import ImportOptions, bulk_import  # noqa: E402
from vecgrid.storage.layout import DataDir  # noqa: E402

DIM = 128
WORKERS = 2
SHARDS = 2
POLL_S = 0.05
TARGET_RATIO = 1.3
COLLECTION = "bench_load"
BENCH_TSO_KEY = "tso/bench-load"  # its own oracle keys: the coordinator owns the main one


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- data ---------------------------------------------------------------------------------------

def make_collection(root: Path, rows: int, segment_rows: int, index: str, nlist: int) -> dict:
    """Bulk-import ``rows`` clustered vectors; returns the import summary."""
    ds = SyntheticDataset(d=DIM, nb=rows, nq=0, seed=20240)
    src = root / "input.parquet"
    table = pa.table({"pk": np.arange(rows, dtype=np.int64),
                      "vec": pa.FixedSizeListArray.from_arrays(pa.array(ds.xb.reshape(-1)), DIM)})
    pq.write_table(table, src)
    del table, ds
    params = {"nlist": nlist} if nlist else {}
    summary = bulk_import(str(root / "data"), [str(src)], ImportOptions(
        collection=COLLECTION, primary_key="pk", metric="L2", index=index, index_params=params,
        shards=SHARDS, segment_rows=segment_rows))
    src.unlink()
    return summary


def split_by_rows(segments: list[dict], parts: int) -> list[list[int]]:
    """Segment ids in ``parts`` groups of about equal rows (largest first onto the lightest)."""
    groups: list[list[int]] = [[] for _ in range(parts)]
    load = [0] * parts
    for s in sorted(segments, key=lambda s: (-s["num_rows"], s["segment_id"])):
        i = min(range(parts), key=lambda j: (load[j], j))
        groups[i].append(s["segment_id"])
        load[i] += s["num_rows"]
    return groups


# --- direct side ----------------------------------------------------------------------------------

def _direct_worker(data_dir: str, collection_id: int, segment_ids: list[int], barrier, results, rank: int) -> None:
    """One of the two direct processes: set up, wait for the start, load its segments, report."""
    from vecgrid.gpu import build, require_faiss
    from vecgrid.gpu.device import default_manager
    from vecgrid.gpu.loaded_segment import load_segment
    from vecgrid.proto import schema_pb2
    from vecgrid.storage import segment_files

    require_faiss()
    data = DataDir(data_dir)
    store = data.open_store()
    # one oracle key per process: two oracles opening one key at once conflict (and fail the start)
    catalog = data.open_catalog(store, tso_key=f"{BENCH_TSO_KEY}-{rank}")
    coll = catalog.get_collection(collection_id)
    fields = list(coll.schema.fields)
    pk = next(f for f in fields if f.is_primary_key)
    vector_fields = [f for f in fields if f.data_type == schema_pb2.FloatVector]
    scalars = [f for f in fields if not f.is_primary_key and f.data_type != schema_pb2.FloatVector]
    indexes = {i.fieldID: i for i in catalog.describe_index(collection_id)}
    manager = default_manager()
    loaded = []
    try:
        barrier.wait()
        t0 = time.perf_counter()
        rows, built_on, placement = 0, set(), set()
        for sid in segment_ids:
            record = catalog.segment_files_record(sid)
            table = segment_files.read_segment(record)
            pks = table.column(pk.name).to_numpy()
            ts = table.column("Timestamp").to_numpy() if "Timestamp" in table.column_names else None
            columns = {f.fieldID: table.column(f.name).to_numpy() for f in scalars}
            for f in vector_fields:
                index_type, metric, params = build.parse_index_params(list(indexes[f.fieldID].index_params))
                stored = record.indexes.get(f.fieldID)
                if stored is not None:  # an index file was built before the load: read it
                    blob = segment_files.get_file(record.root, stored)
                else:
                    vec = table.column(f.name).combine_chunks().flatten().to_numpy()
                    vectors = np.ascontiguousarray(vec, dtype=np.float32).reshape(len(pks), -1)
                    built = build.build_index(vectors, index_type, metric, params, manager=manager)
                    built_on.add(built.header.get("built_on", ""))
                    blob = built.to_bytes()
                seg = load_segment(blob, pks, columns=columns, timestamps=ts, schema=coll.schema, segment_id=sid,
                                   field_id=f.fieldID, pk_field_id=pk.fieldID, manager=manager,
                                   key=("bench-load", sid, f.fieldID))
                placement.add(seg.placement_reason or seg.device.name)
                loaded.append(seg)
            rows += len(pks)
            del table
        seconds = time.perf_counter() - t0
        results.put({"segments": len(segment_ids), "rows": rows, "seconds": seconds,
                     "built_on": sorted(built_on), "placement": sorted(placement)})
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        results.put({"error": f"{type(e).__name__}: {e}"})
        raise
    finally:
        for seg in loaded:
            seg.release()
        store.close()


def worker_environ() -> dict[str, str]:
    """The environment variables Dask's nanny sets for a worker process before it starts
    (``OMP_NUM_THREADS=1`` and friends by default), so the direct processes compute with the
    same threads as the QueryNode workers."""
    import dask.config
    import distributed  # noqa: F401 - registers the distributed.* config defaults

    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {})
    env.update(dask.config.get("distributed.nanny.environ", {}) or {})
    return {k: str(v) for k, v in env.items()}


def direct_load(data_dir: str, collection_id: int, groups: list[list[int]], timeout: float) -> dict:
    ctx = mp.get_context("spawn")  # fresh processes, as Dask's worker processes are
    barrier = ctx.Barrier(len(groups) + 1)
    results = ctx.Queue()
    procs = [ctx.Process(target=_direct_worker, args=(data_dir, collection_id, g, barrier, results, rank),
                         daemon=True)
             for rank, g in enumerate(groups)]
    env = worker_environ()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # inherited by the spawned processes
    try:
        for p in procs:
            p.start()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        try:
            barrier.wait(timeout=120)  # both processes are set up
        except threading.BrokenBarrierError:
            raise SystemExit("the direct processes did not start (see their traceback above)") from None
        t0 = time.perf_counter()
        reports = [results.get(timeout=timeout) for _ in procs]
        seconds = time.perf_counter() - t0
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    errors = [r["error"] for r in reports if "error" in r]
    if errors:
        raise SystemExit(f"direct load failed: {errors[0]}")
    return {"direct_seconds": seconds, "direct_worker_seconds": [round(r["seconds"], 3) for r in reports],
            "direct_environ": env,
            "built_on": sorted({b for r in reports for b in r["built_on"]}),
            "placement": sorted({p for r in reports for p in r["placement"]})}


# --- cluster side ---------------------------------------------------------------------------------

def _failed(what: str, status) -> SystemExit:
    return SystemExit(f"{what} failed: Status code {status.code} (error_code {status.error_code}): "
                      f"{status.reason or '(no reason)'}")


async def cluster_load(data_dir: str, collection_id: int, timeout: float) -> dict:
    import grpc

    from tests.conftest import embedded_settings
    from vecgrid.deploy import EmbeddedCluster
    from vecgrid.proto import query_coord_pb2, query_coord_pb2_grpc

    cluster = EmbeddedCluster(embedded_settings(Path(data_dir), workers=WORKERS))
    t_start = time.perf_counter()
    await cluster.start()
    log(f"cluster up in {time.perf_counter() - t_start:.1f} s; query nodes {cluster.addresses.query_nodes}")
    try:
        async with grpc.aio.insecure_channel(cluster.addresses.grpc) as channel:
            stub = query_coord_pb2_grpc.QueryCoordStub(channel)
            await _wait_for_nodes(stub, query_coord_pb2, WORKERS, 60)

            t0 = time.perf_counter()
            status = await stub.LoadCollection(
                query_coord_pb2.LoadCollectionRequest(collectionID=collection_id, replica_number=1)
            )
            if status.code != 0 or status.error_code != 0:
                raise _failed("LoadCollection", status)
            percent, progress = 0, []
            while True:
                reply = await stub.ShowCollections(
                    query_coord_pb2.ShowCollectionsRequest(collectionIDs=[collection_id])
                )
                if reply.status.code != 0:
                    raise _failed("ShowCollections", reply.status)
                percent = reply.inMemory_percentages[0] if reply.inMemory_percentages else 0
                if not progress or progress[-1][1] != percent:
                    progress.append((round(time.perf_counter() - t0, 2), percent))
                if percent >= 100:
                    break
                if time.perf_counter() - t0 > timeout:
                    raise SystemExit(f"collection not loaded after {timeout:.0f} s ({percent} % in memory)")
                await asyncio.sleep(POLL_S)
            seconds = time.perf_counter() - t0

            per_node = await _segments_per_node(stub, query_coord_pb2)
            status = await stub.ReleaseCollection(query_coord_pb2.ReleaseCollectionRequest(collectionID=collection_id))
            if status.code != 0:
                log(f"warning: ReleaseCollection answered code {status.code}: {status.reason}")
    finally:
        await cluster.stop()
    return {"load_seconds": seconds, "segments_per_node": per_node, "load_progress": progress}


async def _wait_for_nodes(stub, query_coord_pb2, count: int, timeout: float) -> None:
    """Until the coordinator lists ``count`` Normal QueryNodes (a load before that would find
    too few nodes in the resource group)."""
    deadline = time.perf_counter() + timeout
    while True:
        reply = await stub.ListQueryNode(query_coord_pb2.ListQueryNodeRequest())
        normal = [n for n in reply.nodeInfos if n.state == "Normal"]
        if reply.status.code == 0 and len(normal) >= count:
            return
        if time.perf_counter() > deadline:
            raise SystemExit(f"the coordinator lists {len(normal)} Normal query nodes after {timeout:.0f} s, "
                             f"wanted {count} (status code {reply.status.code})")
        await asyncio.sleep(0.2)


async def _segments_per_node(stub, query_coord_pb2) -> dict[str, int]:
    out: dict[str, int] = {}
    nodes = await stub.ListQueryNode(query_coord_pb2.ListQueryNodeRequest())
    for n in nodes.nodeInfos:
        dist = await stub.GetQueryNodeDistribution(query_coord_pb2.GetQueryNodeDistributionRequest(nodeID=n.ID))
        if dist.status.code == 0:
            out[str(n.ID)] = len(dist.sealed_segmentIDs)
    return out


# --- main -----------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100,000 rows (under two minutes)")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--segment-rows", type=int, default=None, help="rows per sealed segment")
    ap.add_argument("--index", default="IVF_FLAT", help="index type the collection defines")
    ap.add_argument("--nlist", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=None, help="seconds to wait for each side's load")
    ap.add_argument("--direct-only", action="store_true", help="measure only the direct side")
    args = ap.parse_args()
    rows = args.rows or (100_000 if args.quick else 1_000_000)
    per_shard = 2 if args.quick else 4  # sealed segments per shard; 1 % slack for the hash split
    segment_rows = args.segment_rows or max(1, math.ceil(rows / (SHARDS * per_shard) * 1.01))
    ivf = "IVF" in args.index.upper()
    nlist = (args.nlist or (256 if args.quick else 1024)) if ivf else 0
    timeout = args.timeout or (90.0 if args.quick else 1800.0)

    result: dict = {"rows": rows, "dim": DIM, "workers": WORKERS, "index": args.index,
                    **({"nlist": nlist} if ivf else {})}
    with tempfile.TemporaryDirectory(prefix="vecgrid-bench-load-") as tmp:
        t = time.perf_counter()
        summary = make_collection(Path(tmp), rows, segment_rows, args.index, nlist)
        data_dir = str(Path(tmp) / "data")
        cid = summary["collection_id"]
        result["segments"] = len(summary["segments"])
        log(f"imported {summary['num_rows']:,} rows into {result['segments']} segments in "
            f"{time.perf_counter() - t:.1f} s")

        groups = split_by_rows(summary["segments"], WORKERS)
        direct = direct_load(data_dir, cid, groups, timeout)
        result.update({k: (round(v, 3) if isinstance(v, float) else v) for k, v in direct.items()})
        log(f"direct: {direct['direct_seconds']:.2f} s (per process {direct['direct_worker_seconds']}, "
            f"built on {direct['built_on']}, placed {direct['placement']})")
        if not args.direct_only:
            loaded = asyncio.run(cluster_load(data_dir, cid, timeout))
            result["load_seconds"] = round(loaded["load_seconds"], 3)
            result["segments_per_node"] = loaded["segments_per_node"]
            result["load_progress"] = loaded["load_progress"]  # (seconds, %) at each change
            result["load_ratio"] = round(loaded["load_seconds"] / direct["direct_seconds"], 3)
            result["target_ratio"] = TARGET_RATIO
            log(f"cluster: {loaded['load_seconds']:.2f} s (ratio {result['load_ratio']:.2f}, "
                f"target <= {TARGET_RATIO})")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
