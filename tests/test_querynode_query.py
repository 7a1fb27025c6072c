"""QueryNode QuerySegments / QueryStreamSegments / GetStatistics / Delete / DeleteBatch over gRPC, against the
imported rows minus deletes."""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid.gpu import exprs
from vecgrid.gpu.results import field_data_to_column
from vecgrid.proto import internal_pb2, query_coord_pb2, schema_pb2
from tests.querynode_support import NodeHarness, import_collection, query_request

pytest.importorskip("faiss")


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("qn-query")
    return {
        "ints": import_collection(root, "ints", metric="L2", index="FLAT", n=1800, segment_rows=400, seed=4),
        "strs": import_collection(root, "strs", metric="IP", index="IVF_FLAT", index_params={"nlist": 4}, n=900,
                                  shards=1, segment_rows=300, str_pk=True, seed=5),
    }


@pytest.fixture
async def qn(datasets):
    h = await NodeHarness(datasets["ints"].data_dir).start()
    yield h
    await h.stop()


def _ids(reply) -> list:
    which = reply.ids.WhichOneof("id_field")
    return list(getattr(reply.ids, which).data) if which else []


def _columns(reply) -> dict:
    return {fd.field_name: field_data_to_column(fd).values for fd in reply.fields_data}


async def _query(h, req):
    reply = await h.call("QuerySegments", req)
    assert reply.status.code == 0, reply.status
    return reply


async def _row_count(h, ds, **kw) -> int:
    reply = await h.call("GetStatistics", query_coord_pb2.GetStatisticsRequest(
        req=internal_pb2.GetStatisticsRequest(collectionID=ds.collection_id, **kw), from_shard_leader=True,
        scope=query_coord_pb2.Historical))
    assert reply.status.code == 0, reply.status
    stats = {kv.key: kv.value for kv in reply.stats}
    return int(stats["row_count"])


async def _delete(h, ds, segment_id, keys, ts, **kw):
    ids = {"str_id": {"data": list(keys)}} if ds.pks.dtype.kind == "U" else {"int_id": {"data": list(keys)}}
    return await h.call("Delete", query_coord_pb2.DeleteRequest(collection_id=ds.collection_id, segment_id=segment_id,
                                                  primary_keys=ids, timestamps=[ts] * len(keys), **kw))


@pytest.mark.parametrize("name", ["ints", "strs"])
async def test_query_filters_fields_limit_and_count(qn, datasets, name):
    ds = datasets[name]
    await qn.load(ds)
    age, tag, score, vec = ds.fid("age"), ds.fid("tag"), ds.fid("score"), ds.vec_fid
    expr = exprs.or_(exprs.between(exprs.column(age, schema_pb2.Int32), 10, 12),
                 exprs.and_(exprs.compare(exprs.column(score, schema_pb2.Double), ">", 0.97),
                        exprs.match(exprs.column(tag, schema_pb2.VarChar), "prefix", "g")))
    mask = ((ds.columns["age"] >= 10) & (ds.columns["age"] <= 12)) | \
           ((ds.columns["score"] > 0.97) & np.char.startswith(ds.columns["tag"], "g"))
    rows = np.flatnonzero(mask)
    order = rows[np.argsort(ds.pks[rows], kind="stable")]
    reply = await _query(qn, query_request(ds, expr=expr, output=[tag, age, vec]))
    assert _ids(reply) == ds.pks[order].tolist()  # ordered by primary key, as Milvus merges
    cols = _columns(reply)
    assert list(cols) == [ds.pk_name, "tag", "age", "vec"]  # the primary key always comes back
    assert cols[ds.pk_name].tolist() == ds.pks[order].tolist()
    np.testing.assert_array_equal(cols["age"], ds.columns["age"][order])
    np.testing.assert_array_equal(cols["tag"], ds.columns["tag"][order])
    np.testing.assert_allclose(cols["vec"], ds.vectors[order], rtol=1e-6)
    assert sorted(reply.sealed_segmentIDs_retrieved) == sorted(ds.segment_ids)
    assert list(reply.channelIDs_retrieved) == ds.channels

    limited = await _query(qn, query_request(ds, expr=expr, limit=7))
    assert _ids(limited) == ds.pks[order[:7]].tolist() and list(_columns(limited)) == [ds.pk_name]

    count = await _query(qn, query_request(ds, expr=expr, is_count=True))
    (fd,) = count.fields_data
    assert fd.field_name == "count(*)" and fd.type == schema_pb2.Int64
    assert list(fd.scalars.long_data.data) == [len(rows)] and not _ids(count)
    everything = await _query(qn, query_request(ds, is_count=True))
    assert everything.fields_data[0].scalars.long_data.data[0] == len(ds.pks)

    # a query with no match answers empty columns of the right types
    none = await _query(qn, query_request(ds, expr=exprs.compare(exprs.column(age, schema_pb2.Int32), ">", 1000),
                                          output=[tag]))
    assert _ids(none) == [] and [fd.type for fd in none.fields_data] == \
        [schema_pb2.VarChar if name == "strs" else schema_pb2.Int64, schema_pb2.VarChar]


