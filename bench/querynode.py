"""Search through a shard leader's gRPC endpoint vs faiss directly on the same vectors.

Two in-process QueryNodes (gRPC servers on free ports); one channel whose sealed segments are
split over both; the leader's delegator fans each Search (nq=100, k=10, FLAT L2) out to itself
and the worker and merges.  faiss ``IndexFlatL2`` over the same vectors is timed in the same run.

    .venv/bin/python bench/querynode.py [--quick] [--rows N] [--rounds R]

The last line is one JSON object: ``qps_ratio_nq100`` (leader QPS / faiss QPS),
``p50_ms_over_faiss`` and ``p99_ms_over_faiss`` (latency added over faiss, ms), plus the raw numbers.
Reuses the test helpers in ``tests/querynode_support.py`` (run from the repository root).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.querynode_support import DIM, NodeHarness, import_collection, load_request, search_request  # noqa: E402
from vecgrid.rpc.proto import data_coord_pb2, query_coord_pb2 as Q  # noqa: E402
from vecgrid.storage.layout import DataDir  # noqa: E402
from vecgrid.storage.wal import Wal  # noqa: E402

NQ, K = 100, 10


async def run(rows: int, rounds: int) -> dict:
    import faiss

    with tempfile.TemporaryDirectory() as tmp:
        ds = import_collection(Path(tmp), "bench", metric="L2", index="FLAT", n=rows, shards=1,
                               segment_rows=max(1, rows // 2), seed=7)  # one segment per node
        (channel,) = ds.channels
        writer = Wal(DataDir(ds.data_dir).wal_root).open_writer(channel)
        leader = await NodeHarness(ds.data_dir, 7).start()
        worker = await NodeHarness(ds.data_dir, 8).start()
        try:
            t = load_request(ds)
            watch = Q.WatchDmChannelsRequest(nodeID=7, collectionID=ds.collection_id, schema=t.schema,
                                             load_meta=t.load_meta, index_info_list=t.index_info_list, version=1,
                                             infos=[data_coord_pb2.VchannelInfo(collectionID=ds.collection_id,
                                                                                channelName=channel)])
            watch.base.properties["vecgrid.node_address.8"] = worker.node.address
            assert (await leader.call("WatchDmChannels", watch)).code == 0
            segs = ds.segment_ids
            await leader.load(ds, segs[::2], dst_node_id=7, need_transfer=True, version=1)
            await leader.load(ds, segs[1::2], dst_node_id=8, need_transfer=True, version=1)

            rng = np.random.default_rng(0)
            queries = [rng.standard_normal((NQ, DIM)).astype(np.float32) for _ in range(rounds)]
            reqs = [search_request(ds, q, K, from_shard_leader=False, scope=Q.All) for q in queries]
            for r in reqs[:3]:  # warm-up
                assert (await leader.call("Search", r)).status.code == 0
            lat = []
            start = time.perf_counter()
            for r in reqs:
                t0 = time.perf_counter()
                reply = await leader.call("Search", r)
                lat.append(time.perf_counter() - t0)
                assert reply.status.code == 0, reply.status
            grpc_total = time.perf_counter() - start

            index = faiss.IndexFlatL2(DIM)
            index.add(ds.vectors)
            index.search(queries[0], K)
            flat = []
            start = time.perf_counter()
            for q in queries:
                t0 = time.perf_counter()
                index.search(q, K)
                flat.append(time.perf_counter() - t0)
            faiss_total = time.perf_counter() - start
        finally:
            await leader.stop()
            await worker.stop()
            writer.close()
    p = lambda xs, q: float(np.percentile(np.asarray(xs) * 1000, q))  # noqa: E731
    return {
        "rows": rows, "rounds": rounds, "nq": NQ, "k": K,
        "leader_qps_nq100": rounds / grpc_total, "faiss_qps_nq100": rounds / faiss_total,
        "qps_ratio_nq100": (rounds / grpc_total) / (rounds / faiss_total),
        "p50_ms": p(lat, 50), "p99_ms": p(lat, 99), "faiss_p50_ms": p(flat, 50), "faiss_p99_ms": p(flat, 99),
        "p50_ms_over_faiss": p(lat, 50) - p(flat, 50), "p99_ms_over_faiss": p(lat, 99) - p(flat, 99),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small run (well under 2 minutes)")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=None)
    args = ap.parse_args()
    rows = args.rows or (20_000 if args.quick else 200_000)
    rounds = args.rounds or (30 if args.quick else 200)
    print(json.dumps(asyncio.run(run(rows, rounds))))


if __name__ == "__main__":
    main()
