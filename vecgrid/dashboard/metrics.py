"""vecgrid's series on the Dask scheduler's own ``/metrics`` (registered by :func:`vecgrid.dashboard.dask_setup`).

The ``vecgrid_querynode_*`` families come from the node snapshots of the workers' heartbeats through
:func:`vecgrid.common.node_metrics.node_families`, the function the coordinator's REST ``/metrics`` uses
for the same snapshots from GetMetrics: the two ports export one name and one label set per series.  The
``collection`` label takes its names from the state the coordinator publishes (scheduler metadata).  Only
this port has ``vecgrid_querynode_snapshot_failed{node_id}``: 1 for a node whose heartbeat says it could
not read its own state (the coordinator's port counts the nodes that do not answer instead).

State: the collector reads the scheduler on the thread serving ``/metrics``, the scheduler's loop.
"""

from __future__ import annotations

from typing import Any

from vecgrid.common.node_metrics import collection_labels, node_families, prometheus_conventions


class WorkerCollector:
    """The node families from the heartbeats' snapshots (one per process; it follows the newest
    scheduler, as Dask's own collectors do)."""

    instance: "WorkerCollector | None" = None

    def __init__(self, scheduler: Any) -> None:
        prometheus_conventions()   # no _created series on this port either (Dask's included)
        self.scheduler = scheduler

    def describe(self) -> list:
        return []

    def collect(self) -> Any:
        from prometheus_client.core import GaugeMetricFamily

        from vecgrid.dashboard import state

        snapshot = state(self.scheduler)
        collections = (snapshot["cluster"] or {}).get("collections", [])
        labels = collection_labels({int(c["collection_id"]): c["name"] for c in collections})
        failed = GaugeMetricFamily("vecgrid_querynode_snapshot_failed",
                                   "1 when the query node's heartbeat says it could not read its state",
                                   labels=["node_id"])
        for n in snapshot["nodes"]:
            if int(n["node_id"]) < 0:
                continue   # not registered yet: no series of its own (see node_families)
            failed.add_metric([str(n["node_id"])], 1 if "error" in n else 0)
        return [*node_families(snapshot["nodes"], labels), failed]
