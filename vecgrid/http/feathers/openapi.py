"""OpenAPI 3.1 document of a Feathers :class:`~vecgrid.http.feathers.application.Application`.

Generated from what is registered, so the document cannot drift from the server: every service path
(``users/:userId/messages`` → ``/users/{userId}/messages`` with path parameters), the operations of
the methods it exposes mapped as the REST transport maps them (facts file §1), their query
parameters, bodies, results and error bodies.  Served by the transport at ``GET /openapi.json``.

What a registration may declare for its document (``app.use(path, service, options)``)::

    app.use("people", MemoryService(...), {
        "schema": {...},         # JSON Schema of one record as the service returns it
        "multi": ["remove"],     # for services that are no adapter: which multi calls they take
                                 # (collection PATCH/DELETE documented only for those)
        "data_schema": {...},    # JSON Schema of create/update bodies (default: "schema" without
                                 # "required"; patch bodies never have required fields)
        "docs": {                # per method, or "all" for every method of the service
            "all": {"authenticated": True},           # needs a JWT: bearer security, 401 documented
            "create": {"summary": "...", "description": "..."},
            "search": {"data": {...}, "result": {...}, "empty": False, "errors": [409]},
        },
    })

``docs[method]`` keys: ``summary``, ``description``, ``data`` (JSON Schema of the request body),
``result`` (JSON Schema of the result), ``example`` (a request body that works: the method's
example in viewers), ``empty`` (the method may return nothing: 204), ``errors`` (more status codes
it answers, each with the Feathers error body), ``authenticated``.  A service class (or instance)
may carry the same as ``OPENAPI = {"schema": ..., "data_schema": ..., "multi": ..., "tag": "...",
"docs": ...}``; the registration wins.  ``tag`` describes the service in the document's ``tags``.
An app-wide or service hook marks the methods it guards with a token by an attribute
``openapi_authenticated(service, method) -> bool`` (``authenticate('jwt')`` hooks are known as such).  The
document only describes: nothing validates bodies against ``schema`` (a service that promises typed
records must validate its data itself, e.g. in a before hook).

Database adapters (services whose ``options`` hold ``id``, ``paginate``, ``multi`` and
``query_schema``, as :class:`vecgrid.http.feathers.adapters.base.AdapterService`) get more from their options:
records always carry the id field, ``find`` answers a page object ``{total, limit, skip, data}`` when
the service paginates and an array otherwise, the collection ``PATCH``/``DELETE`` operations exist
only for multi methods and a ``POST`` body may be an array only under multi ``create``; the query
parameters are each field of the query schema (its type; operators in bracket notation such as
``age[$gt]=3`` or ``name[$in][0]=A`` are described, not enumerated: OpenAPI has no style for qs
nesting) and the filters ``$limit``, ``$skip``, ``$sort`` (``deepObject``: ``$sort[age]=-1``) and
``$select`` (``$select=name&$select=age``).  Without a declared result, a method of any other
service is documented as "any JSON, or nothing (204)": that is all the framework knows of it.

Custom methods.  Feathers calls them with ``POST /path`` and ``X-Service-Method: name``, on the same
path and verb as ``create``, and OpenAPI allows one operation per path and verb.  So the collection's
``POST`` is one operation for ``create`` and every custom method: its ``X-Service-Method`` header
parameter is an enum of the custom method names, *required* when the service has no ``create``,
optional when it has (absent = ``create``, answered 201; present = that method, answered 200, or 204
where it may return nothing).  What a viewer and a fuzzer each need from it:

* the body is ``anyOf`` the methods' declared schemas, each with the method's name as its ``title``
  (Swagger UI labels the alternatives by title), and the 200 result ``anyOf`` their results;
* the request body has one named example per method (``docs[method]["example"]``, else a minimal
  body), each summarised with the header to send: Swagger UI's example list is how a reader picks
  "search" and gets a body that works once the header says ``search``;
* the description has a section per method (its header, summary and body fields), readable in any
  viewer;
* the ``x-feathers-methods`` extension gives each method's ``data``, ``result`` and ``empty``
  exactly.  OpenAPI cannot tie a header value to one of the body alternatives, so a body of one
  method sent with another's header is refused (400) though the ``anyOf`` allows it: a fuzzer that
  wants only accepted requests takes :func:`method_document`, the same document narrowed to one
  custom method (its header fixed, its body and result alone) — what ``tests/test_rest_fuzz.py``
  runs Schemathesis on.

No invented paths (such as one literal path per method): every documented request is one a Feathers
client sends.

Routes that are not services (``/health``, ``/metrics``, the docs page...) are added by the
transport from the ``OPENAPI`` declarations of their handlers: ``extra`` is ``{"paths": {...},
"schemas": {...}, "tags": [...]}`` merged into the document as written (see
:func:`vecgrid.http.feathers.rest.make_tornado_app`).

Every error response is the Feathers error body (``name``, ``message``, ``code``, ``className``,
optional ``data`` and ``errors``): the ``default`` response of every operation, with 400 (query or
body rejected), 404 (item operations), 401 (authenticated methods) and 500 listed by name.

Pure: builds a new dict from the registry on every call (the registry is only read).
"""

