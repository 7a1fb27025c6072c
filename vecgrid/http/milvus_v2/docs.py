"""The OpenAPI declaration of Milvus's RESTful API v2 routes (``POST /v2/vectordb/<group>/<action>``),
merged into ``/openapi.json`` by the transport (it rides on :class:`~.handler.MilvusV2Handler` as
``OPENAPI``, see :func:`vecgrid.http.feathers.rest.plain_openapi`).

One literal path per action of :data:`vecgrid.http.milvus_v2.GROUPS` (the route's pattern serves each
of them, so no path here is invented), its body from :data:`BODIES` (Milvus's camelCase keys; keys
Milvus ignores are ignored here too, so the bodies are open), and Milvus's envelope as the answer:
HTTP 200 with ``{"code": 0, "data": ...}``, or ``{"code": <Milvus code>, "message"}`` on failure;
HTTP 401/403 only for credentials.  Documentation only: the actions check their bodies themselves.
"""

from __future__ import annotations

from typing import Any, Mapping

_TAG = "Milvus REST v2"
_STR = {"type": "string"}
_NAME = {"type": "string", "minLength": 1}
_NAMES = {"type": "array", "items": {"type": "string"}}
_CONSISTENCY = {"enum": ["Strong", "Session", "Bounded", "Eventually"]}
_COLLECTION = {"collectionName": _NAME, "dbName": _STR}
_INDEX_PARAM = {"type": "object", "required": ["fieldName"], "properties": {
    "fieldName": _NAME, "indexName": _STR, "metricType": _STR, "indexType": _STR, "params": {"type": "object"}}}
_VECTORS = {"type": "array", "items": {"type": "array", "items": {"type": "number"}},
            "description": "query vectors (one array per query)"}


def _body(properties: Mapping[str, Any], required: tuple[str, ...] = ("collectionName",)) -> dict[str, Any]:
    return {"type": "object", "properties": {**_COLLECTION, **properties} if "collectionName" in required
            else {"dbName": _STR, **properties}, "required": list(required)}


