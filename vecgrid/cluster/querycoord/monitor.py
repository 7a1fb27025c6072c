"""The QueryCoord's state as plain data, for the Dask dashboard page and ``/metrics``.

:func:`cluster_snapshot` reads the coordinator's meta (collections, replicas, partition states,
the polled distribution, the task scheduler) into a JSON-able dict; the coordinator process
publishes it as Dask scheduler metadata (:data:`METADATA_KEY`) where the dashboard page reads it,
and the REST ``/metrics`` collector reads the same numbers.  Beside the QueryCoord's meta it carries the
rows the write path inserted (the appenders' counter, ``inserted_rows``) and, when the DataCoord is
given, its work in flight (``datacoord``: flushes, compaction plans, index builds and every index's
pending rows — :meth:`~vecgrid.cluster.datacoord.component.DataCoord.activity`, read by the caller before
the snapshot, as the names are: the DataCoord sits on the QueryCoord's layer and is passed in, not imported).

:class:`LoadStats` counts load requests by outcome (Milvus's ``querycoord_load_req_count``) and
times loads from request to 100 % (``querycoord_load_latency``): a load's clock stops the first
time a snapshot sees its collection fully loaded, so the latency's resolution is the publishing
period.

State: everything here is read and written on the coordinator's event loop, where the
QueryCoord's meta lives; :class:`LoadStats` is owned by that loop too.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from vecgrid import errors

from vecgrid.cluster.periodic import Periodic
from vecgrid.common.histogram import CumulativeHistogram
from vecgrid.cluster.querycoord import reports
from vecgrid.cluster.querycoord.task.task import NO_NODE, ChannelTask, IndexSaveTask, LeaderTask, SegmentTask
from vecgrid.proto import query_coord_pb2

#: Dask scheduler metadata key under which the coordinator publishes :func:`cluster_snapshot`
METADATA_KEY = ("vecgrid", "cluster")
#: seconds; load latency buckets (loads take seconds to minutes)
LOAD_BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


class LoadStats:
    """Load request counters and the load latency histogram."""

    def __init__(self) -> None:
        self.requests = {"success": 0, "fail": 0}
        self.latency = CumulativeHistogram(LOAD_BUCKETS)
        self._started: dict[int, float] = {}

    def requested(self, collection_id: int, ok: bool) -> None:
        self.requests["success" if ok else "fail"] += 1
        if ok:
            self._started.setdefault(collection_id, time.monotonic())
        else:
            self._started.pop(collection_id, None)

    def seen(self, percentages: dict[int, int]) -> None:
        """Stop the clock of every pending load now at 100 %; forget loads of released collections."""
        for cid in list(self._started):
            pct = percentages.get(cid)
            if pct is None:
                del self._started[cid]
            elif pct >= 100:
                self.latency.observe(time.monotonic() - self._started.pop(cid))

    def snapshot(self) -> dict[str, Any]:
        return {"requests": dict(self.requests), "latency": self.latency.snapshot()}


def task_type(task: Any) -> str:
    """Milvus's ``task_type`` label: what the task does to the distribution."""
    if isinstance(task, (SegmentTask, ChannelTask)):
        kind = "segment" if isinstance(task, SegmentTask) else "channel"
        grow, reduce = task.target != NO_NODE, task.source != NO_NODE
        return f"{kind}_{'move' if grow and reduce else 'grow' if grow else 'reduce'}"
    if isinstance(task, LeaderTask):
        return "leader_sync"
    if isinstance(task, IndexSaveTask):
        return "index_save"
    return type(task).__name__.lower()


def catalog_names(catalog: Any, collection_ids: list[int]) -> dict[int, tuple[str, dict[int, str]]]:
    """Each collection's name and partition names: store reads, so callers run it off the event loop.
    A collection dropped meanwhile is shown by id."""
    names: dict[int, tuple[str, dict[int, str]]] = {}
    for cid in collection_ids:
        try:
            coll = catalog.get_collection(cid)
        except errors.CollectionNotFound:
            names[cid] = (str(cid), {})
            continue
        names[cid] = (coll.name, {p.partitionID: p.partitionName for p in coll.partitions})
    return names


async def read_catalog_names(coord: Any) -> dict[int, tuple[str, dict[int, str]]]:
    return await asyncio.to_thread(catalog_names, coord.catalog, list(coord.collections.ids()))


