"""No lost delete: a shard leader forwards each delete of its channel to the nodes of its view and holds
tsafe back until every node whose segments may hold the key applied it.  Failures are retried with
backoff; a node that cannot apply it within the leader's budget makes the channel unserviceable (reads
fail with a retriable error, the leader leaves the distribution, CheckHealth says why) — and in no case
does a read return a deleted key.

Two QueryNodes over gRPC (tests.test_delegator_fanout.make_cluster): the leader holds the even sealed
segments, the worker the odd ones; failures are injected into the worker's (or leader's) DeleteBatch
handler."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import time
import weakref

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.config import Settings
from vecgrid.cluster.querynode.delegator.delta_forward import DeleteRetry
from vecgrid.gpu import exprs
from vecgrid.gpu.results import from_search_result_data
from vecgrid.proto import common_pb2, data_coord_pb2, milvus_pb2, query_coord_pb2, schema_pb2
from vecgrid.rpc.querynode_servicer import serve_querynode
from tests.conftest import poll_until
from tests.querynode_support import assert_same_knn, dense, load_request, query_request, reference_search, search_request
from tests.delegator_support import LEADER, WORKER, K, close, make_cluster

FAST = DeleteRetry(deadline_s=0.5, call_timeout_s=0.15, first_backoff_s=0.02, max_backoff_s=0.1)
PATIENT = DeleteRetry(deadline_s=30.0, call_timeout_s=0.5, first_backoff_s=0.02, max_backoff_s=0.2)
MODES = ["error", "failed", "missing", "hang"]


class Injected:
    """Wraps a node's DeleteBatch handler: the first ``times`` calls (all when None) misbehave."""

    def __init__(self, node, mode: str, times: int | None = None) -> None:
        self.node, self.mode, self.times = node, mode, times
        self.real = node.delete_batch
        self.calls: list[list[int]] = []
        self.cancelled = 0
        node.delete_batch = self

    async def __call__(self, req: query_coord_pb2.DeleteBatchRequest) -> query_coord_pb2.DeleteBatchResponse:
        self.calls.append(list(req.segment_ids))
        if self.times is None or len(self.calls) <= self.times:
            if self.mode == "error":
                raise errors.ServiceInternal("injected DeleteBatch failure")
            if self.mode == "failed":
                return query_coord_pb2.DeleteBatchResponse(status=common_pb2.Status(), failed_ids=req.segment_ids)
            if self.mode == "missing":
                return query_coord_pb2.DeleteBatchResponse(status=common_pb2.Status(), missing_ids=req.segment_ids)
            try:
                await asyncio.Event().wait()     # "hang": until the caller gives up
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return await self.real(req)

    def heal(self) -> None:
        self.node.delete_batch = self.real


class Reader:
    """Strong reads through the leader in a loop (guarantee: the delete's timestamp), counting answers
    and failures and keeping every deleted key any answer returned."""

    def __init__(self, c, victims: list[int], guarantee: int) -> None:
        self.c, self.victims, self.guarantee = c, victims, guarantee
        self.leaked: set[int] = set()
        self.answered = self.failed = 0
        self._task: asyncio.Task | None = None

    def start(self) -> "Reader":
        self._task = asyncio.ensure_future(self._run())
        return self

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        c = self.c
        xq = c.full.vectors[[int(np.flatnonzero(c.full.pks == v)[0]) for v in self.victims]]
        pk = exprs.column(c.ds.fid(c.ds.pk_name), schema_pb2.Int64, is_primary_key=True)
        while True:
            deadline = (int(time.time() * 1000) + 500) << 18   # keep the loop turning while tsafe waits
            search = search_request(c.ds, xq, K, from_shard_leader=False, scope=query_coord_pb2.All)
            query = query_request(c.ds, expr=exprs.term(pk, self.victims), from_shard_leader=False)
            for req in (search, query):
                req.req.guarantee_timestamp, req.req.timeout_timestamp = self.guarantee, deadline
            s, q = await asyncio.gather(c.leader.call("Search", search), c.leader.call("Query", query))
            for reply, keys in ((s, lambda: from_search_result_data(s.sliced_blob).ids.tolist()),
                                (q, lambda: list(q.ids.int_id.data))):
                if reply.status.code:
                    self.failed += 1
                else:
                    self.answered += 1
                    self.leaked |= set(self.victims) & {int(k) for k in keys()}
            await asyncio.sleep(0.01)


