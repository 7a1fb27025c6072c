"""A shard leader during a compaction's hand-off: the result joins the view while its sources are still
served (the current target names them until the next one is promoted), and every row must be read once.

Milvus's delegator reads only the segments of its current target version; vecgrid's leader stops reading a
segment as soon as one compacted from it (``compactionFrom``, in its load info) is in its view, and reads it
again should that one leave the view first.  Two QueryNodes in process over gRPC, one channel, sealed
segments on both (see :mod:`tests.delegator_support`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from vecgrid.cluster.datanode.compaction import MixPlan, compact_mix
from vecgrid.proto import query_coord_pb2
from vecgrid.storage.dml import InsertBatch
from vecgrid.cluster.datanode.flush import flush_channel
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import MessageKind, Wal
from tests.delegator_support import LEADER, WORKER, K, close, make_cluster, search
from tests.querynode_support import DIM, assert_same_knn, catalog, dense, query_request, reference_search


async def _count(c) -> int:
    ts = c.tick()
    req = query_request(c.ds, is_count=True, from_shard_leader=False)
    req.req.guarantee_timestamp = ts
    reply = await c.leader.call("Query", req)
    assert reply.status.code == 0, reply.status
    return int(reply.fields_data[0].scalars.long_data.data[0])


async def _pks(c) -> list[int]:
    ts = c.tick()
    req = query_request(c.ds, from_shard_leader=False)
    req.req.guarantee_timestamp = ts
    reply = await c.leader.call("Query", req)
    assert reply.status.code == 0, reply.status
    return sorted(reply.ids.int_id.data)


def _compact(c, sources: list[int]) -> int:
    """Merge ``sources`` into a new published segment (compactionFrom = sources); returns its id."""
    store, cat = catalog(c.ds.data_dir)
    try:
        seg = cat.get_segment(sources[0])
        result_id = cat.allocate_segment_id()
        result = compact_mix(MixPlan(plan_id=1, collection_id=c.ds.collection_id, partition_id=seg.partitionID,
                                     channel=seg.insert_channel, pk_name="pk", root=DataDir(c.ds.data_dir).segment_root,
                                     sources=tuple(cat.segment_files_record(s) for s in sources), deletes=(),
                                     result_id=result_id))
        cat.publish_segment_records([dict(record=result.record, insert_channel=seg.insert_channel,
                                          compaction_from=sources)])
        return result_id
    finally:
        store.close()


async def test_a_leader_reads_each_row_once_while_a_compaction_hands_off(tmp_path):
    c = await make_cluster(tmp_path, "L2")
    try:
        everything = sorted(c.ds.pks.tolist())
        assert await _count(c) == len(everything)
        on_leader, on_worker = c.ds.segment_ids[0], c.ds.segment_ids[1]
        result = _compact(c, [on_leader, on_worker])
        # the result loads on the worker and joins the view; the sources are still in it
        await c.leader.load(c.ds, [result], dst_node_id=WORKER, need_transfer=True, version=6)
        dist = await c.leader.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        assert {on_leader, on_worker, result} <= set(dist.leader_views[0].segment_dist)
        assert await _count(c) == len(everything)
        assert await _pks(c) == everything
        xq = np.random.default_rng(7).standard_normal((5, DIM)).astype(np.float32)
        _, tk = await search(c, c.full.vectors[:5], guarantee=c.tick())
        _, keys = dense(tk, K)
        for row in keys:
            found = [k for k in row if k is not None]
            assert len(found) == len(set(found)), row   # no key twice
        _, tk = await search(c, xq, guarantee=c.tick())
        assert_same_knn(*reference_search(c.full, xq, K, c.mask()), *dense(tk, K))

        # a delete now reaches the result (and the sources)
        victim = int(c.ds.pks[c.ds.rows_of_segment(on_worker)[3]])
        c.delete([victim])
        assert await _pks(c) == [k for k in everything if k != victim]

        # the result leaves the view first (its node lost, say): the sources are read again
        remove = query_coord_pb2.SyncDistributionRequest(
            collectionID=c.ds.collection_id,
            channel=c.ds.channels[0],
            actions=[query_coord_pb2.SyncAction(type=query_coord_pb2.Remove, segmentID=result, nodeID=-1)],
        )
        assert (await c.leader.call("SyncDistribution", remove)).code == 0
        assert await _count(c) == len(everything) - 1
        # back, then the sources released (the next target promoted): still every row once
        await c.leader.load(c.ds, [result], dst_node_id=WORKER, need_transfer=True, version=7)
        for sid, node in ((on_leader, LEADER), (on_worker, WORKER)):
            release = query_coord_pb2.ReleaseSegmentsRequest(
                collectionID=c.ds.collection_id,
                nodeID=node,
                segmentIDs=[sid],
                scope=query_coord_pb2.Historical,
                shard=c.ds.channels[0],
                need_transfer=True,
            )
            assert (await c.leader.call("ReleaseSegments", release)).code == 0
        assert await _pks(c) == [k for k in everything if k != victim]
    finally:
        await close(c)


async def test_a_result_of_results_hides_sources_its_own_sources_never_loaded_over(tmp_path):
    """Compactions outpace target promotion: S0 + S1 became R1, which never loaded before R1 + S2 became R2.
    The leader holds S0, S1, S2 and then R2; it must know R2 replaces S0 and S1 too."""
    c = await make_cluster(tmp_path, "L2")
    try:
        everything = sorted(c.ds.pks.tolist())
        s0, s1, s2 = c.ds.segment_ids[:3]
        first = _compact(c, [s0, s1])
        second = _compact(c, [first, s2])
        await c.leader.load(c.ds, [second], dst_node_id=WORKER, need_transfer=True, version=6)
        assert await _count(c) == len(everything)
        assert await _pks(c) == everything
    finally:
        await close(c)


async def test_growing_rows_of_a_flushed_source_go_when_its_compaction_result_joins(tmp_path):
    """A flushed segment can be compacted before the leader ever adopts its sealed copy (the restarted
    coordinator's flush, then an automatic merge): the leader then adopts only the result.  Its growing rows
    under the source's id were dropped only when the sealed copy of that very id joined, so until the next
    target's UpdateVersion the rows were counted twice (CI: 664 counted for 542 live)."""
    c = await make_cluster(tmp_path, "L2")
    try:
        store, cat = catalog(c.ds.data_dir)
        try:
            growing_id = cat.allocate_segment_id()
        finally:
            store.close()
        n = 40
        rng = np.random.default_rng(11)
        pks = np.arange(10_000_000, 10_000_000 + n, dtype=np.int64)
        vectors = rng.standard_normal((n, DIM)).astype(np.float32)
        ts = c.next_ts()
        batch = InsertBatch(c.ds.collection_id, c.partition, growing_id, pa.array(pks), np.full(n, ts, np.uint64),
                            pa.record_batch({"vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                                             "age": pa.array(np.zeros(n, np.int32)), "tag": pa.array(["g"] * n),
                                             "score": pa.array(np.zeros(n))}))
        c.writer.append(MessageKind.INSERT, ts, batch.encode())
        c.writer.sync()
        everything = len(c.ds.pks) + n
        assert await _count(c) == everything                     # the rows are growing on the leader
        store, cat = catalog(c.ds.data_dir)
        try:
            flushed = flush_channel(cat, Wal(DataDir(c.ds.data_dir).wal_root), DataDir(c.ds.data_dir).segment_root,
                                    c.ds.channels[0], up_to_ts=c.tick(), trim=False)
        finally:
            store.close()
        assert [s.ID for s in flushed.segments] == [growing_id]    # sealed under the growing id
        result = _compact(c, [growing_id, c.ds.segment_ids[1]])   # never adopted by the leader itself
        await c.leader.load(c.ds, [result], dst_node_id=WORKER, need_transfer=True, version=6)
        assert await _count(c) == everything
    finally:
        await close(c)
