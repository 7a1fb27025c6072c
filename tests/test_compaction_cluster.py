"""Compaction on a 2-worker embedded cluster: DataCoord's compaction part started beside the QueryCoord (as the
DataCoord component will start it), its plans run as Dask tasks on the workers, the catalog swaps old
segments for new ones, QueryCoord's targets follow and the shard leaders hand off.

* reads through the proxy (Strong count(*), every pk, searches) run without a pause during an explicit
  compaction and its hand-off: every live pk is counted exactly once every time, deleted ones never;
* a worker killed (SIGKILL, at the handler's ``compaction-task`` crash point) while it runs a compaction
  task: Dask redoes the task on another worker and the plan publishes."""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest
import pytest_asyncio

from vecgrid.cluster.datacoord.compaction import Compaction
from vecgrid.cluster.querycoord.flush_handoff import FlushHandoff
from vecgrid.cluster.proxy.proxy import Proxy
from vecgrid.common.faults import CRASH_AT_ENV
from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import common_pb2, data_coord_pb2, query_coord_pb2
from vecgrid.storage.layout import DataDir
from tests.compaction_support import delete_and_flush
from tests.conftest import poll_until
from tests.proxy_support import dense_hits
from tests.querycoord_support import Coord, fast_settings
from tests.querynode_support import assert_same_knn, import_collection, reference_search

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

K = 10
FLUSHED = common_pb2.Flushed


class Env:
    def __init__(self, cluster: EmbeddedCluster, compaction: Compaction, root) -> None:
        self.cluster, self.compaction, self.root = cluster, compaction, root
        self.coord = Coord(cluster.addresses.grpc, cluster.coord)

    @property
    def qc(self):
        return self.cluster.coord

    def flushed(self, cid: int) -> set[int]:
        return {s.ID for s in self.qc.catalog.list_segments(cid, states=[FLUSHED])}

    def settled(self, cid: int) -> bool:
        """The current target is the catalog's segments, every leader view on it holds exactly them, and no
        task is pending: the hand-off of every compaction so far is over."""
        qc = self.qc
        current = qc.targets.current(cid)
        if current is None or qc.targets.next(cid) is not None or qc.scheduler.tasks(cid):
            return False
        wanted = {s.ID: ch.channelName for ch in current.Channel_targets for pt in ch.partition_targets
                  for s in pt.segments}
        if set(wanted) != self.flushed(cid):
            return False
        views = qc.dist.leader_views(cid)
        if len(views) != len(current.Channel_targets):
            return False
        return all(view.TargetVersion == current.version and
                   set(view.segment_dist) == {sid for sid, ch in wanted.items() if ch == view.channel}
                   for _, view in views)


async def _workers(client) -> set[str]:
    return set(await client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.workers)))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("compaction")
    data_dir = root / "data"
    settings = fast_settings(data_dir, workers=2)
    settings.set("querycoord.next_target_interval_s", 1.0)
    # the policy stays out of the way: these tests compact when they say so
    settings.set("datacoord.compaction_min_segments", 10_000)
    settings.set("datacoord.l0_compaction_min_segments", 10_000)
    settings.set("datacoord.compaction_deleted_ratio", 1.0)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    qc = cluster.coord

    pull_target = FlushHandoff(qc.collections, qc.targets, qc.target_observer).pull_target   # as deploy wires it

    compaction = Compaction(settings, qc.catalog, qc.client, DataDir(data_dir).segment_root, pull_target)
    compaction.start()
    yield Env(cluster, compaction, root)
    await compaction.stop()
    await asyncio.wait_for(cluster.stop(), 180)