def cluster_snapshot(coord: Any, names: dict[int, tuple[str, dict[int, str]]],
                     datacoord: dict[str, Any] | None = None) -> dict[str, Any]:
    """Nodes, collections and tasks as the coordinator sees them now (see the module docstring); ``names``
    from :func:`read_catalog_names` and ``datacoord`` from the DataCoord's ``activity()``, so that this
    runs on the loop without store reads."""
    nodes = []
    for info in sorted(coord.nodes.all(), key=lambda n: n.node_id):
        dist = coord.dist.node(info.node_id)
        nodes.append({
            "node_id": info.node_id, "name": info.name, "address": info.address, "worker": info.worker,
            "state": info.state, "gpu_memory_mb": info.gpu_memory_mb,
            "segments": len(dist.segments) if dist else 0,
            "channels": [c.channel for c in dist.channels] if dist else [],
            "last_seen_s": round(time.monotonic() - dist.heartbeat, 3) if dist and dist.heartbeat else None,
        })
    collections = []
    percentages: dict[int, int] = {}
    for cid in sorted(coord.collections.ids()):
        name, partition_names = names.get(cid, (str(cid), {}))
        pct = coord.collections.percentage(cid)
        percentages[cid] = pct
        states = _partition_states(coord, cid, partition_names)
        replicas = coord.replicas.of_collection(cid)
        segments_per_node: dict[str, int] = {}
        for node_id, _ in coord.dist.segments(cid):
            segments_per_node[str(node_id)] = segments_per_node.get(str(node_id), 0) + 1
        collections.append({
            "collection_id": cid, "name": name, "load_percentage": pct,
            "replicas": [{"id": r.ID, "nodes": list(r.nodes), "resource_group": r.resource_group}
                         for r in replicas],
            "partitions": states, "segments_per_node": segments_per_node,
        })
    coord.load_stats.seen(percentages)
    tasks: dict[str, int] = {}
    for task in coord.scheduler.tasks():
        kind = task_type(task)
        tasks[kind] = tasks.get(kind, 0) + 1
    return {"querycoord": {"state": coord.lifecycle.state.name, "node_id": coord.lifecycle.node_id,
                           "address": coord.address},
            "nodes": nodes, "collections": collections, "tasks": tasks,
            "tasks_waiting": coord.scheduler.waiting, "load": coord.load_stats.snapshot(),
            "wal_appends": coord.appenders.append_latency.snapshot()["count"],
            "inserted_rows": coord.appenders.inserted_rows.snapshot(),
            "datacoord": datacoord,
            "dask_client": coord.client.id,   # whose Dask tasks are vecgrid's (the dashboard counts them)
            "time": time.time()}


def _partition_states(coord: Any, cid: int, names: dict[int, str]) -> list[dict[str, Any]]:
    return [{"partition_id": p.partitionID, "name": names.get(p.partitionID, ""),
             "state": query_coord_pb2.PartitionState.Name(p.state),
             "load_percentage": int(p.inMemory_percentage)}
            for p in reports.partition_states(coord.ctx, cid, [])]


class ClusterPublisher(Periodic):
    """Publishes :func:`cluster_snapshot` as Dask scheduler metadata every ``interval_s``.

    The dashboard page shows how old the snapshot is: a publisher that keeps failing shows as a
    stale page ("state published 40 s ago"); each failure is logged by
    :class:`~vecgrid.cluster.periodic.Periodic` and kept in ``last_error``.  A scheduler that cannot
    be reached also makes ``/health``'s ``scheduler`` component unhealthy."""

    name = "cluster state publisher"

    def __init__(self, coord: Any, client: Any, interval_s: float = 1.0, *, datacoord: Any = None) -> None:
        super().__init__(interval_s)
        self.coord, self.client, self.datacoord = coord, client, datacoord
        self.last_error: str | None = None
        self.published = 0

    async def round(self) -> None:
        try:
            names = await read_catalog_names(self.coord)
            data = await self.datacoord.activity() if self.datacoord is not None else None
            await self.client.set_metadata(list(METADATA_KEY), cluster_snapshot(self.coord, names, data))
        except Exception as e:
            self.last_error = f"{type(e).__name__}: {e}"
            raise
        self.last_error = None
        self.published += 1
