"""Search through a shard leader's gRPC endpoint vs faiss directly on the same vectors.

Two QueryNodes in an embedded LocalCluster (two Dask worker processes, as deployed); one channel
whose sealed segments are split over both (one segment each); this process is the external client; the leader's delegator fans each Search (nq=100, k=10, FLAT L2) out to itself
and the worker and merges.  faiss ``IndexFlatL2`` over the same vectors is timed in the same run.

    .venv/bin/python bench/querynode.py [--quick] [--rows N] [--rounds R]

The last line is one JSON object: ``qps_ratio_nq100`` (leader QPS / faiss QPS),
``p50_ms_over_faiss`` and ``p99_ms_over_faiss`` (latency added over faiss at nq=1, ms), plus the raw
numbers.
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

from tests.conftest import embedded_settings  # noqa: E402
from tests.querynode_support import DIM, import_collection, load_request, search_request  # noqa: E402
from tests.test_delegator_localcluster import RemoteNode  # noqa: E402
from vecgrid.deploy import EmbeddedCluster  # noqa: E402
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
        # The deployed topology: two Dask worker processes serve as QueryNodes (plugin-started);
        # this process is the external client, as a proxy would be.
        cluster = EmbeddedCluster(embedded_settings(ds.data_dir, workers=2))
        await cluster.start()
        (a, a_addr), (b, b_addr) = cluster.addresses.query_nodes
        leader, worker = RemoteNode(a, a_addr), RemoteNode(b, b_addr)
        try:
            t = load_request(ds, dst_node_id=a)
            watch = Q.WatchDmChannelsRequest(nodeID=a, collectionID=ds.collection_id, schema=t.schema,
                                             load_meta=t.load_meta, index_info_list=t.index_info_list, version=1,
                                             infos=[data_coord_pb2.VchannelInfo(collectionID=ds.collection_id,
                                                                                channelName=channel)])
            watch.base.properties[f"vecgrid.node_address.{b}"] = b_addr
            assert (await leader.call("WatchDmChannels", watch)).code == 0
            segs = ds.segment_ids
            await leader.load(ds, segs[::2], dst_node_id=a, need_transfer=True, version=1)
            await leader.load(ds, segs[1::2], dst_node_id=b, need_transfer=True, version=1)

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

            # Latency is measured at nq=1 (the definition); throughput above at nq=100.
            singles = [search_request(ds, q[:1], K, from_shard_leader=False, scope=Q.All) for q in queries]
            lat1 = []
            for r in singles:
                t0 = time.perf_counter()
                reply = await leader.call("Search", r)
                lat1.append(time.perf_counter() - t0)
                assert reply.status.code == 0, reply.status

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
            flat1 = []
            for q in queries:
                t0 = time.perf_counter()
                index.search(q[:1], K)
                flat1.append(time.perf_counter() - t0)
        finally:
            writer.close()
            await cluster.stop()
    p = lambda xs, q: float(np.percentile(np.asarray(xs) * 1000, q))  # noqa: E731
    return {
        "rows": rows, "rounds": rounds, "nq": NQ, "k": K,
        "leader_qps_nq100": rounds / grpc_total, "faiss_qps_nq100": rounds / faiss_total,
        "qps_ratio_nq100": (rounds / grpc_total) / (rounds / faiss_total),
        "p50_ms_nq100": p(lat, 50), "faiss_p50_ms_nq100": p(flat, 50),
        "p50_ms_nq1": p(lat1, 50), "p99_ms_nq1": p(lat1, 99), "faiss_p50_ms_nq1": p(flat1, 50),
        "faiss_p99_ms_nq1": p(flat1, 99),
        "p50_ms_over_faiss": p(lat1, 50) - p(flat1, 50), "p99_ms_over_faiss": p(lat1, 99) - p(flat1, 99),
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