def _victim(c, segment_index: int) -> int:
    return int(c.full.pks[c.ds.rows_of_segment(c.ds.segment_ids[segment_index])[0]])


async def _strong_search(c, guarantee: int):
    req = search_request(c.ds, c.full.vectors, K, from_shard_leader=False, scope=query_coord_pb2.All)
    req.req.guarantee_timestamp = guarantee
    return await c.leader.call("Search", req)


async def _assert_serves_without(c, guarantee: int) -> None:
    """A strong search answers, equal to numpy over the rows minus every deleted one."""
    reply = await _strong_search(c, guarantee)
    assert reply.status.code == 0, reply.status
    assert_same_knn(*reference_search(c.full, c.full.vectors, K, c.mask()),
                    *dense(from_search_result_data(reply.sliced_blob), K))


async def _health(c) -> milvus_pb2.CheckHealthResponse:
    return await c.leader.stub.CheckHealth(milvus_pb2.CheckHealthRequest())


async def _cluster(tmp_path, retry: DeleteRetry):
    c = await make_cluster(tmp_path, "L2")
    delegator = c.leader.node.delegator_for(c.ds.channels[0])
    delegator.deltas.retry = retry
    return c, delegator


@pytest.mark.parametrize("mode", MODES)
async def test_a_failing_delete_is_retried_until_every_node_applied_it(tmp_path, mode):
    """The worker misbehaves twice, then applies the delete: the leader retries, tsafe passes the delete
    only once it is applied, and no read returns the deleted key meanwhile."""
    c, delegator = await _cluster(tmp_path, PATIENT)
    injected = Injected(c.worker.node, mode, times=2)
    try:
        victim = _victim(c, 1)                   # a row of a segment on the worker
        ts = c.delete([victim])
        reader = Reader(c, [victim], ts).start()
        c.tick()
        await poll_until(lambda: delegator.tsafe >= ts, 30, 0.02, "tsafe past the delete")
        await poll_until(lambda: reader.answered >= 4, 30, 0.02, "reads after the delete")
        await reader.stop()
        assert not reader.leaked, f"a read returned deleted keys {reader.leaked}"
        assert len(injected.calls) >= 3, injected.calls       # retried past the two failures
        assert delegator.pipeline.error is None
        await _assert_serves_without(c, ts)
        dist = await c.leader.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        assert [v.channel for v in dist.leader_views] == c.ds.channels
    finally:
        injected.heal()
        await close(c)


@pytest.mark.parametrize("mode", MODES)
async def test_a_node_that_cannot_apply_a_delete_makes_the_channel_unserviceable(tmp_path, mode):
    """The worker never applies the delete: after the leader's budget the channel is unserviceable —
    reads fail with a retriable error (the proxy tries another replica), the leader leaves the
    distribution (the coordinator watches the channel again), CheckHealth names the channel — and no
    read ever returns the deleted key.  Watching the channel again (what the coordinator does) with
    the worker healed brings the delete everywhere."""
    c, delegator = await _cluster(tmp_path, FAST)
    pipeline = delegator.pipeline    # a failed leader lets go of it: its tsafe is read here
    injected = Injected(c.worker.node, mode)
    try:
        victim = _victim(c, 1)
        ts = c.delete([victim])
        reader = Reader(c, [victim], ts).start()
        c.tick()

        async def gave_up_or_passed() -> bool:
            dist = await c.leader.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
            return not dist.leader_views or pipeline.tsafe >= ts
        await poll_until(gave_up_or_passed, 30, 0.02, "the leader to give up")
        assert pipeline.tsafe < ts, "tsafe passed a delete that was not applied"
        assert not delegator.serviceable
        await poll_until(lambda: reader.failed >= 2, 30, 0.02, "reads refused")

        reply = await _strong_search(c, ts)
        assert reply.status.code == errors.ServiceUnavailable.code and errors.ServiceUnavailable.retriable, \
            reply.status
        assert "not serviceable" in reply.status.reason and str(WORKER) in reply.status.reason
        unbounded = await _strong_search(c, 0)            # no guarantee: still refused, not served stale
        assert unbounded.status.code == errors.ServiceUnavailable.code

        dist = await c.leader.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        assert not dist.channels and not dist.leader_views
        assert sorted(s.ID for s in dist.segments) == sorted(c.ds.segment_ids[::2])   # still held
        health = await _health(c)
        assert not health.isHealthy
        reason = json.loads(health.reasons[0])["unhealthy_cluster_msgs"][0]["reason"]["unhealthy_msg"]
        assert c.ds.channels[0] in reason and "not serviceable" in reason

        # the coordinator's answer: watch the channel again, then sync the view (leader checker)
        injected.heal()
        await _rewatch(c)
        fresh = c.leader.node.delegator_for(c.ds.channels[0])
        assert fresh is not delegator and fresh.serviceable
        await _resync_view(c)
        c.tick()
        await poll_until(lambda: reader.answered >= 4, 30, 0.02, "reads served again")
        await reader.stop()
        assert not reader.leaked, f"a read returned deleted keys {reader.leaked}"
        await _assert_serves_without(c, ts)
        assert (await _health(c)).isHealthy
    finally:
        injected.heal()
        await close(c)


