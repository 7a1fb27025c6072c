"""Indexes built at load are saved once and read by every later load.

Bulk-imported segments carry an index definition and no index file, so the first load builds each
index on a QueryNode.  The index checker then has ONE node per segment (not one per replica) write
it (``save_index``, a Dask task) and the coordinator records the file in the catalog; every later
load reads the verified file instead of building — the nodes report its path in
GetDataDistribution.  Searches equal a numpy reference throughout, and a corrupted saved file
fails the load with 604 like any corrupt file.  The first tests drive one QueryNode in-process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import pytest_asyncio

from vecgrid import errors
from vecgrid.cluster.querynode.index_saver import SaveIndexRequest
from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import query_coord_pb2
from vecgrid.storage import segment_files
from tests.conftest import poll_until
from tests.querycoord_support import (INDEX_CHECKER, Coord, assert_search_matches, checker_rounds, corrupted,
                                      fast_settings, left_as_found)
from tests.querynode_support import NodeHarness, catalog, import_collection

pytest.importorskip("faiss")
pytestmark = pytest.mark.asyncio(loop_scope="module")

INDEX = dict(metric="L2", index="IVF_FLAT", index_params={"nlist": 16})


def file_info(f) -> segment_files.FileInfo:
    """A catalog ``SegmentFile`` as the FileInfo that ``segment_files`` verifies."""
    return segment_files.FileInfo(f.path, f.size, f"{f.checksum_algorithm}:{f.checksum}")


# --- one node, in process -----------------------------------------------------------------------------------

async def test_node_saves_what_it_built_and_refuses_what_it_does_not_hold(tmp_path):
    ds = import_collection(tmp_path, "one", n=300, segment_rows=300, shards=1, seed=2, **INDEX)
    (sid,) = ds.segment_ids
    store, cat = catalog(ds.data_dir)
    (index,) = cat.describe_index(ds.collection_id)
    h = await NodeHarness(ds.data_dir).start()
    try:
        with pytest.raises(errors.SegmentNotLoaded):
            await h.node.save_index(SaveIndexRequest(ds.collection_id, sid, {ds.vec_fid: index.indexID}))
        await h.load(ds)
        with pytest.raises(errors.IndexNotFound):  # the node serves another index than the one asked for
            await h.node.save_index(SaveIndexRequest(ds.collection_id, sid, {ds.vec_fid: index.indexID + 1}))
        files = await h.node.save_index(SaveIndexRequest(ds.collection_id, sid, {ds.vec_fid: index.indexID}))
        info = files[ds.vec_fid]
        assert info.path == cat.segment_files_record(sid).index_path(ds.vec_fid)
        segment_files.verify_file(ds.data_dir, info)
        # the catalog records it only for the live index
        with pytest.raises(errors.IndexNotFound):
            cat.add_index_file(sid, ds.vec_fid, info, index_id=index.indexID + 1)
        assert cat.list_segment_indexes(ds.collection_id) == []
        build = cat.add_index_file(sid, ds.vec_fid, info, index_id=index.indexID)
        assert list(build.index_file_keys) == [info.path]
    finally:
        await h.stop()
        store.close()


# --- a cluster ----------------------------------------------------------------------------------------------

@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("persist")
    ds = import_collection(root, "persist", n=1000, shards=2, segment_rows=250, seed=11, **INDEX)
    settings = fast_settings(ds.data_dir, workers=2)
    settings.set("querycoord.check_index_interval_s", 0.3)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    cluster.import_root = root
    yield cluster, Coord(cluster.addresses.grpc, cluster.coord), ds
    await asyncio.wait_for(cluster.stop(), 60)


@pytest_asyncio.fixture(loop_scope="module")
async def env(cluster_env):
    """The module's cluster, given back to the next test as this one found it."""
    cluster, coord, _ = cluster_env
    async with left_as_found(coord, cluster.coord):
        yield cluster_env


async def saved_builds(cluster, coord: Coord, ds) -> dict[int, object]:
    """Every segment's index saved, as a first load leaves it; loads and releases once if not so yet (the
    tests that need saved files do not depend on the test that saves them first)."""
    if set(live_builds(cluster, ds)) != set(ds.segment_ids):
        await coord.load(ds.collection_id)
        await poll_until(lambda: set(live_builds(cluster, ds)) == set(ds.segment_ids), 60, what="every index saved")
        await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=ds.collection_id))
    return live_builds(cluster, ds)


