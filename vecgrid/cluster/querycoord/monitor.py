"""The QueryCoord's state as plain data, for the Dask dashboard page and ``/metrics``.

:func:`cluster_snapshot` reads the coordinator's meta (collections, replicas, partition states,
the polled distribution, the task scheduler) into a JSON-able dict; the coordinator process
publishes it as Dask scheduler metadata (:data:`METADATA_KEY`) where the dashboard page reads it,
and the REST ``/metrics`` collector reads the same numbers.  Beside the QueryCoord's meta it carries the
rows the write path inserted (the appenders' counter, ``inserted_rows``) and, when the DataCoord is
given, its work in flight (``datacoord``: flushes, compaction plans, index builds and every index's
pending rows — :meth:`~vecgrid.cluster.datacoord.component.DataCoord.activity`, read by the caller before
the snapshot, as the names are: the DataCoord sits on the QueryCoord's layer and is passed in, not imported).

:class:`LoadStats` counts load requests by collection and outcome (Milvus's ``querycoord_load_req_count``)
and times them (``querycoord_load_latency``), both once per request, when its outcome is known, so that the
success and fail counts of a collection always add up to its latency histogram's count:

- a request the QueryCoord refuses (validation, a collection not found...) is a ``fail`` when refused, with
  0 s of latency: its clock starts when the QueryCoord answers the request and stops at once;
- an accepted request is pending until a snapshot sees its collection at 100 % (a ``success``, timed from
  the answer to that snapshot, so the latency's resolution is the publishing period) or no longer sees it
  loaded or loading (released, or its load failed and was undone: a ``fail``, timed likewise);
- several requests for one collection each have their own clock; the pending ones are
  ``LoadStats.in_flight`` (the ``..._load_requests_in_flight`` gauge).

(Milvus counts a request when it answers it and times only the loads that completed, so its two numbers
drift apart; vecgrid's counter lags its answer by the time the load takes instead.)

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
    """Load request counters and the load latency histogram, per collection id (see the module docstring)."""

    def __init__(self) -> None:
        self.requests: dict[int, dict[str, int]] = {}
        self.latency: dict[int, CumulativeHistogram] = {}
        # each counted collection's name as first read; None: not in the catalog (a load refused for an id
        # that names no collection), not read again
        self.names: dict[int, str | None] = {}
        self._pending: dict[int, list[float]] = {}       # accepted requests' start times, per collection

    def requested(self, collection_id: int, ok: bool) -> None:
        if ok:
            self._pending.setdefault(collection_id, []).append(time.monotonic())
        else:
            self._finish(collection_id, "fail", 0.0)

    def seen(self, percentages: dict[int, int]) -> None:
        """End every pending request whose collection is now at 100 % (success) or no longer loaded (fail)."""
        now = time.monotonic()
        for cid in list(self._pending):
            pct = percentages.get(cid)
            if pct is not None and pct < 100:
                continue
            for started in self._pending.pop(cid):
                self._finish(cid, "fail" if pct is None else "success", now - started)

    def _finish(self, collection_id: int, status: str, seconds: float) -> None:
        counts = self.requests.setdefault(collection_id, {"success": 0, "fail": 0})
        counts[status] += 1
        self.latency.setdefault(collection_id, CumulativeHistogram(LOAD_BUCKETS)).observe(seconds)

    def collection_ids(self) -> set[int]:
        return set(self.requests) | set(self._pending)

    def snapshot(self) -> dict[str, Any]:
        """Per collection id (as a string, the JSON key): ``requests``, ``latency`` and ``in_flight``."""
        return {str(cid): {"requests": dict(self.requests.get(cid, {"success": 0, "fail": 0})),
                           "latency": self.latency[cid].snapshot() if cid in self.latency
                           else CumulativeHistogram(LOAD_BUCKETS).snapshot(),
                           "in_flight": len(self._pending.get(cid, ()))}
                for cid in sorted(self.collection_ids())}


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
    """Names of the collections loaded or loading, and of those the write path inserted into; those of
    collections only :class:`LoadStats` counts come from its cache (a name read once stays: a dropped
    collection keeps its series' label; an id the catalog did not know is not asked again)."""
    stats = coord.load_stats
    wanted = set(coord.collections.ids()) | {cid for cid in stats.collection_ids() if cid not in stats.names}
    wanted |= set(coord.appenders.inserted_rows.by_collection())
    return await asyncio.to_thread(catalog_names, coord.catalog, sorted(wanted))


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
    counted = coord.load_stats.collection_ids()
    for cid, (name, _) in names.items():
        if name != str(cid):   # the catalog knew it (catalog_names gives the id of one it does not know)
            coord.load_stats.names[cid] = name
        elif cid in counted:
            coord.load_stats.names.setdefault(cid, None)
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
            # by collection id (a string: the snapshot is published as JSON)
            "inserted_rows_by_collection": {str(cid): counts for cid, counts
                                            in coord.appenders.inserted_rows.by_collection().items()},
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
