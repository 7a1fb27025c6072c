"""DaskMembership's background work is tracked: stop() ends the reconcile an ``add-worker`` event
scheduled, so nothing calls the Dask client once it is closed; and it follows a restarted scheduler
(a fake client, no cluster)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from vecgrid.cluster.querycoord.session.membership import DaskMembership
from vecgrid.cluster.querycoord.session.node_manager import NodeInfo, NodeManager
from vecgrid.cluster.querycoord.session.registry import NodeIdRegistry
from tests.conftest import poll_until


class FakeClient:
    """The part of ``distributed.Client`` membership uses; records calls made after close()."""

    def __init__(self) -> None:
        self.closed = False
        self.status = "running"
        self.runs = 0
        self.runs_after_close = 0
        self.topics: set[str] = set()
        self.subscriptions = 0
        self.plugins: list = []
        self.scheduler_id = "Scheduler-1"
        self.scheduler = SimpleNamespace(identity=self._identity)

    async def _identity(self, n_workers=0):
        return {"id": self.scheduler_id}

    async def register_plugin(self, plugin) -> None:
        self.plugins.append(plugin)

    def subscribe_topic(self, topic, handler) -> None:
        self.topics.add(topic)
        self.subscriptions += 1

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


async def test_a_restarted_scheduler_gets_the_subscriptions_and_the_plugin_again(store, monkeypatch):
    """A scheduler started again knows neither the topics nor the node plugin: a worker joining it
    would run no query node, and the coordinator would hear of no node.  The workers that outlived the
    old one come back within seconds: until REJOIN_GRACE_S has passed, a node missing from the new
    scheduler is not taken for gone."""
    client = FakeClient()
    nodes = NodeManager()
    membership = DaskMembership(client, nodes, NodeIdRegistry(store), reconcile_interval_s=3600)
    membership.plugin = plugin = object()
    await membership.start()
    assert client.plugins == [plugin] and client.subscriptions == 2
    nodes.add(NodeInfo(node_id=2, name="w1", address="127.0.0.1:1", worker="tcp://127.0.0.1:9"))

    await membership._safe_reconcile()                      # the same scheduler: nothing registered again
    assert client.plugins == [plugin] and client.subscriptions == 2
    assert nodes.get(2) is None                             # and a worker it does not know is gone
    nodes.add(NodeInfo(node_id=2, name="w1", address="127.0.0.1:1", worker="tcp://127.0.0.1:9"))

    client.scheduler_id = "Scheduler-2"
    await membership._safe_reconcile()
    assert client.plugins == [plugin, plugin] and client.subscriptions == 4
    assert nodes.get(2) is not None                         # not yet back on the new scheduler: kept
    monkeypatch.setattr(membership, "_rejoin_until", 0.0)   # the grace is over
    await membership._safe_reconcile()
    assert client.plugins == [plugin, plugin] and nodes.get(2) is None
    await membership.stop()


async def test_a_restarted_scheduler_is_noticed_while_the_client_still_reconnects(store):
    """The client's reconnect backs off for seconds after the scheduler went away, while ``Client.run``
    already reaches the new scheduler that only some workers have rejoined: a node missing there then is
    not taken for gone (it was, and its segments were loaded a second time on the other node)."""
    client = FakeClient()
    nodes = NodeManager()
    membership = DaskMembership(client, nodes, NodeIdRegistry(store), reconcile_interval_s=3600)
    membership.plugin = plugin = object()
    await membership.start()
    nodes.add(NodeInfo(node_id=2, name="w1", address="127.0.0.1:1", worker="tcp://127.0.0.1:9"))

    client.scheduler_id, client.status = "Scheduler-2", "connecting"
    await membership._safe_reconcile()
    assert nodes.get(2) is not None                     # in the grace, although the client is not back
    assert client.plugins == [plugin] and client.subscriptions == 2   # nothing sent to a reconnecting client

    client.status = "running"
    await membership._safe_reconcile()
    assert client.plugins == [plugin, plugin] and client.subscriptions == 4
    assert nodes.get(2) is not None
    await membership.stop()
