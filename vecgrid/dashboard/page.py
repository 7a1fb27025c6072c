"""The Bokeh document of the vecgrid page (``/individual-vecgrid``): built per browser tab, refreshed
every second from :func:`vecgrid.dashboard.state`: a header, the live charts
(:class:`vecgrid.dashboard.plots.VecgridPlots`) and, below them, the tables rendered here as HTML.

State: a document's charts and rate memory belong to that document (created in :func:`vecgrid_doc`,
kept on it, dropped with its session), run on the scheduler's loop.
"""

from __future__ import annotations

import html
from typing import Any

def _mib(n: float | None) -> str:
    if n is None:
        return "–"
    return f"{n / (1 << 20):,.0f} MiB" if n >= 1 << 20 else f"{n / 1024:,.1f} KiB"


def _table(title: str, header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    if not rows:
        body = f"<tr><td colspan='{len(header)}'><i>none</i></td></tr>"
    return f"<h3>{html.escape(title)}</h3><table class='vecgrid'><tr>{head}</tr>{body}</table>"


STYLE = ("<style>table.vecgrid{border-collapse:collapse;margin-bottom:12px;font-size:13px}"
         "table.vecgrid td,table.vecgrid th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
         "table.vecgrid th{background:#eee}</style>")


class Rates:
    """Per-second rates of cumulative counters between two refreshes of one page."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[float, float]] = {}

    def rate(self, key: str, total: float, now: float) -> float | None:
        prev = self._last.get(key)
        self._last[key] = (now, total)
        if prev is None or now <= prev[0] or total < prev[1]:
            return None
        return (total - prev[1]) / (now - prev[0])


def _fmt_rate(r: float | None) -> str:
    return "–" if r is None else f"{r:.1f}/s"


def render_header(data: dict[str, Any]) -> str:
    """The page's title and the coordinator's line (or why there is none)."""
    cluster = data["cluster"]
    if not cluster:
        return "<h2>vecgrid</h2><p><b>No coordinator has published the cluster's state on this scheduler yet.</b></p>"
    qc = cluster["querycoord"]
    age = data["time"] - cluster["time"]
    return (f"<h2>vecgrid</h2><p>QueryCoord {html.escape(str(qc['address']))}, coordinator state "
            f"{html.escape(qc['state'])}; state published {age:.1f} s ago</p>")


def render(data: dict[str, Any], rates: Rates) -> str:
    """The page's header and tables as HTML, from :func:`state`'s answer."""
    return render_header(data) + render_tables(data, rates)


def render_tables(data: dict[str, Any], rates: Rates) -> str:
    """The tables below the charts."""
    now = data["time"]
    cluster = data["cluster"] or {}
    parts = [STYLE]
    coord_nodes = {n["node_id"]: n for n in cluster.get("nodes", [])}
    rows = []
    nodes = [n for n in data["nodes"] if "error" not in n]
    for n in nodes:
        search = n["search"]["requests"]
        total = search.get("success", 0) + search.get("fail", 0)
        known = coord_nodes.get(n["node_id"], {})
        rows.append([n["node_id"], n["name"], n["address"], n["device"], n["state"], known.get("state", "unregistered"),
                     f"{_mib(n['memory_used_bytes'])} / {_mib(n['memory_capacity_bytes'])}",
                     (f"{_mib(n['gpu_memory_used_bytes'])} / {_mib(n['gpu_memory_capacity_bytes'])}"
                      if n["device"] == "GPU" else "–"),
                     n["segment_num"], n["entity_num"], n["growing_rows"], len(n["channels"]),
                     _fmt_rate(rates.rate(f"search/{n['worker']}", total, now))])
    # "node state" is the node's own lifecycle (Healthy...), "coordinator view" the QueryCoord's state of it
    # (Normal, Stopping...); "worker" is the Dask worker's name, not a node id
    parts.append(_table("Query nodes", ["node id", "worker", "gRPC address", "device", "node state",
                                        "coordinator view", "memory used / budget",
                                        "GPU memory used / budget", "sealed segments", "rows", "growing rows",
                                        "channels", "searches/s"], rows))
    failed = [[n["node_id"], n.get("name", ""), n["worker"], n["error"]] for n in data["nodes"] if "error" in n]
    if failed:  # a node whose snapshot fails is shown with why, not left out (Dask drops the metric's error)
        parts.append(_table("Query nodes whose state could not be read",
                            ["node id", "worker", "Dask worker address", "error"], failed))
    rows = []
    seg_rows = []
    for c in cluster.get("collections", []):
        partitions = ", ".join(f"{p.get('name') or p['partition_id']}: {p['state']} {p['load_percentage']} %"
                               for p in c["partitions"])
        replicas = "; ".join(f"{r['id']} on nodes {', '.join(map(str, r['nodes']))} ({r['resource_group']})"
                             for r in c["replicas"])
        rows.append([c["name"], c["collection_id"], f"{c['load_percentage']} %", len(c["replicas"]), replicas,
                     partitions])
        for node_id, count in sorted(c["segments_per_node"].items()):
            seg_rows.append([c["name"], node_id, count])
    parts.append(_table("Collections", ["collection", "id", "loaded", "replicas", "replica nodes", "partitions"], rows))
    parts.append(_table("Segments per node (coordinator view)", ["collection", "node id", "sealed segments"],
                        seg_rows))
    tasks = [[kind, count] for kind, count in sorted(cluster.get("tasks", {}).items())]
    parts.append(_table(f"QueryCoord tasks in flight ({cluster.get('tasks_waiting', 0)} waiting for a slot)",
                        ["type", "count"], tasks))
    parts.append(_table("Dask tasks of the coordinator in flight", ["task", "state", "count"],
                        [[t["prefix"], t["state"], t["count"]] for t in data.get("dask_tasks", [])]))
    parts += _datacoord(cluster.get("datacoord"))
    searches = sum(n["search"]["requests"].get("success", 0) + n["search"]["requests"].get("fail", 0)
                   for n in nodes)
    inserted = sum(cluster["inserted_rows"].values()) if cluster.get("inserted_rows") is not None else None
    parts.append(_table("Rates", ["what", "rate"], [
        ["searches (all nodes)", _fmt_rate(rates.rate("search/all", searches, now))],
        ["rows inserted (inserts and upserts)",
         _fmt_rate(rates.rate("rows", inserted, now) if inserted is not None else None)],
        ["WAL appends (write batches and time ticks)",
         _fmt_rate(rates.rate("wal", cluster["wal_appends"], now) if cluster else None)],
    ]))
    return "".join(parts)


def _datacoord(activity: dict[str, Any] | None) -> list[str]:
    """The DataCoord's work in flight and each index's build progress."""
    if activity is None:
        return []
    running = _table("DataCoord work in flight", ["what", "count"], [
        ["explicit flushes", activity["flushes_in_flight"]],
        ["compaction plans", activity["compaction_plans_in_flight"]],
        ["index builds", activity["index_builds_in_flight"]]])
    rows = [[i["collection"], i["index_name"], i["state"], f"{i['indexed_rows']:,} / {i['total_rows']:,}",
             f"{i['pending_index_rows']:,}", f"{i['progress']} %"] for i in activity["indexes"]]
    return [running, _table("Index builds", ["collection", "index", "state", "indexed rows / rows of flushed segments",
                                             "pending rows", "indexed"], rows)]


class VecgridPage:
    """One tab's page: header, charts and tables, refreshed by :meth:`update` (Dask's component shape:
    ``root`` and ``update()``)."""

    def __init__(self, scheduler: Any) -> None:
        from bokeh.layouts import column
        from bokeh.models import Div

        from vecgrid.dashboard.plots import VecgridPlots

        self.scheduler = scheduler
        self.rates = Rates()
        self.header = Div(text="", sizing_mode="stretch_width")
        self.plots = VecgridPlots()
        self.tables = Div(text="", sizing_mode="stretch_width")
        self.root = column(self.header, self.plots.root, self.tables, sizing_mode="stretch_width")
        self.update()

    def update(self) -> None:
        from distributed.utils import log_errors

        from vecgrid.dashboard import state

        with log_errors():
            data = state(self.scheduler)
            self.header.text = render_header(data)
            self.plots.update(data)
            self.tables.text = render_tables(data, self.rates)


REFRESH_MS = 1000


def vecgrid_doc(scheduler: Any, extra: dict, doc: Any) -> None:
    """The page's document, as Dask builds its own: the component refreshed by a periodic callback that
    holds it weakly (:func:`distributed.dashboard.components.add_periodic_callback`), Dask's template
    (its navigation bar) and theme."""
    from distributed.dashboard.components import add_periodic_callback
    from distributed.dashboard.components.scheduler import BOKEH_THEME, env

    page = VecgridPage(scheduler)
    doc.title = "Dask: vecgrid"
    doc.add_root(page.root)
    add_periodic_callback(doc, page, REFRESH_MS)
    doc.template = env.get_template("simple.html")
    doc.template_variables.update(extra)
    doc.theme = BOKEH_THEME
