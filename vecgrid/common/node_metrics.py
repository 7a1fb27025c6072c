"""The per-query-node Prometheus families, shared by the two ports that export them.

The coordinator's REST ``/metrics`` (:mod:`vecgrid.http.metrics`, from each node's GetMetrics answer) and
the Dask scheduler's ``/metrics`` (:mod:`vecgrid.dashboard.metrics`, from the heartbeats) both build their
``vecgrid_querynode_*`` families with :func:`node_families`, from the same node snapshot
(:func:`vecgrid.cluster.querynode.monitor.node_snapshot`): one name and one label set per series,
whichever port Prometheus reads it from.

Naming (docs/operations.md lists the Milvus name of each): counters are declared without ``_total``
(prometheus_client appends it), gauges say what they count (``_segments``, ``_entities``), never ``_num``
or ``_count``, and no ``_created`` series is exported (:func:`prometheus_conventions`, called by both
exporters, turns them off for the whole process: Dask's own series included).  A label ``collection``
carries the collection's name (:func:`collection_labels`).

State: none; every function builds new families from the snapshots it is given.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily


def prometheus_conventions() -> None:
    """No ``_created`` series in this process (prometheus_client reads the switch at each scrape, so it
    applies to metrics made before the call too; the PROMETHEUS_DISABLE_CREATED_SERIES variable would be
    read only when prometheus_client is first imported, which Dask may have done already)."""
    from prometheus_client import disable_created_metrics

    disable_created_metrics()


def collection_labels(names: Mapping[int, str]) -> dict[int, str]:
    """The ``collection`` label of each collection id: its name, or ``name#id`` where two collections
    (of different databases) share a name, so that no two collections share a series."""
    seen: dict[str, int] = {}
    for name in names.values():
        seen[name] = seen.get(name, 0) + 1
    return {cid: name if seen[name] == 1 else f"{name}#{cid}" for cid, name in names.items()}


def collection_label(labels: Mapping[int, str], collection_id: int | str) -> str:
    """A collection's label; its id when its name is unknown (dropped, or not published yet)."""
    return labels.get(int(collection_id), str(collection_id))


def add_histogram(family: HistogramMetricFamily, labels: list[str], snap: Mapping[str, Any]) -> None:
    """Add one :class:`~vecgrid.common.histogram.CumulativeHistogram` snapshot to ``family``."""
    buckets = [(repr(float(bound)), count) for bound, count in snap["buckets"]]
    buckets.append(("+Inf", snap["count"]))
    family.add_metric(labels, buckets, snap["sum"])


def node_families(reports: Iterable[Mapping[str, Any]], labels: Mapping[int, str]) -> list[Any]:
    """The ``vecgrid_querynode_*`` families of the nodes' snapshots; ``labels`` from :func:`collection_labels`.
    A snapshot that carries an ``error`` (the node could not read its state) adds nothing, nor does one of a
    node not registered yet (node id -1: every such node would share its series)."""
    info = GaugeMetricFamily("vecgrid_querynode_info", "1 per query node, with its name and address",
                             labels=["node_id", "name", "address"])
    segments = GaugeMetricFamily("vecgrid_querynode_segments", "Sealed segments a node serves, per collection",
                                 labels=["node_id", "collection"])
    entities = GaugeMetricFamily("vecgrid_querynode_entities", "Rows of the sealed segments a node serves",
                                 labels=["node_id", "collection"])
    # growing rows from the node itself: a polled distribution is replaced only when the node's
    # lastModifyTs moves, which inserts into growing segments do not do
    growing = GaugeMetricFamily("vecgrid_querynode_growing_rows", "Rows in a node's growing segments",
                                labels=["node_id", "collection"])
    gpu = GaugeMetricFamily("vecgrid_querynode_gpu_memory_bytes",
                            "GPU memory vecgrid has reserved for segments (used) and its budget (capacity)",
                            labels=["node_id", "kind"])
    memory = GaugeMetricFamily("vecgrid_querynode_memory_bytes",
                               "Host memory reserved for segments (used) and its budget (capacity)",
                               labels=["node_id", "kind"])
    requests = CounterMetricFamily("vecgrid_querynode_search_requests", "Search requests a node served, by outcome",
                                   labels=["node_id", "status"])
    latency = HistogramMetricFamily("vecgrid_querynode_search_latency_seconds",
                                    "Latency of the searches a node served (one observation per request)",
                                    labels=["node_id"])
    for r in reports:
        if "error" in r or int(r["node_id"]) < 0:
            continue
        node = str(r["node_id"])
        info.add_metric([node, str(r.get("name", "")), str(r.get("address", ""))], 1)
        for cid, entry in sorted(r.get("collections", {}).items()):
            collection = collection_label(labels, cid)
            segments.add_metric([node, collection], entry["segments"])
            entities.add_metric([node, collection], entry["rows"])
        for cid, rows in sorted(r.get("growing_rows_by_collection", {}).items()):
            growing.add_metric([node, collection_label(labels, cid)], rows)
        gpu.add_metric([node, "used"], r["gpu_memory_used_bytes"])
        gpu.add_metric([node, "capacity"], r["gpu_memory_capacity_bytes"])
        memory.add_metric([node, "used"], r["memory_used_bytes"])
        memory.add_metric([node, "capacity"], r["memory_capacity_bytes"])
        for status, count in sorted(r["search"]["requests"].items()):
            requests.add_metric([node, status], count)
        add_histogram(latency, [node], r["search"]["latency"])
    return [info, segments, entities, growing, gpu, memory, requests, latency]
