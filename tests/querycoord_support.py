"""Helpers for QueryCoord tests: a coordinator stub, load-and-wait, and searches through shard leaders
checked against numpy (what a proxy does: one leader per channel, merge across channels)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import traceback
from dataclasses import replace
from pathlib import Path

import grpc
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vecgrid.cluster.querycoord.dist.leaders import leader_of, view_problem
from vecgrid.cluster.querycoord.meta.target_manager import segment_refs
from vecgrid.gpu.results import from_search_result_data
from vecgrid.proto import milvus_pb2, query_coord_pb2, query_coord_pb2_grpc, rg_pb2
from vecgrid.cluster.datanode.bulk_import import ImportOptions, bulk_import
from tests.conftest import aio_channel, await_chain, embedded_settings, poll_until
from tests.querynode_support import (Dataset, RemoteNode, assert_same_knn, random_table, reference_search,
                                     search_request)

K = 10

# Checker, observer and distribution periods short enough that a load settles in seconds.
FAST = {
    "querycoord.check_channel_interval_s": 0.3, "querycoord.check_segment_interval_s": 0.3,
    "querycoord.check_balance_interval_s": 0.5, "querycoord.check_leader_interval_s": 0.3,
    "querycoord.dist_pull_interval_s": 0.2, "querycoord.collection_observer_interval_s": 0.1,
}


def fast_settings(data_dir, workers: int = 3):
    s = embedded_settings(data_dir, workers=workers)
    for key, value in FAST.items():
        s.set(key, value)
    return s


def import_partition(ds, root, partition: str, n: int, key_offset: int = 10_000_000):
    """Rows with their own keys into ``partition``; returns the dataset of the old and the new rows."""
    table, pks, vectors, cols = random_table(n, key_offset % 1000, "pk", False)
    pks = pks + key_offset
    table = table.set_column(0, "pk", pa.array(pks))
    src = root / f"{partition}-{key_offset}.parquet"
    pq.write_table(table, src)
    bulk_import(ds.data_dir, [str(src)], ImportOptions(collection=ds.name, primary_key="pk", metric=ds.metric,
                                                       index=ds.index, shards=2, segment_rows=200,
                                                       partition=partition))
    return replace(ds, pks=np.concatenate([ds.pks, pks]), vectors=np.concatenate([ds.vectors, vectors]))


def partition_ids(cluster, cid) -> dict[str, int]:
    coll = cluster.coord.catalog.get_collection(cid)
    return {p.partitionName: p.partitionID for p in coll.partitions}


@contextlib.contextmanager
def corrupted(path: Path):
    """One flipped byte: the checksum the coordinator sends with LoadSegments no longer matches (604)."""
    raw = path.read_bytes()
    bad = bytearray(raw)
    bad[len(bad) // 2] ^= 0xFF
    path.write_bytes(bytes(bad))
    try:
        yield
    finally:
        path.write_bytes(raw)


async def coordinator_state(qc, cid: int) -> str:
    """What the coordinator holds for a collection, and what Dask's workers are running (with the
    running tasks' stacks): the story of a load that does not finish."""
    current, upcoming = qc.targets.current(cid), qc.targets.next(cid)
    info = qc.collections.get(cid)
    load = "none"
    if info is not None:    # (progress() would make a record for a collection that has none)
        progress = qc.collections.progress(cid)
        parts = [(pid, query_coord_pb2.LoadStatus.Name(qc.collections.partition(cid, pid).status))
                 for pid in qc.collections.partition_ids(cid)]
        load = (f"{query_coord_pb2.LoadStatus.Name(info.status)}, partitions {parts}, progress {progress.partitions}, "
                f"{time.monotonic() - progress.last_progress_at:.1f} s since the last")
    lines = [
        f"load: {load}; recorded failure {qc.failed_loads.get(cid)!r}",
        f"nodes: {[(n.node_id, n.address) for n in qc.nodes.all()]}",
        f"replicas: {[(r.ID, list(r.nodes), list(r.ro_nodes)) for r in qc.replicas.of_collection(cid)]}",
        f"tasks: {[str(t) for t in qc.scheduler.tasks()]}",
        f"task failures: {dict(qc.scheduler.failures)}",
        f"targets: current {current.version if current else None}, next {upcoming.version if upcoming else None}",
        f"channels: {sorted((n, c.channel) for n, c in qc.dist.channels(cid))}",
        f"segments: {sorted((n, s.ID) for n, s in qc.dist.segments(cid))}",
        f"leader views: {[(n, v.channel, v.TargetVersion, sorted(v.segment_dist)) for n, v in qc.dist.leader_views(cid)]}",
    ]
    for name, target in (("current", current), ("next", upcoming)):
        if target is None:
            continue
        refs = segment_refs(target)
        for replica in qc.replicas.of_collection(cid):
            for ch in target.Channel_targets:
                wanted = sorted(sid for sid, ref in refs.items() if ref.channel == ch.channelName)
                found = leader_of(qc.dist, replica, ch.channelName)
                problem = "no leader" if found is None else \
                    view_problem(found[1], found[0], refs, lambda n: qc.nodes.get(n) is not None, check_version=False)
                routes = {} if found is None else {sid: d.nodeID for sid, d in found[1].segment_dist.items()}
                lines.append(f"{name} target, replica {replica.ID}, {ch.channelName}: segments {wanted}, "
                             f"leader {found and found[0]}, routes {routes}, problem: {problem}")
    loops = {"target observer": qc.target_observer.loop_task, "collection observer": qc.collection_observer.loop_task,
             **{f"checker {c.name}": qc.checkers.loop_task(cid) for cid, c in qc.checkers.checkers.items()}}
    for cid, c in qc.checkers.checkers.items():
        lines.append(f"checker {c.name}: {qc.checkers.rounds(cid)} rounds, {qc.checkers.failed_rounds(cid)} failed, "
                     f"last error {qc.checkers.last_error(cid)!r}")
    for name, task in loops.items():
        if task is None:
            state = "not started"
        elif task.cancelled():
            state = "ended: cancelled"
        elif task.done():
            error = task.exception()
            state = f"ended: {error!r}\n" + "".join(traceback.format_exception(error)) if error else "ended"
        else:
            state = " <- ".join(line.strip().rsplit("/", 1)[-1] for line in await_chain(task))
        lines.append(f"{name}: {state}")
    try:
        lines.append(f"dask tasks: {await asyncio.wait_for(qc.client.run_on_scheduler(_dask_task_states), 10)}")
        lines.append(f"dask processing: {await asyncio.wait_for(qc.client.processing(), 10)}")
        lines.append(f"dask call stacks: {await asyncio.wait_for(qc.client.call_stack(), 10)}")
    except Exception as e:  # noqa: BLE001 - an explanation must not hide the failure it explains
        lines.append(f"dask state unavailable: {e!r}")
    return "\n".join(lines)


