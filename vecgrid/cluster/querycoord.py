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
from vecgrid.cluster.dist.dist_handler import DistController
from vecgrid.cluster.dist.distribution import DistributionManager
from vecgrid.cluster.lifecycle import StateCode
from vecgrid.cluster.observers.health_observer import HealthObserver
from vecgrid.cluster.session.cluster import NodeClients
from vecgrid.cluster.session.membership import DaskMembership
from vecgrid.cluster.session.node_manager import NodeInfo, NodeManager
from vecgrid.cluster.session.registry import NodeIdRegistry
from vecgrid.config import Settings
from vecgrid import errors
from vecgrid.cluster.meta.resource_manager import ResourceManager
from vecgrid.rpc.proto import common_pb2, milvus_pb2, query_coord_pb2, rg_pb2
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
        self.dist = DistributionManager()
        self.dist_controller = DistController(self.nodes, self.node_clients, self.dist,
                                              settings.querycoord.dist_pull_interval_s,
                                              settings.querycoord.dist_request_timeout_s)
        self.resources = ResourceManager(store, node_labels=lambda node_id: dict(
            getattr(self.nodes.get(node_id), "labels", {}) or {}))
        self.suspended: set[int] = set()
        self.nodes.on_up(self._node_up)
        self.nodes.on_down(self._node_down)

    def _node_up(self, info: NodeInfo) -> None:
        if info.node_id not in self.suspended:
            self.resources.assign_node(info.node_id)
            self.resources.recover()

    def _node_down(self, info: NodeInfo) -> None:
        self.resources.unassign_node(info.node_id)
        self.resources.recover()

    async def start(self) -> None:
        self.lifecycle.node_id = self.registry.id_for(ROLE, ROLE)
        await self.membership.start()
        # Nodes recorded in resource groups before a restart that did not come back are gone.
        online = {n.node_id for n in self.nodes.all()}
        for name in self.resources.names():
            for node_id in list(self.resources.group(name).nodes):
                if node_id not in online:
                    self.resources.unassign_node(node_id)
        self.resources.recover()
        self.dist_controller.start()
        await self.health.start()
        self.lifecycle.set(StateCode.Healthy)
        log.info("querycoord %d healthy with %d query nodes", self.lifecycle.node_id, len(self.nodes))

    async def stop(self) -> None:
        self.lifecycle.set(StateCode.Stopping)
        await self.health.stop()
        await self.dist_controller.stop()
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

    def _node(self, node_id: int) -> NodeInfo:
        info = self.nodes.get(node_id)
        if info is None:
            raise errors.NodeNotFound(node=node_id)
        return info

    def query_node_distribution(self, node_id: int) -> tuple[list[str], list[int]]:
        """GetQueryNodeDistribution: the node's channels and sealed segments, as last polled."""
        self.lifecycle.check_healthy()
        self._node(node_id)
        dist = self.dist.node(node_id)
        if dist is None:
            return [], []
        return [c.channel for c in dist.channels], [s.ID for s in dist.segments]

    def suspend_node(self, node_id: int) -> None:
        """Take the node out of its resource group (it gets drained); it stays unassigned until resumed."""
        self.lifecycle.check_healthy()
        self._node(node_id)
        self.suspended.add(node_id)
        self.resources.unassign_node(node_id)
        self.resources.recover()

    def resume_node(self, node_id: int) -> None:
        self.lifecycle.check_healthy()
        self._node(node_id)
        self.suspended.discard(node_id)
        self.resources.assign_node(node_id)
        self.resources.recover()

    # --- resource groups ---------------------------------------------------------------------

    def create_resource_group(self, name: str, config: rg_pb2.ResourceGroupConfig | None) -> None:
        self.lifecycle.check_healthy()
        self.resources.create(name, config)

    def update_resource_groups(self, configs: dict[str, rg_pb2.ResourceGroupConfig]) -> None:
        self.lifecycle.check_healthy()
        self.resources.update(configs)

    def drop_resource_group(self, name: str) -> None:
        self.lifecycle.check_healthy()
        self.resources.drop(name)

    def transfer_node(self, source: str, target: str, num: int) -> None:
        self.lifecycle.check_healthy()
        self.resources.transfer_node(source, target, num)

    def transfer_replica(self, source: str, target: str, collection_id: int, num: int) -> None:
        """TransferReplica: validated as Milvus does; a collection with no replicas cannot move any."""
        self.lifecycle.check_healthy()
        self.resources.group(source)
        self.resources.group(target)
        if source == target:
            raise errors.ParameterInvalid("source and target resource groups are the same", rg=source)
        if num <= 0:
            raise errors.ParameterInvalid(f"num_replica must be positive, got {num}")
        replicas = self.replicas_of(collection_id, source)
        if not replicas:
            raise errors.ParameterInvalid("Collection not loaded", collection=collection_id)
        if len(replicas) < num:
            raise errors.ParameterInvalid(
                f"only {len(replicas)} replicas of the collection in {source}, {num} requested",
                collection=collection_id)

    def replicas_of(self, collection_id: int, resource_group: str) -> list:
        """Replicas of a collection in an RG: none until loading lands (README status table)."""
        return []

    def list_resource_groups(self) -> list[str]:
        self.lifecycle.check_healthy()
        return self.resources.names()

    def describe_resource_group(self, name: str) -> query_coord_pb2.ResourceGroupInfo:
        self.lifecycle.check_healthy()

        def online(node_id: int) -> common_pb2.NodeInfo | None:
            info = self.nodes.get(node_id)
            return None if info is None else common_pb2.NodeInfo(node_id=info.node_id, address=info.address,
                                                                  hostname=info.hostname)
        return self.resources.describe(name, online)


def _unreachable(node: NodeInfo, reason: str) -> dict:
    return {"base_component_infos": {"has_error": True, "error_reason": reason, "type": "querynode",
                                     "name": f"querynode{node.node_id}", "id": node.node_id}}
