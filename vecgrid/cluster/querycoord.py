"""The QueryCoord component: wiring of the coordinator's parts, as Milvus's ``server.go``.

It owns the session layer (nodes from Dask membership, gRPC clients to them), the
observers, and — as later parts land — meta, targets, distribution, checkers,
balancer, task scheduler and jobs.  The gRPC servicer calls one method here per
RPC; nothing in this class encodes protobuf replies.
"""

from __future__ import annotations

import asyncio
import json
import logging

from distributed import Client

from vecgrid.cluster import sysinfo
from vecgrid.cluster.component import Component
from vecgrid.cluster.lifecycle import StateCode
from vecgrid.cluster.observers.health_observer import HealthObserver
from vecgrid.cluster.session.cluster import NodeClients
from vecgrid.cluster.session.membership import DaskMembership
from vecgrid.cluster.session.node_manager import NodeInfo, NodeManager
from vecgrid.cluster.session.registry import NodeIdRegistry
from vecgrid.config import Settings
from vecgrid.rpc.proto import milvus_pb2
from vecgrid.storage.kv import MetaStore

log = logging.getLogger(__name__)

ROLE = "querycoord"


class QueryCoord(Component):
    def __init__(self, settings: Settings, client: Client, store: MetaStore,
                 deploy_mode: str = "CLUSTER") -> None:
        super().__init__(settings, ROLE)
        self.client = client
        self.store = store
        self.deploy_mode = deploy_mode
        self.nodes = NodeManager()
        self.registry = NodeIdRegistry(store)
        self.node_clients = NodeClients(self.nodes)
        self.membership = DaskMembership(client, self.nodes, self.registry)
        self.health = HealthObserver(self.nodes, self.node_clients,
                                     settings.common.healthcheck_interval_s,
                                     settings.common.healthcheck_timeout_s)

    async def start(self) -> None:
        self.lifecycle.node_id = self.registry.id_for(ROLE, ROLE)
        await self.membership.start()
        await self.health.start()
        self.lifecycle.set(StateCode.Healthy)
        log.info("querycoord %d healthy with %d query nodes", self.lifecycle.node_id, len(self.nodes))

    async def stop(self) -> None:
        self.lifecycle.set(StateCode.Stopping)
        await self.health.stop()
        await self.membership.stop()
        await self.node_clients.close()

    # --- component RPCs ----------------------------------------------------------------

    async def metrics(self, request: str) -> str:
        """GetMetrics: Milvus's QueryCoord topology document, itself plus every node's own report."""
        self.lifecycle.check_healthy()
        sysinfo.parse_metric_type(request)
        nodes = self.nodes.all()
        reports = await asyncio.gather(*(self._node_metrics(n) for n in nodes))
        doc = {
            "cluster": {
                "self": {
                    "base_component_infos": sysinfo.base_component_info(
                        self.lifecycle, self.address, self.deploy_mode, self.settings.common.data_dir),
                    "system_configurations": {"search_channel_prefix": "", "search_result_channel_prefix": ""},
                },
                "connected_nodes": [r for r in reports if r is not None],
            },
            "connections": {
                "name": self.lifecycle.component_name,
                "connected_components": [
                    {"target_name": f"querynode{n.node_id}", "target_type": "querynode",
                     "connected_identifier": n.node_id}
                    for n in nodes
                ],
            },
        }
        return json.dumps(doc)

    async def _node_metrics(self, node: NodeInfo) -> dict | None:
        try:
            reply = await self.node_clients.stub(node.node_id).GetMetrics(
                milvus_pb2.GetMetricsRequest(request=json.dumps({"metric_type": sysinfo.SYSTEM_INFO})),
                timeout=self.settings.common.healthcheck_timeout_s,
                metadata=self.node_clients.metadata(node.node_id))
        except Exception as e:  # noqa: BLE001 - a node that cannot answer is reported with has_error
            return _unreachable(node, str(e))
        if reply.status.code != 0:
            return _unreachable(node, reply.status.reason)
        return json.loads(reply.response)

    def health_reasons(self) -> list[str]:
        self.lifecycle.check_healthy()
        return list(self.health.reasons)

    # --- operator RPCs -----------------------------------------------------------------

    def list_query_nodes(self) -> list[NodeInfo]:
        self.lifecycle.check_healthy()
        return self.nodes.all()


def _unreachable(node: NodeInfo, reason: str) -> dict:
    return {"base_component_infos": {"has_error": True, "error_reason": reason, "type": "querynode",
                                     "name": f"querynode{node.node_id}", "id": node.node_id}}