def _dask_task_states(dask_scheduler=None) -> dict[str, str]:
    return {str(key): ts.state for key, ts in dask_scheduler.tasks.items()}


class Coord:
    """The QueryCoord over gRPC, as an external client sees it; ``qc`` (the in-process coordinator, when
    there is one) explains a load that times out."""

    def __init__(self, address: str, qc=None) -> None:
        self.stub = query_coord_pb2_grpc.QueryCoordStub(aio_channel(address))
        self.qc = qc

    async def call(self, method: str, request):
        return await getattr(self.stub, method)(request, timeout=120)

    async def ok(self, method: str, request):
        reply = await self.call(method, request)
        status = reply if hasattr(reply, "code") else reply.status
        assert status.code == 0, f"{method}: {status}"
        return reply

    async def percentage(self, cid: int) -> int:
        reply = await self.call("ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[cid]))
        return reply.inMemory_percentages[0] if reply.status.code == 0 else -1

    async def load(self, cid: int, timeout: float = 90, **kw) -> None:
        await self.ok("LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=cid, **kw))
        await self.wait_loaded(cid, timeout)

    async def wait_loaded(self, cid: int, timeout: float = 90) -> None:
        async def loaded():
            return await self.percentage(cid) == 100
        try:
            await poll_until(loaded, timeout, 0.1, f"collection {cid} loaded")
        except pytest.fail.Exception as e:
            if self.qc is None:
                raise
            pytest.fail(f"{e}\n{await coordinator_state(self.qc, cid)}")

    async def leaders(self, cid: int) -> list[query_coord_pb2.ShardLeadersList]:
        return list((await self.ok("GetShardLeaders", query_coord_pb2.GetShardLeadersRequest(collectionID=cid))).shards)


# --- waiting for "nothing happened" ------------------------------------------------------------------------

# Milvus's checker ids (ListCheckers)
CHANNEL_CHECKER, SEGMENT_CHECKER, BALANCE_CHECKER, INDEX_CHECKER, LEADER_CHECKER = 1, 2, 3, 4, 5


async def checker_rounds(qc, n: int = 3, checker_ids: list[int] | None = None, timeout: float = 60) -> None:
    """Wait until each checker (every one by default) completed ``n`` more rounds, each started after this
    call: what a test awaits before it checks that nothing was proposed, instead of a sleep that passes
    whether or not the loops ran."""
    ids = list(qc.checkers.checkers) if checker_ids is None else checker_ids
    try:
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(qc.checkers.wait_rounds(cid, n) for cid in ids))
    except TimeoutError:
        state = {qc.checkers.get(cid).name: (qc.checkers.rounds(cid), qc.checkers.failed_rounds(cid),
                                             repr(qc.checkers.last_error(cid))) for cid in ids}
        pytest.fail(f"checkers did not complete {n} rounds in {timeout} s: (rounds, failed, last error) {state}")


# --- a module's shared cluster, given back as each test found it ------------------------------------------

DEFAULT_RG = "__default_resource_group"


async def cluster_state(coord: Coord, qc) -> dict[str, object]:
    """What a test can change on a shared cluster: loads and where their data is served (copies per segment
    and channel, not which node holds them: the balancer may move them), resource groups, suspended nodes,
    checkers and automatic balance."""
    groups = {}
    for name in (await coord.ok("ListResourceGroups", milvus_pb2.ListResourceGroupsRequest())).resource_groups:
        rg = (
            await coord.ok("DescribeResourceGroup", query_coord_pb2.DescribeResourceGroupRequest(resource_group=name))
        ).resource_group
        groups[name] = rg.num_available_node
    checkers = (await coord.ok("ListCheckers", query_coord_pb2.ListCheckersRequest())).checkerInfos
    return {
        "loaded (collection, replicas)": sorted((cid, len(qc.replicas.of_collection(cid))) for cid in qc.collections.ids()),
        "served segment copies": sorted((s.collection, s.ID) for _, s in qc.dist.segments()),
        "served channel copies": sorted((c.collection, c.channel) for _, c in qc.dist.channels()),
        "resource groups (name, nodes)": sorted(groups.items()),
        "suspended nodes": sorted(qc.suspended),
        "inactive checkers": sorted(c.id for c in checkers if not c.activated),
        "balance active": (await coord.ok("CheckBalanceStatus", query_coord_pb2.CheckBalanceStatusRequest())).is_active,
    }


async def give_back(coord: Coord, qc, baseline: dict[str, object], timeout: float = 60) -> None:
    """Undo what a test left on the cluster, as an operator would over gRPC, and wait until its state is
    ``baseline`` again; fails with the difference when it does not get there."""
    await coord.ok("ResumeBalance", query_coord_pb2.ResumeBalanceRequest())
    for checker in (await coord.ok("ListCheckers", query_coord_pb2.ListCheckersRequest())).checkerInfos:
        if not checker.activated:
            await coord.ok("ActivateChecker", query_coord_pb2.ActivateCheckerRequest(checkerID=checker.id))
    kept = {cid for cid, _ in baseline["loaded (collection, replicas)"]}
    for cid in qc.collections.ids():
        if cid not in kept:
            await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))
    for node_id in list(qc.suspended):
        await coord.ok("ResumeNode", query_coord_pb2.ResumeNodeRequest(nodeID=node_id))
    empty = rg_pb2.ResourceGroupConfig(requests=rg_pb2.ResourceGroupLimit(node_num=0),
                                       limits=rg_pb2.ResourceGroupLimit(node_num=0))
    groups = {name for name, _ in baseline["resource groups (name, nodes)"]}
    for name in (await coord.ok("ListResourceGroups", milvus_pb2.ListResourceGroupsRequest())).resource_groups:
        if name not in groups:
            await coord.ok(
                "UpdateResourceGroups", query_coord_pb2.UpdateResourceGroupsRequest(resource_groups={name: empty})
            )
            await coord.ok("DropResourceGroup", milvus_pb2.DropResourceGroupRequest(resource_group=name))
    now: dict[str, object] = {}

    async def as_before() -> bool:
        now.update(await cluster_state(coord, qc))
        return now == baseline
    try:
        await poll_until(as_before, timeout, 0.2, "the cluster as the test found it")
    except pytest.fail.Exception:
        assert now == baseline, "the cluster did not get back to the state the test found"


