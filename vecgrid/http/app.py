"""The coordinator's REST app: vecgrid's Feathers services plus the plain endpoints.

``make_app`` builds one Feathers :class:`~vecgrid.http.feathers.application.Application` with the
services of ``rest-api.md`` (:mod:`vecgrid.http.services`) and serves it through the framework's
single REST handler; ``/health``, ``/version`` and ``/metrics`` are plain handlers in front of it (they
are not resources: no query syntax, no hooks), on the same :class:`~vecgrid.http.base.BaseHandler`,
and so is Milvus's RESTful API v2 (``POST /v2/vectordb/...``, :mod:`vecgrid.http.milvus_v2`).
``/docs`` is Swagger UI over ``/openapi.json`` and ``/`` links to it (:mod:`vecgrid.http.docs_page`);
the document includes the plain routes by their declarations (``docs_page.SERVER_OPENAPI``,
``milvus_v2.OPENAPI``).
Unknown paths get the transport's Feathers 404.
"""

from __future__ import annotations

import platform

import tornado.web

import vecgrid
from vecgrid.cluster.querycoord.coordinator import QueryCoord
from vecgrid.http import console, docs_page, milvus_v2
from vecgrid.http.base import BaseHandler
from vecgrid.http.feathers.application import Application
from vecgrid.http.feathers.rest import make_tornado_app
from vecgrid.http.health import cluster_health
from vecgrid.http.metrics import MetricsHandler, RestMetrics
from vecgrid.http.milvus_errors import milvus_error_hook
from vecgrid.http.services import RestContext, mount_all


class HealthHandler(BaseHandler):
    """For load balancers, ``docker compose`` health checks and ``vecgrid status``: every component's
    health (:mod:`vecgrid.http.health`), 200 only when all of them can serve, as Milvus's ``/healthz``."""

    def initialize(self, coord: QueryCoord) -> None:
        self.coord = coord

    async def get(self) -> None:
        report = await cluster_health(self.coord)
        self.send_json(report, status=200 if report["status"] == "ok" else 503)


class VersionHandler(BaseHandler):
    def get(self) -> None:
        import dask
        import grpc
        self.send_json({
            "version": vecgrid.__version__,
            "milvus_proto": vecgrid.MILVUS_PROTO_PIN,
            "python": platform.python_version(),
            "dask": dask.__version__,
            "grpc": grpc.__version__,
            "tornado": tornado.version,
        })


def build_api(ctx: RestContext) -> Application:
    """The Feathers application of the coordinator: every vecgrid service, Milvus errors mapped."""
    api = Application({"title": "vecgrid REST API", "version": vecgrid.__version__})
    api.hooks({"error": {"all": [milvus_error_hook]}})
    mount_all(api, ctx)
    return api


def make_app(ctx: RestContext, api: Application | None = None) -> tornado.web.Application:
    """The Tornado app serving ``api`` (built from ``ctx`` when not given) and the plain endpoints."""
    settings = ctx.settings.http if ctx.settings is not None else None
    metrics = RestMetrics(ctx.coord, ctx.datacoord)
    api = api if api is not None else build_api(ctx)
    plain = [(r"/health", HealthHandler, {"coord": ctx.coord}), (r"/version", VersionHandler),
             (r"/metrics", MetricsHandler, {"metrics": metrics}), *milvus_v2.routes(ctx, api),
             *console.routes, *docs_page.routes()]
    options: dict = {"log_function": metrics.log_request}
    if settings is not None:
        options["max_body_bytes"] = int(settings.max_body_mb * 1024 * 1024)
        origins = settings.cors_origins.strip()
        options["cors_origins"] = "*" if origins == "*" else [o.strip() for o in origins.split(",") if o.strip()]
    return make_tornado_app(api, plain_handlers=plain, openapi=[docs_page.SERVER_OPENAPI, milvus_v2.OPENAPI],
                            **options)
