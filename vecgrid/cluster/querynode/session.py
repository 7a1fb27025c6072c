"""A Dask worker's QueryNode session: how the coordinator and Dask tasks reach the node a worker runs.

The worker plugin (:class:`vecgrid.node_plugin.QueryNodePlugin`, registered under :data:`PLUGIN_NAME`)
starts the node and announces it on the :data:`TOPIC` event topic; the coordinator, subscribed to
that topic, registers the node and assigns its id with :func:`assign_node_id` (a ``Client.run``
call).  Dask tasks find the node in-process with :func:`local_node`.  The plugin class lives with
the deployment code because it starts the node's gRPC server, which this role does not import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from distributed import Worker

if TYPE_CHECKING:   # the coordinator imports this module: it must not load the node's engine
    from vecgrid.cluster.querynode.node import QueryNode

PLUGIN_NAME = "vecgrid-querynode"
TOPIC = "vecgrid.querynode"


def _plugin(dask_worker: Worker) -> Any:
    """The worker's QueryNode plugin once its node is set up (it carries the node as ``.node``,
    ``None`` until then)."""
    plugin = dask_worker.plugins.get(PLUGIN_NAME)
    return plugin if getattr(plugin, "node", None) is not None else None


def local_node(dask_worker: Worker) -> QueryNode | None:
    """The QueryNode this worker runs (``None`` before setup): what Dask tasks call in-process."""
    plugin = _plugin(dask_worker)
    return None if plugin is None else plugin.node


def describe_querynode(dask_worker: Worker) -> dict | None:
    """``Client.run`` target: this worker's node description, or None before setup finished; with auth
    on, ``revocations`` is the digest of the node's copy of the refused tokens (None: no copy yet)."""
    plugin = _plugin(dask_worker)
    if plugin is None:
        return None
    return {"worker": dask_worker.address, **plugin.node.describe(),
            "revocations": getattr(plugin.revocations, "digest", None)}


def set_revoked_tokens(entries: dict[str, tuple[int, int]], digest: str, dask_worker: Worker) -> None:
    """``Client.run`` target: the coordinator's refused tokens (logged out, or of removed users; named by
    ``digest``) for the node to refuse (nothing before its node is set up, or with auth off).  Runs on the
    worker's event loop, which owns the node's copy (its gRPC server's loop)."""
    revocations = getattr(_plugin(dask_worker), "revocations", None)
    if revocations is not None:
        revocations.replace(entries, digest)


def assign_node_id(node_id: int, dask_worker: Worker) -> dict | None:
    """``Client.run`` target: tell the worker's node its id; it starts serving."""
    plugin = _plugin(dask_worker)
    if plugin is None:
        return None
    plugin.node.assign_node_id(node_id)
    return {"worker": dask_worker.address, **plugin.node.describe()}