async def settled_state(coord: Coord, qc, timeout: float = 60) -> dict[str, object]:
    """:func:`cluster_state` once no released collection is served any more: a release lets go of its
    copies a moment after the collection is gone, and a baseline taken meanwhile (with a copy that is
    about to go) is one the cluster never gets back to."""
    state: dict[str, object] = {}

    async def settled() -> bool:
        state.update(await cluster_state(coord, qc))
        loaded = {cid for cid, _ in state["loaded (collection, replicas)"]}
        served = {cid for cid, _ in state["served segment copies"]} | {cid for cid, _ in state["served channel copies"]}
        return served <= loaded
    await poll_until(settled, timeout, 0.2, "no copy of a released collection served")
    return dict(state)


@contextlib.asynccontextmanager
async def left_as_found(coord: Coord, qc):
    """Around one test on a module's shared cluster: whatever the test loads, suspends, creates or switches
    off is given back afterwards (passed or failed), so no test depends on the ones before it."""
    baseline = await settled_state(coord, qc)
    try:
        yield
    finally:
        await give_back(coord, qc, baseline)


class NotServed(AssertionError):
    """The cluster cannot answer the search yet: no shard leaders, a node that does not answer, or a
    non-zero status.  A test waiting for recovery retries on it; a wrong answer is never one of these.
    (An AssertionError, so that code waiting for a changed answer treats it as "not yet" too.)"""


