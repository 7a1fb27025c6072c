"""``/docs``: Swagger UI over ``/openapi.json``, served offline; ``/``: a page that links the docs.

Swagger UI's files come from the ``swagger-ui-py`` package (Apache-2.0; its ``swagger_ui/static``
holds Swagger UI's dist files and their ``LICENSE``): only ``swagger-ui-bundle.js``,
``swagger-ui.css`` and the favicon are served, under ``/docs/static/``, with vecgrid's own
initializer (``vecgrid/http/static/docs-init.js``).  The page references nothing outside this server
(no CDN, Swagger's validator badge off), so the docs work on a host without network.

``/docs``, its files and ``/openapi.json`` are public even with auth on: they describe the API and
hold no data.  Swagger UI's *Authorize* button takes an access token from ``POST /authentication``
(the document's ``bearerAuth`` scheme) and sends it with every *Try it out* call.

:data:`DOCS_OPENAPI` documents ``/``, ``/docs`` and ``/openapi.json`` (it rides on
:class:`DocsHandler`), :data:`SERVER_OPENAPI` the coordinator's ``/health``, ``/version`` and
``/metrics`` (``make_app`` passes it with those routes); the transport merges both into the document
(:func:`vecgrid.http.feathers.rest.plain_openapi`).

State: the asset bytes, read once per process on first request (:func:`_asset`'s cache; immutable).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from vecgrid.common.feathers_errors import NotFound
from vecgrid.http.base import BaseHandler

STATIC_PREFIX = "/docs/static/"
_OWN_STATIC = Path(__file__).with_name("static")
# name under /docs/static/ -> (package dir, file, content type)
_ASSETS = {
    "swagger-ui-bundle.js": ("swagger_ui", "swagger-ui-bundle.js", "application/javascript; charset=utf-8"),
    "swagger-ui.css": ("swagger_ui", "swagger-ui.css", "text/css; charset=utf-8"),
    "favicon-32x32.png": ("swagger_ui", "favicon-32x32.png", "image/png"),
    "LICENSE-swagger-ui.txt": ("swagger_ui", "LICENSE", "text/plain; charset=utf-8"),
    "docs-init.js": ("vecgrid", "docs-init.js", "application/javascript; charset=utf-8"),
}

DOCS_HTML = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>vecgrid REST API</title>
<link rel="icon" type="image/png" href="{STATIC_PREFIX}favicon-32x32.png">
<link rel="stylesheet" href="{STATIC_PREFIX}swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{STATIC_PREFIX}swagger-ui-bundle.js"></script>
<script src="{STATIC_PREFIX}docs-init.js"></script>
</body>
</html>
"""

