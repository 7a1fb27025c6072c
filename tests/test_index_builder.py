"""The index builder's handling of its Dask tasks, on an in-process Dask cluster: a failed build is
retried by Dask under the same key; a build past ``datacoord.task_timeout_s`` is released and proposed
again under a new build id, and the late attempt's file is never recorded; builds go to workers with
``GPU`` resources when the cluster has any; stop() ends the builds it awaits."""

from __future__ import annotations

import asyncio
import threading

import pytest
import pytest_asyncio
from distributed import Client, LocalCluster

from vecgrid import errors
from vecgrid.cluster.datacoord import index_builder
from vecgrid.cluster.datacoord.index_builder import IndexBuilder
from vecgrid.cluster.datanode.index_build import IndexBuildRequest, build_segment_index
from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.config import Settings
from vecgrid.storage import segment_files
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import Wal
from tests.conftest import poll_until
from tests.datacoord_support import TaskLog, insert_and_flush
from tests.querynode_support import catalog, import_collection

pytest.importorskip("faiss")
pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

# What the wrapped handler below does, per build id (the workers are threads of this process)
GATES: dict[str, threading.Event] = {}
CALLS: list[int] = []
BEHAVIOUR: dict[str, str] = {}


def scripted_build(req: IndexBuildRequest):
    """``build_segment_index`` after what the test scripted: the first call blocks on a gate (``block``)
    or raises once (``fail-once``)."""
    CALLS.append(req.build_id)
    mode = BEHAVIOUR.get("mode")
    if mode == "block" and len(CALLS) == 1:
        GATES["first"].wait(60)
    elif mode == "fail-once" and len(CALLS) == 1 or mode == "fail-always":
        raise errors.IoFailed("injected write failure", segment=req.segment_id)
    return build_segment_index(req)


@pytest.fixture
def scripted(monkeypatch):
    CALLS.clear()
    BEHAVIOUR.clear()
    GATES["first"] = threading.Event()
    monkeypatch.setattr(index_builder, "build_segment_index", scripted_build)
    yield BEHAVIOUR
    GATES["first"].set()


@pytest.fixture
def flushed(tmp_path):
    ds = import_collection(tmp_path, "builder", metric="L2", index="IVF_FLAT", index_params={"nlist": 8}, n=200,
                           shards=1, segment_rows=200, seed=2)
    store, cat = catalog(ds.data_dir)
    data = DataDir(ds.data_dir)
    wal = Wal(str(data.wal_root))
    appenders = ChannelAppenders(wal, cat.allocate_timestamp, cat.allocate_segment_id)
    try:
        inserted = insert_and_flush(cat, appenders, wal, data.segment_root, ds, ds.channels[0], n=120,
                                    key_offset=9_000_000)
    finally:
        appenders.close()
    yield ds, cat, inserted.segment_ids[0]
    store.close()


@pytest_asyncio.fixture
async def dask():
    async with LocalCluster(n_workers=2, threads_per_worker=2, processes=False, asynchronous=True,
                            dashboard_address=":0") as cluster:
        async with Client(cluster, asynchronous=True) as client:
            yield cluster, client


def _settings(ds, timeout_s: float = 600.0) -> Settings:
    return Settings.load(env={}, overrides={"common.data_dir": ds.data_dir, "datacoord.check_interval_s": 0.1,
                                            "datacoord.task_timeout_s": timeout_s})


def _builds(cat, ds, sid):
    return cat.list_segment_indexes(ds.collection_id, segment_id=sid)


