"""The coordinator's cached cluster health, as Milvus's QueryCoord CheckHealth.

Milvus answers CheckHealth from a result refreshed every
``common.healthcheck.interval.seconds``: it calls CheckHealth on every query node
(a node answering UNIMPLEMENTED is skipped) and reports failures as one JSON
reason ``{"unhealthy_cluster_msgs": [...], "unhealthy_collection_msgs": [...]}``
with level Fatal for a failing node.  Loaded collections that could not be queried
(no serviceable shard leader for some channel) for ``UNQUERYABLE_AFTER_S`` are listed
as Critical: reported, but the cluster stays healthy, as in Milvus.  A refresh that fails is itself
the answer (role ``querycoord``, Fatal) until one succeeds: the last answer it could not renew may be
stale, and a health check that cannot look must not say "healthy".  Roles beside QueryCoord in this
process (DataCoord: a flush or compaction that keeps failing) add their problems through
:attr:`HealthObserver.roles`, level Fatal.  The first refresh runs at start so the answer is real from
the first call.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Callable

import grpc

from vecgrid.cluster.querycoord.session.cluster import NodeClients
from vecgrid.cluster.querycoord.session.node_manager import NodeInfo, NodeManager
from vecgrid.proto import milvus_pb2

log = logging.getLogger(__name__)

LEVEL_CRITICAL = 2
LEVEL_FATAL = 3
UNQUERYABLE_AFTER_S = 300.0   # Milvus's queryCoord.updateCollectionLoadStatusInterval

#: ``() -> [(database id, collection id, reason)]`` of loaded collections that cannot be queried now.
CollectionProbe = Callable[[], list[tuple[int, int, str]]]


class HealthObserver:
    def __init__(self, nodes: NodeManager, clients: NodeClients, interval_s: float, timeout_s: float,
                 unqueryable: CollectionProbe = lambda: []) -> None:
        self.nodes = nodes
        self.unqueryable = unqueryable
        self.healthy = True
        self._failing_since: dict[int, float] = {}
        self.clients = clients
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.reasons: list[str] = []
        self._task: asyncio.Task | None = None
        # (role, node id, () -> problems) of the other roles of this process; set at wiring, before start
        self.roles: list[tuple[str, Callable[[], int], Callable[[], list[str]]]] = []

    async def start(self) -> None:
        await self.refresh()
        self._task = asyncio.create_task(self._loop(), name="vecgrid-health")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.refresh()
            except Exception as error:  # noqa: BLE001 - reported as the health answer, tried again next round
                log.warning("health refresh failed", exc_info=True)
                self._failed(error)

    def _failed(self, error: Exception) -> None:
        msg = {"role": "querycoord", "node_id": 0, "reason": {
            "unhealthy_msg": f"health refresh failed: {type(error).__name__}: {error}",
            "unhealthy_level": LEVEL_FATAL}}
        self.healthy = False
        self.reasons = [json.dumps({"unhealthy_cluster_msgs": [msg], "unhealthy_collection_msgs": []})]

    async def refresh(self) -> None:
        nodes = self.nodes.all()
        problems = await asyncio.gather(*(self._check(node) for node in nodes))
        cluster_msgs = [
            {"role": "querynode", "node_id": node.node_id,
             "reason": {"unhealthy_msg": problem, "unhealthy_level": LEVEL_FATAL}}
            for node, problem in zip(nodes, problems) if problem
        ] + [
            {"role": role, "node_id": node_id(), "reason": {"unhealthy_msg": problem, "unhealthy_level": LEVEL_FATAL}}
            for role, node_id, role_problems in self.roles for problem in role_problems()
        ]
        collection_msgs = [
            {"database_id": db_id, "collection_id": cid,
             "reason": {"unhealthy_msg": reason, "unhealthy_level": LEVEL_CRITICAL}}
            for db_id, cid, reason in self._long_unqueryable()
        ]
        self.healthy = not cluster_msgs
        self.reasons = [json.dumps({"unhealthy_cluster_msgs": cluster_msgs,
                                    "unhealthy_collection_msgs": collection_msgs})] \
            if cluster_msgs or collection_msgs else []

    def _long_unqueryable(self) -> list[tuple[int, int, str]]:
        now = time.monotonic()
        failing = self.unqueryable()
        self._failing_since = {cid: self._failing_since.get(cid, now) for _, cid, _ in failing}
        return [(db, cid, reason) for db, cid, reason in failing
                if now - self._failing_since[cid] >= UNQUERYABLE_AFTER_S]

    async def _check(self, node: NodeInfo) -> str | None:
        """Why ``node`` is unhealthy, or None when it is healthy (or cannot be asked)."""
        try:
            reply = await self.clients.stub(node.node_id).CheckHealth(
                milvus_pb2.CheckHealthRequest(), timeout=self.timeout_s,
                metadata=self.clients.metadata(node.node_id))
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                return None
            return f"CheckHealth on querynode {node.node_id} failed: {e.code().name} {e.details()}"
        if reply.status.code != 0:
            return reply.status.reason
        if not reply.isHealthy:
            return "; ".join(reply.reasons) or "unhealthy"
        return None
