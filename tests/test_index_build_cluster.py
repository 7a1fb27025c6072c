"""Index builds as Dask tasks on a 2-worker embedded cluster.

* A segment flushed from the WAL is served at once with exact search (an interim FLAT index); the
  index builder builds its index as the Dask task ``build-index-<segment>-…`` on a worker, records it,
  and the QueryCoord's index checker switches the serving node to the built file.  Searches through
  the shard leaders, running the whole time, always equal a numpy reference over every row.
* A worker killed with SIGKILL in the middle of a build: Dask runs the same task again on the other
  worker, and the file it writes is recorded.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from distributed import Event

from vecgrid.cluster.datacoord.index_builder import IndexBuilder
from vecgrid.cluster.datanode.index_build import CRASH_BEFORE_WRITE
from vecgrid.cluster.querycoord.checkers.index_checker import served_interim
from vecgrid.cluster.querynode import tasks as node_tasks
from vecgrid.common.faults import CRASH_AT_ENV
from vecgrid.deploy import EmbeddedCluster
from vecgrid.storage import segment_files
from vecgrid.storage.layout import DataDir
from tests.conftest import poll_until
from tests.datacoord_support import TaskLog, insert_and_flush, with_rows
from tests.querycoord_support import K, Coord, NotServed, fast_settings, queries, search_via_leaders
from tests.querynode_support import assert_same_knn, import_collection, reference_search

pytest.importorskip("faiss")
pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

INDEX = dict(metric="L2", index="IVF_FLAT", index_params={"nlist": 16})


async def _cluster(tmp_path, name: str):
    ds = import_collection(tmp_path, name, n=400, shards=2, segment_rows=200, seed=8, **INDEX)
    settings = fast_settings(ds.data_dir, workers=2)
    settings.set("querycoord.check_index_interval_s", 0.3)
    settings.set("datacoord.check_interval_s", 0.2)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    # the cluster's own builder waits: each test starts it once it has seen the segment served exactly
    await cluster_builder(cluster).stop()
    return cluster, ds


def cluster_builder(cluster: EmbeddedCluster) -> IndexBuilder:
    (builder,) = [p for p in cluster.datacoord.parts if isinstance(p, IndexBuilder)]
    return builder


async def _flush_rows(cluster: EmbeddedCluster, ds, n: int = 300):
    qc = cluster.coord
    return await asyncio.to_thread(insert_and_flush, qc.catalog, qc.appenders, qc.ticker.wal,
                                   DataDir(ds.data_dir).segment_root, ds, ds.channels[0], n, 5_000_000)


async def _task_log(cluster: EmbeddedCluster, name: str) -> None:
    await cluster.client.register_plugin(TaskLog("build-index-", name), name=name)


async def _tasks(cluster: EmbeddedCluster, name: str) -> dict[str, list[tuple[str, str]]]:
    return await cluster.client.run_on_scheduler(TaskLog.read, name=name)


async def test_flushed_segment_is_served_exactly_then_with_the_index_built_on_dask(tmp_path):
    cluster, ds = await _cluster(tmp_path, "switch")
    builder = None
    try:
        qc, coord = cluster.coord, Coord(cluster.addresses.grpc, cluster.coord)
        inserted = await _flush_rows(cluster, ds)
        (sid,) = inserted.segment_ids
        everything = with_rows(ds, inserted)
        (index,) = qc.catalog.describe_index(ds.collection_id)
        await coord.load(ds.collection_id)

        def copies():
            return [seg for _, seg in qc.dist.segments(ds.collection_id) if seg.ID == sid]
        await poll_until(lambda: copies(), 30, what="the flushed segment served")
        assert all(served_interim(seg, ds.vec_fid, index.indexID) for seg in copies())
        assert qc.catalog.list_segment_indexes(ds.collection_id, segment_id=sid) == []

        # searches through the shard leaders, the whole time: every answer equals numpy over every row
        xq = queries(everything, seed=4, n=6)
        reference = reference_search(everything, xq, K)
        answered = {"interim": 0, "indexed": 0}
        wrong: list[str] = []
        stop = asyncio.Event()

        async def search_loop():
            while not stop.is_set():
                phase = "interim" if any(served_interim(s, ds.vec_fid, index.indexID) for s in copies()) \
                    else "indexed"
                try:
                    got = await search_via_leaders(coord, everything, xq)
                except NotServed:
                    continue
                try:
                    assert_same_knn(*reference, *got)
                except AssertionError as e:
                    wrong.append(f"{phase}: {e}")
                answered[phase] += 1
                await asyncio.sleep(0.02)
        searching = asyncio.ensure_future(search_loop())
        await poll_until(lambda: answered["interim"] >= 3, 30, what="searches while served exactly")

        await _task_log(cluster, "build-index-log")
        builder = cluster_builder(cluster)
        builder.start()
        (build,) = await poll_until(lambda: qc.catalog.list_segment_indexes(ds.collection_id, segment_id=sid),
                                    60, what="the index build recorded")
        (path,) = build.index_file_keys
        segment_files.verify_file(ds.data_dir, segment_files.FileInfo(
            build.files[0].path, build.files[0].size, f"{build.files[0].checksum_algorithm}:{build.files[0].checksum}"))

        def switched():
            found = copies()
            return found and all(list(seg.index_info[ds.vec_fid].index_file_paths) == [path]
                                 and seg.index_info[ds.vec_fid].enable_index for seg in found)
        await poll_until(switched, 60, what="the serving node switched to the built index")
        answered_at_switch = answered["indexed"]
        await poll_until(lambda: answered["indexed"] >= answered_at_switch + 3, 30, what="searches with the index")
        stop.set()
        await asyncio.wait_for(searching, 30)
        assert wrong == [], wrong[:3]

        # the build was one Dask task with a readable key, run on one of the cluster's workers
        log = await _tasks(cluster, "build-index-log")
        ((key, worker),) = log["finished"]
        prefix = f"build-index-{sid}-field-{ds.vec_fid}-build-"
        assert key.startswith(prefix), key
        assert path == segment_files.index_path(ds.collection_id, build.partitionID, sid, ds.vec_fid,
                                                build_id=int(key[len(prefix):]))
        assert worker in {n.worker_address for n in cluster.cluster.workers.values()}
        (node_id, _), = [(n, s) for n, s in qc.dist.segments(ds.collection_id) if s.ID == sid]
        described = await cluster.client.submit(node_tasks.describe, workers=[qc.nodes.get(node_id).worker],
                                                allow_other_workers=False, pure=False)
        (engine,) = [seg["engines"] for seg in described["segments"] if seg["segment_id"] == sid]
        assert engine[ds.vec_fid]["built_type"] == "IVF_FLAT"
        # bulk-imported segments are not the builder's (their indexes are built at load and saved)
        assert builder.in_flight == set() and builder.failures == {}
    finally:
        if builder is not None:
            await asyncio.wait_for(builder.stop(), 30)
        await asyncio.wait_for(cluster.stop(), 120)


def _set_crash_point(name: str) -> None:
    os.environ[CRASH_AT_ENV] = name


async def _offer_gpu(dask_worker) -> None:
    await dask_worker.set_resources(GPU=1)


def _hold_gpu(event_name: str) -> str:
    """Occupies its worker's GPU slot until the test sets the event."""
    Event(event_name).wait()
    return "released"


