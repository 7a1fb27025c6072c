"""vecgrid's own REST resources (``docs/rest-api.md``) as Feathers services.

Each module holds the services of one part of the resource table and a ``mount(api, ctx)`` that
registers them on the coordinator's Feathers application.  Services are thin: they decode a
Feathers call into one call of the proxy, the QueryCoord, the DataCoord or the catalog and encode
the answer; the rules live in those roles.  Milvus errors they let through are turned into Feathers
errors by one app-wide error hook (:mod:`vecgrid.http.milvus_errors`).

Every service class declares ``RIGHTS``: the right each of its methods needs (``"read"``,
``"write"`` or ``"admin"``; ``"public"`` and ``"self"`` for accounts); the authorization hook of
:mod:`~vecgrid.http.services.accounts` refuses a method a service does not list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vecgrid.cluster.datacoord.component import DataCoord
    from vecgrid.cluster.proxy.proxy import Proxy
    from vecgrid.cluster.querycoord.coordinator import QueryCoord
    from vecgrid.config import Settings
    from vecgrid.http.feathers.application import Application
    from vecgrid.http.feathers.authentication import Revocations
    from vecgrid.storage.kv import MetaStore


@dataclass
class RestContext:
    """What the services of the coordinator's REST app call: set once when the app is built."""

    coord: "QueryCoord"
    proxy: "Proxy | None" = None
    datacoord: "DataCoord | None" = None
    settings: "Settings | None" = None
    store: "MetaStore | None" = None        # the metadata store: users live there
    revocations: "Revocations | None" = None   # refused tokens (none: kept in memory by the app)
    extras: dict[str, Any] = field(default_factory=dict)


# Modules whose mount(api, ctx) registers services, in the order the resource table lists them.
SERVICE_MODULES: tuple[str, ...] = ("accounts", "collections", "partitions", "indexes", "entities", "import_jobs",
                                    "cluster_plane")


def mount_all(api: "Application", ctx: RestContext) -> None:
    """Registers every vecgrid service on ``api``."""
    import importlib

    for name in SERVICE_MODULES:
        importlib.import_module(f"{__name__}.{name}").mount(api, ctx)