async def test_reads_count_every_live_pk_once_through_a_compaction(env):
    qc = env.qc
    ds = import_collection(env.root, "reads", metric="L2", index="FLAT", n=1200, shards=2, segment_rows=100, seed=21)
    cid = ds.collection_id
    await env.coord.load(cid)
    await poll_until(lambda: env.settled(cid), 60, 0.1, "the load settled")
    # deletes flushed into L0 segments: the compaction has L0 deletes to apply and deleted rows to drop
    rng = np.random.default_rng(3)
    deleted_rows = rng.choice(len(ds.pks), 60, replace=False)
    by_channel: dict[str, list[int]] = {}
    for ch in ds.channels:
        mine = set(int(r) for s in ds.segments_of(ch) for r in ds.rows_of_segment(s))
        by_channel[ch] = [int(ds.pks[r]) for r in deleted_rows if int(r) in mine]
    await asyncio.to_thread(delete_and_flush, qc.catalog, qc.appenders, DataDir(ds.data_dir).segment_root, cid,
                            by_channel)
    qc._pull_target(cid)
    await poll_until(lambda: env.settled(cid), 60, 0.1, "the L0 segments served")
    alive = np.ones(len(ds.pks), bool)
    alive[deleted_rows] = False
    live = sorted(ds.pks[alive].tolist())
    deleted = set(ds.pks[~alive].tolist())
    xq = np.concatenate([ds.vectors[deleted_rows[:4]], rng.standard_normal((4, ds.vectors.shape[1]))]).astype(np.float32)
    D_ref, K_ref = reference_search(ds, xq, K, mask=alive)

    rounds, problems = 0, []
    stop = asyncio.Event()
    proxy = Proxy(env.cluster.addresses.grpc, catalog=qc.catalog)

    async def read_continuously() -> None:
        nonlocal rounds
        while not stop.is_set():
            try:
                count = await proxy.count(ds.name, consistency="Strong")
                pks = sorted(row["pk"] for row in await proxy.query(ds.name, consistency="Strong"))
                hits = await proxy.search(ds.name, xq, limit=K, consistency="Strong")
            except Exception as e:  # noqa: BLE001 - a failed read is a finding too
                problems.append(f"round {rounds}: {type(e).__name__}: {e}")
                continue
            if count != len(live):
                problems.append(f"round {rounds}: count(*) {count}, expected {len(live)}")
            if pks != live:
                twice = sorted({k for k in pks if pks.count(k) > 1})
                problems.append(f"round {rounds}: pks differ: twice {twice[:5]}, deleted {sorted(deleted & set(pks))[:5]}, "
                                f"missing {sorted(set(live) - set(pks))[:5]}")
            D, keys = dense_hits(hits, K)
            try:
                assert_same_knn(D_ref, K_ref, D, keys)
            except AssertionError as e:
                problems.append(f"round {rounds}: search: {e}")
            rounds += 1

    reader = asyncio.ensure_future(read_continuously())
    try:
        await poll_until(lambda: rounds >= 2, 60, 0.05, "reads going")
        before = env.flushed(cid)
        compaction_id = await env.compaction.compact(cid)
        during = rounds
        await poll_until(lambda: env.settled(cid), 90, 0.1, "the compaction handed off")
        await poll_until(lambda: rounds >= during + 3, 60, 0.05, "reads after the hand-off")
    finally:
        stop.set()
        await reader
        await proxy.close()
    assert not problems, problems[:10]
    after = env.flushed(cid)
    assert not before & after
    segments = qc.catalog.list_segments(cid, states=[FLUSHED])
    assert sorted(s.insert_channel for s in segments) == sorted(ds.channels)   # one merged segment per channel
    assert all(s.level == data_coord_pb2.L1 and not len(s.deltalogs) for s in segments)
    assert sum(s.num_of_rows for s in segments) == len(live)
    plans = env.compaction.summaries[compaction_id]["plans"]
    assert {p["kind"] for p in plans} == {"l0", "mix"}, plans
    await env.coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))


async def test_a_worker_killed_during_a_compaction_task_is_redone_elsewhere(env):
    qc = env.qc
    ds = import_collection(env.root, "killed", metric="L2", index="FLAT", n=400, shards=1, segment_rows=100, seed=22)
    cid = ds.collection_id
    before = {s.ID: s.num_of_rows for s in qc.catalog.list_segments(cid, states=[FLUSHED])}
    workers = await _workers(qc.client)

    def arm(name: str | None) -> None:
        if name is None:
            os.environ.pop(CRASH_AT_ENV, None)
        else:
            os.environ[CRASH_AT_ENV] = name
    # every worker up now dies at the crash point; the ones the nannies start again do not have it armed
    await qc.client.run(arm, "compaction-task")
    try:
        await env.compaction.compact(cid)
    finally:
        await qc.client.run(arm, None, on_error="ignore")
    now = await _workers(qc.client)
    assert workers - now, "no worker died: the task never ran where the crash point was armed"
    (merged,) = qc.catalog.list_segments(cid, states=[FLUSHED])
    assert sorted(merged.compactionFrom) == sorted(before) and merged.num_of_rows == sum(before.values())
    assert env.compaction.failures == 0, env.compaction.last_error
    await poll_until(lambda: len(qc.nodes) == 2, 60, 0.2, "the killed workers back")

