"""The QueryNode component: one per Dask worker.

It holds what the node serves and answers the QueryNode RPCs.  The gRPC servicer
(``vecgrid.rpc.querynode_servicer``) and the coordinator's Dask tasks both call
these methods, so a segment load issued over gRPC and one issued as a Dask task
run the same code.

A node starts Initializing with node id -1 (as a Milvus node before its session
is registered) and becomes Healthy when the coordinator assigns its id.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from vecgrid.cluster import sysinfo
from vecgrid.cluster.component import Component
from vecgrid.cluster.lifecycle import StateCode
from vecgrid.config import Settings

ROLE = "querynode"


class QueryNode(Component):
    def __init__(self, settings: Settings, name: str, deploy_mode: str = "CLUSTER") -> None:
        super().__init__(settings, ROLE)
        self.name = name
        self.deploy_mode = deploy_mode
        self.hostname = socket.gethostname()

    # --- session ---------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.lifecycle.node_id

    def assign_node_id(self, node_id: int) -> None:
        """Called by the coordinator once it has registered this node: the node starts serving."""
        self.lifecycle.node_id = node_id
        if self.lifecycle.state == StateCode.Initializing:
            self.lifecycle.set(StateCode.Healthy)

    def stop(self) -> None:
        self.lifecycle.set(StateCode.Stopping)

    def describe(self) -> dict[str, Any]:
        """What the coordinator needs to register this node (msgpack-serialisable)."""
        return {
            "name": self.name,
            "address": self.address,
            "hostname": self.hostname,
            "node_id": self.node_id,
            "state": self.lifecycle.state.name,
        }

    # --- component RPCs ----------------------------------------------------------------

    def metrics(self, request: str) -> str:
        """GetMetrics: the ``system_info`` JSON of this node (the only metric type Milvus serves)."""
        self.lifecycle.check_healthy()
        sysinfo.parse_metric_type(request)
        doc = {
            "base_component_infos": sysinfo.base_component_info(
                self.lifecycle, self.address, self.deploy_mode, self.settings.common.data_dir),
            "system_configurations": {
                "simd_type": "auto",
            },
            "quota_metrics": {},
            "collection_metrics": {"collection_ids": []},
            "worker_name": self.name,
        }
        return json.dumps(doc)

    def health_reasons(self) -> list[str]:
        """Why this node is unhealthy; empty when healthy.  Raises when not serving at all."""
        self.lifecycle.check_healthy()
        return []