#: (group, action) -> (summary, body schema, example)
BODIES: dict[tuple[str, str], tuple[str, dict[str, Any], dict[str, Any]]] = {
    ("collections", "create"): (
        "Create a collection: quick form (dimension) or full (schema + indexParams); loads it",
        _body({"dimension": {"type": "integer", "minimum": 1}, "metricType": _STR, "idType": {"enum": ["Int64", "VarChar"]},
               "autoID": {"type": ["boolean", "string"]}, "primaryFieldName": _STR, "vectorFieldName": _STR,
               "description": _STR, "params": {"type": "object"}, "schema": {"type": "object"},
               "indexParams": {"type": "array", "items": _INDEX_PARAM}}),
        {"collectionName": "quick", "dimension": 4, "metricType": "L2"}),
    ("collections", "describe"): ("Describe a collection", _body({}), {"collectionName": "quick"}),
    ("collections", "list"): ("List the collections", _body({}, ()), {}),
    ("collections", "has"): ("Whether a collection exists", _body({}), {"collectionName": "quick"}),
    ("collections", "drop"): ("Drop a collection", _body({}), {"collectionName": "quick"}),
    ("collections", "rename"): ("Rename a collection", _body({"newCollectionName": _NAME, "newDbName": _STR},
                                                            ("collectionName", "newCollectionName")),
                                {"collectionName": "quick", "newCollectionName": "quick2"}),
    ("collections", "get_stats"): ("Row count of a collection", _body({}), {"collectionName": "quick"}),
    ("collections", "get_load_state"): ("Load state (and progress) of a collection or partitions",
                                        _body({"partitionNames": _NAMES}), {"collectionName": "quick"}),
    ("collections", "load"): ("Load a collection (answers at once: poll get_load_state)", _body({}),
                              {"collectionName": "quick"}),
    ("collections", "release"): ("Release a collection", _body({}), {"collectionName": "quick"}),
    ("collections", "alter_properties"): ("Alter a collection's properties",
                                          _body({"properties": {"type": "object"}}, ("collectionName", "properties")),
                                          {"collectionName": "quick", "properties": {"collection.ttl.seconds": 60}}),
    ("entities", "insert"): ("Insert rows", _body({"data": {"type": "array", "items": {"type": "object"}},
                                                   "partitionName": _STR}, ("collectionName", "data")),
                             {"collectionName": "quick", "data": [{"id": 1, "vector": [0.1, 0.2, 0.3, 0.4]}]}),
    ("entities", "upsert"): ("Upsert rows", _body({"data": {"type": "array", "items": {"type": "object"}},
                                                   "partitionName": _STR}, ("collectionName", "data")),
                             {"collectionName": "quick", "data": [{"id": 1, "vector": [0.1, 0.2, 0.3, 0.4]}]}),
    ("entities", "delete"): ("Delete by filter expression (or id)",
                             _body({"filter": _STR, "id": {}, "partitionName": _STR, "exprParams": {"type": "object"}}),
                             {"collectionName": "quick", "filter": "id in [1]"}),
    ("entities", "query"): ("Query by filter expression (outputFields [\"count(*)\"] counts)",
                            _body({"filter": _STR, "outputFields": _NAMES, "limit": {"type": "integer", "minimum": 0},
                                   "offset": {"type": "integer", "minimum": 0}, "partitionNames": _NAMES,
                                   "exprParams": {"type": "object"}, "consistencyLevel": _CONSISTENCY}),
                            {"collectionName": "quick", "filter": "id >= 0", "limit": 10}),
    ("entities", "get"): ("Get rows by primary key", _body({"id": {}, "outputFields": _NAMES, "partitionNames": _NAMES},
                                                           ("collectionName", "id")),
                          {"collectionName": "quick", "id": [1]}),
    ("entities", "search"): ("Vector search: one flat list of hits (every query's, in query order)",
                             _body({"data": _VECTORS, "annsField": _STR, "filter": _STR,
                                    "limit": {"type": "integer", "minimum": 1}, "offset": {"type": "integer", "minimum": 0},
                                    "outputFields": _NAMES, "searchParams": {"type": "object"},
                                    "partitionNames": _NAMES, "groupingField": _STR, "groupSize": {"type": "integer"},
                                    "exprParams": {"type": "object"}, "consistencyLevel": _CONSISTENCY},
                                   ("collectionName", "data")),
                             {"collectionName": "quick", "data": [[0.1, 0.2, 0.3, 0.4]], "limit": 3}),
    ("entities", "hybrid_search"): ("Several searches (one per vector field) reranked (rrf or weighted)",
                                    _body({"search": {"type": "array", "items": {"type": "object"}},
                                           "rerank": {"type": "object"}, "limit": {"type": "integer", "minimum": 1},
                                           "outputFields": _NAMES, "partitionNames": _NAMES,
                                           "consistencyLevel": _CONSISTENCY}, ("collectionName", "search")),
                                    {"collectionName": "quick", "search": [{"data": [[0.1, 0.2, 0.3, 0.4]],
                                                                            "annsField": "vector", "limit": 3}],
                                     "rerank": {"strategy": "rrf", "params": {"k": 60}}, "limit": 3}),
    ("partitions", "create"): ("Create a partition", _body({"partitionName": _NAME}, ("collectionName", "partitionName")),
                               {"collectionName": "quick", "partitionName": "p1"}),
    ("partitions", "drop"): ("Drop a partition", _body({"partitionName": _NAME}, ("collectionName", "partitionName")),
                             {"collectionName": "quick", "partitionName": "p1"}),
    ("partitions", "has"): ("Whether a partition exists", _body({"partitionName": _NAME},
                                                                ("collectionName", "partitionName")),
                            {"collectionName": "quick", "partitionName": "p1"}),
    ("partitions", "list"): ("List a collection's partitions", _body({}), {"collectionName": "quick"}),
    ("partitions", "load"): ("Load partitions", _body({"partitionNames": _NAMES}, ("collectionName", "partitionNames")),
                             {"collectionName": "quick", "partitionNames": ["p1"]}),
    ("partitions", "release"): ("Release partitions", _body({"partitionNames": _NAMES},
                                                            ("collectionName", "partitionNames")),
                                {"collectionName": "quick", "partitionNames": ["p1"]}),
    ("partitions", "get_stats"): ("Row count of a partition", _body({"partitionName": _NAME},
                                                                    ("collectionName", "partitionName")),
                                  {"collectionName": "quick", "partitionName": "_default"}),
    ("indexes", "create"): ("Create indexes", _body({"indexParams": {"type": "array", "items": _INDEX_PARAM}},
                                                    ("collectionName", "indexParams")),
                            {"collectionName": "quick", "indexParams": [{"fieldName": "vector", "indexName": "vector",
                                                                         "metricType": "L2"}]}),
    ("indexes", "describe"): ("Describe an index (type, metric, rows indexed, state)",
                              _body({"indexName": _NAME}, ("collectionName", "indexName")),
                              {"collectionName": "quick", "indexName": "vector"}),
    ("indexes", "list"): ("List a collection's index names", _body({}), {"collectionName": "quick"}),
    ("indexes", "drop"): ("Drop an index (release the collection first)",
                          _body({"indexName": _NAME}, ("collectionName", "indexName")),
                          {"collectionName": "quick", "indexName": "vector"}),
    ("aliases", "create"): ("Create an alias", _body({"aliasName": _NAME}, ("collectionName", "aliasName")),
                            {"collectionName": "quick", "aliasName": "q"}),
    ("aliases", "alter"): ("Point an alias at another collection", _body({"aliasName": _NAME},
                                                                         ("collectionName", "aliasName")),
                           {"collectionName": "quick", "aliasName": "q"}),
    ("aliases", "drop"): ("Drop an alias", _body({"aliasName": _NAME}, ("aliasName",)), {"aliasName": "q"}),
    ("aliases", "describe"): ("Describe an alias", _body({"aliasName": _NAME}, ("aliasName",)), {"aliasName": "q"}),
    ("aliases", "list"): ("List aliases (of a collection when named)", _body({"collectionName": _STR}, ()), {}),
    ("databases", "create"): ("Create a database", _body({"properties": {"type": "object"}}, ("dbName",)),
                              {"dbName": "db1"}),
    ("databases", "drop"): ("Drop an empty database (not default)", _body({}, ("dbName",)), {"dbName": "db1"}),
    ("databases", "list"): ("List the databases", _body({}, ()), {}),
    ("databases", "describe"): ("Describe a database", _body({}, ("dbName",)), {"dbName": "db1"}),
}

