"""Index builds of flushed segments, in process: what the builder proposes, the worker handler, the load
info, and a QueryNode serving a flushed segment exactly (interim FLAT) before its index is built and
from the built file after an Index-scope reload.

Bulk-imported segments are not the builder's: they are indexed at their first load (test_index_persist)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.cluster.datacoord.index_builder import IndexBuilder
from vecgrid.cluster.datanode.index_build import build_segment_index
from vecgrid.cluster.index_builds import built_by_index_builder, record_saved_indexes
from vecgrid.cluster.querycoord.checkers.index_checker import built_at_load, served_interim
from vecgrid.cluster.querycoord.load_info import segment_load_info
from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.config import Settings
from vecgrid.gpu import build
from vecgrid.gpu.results import from_search_result_data
from vecgrid.proto import query_coord_pb2
from vecgrid.storage import segment_files
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import Wal
from tests.datacoord_support import Inserted, insert_and_flush
from tests.querycoord_support import corrupted
from tests.querynode_support import (NodeHarness, assert_same_knn, catalog, dense, import_collection,
                                     search_request)

pytest.importorskip("faiss")

INDEX = dict(metric="L2", index="IVF_FLAT", index_params={"nlist": 16})


@pytest.fixture
def flushed(tmp_path):
    """A bulk-imported collection (2 segments, IVF_FLAT defined) and one segment flushed from its WAL."""
    ds = import_collection(tmp_path, "built", n=400, shards=1, segment_rows=200, seed=3, **INDEX)
    store, cat = catalog(ds.data_dir)
    data = DataDir(ds.data_dir)
    wal = Wal(str(data.wal_root))
    appenders = ChannelAppenders(wal, cat.allocate_timestamp, cat.allocate_segment_id)
    try:
        inserted = insert_and_flush(cat, appenders, wal, data.segment_root, ds, ds.channels[0], n=300,
                                    key_offset=1_000_000)
        yield ds, cat, inserted
    finally:
        appenders.close()
        store.close()


def builder(cat, ds) -> IndexBuilder:
    settings = Settings.load(env={}, overrides={"common.data_dir": ds.data_dir})
    return IndexBuilder(cat, client=None, settings=settings)


def test_the_builder_owns_flushed_segments_only(flushed):
    ds, cat, inserted = flushed
    (sid,) = inserted.segment_ids
    assert built_by_index_builder(cat.get_segment(sid))
    assert not any(built_by_index_builder(cat.get_segment(s)) for s in ds.segment_ids)  # bulk-imported
    found, refused = builder(cat, ds).pending()
    assert refused == {}
    (p,) = found
    (index,) = cat.describe_index(ds.collection_id)
    assert (p.segment_id, p.field_id, p.index_id) == (sid, ds.vec_fid, index.indexID)
    assert p.request.data == cat.segment_files_record(sid).data and p.request.num_rows == 300


def test_handler_writes_a_build_named_file_that_the_catalog_records(flushed):
    ds, cat, inserted = flushed
    (sid,) = inserted.segment_ids
    b = builder(cat, ds)
    (p,) = b.pending()[0]
    request = dataclasses.replace(p.request, build_id=cat.allocate_ids(1))
    info = build_segment_index(request)
    assert info.path == request.path
    assert info.path.endswith(f"/index_{ds.vec_fid}_{request.build_id}.bin")
    segment_files.verify_file(ds.data_dir, info)
    index, header = build.read_index_file(Path(ds.data_dir, info.path).read_bytes())
    assert (header["index_type"], header["metric"], header["num_rows"], index.ntotal) == ("IVF_FLAT", "L2", 300, 300)
    # the index holds the segment's vectors in row order: each finds itself
    _, I = index.search(inserted.vectors[:5], 1)
    assert I[:, 0].tolist() == [0, 1, 2, 3, 4]

    assert record_saved_indexes(cat, sid, {ds.vec_fid: p.index_id}, {ds.vec_fid: info}) == 1
    (recorded,) = cat.list_segment_indexes(ds.collection_id, segment_id=sid)
    assert list(recorded.index_file_keys) == [info.path]
    assert b.pending() == ([], {})
    # a second (late) build of the same index is not recorded over the first
    late = build_segment_index(dataclasses.replace(request, build_id=cat.allocate_ids(1)))
    assert late.path != info.path
    assert record_saved_indexes(cat, sid, {ds.vec_fid: p.index_id}, {ds.vec_fid: late}) == 0


def test_handler_refuses_an_altered_data_file(flushed):
    ds, cat, _ = flushed
    (p,) = builder(cat, ds).pending()[0]
    with corrupted(Path(ds.data_dir, p.request.data.path)):
        with pytest.raises(errors.SegmentLoadFailed, match=p.request.data.path):
            build_segment_index(dataclasses.replace(p.request, build_id=1))
    assert not Path(ds.data_dir, dataclasses.replace(p.request, build_id=1).path).exists()


def test_load_info_asks_for_exact_search_until_the_build_is_recorded(flushed):
    ds, cat, inserted = flushed
    (sid,) = inserted.segment_ids
    (index,) = cat.describe_index(ds.collection_id)
    bulk, _ = segment_load_info(cat, ds.segment_ids[0])
    assert list(bulk.index_infos) == []   # indexed at load by the node, as before
    info, _ = segment_load_info(cat, sid)
    (interim,) = info.index_infos
    assert (interim.fieldID, interim.indexID, interim.enable_index, list(interim.index_file_paths)) == \
        (ds.vec_fid, index.indexID, False, [])
    (p,) = builder(cat, ds).pending()[0]
    file = build_segment_index(dataclasses.replace(p.request, build_id=cat.allocate_ids(1)))
    record_saved_indexes(cat, sid, {ds.vec_fid: index.indexID}, {ds.vec_fid: file})
    info, checksums = segment_load_info(cat, sid)
    (built,) = info.index_infos
    assert (built.enable_index, list(built.index_file_paths)) == (True, [file.path])
    assert checksums[file.path] == file.checksum


async def _search(h: NodeHarness, ds, xq, sid: int):
    reply = await h.call("SearchSegments", search_request(ds, xq, 10, segment_ids=[sid]))
    assert reply.status.code == 0, reply.status
    return dense(from_search_result_data(reply.sliced_blob), 10)


def _reference(inserted: Inserted, xq: np.ndarray, k: int = 10):
    d = ((xq[:, None, :] - inserted.vectors[None, :, :]) ** 2).sum(-1)
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    keys = np.empty(order.shape, dtype=object)
    keys[:] = inserted.pks[order]
    return np.take_along_axis(d, order, 1).astype(np.float32), keys


async def test_node_serves_a_flushed_segment_exactly_then_from_the_built_file(flushed):
    ds, cat, inserted = flushed
    (sid,) = inserted.segment_ids
    (index,) = cat.describe_index(ds.collection_id)
    xq = np.random.default_rng(9).standard_normal((6, inserted.vectors.shape[1])).astype(np.float32)
    h = await NodeHarness(ds.data_dir).start()
    try:
        await h.load(ds, [sid])
        (seg,) = [s for s in h.node.segments.list() if s.segment_id == sid]
        served = seg.version_info().index_info[ds.vec_fid]
        assert served_interim(seg.version_info(), ds.vec_fid, index.indexID)
        assert not built_at_load(seg.version_info(), ds.vec_fid, index.indexID)  # nothing to save
        assert (served.enable_index, list(served.index_file_paths)) == (False, [])
        assert seg.engine(ds.vec_fid).info["built_type"] == "FLAT"
        assert_same_knn(*_reference(inserted, xq), *await _search(h, ds, xq, sid))

        (p,) = builder(cat, ds).pending()[0]
        file = build_segment_index(dataclasses.replace(p.request, build_id=cat.allocate_ids(1)))
        record_saved_indexes(cat, sid, {ds.vec_fid: index.indexID}, {ds.vec_fid: file})
        await h.load(ds, [sid], load_scope=query_coord_pb2.Index)
        (seg,) = [s for s in h.node.segments.list() if s.segment_id == sid]
        served = seg.version_info().index_info[ds.vec_fid]
        assert (served.enable_index, list(served.index_file_paths)) == (True, [file.path])
        assert not served_interim(seg.version_info(), ds.vec_fid, index.indexID)
        assert seg.engine(ds.vec_fid).info["built_type"] == "IVF_FLAT"
        assert_same_knn(*_reference(inserted, xq), *await _search(h, ds, xq, sid))  # nprobe covers every list
    finally:
        await h.stop()
