"""A shard leader's fan-out under cancellation and failure: a cancelled read propagates CancelledError
(not an error reply), every sub-call is cancelled and awaited before the cancel propagates, and no
sub-call's failure is left unretrieved ("Task exception was never retrieved")."""

from __future__ import annotations

import asyncio
import gc

import numpy as np
import pytest

from vecgrid.proto import query_coord_pb2
from tests.conftest import poll_until
from tests.querynode_support import DIM, search_request
from tests.delegator_support import LEADER, WORKER, K, close, make_cluster


class Hang:
    """Replaces a node's search handler (``search_segments``, what its leaders call over gRPC, or
    ``search_own_part``, a leader's own part): waits until cancelled, counting starts and cancels."""

    def __init__(self, node, handler: str = "search_segments") -> None:
        self.node, self.handler, self.real = node, handler, getattr(node, handler)
        self.started = self.cancelled = 0
        self.running = asyncio.Event()
        setattr(node, handler, self)

    async def __call__(self, req, *args):
        self.started += 1
        self.running.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    def undo(self) -> None:
        setattr(self.node, self.handler, self.real)


class UnretrievedExceptions:
    """Collects what the loop reports through its exception handler (unretrieved task exceptions)."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.reports: list[str] = []
        self.previous = self.loop.get_exception_handler()
        self.loop.set_exception_handler(lambda loop, ctx: self.reports.append(ctx["message"]))

    def close(self) -> None:
        self.loop.set_exception_handler(self.previous)


async def test_a_cancelled_search_cancels_and_awaits_every_sub_call(tmp_path):
    c = await make_cluster(tmp_path, "L2")
    local, remote = Hang(c.leader.node, "search_own_part"), Hang(c.worker.node)
    try:
        delegator = c.leader.node.delegator_for(c.ds.channels[0])
        xq = np.random.default_rng(3).standard_normal((2, DIM)).astype(np.float32)
        req = search_request(c.ds, xq, K, from_shard_leader=False, scope=query_coord_pb2.All)
        pending = asyncio.ensure_future(delegator.search(req))
        await poll_until(lambda: local.started and remote.started, 10, 0.01, "both sub-calls running")
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        assert local.cancelled == 1, "the cancel propagated before the leader's own sub-call was awaited"
        await poll_until(lambda: remote.cancelled == 1, 10, 0.01, f"node {WORKER}'s sub-call to be cancelled")
    finally:
        local.undo()
        remote.undo()
        await close(c)


async def test_sub_calls_failing_together_leave_no_unretrieved_exception(tmp_path, monkeypatch):
    """The leader's own sub-call (its sealed segments and growing rows) fails while the worker's
    hangs: the read fails naming the node, the worker's sub-call is cancelled, and no failure is
    left for the garbage collector to report.  (A guard: the old fan-out passed this one too —
    ``asyncio.gather`` marks late failures retrieved.)"""
    c = await make_cluster(tmp_path, "L2")
    remote = Hang(c.worker.node)
    unretrieved = UnretrievedExceptions()
    try:
        c.insert(20, seed=9)
        ts = c.tick()

        async def broken(*args, **kwargs):
            await remote.running.wait()      # both fail in one loop turn, the worker's call under way
            raise RuntimeError("injected search failure")
        monkeypatch.setattr(c.leader.node, "search_own_part", broken)
        xq = np.random.default_rng(4).standard_normal((2, DIM)).astype(np.float32)
        req = search_request(c.ds, xq, K, from_shard_leader=False, scope=query_coord_pb2.All)
        req.req.guarantee_timestamp = ts
        reply = await c.leader.call("Search", req)
        assert reply.status.code != 0 and f"worker({LEADER}) query failed" in reply.status.reason, reply.status
        assert "injected search failure" in reply.status.reason
        await poll_until(lambda: remote.cancelled == 1, 10, 0.01, f"node {WORKER}'s sub-call to be cancelled")
        gc.collect()
        await asyncio.sleep(0)
        assert not [r for r in unretrieved.reports if "never retrieved" in r], unretrieved.reports
    finally:
        unretrieved.close()
        remote.undo()
        await close(c)
