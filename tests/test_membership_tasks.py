"""DaskMembership's background work is tracked: stop() ends the reconcile an ``add-worker`` event
scheduled, so nothing calls the Dask client once it is closed (a fake client, no cluster)."""

from __future__ import annotations

import asyncio

from vecgrid.cluster.querycoord.session.membership import DaskMembership
from vecgrid.cluster.querycoord.session.node_manager import NodeManager
from vecgrid.cluster.querycoord.session.registry import NodeIdRegistry
from tests.conftest import poll_until


class FakeClient:
    """The part of ``distributed.Client`` membership uses; records calls made after close()."""

    def __init__(self) -> None:
        self.closed = False
        self.runs = 0
        self.runs_after_close = 0
        self.topics: set[str] = set()

    def subscribe_topic(self, topic, handler) -> None:
        self.topics.add(topic)

    def unsubscribe_topic(self, topic) -> None:
        self.topics.discard(topic)

    async def run(self, fn, *args, **kwargs):
        self.runs += 1
        if self.closed:
            self.runs_after_close += 1
            raise RuntimeError("the client is closed")
        return {}

    def close(self) -> None:
        self.closed = True


async def test_stop_right_after_add_worker_leaves_no_reconcile_behind(store):
    client = FakeClient()
    membership = DaskMembership(client, NodeManager(), NodeIdRegistry(store), reconcile_interval_s=3600)
    membership.add_worker_delay_s = 0.01
    await membership.start()
    assert client.runs == 1  # the start's own reconcile
    await membership._on_scheduler_event((0.0, {"action": "add-worker", "worker": "tcp://w:1"}))
    await membership.stop()
    client.close()
    # Timers fire in deadline order: once this one has fired, an untracked reconcile scheduled with the
    # shorter delay before stop() has fired too, and its task has had turns to reach the client.
    await asyncio.sleep(membership.add_worker_delay_s * 5)
    for _ in range(5):
        await asyncio.sleep(0)
    assert client.runs_after_close == 0 and client.runs == 1
    assert not client.topics


async def test_add_worker_reconciles_after_the_delay(store):
    client = FakeClient()
    membership = DaskMembership(client, NodeManager(), NodeIdRegistry(store), reconcile_interval_s=3600)
    membership.add_worker_delay_s = 0.01
    await membership.start()
    await membership._on_scheduler_event((0.0, {"action": "add-worker", "worker": "tcp://w:1"}))
    await poll_until(lambda: client.runs == 2, 10, 0.01, "the reconcile an add-worker event schedules")
    await membership.stop()
    await membership._on_scheduler_event((0.0, {"action": "add-worker", "worker": "tcp://w:2"}))
    assert client.runs == 2  # a stopped membership schedules nothing
