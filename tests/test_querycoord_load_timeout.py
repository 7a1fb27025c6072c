"""QueryCoord load timeout, end to end (Milvus's ``CollectionObserver.observeTimeout``): a load that cannot
progress because a segment file is corrupt (every LoadSegments of it fails with 604) is cancelled after
``querycoord.load_timeout_s`` without progress.  Afterwards the coordinator answers as for a collection (or
partition) that was never loaded, its meta is gone from the store, the nodes hold nothing of it, no task is
left, and once the file is repaired a new load reaches 100 % and searches equal a numpy reference.

LoadCollection times out as a whole.  LoadPartitions times out per load: only the partitions of the stalled
load are removed, the partitions loaded before keep serving, and the collection goes only when no partition
is left (Milvus: "collection timeout due to all partition removed")."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from pathlib import Path

import pytest
import pytest_asyncio

from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.replica_manager import ReplicaManager
from vecgrid.cluster.querycoord.meta.target_manager import Scope
from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import milvus_pb2, query_coord_pb2
from tests.conftest import poll_until
from tests.querycoord_support import (K, Coord, assert_search_matches, checker_rounds, coordinator_state,
                                      corrupted, fast_settings, import_partition, left_as_found, partition_ids,
                                      queries)
from tests.querynode_support import RemoteNode, import_collection, search_request

pytestmark = pytest.mark.asyncio(loop_scope="module")

LOAD_TIMEOUT_S = 4.0     # querycoord.load_timeout_s of the cluster: what the stuck loads run under


@contextlib.contextmanager
def patient(cluster, seconds: float = 120.0):
    """Healthy loads run under a long timeout, so a slow machine cannot time them out."""
    observer = cluster.coord.collection_observer
    assert observer.load_timeout_s == LOAD_TIMEOUT_S
    observer.load_timeout_s = seconds
    try:
        yield
    finally:
        observer.load_timeout_s = LOAD_TIMEOUT_S


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("timeout")
    ds = import_collection(root, "stuck", metric="L2", index="FLAT", n=600, shards=2, segment_rows=200, seed=8)
    both = import_partition(ds, root, "p1", 400)
    settings = fast_settings(ds.data_dir, workers=2)
    settings.set("querycoord.load_timeout_s", LOAD_TIMEOUT_S)
    settings.set("querycoord.next_target_interval_s", 1.0)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    yield cluster, Coord(cluster.addresses.grpc, cluster.coord), ds, both
    await asyncio.wait_for(cluster.stop(), 60)


@pytest_asyncio.fixture(loop_scope="module")
async def env(cluster_env):
    """The module's cluster, given back to the next test as this one found it."""
    async with left_as_found(cluster_env[1], cluster_env[0].coord):
        yield cluster_env


def explained(test):
    """A failed check of ``test`` says what the coordinator held for the collection when it failed."""
    @functools.wraps(test)
    async def run(env):
        try:
            await test(env)
        except (AssertionError, pytest.fail.Exception) as e:
            cluster, ds = env[0], env[2]
            pytest.fail(f"{e}\n{await coordinator_state(cluster.coord, ds.collection_id)}")
    return run


def segment_file(cluster, cid: int, segment_id: int) -> Path:
    seg = cluster.coord.catalog.get_segment(segment_id)
    return Path(cluster.settings.common.data_dir, "segments", str(cid), str(seg.partitionID), str(segment_id),
                "data.parquet")


def segments_of_partition(cluster, cid: int, pid: int) -> list[int]:
    return sorted(s.ID for s in cluster.coord.catalog.list_segments(cid) if s.partitionID == pid)


def persisted_keys(cluster, cid: int) -> list[str]:
    store = cluster.coord.store
    keys = []
    for prefix in (f"querycoord-collection/{cid}", f"querycoord-partitions/{cid}/", f"querycoord-replica/{cid}/",
                   f"querycoord-target/{cid}"):
        keys += [k for k, _ in store.scan(prefix)]
    return keys


