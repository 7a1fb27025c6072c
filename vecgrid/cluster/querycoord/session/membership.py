"""Node membership from Dask, as Milvus's session watcher does it from etcd.

Three inputs keep :class:`NodeManager` in step with the Dask cluster:

* the ``vecgrid.querynode`` topic: a worker's QueryNode plugin announces ``up``
  once its gRPC server listens, and ``stopping`` when the worker closes;
* the scheduler's ``all`` topic: ``remove-worker`` drops the node within the
  scheduler's own detection time (immediately for a clean exit, the worker TTL /
  heartbeat for a crash), ``add-worker`` triggers a reconcile;
* a periodic reconcile (``Client.run`` of :func:`describe_querynode` on every
  worker) that repairs anything an event missed, e.g. nodes that came up while the
  coordinator was down.

The membership also registers the QueryNode worker plugin the deployment gives it.  A scheduler
that was restarted knows neither the topic subscriptions nor the plugin: when the client's
scheduler id changes, the next round subscribes and registers again (the query nodes, which
outlived the scheduler, keep their segments: :mod:`vecgrid.cluster.querynode.dask_worker`).
While the scheduler is away the node list stays as it was: searches do not need the scheduler.

Registering a node assigns its id (from :class:`NodeIdRegistry`, keyed by the
worker's name) and pushes it to the worker, which then turns Healthy.

With auth on, the nodes refuse the access tokens the coordinator refuses (logged out, of removed
users): the membership sends
every node the coordinator's list when it changes, a node its copy before listing it, and in each
reconcile any node whose copy differs (:mod:`vecgrid.http.services.revocations`).

Every background task (the periodic loop, the reconcile an ``add-worker`` event schedules)
is tracked, so :meth:`DaskMembership.stop` cancels and awaits them all and nothing calls the
Dask client after it is closed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from distributed import Client
from distributed.diagnostics.plugin import WorkerPlugin

from vecgrid.cluster.querycoord.session.node_manager import NodeInfo, NodeManager
from vecgrid.cluster.querycoord.session.registry import NodeIdRegistry
from vecgrid.cluster.querynode.session import TOPIC, assign_node_id, describe_querynode, set_revoked_tokens

log = logging.getLogger(__name__)

QUERYNODE = "querynode"
ADD_WORKER_DELAY_S = 2.0  # a new worker's plugin needs a moment to start its QueryNode
# After a scheduler restart the workers rejoin within a few seconds (they poll it every second):
# until then a node missing from the new scheduler is not taken for gone.
REJOIN_GRACE_S = 15.0


class DaskMembership:
    """Owned by the coordinator's event loop: topic handlers and tasks all run on it."""

    def __init__(self, client: Client, nodes: NodeManager, registry: NodeIdRegistry,
                 reconcile_interval_s: float = 5.0) -> None:
        self.client = client
        self.nodes = nodes
        self.registry = registry
        self.reconcile_interval_s = reconcile_interval_s
        self.add_worker_delay_s = ADD_WORKER_DELAY_S
        self.plugin: WorkerPlugin | None = None  # the QueryNode plugin; set by the deployment before start
        self.revocations: Any = None  # auth on: the refused tokens (ClusterRevocations); set before start
        self._scheduler_id: str | None = None     # the scheduler subscribed to and given the plugin
        self._rejoin_until = 0.0                  # monotonic time; see REJOIN_GRACE_S
        self._tasks: set[asyncio.Task] = set()
        self._stopped = False
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        self._stopped = False
        if self.revocations is not None and self._revocations_changed not in self.revocations.listeners:
            self.revocations.listeners.append(self._revocations_changed)
        await self._join_scheduler()
        await self.reconcile()
        self._spawn(self._reconcile_forever(), "vecgrid-membership")

    async def _join_scheduler(self) -> None:
        """Subscribe to the node and scheduler topics and register the plugin with the scheduler the
        client is connected to (subscribing first: no ``up`` event is missed)."""
        scheduler_id = await self._scheduler_id_now()
        self.client.subscribe_topic(TOPIC, self._on_node_event)
        self.client.subscribe_topic("all", self._on_scheduler_event)
        if self.plugin is not None:
            await self.client.register_plugin(self.plugin)
        self._scheduler_id = scheduler_id

    async def _scheduler_id_now(self) -> str | None:
        """The id of the scheduler the client is connected to, asked of it (the client's cached identity
        is not refreshed when it reconnects)."""
        return (await self.client.scheduler.identity(n_workers=0)).get("id")

    async def _follow_scheduler(self) -> None:
        """Notice a restarted scheduler and join it.  The client's own reconnect can lag the scheduler by
        seconds (its connect backs off exponentially) while ``Client.run`` already reaches the new one,
        whose workers are still coming back: the grace starts when the new scheduler answers, whatever the
        client's status, and is renewed every round until the client is back and has joined it."""
        if await self._scheduler_id_now() == self._scheduler_id:
            return
        self._rejoin_until = time.monotonic() + REJOIN_GRACE_S
        if self.client.status != "running":
            return  # still reconnecting: subscribing now would be lost; the next round joins
        log.warning("the Dask scheduler was restarted: subscribing and registering the query node plugin again")
        await self._join_scheduler()

    def _spawn(self, coro, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        self._stopped = True
        while self._tasks:  # a task may spawn another until it sees the cancel
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        # Otherwise the scheduler keeps sending events to this client after it closed.
        for topic in (TOPIC, "all"):
            try:
                self.client.unsubscribe_topic(topic)
            except Exception:  # noqa: BLE001 - not subscribed, or the scheduler is already gone
                pass

    # --- events ------------------------------------------------------------------------

    async def _on_node_event(self, event: tuple[float, dict[str, Any]]) -> None:
        if self._stopped:  # an event the scheduler sent before the unsubscribe landed
            return
        _, msg = event
        action = msg.get("action")
        if action == "up":
            await self._register(msg)
        elif action == "stopping":
            info = self.nodes.by_worker(msg.get("worker", ""))
            if info is not None:
                self.nodes.mark_stopping(info.node_id)

    async def _on_scheduler_event(self, event: tuple[float, dict[str, Any]]) -> None:
        if self._stopped:
            return
        _, msg = event
        action = msg.get("action")
        if action == "remove-worker":
            info = self.nodes.remove_worker(msg.get("worker", ""))
            if info is not None:
                log.info("query node %d (%s) left the cluster", info.node_id, info.address)
        elif action == "add-worker":
            # The plugin announces itself once set up; reconcile in case that event is missed.
            self._spawn(self._reconcile_later(self.add_worker_delay_s), "vecgrid-membership-add-worker")

    # --- reconcile -----------------------------------------------------------------------

    async def _reconcile_later(self, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        await self._safe_reconcile()

    async def _reconcile_forever(self) -> None:
        while True:
            await asyncio.sleep(self.reconcile_interval_s)
            await self._safe_reconcile()

    async def _safe_reconcile(self) -> None:
        try:
            await self._follow_scheduler()
            await self.reconcile()
        except Exception:  # noqa: BLE001 - the next round retries; the coordinator must not die
            log.warning("membership reconcile failed", exc_info=True)

    async def reconcile(self) -> None:
        """Make the node list equal to the set of workers whose QueryNode is up (removals wait out
        ``REJOIN_GRACE_S`` after a scheduler restart)."""
        described = await self.client.run(describe_querynode, on_error="ignore")
        up = {worker: info for worker, info in described.items() if info is not None}
        for info in up.values():
            await self._register(info)
        if self.revocations is not None:
            await self.revocations.reload()   # what another process wrote to the store (vecgrid users remove)
            behind = [w for w, info in up.items() if info.get("revocations") != self.revocations.digest]
            if behind:
                await self._send_revocations(behind)
        if time.monotonic() < self._rejoin_until:
            return
        for node in self.nodes.all():
            if node.worker not in described:
                self.nodes.remove_worker(node.worker)

    def _revocations_changed(self) -> None:
        if not self._stopped:
            self._spawn(self._send_revocations(), "vecgrid-revocations")

    async def _send_revocations(self, workers: list[str] | None = None) -> None:
        """The refused tokens to the nodes of ``workers`` (None: every worker).  A node it does not
        reach keeps its old copy until a reconcile finds the copy differs and sends it again."""
        try:
            await self.client.run(set_revoked_tokens, self.revocations.entries(), self.revocations.digest,
                                  workers=workers, on_error="ignore")
        except Exception:  # noqa: BLE001 - the scheduler away: the next reconcile sends it again
            log.warning("could not send the refused tokens to the query nodes; the next reconcile retries",
                        exc_info=True)

    async def _register(self, msg: dict[str, Any]) -> None:
        async with self._lock:
            node_id = self.registry.id_for(QUERYNODE, msg["name"])
            if msg.get("node_id") != node_id:
                replies = await self.client.run(assign_node_id, node_id, workers=[msg["worker"]],
                                                on_error="ignore")
                msg = replies.get(msg["worker"]) or None
                if msg is None:
                    return  # the worker went away meanwhile
            known = self.nodes.get(node_id)
            if known is None or (known.worker, known.address) != (msg["worker"], msg["address"]):
                if self.revocations is not None and msg.get("revocations") != self.revocations.digest:
                    # before it is listed: a listed node takes the tokens of users who have not logged out
                    await self._send_revocations([msg["worker"]])
                self.nodes.add(NodeInfo(node_id=node_id, name=msg["name"], address=msg["address"],
                                        worker=msg["worker"], hostname=msg.get("hostname", ""),
                                        labels=dict(msg.get("labels") or {}),
                                        gpu_memory_mb=float(msg.get("gpu_memory_mb") or 0.0)))
                log.info("query node %d (%s) joined at %s", node_id, msg["name"], msg["address"])
            if msg.get("state") == "Stopping":
                self.nodes.mark_stopping(node_id)