async def search_via_leaders(coord: Coord, ds: Dataset, xq: np.ndarray, replica_index: int = 0):
    """Search every channel on one of its leaders and merge: (scores nq×K, keys nq×K); raises NotServed
    when the cluster cannot answer."""
    larger_is_better = ds.metric in ("IP", "COSINE")
    hits: list[list[tuple[float, object]]] = [[] for _ in range(len(xq))]
    leaders = await coord.call("GetShardLeaders", query_coord_pb2.GetShardLeadersRequest(collectionID=ds.collection_id))
    if leaders.status.code != 0:
        raise NotServed(f"GetShardLeaders: {leaders.status}")
    for shard in leaders.shards:
        i = replica_index % len(shard.node_ids)
        node = RemoteNode(shard.node_ids[i], shard.node_addrs[i])
        try:
            reply = await node.call("Search", search_request(ds, xq, K, channels=[shard.channel_name],
                                                             from_shard_leader=False, scope=query_coord_pb2.All))
        except grpc.aio.AioRpcError as e:
            raise NotServed(f"Search on node {node.node_id} ({node.address}): {e.code()} {e.details()}") from None
        if reply.status.code != 0:
            raise NotServed(f"Search on node {node.node_id} ({node.address}): {reply.status}")
        tk = from_search_result_data(reply.sliced_blob)
        for q in range(tk.nq):
            for j in range(tk.offsets[q], tk.offsets[q + 1]):
                hits[q].append((float(tk.scores[j]), tk.ids[j].item()))
    D = np.full((len(xq), K), np.nan, dtype=np.float32)
    keys = np.empty((len(xq), K), dtype=object)
    keys[:] = None
    for q, row in enumerate(hits):
        row.sort(key=lambda h: -h[0] if larger_is_better else h[0])
        for j, (score, key) in enumerate(row[:K]):
            D[q, j], keys[q, j] = score, key
    return D, keys


def queries(ds: Dataset, seed: int = 3, n: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, ds.vectors.shape[1])).astype(np.float32)


async def assert_search_matches(coord: Coord, ds: Dataset, seed: int = 3, replica_index: int = 0) -> None:
    xq = queries(ds, seed)
    assert_same_knn(*reference_search(ds, xq, K), *await search_via_leaders(coord, ds, xq, replica_index))