INDEX_HTML = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>vecgrid</title></head>
<body style="font-family: sans-serif; margin: 2em">
<h1>vecgrid</h1>
<ul>
<li><a href="/docs">/docs</a>: the REST API (Swagger UI)</li>
<li><a href="/console">/console</a>: the console</li>
<li><a href="/openapi.json">/openapi.json</a>: the OpenAPI document</li>
<li><a href="/health">/health</a>, <a href="/version">/version</a>, <a href="/metrics">/metrics</a></li>
</ul>
</body>
</html>
"""


def _static_dir(package: str) -> Path:
    if package == "vecgrid":
        return _OWN_STATIC
    # the package's folder without importing it (swagger_ui's __init__ pulls in jinja2 and friends)
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the {package} package (swagger-ui-py) is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "static"


@functools.cache
def _asset(name: str) -> tuple[bytes, str]:
    package, file, content_type = _ASSETS[name]
    return (_static_dir(package) / file).read_bytes(), content_type


class _PageHandler(BaseHandler):
    SUPPORTED_METHODS = ("GET", "HEAD")
    PAGE = ""

    def get(self) -> None:
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Cache-Control", "no-cache")
        self.finish(self.PAGE)

    def head(self) -> None:
        self.get()


_HTML = {"text/html": {"schema": {"type": "string"}}}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


HEALTH_SCHEMA = {
    "type": "object", "required": ["status", "components"],
    "description": "every component's health; 200 only when all of them can serve",
    "properties": {
        "status": {"enum": ["ok", "unavailable"]},
        "querycoord": {"type": "string", "description": "the QueryCoord's state code name"},
        "query_nodes": {"type": "integer", "minimum": 0},
        "components": {"type": "array", "items": {
            "type": "object", "required": ["name", "healthy", "state", "reason"],
            "properties": {"name": {"type": "string", "examples": ["coordinator", "querynode-1", "scheduler",
                                                                   "metadata-store", "wal"]},
                           "healthy": {"type": "boolean"}, "state": {"type": "string"},
                           "reason": {"type": "string"}}}},
    },
}
VERSION_SCHEMA = {
    "type": "object", "required": ["version", "milvus_proto", "python", "dask", "grpc", "tornado"],
    "properties": {k: {"type": "string"} for k in ("version", "milvus_proto", "python", "dask", "grpc", "tornado")},
}
_TAG = "server"
_TAGS = [{"name": _TAG, "description": "Routes that are not Feathers services: health, version, metrics and "
                                       "these docs (public, also with auth on)"}]
DOCS_OPENAPI = {
    "tags": _TAGS,
    "paths": {
        "/": {"get": {"tags": [_TAG], "operationId": "index", "summary": "Links to /docs, /console and the rest",
                      "responses": {"200": {"description": "an HTML page", "content": _HTML}}}},
        "/docs": {"get": {"tags": [_TAG], "operationId": "docs", "summary": "This page: Swagger UI (offline)",
                          "responses": {"200": {"description": "an HTML page", "content": _HTML}}}},
        "/openapi.json": {"get": {"tags": [_TAG], "operationId": "openapi",
                                  "summary": "The OpenAPI 3.1 document of the API",
                                  "responses": {"200": _json({"type": "object", "required": ["openapi", "paths"]},
                                                             "this document")}}},
    },
}
SERVER_OPENAPI = {
    "tags": _TAGS,
    "paths": {
        "/health": {"get": {"tags": [_TAG], "operationId": "health",
                            "summary": "Health of every component (coordinator, query nodes, scheduler, store, WAL)",
                            "responses": {"200": _json(HEALTH_SCHEMA, "every component can serve"),
                                          "503": _json(HEALTH_SCHEMA, "some component cannot serve")}}},
        "/version": {"get": {"tags": [_TAG], "operationId": "version",
                             "summary": "Versions of vecgrid, its Milvus protocol and main libraries",
                             "responses": {"200": _json(VERSION_SCHEMA, "versions")}}},
        "/metrics": {"get": {"tags": [_TAG], "operationId": "metrics",
                             "summary": "Prometheus metrics (text exposition format)",
                             "responses": {"200": {"description": "Prometheus text format 0.0.4",
                                                   "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
    },
}


class DocsHandler(_PageHandler):
    """``GET /docs``: Swagger UI's page."""

    PAGE = DOCS_HTML
    OPENAPI = DOCS_OPENAPI


class IndexHandler(_PageHandler):
    """``GET /``: links to ``/docs`` and ``/console``."""

    PAGE = INDEX_HTML


class DocsAssetHandler(BaseHandler):
    """``GET /docs/static/<name>``: one of :data:`_ASSETS`, else a Feathers 404."""

    SUPPORTED_METHODS = ("GET", "HEAD")

    def get(self, name: str) -> None:
        if name not in _ASSETS:
            raise NotFound(f"no docs asset {name!r}")
        data, content_type = _asset(name)
        self.set_header("Content-Type", content_type)
        self.set_header("Cache-Control", "public, max-age=3600")
        self.finish(data)

    def head(self, name: str) -> None:
        self.get(name)


def routes() -> list[tuple]:
    """The Tornado routes of the docs: ``/``, ``/docs`` and its files."""
    return [(r"/", IndexHandler), (r"/docs/?", DocsHandler),
            (r"/docs/static/([A-Za-z0-9._-]+)", DocsAssetHandler)]
