"""Who owns the state of a watched channel: the pipeline's consumer thread inserts into and deletes from
the growing segments while the event loop excludes segments (a segment sealed elsewhere, a Streaming
release, an UpdateVersion), pulls the distribution (leader view, growing row count) and trims the
delegator's delete replay buffer.  These tests run both sides at once, many times over."""

from __future__ import annotations

import pytest

import asyncio
import threading
import sys

import numpy as np
import pyarrow as pa

from vecgrid.cluster.querynode.delegator.delegator import MAX_TS
from vecgrid.cluster.querynode.pipeline import ChannelPipeline
from vecgrid.gpu.results import from_search_result_data
from vecgrid.proto import msg_pb2, query_coord_pb2
from vecgrid.storage.dml import DeleteBatch, InsertBatch, TimeTick
from vecgrid.storage.wal import MessageKind, Wal
from tests.querynode_support import DIM, TAGS, assert_same_knn, dense, reference_search, search_request
from tests.pipeline_support import COLL, DIM as PIPELINE_DIM, SCHEMA
from tests.delegator_support import K, close, make_cluster, search

NEW_SEGMENTS = 30       # growing segments each batch of the stream opens (one row each)
STREAM_BATCHES = 20     # enough: without the pipeline's lock the first test fails within a second


def _segment_id(batch: int, j: int) -> int:
    return 1000 + batch * NEW_SEGMENTS + j


def _pipeline_records(rng: np.random.Generator, batch: int, ts: int) -> list[tuple[int, int, bytes]]:
    """One row into each of NEW_SEGMENTS new segments, then a delete of the batch's first row."""
    out = []
    for j in range(NEW_SEGMENTS):
        pk = batch * NEW_SEGMENTS + j
        vec = rng.standard_normal((1, PIPELINE_DIM)).astype(np.float32)
        out.append((MessageKind.INSERT, ts, InsertBatch(
            COLL, 1, _segment_id(batch, j), pa.array([pk], pa.int64()), np.full(1, ts, np.uint64),
            pa.record_batch({"v": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), PIPELINE_DIM),
                             "age": pa.array([pk], pa.int64())})).encode()))
    out.append((MessageKind.DELETE, ts, DeleteBatch(COLL, 1, pa.array([batch * NEW_SEGMENTS]),
                                                   np.array([ts], np.uint64)).encode()))
    return out


def test_exclusions_and_row_counts_while_the_consumer_thread_inserts_and_deletes(tmp_path):
    """The loop side (exclude, num_growing_rows) against a stream that keeps opening growing segments
    and deleting from all of them: neither side may see a dict change under it, and an excluded
    segment never takes rows again."""
    rng = np.random.default_rng(1)
    wal = Wal(str(tmp_path))
    channel = "by-dev-rootcoord-dml_0_7v0"
    writer = wal.open_writer(channel, fsync="never")
    pipeline = ChannelPipeline(channel, wal.open_reader(channel), COLL, SCHEMA, "L2").start()
    excluded: set[int] = set()
    written = [0]                 # batches the feeder wrote so far
    done, quit_feeding = threading.Event(), threading.Event()

    def stream() -> None:
        try:
            for batch in range(STREAM_BATCHES):
                if quit_feeding.is_set():
                    return
                writer.append_many(_pipeline_records(rng, batch, 100 + batch))
                written[0] = batch + 1
            writer.append(MessageKind.TIMETICK, 10_000, TimeTick(10_000).encode())
        finally:
            done.set()

    # A short switch interval: the loop below never sleeps, and at the default 5 ms the feeder and the
    # consumer thread each waited that long for the GIL after every pyarrow call (15-25 s alone, against
    # 1 s); switching often also interleaves the threads inside each other's dict walks more.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    feeder = threading.Thread(target=stream)
    feeder.start()
    try:
        pick = np.random.default_rng(2)
        while not done.is_set():
            if written[0]:   # a segment of a batch already written, or of the one being written
                victim = _segment_id(int(pick.integers(written[0] + 1)), int(pick.integers(NEW_SEGMENTS)))
                if victim % 3 == 0:
                    pipeline.exclude({victim: MAX_TS})
                    excluded.add(victim)
            assert pipeline.num_growing_rows >= 0
            assert pipeline.error is None, pipeline.error
        feeder.join()
        assert pipeline.wait_tsafe(10_000, timeout=30), (pipeline.error, pipeline.lag_reason())
        assert pipeline.error is None
        growing = pipeline.growing_segments()
        kept = {sid for sid, _, _ in growing}
        assert not excluded & kept, "an excluded segment took rows again"
        everything = {_segment_id(b, j) for b in range(STREAM_BATCHES) for j in range(NEW_SEGMENTS)}
        assert kept == everything - excluded
        assert pipeline.num_growing_rows == sum(g.num_rows for _, _, g in growing)
    finally:
        sys.setswitchinterval(switch_interval)
        quit_feeding.set()
        feeder.join()
        pipeline.stop()
        writer.close()


