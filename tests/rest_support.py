"""Helpers for tests of vecgrid's REST services over real HTTP: a Feathers app with chosen service modules
served by Tornado on a loopback port, a JSON client for it, and a snapshot of what the catalog and the
coordinator hold (to show that a refused call changed nothing)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
from typing import Any, AsyncIterator, Mapping

import tornado.httpclient
import tornado.httpserver
import tornado.netutil

from vecgrid.http.feathers.application import Application
from vecgrid.http.feathers.rest import make_tornado_app
from vecgrid.http.milvus_errors import milvus_error_hook
from vecgrid.http.services import RestContext


@contextlib.asynccontextmanager
async def rest_cluster(tmp_path_factory, name: str, modules: list[str], *, data_dir: Any = None,
                       overrides: Mapping[str, Any] | None = None) -> AsyncIterator[tuple[Any, "RestServer"]]:
    """A two-node cluster in this process (a Dask ``LocalCluster`` of threads and the coordinator) with
    ``modules`` of :mod:`vecgrid.http.services` served over HTTP: yields ``(coordinator, server)``.
    ``data_dir``: one holding data already (default: a new one); ``overrides``: settings keys set on top."""
    from distributed import LocalCluster

    from vecgrid.deploy import Coordinator
    from tests.querycoord_support import fast_settings

    settings = fast_settings(data_dir if data_dir is not None else tmp_path_factory.mktemp(name), workers=2)
    settings.set("querynode.port", 0)
    for key, value in (overrides or {}).items():
        settings.set(key, value)
    async with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, asynchronous=True,
                            dashboard_address=":0") as cluster:
        coordinator = Coordinator(settings, deploy_mode="EMBEDDED")
        server = None
        try:
            await coordinator.start(cluster.scheduler_address)
            await coordinator.wait_for_nodes(2)
            server = RestServer(RestContext(coord=coordinator.coord, proxy=coordinator.proxy,
                                            datacoord=coordinator.datacoord, settings=settings), modules)
            yield coordinator, server
        finally:
            if server is not None:
                await server.close()
            await asyncio.wait_for(coordinator.stop(), 60)


class RestServer:
    """``modules`` of :mod:`vecgrid.http.services` mounted on one app, listening on 127.0.0.1:<free port>."""

    def __init__(self, ctx: RestContext, modules: list[str]) -> None:
        self.api = Application()
        self.api.hooks({"error": {"all": [milvus_error_hook]}})
        for name in modules:
            importlib.import_module(f"vecgrid.http.services.{name}").mount(self.api, ctx)
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        self.server = tornado.httpserver.HTTPServer(make_tornado_app(self.api))
        self.server.add_sockets(sockets)
        self.base = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
        self.client = tornado.httpclient.AsyncHTTPClient(force_instance=True)

    async def call(self, verb: str, path: str, data: Any = None, *, method: str | None = None,
                   raw: bytes | None = None) -> tuple[int, Any]:
        """One request; ``method`` is a custom method (POST with ``X-Service-Method``).  Answers
        ``(status, decoded JSON body or None)``."""
        headers = {"Content-Type": "application/json"}
        if method is not None:
            headers["X-Service-Method"] = method
        payload = raw if raw is not None else (json.dumps(data).encode() if data is not None else None)
        if payload is None and verb in ("POST", "PUT", "PATCH"):
            payload = b""
        response = await self.client.fetch(self.base + path, method=verb, body=payload, headers=headers,
                                           raise_error=False, allow_nonstandard_methods=True, request_timeout=300)
        return response.code, (json.loads(response.body) if response.body else None)

    async def close(self) -> None:
        self.client.close()
        self.server.stop()
        await self.server.close_all_connections()


def catalog_state(catalog, coord=None) -> list:
    """Every collection of the default database with its partitions and indexes (and, with ``coord``,
    what is loaded): equal before and after a call that must change nothing."""
    out = []
    for coll in catalog.list_collections("default"):
        indexes = [(i.index_name, i.indexID, [(kv.key, kv.value) for kv in i.index_params])
                   for i in catalog.describe_index(coll.id)]
        out.append((coll.pb.SerializeToString(deterministic=True), [p.SerializeToString() for p in coll.partitions],
                    indexes))
    if coord is not None:
        out.append(("loaded", [(cid, coord.collections.partition_ids(cid)) for cid in coord.collections.ids()]))
    return out


def auth_on_api(cluster: Any, data_dir: Any) -> tuple[RestContext, Application]:
    """The coordinator's REST app over a running embedded ``cluster`` with auth on and its own users in a
    metadata store under ``data_dir``: ``(context, app)``."""
    import copy

    from vecgrid.http.app import build_api
    from vecgrid.storage.layout import DataDir

    settings = copy.deepcopy(cluster.settings)
    settings.http.auth = "on"
    settings.common.data_dir = str(data_dir)
    ctx = RestContext(coord=cluster.coord, proxy=cluster.proxy, datacoord=cluster.datacoord,
                      settings=settings, store=DataDir(data_dir).open_store())
    return ctx, build_api(ctx)
