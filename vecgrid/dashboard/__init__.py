"""vecgrid's page on the Dask dashboard, served by the scheduler's own dashboard.

Load it into a stock scheduler with ``dask scheduler --preload vecgrid.dashboard`` (``vecgrid
serve`` does the same for its in-process scheduler).  Importing this module, which Dask does
before it builds its HTTP server, registers:

- the Bokeh page ``/individual-vecgrid`` (:mod:`vecgrid.dashboard.page`, listed in the dashboard's "More…" menu as
  "Individual Vecgrid"), refreshed every second: live charts (:mod:`vecgrid.dashboard.plots`) of
  searches/s and p50/p99 search latency per node, rows inserted/s and WAL appends/s, QueryCoord and
  Dask tasks in flight, host and GPU memory per node against its budget, segments and rows per node
  and a strip of every partition's state; below them tables of the query nodes (node id, worker,
  node state, coordinator view), collections with load % and partition states, segments per node,
  the QueryCoord's tasks in flight and the Dask tasks its client has not finished yet (by key prefix),
  the DataCoord's work in flight (flushes, compaction plans, index builds, each index's indexed and
  pending rows) and the cluster's rates;
- the route ``/vecgrid/api/state`` (appended to ``distributed.scheduler.http.routes``): the same
  data as JSON;
- with ``dask_setup``: a Prometheus collector (:mod:`vecgrid.dashboard.metrics`) that adds the per-node
  ``vecgrid_querynode_*`` families (the REST port's names) to the scheduler's own ``/metrics``.

The data arrives without an RPC of vecgrid's: every QueryNode worker plugin puts a snapshot of its
node in ``worker.metrics["vecgrid"]`` (the scheduler receives it with each heartbeat, in
``WorkerState.metrics``), and the coordinator publishes the cluster's state as scheduler metadata
under ``("vecgrid", "cluster")``.  Of the rest of vecgrid this imports only :mod:`vecgrid.common`
(keys, the per-node metric families) and :mod:`vecgrid.http.base` (Tornado, orjson and the Feathers
errors), the base handler of every vecgrid route: the scheduler needs nothing else of vecgrid (and
bokeh, which the dashboard needs anyway).

Closing a tab: Bokeh's keep-alive (every 500 ms on Dask's dashboard) drops a client whose socket it
finds closing (``BokehTornado.client_lost`` detaches the session), and Tornado calls the handler's
``on_close`` afterwards, which reads the detached session and raises ``AssertionError`` (logged by
``tornado.application`` as an uncaught exception) whenever the ping falls between the two.
:func:`_tolerate_a_client_already_lost` makes that ``on_close`` a no-op for such a client: there is
nothing left to release (the session lost its subscriber; Bokeh's cleanup discards it as usual).

State: the page's charts and rate memory belong to its Bokeh document (run on the scheduler's loop); the
collector reads the scheduler on the thread serving ``/metrics``, the scheduler's loop.
"""

from __future__ import annotations

import time
from typing import Any

import dask

from vecgrid.common.keys import DASHBOARD_PAGE
from vecgrid.http.base import BaseHandler

ROUTE_MODULE = "vecgrid.dashboard"
PAGE = DASHBOARD_PAGE
METADATA_KEY = ["vecgrid", "cluster"]
WORKER_METRIC = "vecgrid"


def state(scheduler: Any) -> dict[str, Any]:
    """What the page shows: the coordinator's snapshot and every worker's node snapshot."""
    cluster = scheduler.get_metadata(METADATA_KEY, default=None)
    nodes = []
    for address, ws in sorted(scheduler.workers.items()):
        snap = ws.metrics.get(WORKER_METRIC)
        if snap is not None:
            nodes.append({"worker": address, **snap})
    return {"cluster": cluster, "nodes": nodes, "dask_tasks": dask_tasks(scheduler, cluster), "time": time.time()}


#: task states that are still in flight
IN_FLIGHT = ("released", "waiting", "no-worker", "queued", "processing")


def dask_tasks(scheduler: Any, cluster: dict | None) -> list[dict[str, Any]]:
    """The coordinator's Dask tasks not finished yet (segment loads, channel watches, index builds,
    compactions...), counted by key prefix and state: ``[{"prefix", "state", "count"}]``."""
    client = scheduler.clients.get((cluster or {}).get("dask_client"))
    if client is None:
        return []
    counts: dict[tuple[str, str], int] = {}
    for ts in list(client.wants_what):
        if ts.state in IN_FLIGHT:
            key = (ts.prefix.name, ts.state)
            counts[key] = counts.get(key, 0) + 1
    return [{"prefix": p, "state": st, "count": n} for (p, st), n in sorted(counts.items())]


# --- HTTP route -----------------------------------------------------------------------------------

class StateHandler(BaseHandler):
    """``GET /vecgrid/api/state``: :func:`state` as JSON (Dask passes its scheduler as ``dask_server``)."""

    def initialize(self, dask_server: Any) -> None:
        self.server = dask_server

    def get(self) -> None:
        self.send_json(state(self.server))


routes = [(r"/vecgrid/api/state", StateHandler, {})]


def _tolerate_a_client_already_lost() -> None:
    """Wrap Bokeh's ``WSHandler.on_close`` once (see the module docstring): skip a connection whose
    session the keep-alive already detached."""
    from bokeh.server.views.ws import WSHandler

    original = WSHandler.on_close
    if getattr(original, "_vecgrid_wrapped", False):
        return

    def on_close(self: Any) -> None:
        connection = self.connection
        if connection is not None and getattr(connection, "_session", True) is None:
            return   # Bokeh's keep-alive called client_lost already: the session is detached
        original(self)

    on_close._vecgrid_wrapped = True  # type: ignore[attr-defined]
    WSHandler.on_close = on_close  # type: ignore[method-assign]


def _register() -> None:
    from distributed.dashboard.scheduler import applications

    from vecgrid.dashboard.page import vecgrid_doc

    _tolerate_a_client_already_lost()
    applications.setdefault(PAGE, vecgrid_doc)
    current = list(dask.config.get("distributed.scheduler.http.routes"))
    if ROUTE_MODULE not in current:
        dask.config.set({"distributed.scheduler.http.routes": current + [ROUTE_MODULE]})


_register()


def dask_setup(scheduler: Any) -> None:
    """Dask's preload hook: point the ``/metrics`` collector at this scheduler."""
    import prometheus_client

    from vecgrid.dashboard.metrics import WorkerCollector

    if WorkerCollector.instance is None:
        WorkerCollector.instance = WorkerCollector(scheduler)
        prometheus_client.REGISTRY.register(WorkerCollector.instance)
    else:
        WorkerCollector.instance.scheduler = scheduler
