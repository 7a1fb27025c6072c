"""``vecgrid_worker_*`` series on the Dask scheduler's own ``/metrics`` (registered by
:func:`vecgrid.dashboard.dask_setup`).

State: the collector reads the scheduler on the thread serving ``/metrics``, the scheduler's loop.
"""

from __future__ import annotations

from typing import Any

class WorkerCollector:
    """``vecgrid_worker_*`` gauges from the heartbeats' node snapshots (one per process; it follows
    the newest scheduler, as Dask's own collectors do)."""

    instance: "WorkerCollector | None" = None

    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler

    def describe(self) -> list:
        return []

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        labels = ["worker", "node_id"]
        segments = GaugeMetricFamily("vecgrid_worker_segments", "Sealed segments the worker's query node serves",
                                     labels=labels)
        entities = GaugeMetricFamily("vecgrid_worker_entities", "Rows of those segments", labels=labels)
        growing = GaugeMetricFamily("vecgrid_worker_growing_rows", "Rows in the node's growing segments", labels=labels)
        gpu = GaugeMetricFamily("vecgrid_worker_gpu_memory_bytes", "GPU memory reserved (used) and budgeted (capacity)",
                                labels=[*labels, "kind"])
        searches = CounterMetricFamily("vecgrid_worker_search_requests", "Searches served", labels=[*labels, "status"])
        failed = GaugeMetricFamily("vecgrid_worker_snapshot_failed",
                                   "1 when the worker's query node could not report its state", labels=labels)
        from vecgrid.dashboard import state

        for n in state(self.scheduler)["nodes"]:
            key = [n["worker"], str(n["node_id"])]
            failed.add_metric(key, 1 if "error" in n else 0)
            if "error" in n:
                continue
            segments.add_metric(key, n["segment_num"])
            entities.add_metric(key, n["entity_num"])
            growing.add_metric(key, n["growing_rows"])
            gpu.add_metric([*key, "used"], n["gpu_memory_used_bytes"])
            gpu.add_metric([*key, "capacity"], n["gpu_memory_capacity_bytes"])
            for status, count in sorted(n["search"]["requests"].items()):
                searches.add_metric([*key, status], count)
        return [segments, entities, growing, gpu, searches, failed]