async def test_query_stream_in_bounded_chunks(datasets):
    ds = datasets["ints"]
    limit = 16 * 1024
    h = await NodeHarness(ds.data_dir, chunk_bytes=limit).start()
    try:
        await h.load(ds)
        req = query_request(ds, output=[ds.fid("tag"), ds.vec_fid, ds.fid("score")])
        whole = await _query(h, req)
        chunks = await h.stream("QueryStreamSegments", req)
        assert len(chunks) > 5 and all(c.status.code == 0 for c in chunks)
        assert all(c.ByteSize() <= limit for c in chunks)
        assert sum((_ids(c) for c in chunks), []) == _ids(whole) == sorted(ds.pks.tolist())
        stitched = np.concatenate([_columns(c)["vec"] for c in chunks])
        np.testing.assert_array_equal(stitched, _columns(whole)["vec"])
        assert sum(c.all_retrieve_count for c in chunks) == len(ds.pks)
        # count(*) and empty results are one message; from a proxy the stream needs a delegator
        (count,) = await h.stream("QueryStreamSegments", query_request(ds, is_count=True))
        assert count.fields_data[0].scalars.long_data.data[0] == len(ds.pks)
        (empty,) = await h.stream("QueryStreamSegments", query_request(
            ds, expr=exprs.compare(exprs.column(ds.fid("age"), schema_pb2.Int32), "<", 0)))
        assert empty.status.code == 0 and not _ids(empty)
        (refused,) = await h.stream("QueryStream", query_request(ds, from_shard_leader=False))
        assert refused.status.code == 500 and "channel not found" in refused.status.reason
        same = await h.stream("QueryStream", req)  # from a shard leader: the worker's stream
        assert sum((_ids(c) for c in same), []) == _ids(whole)
        (missing,) = await h.stream("QueryStreamSegments", query_request(datasets["strs"]))
        assert missing.status.code == 101
    finally:
        await h.stop()