async def _rewatch(c, on=None) -> None:
    """WatchDmChannels of the channel again (version 2) on ``on`` (the leader's node by default)."""
    on = on or c.leader
    template = load_request(c.ds)
    watch = query_coord_pb2.WatchDmChannelsRequest(
        nodeID=on.node_id, collectionID=c.ds.collection_id, schema=template.schema, load_meta=template.load_meta,
        index_info_list=template.index_info_list, version=2,
        infos=[data_coord_pb2.VchannelInfo(collectionID=c.ds.collection_id, channelName=c.ds.channels[0])])
    for peer in (c.leader, c.worker):
        watch.base.properties[f"vecgrid.node_address.{peer.node_id}"] = peer.node.address
    status = await on.call("WatchDmChannels", watch)
    assert status.code == 0, status


async def _resync_view(c) -> None:
    """SyncDistribution Set (with load info) of every sealed segment where it is loaded."""
    infos = {i.segmentID: i for i in load_request(c.ds).infos}
    sync = query_coord_pb2.SyncDistributionRequest(collectionID=c.ds.collection_id, channel=c.ds.channels[0])
    for i, sid in enumerate(c.ds.segment_ids):
        sync.actions.add(type=query_coord_pb2.Set, segmentID=sid, nodeID=LEADER if i % 2 == 0 else WORKER, version=6,
                         info=infos[sid])
    status = await c.leader.call("SyncDistribution", sync)
    assert status.code == 0, status


async def test_a_failed_leader_frees_what_it_held_and_is_dropped_once_the_coordinator_moved_on(tmp_path):
    """A leader that gave up frees its pipeline (thread, reader, growing rows), its view and its delete
    buffers at once, and still refuses reads and tells CheckHealth why.  The coordinator watches the
    channel again on the other node — which the old node never hears of — so the old node drops the
    failed delegator one health round after a distribution left it out: it does not hold it, nor report
    it, for ever."""
    c, delegator = await _cluster(tmp_path, FAST)
    channel = c.ds.channels[0]
    common = c.leader.node.settings.common
    common.healthcheck_interval_s, common.healthcheck_timeout_s = 0.2, 0.1   # the coordinator's health round
    injected = Injected(c.worker.node, "error")
    try:
        c.insert(40, seed=11)
        c.tick()
        await poll_until(lambda: delegator.pipeline.num_growing_rows == 40, 30, 0.02, "the growing rows")
        thread = delegator.pipeline._thread
        (growing,) = [weakref.ref(g) for _, _, g in delegator.pipeline.growing_segments()]
        ts = c.delete([_victim(c, 1)])
        c.tick()
        await poll_until(lambda: delegator.unserviceable_reason(), 30, 0.02, "the leader to give up")
        assert delegator.pipeline is None
        await poll_until(lambda: not thread.is_alive(), 30, 0.02, "the pipeline thread to end")
        await poll_until(lambda: _collect() and growing() is None, 30, 0.05, "the growing rows to be freed")
        assert not delegator.distribution.sealed and not delegator.deltas.pk_stats and not delegator.deltas._deletes
        reply = await _strong_search(c, ts)
        assert reply.status.code == errors.ServiceUnavailable.code and "not serviceable" in reply.status.reason
        health = await _health(c)
        assert not health.isHealthy and channel in health.reasons[0]

        dist = await c.leader.call(
            "GetDataDistribution", query_coord_pb2.GetDataDistributionRequest()
        )  # the coordinator's pull
        assert not dist.channels and not dist.leader_views
        injected.heal()
        c.worker.node.settings.querynode.delete_retry_deadline_s = 7.5
        await _rewatch(c, on=c.worker)                           # the channel checker picked the other node
        moved = c.worker.node.delegator_for(channel)
        assert moved.serviceable and moved.deltas.retry.deadline_s == 7.5   # the budget comes from the settings

        async def dropped() -> bool:
            await c.leader.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
            return c.leader.node.delegator_for(channel) is None
        await poll_until(dropped, 30, 0.05, "the old node to drop its failed delegator")
        assert (await _health(c)).isHealthy
        gone = await _strong_search(c, ts)
        assert gone.status.code == errors.ChannelNotFound.code, gone.status
        dist = await c.worker.call("GetDataDistribution", query_coord_pb2.GetDataDistributionRequest())
        assert [ch.channel for ch in dist.channels] == [channel]
    finally:
        injected.heal()
        await close(c)