from __future__ import annotations

import copy
import re
from typing import Any, Mapping

from vecgrid.http.feathers.application import Application, RegisteredService
from vecgrid.http.feathers.authentication import authenticate

OPENAPI_VERSION = "3.1.0"
# Every hook authenticate() makes runs this code: how a method is known to need a JWT without a
# docs entry saying so.
_AUTHENTICATE_CODE = authenticate("jwt").__code__
ERROR_SCHEMA_REF = "#/components/schemas/FeathersError"
ERROR_RESPONSE_REF = "#/components/responses/FeathersError"
METHOD_HEADER = "X-Service-Method"
BEARER = "bearerAuth"

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A Feathers error: status equal to `code`; `data` and `errors` only when set.",
    "required": ["name", "message", "code", "className"],
    "properties": {
        "name": {"type": "string", "examples": ["NotFound"]},
        "message": {"type": "string"},
        "code": {"type": "integer", "minimum": 400, "maximum": 599},
        "className": {"type": "string", "examples": ["not-found"]},
        "data": {},
        "errors": {},
    },
    "additionalProperties": False,
}

_ERROR_TEXT = {400: "Bad request: the query or body was rejected (validation errors in `data`)",
               401: "Not authenticated", 404: "No such record", 405: "Method not allowed",
               409: "Conflict", 413: "Request body too large", 429: "Too many requests",
               500: "Internal server error (the request id is in `data.requestId`)",
               503: "Unavailable"}

_FIELD_TYPES = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean"}
_OPERATORS = "`$in`, `$nin` (arrays), `$lt`, `$lte`, `$gt`, `$gte`, `$ne`, `$eq`"


