"""What a QueryNode tells its watchers: a small JSON-able snapshot of its state and counters.

One snapshot serves two readers without a new RPC: the Dask worker plugin puts it in
``worker.metrics["vecgrid"]`` (the scheduler receives it with every heartbeat and the vecgrid
dashboard page draws it), and the node's ``GetMetrics`` answer carries it under ``"vecgrid"``
(the coordinator's ``/metrics`` reads it from the GetMetrics fan-out it already makes).

Search counters follow Milvus's ``querynode_sq_req_count{status}`` and
``querynode_sq_req_latency`` (a histogram): the buckets are cumulative counts, as Prometheus
wants them, so the coordinator can re-export them unchanged.  Every search is counted once, with its
outcome, in the same call that observes its latency: the success and fail counts always add up to
the histogram's count.  Segments, sealed rows and growing rows are also given per collection id
(``collections``, ``growing_rows_by_collection``) for the ``collection`` label of ``/metrics``.

State: a :class:`NodeStats` belongs to one node; its counters are guarded by its own lock
(searches are observed on the node's event loop, snapshots may be taken from another thread).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import weakref
from typing import Any

import psutil

from vecgrid.common.histogram import CumulativeHistogram
from vecgrid.common.rates import RateWindow
from vecgrid.gpu.device import process_rss

# Milvus's metricsinfo rate labels a QueryNode reports in quota_metrics.Rms
NQ_PER_SECOND = "NQPerSecond"
SEARCH_THROUGHPUT = "SearchThroughput"               # search request bytes per second
INSERT_CONSUME_THROUGHPUT = "InsertConsumeThroughput"  # insert bytes read from the WAL per second
DELETE_CONSUME_THROUGHPUT = "DeleteConsumeThroughput"

class NodeStats:
    """Cumulative search counters of one node (monotonic, as Prometheus counters)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = {"success": 0, "fail": 0}
        self.nq_total = 0
        self.latency = CumulativeHistogram()
        self.nq_rate = RateWindow()
        self.search_bytes_rate = RateWindow()

    def observe_search(self, seconds: float, ok: bool, nq: int = 0, request_bytes: int = 0) -> None:
        # the count and the latency under one lock: a snapshot never sees one without the other
        with self._lock:
            self.requests["success" if ok else "fail"] += 1
            self.nq_total += nq
            self.latency.observe(seconds)
        self.nq_rate.add(nq)
        self.search_bytes_rate.add(request_bytes)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": dict(self.requests), "nq_total": self.nq_total, "latency": self.latency.snapshot()}


log = logging.getLogger(__name__)

_stats: "weakref.WeakKeyDictionary[Any, NodeStats]" = weakref.WeakKeyDictionary()
_stats_lock = threading.Lock()


def stats_of(node: Any) -> NodeStats:
    """The counters of ``node`` (made on first use; they die with the node)."""
    with _stats_lock:
        stats = _stats.get(node)
        if stats is None:
            stats = _stats[node] = NodeStats()
        return stats


def node_snapshot(node: Any) -> dict[str, Any]:
    """The node's state for the dashboard and Prometheus (msgpack- and JSON-serialisable).

    Memory: ``used`` is what vecgrid has reserved for loaded segments on that device and
    ``capacity`` its budget there (the numbers the loader decides with); the host also reports
    the process's resident memory and the machine's total."""
    segments = node.segments.list()
    per_collection: dict[str, dict[str, int]] = {}
    placement: dict[str, int] = {}
    for seg in segments:
        entry = per_collection.setdefault(str(seg.collection_id), {"segments": 0, "rows": 0})
        entry["segments"] += 1
        entry["rows"] += int(seg.num_rows)
        placement[seg.placement] = placement.get(seg.placement, 0) + 1
    devices = node.devices()
    gpus = [d for d in devices.devices if d.is_gpu]
    host = devices.host
    growing_by_collection: dict[str, int] = {}
    for d in list(node.delegators.values()):
        key = str(d.collection_id)
        growing_by_collection[key] = growing_by_collection.get(key, 0) + int(d.leader_view().num_of_growing_rows)
    return {
        "node_id": node.node_id,
        "name": node.name,
        "address": node.address,
        "hostname": node.hostname,
        "state": node.lifecycle.state.name,
        "device": "GPU" if gpus else "CPU",
        "gpus": [{"device": d.name, "used_bytes": d.used_bytes, "capacity_bytes": d.budget_bytes} for d in gpus],
        "gpu_memory_used_bytes": sum(d.used_bytes for d in gpus),
        "gpu_memory_capacity_bytes": sum(d.budget_bytes for d in gpus),
        "memory_used_bytes": host.used_bytes,
        "memory_capacity_bytes": host.budget_bytes,
        "process_rss_bytes": process_rss(),
        "host_memory_total_bytes": _host_memory_total(),
        "segment_num": len(segments),
        "entity_num": sum(int(s.num_rows) for s in segments),
        "growing_rows": sum(growing_by_collection.values()),
        "growing_rows_by_collection": growing_by_collection,
        "channels": sorted(node.delegators),
        "collections": per_collection,
        "placement": placement,
        "search": stats_of(node).snapshot(),
        "time": time.time(),
    }