def _collect() -> bool:
    """A garbage collection, once pytest's log capture let go of the exceptions in the records it kept
    (their tracebacks hold the frames of the failed pipeline thread, and so its growing rows; a
    production log handler keeps no record)."""
    for handler in logging.getLogger().handlers:
        for record in getattr(handler, "records", ()):
            record.msg, record.args, record.exc_info = record.getMessage(), (), None
    gc.collect()
    return True


def test_the_delete_budget_is_a_querynode_setting():
    """``[querynode]`` keys, also ``VECGRID_QUERYNODE_*`` variables."""
    assert (Settings().querynode.delete_retry_deadline_s, Settings().querynode.delete_call_timeout_s) == (30.0, 10.0)
    s = Settings.load(env={"VECGRID_QUERYNODE_DELETE_RETRY_DEADLINE_S": "2.5",
                           "VECGRID_QUERYNODE_DELETE_CALL_TIMEOUT_S": "0.5"})
    assert (s.querynode.delete_retry_deadline_s, s.querynode.delete_call_timeout_s) == (2.5, 0.5)


@pytest.mark.slow  # 1.5 s of retries: make test runs it
async def test_a_node_killed_mid_forward_gets_the_delete_when_it_comes_back(tmp_path):
    """The worker dies while the leader waits for its DeleteBatch and comes back at the same address
    with its segments (a partition, a restarted server): the leader keeps trying, so the delete reaches
    it before any read is served past the delete."""
    c, delegator = await _cluster(tmp_path, PATIENT)
    injected = Injected(c.worker.node, "hang", times=1)
    try:
        victim = _victim(c, 1)
        ts = c.delete([victim])
        c.tick()
        await poll_until(lambda: injected.calls, 30, 0.02, "the forward to reach the worker")
        port = int(c.worker.node.address.rsplit(":", 1)[1])
        await c.worker.server.stop(0)                         # killed mid-forward
        reader = Reader(c, [victim], ts).start()
        await poll_until(lambda: reader.failed >= 2, 30, 0.02, "reads refused while the worker is down")
        assert delegator.tsafe < ts
        c.worker.server = await serve_querynode(c.worker.node, "127.0.0.1", port)   # back, same address
        await poll_until(lambda: delegator.tsafe >= ts, 30, 0.02, "tsafe past the delete")
        await poll_until(lambda: reader.answered >= 4, 30, 0.02, "reads served again")
        await reader.stop()
        assert not reader.leaked, f"a read returned deleted keys {reader.leaked}"
        await _assert_serves_without(c, ts)
    finally:
        injected.heal()
        await close(c)


