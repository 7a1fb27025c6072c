"""One puller per query node polling ``GetDataDistribution``, as Milvus's ``dist.distHandler``.

Every ``querycoord.dist_pull_interval_s`` (Milvus: 500 ms) each handler asks its node,
passing the ``lastModifyTs`` it last saw, with a ``dist_request_timeout_s`` deadline
(Milvus: 5 s), and records the answer in the :class:`DistributionManager`; the answer
also serves as the node's heartbeat.  A failed poll is logged and retried next round;
the last known distribution stays until the node leaves the cluster, when its handler
stops and its distribution is dropped.

Pulls of one node run one at a time (Milvus's handler holds a lock around ``pullDist``): a
scheduler's refresh after a task may overlap the periodic poll, and two answers applied in the
other order would put the snapshot from before the task back over the one after it, so a
checker would see a released segment again and release it a second time.
"""

from __future__ import annotations

import asyncio
import logging

from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.cluster.querycoord.session.cluster import NodeClients
from vecgrid.cluster.querycoord.session.node_manager import NodeInfo, NodeManager
from vecgrid.proto import query_coord_pb2

log = logging.getLogger(__name__)


class DistController:
    """Starts a handler when a node comes up and stops it when the node goes down.  Handlers and
    per-node pull locks are owned by the coordinator's event loop."""

    def __init__(self, nodes: NodeManager, clients: NodeClients, dist: DistributionManager,
                 interval_s: float, timeout_s: float) -> None:
        self.nodes, self.clients, self.dist = nodes, clients, dist
        self.interval_s, self.timeout_s = interval_s, timeout_s
        self._handlers: dict[int, asyncio.Task] = {}
        self._pulling: dict[int, asyncio.Lock] = {}
        self._running = False

    def start(self) -> None:
        self._running = True
        self.nodes.on_up(self._up)
        self.nodes.on_down(self._down)
        for node in self.nodes.all():
            self._up(node)

    async def stop(self) -> None:
        self._running = False
        tasks = list(self._handlers.values())
        self._handlers.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _up(self, info: NodeInfo) -> None:
        if self._running and info.node_id not in self._handlers:
            self._handlers[info.node_id] = asyncio.ensure_future(self._pull_forever(info.node_id))

    def _down(self, info: NodeInfo) -> None:
        task = self._handlers.pop(info.node_id, None)
        if task is not None:
            task.cancel()
        self._pulling.pop(info.node_id, None)
        self.dist.remove(info.node_id)

    async def pull(self, node_id: int) -> None:
        """One poll of one node (also used to refresh at once after a task), after the one in flight."""
        lock = self._pulling.setdefault(node_id, asyncio.Lock())
        async with lock:
            await self._pull(node_id)

    async def _pull(self, node_id: int) -> None:
        known = self.dist.node(node_id)
        reply = await self.clients.stub(node_id).GetDataDistribution(
            query_coord_pb2.GetDataDistributionRequest(lastUpdateTs=known.last_modify_ts if known else 0),
            timeout=self.timeout_s, metadata=self.clients.metadata(node_id))
        if reply.status.code == 0:
            self.dist.update(node_id, reply)
        else:
            log.warning("GetDataDistribution of node %d failed: %s", node_id, reply.status.reason)

    async def _pull_forever(self, node_id: int) -> None:
        while True:
            try:
                await self.pull(node_id)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - keep the last known distribution, retry next round
                log.debug("pulling the distribution of node %d failed: %s", node_id, e)
            await asyncio.sleep(self.interval_s)