ENVELOPE = {
    "type": "object", "required": ["code"],
    "description": "Milvus's envelope: `code` 0 with `data` on success; otherwise the Milvus code and `message` "
                   "(1100 invalid parameter, 100 collection not found, 1801 bad JSON, 1802 missing key...)",
    "properties": {"code": {"type": "integer"}, "data": {}, "message": {"type": "string"}},
}


def openapi(groups: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The declaration of every ``group/action`` in ``groups`` (an action without an entry in
    :data:`BODIES` gets an open object body)."""
    paths: dict[str, Any] = {}
    envelope = {"$ref": "#/components/schemas/MilvusV2Envelope"}
    for group, actions in groups.items():
        for action in sorted(actions):
            summary, body, example = BODIES.get((group, action), (f"{group} {action}", {"type": "object"}, {}))
            paths[f"/v2/vectordb/{group}/{action}"] = {"post": {
                "tags": [_TAG], "operationId": f"v2:{group}/{action}", "summary": summary,
                "description": "Milvus 2.4 RESTful API v2. Credentials (with auth on): `Bearer <email>:<password>`, "
                               "HTTP basic, or `Bearer <access token>`. Database: `dbName` or the `DB-Name` header.",
                "parameters": [
                    {"name": "DB-Name", "in": "header", "required": False, "schema": _STR,
                     "description": "the database (instead of `dbName`)"},
                    {"name": "Accept-Type-Allow-Int64", "in": "header", "required": False,
                     "schema": {"enum": ["true", "false"]}, "description": "`false`: Int64 values as strings"}],
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": body, "example": example}}},
                "responses": {"200": {"description": "the envelope (failures too: see `code`)",
                                      "content": {"application/json": {"schema": envelope}}},
                              "401": {"description": "no valid credentials (code 1800)",
                                      "content": {"application/json": {"schema": envelope}}},
                              "403": {"description": "the role lacks the right (code 1401)",
                                      "content": {"application/json": {"schema": envelope}}}},
                "security": [{}, {"bearerAuth": []}],
            }}
    return {"paths": paths, "schemas": {"MilvusV2Envelope": ENVELOPE},
            "tags": [{"name": _TAG, "description": "Milvus 2.4's RESTful API v2: HTTP 200 with {code, data}"}]}
