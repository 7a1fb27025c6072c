"""Milvus 2.4's RESTful API v2 on the coordinator's REST port: ``POST /v2/vectordb/<group>/<action>``
with JSON bodies and Milvus's ``{"code": 0, "data": ...}`` envelope, so that the curl examples of
Milvus's documentation run against vecgrid with the host changed (``docs/rest-api.md``).

One module per group (:mod:`.collections`, :mod:`.entities`, :mod:`.partitions`, :mod:`.indexes`,
:mod:`.aliases`, :mod:`.databases`),
each a table ``ACTIONS`` of action name -> (right, coroutine); one handler (:mod:`.handler`) decodes
the body, checks credentials and the database, runs the action and encodes the envelope and Milvus's
error codes.  The actions are thin: each makes the call the MilvusService (gRPC) makes for the same
thing — the coordinator's ``Ddl``, its loads, the catalog, the proxy — with the rules both doors share
(:mod:`vecgrid.cluster.proxy.milvus_api`, :mod:`vecgrid.cluster.proxy.milvus_expr`).

These routes sit beside the Feathers services (plain Tornado handlers matched before them), as
Milvus's own ``/v2/vectordb`` routes sit beside its v1 ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vecgrid.http.milvus_v2 import aliases, collections, databases, docs, entities, indexes, partitions
from vecgrid.http.milvus_v2.handler import Action, Credentials, MilvusV2Handler, V2
from vecgrid.http.services.accounts import auth_enabled, grpc_rights_checker

if TYPE_CHECKING:
    from vecgrid.http.feathers.application import Application
    from vecgrid.http.services import RestContext

#: group -> its actions
GROUPS: dict[str, dict[str, Action]] = {
    "collections": collections.ACTIONS,
    "entities": entities.ACTIONS,
    "partitions": partitions.ACTIONS,
    "indexes": indexes.ACTIONS,
    "aliases": aliases.ACTIONS,
    "databases": databases.ACTIONS,
}
PATH = r"/v2/vectordb/(%s)/(\w+)" % "|".join(GROUPS)
#: the routes' OpenAPI declaration (:mod:`.docs`), which ``make_app`` hands to the transport
OPENAPI = docs.openapi(GROUPS)


def routes(ctx: "RestContext", api: "Application") -> list[tuple[str, Any, dict[str, Any]]]:
    """The Tornado route of the API for ``make_app``; with auth on (``[http] auth``), calls are checked
    against the users of ``api``'s ``authentication`` service."""
    credentials = None
    if ctx.settings is not None and auth_enabled(ctx.settings):
        refusals = api.service("authentication").service.revocations
        credentials = Credentials(grpc_rights_checker(api), revision=lambda: refusals.revision)
    return [(PATH, MilvusV2Handler, {"v2": V2(ctx), "groups": GROUPS, "credentials": credentials})]