def openapi_document(app: Application, *, title: str = "Feathers API", version: str = "1.0.0",
                     description: str | None = None, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document of every service registered in ``app``, plus ``extra``'s paths,
    schemas and tags (routes that are not services)."""
    builder = _Builder()
    for registered in app.services.values():
        builder.add_service(registered)
    info: dict[str, Any] = {"title": title, "version": version}
    if description:
        info["description"] = description
    extra = copy.deepcopy(dict(extra or {}))
    paths = {**builder.paths, **extra.get("paths", {})}
    components: dict[str, Any] = {
        "schemas": {"FeathersError": ERROR_SCHEMA, **builder.schemas, **extra.get("schemas", {})},
        "responses": {"FeathersError": _error_response("A Feathers error"), **builder.error_responses},
    }
    uses_bearer = builder.uses_bearer or any(
        "security" in op for item in extra.get("paths", {}).values() for op in item.values() if isinstance(op, dict))
    if uses_bearer:
        components["securitySchemes"] = {BEARER: {
            "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
            "description": "An access token from `POST /authentication` (log in): `Authorization: Bearer <token>`"}}
    document: dict[str, Any] = {"openapi": OPENAPI_VERSION, "info": info}
    tags = builder.tags + [t for t in extra.get("tags", []) if t["name"] not in {b["name"] for b in builder.tags}]
    if tags:
        document["tags"] = tags
    document.update({"paths": paths, "components": components})
    return document


def method_document(document: Mapping[str, Any], path: str, method: str) -> dict[str, Any]:
    """``document`` narrowed to custom ``method`` of the service at ``path`` (an OpenAPI path): its
    collection ``POST`` with the header fixed to ``method`` and the method's own body and result, no
    other operation; for fuzzers, as OpenAPI cannot tie a header value to a body (module doc)."""
    out = copy.deepcopy(dict(document))
    operation = out["paths"][path]["post"]
    contract = operation["x-feathers-methods"][method]
    for param in operation["parameters"]:
        if param.get("in") == "header" and param["name"] == METHOD_HEADER:
            param["required"] = True
            param["schema"] = {"type": "string", "enum": [method]}
    operation["operationId"] = f"{method}:{path}"
    operation["requestBody"] = {"required": False, "content": {"application/json": {"schema": contract["data"]}}}
    responses = {k: v for k, v in operation["responses"].items() if k != "201"}
    responses["200"] = {"description": f"`{method}`'s result",
                        "content": {"application/json": {"schema": contract["result"]}}}
    if not contract["empty"]:
        responses.pop("204", None)
    operation["responses"] = responses
    item = {"post": operation}
    if "parameters" in out["paths"][path]:
        item["parameters"] = out["paths"][path]["parameters"]
    out["paths"] = {path: item}
    return out


def _error_response(description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": ERROR_SCHEMA_REF}}}}


def _component_name(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", path)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _any_of(schemas: list[dict]) -> dict:
    unique: list[dict] = []
    for schema in schemas:
        if schema not in unique:
            unique.append(schema)
    if any(s == {} for s in unique):
        return {}
    return unique[0] if len(unique) == 1 else {"anyOf": unique}


def _without_required(schema: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(schema))
    out.pop("required", None)
    return out


class _ServiceDocs:
    """What one registration tells the document: options of the adapter and of the registration."""

    def __init__(self, registered: RegisteredService) -> None:
        service = registered.service
        declared = dict(getattr(service, "OPENAPI", None) or {})
        declared.update({k: v for k, v in registered.options.items()
                         if k in ("schema", "data_schema", "docs", "multi", "tag")})
        self.tag_description: str | None = declared.get("tag")
        options = getattr(service, "options", None)
        self.adapter = isinstance(options, Mapping) and {"id", "paginate", "multi", "query_schema"} <= set(options)
        options = options if self.adapter else {}
        self.id_field: str | None = options.get("id")
        self.paginate = options.get("paginate")
        # Multi PATCH/DELETE are documented where allowed: an adapter's option, else a "multi"
        # registration option, else (unknown) documented, their refusal being a 405.
        self.multi_known = self.adapter or "multi" in declared
        self.multi = options.get("multi", declared.get("multi", False))
        schema = options.get("query_schema")
        fields = getattr(schema, "fields", schema)
        self.query_fields: dict[str, str] | None = dict(fields) if fields is not None else None
        self.schema: dict | None = declared.get("schema")
        self.data_schema: dict | None = declared.get("data_schema")
        docs = declared.get("docs") or {}
        self._docs_all: dict = dict(docs.get("all") or {})
        self._docs: dict = {k: dict(v) for k, v in docs.items() if k != "all"}
        self._registered = registered

    def docs(self, method: str) -> dict[str, Any]:
        docs = {**self._docs_all, **self._docs.get(method, {})}
        if "authenticated" not in docs and self._authenticated(method):
            docs["authenticated"] = True
        return docs

    def _authenticated(self, method: str) -> bool:
        """Whether an ``authenticate('jwt')`` before hook (app-wide or the service's) guards ``method``."""
        registered = self._registered
        for table in (registered.app._hooks, registered._hooks):
            before = table["before"]
            for hook in before.get("all", []) + before.get(method, []):
                if getattr(hook, "__code__", None) is _AUTHENTICATE_CODE:
                    return True
                marked = getattr(hook, "openapi_authenticated", None)
                if marked is not None and marked(registered.service, method):
                    return True
        return False

    def allows_multi(self, method: str) -> bool:
        return self.multi if isinstance(self.multi, bool) else method in self.multi


class _Builder:
    """Accumulates paths and component schemas over the services (one document, one builder)."""

    def __init__(self) -> None:
        self.paths: dict[str, dict[str, Any]] = {}
        self.schemas: dict[str, Any] = {}
        self.uses_bearer = False
        self.error_responses: dict[str, Any] = {}
        self.tags: list[dict[str, Any]] = []

    def error_response_ref(self, code: int) -> dict[str, str]:
        name = f"Error{code}"
        self.error_responses[name] = _error_response(_ERROR_TEXT.get(code, "A Feathers error"))
        return {"$ref": f"#/components/responses/{name}"}

    # -- per service -------------------------------------------------------------------------------
    def add_service(self, registered: RegisteredService) -> None:
        info = _ServiceDocs(registered)
        name = _component_name(registered.path)
        record = self._record_schema(info, name)
        route_params = [{"name": p, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1},
                         "description": "route placeholder (`params.route`)"} for p in registered.placeholders]
        id_name = "id"
        while id_name in registered.placeholders:
            id_name = "_" + id_name
        id_param = {"name": id_name, "in": "path", "required": True,
                    "schema": {"type": "string", "minLength": 1, "pattern": r"^[^/]+$", "not": {"enum": [".", ".."]}},
                    "description": "the record's id as a string (a number id matches its decimal form)"}
        segments = ["{" + s[1:] + "}" if s.startswith(":") else s for s in registered.segments]
        collection_path = "/" + "/".join(segments)
        item_path = collection_path + "/{" + id_name + "}"
        collection: dict[str, Any] = {}
        item: dict[str, Any] = {}
        tag = registered.path
        self.tags.append({"name": tag, **({"description": info.tag_description} if info.tag_description else {})})
        methods = registered.methods
        op = _Operation(self, info, registered.path, tag, record)

        if "find" in methods:
            collection["get"] = op.find()
        if "get" in methods:
            item["get"] = op.item("get", 200)
        if "create" in methods or registered.custom_methods:
            collection["post"] = op.post("create" in methods, registered.custom_methods)
        if "update" in methods:
            item["put"] = op.item("update", 200, body=op.data_schema(partial=False))
        if "patch" in methods:
            item["patch"] = op.item("patch", 200, body=op.data_schema(partial=True))
            if not info.multi_known or info.allows_multi("patch"):
                collection["patch"] = op.multi("patch", body=op.data_schema(partial=True))
        if "remove" in methods:
            item["delete"] = op.item("remove", 200)
            if not info.multi_known or info.allows_multi("remove"):
                collection["delete"] = op.multi("remove")

        for path, operations in ((collection_path, collection), (item_path, item)):
            if not operations:
                continue
            entry: dict[str, Any] = dict(operations)
            params = list(route_params) + ([id_param] if path == item_path else [])
            if params:
                entry["parameters"] = params
            self.paths[path] = entry

    def _record_schema(self, info: _ServiceDocs, name: str) -> dict[str, Any]:
        """A ``$ref`` to the record component when the service has records, else ``{}``."""
        if info.schema is not None:
            schema = copy.deepcopy(info.schema)
        elif info.adapter:
            # Adapter records are free-form: the query schema types queries, not what was stored.
            schema = {"type": "object", "description": "a record (free-form JSON object)"}
        else:
            return {}
        if info.id_field is not None and schema.get("type") == "object":
            required = list(schema.get("required", []))
            if info.id_field not in required:
                required.append(info.id_field)  # $select always keeps the id field
            schema["required"] = required
        self.schemas[f"{name}.record"] = schema
        return _ref(f"{name}.record")


class _Operation:
    """Builds the operations of one service."""

    def __init__(self, builder: _Builder, info: _ServiceDocs, path: str, tag: str, record: dict) -> None:
        self.builder, self.info, self.path, self.tag, self.record = builder, info, path, tag, record
        self.component = _component_name(path)

    # -- schemas -------------------------------------------------------------------------------------
    def result(self, method: str, default: dict) -> dict:
        declared = self.info.docs(method).get("result")
        return copy.deepcopy(declared) if declared is not None else default

    def may_be_empty(self, method: str) -> bool:
        docs = self.info.docs(method)
        if "empty" in docs:
            return bool(docs["empty"])
        # A method we know nothing about may return nothing; adapter methods always return records.
        return not self.info.adapter and "result" not in docs

    def data_schema(self, *, partial: bool) -> dict:
        info = self.info
        if info.data_schema is not None:
            schema = copy.deepcopy(info.data_schema)
        elif info.schema is not None:
            schema = _without_required(info.schema)
        elif info.adapter:
            schema = {"type": "object"}
        else:
            schema = {}
        if partial and isinstance(schema, dict):
            schema = _without_required(schema)
        return schema

    # -- parameters ----------------------------------------------------------------------------------
    def query_parameters(self, *, filters: tuple[str, ...], conditions: bool) -> list[dict]:
        info = self.info
        if not info.adapter:
            return []
        fields = info.query_fields
        params: list[dict] = []
        if conditions and fields:
            for field, kind in fields.items():
                params.append({
                    "name": field, "in": "query", "required": False,
                    "schema": {"type": _FIELD_TYPES.get(kind, "string")},
                    "description": (f"`{field}` equals this value ({kind}); operators in bracket notation: "
                                    f"{_OPERATORS}, e.g. `{field}[$ne]=...`; `$or[0][{field}]=...` and "
                                    f"`$and[...]` combine conditions"),
                })
        names = list(fields) if fields else None
        if "$limit" in filters:
            limit_text = ("page size (capped by the service's maximum; 0 answers the count only)"
                          if info.paginate else "at most this many records")
            params.append({"name": "$limit", "in": "query", "required": False,
                           "schema": {"type": "integer", "minimum": 0}, "description": limit_text})
        if "$skip" in filters:
            params.append({"name": "$skip", "in": "query", "required": False,
                           "schema": {"type": "integer", "minimum": 0}, "description": "records to skip"})
        if "$sort" in filters:
            direction = {"type": "integer", "enum": [1, -1]}
            sort_schema: dict[str, Any] = {"type": "object"}
            if names:
                sort_schema["properties"] = {n: direction for n in names}
                sort_schema["additionalProperties"] = False
            else:
                sort_schema["additionalProperties"] = direction
            params.append({"name": "$sort", "in": "query", "required": False, "style": "deepObject",
                           "explode": True, "schema": sort_schema,
                           "description": "`$sort[field]=1` ascending, `-1` descending"})
        if "$select" in filters:
            item: dict[str, Any] = {"type": "string", "enum": names} if names else {"type": "string"}
            params.append({"name": "$select", "in": "query", "required": False, "style": "form",
                           "explode": True, "schema": {"type": "array", "items": item},
                           "description": "fields of the answered records (the id field is always kept)"})
        return params

    # -- operations ----------------------------------------------------------------------------------
    def _base(self, method: str, summary: str) -> dict[str, Any]:
        docs = self.info.docs(method)
        operation: dict[str, Any] = {"tags": [self.tag], "summary": docs.get("summary", summary),
                                     "operationId": f"{method}:{self.path}"}
        if docs.get("description"):
            operation["description"] = docs["description"]
        return operation

    def _responses(self, methods: list[str], success: dict[str, Any], *, item: bool) -> dict[str, Any]:
        responses = dict(success)
        if any(self.may_be_empty(m) for m in methods) and "204" not in responses:
            responses["204"] = {"description": "the method returned nothing (no body, no Content-Type)"}
        codes = {400, 500} | ({404} if item else set())
        for method in methods:
            docs = self.info.docs(method)
            codes |= {int(c) for c in docs.get("errors", [])}
            if docs.get("authenticated"):
                codes.add(401)
        for code in sorted(codes):
            responses[str(code)] = self.builder.error_response_ref(code)
        responses["default"] = {"$ref": ERROR_RESPONSE_REF}
        return responses

    def _secure(self, operation: dict[str, Any], methods: list[str]) -> dict[str, Any]:
        if any(self.info.docs(m).get("authenticated") for m in methods):
            operation["security"] = [{BEARER: []}]
            self.builder.uses_bearer = True
        return operation

    @staticmethod
    def _json(schema: dict, description: str) -> dict[str, Any]:
        return {"description": description, "content": {"application/json": {"schema": schema}}}

    def find(self) -> dict[str, Any]:
        operation = self._base("find", "Find records")
        operation["parameters"] = self.query_parameters(filters=("$limit", "$skip", "$sort", "$select"),
                                                        conditions=True)
        default = {"type": "array", "items": self.record} if self.info.adapter else {}
        if self.info.adapter and self.info.paginate:
            page_name = f"{self.component}.page"
            self.builder.schemas[page_name] = {
                "type": "object", "required": ["total", "limit", "skip", "data"],
                "properties": {"total": {"type": "integer", "minimum": 0},
                               "limit": {"type": "integer", "minimum": 0},
                               "skip": {"type": "integer", "minimum": 0},
                               "data": {"type": "array", "items": self.record}},
                "additionalProperties": False,
                "description": "a page: `total` counts every match, `data` holds at most `limit` of them"}
            default = _ref(page_name)
        success = {"200": self._json(self.result("find", default),
                                     "a page object" if self.info.paginate else "the matching records")}
        operation["responses"] = self._responses(["find"], success, item=False)
        return self._secure(operation, ["find"])

    def item(self, method: str, status: int, body: dict | None = None) -> dict[str, Any]:
        summaries = {"get": "Get a record by id", "update": "Replace a record",
                     "patch": "Merge into a record", "remove": "Remove a record (answers it as it was)"}
        operation = self._base(method, summaries[method])
        operation["parameters"] = self.query_parameters(filters=("$select",), conditions=True)
        if body is not None:
            operation["requestBody"] = {"required": True,
                                        "content": {"application/json": {"schema": self.body_schema(method, body)}}}
        success = {str(status): self._json(self.result(method, self.record), "the record")}
        operation["responses"] = self._responses([method], success, item=True)
        return self._secure(operation, [method])

    def body_schema(self, method: str, default: dict) -> dict:
        declared = self.info.docs(method).get("data")
        return copy.deepcopy(declared) if declared is not None else default

    def multi(self, method: str, body: dict | None = None) -> dict[str, Any]:
        summaries = {"patch": "Merge into every matching record (multi)",
                     "remove": "Remove every matching record (multi)"}
        operation = self._base(method, summaries[method])
        operation["operationId"] = f"{method}-multi:{self.path}"
        operation["parameters"] = self.query_parameters(filters=("$select",), conditions=True)
        if body is not None:
            operation["requestBody"] = {"required": True,
                                        "content": {"application/json": {"schema": self.body_schema(method, body)}}}
        default = {"type": "array", "items": self.record} if self.info.adapter else {}
        success = {"200": self._json(self.result(method, default), "every record the call matched")}
        operation["responses"] = self._responses([method], success, item=False)
        return self._secure(operation, [method])

    def post(self, has_create: bool, custom: list[str]) -> dict[str, Any]:
        multi_create = self.info.adapter and self.info.allows_multi("create")
        if has_create and not custom:
            operation = self._base("create", "Create a record" + (" (an array body creates several)" if multi_create
                                                                  else ""))
        else:
            first = "create" if has_create else custom[0]
            operation = self._base(first, "Call " + ", ".join(f"`{n}`" for n in ([first] if has_create else custom)))
            operation["summary"] += " · custom methods: " + ", ".join(custom)
            operation["operationId"] = "post:" + self.path
        methods = (["create"] if has_create else []) + custom
        bodies: list[dict] = []
        examples: dict[str, Any] = {}
        success: dict[str, Any] = {}
        if has_create:
            operation["parameters"] = self.query_parameters(filters=("$select",), conditions=False)
            data = self.body_schema("create", self.data_schema(partial=False))
            if multi_create and data != {}:
                data = {"anyOf": [data, {"type": "array", "items": data}]}
            if custom and data != {}:
                data = {"title": "create", **data}
            bodies.append(data)
            example = self.info.docs("create").get("example")
            if example is not None:
                examples["create"] = {"summary": "create (no X-Service-Method header)", "value": example}
            created = self.record
            if multi_create:
                created = {"anyOf": [self.record, {"type": "array", "items": self.record}]} if self.record else {}
            success["201"] = self._json(self.result("create", created),
                                        "`create`: the created record(s), with id")
        if custom:
            header = {"name": METHOD_HEADER, "in": "header", "required": not has_create,
                      "schema": {"type": "string", "enum": list(custom)},
                      "description": ("the custom method to call" +
                                      ("; without it the request is `create`" if has_create else ""))}
            operation.setdefault("parameters", []).append(header)
            extension = {}
            results = []
            sections = []
            for name in custom:
                docs = self.info.docs(name)
                data = copy.deepcopy(docs.get("data", {}))
                result = copy.deepcopy(docs.get("result", {}))
                bodies.append({"title": name, **data} if data != {} else {})
                results.append(result)
                extension[name] = {"data": data, "result": result, "empty": self.may_be_empty(name)}
                text = docs.get("description") or docs.get("summary")
                if text:
                    extension[name]["description"] = text
                examples[name] = {"summary": f"{name} (header {METHOD_HEADER}: {name})",
                                  "value": copy.deepcopy(docs["example"]) if "example" in docs
                                  else _minimal_body(data)}
                sections.append(_method_section(name, docs, data))
            operation["x-feathers-methods"] = extension
            success["200"] = self._json(_any_of(results), "a custom method's result")
            operation["description"] = "\n\n".join(
                filter(None, [operation.get("description"),
                              f"**Custom methods**: send `{METHOD_HEADER}: <name>` (answered 200, or 204 when the "
                              "method returns nothing); pick the method's example below for a body that works. "
                              "`x-feathers-methods` gives each method's body and result.", *sections]))
        content: dict[str, Any] = {"schema": _any_of(bodies)}
        if examples:
            content["examples"] = examples
        operation["requestBody"] = {"required": has_create and not custom, "content": {"application/json": content}}
        operation["responses"] = self._responses(methods, success, item=False)
        return self._secure(operation, methods)


def _minimal_body(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A body holding a placeholder for each required key of an object schema (``{}`` when none)."""
    placeholders = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
    out: dict[str, Any] = {}
    for key in schema.get("required", []):
        prop = (schema.get("properties") or {}).get(key, {})
        kind = prop.get("type")
        out[key] = prop["examples"][0] if prop.get("examples") else placeholders.get(kind if isinstance(kind, str)
                                                                                    else "string", "")
    return out


def _method_section(name: str, docs: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    """Markdown of one custom method: its header, summary and body keys (required ones marked)."""
    lines = [f"### `{name}` — `{METHOD_HEADER}: {name}`"]
    if docs.get("summary"):
        lines.append(docs["summary"])
    required = set(data.get("required", []))
    props = data.get("properties") or {}
    if props:
        lines.append("Body: " + ", ".join(f"`{k}`" + (" (required)" if k in required else "") for k in props))
    elif data == {}:
        lines.append("Body: any JSON (undocumented)")
    return "\n\n".join(lines)
