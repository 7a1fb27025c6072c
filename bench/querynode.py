"""Search through a shard leader's gRPC endpoint vs faiss directly on the same vectors.

Two QueryNodes in an embedded LocalCluster (two Dask worker processes, as deployed); one channel
whose sealed segments are split over both (one segment each); this process is the external client;
the leader's delegator fans each Search (k=10, FLAT L2) out to itself and the worker and merges.
faiss ``IndexFlatL2`` over the same vectors is timed in the same run, in blocks alternating with
the cluster's so that both see the same background load.

    .venv/bin/python bench/querynode.py [--quick] [--rows N] [--rounds R]

Both sides use the whole machine: faiss its default OpenMP threads (one per core) over all rows;
the cluster one thread per worker process (Dask starts workers with ``OMP_NUM_THREADS=1``), each
over half the rows.  The coordinator's checkers are parked: the channel and segments are placed
on the nodes directly, which the coordinator would otherwise release as unknown to it.

The last line is one JSON object: ``qps_ratio_nq100`` (leader QPS / faiss QPS, one request at a
time, nq=100), ``p50_ms_over_faiss`` and ``p99_ms_over_faiss`` (latency added over faiss at nq=1,
ms), plus the raw numbers.
Reuses the test helpers in ``tests/querynode_support.py`` (run from the repository root).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator, Awaitable, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import embedded_settings  # noqa: E402
from tests.querynode_support import (DIM, Dataset, import_collection, load_request,  # noqa: E402
                                     search_request)
from tests.test_delegator_localcluster import RemoteNode  # noqa: E402
from vecgrid.config import Settings  # noqa: E402
from vecgrid.deploy import EmbeddedCluster  # noqa: E402
from vecgrid.proto import data_coord_pb2, query_coord_pb2 as Q  # noqa: E402
from vecgrid.storage.layout import DataDir  # noqa: E402
from vecgrid.storage.wal import Wal  # noqa: E402

NQ, K = 100, 10
BLOCKS = 10          # cluster and faiss measured in this many alternating blocks per figure
PAUSE_S = 0.02       # between blocks: lets faiss's OpenMP threads stop spinning
CHECKERS = ("check_channel_interval_s", "check_segment_interval_s", "check_balance_interval_s",
            "check_index_interval_s", "check_leader_interval_s")


def bench_settings(data_dir: str) -> Settings:
    settings = embedded_settings(Path(data_dir), workers=2)
    for name in CHECKERS:
        setattr(settings.querycoord, name, 24 * 3600.0)
    return settings


@asynccontextmanager
async def serving(rows: int) -> AsyncIterator[tuple[Dataset, RemoteNode]]:
    """A two-node cluster serving ``rows`` vectors (one sealed segment per node); yields the data
    set and the shard leader."""
    with tempfile.TemporaryDirectory() as tmp:
        ds = import_collection(Path(tmp), "bench", metric="L2", index="FLAT", n=rows, shards=1,
                               segment_rows=max(1, rows // 2), seed=7)  # one segment per node
        (channel,) = ds.channels
        writer = Wal(DataDir(ds.data_dir).wal_root).open_writer(channel)
        cluster = EmbeddedCluster(bench_settings(ds.data_dir))
        await cluster.start()
        try:
            (a, a_addr), (b, b_addr) = cluster.addresses.query_nodes
            leader = RemoteNode(a, a_addr)
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
            yield ds, leader
        finally:
            writer.close()
            await cluster.stop()


async def timed(call: Callable[[int], Awaitable[None]], indices: range) -> list[float]:
    """Seconds each ``call(i)`` took."""
    out = []
    for i in indices:
        t0 = time.perf_counter()
        await call(i)
        out.append(time.perf_counter() - t0)
    return out


async def compare(leader_call: Callable[[int], Awaitable[None]], faiss_call: Callable[[int], Awaitable[None]],
                  rounds: int) -> tuple[list[float], list[float]]:
    """Latencies of ``rounds`` calls each, measured in alternating blocks."""
    ours: list[float] = []
    theirs: list[float] = []
    for lo in range(0, rounds, max(1, rounds // BLOCKS)):
        block = range(lo, min(rounds, lo + max(1, rounds // BLOCKS)))
        ours += await timed(leader_call, block)
        await asyncio.sleep(PAUSE_S)
        theirs += await timed(faiss_call, block)
        await asyncio.sleep(PAUSE_S)
    return ours, theirs


async def run(rows: int, rounds: int) -> dict:
    import faiss

    async with serving(rows) as (ds, leader):
        rng = np.random.default_rng(0)
        queries = [rng.standard_normal((NQ, DIM)).astype(np.float32) for _ in range(rounds)]
        index = faiss.IndexFlatL2(DIM)
        index.add(ds.vectors)
        figures = {}
        for nq in (NQ, 1):  # throughput at nq=100, latency at nq=1 (the definitions)
            reqs = [search_request(ds, q[:nq], K, from_shard_leader=False, scope=Q.All) for q in queries]

            async def ours(i: int) -> None:
                reply = await leader.call("Search", reqs[i])
                assert reply.status.code == 0, reply.status

            async def theirs(i: int) -> None:
                index.search(queries[i][:nq], K)

            await timed(ours, range(3))  # warm-up
            await timed(theirs, range(3))
            figures[nq] = await compare(ours, theirs, rounds)
    (lat, flat), (lat1, flat1) = figures[NQ], figures[1]
    p = lambda xs, q: float(np.percentile(np.asarray(xs) * 1000, q))  # noqa: E731
    return {
        "rows": rows, "rounds": rounds, "nq": NQ, "k": K, "faiss_threads": faiss.omp_get_max_threads(),
        "leader_qps_nq100": len(lat) / sum(lat), "faiss_qps_nq100": len(flat) / sum(flat),
        "qps_ratio_nq100": sum(flat) / sum(lat),
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
    rounds = args.rounds or 200
    print(json.dumps(asyncio.run(run(rows, rounds))))


if __name__ == "__main__":
    main()