async def test_missing_ids_follow_the_view(tmp_path):
    """``missing_ids``: the segment is not (any more) on that node.  The leader re-reads its view and
    sends the delete where the segment is now; a segment the view dropped needs nothing."""
    c, delegator = await _cluster(tmp_path, PATIENT)
    try:
        moved, dropped = c.ds.segment_ids[1], c.ds.segment_ids[3]      # both on the worker
        # the moved one is loaded on the leader node too, then released from the worker behind the
        # leader's back: the view still routes it to the worker, which answers it missing
        await c.leader.load(c.ds, [moved], dst_node_id=LEADER, version=7)
        for sid in (moved, dropped):
            rel = query_coord_pb2.ReleaseSegmentsRequest(
                collectionID=c.ds.collection_id,
                segmentIDs=[sid],
                nodeID=WORKER,
                scope=query_coord_pb2.Historical,
                shard=c.ds.channels[0],
            )
            assert (await c.worker.call("ReleaseSegments", rel)).code == 0
        recorder = Injected(c.worker.node, "error", times=0)     # records the calls, misbehaves never
        victims = [_victim(c, 1), _victim(c, 3)]
        ts = c.delete(victims)
        c.tick()
        await poll_until(lambda: recorder.calls, 30, 0.02, "the worker to answer the delete missing")
        assert delegator.tsafe < ts
        infos = {i.segmentID: i for i in load_request(c.ds, [moved]).infos}
        sync = query_coord_pb2.SyncDistributionRequest(
            collectionID=c.ds.collection_id,
            channel=c.ds.channels[0],
            actions=[
                query_coord_pb2.SyncAction(
                    type=query_coord_pb2.Set, segmentID=moved, nodeID=LEADER, version=7, info=infos[moved]
                ),
                query_coord_pb2.SyncAction(type=query_coord_pb2.Remove, segmentID=dropped, nodeID=WORKER),
            ],
        )
        assert (await c.leader.call("SyncDistribution", sync)).code == 0
        await poll_until(lambda: delegator.tsafe >= ts, 30, 0.02, "tsafe past the delete")
        assert delegator.serviceable
        held = c.leader.node.segments.get(moved)
        assert held is not None and len(held.runtime_deletes)
        gone = c.ds.rows_of_segment(dropped)      # no longer served: compared without them
        reply = await _strong_search(c, ts)
        assert reply.status.code == 0, reply.status
        mask = c.mask()
        mask[gone] = False
        assert_same_knn(*reference_search(c.full, c.full.vectors, K, mask),
                        *dense(from_search_result_data(reply.sliced_blob), K))
    finally:
        await close(c)


async def test_stopping_the_channel_ends_a_forward_in_flight(tmp_path):
    """UnsubDmChannel while the leader waits for a node that never answers: the wait ends, the pipeline
    thread is gone when the call returns, and the worker's call was cancelled (not left running)."""
    c, delegator = await _cluster(tmp_path, DeleteRetry(deadline_s=120.0, call_timeout_s=60.0))
    injected = Injected(c.worker.node, "hang")
    try:
        pipeline = delegator.pipeline
        c.delete([_victim(c, 1)])
        c.tick()
        await poll_until(lambda: injected.calls, 30, 0.02, "the forward to reach the worker")
        status = await c.leader.call(
            "UnsubDmChannel", query_coord_pb2.UnsubDmChannelRequest(channel_name=c.ds.channels[0])
        )
        assert status.code == 0, status
        assert not pipeline._thread.is_alive(), "the pipeline thread outlived its channel"
        await poll_until(lambda: injected.cancelled == 1, 10, 0.02, "the worker's DeleteBatch to be cancelled")
        assert pipeline.error is None     # stopped, not failed
    finally:
        injected.heal()
        await close(c)


async def test_delete_batch_logs_a_segment_that_failed(tmp_path, caplog):
    """A node reports a segment whose delete raised in ``failed_ids`` — and says why in its log."""
    c = await make_cluster(tmp_path, "L2")
    try:
        sid = c.ds.segment_ids[1]
        seg = c.worker.node.segments.get(sid)

        def broken(pks, ts):
            raise RuntimeError("injected segment fault")
        seg.delete = broken
        req = query_coord_pb2.DeleteBatchRequest(
            collection_id=c.ds.collection_id,
            segment_ids=[sid, 424242],
            scope=query_coord_pb2.Historical,
            primary_keys=schema_pb2.IDs(int_id=schema_pb2.LongArray(data=[1])),
            timestamps=[c.ts],
        )
        with caplog.at_level(logging.WARNING, logger="vecgrid.cluster.querynode.node"):
            reply = await c.worker.call("DeleteBatch", req)
        assert reply.status.code == 0 and list(reply.failed_ids) == [sid] and list(reply.missing_ids) == [424242]
        assert any(str(sid) in r.getMessage() and r.exc_info and "injected segment fault" in str(r.exc_info[1])
                   for r in caplog.records), caplog.text
    finally:
        await close(c)