@pytest.mark.slow  # a 2.7 s stream: make test runs it, test-fast stays under a minute
async def test_distribution_pulls_releases_and_trims_during_a_stream_of_inserts_and_deletes(tmp_path):
    """Through a real leader: a thread streams inserts into many growing segments and deletes while the
    loop pulls GetDataDistribution, releases growing segments (Streaming scope) and trims the delete
    replay buffer with UpdateVersion checkpoints.  The pipeline survives, every delete past the last
    checkpoint is still in the replay buffer, and a search never returns a deleted key."""
    c = await make_cluster(tmp_path, "L2")
    try:
        (channel,) = c.ds.channels
        delegator = c.leader.node.delegator_for(channel)
        rng = np.random.default_rng(7)
        base_pk = int(c.full.pks.max()) + 1
        first_ts = c.ts + (1 << 18)
        n_batches, per_batch = 40, 30      # each batch opens per_batch new growing segments
        written = [0]
        deleted: list[tuple[int, int]] = []      # (pk, delete ts) in stream order

        def stream() -> None:
            ts = first_ts
            for b in range(n_batches):
                records = []
                for seg in range(per_batch):
                    pk = base_pk + b * per_batch + seg
                    vec = rng.standard_normal((1, DIM)).astype(np.float32)
                    records.append((MessageKind.INSERT, ts, InsertBatch(
                        c.ds.collection_id, c.partition, 880000 + b * per_batch + seg, pa.array([pk], pa.int64()),
                        np.full(1, ts, np.uint64), pa.record_batch({
                            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), DIM),
                            "age": pa.array([1], pa.int32()), "tag": pa.array([TAGS[0]]),
                            "score": pa.array([0.5])})).encode()))
                    ts += 1
                victim = int(c.full.pks[b])                  # a sealed row: its delete is forwarded
                records.append((MessageKind.DELETE, ts, DeleteBatch(
                    c.ds.collection_id, -1, pa.array([victim], pa.int64()), np.array([ts], np.uint64)).encode()))
                deleted.append((victim, ts))
                ts += 1
                c.writer.append_many(records)
                written[0] = b + 1
            c.writer.append(MessageKind.TIMETICK, ts, TimeTick(ts).encode())
            c.ts = ts

        feeder = asyncio.ensure_future(asyncio.to_thread(stream))
        pick = np.random.default_rng(8)    # the loop's own: a Generator is not thread-safe
        checkpoint = 0
        while not feeder.done():
            dist = await c.leader.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
            assert dist.status.code == 0, dist.status
            recent = 880000 + int(pick.integers(max(1, written[0] * per_batch)))
            release = query_coord_pb2.ReleaseSegmentsRequest(
                collectionID=c.ds.collection_id,
                shard=channel,
                need_transfer=True,
                scope=query_coord_pb2.Streaming,
                segmentIDs=[recent],
            )
            assert (await c.leader.call("ReleaseSegments", release)).code == 0
            if deleted:
                checkpoint = max(checkpoint, deleted[len(deleted) // 2][1])
                sync = query_coord_pb2.SyncDistributionRequest(
                    collectionID=c.ds.collection_id,
                    channel=channel,
                    actions=[
                        query_coord_pb2.SyncAction(
                            type=query_coord_pb2.UpdateVersion,
                            TargetVersion=1,
                            checkpoint=msg_pb2.MsgPosition(timestamp=checkpoint),
                        )
                    ],
                )
                assert (await c.leader.call("SyncDistribution", sync)).code == 0
            await asyncio.sleep(0)
        await feeder
        assert await asyncio.to_thread(delegator.pipeline.wait_tsafe, c.ts, 30), delegator.pipeline.error
        assert delegator.pipeline.error is None
        buffered = {int(p) for _, pks, ts in delegator.deltas._deletes for p in pks.tolist()}
        lost = [pk for pk, ts in deleted if ts > checkpoint and pk not in buffered]
        assert not lost, f"deletes after the checkpoint missing from the replay buffer: {lost}"
        c.deleted |= {pk for pk, _ in deleted}
        xq = c.full.vectors[:n_batches]
        _, keys = await _search_keys(c, xq)
        assert not c.deleted & keys
    finally:
        await close(c)


async def _search_keys(c, xq):
    reply, tk = await search(c, xq, guarantee=c.ts)
    return reply, {int(k) for k in tk.ids.tolist()}


async def test_a_partition_scoped_read_sees_the_growing_rows_of_its_partition(tmp_path):
    """The leader filters its growing-segment snapshot by partition (a regression: the filter once
    read a name that no longer existed and failed every partition-scoped read)."""
    c = await make_cluster(tmp_path, "L2")
    try:
        c.insert(20, seed=5)
        ts = c.tick()
        xq = c.full.vectors[-3:]
        req = search_request(c.ds, xq, K, partitions=[c.partition], from_shard_leader=False, scope=query_coord_pb2.All)
        req.req.guarantee_timestamp = ts
        reply = await c.leader.call("Search", req)
        assert reply.status.code == 0, reply.status
        assert_same_knn(*reference_search(c.full, xq, K, c.mask()), *dense(from_search_result_data(reply.sliced_blob), K))
    finally:
        await close(c)