@functools.lru_cache(maxsize=1)
def _host_memory_total() -> int:
    """The machine's memory, read once: reading /proc/meminfo every heartbeat cost ~0.1 ms of the loop."""
    return int(psutil.virtual_memory().total)


def heartbeat_snapshot(node: Any) -> dict[str, Any]:
    """:func:`node_snapshot` for ``worker.metrics``: a failure becomes the snapshot (with the error), so the
    node stays on the dashboard saying why — Dask drops an exception raised there without a word, and
    the node would silently vanish.  Logged with its traceback when the error changes."""
    try:
        snapshot = node_snapshot(node)
        _last_errors.pop(node, None)
        return snapshot
    except Exception as error:  # noqa: BLE001 - reported in the snapshot and the log, tried again next beat
        message = f"{type(error).__name__}: {error}"
        if _last_errors.get(node) != message:
            _last_errors[node] = message
            log.error("the state of query node %s could not be read", node.name, exc_info=error)
        return {"node_id": node.node_id, "name": node.name, "address": node.address, "error": message,
                "time": time.time()}


_last_errors: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


def quota_metrics(node: Any) -> dict[str, Any]:
    """GetMetrics' ``quota_metrics`` of a QueryNode, with Milvus's ``QueryNodeQuotaMetrics`` keys
    (what its QuotaCenter reads): rates over the last 3 s, the watched channels' flow graphs with the
    lowest tsafe, the memory the growing segments hold, the collections the
    node serves and the delegators' delete buffers."""
    stats = stats_of(node)
    delegators = list(node.delegators.values())
    pipelines = [(d.channel, d.pipeline) for d in delegators if d.pipeline is not None]
    slowest = min(pipelines, key=lambda cp: cp[1].tsafe, default=None)
    growing_bytes = sum(segment.nbytes() for _, pipeline in pipelines for _, _, segment in pipeline.growing_segments())
    delete_num: dict[str, int] = {}
    delete_size: dict[str, int] = {}
    for d in delegators:
        num, size = d.delete_buffer_size()
        key = str(d.collection_id)
        delete_num[key] = delete_num.get(key, 0) + num
        delete_size[key] = delete_size.get(key, 0) + size
    return {
        "Hms": {},  # Milvus leaves it empty too: the hardware figures are in hardware_infos
        "Rms": [
            {"Label": NQ_PER_SECOND, "Rate": stats.nq_rate.rate()},
            {"Label": SEARCH_THROUGHPUT, "Rate": stats.search_bytes_rate.rate()},
            {"Label": INSERT_CONSUME_THROUGHPUT, "Rate": sum(p.insert_rate.rate() for _, p in pipelines)},
            {"Label": DELETE_CONSUME_THROUGHPUT, "Rate": sum(p.delete_rate.rate() for _, p in pipelines)},
        ],
        "Fgm": {"MinFlowGraphChannel": slowest[0] if slowest else "",
                "MinFlowGraphTt": slowest[1].tsafe if slowest else 0,
                "NumFlowGraph": len(pipelines)},
        "GrowingSegmentsSize": growing_bytes,
        "Effect": {"NodeID": node.node_id, "CollectionIDs": sorted(c.id for c in node.collections.all())},
        "DeleteBufferInfo": {"CollectionDeleteBufferNum": delete_num, "CollectionDeleteBufferSize": delete_size},
    }
