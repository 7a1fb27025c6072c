"""QueryNode segment control over gRPC: LoadSegments (real files, checksums, scopes, transfer), releases,
partitions, GetSegmentInfo, GetDataDistribution, node identity, and load infos built from the catalog."""

from __future__ import annotations

import os
from pathlib import Path

import grpc
import numpy as np
import psutil
import pyarrow as pa
import pytest

from vecgrid.cluster.querycoord.load_info import index_info_list, segment_load_info
from vecgrid.common.keys import CHECKSUM_PROPERTY_PREFIX
from vecgrid.gpu import build
from vecgrid.proto import common_pb2, data_coord_pb2, internal_pb2, query_coord_pb2
from vecgrid.storage import segment_files
from vecgrid.storage.segment_files import TIMESTAMP_FIELD
from vecgrid.storage.catalog import arrow_schema
from tests.querynode_support import (NODE_ID, NodeHarness, catalog, import_collection, load_request,
                                     query_request, search_request)

pytest.importorskip("faiss")


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return import_collection(tmp_path_factory.mktemp("qn-load"), "docs", metric="L2", index="IVF_FLAT",
                             index_params={"nlist": 8}, n=1500, segment_rows=400)


@pytest.fixture
async def qn(ds):
    h = await NodeHarness(ds.data_dir).start()
    yield h
    await h.stop()


async def _count(h: NodeHarness, ds) -> int:
    reply = await h.call("QuerySegments", query_request(ds, is_count=True))
    assert reply.status.code == 0, reply.status
    return reply.fields_data[0].scalars.long_data.data[0]


async def _dist(h: NodeHarness) -> query_coord_pb2.GetDataDistributionResponse:
    reply = await h.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
    assert reply.status.code == 0
    return reply


async def test_load_reports_distribution_and_segment_info(qn, ds):
    before = (await _dist(qn)).lastModifyTs
    await qn.load(ds, version=42)
    dist = await _dist(qn)
    assert dist.nodeID == NODE_ID
    assert dist.lastModifyTs > before
    assert dist.memCapacityInMB == pytest.approx(psutil.virtual_memory().total / 2**20)
    assert not dist.channels and not dist.leader_views
    by_id = {s.ID: s for s in dist.segments}
    assert set(by_id) == set(ds.segment_ids)
    for meta in ds.summary["segments"]:
        s = by_id[meta["segment_id"]]
        assert (s.collection, s.partition, s.channel, s.version) == (ds.collection_id, meta["partition_id"],
                                                                     meta["channel"], 42)
        assert s.level == data_coord_pb2.L1 and s.last_delta_timestamp == 0
        info = s.index_info[ds.vec_fid]
        params = {kv.key: kv.value for kv in info.index_params}
        assert params["index_type"] == "IVF_FLAT" and params["metric_type"] == "L2"
        assert info.num_rows == meta["num_rows"] and info.index_size > 0 and not info.index_file_paths

    first, second = ds.segment_ids[:2]
    reply = await qn.call("GetSegmentInfo", query_coord_pb2.GetSegmentInfoRequest(segmentIDs=[first, 999_999, second]))
    assert reply.status.code == 0 and [i.segmentID for i in reply.infos] == [first, second]  # unknown skipped
    info = reply.infos[0]
    assert info.collectionID == ds.collection_id and info.node_ids == [NODE_ID] and info.nodeID == NODE_ID
    assert info.segment_state == common_pb2.Sealed and info.num_rows == ds.summary["segments"][0]["num_rows"]
    assert info.mem_size > 0 and info.index_infos[0].fieldID == ds.vec_fid and info.indexID > 0
    everything = await qn.call("GetSegmentInfo", query_coord_pb2.GetSegmentInfoRequest(collectionID=ds.collection_id))
    assert len(everything.infos) == len(ds.segment_ids)
    assert await _count(qn, ds) == len(ds.pks)

    # loading the same segments again changes nothing
    await qn.load(ds, version=43)
    again = await _dist(qn)
    assert {s.ID: s.version for s in again.segments} == {sid: 42 for sid in ds.segment_ids}
    assert again.lastModifyTs == dist.lastModifyTs


