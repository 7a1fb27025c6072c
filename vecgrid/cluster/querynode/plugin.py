"""Dask worker plugin that turns a Dask worker into a vecgrid QueryNode.

The coordinator registers :class:`QueryNodePlugin` with ``Client.register_plugin``;
Dask runs ``setup`` on every current worker and on every worker that joins later
(including a worker the nanny restarts).  ``setup`` starts the node's gRPC server
on the worker's event loop and announces the node on the ``vecgrid.querynode``
event topic; the coordinator, subscribed to that topic, registers the node and
assigns its id with :func:`assign_node_id` (a ``Client.run`` call).

The plugin has a fixed ``name`` and ``idempotent = True``: a coordinator that
restarts and registers it again leaves running nodes — and the data they hold —
untouched.
"""

from __future__ import annotations

import logging
import os
import signal
import threading

from distributed import Worker
from distributed.diagnostics.plugin import WorkerPlugin

from vecgrid.cluster.querynode.node import QueryNode
from vecgrid.config import Settings

log = logging.getLogger(__name__)

PLUGIN_NAME = "vecgrid-querynode"
TOPIC = "vecgrid.querynode"


class QueryNodePlugin(WorkerPlugin):
    name = PLUGIN_NAME
    idempotent = True

    def __init__(self, settings: Settings, deploy_mode: str = "CLUSTER") -> None:
        self.settings = settings
        self.deploy_mode = deploy_mode
        self.node: QueryNode | None = None
        self.server = None

    async def setup(self, worker: Worker) -> None:
        _leave_sigint_to_the_nanny(worker)
        # Imported here so that the scheduler, which unpickles nothing of ours, never needs grpc.
        from vecgrid.rpc.querynode_servicer import serve_querynode

        settings = self.settings.with_env(os.environ)
        node = QueryNode(settings, name=str(worker.name), deploy_mode=self.deploy_mode)
        self.server = await serve_querynode(node, host=worker.ip, port=settings.querynode.port)
        self.node = node
        worker.log_event(TOPIC, {"action": "up", "worker": worker.address, **node.describe()})
        log.info("QueryNode %s serving gRPC on %s", node.name, node.address)

    async def teardown(self, worker: Worker) -> None:
        if self.node is None:
            return
        self.node.stop()
        try:
            worker.log_event(TOPIC, {"action": "stopping", "worker": worker.address, **self.node.describe()})
        except Exception:  # noqa: BLE001 - the scheduler may already be gone
            pass
        await self.server.stop(self.node.settings.querynode.grace_s)
        await self.node.close()
        self.node = None


def _leave_sigint_to_the_nanny(worker: Worker) -> None:
    """A terminal's Ctrl-C reaches the whole process group; a worker with a nanny is stopped by
    the nanny (after the coordinator's orderly shutdown), so it must not die of KeyboardInterrupt."""
    if getattr(worker, "nanny", None) and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _plugin(dask_worker: Worker) -> QueryNodePlugin | None:
    plugin = dask_worker.plugins.get(PLUGIN_NAME)
    return plugin if isinstance(plugin, QueryNodePlugin) and plugin.node is not None else None


def local_node(dask_worker: Worker) -> QueryNode | None:
    """The QueryNode this worker runs (``None`` before setup): what Dask tasks call in-process."""
    plugin = _plugin(dask_worker)
    return None if plugin is None else plugin.node


def describe_querynode(dask_worker: Worker) -> dict | None:
    """``Client.run`` target: this worker's node description, or None before setup finished."""
    plugin = _plugin(dask_worker)
    return None if plugin is None else {"worker": dask_worker.address, **plugin.node.describe()}


def assign_node_id(node_id: int, dask_worker: Worker) -> dict | None:
    """``Client.run`` target: tell the worker's node its id; it starts serving."""
    plugin = _plugin(dask_worker)
    if plugin is None:
        return None
    plugin.node.assign_node_id(node_id)
    return {"worker": dask_worker.address, **plugin.node.describe()}
