"""The live charts of the vecgrid page: Bokeh figures fed from :func:`vecgrid.dashboard.state` every
second, built the way Dask's own pages are (a component with a ``root`` and an ``update()`` on the
document's periodic callback, ColumnDataSources streamed with a rolling window).

The pure parts (counter rates, a quantile from two cumulative histogram snapshots, the partition strip,
the per-node bars) are plain functions over the snapshots, tested without Bokeh or a browser.

Every ColumnDataSource has a ``name`` (``vecgrid-…``) so that a test, or anyone in a browser console,
finds it with ``Bokeh.documents[0].get_model_by_name(name)``.

State: a :class:`VecgridPlots` belongs to one Bokeh document (one browser tab) and is only touched on
the scheduler's event loop, where Bokeh runs the document's callbacks; the per-node memory of the last
snapshot seen (for rates and latency quantiles) lives in it, never in module globals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: seconds of history the time series keep
WINDOW_S = 300
#: points kept per series (one a second)
ROLLOVER = WINDOW_S

#: colour of each partition state (query_coord_pb2.PartitionState names), best loaded first
PARTITION_STATES: dict[str, str] = {
    "InGPU": "#1a9850",
    "PartialInGPU": "#91cf60",
    "InMemory": "#2166ac",
    "PartialInMemory": "#92c5de",
    "OnDisk": "#fdae61",
    "NotPresent": "#bdbdbd",
    "NotExist": "#d73027",
}
UNKNOWN_STATE_COLOUR = "#636363"

#: one colour per node, in the order the page first sees them (Category10)
NODE_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                "#bcbd22", "#17becf"]
MIB = 1 << 20


# --- pure parts ------------------------------------------------------------------------------------

def counter_rate(prev: tuple[float, float] | None, now: float, total: float) -> float | None:
    """Per-second rate of a cumulative counter from ``prev = (time, total)`` to ``(now, total)``; None
    without an earlier reading, when time did not advance, or when the counter went back (a restart)."""
    if prev is None or now <= prev[0] or total < prev[1]:
        return None
    return (total - prev[1]) / (now - prev[0])


def histogram_quantile(prev: dict[str, Any] | None, cur: dict[str, Any], q: float) -> float | None:
    """The ``q``-quantile (0..1) of the observations made between two snapshots of one cumulative
    histogram (:meth:`vecgrid.common.histogram.CumulativeHistogram.snapshot`), interpolated linearly
    inside its bucket as Prometheus's ``histogram_quantile`` does.  None when nothing was observed in
    between (or the counters went back); observations above the last bound count as that bound."""
    count = cur["count"] - (prev["count"] if prev else 0)
    if count <= 0:
        return None
    before = {bound: c for bound, c in (prev or {}).get("buckets", [])}
    bounds = [(bound, c - before.get(bound, 0)) for bound, c in cur["buckets"]]
    if any(c < 0 for _, c in bounds):
        return None
    rank = q * count
    lower, below = 0.0, 0
    for bound, cumulative in bounds:
        if cumulative >= rank and cumulative > below:
            return lower + (bound - lower) * (rank - below) / (cumulative - below)
        lower, below = bound, cumulative
    return bounds[-1][0] if bounds else None


def node_label(node: dict[str, Any]) -> str:
    return f"node {node['node_id']}"


def partition_strip(cluster: dict[str, Any] | None) -> dict[str, list]:
    """One cell per partition of every loaded collection, coloured by its state (the strip's data)."""
    cols: dict[str, list] = {k: [] for k in ("cell", "collection", "partition", "state", "load", "colour", "text")}
    for coll in (cluster or {}).get("collections", []):
        for p in coll["partitions"]:
            name = p.get("name") or str(p["partition_id"])
            cols["cell"].append(f"{coll['name']}/{name}")
            cols["collection"].append(coll["name"])
            cols["partition"].append(name)
            cols["state"].append(p["state"])
            cols["load"].append(p["load_percentage"])
            cols["colour"].append(PARTITION_STATES.get(p["state"], UNKNOWN_STATE_COLOUR))
            cols["text"].append(f"{p['state']} {p['load_percentage']} %")
    return cols


def node_bars(nodes: list[dict[str, Any]]) -> dict[str, list]:
    """Per-node memory, GPU memory, segments and rows (the bar charts' data), from node snapshots that
    could be read; nodes sorted by id."""
    cols: dict[str, list] = {k: [] for k in (
        "node", "worker", "memory_used", "memory_budget", "gpu_used", "gpu_budget", "gpu_note",
        "segments", "rows", "growing")}
    for n in sorted((n for n in nodes if "error" not in n), key=lambda n: n["node_id"]):
        gpu = n["device"] == "GPU"
        cols["node"].append(node_label(n))
        cols["worker"].append(str(n["name"]))
        cols["memory_used"].append(n["memory_used_bytes"] / MIB)
        cols["memory_budget"].append(n["memory_capacity_bytes"] / MIB)
        cols["gpu_used"].append(n["gpu_memory_used_bytes"] / MIB if gpu else 0.0)
        cols["gpu_budget"].append(n["gpu_memory_capacity_bytes"] / MIB if gpu else 0.0)
        cols["gpu_note"].append("" if gpu else "no GPU")
        cols["segments"].append(n["segment_num"])
        cols["rows"].append(n["entity_num"])
        cols["growing"].append(n["growing_rows"])
    return cols


def searches_total(node: dict[str, Any]) -> int:
    requests = node["search"]["requests"]
    return requests.get("success", 0) + requests.get("fail", 0)


@dataclass
class NodeReading:
    """The last snapshot of one node the page drew: its time, searches so far and latency histogram."""

    time: float
    searches: int
    latency: dict[str, Any]


def node_point(prev: NodeReading | None, node: dict[str, Any]) -> tuple[NodeReading, dict[str, float] | None]:
    """The next point of one node's time series (searches/s, p50 and p99 in ms) from its new snapshot,
    and what to remember; no point while the snapshot is the one seen before (heartbeats and page
    refreshes do not tick together) or without an earlier one."""
    reading = NodeReading(node["time"], searches_total(node), node["search"]["latency"])
    if prev is None or reading.time <= prev.time:
        return (prev or reading), None
    rate = counter_rate((prev.time, prev.searches), reading.time, reading.searches)
    if rate is None:   # the node restarted its counters: start again from this snapshot
        return reading, None
    p50 = histogram_quantile(prev.latency, reading.latency, 0.5)
    p99 = histogram_quantile(prev.latency, reading.latency, 0.99)
    return reading, {"time": reading.time * 1000, "rate": rate,
                     "p50": math.nan if p50 is None else p50 * 1000,
                     "p99": math.nan if p99 is None else p99 * 1000}


# --- the Bokeh component -----------------------------------------------------------------------------

class VecgridPlots:
    """The page's charts; ``root`` is their layout and ``update(data)`` feeds them one :func:`state`."""

    def __init__(self, height: int = 230) -> None:
        from bokeh.layouts import column, gridplot
        from bokeh.models import ColumnDataSource, DatetimeTickFormatter, Div, FactorRange, HoverTool, Legend
        from bokeh.plotting import figure

        self._ColumnDataSource = ColumnDataSource
        self.nodes: dict[int, NodeReading] = {}
        self.node_sources: dict[int, Any] = {}
        self.colours: dict[int, str] = {}
        self.cluster_prev: dict[str, tuple[float, float]] = {}
        self.cluster_time: float | None = None

        def timeseries(title: str, y_label: str) -> Any:
            fig = figure(title=title, x_axis_type="datetime", height=height, sizing_mode="stretch_width",
                         tools="", toolbar_location=None, y_axis_label=y_label)
            fig.y_range.start = 0
            fig.xaxis.formatter = DatetimeTickFormatter(milliseconds="%H:%M:%S", seconds="%H:%M:%S",
                                                        minsec="%H:%M:%S", minutes="%H:%M", context=None)
            fig.add_layout(Legend(items=[], location="top_left", background_fill_alpha=0.6,
                                  label_text_font_size="11px", padding=4, spacing=0), "center")
            return fig

        self.searches = timeseries("Searches/s per node", "searches/s")
        self.latency = timeseries("Search latency per node: p50 (solid) and p99 (dashed)", "ms")

        self.inserted_source = ColumnDataSource({"time": [], "rows": [], "wal": []}, name="vecgrid-inserted")
        self.inserted = timeseries("Rows inserted/s (inserts and upserts) and WAL appends/s", "per second")
        self._line(self.inserted, self.inserted_source, "rows", NODE_COLOURS[0], "rows inserted/s")
        self._line(self.inserted, self.inserted_source, "wal", NODE_COLOURS[1], "WAL appends/s", dash="dashed")

        self.tasks_source = ColumnDataSource({"time": [], "querycoord": [], "waiting": [], "dask": []},
                                             name="vecgrid-tasks")
        self.tasks = timeseries("Tasks in flight", "tasks")
        self._line(self.tasks, self.tasks_source, "querycoord", NODE_COLOURS[0], "QueryCoord tasks")
        self._line(self.tasks, self.tasks_source, "waiting", NODE_COLOURS[3], "waiting for a slot", dash="dotted")
        self._line(self.tasks, self.tasks_source, "dask", NODE_COLOURS[2], "Dask tasks of the coordinator",
                   dash="dashed")

        self.bars_source = ColumnDataSource(node_bars([]), name="vecgrid-nodes")
        hover = [("node", "@node"), ("worker", "@worker")]

        def bars(title: str, y_label: str, tips: list[tuple[str, str]]) -> Any:
            fig = figure(title=title, x_range=FactorRange(), height=height, sizing_mode="stretch_width",
                         tools="", toolbar_location=None, y_axis_label=y_label)
            fig.y_range.start = 0
            fig.xgrid.grid_line_color = None
            fig.add_tools(HoverTool(tooltips=hover + tips))
            return fig

        self.memory = bars("Host memory per node: used / budget", "MiB",
                           [("used", "@memory_used{0,0} MiB"), ("budget", "@memory_budget{0,0} MiB")])
        self.memory.vbar(x="node", top="memory_budget", width=0.8, source=self.bars_source, color="#c6dbef",
                         legend_label="budget")
        self.memory.vbar(x="node", top="memory_used", width=0.5, source=self.bars_source, color="#08519c",
                         legend_label="used")
        self.gpu = bars("GPU memory per node: used / budget", "MiB",
                        [("used", "@gpu_used{0,0} MiB"), ("budget", "@gpu_budget{0,0} MiB"), ("", "@gpu_note")])
        self.gpu.vbar(x="node", top="gpu_budget", width=0.8, source=self.bars_source, color="#c7e9c0",
                      legend_label="budget")
        self.gpu.vbar(x="node", top="gpu_used", width=0.5, source=self.bars_source, color="#006d2c",
                      legend_label="used")
        self.gpu.text(x="node", y=0, text="gpu_note", source=self.bars_source, text_align="center",
                      text_baseline="bottom", text_color="#636363")
        self.segments = bars("Sealed segments per node", "segments", [("segments", "@segments")])
        self.segments.vbar(x="node", top="segments", width=0.6, source=self.bars_source, color=NODE_COLOURS[4])
        self.rows = bars("Rows per node: sealed and growing", "rows",
                         [("sealed rows", "@rows{0,0}"), ("growing rows", "@growing{0,0}")])
        self.rows.vbar_stack(["rows", "growing"], x="node", width=0.6, source=self.bars_source,
                             color=[NODE_COLOURS[0], "#aec7e8"], legend_label=["sealed", "growing"])
        for fig in (self.memory, self.gpu, self.rows):   # beside the bars, not over them
            fig.add_layout(fig.legend[0], "right")

        # one cell per partition, coloured by state; the legend is HTML so that it lists every state,
        # also those no partition is in (a Bokeh legend item draws no swatch for a renderer without data)
        self.partition_source = ColumnDataSource(partition_strip(None), name="vecgrid-partitions")
        self.partitions = figure(title="Partition states (one cell per partition)", x_range=FactorRange(),
                                 y_range=(0, 1), height=110, sizing_mode="stretch_width", tools="",
                                 toolbar_location=None)
        self.partitions.yaxis.visible = False
        self.partitions.grid.grid_line_color = None
        self.partitions.rect(x="cell", y=0.5, width=0.95, height=1, source=self.partition_source,
                             fill_color="colour", line_color="white")
        self.partitions.text(x="cell", y=0.5, text="text", source=self.partition_source, text_align="center",
                             text_baseline="middle", text_font_size="11px")
        self.partitions.add_tools(HoverTool(tooltips=[("collection", "@collection"), ("partition", "@partition"),
                                                      ("state", "@state"), ("loaded", "@load %")]))
        swatches = "".join(f"<span style='display:inline-block;width:12px;height:12px;background:{colour};"
                           f"margin:0 4px 0 14px;vertical-align:middle'></span>{state}"
                           for state, colour in PARTITION_STATES.items())
        self.partition_legend = Div(text=f"<div style='font-size:12px'>partition state:{swatches}</div>",
                                    sizing_mode="stretch_width")

        self.root = column(gridplot([[self.searches, self.latency], [self.inserted, self.tasks],
                                     [self.memory, self.gpu], [self.segments, self.rows]],
                                    sizing_mode="stretch_width", toolbar_location=None, merge_tools=False),
                           self.partitions, self.partition_legend, sizing_mode="stretch_width")

    def _line(self, fig: Any, source: Any, column: str, colour: str, label: str, dash: str = "solid") -> Any:
        from bokeh.models import LegendItem

        renderer = fig.line(x="time", y=column, source=source, color=colour, line_width=2, line_dash=dash)
        legend = fig.legend[0]
        legend.items = [*legend.items, LegendItem(label=label, renderers=[renderer])]
        return renderer

    def _node_source(self, node: dict[str, Any]) -> Any:
        """The node's time series source, its lines added on first sight (a node the page never saw)."""
        node_id = node["node_id"]
        source = self.node_sources.get(node_id)
        if source is None:
            colour = NODE_COLOURS[len(self.colours) % len(NODE_COLOURS)]
            self.colours[node_id] = colour
            source = self._ColumnDataSource({"time": [], "rate": [], "p50": [], "p99": []},
                                            name=f"vecgrid-node-{node_id}")
            self.node_sources[node_id] = source
            label = f"node {node_id} · worker {node['name']}"
            self._line(self.searches, source, "rate", colour, label)
            self._line(self.latency, source, "p50", colour, f"node {node_id} p50")
            self._line(self.latency, source, "p99", colour, f"node {node_id} p99", dash="dashed")
        return source

    def update(self, data: dict[str, Any]) -> None:
        nodes = [n for n in data["nodes"] if "error" not in n and n.get("node_id", -1) >= 0]
        for node in nodes:
            prev = self.nodes.get(node["node_id"])
            self.nodes[node["node_id"]], point = node_point(prev, node)
            source = self._node_source(node)
            if point is not None:
                source.stream({k: [v] for k, v in point.items()}, rollover=ROLLOVER)

        bars = node_bars(nodes)
        if bars != dict(self.bars_source.data):
            for fig in (self.memory, self.gpu, self.segments, self.rows):
                if list(fig.x_range.factors) != bars["node"]:
                    fig.x_range.factors = bars["node"]
            self.bars_source.data = bars
        strip = partition_strip(data["cluster"])
        if strip != dict(self.partition_source.data):
            if list(self.partitions.x_range.factors) != strip["cell"]:
                self.partitions.x_range.factors = strip["cell"]
            self.partition_source.data = strip

        now_ms = data["time"] * 1000
        cluster = data["cluster"]
        dask_tasks = sum(t["count"] for t in data.get("dask_tasks", []))
        self.tasks_source.stream({"time": [now_ms],
                                  "querycoord": [sum((cluster or {}).get("tasks", {}).values())],
                                  "waiting": [(cluster or {}).get("tasks_waiting", 0)],
                                  "dask": [dask_tasks]}, rollover=ROLLOVER)
        if cluster and cluster["time"] != self.cluster_time:   # the coordinator published a new snapshot
            self.cluster_time = cluster["time"]
            inserted = sum((cluster.get("inserted_rows") or {}).values())
            rows = counter_rate(self.cluster_prev.get("rows"), cluster["time"], inserted)
            wal = counter_rate(self.cluster_prev.get("wal"), cluster["time"], cluster["wal_appends"])
            self.cluster_prev["rows"] = (cluster["time"], inserted)
            self.cluster_prev["wal"] = (cluster["time"], cluster["wal_appends"])
            if rows is not None and wal is not None:
                self.inserted_source.stream({"time": [cluster["time"] * 1000], "rows": [rows], "wal": [wal]},
                                            rollover=ROLLOVER)