async def test_statistics_and_deletes(qn, datasets):
    ds = datasets["ints"]
    await qn.load(ds)
    assert await _row_count(qn, ds) == len(ds.pks)
    partition = ds.summary["partition_ids"][0]
    assert await _row_count(qn, ds, partitionIDs=[partition]) == len(ds.pks)
    assert await _row_count(qn, ds, partitionIDs=[partition + 999]) == 0

    sid = ds.segment_ids[0]
    rows = ds.rows_of_segment(sid)
    t = ds.import_ts
    before = (await qn.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())).lastModifyTs
    assert (await _delete(qn, ds, sid, ds.pks[rows[:5]], t + 10, scope=query_coord_pb2.Historical)).code == 0
    # a delete stamped before the rows were inserted hides nothing (Milvus's MVCC rule)
    assert (await _delete(qn, ds, sid, ds.pks[rows[5:8]], t - 1)).code == 0
    assert await _row_count(qn, ds) == len(ds.pks) - 5
    dist = await qn.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
    assert dist.lastModifyTs > before
    assert {s.ID: s.last_delta_timestamp for s in dist.segments}[sid] == t + 10
    reply = await _query(qn, query_request(ds, expr=exprs.term(exprs.column(ds.fid("pk"), schema_pb2.Int64,
                                                                    is_primary_key=True), ds.pks[rows[:8]].tolist())))
    assert _ids(reply) == sorted(ds.pks[rows[5:8]].tolist())
    old = await _query(qn, query_request(ds, is_count=True, mvcc=t + 9))  # a snapshot before the delete
    assert old.fields_data[0].scalars.long_data.data[0] == len(ds.pks)

    # errors: unknown segment, growing scope, mismatched timestamps
    st = await _delete(qn, ds, 777777, ds.pks[:1], t + 10)
    assert st.code == 600 and st.reason == "segment not found[segment=777777]"
    st = await _delete(qn, ds, sid, ds.pks[:1], t + 10, scope=query_coord_pb2.Streaming)
    assert st.code == 600
    st = await qn.call("Delete", query_coord_pb2.DeleteRequest(collection_id=ds.collection_id, segment_id=sid,
                                                 primary_keys={"int_id": {"data": [1, 4]}}, timestamps=[t + 10]))
    assert st.code == 1100 and "timestamps" in st.reason
    st = await qn.call("Delete", query_coord_pb2.DeleteRequest(segment_id=sid, primary_keys={"str_id": {"data": ["x"]}},
                                                 timestamps=[t + 10]))
    assert st.code == 1100  # a VarChar key for an Int64 collection

    # DeleteBatch: the same keys on several segments; segments not here come back in missing_ids
    second, third = ds.segment_ids[1], ds.segment_ids[2]
    keys = np.concatenate([ds.pks[ds.rows_of_segment(second)[:3]], ds.pks[ds.rows_of_segment(third)[:4]]])
    reply = await qn.call("DeleteBatch", query_coord_pb2.DeleteBatchRequest(
        collection_id=ds.collection_id, segment_ids=[second, 555, third], primary_keys={"int_id": {"data":
                                                                                       keys.tolist()}},
        timestamps=[t + 20] * len(keys), scope=query_coord_pb2.All))
    assert reply.status.code == 0 and list(reply.failed_ids) == [] and list(reply.missing_ids) == [555]
    assert await _row_count(qn, ds) == len(ds.pks) - 5 - 7
    reply = await qn.call("DeleteBatch", query_coord_pb2.DeleteBatchRequest(
        collection_id=ds.collection_id, segment_ids=[second], primary_keys={"int_id": {"data": [1]}},
        timestamps=[t + 20], scope=query_coord_pb2.Streaming))
    assert reply.status.code == 0 and list(reply.missing_ids) == [second]


async def test_query_errors(qn, datasets):
    ds = datasets["ints"]
    st = (await qn.call("QuerySegments", query_request(ds))).status
    assert st.code == 101
    await qn.load(ds, ds.segment_ids[:2])
    st = (await qn.call("QuerySegments", query_request(ds, segment_ids=[ds.segment_ids[3]]))).status
    assert st.code == 601
    st = (await qn.call("QuerySegments", query_request(ds, plan=b"\xff\x00garbage"))).status
    assert st.code == 1100 and "plan" in st.reason
    st = (await qn.call("Query", query_request(ds, from_shard_leader=False))).status
    assert st.code == 500 and "channel not found" in st.reason
    st = (await qn.call("Query", query_request(ds, from_shard_leader=False, channels=[]))).status
    assert st.code == 1100
    ok = await qn.call("Query", query_request(ds, is_count=True))  # from a shard leader
    assert ok.status.code == 0
    st = (await qn.call("GetStatistics", query_coord_pb2.GetStatisticsRequest(
        req=internal_pb2.GetStatisticsRequest(collectionID=ds.collection_id), dml_channels=ds.channels))).status
    assert st.code == 500
    st = (await qn.call("GetStatistics", query_coord_pb2.GetStatisticsRequest(
        req=internal_pb2.GetStatisticsRequest(collectionID=4242), from_shard_leader=True))).status
    assert st.code == 101