async def test_release_segments_partitions_and_collection(qn, ds):
    await qn.load(ds)
    first, second, *rest = ds.segment_ids
    gone = ds.summary["segments"][0]["num_rows"] + ds.summary["segments"][1]["num_rows"]
    before = (await _dist(qn)).lastModifyTs
    status = await qn.call("ReleaseSegments", query_coord_pb2.ReleaseSegmentsRequest(
        collectionID=ds.collection_id, segmentIDs=[first, second, 424242], scope=query_coord_pb2.All))
    assert status.code == 0  # the unknown id is ignored, as Milvus does
    dist = await _dist(qn)
    assert {s.ID for s in dist.segments} == set(rest) and dist.lastModifyTs > before
    assert await _count(qn, ds) == len(ds.pks) - gone
    # scope Streaming releases no sealed segment
    await qn.call(
        "ReleaseSegments", query_coord_pb2.ReleaseSegmentsRequest(segmentIDs=rest, scope=query_coord_pb2.Streaming)
    )
    assert {s.ID for s in (await _dist(qn)).segments} == set(rest)

    partition = ds.summary["segments"][0]["partition_id"]
    assert (
        await qn.call("LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=123456, partitionIDs=[1]))
    ).code == 0
    status = await qn.call("ReleasePartitions", query_coord_pb2.ReleasePartitionsRequest(collectionID=ds.collection_id,
                                                                          partitionIDs=[partition]))
    assert status.code == 0 and not (await _dist(qn)).segments
    assert (await qn.call("LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=ds.collection_id,
                                                                    partitionIDs=[partition]))).code == 0
    assert qn.node.collections.get(ds.collection_id).partitions == {partition}

    await qn.load(ds)
    assert (
        await qn.call("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=ds.collection_id))
    ).code == 0
    assert not (await _dist(qn)).segments
    reply = await qn.call("QuerySegments", query_request(ds, is_count=True))
    assert reply.status.code == 101 and "collection not loaded" in reply.status.reason
    # releasing what is not there succeeds
    assert (
        await qn.call("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=ds.collection_id))
    ).code == 0
    assert (
        await qn.call("ReleasePartitions", query_coord_pb2.ReleasePartitionsRequest(collectionID=9, partitionIDs=[1]))
    ).code == 0


async def test_empty_index_info_list_is_index_not_found(qn, ds):
    req = load_request(ds)
    del req.index_info_list[:]
    status = await qn.call("LoadSegments", req)
    assert status.code == 700 and status.reason.startswith("index not found[collection=docs]")
    assert not (await _dist(qn)).segments


async def test_node_id_mismatch_is_a_grpc_error(qn, ds):
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await qn.call("LoadSegments", load_request(ds), metadata=(("serverid", "99"),))
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    assert err.value.details() == f"node not match[expectedNodeID=99][actualNodeID={NODE_ID}]"
    with pytest.raises(grpc.aio.AioRpcError) as err:
        [r async for r in qn.stub.QueryStreamSegments(query_request(ds), metadata=(("serverid", "3"),))]
    assert err.value.code() == grpc.StatusCode.UNKNOWN and "node not match" in err.value.details()
    assert not (await _dist(qn)).segments
    # no serverid at all: not checked (as Milvus)
    status = await qn.stub.LoadSegments(load_request(ds, ds.segment_ids[:1]), timeout=60)
    assert status.code == 0


async def test_node_without_id_is_not_ready(ds):
    h = await NodeHarness(ds.data_dir).start(assign=False)
    try:
        status = await h.stub.LoadSegments(load_request(ds), timeout=30)
        assert status.code == 1 and "service not ready" in status.reason
        reply = await h.stub.SearchSegments(search_request(ds, ds.vectors[:1], 3), timeout=30)
        assert reply.status.code == 1
    finally:
        await h.stop()


async def test_transfer_forwards_to_the_destination_node(ds):
    a = await NodeHarness(ds.data_dir, node_id=7).start()
    b = await NodeHarness(ds.data_dir, node_id=8).start()
    try:
        req = load_request(ds, ds.segment_ids[:2], dst_node_id=8, need_transfer=True)
        status = await a.call("LoadSegments", req)
        assert status.code == 500 and "channel not found" in status.reason  # a does not know node 8
        a.node.register_peer(8, b.node.address)
        status = await a.call("LoadSegments", req)
        assert status.code == 0, status
        assert not (await _dist(a)).segments
        assert {s.ID for s in (await _dist(b)).segments} == set(ds.segment_ids[:2])
        # the destination itself loads it
        status = await a.call("LoadSegments", load_request(ds, ds.segment_ids[2:3], dst_node_id=7, need_transfer=True))
        assert status.code == 0 and {s.ID for s in (await _dist(a)).segments} == {ds.segment_ids[2]}
        # releasing through a delegator needs one (milestone 2)
        status = await a.call("ReleaseSegments", query_coord_pb2.ReleaseSegmentsRequest(
            segmentIDs=ds.segment_ids[2:3], shard=ds.channels[0], need_transfer=True))
        assert status.code == 500 and f"channel not found[channel={ds.channels[0]}]" in status.reason
        assert {s.ID for s in (await _dist(a)).segments} == {ds.segment_ids[2]}
    finally:
        await a.stop()
        await b.stop()


def _segment_file(ds, segment_id: int, name: str) -> Path:
    meta = next(s for s in ds.summary["segments"] if s["segment_id"] == segment_id)
    return Path(ds.data_dir, "segments", str(ds.collection_id), str(meta["partition_id"]), str(segment_id), name)


async def test_corrupted_or_truncated_files_fail_with_604_and_change_nothing(tmp_path):
    small = import_collection(tmp_path, "fragile", metric="L2", index="FLAT", n=600, segment_rows=200, shards=1)
    h = await NodeHarness(small.data_dir).start()
    try:
        victim = small.segment_ids[1]
        path = _segment_file(small, victim, "data.parquet")
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        path.write_bytes(bytes(raw))
        status = await h.call("LoadSegments", load_request(small))
        assert status.code == 604
        assert status.reason.startswith(f"segment load failed[segment={victim}]: ")
        assert "data.parquet: checksum mismatch" in status.reason
        assert not (await _dist(h)).segments and not h.node.collections.get(small.collection_id)
        reply = await h.call("SearchSegments", search_request(small, small.vectors[:1], 3))
        assert reply.status.code == 101

        path.write_bytes(bytes(raw[:-100]))  # truncated: caught by the size check, checksum or not
        req = load_request(small)
        for key in [k for k in req.base.properties if k.startswith(CHECKSUM_PROPERTY_PREFIX)]:
            del req.base.properties[key]
        status = await h.call("LoadSegments", req)
        assert status.code == 604 and "truncated" in status.reason and "data.parquet" in status.reason
        assert not (await _dist(h)).segments

        # a path outside the storage root is refused
        req = load_request(small, small.segment_ids[:1])
        req.infos[0].binlog_paths[0].binlogs[0].log_path = "../../etc/passwd"
        status = await h.call("LoadSegments", req)
        assert status.code == 604 and "not a path inside the storage root" in status.reason
    finally:
        await h.stop()


async def test_prebuilt_index_file_is_read_and_verified(tmp_path):
    small = import_collection(tmp_path, "indexed", metric="IP", index="IVF_FLAT", index_params={"nlist": 4},
                              n=400, segment_rows=400, shards=1)
    (sid,) = small.segment_ids
    store, cat = catalog(small.data_dir)
    try:
        record = cat.segment_files_record(sid)
        built = build.build_index_file(small.vectors[small.rows_of_segment(sid)], "IVF_FLAT", "IP", {"nlist": 4})
        info = segment_files.put_file(small.data_dir, record.index_path(small.vec_fid), built)
        cat.add_index_file(sid, small.vec_fid, info)
        load_info, checksums = segment_load_info(cat, sid)
    finally:
        store.close()
    (fii,) = load_info.index_infos
    assert list(fii.index_file_paths) == [info.path] and fii.index_size == len(built)
    assert checksums[info.path] == info.checksum and len(checksums) == 2
    h = await NodeHarness(small.data_dir).start()
    try:
        await h.load(small)
        (seg,) = (await _dist(h)).segments
        assert list(seg.index_info[small.vec_fid].index_file_paths) == [info.path]
        engine = h.node.segments.get(sid).engines[small.vec_fid]
        assert engine.header["built_type"] == "IVF_FLAT" and engine.metric == "IP"
        await h.call("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=small.collection_id))

        path = Path(small.data_dir, info.path)
        raw = bytearray(path.read_bytes())
        raw[-10] ^= 0x55
        path.write_bytes(bytes(raw))
        status = await h.call("LoadSegments", load_request(small))
        assert status.code == 604 and f"{info.path}: checksum mismatch" in status.reason
        assert not (await _dist(h)).segments
    finally:
        await h.stop()


async def test_delta_and_index_scopes(qn, ds):
    sid = ds.segment_ids[0]
    await qn.load(ds, [sid])
    rows = ds.rows_of_segment(sid)
    store, cat = catalog(ds.data_dir)
    try:
        record = cat.segment_files_record(sid)
    finally:
        store.close()
    # a delete log written after the load (Milvus: a flushed delete of a loaded segment)
    delete_ts = ds.import_ts + 5
    victims = ds.pks[rows[:10]]
    record = segment_files.write_deltalog(record, victims, np.full(10, delete_ts, np.uint64), replace=True)
    req = load_request(ds, [sid], load_scope=query_coord_pb2.Delta)
    req.infos[0].deltalogs.add(fieldID=0).binlogs.add(log_path=record.deltalog.path, log_size=record.deltalog.size)
    req.base.properties[CHECKSUM_PROPERTY_PREFIX + record.deltalog.path] = record.deltalog.checksum
    assert (await qn.call("LoadSegments", req)).code == 0
    stats = await qn.call("GetStatistics", query_coord_pb2.GetStatisticsRequest(
        req=internal_pb2.GetStatisticsRequest(collectionID=ds.collection_id), from_shard_leader=True))
    assert stats.status.code == 0 and dict((kv.key, kv.value) for kv in stats.stats) == {
        "row_count": str(len(rows) - 10)}
    (seg,) = (await _dist(qn)).segments
    assert seg.last_delta_timestamp == delete_ts

    # a runtime delete, then an Index-scope reload: the new copy keeps every delete
    status = await qn.call("Delete", query_coord_pb2.DeleteRequest(
        collection_id=ds.collection_id, segment_id=sid, primary_keys={"int_id": {"data": ds.pks[rows[10:12]].tolist()}},
        timestamps=[delete_ts + 1] * 2, scope=query_coord_pb2.Historical))
    assert status.code == 0
    old = qn.node.segments.get(sid)
    assert (
        await qn.call("LoadSegments", load_request(ds, [sid], load_scope=query_coord_pb2.Index, version=9))
    ).code == 0
    new = qn.node.segments.get(sid)
    assert new is not old and old.released and new.version == 9
    assert await _count(qn, ds) == len(rows) - 12
    # Delta / Index scopes skip segments that are not loaded
    assert (
        await qn.call("LoadSegments", load_request(ds, ds.segment_ids[1:2], load_scope=query_coord_pb2.Index))
    ).code == 0
    assert {s.ID for s in (await _dist(qn)).segments} == {sid}


async def test_l0_segment_deletes_reach_the_channel(qn, ds):
    channel = ds.channels[0]
    targets = ds.segments_of(channel)
    await qn.load(ds)
    rows = np.concatenate([ds.rows_of_segment(s) for s in targets])
    victims = ds.pks[rows[:7]]
    l0_id = 10_000_000 + ds.collection_id
    store, cat = catalog(ds.data_dir)
    try:
        schema = arrow_schema(cat.get_collection(ds.collection_id))
    finally:
        store.close()
    empty = schema.append(pa.field(TIMESTAMP_FIELD, pa.uint64())).empty_table()
    record = segment_files.write_segment(ds.data_dir, ds.collection_id, -1, l0_id, empty,
                                         deltalog=(victims, np.full(7, ds.import_ts + 1, np.uint64)))
    req = load_request(ds, [])
    info = req.infos.add(segmentID=l0_id, partitionID=-1, collectionID=ds.collection_id, insert_channel=channel,
                         level=data_coord_pb2.L0)
    info.binlog_paths.add(fieldID=0).binlogs.add(log_path=record.data.path, log_size=record.data.size)
    info.deltalogs.add(fieldID=0).binlogs.add(log_path=record.deltalog.path, log_size=record.deltalog.size)
    assert (await qn.call("LoadSegments", req)).code == 0
    dist = {s.ID: s for s in (await _dist(qn)).segments}
    assert dist[l0_id].level == data_coord_pb2.L0 and dist[l0_id].partition == -1
    assert await _count(qn, ds) == len(ds.pks) - 7
    # a segment of that channel loaded after the L0 segment gets its deletes too
    await qn.call(
        "ReleaseSegments", query_coord_pb2.ReleaseSegmentsRequest(segmentIDs=targets, scope=query_coord_pb2.All)
    )
    await qn.load(ds, targets)
    assert await _count(qn, ds) == len(ds.pks) - 7


async def test_partial_load_fields(qn, ds):
    fields = [ds.fid("pk"), ds.vec_fid, ds.fid("age")]
    await qn.load(ds, load_fields=fields)
    ok = await qn.call("QuerySegments", query_request(ds, output=[ds.fid("age")], limit=3))
    assert ok.status.code == 0 and [f.field_name for f in ok.fields_data] == ["pk", "age"]
    bad = await qn.call("QuerySegments", query_request(ds, output=[ds.fid("tag")], limit=3))
    assert bad.status.code == 1100 and "not loaded" in bad.status.reason


def test_load_info_from_the_catalog(ds):
    store, cat = catalog(ds.data_dir)
    try:
        sid = ds.segment_ids[0]
        info, checksums = segment_load_info(cat, sid)
        (index,) = index_info_list(cat, ds.collection_id)
    finally:
        store.close()
    meta = ds.summary["segments"][0]
    assert (info.segmentID, info.collectionID, info.partitionID, info.insert_channel, info.num_of_rows) == (
        sid, ds.collection_id, meta["partition_id"], meta["channel"], meta["num_rows"])
    assert info.level == data_coord_pb2.L1 and info.storageVersion == 2
    (group,) = info.binlog_paths
    (binlog,) = group.binlogs
    assert group.fieldID == 0 and binlog.log_path.endswith(f"/{sid}/data.parquet")
    assert binlog.log_size == os.path.getsize(Path(ds.data_dir, binlog.log_path))
    assert checksums[binlog.log_path].startswith("crc32:") and not info.index_infos
    assert index.fieldID == ds.vec_fid and {kv.key: kv.value for kv in index.index_params}["index_type"] == "IVF_FLAT"
    req = load_request(ds, [sid])
    assert req.base.properties[CHECKSUM_PROPERTY_PREFIX + binlog.log_path] == checksums[binlog.log_path]
    assert req.load_meta.collectionID == ds.collection_id and req.load_meta.load_type == query_coord_pb2.LoadCollection
    assert list(req.load_meta.partitionIDs) == ds.summary["partition_ids"] and req.schema.name == "docs"


async def test_a_cancelled_duplicate_load_leaves_the_first_one_alone(qn, ds, monkeypatch):
    """A second LoadSegments of a segment being loaded waits for the first; when that waiter is cancelled
    (its client went away) the first load must finish normally (a gather of the shared future cancelled
    it, and the first request then failed with InvalidStateError).  Events, not timing, put the cancel
    exactly there: the first load is inside its worker thread and the second waits on its future."""
    import asyncio
    import threading

    loading, finish = threading.Event(), threading.Event()
    real_load = qn.node.loader._load_batch

    def load_when_told(*args, **kwargs):
        loading.set()
        if not finish.wait(30):
            raise TimeoutError("the test never let the load finish")
        return real_load(*args, **kwargs)
    monkeypatch.setattr(qn.node.loader, "_load_batch", load_when_told)
    req = load_request(ds, ds.segment_ids[:1])
    first = asyncio.ensure_future(qn.node.load_segments(req))
    try:
        assert await asyncio.to_thread(loading.wait, 30), "the first load never started"

        waiting = asyncio.Event()
        real_wait = qn.node.loader._wait_for_loads

        async def wait_noted(ids):
            waiting.set()   # runs on into real_wait, which suspends on the first load's future
            await real_wait(ids)
        monkeypatch.setattr(qn.node.loader, "_wait_for_loads", wait_noted)
        second = asyncio.ensure_future(qn.node.load_segments(req))
        async with asyncio.timeout(30):
            await waiting.wait()
        assert not second.done()
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second
    finally:
        finish.set()
    status = await asyncio.wait_for(first, 30)
    assert status.code == 0, status
    assert ds.segment_ids[0] in qn.node.segments
