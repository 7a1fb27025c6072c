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

The IVF case (keys ``ivf_*``): IVF_FLAT nlist 1024 (fewer at ``--quick``: 39 training points per
list), nprobe 8, one segment on the leader (every sealed segment local), against the **bare gRPC
floor** (``bench/grpc_floor.py``: a minimal Python gRPC server in its own process answering the same
Search request bytes with one ``index.search``) and faiss in this process, the three called in turn
call by call, in a new shuffled order every round (nq=1: five times the rounds, for a p99 that is not
the second-worst call).  ``ivf_p50_ms_over_floor`` and ``ivf_*_p99_over_p50`` (nq=1),
``ivf_qps_ratio_nq100_vs_floor`` and ``ivf_qps_ratio_nq100_vs_faiss`` (queries/s at nq=100), then
16 concurrent nq=1 clients against one: ``concurrent16_qps_ratio`` (the leader) and
``floor_concurrent16_qps_ratio`` (the floor, the same run: what gRPC itself allows on this host),
with the p99 under 16 clients, the host's busy fraction, its CPU milliseconds per search and the
ratio that CPU allows (``*_qps_ratio_cpu_bound``: cores over CPU per search, against one client).
``ivf_remote_*``: the same leader, floor and faiss at nq=1 with the segment on the other node, so
every search takes the leader's hop to it; ``ivf_remote_extra_hops`` is what that adds over the local
case in bare hops (floor minus faiss) of the same run.  The floor and faiss
search an index built here from the same vectors (the leader builds its own at load: same nlist,
so the same work per query).  The proxy path (:class:`~vecgrid.cluster.proxy.proxy.Proxy` in this
process, as the CLI and REST use it: plan and request building, leader routing, merge, decoding
into Python hits; Eventually, the collection's description passed in) is a fourth side of the same
rotation: ``proxy_p50_ms_over_leader`` is what it adds at nq=1 over calling the leader directly.  ``--faiss-threads`` sets the nodes' ``querynode.faiss_threads``.
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
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import alternating  # noqa: E402  (bench/, first on sys.path)
from tests.conftest import embedded_settings  # noqa: E402
from tests.querynode_support import (DIM, Dataset, import_collection, load_request,  # noqa: E402
                                     search_request)
from tests.test_delegator_localcluster import RemoteNode  # noqa: E402
from vecgrid.cluster.proxy.lb_policy import LeaderRouter, Shard  # noqa: E402
from vecgrid.cluster.proxy.proxy import Proxy  # noqa: E402
from vecgrid.config import Settings  # noqa: E402
from vecgrid.deploy import EmbeddedCluster  # noqa: E402
from vecgrid.gpu.build import build_index_file, read_index_file  # noqa: E402
from vecgrid.gpu import require_faiss  # noqa: E402
from vecgrid.proto import data_coord_pb2, query_coord_pb2  # noqa: E402
from vecgrid.storage.layout import DataDir  # noqa: E402
from vecgrid.storage.wal import Wal  # noqa: E402

NQ, K = 100, 10
BLOCKS = 10          # cluster and faiss measured in this many alternating blocks per figure
PAUSE_S = 0.02       # between blocks: lets faiss's OpenMP threads stop spinning
CHECKERS = ("check_channel_interval_s", "check_segment_interval_s", "check_balance_interval_s",
            "check_index_interval_s", "check_leader_interval_s")


FAISS_THREADS = 0  # --faiss-threads: the nodes' setting (0: their default)


def bench_settings(data_dir: str) -> Settings:
    settings = embedded_settings(Path(data_dir), workers=2)
    settings.querynode.faiss_threads = FAISS_THREADS
    for name in CHECKERS:
        setattr(settings.querycoord, name, 24 * 3600.0)
    return settings


@asynccontextmanager
async def serving(rows: int, index: str = "FLAT", index_params: dict | None = None,
                  split: bool = True, remote: bool = False) -> AsyncIterator[tuple[Dataset, RemoteNode, str]]:
    """A two-node cluster serving ``rows`` vectors; yields the data set, the shard leader and the
    coordinator's gRPC address.  ``split``: one sealed segment per node, else one segment, on the leader
    (on the other node with ``remote``: every search then takes the leader's hop to it)."""
    with tempfile.TemporaryDirectory() as tmp:
        ds = import_collection(Path(tmp), "bench", metric="L2", index=index, index_params=index_params, n=rows,
                               shards=1, segment_rows=max(1, rows // 2 if split else rows), seed=7)
        (channel,) = ds.channels
        writer = Wal(DataDir(ds.data_dir).wal_root).open_writer(channel)
        cluster = EmbeddedCluster(bench_settings(ds.data_dir))
        await cluster.start()
        try:
            (a, a_addr), (b, b_addr) = cluster.addresses.query_nodes
            leader = RemoteNode(a, a_addr)
            t = load_request(ds, dst_node_id=a)
            watch = query_coord_pb2.WatchDmChannelsRequest(nodeID=a, collectionID=ds.collection_id, schema=t.schema,
                                             load_meta=t.load_meta, index_info_list=t.index_info_list, version=1,
                                             infos=[data_coord_pb2.VchannelInfo(collectionID=ds.collection_id,
                                                                                channelName=channel)])
            watch.base.properties[f"vecgrid.node_address.{b}"] = b_addr
            assert (await leader.call("WatchDmChannels", watch)).code == 0
            segs = ds.segment_ids
            await leader.load(ds, segs[::2], dst_node_id=b if remote else a, need_transfer=True, version=1)
            if segs[1::2]:
                await leader.load(ds, segs[1::2], dst_node_id=b, need_transfer=True, version=1)
            yield ds, leader, cluster.addresses.grpc
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
    faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold

    async with serving(rows) as (ds, leader, _):
        rng = np.random.default_rng(0)
        queries = [rng.standard_normal((NQ, DIM)).astype(np.float32) for _ in range(rounds)]
        index = faiss.IndexFlatL2(DIM)
        index.add(ds.vectors)
        figures = {}
        for nq in (NQ, 1):  # throughput at nq=100, latency at nq=1 (the definitions)
            reqs = [search_request(ds, q[:nq], K, from_shard_leader=False, scope=query_coord_pb2.All) for q in queries]

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


IVF_NLIST, IVF_NPROBE = 1024, 8
CLIENTS = 16
NQ1_ROUNDS_FACTOR = 5
CORES = psutil.cpu_count() or 1


class _PlacedRouter(LeaderRouter):
    """Leader routing to the leader this bench placed: the coordinator, its checkers parked, never loaded
    the collection and reports no leaders."""

    placed: list[Shard] = []

    async def shard_leaders(self, collection_id: int, *, refresh: bool = False) -> list[Shard]:
        return self.placed


class _PlacedLeaders(Proxy):
    """The proxy path (what REST and the CLI use: leaders, retries, merge, decoding) over the placed leader."""

    router_class = _PlacedRouter

    def __init__(self, coord_address: str, shards: list[Shard]) -> None:
        super().__init__(coord_address)
        self.router.placed = shards


def ivf_index_file(ds: Dataset, nlist: int) -> str:
    """An IVF_FLAT index file over the data set's vectors, for the floor and faiss directly.  The
    leader builds its own at load (the imported segment has none): same vectors, nlist and nprobe,
    so the same cost per search, though k-means may place the centroids a little differently."""
    path = str(Path(ds.data_dir, "bench-ivf.index"))
    Path(path).write_bytes(build_index_file(ds.vectors, "IVF_FLAT", "L2", {"nlist": nlist}, use_gpu=False))
    return path


@asynccontextmanager
async def grpc_floor(index_path: str) -> AsyncIterator[RemoteNode]:
    """``bench/grpc_floor.py`` serving the index in its own process."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(__file__).with_name("grpc_floor.py")), index_path, str(IVF_NPROBE),
        stdout=asyncio.subprocess.PIPE)
    try:
        port = int((await proc.stdout.readline()).decode())
        yield RemoteNode(0, f"127.0.0.1:{port}")
    finally:
        proc.kill()
        await proc.wait()


def _busy_cpu_s() -> tuple[float, float]:
    """(CPU seconds every process on the host has used, CPU seconds there were): what bounds the
    QPS of many concurrent clients when clients and servers share the cores."""
    t = psutil.cpu_times()
    idle = t.idle + getattr(t, "iowait", 0.0)
    total = sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)   # guest time is in user too
    return total - idle, total


async def concurrent(call: Callable[[int], Awaitable[None]], clients: int,
                     per_client: int) -> tuple[float, list[float], float, float]:
    """QPS of ``clients`` concurrent callers doing ``per_client`` calls each, every call's latency,
    the host's busy fraction over the run and the host CPU milliseconds per call (client, servers,
    everything else: on a 2-core host the QPS cannot pass ``2000 / cpu_ms_per_call``)."""
    lat: list[float] = []

    async def client(c: int) -> None:
        for i in range(per_client):
            t0 = time.perf_counter()
            await call(c * per_client + i)
            lat.append(time.perf_counter() - t0)
    busy0, total0 = _busy_cpu_s()
    t0 = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    wall = time.perf_counter() - t0
    busy1, total1 = _busy_cpu_s()
    calls = clients * per_client
    return calls / wall, lat, (busy1 - busy0) / max(total1 - total0, 1e-9), (busy1 - busy0) * 1000 / calls


def searching(node: RemoteNode, reqs: list[query_coord_pb2.SearchRequest]) -> Callable[[int], Awaitable[None]]:
    """Call ``i``: ``reqs[i]`` (round robin) sent to ``node``'s Search, which must succeed."""
    async def call(i: int) -> None:
        reply = await node.call("Search", reqs[i % len(reqs)])
        assert reply.status.code == 0, reply.status
    return call


def _ms(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, q))


async def run_ivf(rows: int, rounds: int) -> dict:
    """IVF_FLAT nlist 1024 / nprobe 8, one segment on the leader, against the bare gRPC floor serving
    the same index file and faiss directly, call by call; then 16 concurrent nq=1 clients."""
    faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold

    nlist = min(IVF_NLIST, max(1, rows // 39))  # faiss wants >= 39 training points per list
    async with serving(rows, "IVF_FLAT", {"nlist": nlist}, split=False) as (ds, leader, coord), \
            _PlacedLeaders(coord, [Shard(ds.channels[0], ((leader.node_id, leader.address),))]) as proxy:
        meta = await proxy.catalog.describe_id(ds.collection_id)
        path = ivf_index_file(ds, nlist)
        index, _ = read_index_file(path)
        params = faiss.SearchParametersIVF(nprobe=IVF_NPROBE)
        rng = np.random.default_rng(1)
        queries = [rng.standard_normal((NQ, DIM)).astype(np.float32) for _ in range(rounds)]
        out: dict = {"ivf_nlist": nlist, "ivf_nprobe": IVF_NPROBE}
        async with grpc_floor(path) as floor:
            for nq in (NQ, 1):
                reqs = [search_request(ds, q[:nq], K, from_shard_leader=False, scope=query_coord_pb2.All,
                                       params={"nprobe": IVF_NPROBE}) for q in queries]

                async def direct(i: int) -> None:
                    index.search(queries[i % len(queries)][:nq], K, params=params)

                async def proxied(i: int, nq: int = nq) -> None:
                    hits = await proxy.search(meta, queries[i % len(queries)][:nq], limit=K,
                                              search_params={"nprobe": IVF_NPROBE}, consistency="Eventually")
                    assert len(hits) == nq and len(hits[0]) == K

                sides = {"leader": searching(leader, reqs), "floor": searching(floor, reqs), "faiss": direct,
                         "proxy": proxied}
                await alternating(sides, 5)  # warm-up
                # nq=1 calls are ~1 ms: five times the rounds, so that p99 is not the second-worst of 200
                lat = await alternating(sides, rounds if nq == NQ else NQ1_ROUNDS_FACTOR * rounds)
                if nq == NQ:
                    qps = {name: NQ * len(xs) / sum(xs) for name, xs in lat.items()}  # queries/s
                    out.update({f"ivf_{name}_qps_nq100": v for name, v in qps.items()})
                    out["ivf_qps_ratio_nq100_vs_floor"] = qps["leader"] / qps["floor"]
                    out["ivf_qps_ratio_nq100_vs_faiss"] = qps["leader"] / qps["faiss"]
                else:
                    for name, xs in lat.items():
                        out[f"ivf_{name}_p50_ms_nq1"] = _ms(xs, 50)
                        out[f"ivf_{name}_p99_ms_nq1"] = _ms(xs, 99)
                    out["ivf_p50_ms_over_floor"] = _ms(lat["leader"], 50) - _ms(lat["floor"], 50)
                    out["ivf_leader_p99_over_p50"] = _ms(lat["leader"], 99) / _ms(lat["leader"], 50)
                    out["ivf_floor_p99_over_p50"] = _ms(lat["floor"], 99) / _ms(lat["floor"], 50)
                    out["proxy_p50_ms_over_leader"] = _ms(lat["proxy"], 50) - _ms(lat["leader"], 50)
                    # 16 clients vs one, leader and floor, alternating runs so all see the same load
                    for name in ("leader", "floor"):
                        out[f"{name}_concurrent"] = {"single": [], "many": [], "lat": [], "busy": [], "cpu": []}
                    for _ in range(3):
                        for name in ("leader", "floor"):
                            got = out[f"{name}_concurrent"]
                            q1, _lat1, _busy1, _cpu1 = await concurrent(sides[name], 1, rounds // 2)
                            q16, lat16, busy16, cpu16 = await concurrent(sides[name], CLIENTS, rounds // 2)
                            got["single"].append(q1)
                            got["many"].append(q16)
                            got["lat"] += lat16
                            got["busy"].append(busy16)
                            got["cpu"].append(cpu16)
                    for name, prefix in (("leader", ""), ("floor", "floor_")):
                        got = out.pop(f"{name}_concurrent")
                        single, many = np.asarray(got["single"]), np.asarray(got["many"])
                        out[f"{prefix}single_client_qps_nq1"] = float(np.median(single))
                        out[f"{prefix}concurrent16_qps_nq1"] = float(np.median(many))
                        out[f"{prefix}concurrent16_qps_ratio"] = float(np.median(many / single))
                        out[f"{prefix}concurrent16_p99_ms"] = _ms(got["lat"], 99)
                        out[f"{prefix}concurrent16_p99_over_single_p50"] = _ms(got["lat"], 99) / _ms(lat[name], 50)
                        # the bound: the cores there are over the host CPU each search costs, against one client
                        cpu_ms = float(np.median(got["cpu"]))
                        out[f"{prefix}concurrent16_cpu_busy"] = float(np.median(got["busy"]))
                        out[f"{prefix}concurrent16_cpu_ms_per_search"] = cpu_ms
                        out[f"{prefix}concurrent16_qps_ratio_cpu_bound"] = \
                            CORES * 1000 / cpu_ms / out[f"{prefix}single_client_qps_nq1"]
    return out


async def run_ivf_remote(rows: int, rounds: int) -> dict:
    """The IVF case with the segment on the other node: every nq=1 search takes the leader's hop to
    it.  The leader, the floor and faiss are called in turn as in :func:`run_ivf`; the floor minus faiss
    is what one bare gRPC hop costs in the same run, the yardstick for the extra hop."""
    faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold

    nlist = min(IVF_NLIST, max(1, rows // 39))
    async with serving(rows, "IVF_FLAT", {"nlist": nlist}, split=False, remote=True) as (ds, leader, _coord):
        path = ivf_index_file(ds, nlist)
        index, _ = read_index_file(path)
        params = faiss.SearchParametersIVF(nprobe=IVF_NPROBE)
        rng = np.random.default_rng(2)
        queries = [rng.standard_normal((1, DIM)).astype(np.float32) for _ in range(NQ1_ROUNDS_FACTOR * rounds)]
        reqs = [
            search_request(ds, q, K, from_shard_leader=False, scope=query_coord_pb2.All, params={"nprobe": IVF_NPROBE})
            for q in queries
        ]
        async with grpc_floor(path) as floor:
            async def direct(i: int) -> None:
                index.search(queries[i % len(queries)], K, params=params)

            sides = {"leader": searching(leader, reqs), "floor": searching(floor, reqs), "faiss": direct}
            await alternating(sides, 5)
            lat = await alternating(sides, NQ1_ROUNDS_FACTOR * rounds)
    p50 = {name: _ms(xs, 50) for name, xs in lat.items()}
    return {"ivf_remote_leader_p50_ms_nq1": p50["leader"], "ivf_remote_leader_p99_ms_nq1": _ms(lat["leader"], 99),
            "ivf_remote_p50_ms_over_floor": p50["leader"] - p50["floor"],
            "ivf_remote_hop_ms": p50["floor"] - p50["faiss"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small run (well under 2 minutes)")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--case", choices=("all", "flat", "ivf"), default="all")
    ap.add_argument("--faiss-threads", type=int, default=0, help="querynode.faiss_threads (0: its default)")
    args = ap.parse_args()
    global FAISS_THREADS
    FAISS_THREADS = args.faiss_threads
    rows = args.rows or (20_000 if args.quick else 200_000)
    rounds = args.rounds or 200
    figures = asyncio.run(run(rows, rounds)) if args.case in ("all", "flat") else {}
    if args.case in ("all", "ivf"):
        figures.update(asyncio.run(run_ivf(rows, rounds)))
        figures.update(asyncio.run(run_ivf_remote(rows, rounds)))
        # what a remote segment adds over the local case, in bare gRPC hops of the same run
        figures["ivf_remote_extra_hops"] = ((figures["ivf_remote_p50_ms_over_floor"] - figures["ivf_p50_ms_over_floor"])
                                            / figures["ivf_remote_hop_ms"])
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
