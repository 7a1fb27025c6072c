"""The Dask worker plugin that makes a worker a query node, in a module of its own.

Dask sends the plugin to every worker pickled, by reference to this module, so a worker imports
this module and what :meth:`QueryNodePlugin.setup` imports, not the coordinator's (the REST app, the
Milvus and QueryCoord servers, the data coordinator): with :mod:`vecgrid.deploy` a worker process
loaded about 290 modules more (19 MB more resident at start, measured by importing each set).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from distributed import Worker
from distributed.diagnostics.plugin import WorkerPlugin

from vecgrid.cluster.querynode.session import PLUGIN_NAME, TOPIC
from vecgrid.common.auth import CLUSTER_SCHEME, send_authorization
from vecgrid.common.channels import use_tls
from vecgrid.config import Settings
from vecgrid.rpc.tls import server_tls, trusted_ca

if TYPE_CHECKING:
    from vecgrid.cluster.querynode.node import QueryNode

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NodeAuth:
    """What a query node authenticates with when auth is on: the cluster secret (its own calls, and
    the calls it accepts from the cluster) and the access tokens' secret (users' read calls)."""

    cluster_secret: str
    token_secret: str
    audience: str


class QueryNodePlugin(WorkerPlugin):
    """Dask worker plugin that turns a Dask worker into a vecgrid QueryNode.

    The coordinator registers it with ``Client.register_plugin``; Dask runs ``setup`` on every
    current worker and on every worker that joins later (including a worker the nanny restarts).
    ``setup`` starts the node's gRPC server on the worker's event loop and announces the node on
    the ``vecgrid.querynode`` event topic (:mod:`vecgrid.cluster.querynode.session`).

    The plugin has a fixed ``name`` and ``idempotent = True``: a coordinator that restarts and
    registers it again leaves running nodes — and the data they hold — untouched.
    """

    name = PLUGIN_NAME
    idempotent = True

    def __init__(self, settings: Settings, deploy_mode: str = "CLUSTER", auth: NodeAuth | None = None) -> None:
        self.settings = settings
        self.deploy_mode = deploy_mode
        self.auth = auth
        self.node: QueryNode | None = None
        self.server = None
        self.revocations = None   # auth on: the coordinator's refused tokens (set_revoked_tokens)

    async def setup(self, worker: Worker) -> None:
        # Imported here, on the worker: the coordinator process builds and registers this plugin but
        # runs no node, so it never loads the node's engine (faiss, the gpu/ search modules).
        from vecgrid.cluster.querynode.monitor import heartbeat_snapshot
        from vecgrid.cluster.querynode.node import QueryNode
        from vecgrid.rpc.querynode_servicer import serve_querynode

        _leave_sigint_to_the_nanny(worker)
        settings = self.settings.with_env(os.environ)
        node = QueryNode(settings, name=str(worker.name), deploy_mode=self.deploy_mode)
        interceptors = []
        if self.auth is not None:
            from vecgrid.http.feathers.authentication import AuthenticationService
            from vecgrid.http.services.revocations import ClusterRevocations
            from vecgrid.rpc.auth import ServerAuth, token_rights_checker

            # no copy of the logouts yet: every token refused until the coordinator sends one
            logouts = self.revocations = ClusterRevocations()
            tokens = AuthenticationService(self.auth.token_secret, audience=self.auth.audience, revocations=logouts)
            interceptors.append(ServerAuth(self.auth.cluster_secret, token_rights_checker(tokens.verify_access_token),
                                           revision=lambda: logouts.revision))
        send_authorization(CLUSTER_SCHEME + self.auth.cluster_secret if self.auth else None)
        tls = server_tls(settings)
        use_tls(trusted_ca(settings))
        self.server = await serve_querynode(node, host=worker.ip, port=settings.querynode.port,
                                            interceptors=interceptors, tls=tls.grpc_credentials() if tls else None)
        self.node = node
        # the scheduler receives it with every heartbeat: the vecgrid dashboard page reads it there
        worker.metrics["vecgrid"] = lambda _worker: heartbeat_snapshot(node)
        worker.log_event(TOPIC, {"action": "up", "worker": worker.address, **node.describe()})
        log.info("QueryNode %s serving gRPC on %s", node.name, node.address)

    async def teardown(self, worker: Worker) -> None:
        if self.node is None:
            return
        worker.metrics.pop("vecgrid", None)
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