async def node_holdings(cluster, cid: int) -> tuple[set[int], set[str]]:
    """Sealed segments and channels of ``cid`` that the nodes themselves report (GetDataDistribution)."""
    segments, channels = set(), set()
    for info in cluster.coord.nodes.all():
        reply = await RemoteNode(info.node_id, info.address).call(
            "GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        assert reply.status.code == 0, reply.status
        segments |= {s.ID for s in reply.segments if s.collection == cid}
        channels |= {c.channel for c in reply.channels if c.collection == cid}
    return segments, channels


async def leaders_refuse(coord: Coord, ds, partition_id: int) -> bool:
    """Whether every shard leader answers a search of ``partition_id`` with "partition not loaded" (201)."""
    leaders = await coord.ok("GetShardLeaders", query_coord_pb2.GetShardLeadersRequest(collectionID=ds.collection_id))
    for shard in leaders.shards:
        for node_id, address in zip(shard.node_ids, shard.node_addrs):
            reply = await RemoteNode(node_id, address).call("Search", search_request(
                ds, queries(ds), K, partitions=[partition_id], channels=[shard.channel_name],
                from_shard_leader=False, scope=query_coord_pb2.All))
            if reply.status.code != 201:
                return False
    return True


async def wait_cancelled(coord: Coord, cid: int) -> tuple[list[int], float]:
    """Poll ShowCollections until the load is gone; returns the percentages seen meanwhile and the wait."""
    seen: list[int] = []
    start = time.monotonic()

    async def gone():
        reply = await coord.call("ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[cid]))
        if reply.status.code == 0:
            seen.append(reply.inMemory_percentages[0])
            return None
        return reply.status
    status = await poll_until(gone, LOAD_TIMEOUT_S + 20, 0.1, f"load of {cid} cancelled")
    # answered with the recorded load failure (Milvus's failed-load cache), not a bare 101
    assert status.code == 604 and "checksum mismatch" in status.reason, status
    return seen, time.monotonic() - start


async def wait_settled(cluster, cid: int, released, segments: set[int] | None = None) -> None:
    """The nodes hold none of it (``released()``), no task is left for the collection (for ``segments`` of it,
    while the rest stays loaded and may be balanced), and both still hold after every checker looked again.

    This waits for such a quiet stretch, not for the first empty moment: a load cancelled with its task may
    still finish on its node (Dask does not stop a call that runs), and the checkers then release that copy
    too.  Work that never stops fails at the deadline."""
    def left() -> list:
        tasks = cluster.coord.scheduler.tasks(cid)
        if segments is None:
            return tasks
        return [t for t in tasks if getattr(t, "segment", None) is not None and t.segment.segment_id in segments
                or getattr(t, "segment_id", None) in segments]
    deadline = time.monotonic() + 40
    while True:
        await poll_until(released, 20, 0.2, "the nodes to release it")
        await poll_until(lambda: not left(), 15, what="no tasks left")
        await checker_rounds(cluster.coord, 3)    # every checker looked again
        if not left() and await released():
            return
        assert time.monotonic() < deadline, f"tasks still proposed: {left()}"


@pytest.mark.slow
@explained
async def test_load_collection_times_out_and_a_repaired_load_succeeds(env):
    cluster, coord, ds, both = env
    cid = ds.collection_id
    victim = ds.segment_ids[1]
    with corrupted(segment_file(cluster, cid, victim)):
        await coord.ok("LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=cid))
        seen, waited = await wait_cancelled(coord, cid)
        # while loading: below 100 (the next target cannot become current without the broken segment)
        assert seen and max(seen) < 100, seen
        assert waited >= LOAD_TIMEOUT_S - 0.5
        assert any("checksum mismatch" in f for f in cluster.coord.scheduler.failures.values())

        # answered as a collection that is not loaded, with the reason the load failed
        reply = await coord.call("ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[cid]))
        assert reply.status.code == 604 and str(victim) in reply.status.reason
        reply = await coord.call("ShowCollections", query_coord_pb2.ShowCollectionsRequest())
        assert reply.status.code == 0 and cid not in reply.collectionIDs
        assert (
            await coord.call("GetShardLeaders", query_coord_pb2.GetShardLeadersRequest(collectionID=cid))
        ).status.code == 101
        assert (
            await coord.call("ShowPartitions", query_coord_pb2.ShowPartitionsRequest(collectionID=cid))
        ).status.code == 201
        assert (await coord.call("GetPartitionStates",
                                 query_coord_pb2.GetPartitionStatesRequest(collectionID=cid))).status.code == 201
        assert (await coord.ok("GetReplicas", milvus_pb2.GetReplicasRequest(collectionID=cid))).replicas == []
        reply = await coord.call(
            "LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=cid, refresh=True)
        )
        assert reply.code == 101

        # meta gone, in memory and in the store (a restarted coordinator would not resume the load)
        coord_ = cluster.coord
        assert coord_.collections.get(cid) is None and coord_.replicas.of_collection(cid) == []
        assert coord_.targets.current(cid) is None and coord_.targets.next(cid) is None
        assert persisted_keys(cluster, cid) == []
        assert CollectionManager(coord_.store).get(cid) is None
        assert ReplicaManager(coord_.store).of_collection(cid) == []

        # the nodes drop what they had loaded; no task is left behind
        async def released():
            return await node_holdings(cluster, cid) == (set(), set())
        await wait_settled(cluster, cid, released)
        await poll_until(lambda: not coord_.dist.segments(cid) and not coord_.dist.channels(cid), 10,
                         what="coordinator's dist empty")
        assert coord_.collections.get(cid) is None   # nothing re-created the load

    # file repaired: a new load succeeds and serves both partitions
    with patient(cluster):
        await coord.load(cid, timeout=60)
    await assert_search_matches(coord, both)
    reply = await coord.ok("ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[cid]))
    assert list(reply.inMemory_percentages) == [100]
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))
    assert persisted_keys(cluster, cid) == []
    reply = await coord.call("ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[cid]))
    assert reply.status.code == 101     # the failures of the earlier load were cleared by the new one


@pytest.mark.slow
@explained
async def test_load_partitions_timeout_removes_only_the_stalled_partition(env):
    cluster, coord, ds, both = env
    cid = ds.collection_id
    parts = partition_ids(cluster, cid)
    default, p1 = parts["_default"], parts["p1"]
    with patient(cluster):
        await coord.ok(
            "LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=cid, partitionIDs=[default])
        )
        await coord.wait_loaded(cid, 60)
    await assert_search_matches(coord, ds)

    p1_segments = segments_of_partition(cluster, cid, p1)
    with corrupted(segment_file(cluster, cid, p1_segments[0])):
        await coord.ok("LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=cid, partitionIDs=[p1]))
        seen: list[int] = []
        start = time.monotonic()

        async def p1_gone():
            reply = await coord.call("ShowPartitions", query_coord_pb2.ShowPartitionsRequest(collectionID=cid,
                                                                               partitionIDs=[p1]))
            if reply.status.code == 0:
                seen.append(reply.inMemory_percentages[0])
                return None
            return reply.status
        status = await poll_until(p1_gone, LOAD_TIMEOUT_S + 20, 0.1, "partition load cancelled")
        assert status.code == 201 and "checksum mismatch" in status.reason, status
        assert seen and max(seen) < 100, seen
        assert time.monotonic() - start >= LOAD_TIMEOUT_S - 0.5

        # the partition loaded before keeps serving; the collection is loaded again
        reply = await coord.ok("ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[cid]))
        assert list(reply.inMemory_percentages) == [100]
        shown = await coord.ok("ShowPartitions", query_coord_pb2.ShowPartitionsRequest(collectionID=cid))
        assert list(shown.partitionIDs) == [default] and list(shown.inMemory_percentages) == [100]
        states = await coord.ok("GetPartitionStates", query_coord_pb2.GetPartitionStatesRequest(collectionID=cid))
        assert [(p.partitionID, p.state) for p in states.partition_descriptions] == [
            (default, query_coord_pb2.InMemory)
        ]
        assert cluster.coord.collections.is_loaded(cid)

        # p1's meta is gone from memory, the targets and the store; the collection's stays
        keys = persisted_keys(cluster, cid)
        assert f"querycoord-collection/{cid}" in keys
        assert f"querycoord-partitions/{cid}/{default}" in keys and f"querycoord-partitions/{cid}/{p1}" not in keys
        assert CollectionManager(cluster.coord.store).is_loaded(cid)
        assert CollectionManager(cluster.coord.store).partition_ids(cid) == [default]
        assert not set(p1_segments) & set(cluster.coord.targets.segments(cid, Scope.CURRENT_OR_NEXT))

        # nodes drop p1's segments and p1 itself (a leader asked for it answers "not loaded"); no task is
        # left; searches see the default partition only
        async def p1_released():
            return not (await node_holdings(cluster, cid))[0] & set(p1_segments)
        await wait_settled(cluster, cid, p1_released, set(p1_segments))
        await poll_until(lambda: leaders_refuse(coord, ds, p1), 20, 0.2, "leaders dropped p1")

        async def serving():
            reply = await coord.call("GetShardLeaders", query_coord_pb2.GetShardLeadersRequest(collectionID=cid))
            return reply.status.code == 0
        await poll_until(serving, 20, 0.2, "shard leaders")
        await assert_search_matches(coord, ds)

    # repaired: loading p1 again succeeds
    with patient(cluster):
        await coord.ok("LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=cid, partitionIDs=[p1]))
        await coord.wait_loaded(cid, 60)
    shown = await coord.ok("ShowPartitions", query_coord_pb2.ShowPartitionsRequest(collectionID=cid))
    assert sorted(shown.partitionIDs) == sorted([default, p1]) and list(shown.inMemory_percentages) == [100, 100]
    await assert_search_matches(coord, both)
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))
    assert persisted_keys(cluster, cid) == []


@pytest.mark.slow
@explained
async def test_load_partitions_timeout_of_every_partition_removes_the_collection(env):
    cluster, coord, ds, both = env
    cid = ds.collection_id
    p1 = partition_ids(cluster, cid)["p1"]
    with corrupted(segment_file(cluster, cid, segments_of_partition(cluster, cid, p1)[-1])):
        await coord.ok("LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=cid, partitionIDs=[p1]))
        seen, waited = await wait_cancelled(coord, cid)
        assert seen and max(seen) < 100, seen
        assert waited >= LOAD_TIMEOUT_S - 0.5
        assert persisted_keys(cluster, cid) == []
        assert cluster.coord.replicas.of_collection(cid) == []

        async def released():
            return await node_holdings(cluster, cid) == (set(), set())
        await wait_settled(cluster, cid, released)


async def test_a_task_cancelled_before_it_starts_frees_its_key():
    """A release or a load timeout right after a checker round cancels tasks that never ran a step; their
    keys must not stay taken (they did: ``_run``'s ``finally`` never runs for a task cancelled that early)."""
    from vecgrid.cluster.querycoord.meta.target_manager import SegmentRef
    from vecgrid.cluster.querycoord.task.scheduler import TaskScheduler
    from vecgrid.cluster.querycoord.task.task import SegmentTask

    class Executor:
        runs = 0

        async def run_segment(self, task):
            Executor.runs += 1

        run_channel = run_leader = run_segment

    async def refresh(nodes, poke):
        return None

    scheduler = TaskScheduler(Executor(), refresh, 5.0, 5.0)
    task = SegmentTask(1, 11, SegmentRef(5, 2, "ch", 1, 0), target=2)
    assert scheduler.add(task) and not scheduler.add(task)
    assert scheduler.cancel_collection(1) == 1      # same tick: the task has not started
    # the key is freed when the task ended; had it not been cancelled, it would have run by then
    await poll_until(lambda: not scheduler.has(task.key), 5, 0.01, "the cancelled task's key freed")
    assert scheduler.tasks(1) == [] and Executor.runs == 0
    assert scheduler.add(task)
    await poll_until(lambda: not scheduler.has(task.key), 5, 0.01, "task done")
    assert Executor.runs == 1
    await scheduler.stop()
