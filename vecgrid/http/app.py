"""The coordinator's Tornado application (the proxy role of the cluster).

For now it serves ``/health`` and ``/version``; the Feathers resource services
over collections, partitions, entities and nodes mount here as they land.
"""

from __future__ import annotations

import platform

import tornado.web

import vecgrid
from vecgrid.cluster.querycoord.coordinator import QueryCoord
from vecgrid.http.base import BaseHandler, NotFoundHandler


class HealthHandler(BaseHandler):
    """Liveness for load balancers and ``docker compose`` health checks: 200 only when serving."""

    def get(self) -> None:
        coord: QueryCoord = self.context["coord"]
        healthy = coord.lifecycle.healthy
        self.send_json({
            "status": "ok" if healthy else "unavailable",
            "querycoord": coord.lifecycle.state.name,
            "query_nodes": len(coord.nodes),
        }, status=200 if healthy else 503)


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


def make_app(coord: QueryCoord) -> tornado.web.Application:
    context = {"coord": coord}
    return tornado.web.Application(
        [
            (r"/health", HealthHandler, context),
            (r"/version", VersionHandler, context),
        ],
        default_handler_class=NotFoundHandler,
        default_handler_args=context,
    )
