"""What the coordinator's checkers, jobs, observers and reports share: its managers, in one object.

The coordinator (:mod:`.coordinator`) builds one :class:`CheckerContext` and hands it to every
part; each manager inside owns its own state (see their docstrings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.replica_manager import ReplicaManager
from vecgrid.cluster.querycoord.meta.target_manager import TargetManager
from vecgrid.cluster.querycoord.session.node_manager import NodeManager
from vecgrid.cluster.querycoord.task.scheduler import TaskScheduler
from vecgrid.storage.catalog import Catalog


@dataclass
class CheckerContext:
    nodes: NodeManager
    collections: CollectionManager
    replicas: ReplicaManager
    targets: TargetManager
    dist: DistributionManager
    scheduler: TaskScheduler
    catalog: Catalog
    balancer: Any            # vecgrid.cluster.querycoord.balance.Balancer
    auto_balance: bool = True

    def online(self, node_id: int) -> bool:
        return self.nodes.get(node_id) is not None