def live_builds(cluster, ds) -> dict[int, object]:
    """Segment id -> the catalog's live build of the collection's index."""
    cat = cluster.coord.catalog
    (index,) = cat.describe_index(ds.collection_id)
    return {b.segmentID: b for b in cat.list_segment_indexes(ds.collection_id, index_id=index.indexID)}


def served(cluster, ds) -> list[query_coord_pb2.FieldIndexInfo]:
    """The vector field's index as every node serving a segment reports it (GetDataDistribution)."""
    return [seg.index_info[ds.vec_fid] for _, seg in cluster.coord.dist.segments(ds.collection_id)]


@pytest.mark.slow
async def test_first_load_builds_then_one_save_per_segment_is_recorded(env):
    """On a collection of its own: the module's collection may already have its indexes saved."""
    cluster, coord, _ = env
    ds = import_collection(cluster.import_root, "persist_first", n=1000, shards=2, segment_rows=250, seed=12,
                           **INDEX)
    cid = ds.collection_id
    cat = cluster.coord.catalog
    assert live_builds(cluster, ds) == {}
    victim = ds.segment_ids[-1]
    blocked = Path(ds.data_dir, cat.segment_files_record(victim).index_path(ds.vec_fid))
    blocked.mkdir()  # a directory where the file goes: its save fails (IO failed) until it is gone
    await coord.load(cid, replica_number=2)
    await poll_until(lambda: len(served(cluster, ds)) == 2 * len(ds.segment_ids), 30, what="both replicas reported")
    assert all(not info.index_file_paths and info.buildID == 0 for info in served(cluster, ds))  # built at load

    others = set(ds.segment_ids) - {victim}
    await poll_until(lambda: set(live_builds(cluster, ds)) == others, 60, what="the other indexes saved")
    failure = await poll_until(lambda: cluster.coord.scheduler.failures.get(("save-index", victim)), 30,
                               what="the blocked save failed")
    assert "IO failed" in failure and str(blocked.relative_to(ds.data_dir)) in failure, failure
    blocked.rmdir()
    await poll_until(lambda: set(live_builds(cluster, ds)) == set(ds.segment_ids), 60, what="the failed save retried")
    for sid, b in live_builds(cluster, ds).items():
        (f,) = b.files
        assert list(b.index_file_keys) == [f.path] == [cat.segment_files_record(sid).index_path(ds.vec_fid)]
        segment_files.verify_file(ds.data_dir, file_info(f))
    # several index checker rounds: the other replica's copy is not saved again
    await checker_rounds(cluster.coord, 3, [INDEX_CHECKER])
    assert cluster.coord.scheduler.tasks(cid) == []
    every = cat.list_segment_indexes(cid, include_deleted=True)
    assert sorted(b.segmentID for b in every) == sorted(ds.segment_ids)
    await assert_search_matches(coord, ds, replica_index=0)
    await assert_search_matches(coord, ds, replica_index=1)
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))


@pytest.mark.slow
async def test_later_loads_read_the_saved_files(env):
    cluster, coord, ds = env
    cid = ds.collection_id
    builds = await saved_builds(cluster, coord, ds)
    assert set(builds) == set(ds.segment_ids)
    await coord.load(cid)

    def from_files():
        got = {seg.ID: seg.index_info[ds.vec_fid] for _, seg in cluster.coord.dist.segments(cid)}
        return set(got) == set(ds.segment_ids) and all(
            list(got[sid].index_file_paths) == list(b.index_file_keys) and got[sid].buildID == b.buildID
            for sid, b in builds.items())
    await poll_until(from_files, 30, what="every segment served from its saved file")
    await assert_search_matches(coord, ds)
    await checker_rounds(cluster.coord, 3, [INDEX_CHECKER])  # nothing is saved again
    assert cluster.coord.scheduler.tasks(cid) == [] and live_builds(cluster, ds) == builds
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))


@pytest.mark.slow
async def test_a_corrupted_saved_index_fails_the_load_with_604(env):
    cluster, coord, ds = env
    cid = ds.collection_id
    victim = ds.segment_ids[0]
    (f,) = (await saved_builds(cluster, coord, ds))[victim].files
    with corrupted(Path(ds.data_dir, f.path)):
        await coord.ok("LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=cid))

        def failed():
            error = cluster.coord.failed_loads.get(cid)
            return error is not None and error.code == 604 and f.path in str(error) and "checksum" in str(error)
        await poll_until(failed, 30, what="the load of the corrupted index file failed with 604")
        assert await coord.percentage(cid) < 100
    await coord.wait_loaded(cid, 60)  # repaired: the retried load reads it
    await assert_search_matches(coord, ds)
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))