async def test_a_worker_killed_during_a_build_the_build_is_redone_on_another(tmp_path):
    cluster, ds = await _cluster(tmp_path, "killed")
    builder = None
    try:
        qc, client = cluster.coord, cluster.client
        inserted = await _flush_rows(cluster, ds)
        (sid,) = inserted.segment_ids
        victim, other = [n for n in cluster.cluster.workers.values()]
        victim_address, other_address, victim_pid = victim.worker_address, other.worker_address, victim.process.pid
        # both workers offer a GPU; the other one's is taken, so the build goes to the victim first,
        # where the crash point kills the worker (SIGKILL) between the build and the write
        await client.run(_offer_gpu, workers=[victim_address, other_address])
        await client.run(_set_crash_point, CRASH_BEFORE_WRITE, workers=[victim_address])
        held = client.submit(_hold_gpu, "index-build-test-gpu", workers=[other_address], resources={"GPU": 1},
                             pure=False, key="hold-gpu")

        async def holding() -> bool:
            return any(str(k) == "hold-gpu" for k in (await client.processing(workers=[other_address]))
                       .get(other_address, ()))
        await poll_until(holding, 30, what="the other worker's GPU taken")
        await _task_log(cluster, "killed-build-log")
        builder = cluster_builder(cluster)
        builder.start()

        await poll_until(lambda: victim.process is None or victim.process.pid != victim_pid, 60,
                         what="the victim worker killed")
        log = await _tasks(cluster, "killed-build-log")
        (key, first_worker), = log["started"][:1]
        assert first_worker == victim_address and log["finished"] == []
        await Event("index-build-test-gpu", client=client).set()
        (build,) = await poll_until(lambda: qc.catalog.list_segment_indexes(ds.collection_id, segment_id=sid),
                                    90, what="the build redone and recorded")
        log = await _tasks(cluster, "killed-build-log")
        assert [w for k, w in log["started"] if k == key] == [victim_address, other_address]
        assert log["finished"] == [(key, other_address)]
        f = build.files[0]
        segment_files.verify_file(ds.data_dir, segment_files.FileInfo(f.path, f.size,
                                                                      f"{f.checksum_algorithm}:{f.checksum}"))
        assert builder.failures == {}
        assert await held == "released"
    finally:
        if builder is not None:
            await asyncio.wait_for(builder.stop(), 30)
        await asyncio.wait_for(cluster.stop(), 120)