async def test_a_failed_build_is_retried_by_dask_under_the_same_key(flushed, dask, scripted):
    ds, cat, sid = flushed
    _, client = dask
    scripted["mode"] = "fail-once"
    await client.register_plugin(TaskLog("build-index-", "retry-log"), name="retry-log")
    builder = IndexBuilder(cat, client, _settings(ds))
    builder.start()
    try:
        (build,) = await poll_until(lambda: _builds(cat, ds, sid), 30, what="the build recorded")
    finally:
        await asyncio.wait_for(builder.stop(), 10)
    assert len(CALLS) == 2 and CALLS[0] == CALLS[1]          # one submission, run twice
    log = await client.run_on_scheduler(TaskLog.read, name="retry-log")
    (key,) = {k for k, _ in log["started"]}
    assert key.endswith(f"-build-{CALLS[0]}") and [k for k, _ in log["finished"]] == [key]
    assert build.index_file_keys[0].endswith(f"_{CALLS[0]}.bin")
    assert builder.failures == {}


async def test_a_build_past_its_deadline_is_proposed_again_and_the_late_file_never_recorded(
        flushed, dask, scripted, caplog):
    ds, cat, sid = flushed
    _, client = dask
    scripted["mode"] = "block"
    builder = IndexBuilder(cat, client, _settings(ds, timeout_s=1.0))
    builder.start()
    try:
        (build,) = await poll_until(lambda: _builds(cat, ds, sid), 30, what="the build proposed again and recorded")
    finally:
        await asyncio.wait_for(builder.stop(), 10)
    late, again = CALLS[0], CALLS[1]
    (failed,) = [r.getMessage() for r in caplog.records if r.name == index_builder.__name__]
    assert f"build-index-{sid}-field-{ds.vec_fid}-build-{late} passed its deadline of 1.0 s" in failed
    assert builder.failures == {}   # cleared by the success
    assert late != again and build.index_file_keys[0].endswith(f"_{again}.bin")
    GATES["first"].set()   # the late attempt now writes its own file: nobody records it
    await poll_until(lambda: any(f.path.endswith(f"_{late}.bin") for f in segment_files.list_stored_files(ds.data_dir)),
                     30, what="the late attempt wrote its file")
    (still,) = _builds(cat, ds, sid)
    assert still.buildID == build.buildID and list(still.index_file_keys) == list(build.index_file_keys)


async def test_a_failing_build_stays_a_failure_until_its_segment_is_dropped(flushed, dask, scripted):
    ds, cat, sid = flushed
    _, client = dask
    scripted["mode"] = "fail-always"
    builder = IndexBuilder(cat, client, _settings(ds), retries=0)
    builder.start()
    try:
        await poll_until(lambda: len(set(CALLS)) >= 3, 30, what="the build proposed again round after round")
        assert "injected write failure" in builder.failures[(sid, ds.vec_fid)]
        cat.drop_segment(sid)
        await poll_until(lambda: builder.failures == {}, 30, what="the failure of a dropped segment forgotten")
        assert _builds(cat, ds, sid) == []
    finally:
        await asyncio.wait_for(builder.stop(), 10)


async def test_builds_go_to_gpu_workers_when_the_cluster_has_them(flushed, dask, scripted):
    ds, cat, sid = flushed
    cluster, client = dask
    gpu_worker = next(iter(cluster.workers.values()))
    await gpu_worker.set_resources(GPU=1)
    await client.register_plugin(TaskLog("build-index-", "gpu-log"), name="gpu-log")
    builder = IndexBuilder(cat, client, _settings(ds))
    assert await builder.cluster_has_gpu()
    builder.start()
    try:
        await poll_until(lambda: _builds(cat, ds, sid), 30, what="the build recorded")
    finally:
        await asyncio.wait_for(builder.stop(), 10)
    log = await client.run_on_scheduler(TaskLog.read, name="gpu-log")
    assert [w for _, w in log["finished"]] == [gpu_worker.address]


async def test_stop_ends_the_builds_it_awaits(flushed, dask, scripted):
    ds, cat, sid = flushed
    _, client = dask
    scripted["mode"] = "block"
    builder = IndexBuilder(cat, client, _settings(ds))
    builder.start()
    await poll_until(lambda: CALLS, 30, what="the build running")
    assert builder.in_flight == {(sid, ds.vec_fid)}
    await asyncio.wait_for(builder.stop(), 10)
    assert builder.in_flight == set() and builder.loop_task is None
    assert _builds(cat, ds, sid) == []
