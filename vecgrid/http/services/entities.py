"""``collections/:collection/entities``: a Feathers database adapter over a collection (rest-api.md).

The service decodes a Feathers call into one call of the :class:`~vecgrid.cluster.proxy.proxy.Proxy` and
encodes the answer; the rules (filters, ordering across shards, consistency, validation of rows) are the
proxy's.  What is decided here is the Feathers side:

* queries are checked and coerced by a query schema built from the collection's Milvus schema (scalar
  fields: integers, numbers, strings, booleans; so ``?age=32`` is the number 32 and an Int64 key may come
  as a decimal string), then compiled to a plan expression with the ``$in`` cap; ``$eq`` and ``$like``
  (VarChar) are accepted beyond the common syntax, ``$consistency`` is taken off the query;
* with the dynamic field on, any other name is a key of it (stored in ``$meta``): filterable, sortable
  (numbers, then strings, then booleans; rows lacking the key last), selectable, countable by group.  A
  query string has no types, so its values for such keys are read as a JSON client would mean them: a
  finite number's text is that number, ``true``/``false`` booleans, anything else a string
  (:func:`~vecgrid.cluster.proxy.filters.coerce_dynamic`); to match a string of digits, use a JSON body
  (``search`` / ``count`` filters keep the body's types);
* ``$select`` names output fields: the primary key always, vectors only when named, keys of the dynamic
  field too; without it every field but the vectors;
* finds page with ``{default: 100, max: 16384}`` and exact totals; a window past ``$skip + $limit``
  = 16,384 is refused with the cursor form to use instead;
* every write answers ``X-Vecgrid-Ts`` (its timestamp) through ``params["response_headers"]``; a read
  that sends it back as ``X-Vecgrid-Guarantee-Ts`` reads at least that write;
* int64 values beyond ±(2^53 − 1) leave as strings (a JSON number would lose them).

Methods not allowed as multi (``multi``: create and remove by default; patch without an id when enabled)
answer Feathers' 405.

A collection's description is the proxy's kept one (:meth:`~vecgrid.cluster.proxy.proxy.Proxy.describe`): a
search reads no catalog.  :func:`mount` has the proxy forget it after every call that may change a definition
(``collections``, ``partitions``, ``indexes``, ``import-jobs``: anything but ``find`` and ``get``), so the
next call sees a rename, a drop or a new field at once; a read that fails on a kept description is tried once
more on a fresh one when the definition changed meanwhile behind this app (the coordinator's own DDL: an
import job's new partition).  Writes describe afresh (they cost a durable log write anyway).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import math
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Mapping, Sequence

import numpy as np

from vecgrid import errors
from vecgrid.cluster.proxy.filters import compile_filter
from vecgrid.cluster.proxy.milvus_expr import compile_expression
from vecgrid.cluster.proxy.rows import row_errors
from vecgrid.cluster.proxy.task_search import plain_top_k
from vecgrid.common.feathers_errors import BadRequest, FeathersError, MethodNotAllowed, NotFound
from vecgrid.http.milvus_errors import feathers_error
from vecgrid.http.feathers.query import QuerySchema, page_limit, select_fields, split_query
from vecgrid.proto import schema_pb2
from vecgrid.storage.catalog.schema_rules import DYNAMIC_FIELD_NAME, VECTOR_TYPES, field_dim

if TYPE_CHECKING:
    from vecgrid.cluster.proxy.catalog_access import CollectionMeta
    from vecgrid.cluster.proxy.proxy import Proxy
    from vecgrid.http.feathers.application import Application, HookContext
    from vecgrid.http.services import RestContext

__all__ = ["EntitiesService", "mount", "PATH", "TS_HEADER", "GUARANTEE_HEADER"]

PATH = "collections/:collection/entities"
TS_HEADER = "X-Vecgrid-Ts"
GUARANTEE_HEADER = "x-vecgrid-guarantee-ts"     # request headers arrive lower-case
MAX_SAFE_INTEGER = (1 << 53) - 1
WINDOW = 16384
DEFAULT_PAGINATE = {"default": 100, "max": WINDOW}

_INTEGER = {schema_pb2.Int8, schema_pb2.Int16, schema_pb2.Int32, schema_pb2.Int64}
_NUMBER = {schema_pb2.Float, schema_pb2.Double}
_STRING = {schema_pb2.VarChar, schema_pb2.String}
_SEARCH_KEYS = {"vectors", "vectors_b64", "vector", "ids", "field", "limit", "offset", "filter", "select", "params",
                "partitions", "groupBy", "groupSize", "consistency"}
_QUERY_FORMS = ("vectors", "vectors_b64", "vector", "ids")
_SEARCH_PARAMS = {"nprobe": "nprobe", "ef": "ef", "radius": "radius", "rangeFilter": "range_filter",
                  "range_filter": "range_filter", "itopk_size": "itopk_size", "search_width": "search_width"}
_COUNT_KEYS = {"filter", "groupBy", "partitions", "consistency"}
# Services whose calls (but find and get) may change a collection's definition: the kept ones are forgotten.
DEFINITION_PATHS = frozenset({"collections", "collections/:collection/partitions", "collections/:collection/indexes",
                              "import-jobs"})
_READS = frozenset({"find", "get"})


def _query_schema(meta: "CollectionMeta") -> QuerySchema:
    """The Feathers query schema of a collection: its filterable (scalar) fields and their JSON types."""
    kinds = {}
    for f in meta.schema.fields:
        if f.is_dynamic:
            continue
        if f.data_type in _INTEGER:
            kinds[f.name] = "integer"
        elif f.data_type in _NUMBER:
            kinds[f.name] = "number"
        elif f.data_type in _STRING:
            kinds[f.name] = "string"
        elif f.data_type == schema_pb2.Bool:
            kinds[f.name] = "boolean"
    return QuerySchema(kinds, additional=meta.schema.enable_dynamic_field, operators=("$like",))


def _as_names(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) and k.isdigit() for k in value):
        return [str(value[k]) for k in sorted(value, key=int)]
    return [str(value)]


def _is_true_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Collection:
    """One collection's schema as the service needs it for one call."""

    def __init__(self, meta: "CollectionMeta") -> None:
        self.meta = meta
        self.pk = meta.pk_field
        self.fields = {f.name: f for f in meta.schema.fields if not f.is_dynamic}
        self.dynamic = meta.schema.enable_dynamic_field
        self.vectors = {name for name, f in self.fields.items() if f.data_type in VECTOR_TYPES}
        self.int64 = [name for name, f in self.fields.items() if f.data_type == schema_pb2.Int64]
        self.query_schema = _query_schema(meta)

    def key(self, raw: Any) -> Any:
        """A path id (a string) or a body id as the primary key's type; ``None`` when it cannot be one."""
        if self.pk.data_type in _STRING:
            return raw if isinstance(raw, str) else (str(raw) if _is_true_int(raw) else None)
        if _is_true_int(raw):
            return raw
        if isinstance(raw, str) and raw.strip().lstrip("+-").isdigit():
            return int(raw)
        if isinstance(raw, float) and raw.is_integer():
            return int(raw)
        return None

    def vector_dim(self, field: str | None) -> int:
        """The dimension of the vector field a search names (the only one when it names none)."""
        if field is None:
            if len(self.vectors) != 1:
                raise BadRequest(f"name the vector field to search (field): one of {sorted(self.vectors)}")
            field = next(iter(self.vectors))
        if field not in self.vectors:
            raise BadRequest(f"field {field!r} is not a vector field of this collection")
        return field_dim(self.fields[field])

    def select(self, names: list[str] | None) -> tuple[list[str], list[str] | None]:
        """``(output fields for the proxy, names to keep in the answer or None for all fetched)``."""
        if names is None:
            out = [n for n in self.fields if n not in self.vectors]
            if self.dynamic:
                out.append(DYNAMIC_FIELD_NAME)
            return out, None
        problems = []
        out = [self.pk.name]
        for i, name in enumerate(names):
            if name in self.fields:
                if name not in out:
                    out.append(name)
            elif self.dynamic and not name.startswith("$"):
                if DYNAMIC_FIELD_NAME not in out:
                    out.append(DYNAMIC_FIELD_NAME)
            else:
                problems.append({"instancePath": f"/$select/{i}", "keyword": "enum",
                                 "params": {"allowedValues": list(self.fields)},
                                 "message": "must be equal to one of the allowed values"})
        if problems:
            raise BadRequest("validation failed", data=problems)
        return out, names

    def shape(self, records: list[dict[str, Any]], keep: list[str] | None) -> list[dict[str, Any]]:
        """Records as answered: ``$select`` applied (the key kept), vectors only when selected, int64 safe."""
        out = []
        for r in records:
            if keep is None:
                r = {k: v for k, v in r.items() if k not in self.vectors}
            else:
                r = select_fields(r, keep, self.pk.name)
            out.append(r)
        safe_ints(out, self.int64)
        return out

    def rows_in(self, rows: list[Any]) -> list[Any]:
        """Rows of a write with Int64 values given as decimal strings read as integers (int64 safety)."""
        for row in rows:
            if not isinstance(row, dict):
                continue
            for name in self.int64:
                v = row.get(name)
                if isinstance(v, str):
                    key = self.key(v)
                    if key is not None:
                        row[name] = key
        return rows


def safe_ints(records: Iterable[dict[str, Any]], names: Sequence[str]) -> None:
    """Int64 values beyond JavaScript's safe integers become decimal strings, in place."""
    if not names:
        return
    for r in records:
        for name in names:
            v = r.get(name)
            if type(v) is int and not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER:
                r[name] = str(v)


def plain_hits(srd: schema_pb2.SearchResultData) -> list[list[dict[str, Any]]]:
    """The REST hits (``{id, distance}``, one list per query) of a search without output fields, from
    its merged ``SearchResultData``; keys beyond JavaScript's safe integers as decimal strings."""
    str_ids = srd.ids.WhichOneof("id_field") == "str_id"
    ids: list[Any] = list(srd.ids.str_id.data if str_ids else srd.ids.int_id.data)
    if not str_ids and ids and (max(ids) > MAX_SAFE_INTEGER or min(ids) < -MAX_SAFE_INTEGER):
        ids = [v if -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER else str(v) for v in ids]
    scores = list(srd.scores)
    out = []
    first = 0
    for n in [*srd.topks, *[0] * (srd.num_queries - len(srd.topks))]:
        out.append([{"id": i, "distance": d} for i, d in zip(ids[first:first + n], scores[first:first + n])])
        first += n
    return out


class EntitiesService:
    """The entities of the collection named by the route (see the module doc).

    ``paginate`` ``{default, max}`` (``None``: finds answer plain arrays); ``multi`` (``True``, ``False`` or a list of create/patch/remove) as
    every Feathers adapter, overridable per call with ``params["adapter"]``; the caps are ``[http]``'s.

    ``_shapes`` (collection name -> the :class:`_Collection` of the proxy's kept description, rebuilt when the
    proxy hands out another) is owned by the app's event loop."""

    RIGHTS = {"find": "read", "get": "read", "search": "read", "count": "read",
              "create": "write", "update": "write", "patch": "write", "remove": "write"}
    METHODS = ["find", "get", "create", "update", "patch", "remove", "search", "count"]
    _ENTITY = {"type": "object", "description": "an entity: its fields by name (Int64 beyond 2^53 as strings), "
                                               "keys of the dynamic field beside them"}
    OPENAPI = {"tag": "Entities of a collection: a Feathers adapter with vector search and exact counts",
               "multi": ["create", "remove"], "docs": {
        "find": {"summary": "Query entities with the Feathers query syntax",
                 "result": {"type": "object", "required": ["total", "limit", "skip", "data"], "properties": {
                     "total": {"type": "integer"}, "limit": {"type": "integer"}, "skip": {"type": "integer"},
                     "data": {"type": "array", "items": _ENTITY}}},
                 "description": "Pages of {total, limit, skip, data} ($limit default 100, max 16384); $sort on "
                                "scalar fields and keys of the dynamic field; $select names output fields "
                                "(vectors only when named); "
                                "$consistency; the cursor form ?<pk>[$gt]=<last>&$sort[<pk>]=1 pages without limit."},
        "get": {"summary": "An entity by primary key", "result": _ENTITY},
        "create": {"summary": "Insert one entity or an array of entities (answers X-Vecgrid-Ts)",
                   "data": {"anyOf": [_ENTITY, {"type": "array", "items": _ENTITY}]},
                   "example": [{"id": 1, "vector": [0.1, 0.2, 0.3, 0.4], "color": "red"}],
                   "result": {"anyOf": [_ENTITY, {"type": "array", "items": _ENTITY}]}},
        "update": {"summary": "Replace an entity (upsert of the whole record)", "data": _ENTITY, "result": _ENTITY},
        "patch": {"summary": "Merge fields into an entity (read, merge, upsert)", "data": _ENTITY},
        "remove": {"summary": "Delete entities, answering them as they were"},
        "search": {"summary": "Vector search: one hit list per query, in query order", "errors": [404, 409],
                   "example": {"vectors": [[0.1, 0.2, 0.3, 0.4]], "limit": 3, "select": ["color"]},
                   "data": {"type": "object", "additionalProperties": False, "properties": {
                       "vectors": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
                       "vectors_b64": {"type": "string", "contentEncoding": "base64"},
                       "vector": {"type": "array", "items": {"type": "number"}},
                       "ids": {"type": "array", "items": {"type": ["integer", "string"]}},
                       "field": {"type": "string"}, "limit": {"type": "integer", "minimum": 1},
                       "offset": {"type": "integer", "minimum": 0}, "filter": {"type": "object"},
                       "select": {"type": "array", "items": {"type": "string"}},
                       "params": {"type": "object", "properties": {
                           "nprobe": {"type": "integer"}, "ef": {"type": "integer"},
                           "radius": {"type": "number"}, "rangeFilter": {"type": "number"}}},
                       "partitions": {"type": "array", "items": {"type": "string"}},
                       "groupBy": {"type": "string"}, "groupSize": {"type": "integer", "minimum": 1},
                       "consistency": {"enum": ["Strong", "Session", "Bounded", "Eventually"]}}},
                   "result": {"type": "array", "items": {"type": "array", "items": {
                       "type": "object", "required": ["id", "distance"],
                       "properties": {"id": {"type": ["integer", "string"]}, "distance": {"type": "number"}}}}}},
        "count": {"summary": "Exact count, or counts per distinct value of a scalar field", "errors": [409],
                  "example": {"filter": {"color": "red"}},
                  "data": {"type": "object", "additionalProperties": False, "properties": {
                      "filter": {"type": "object"}, "groupBy": {"type": "string"},
                      "partitions": {"type": "array", "items": {"type": "string"}},
                      "consistency": {"enum": ["Strong", "Session", "Bounded", "Eventually"]}}},
                  "result": {"type": "object", "required": ["count"], "properties": {
                      "count": {"type": "integer"}, "groups": {"type": "array", "items": {"type": "object"}}}}},
    }}

    def __init__(self, proxy: "Proxy", *, paginate: Mapping[str, int] | None = DEFAULT_PAGINATE,
                 multi: bool | Iterable[str] = ("create", "remove"), max_in_list: int = 16384,
                 max_nq: int = 16384, max_topk: int = 16384) -> None:
        self.proxy = proxy
        self.options = {"paginate": dict(paginate) if paginate else None,
                        "multi": multi if isinstance(multi, bool) else list(multi)}
        self.max_in_list = max_in_list
        self.max_nq = max_nq
        self.max_topk = max_topk
        self._shapes: dict[str, _Collection] = {}

    # -- the call's parts -----------------------------------------------------------------------

    async def _collection(self, params: Mapping[str, Any], *, fresh: bool = False) -> _Collection:
        name = (params.get("route") or {}).get("collection")
        if not name:
            raise BadRequest("the route names no collection")
        meta = await self.proxy.describe(name, fresh=fresh)
        coll = self._shapes.get(name)
        if coll is None or coll.meta is not meta:
            coll = self._shapes[name] = _Collection(meta)
        return coll

    async def _reading(self, params: Mapping[str, Any], read: Callable[[_Collection], Awaitable[Any]]) -> Any:
        """``read(collection)`` on the kept description; when it fails and a fresh description differs (the
        definition changed behind this app), once more on the fresh one (see the module doc)."""
        coll = await self._collection(params)
        try:
            return await read(coll)
        except (errors.MilvusError, FeathersError):
            fresh = await self._collection(params, fresh=True)
            if fresh.meta.pb == coll.meta.pb:
                raise
        return await read(fresh)

    def _option(self, params: Mapping[str, Any], name: str) -> Any:
        return {**self.options, **(params.get("adapter") or {})}.get(name)

    def _allows_multi(self, params: Mapping[str, Any], method: str) -> bool:
        multi = self._option(params, "multi")
        return multi if isinstance(multi, bool) else method in multi

    @staticmethod
    def _guarantee(params: Mapping[str, Any], consistency: Any = "Strong") -> int | None:
        """The read's explicit guarantee timestamp: ``X-Vecgrid-Guarantee-Ts`` under a level weaker than Strong.
        A Strong read sees every acknowledged write already (and waits for no time tick); taking the header as
        its guarantee would pin a find's snapshot at the client's own write, missing later ones."""
        raw = (params.get("headers") or {}).get(GUARANTEE_HEADER)
        if raw is None:
            return None
        text = str(raw).strip()
        if not text.isdigit():
            raise BadRequest(f"{GUARANTEE_HEADER} must be a write's X-Vecgrid-Ts (a decimal timestamp), got {raw!r}")
        if isinstance(consistency, str) and consistency.lower() == "strong":
            return None
        return int(text)

    @staticmethod
    def _wrote(params: dict[str, Any], timestamp: int) -> None:
        if timestamp:
            params.setdefault("response_headers", {})[TS_HEADER] = str(timestamp)

    def _filter(self, coll: _Collection, conditions: Mapping[str, Any], *, from_query_string: bool = True) -> Any:
        """The plan expression of ``conditions``; from a query string the dynamic keys' values are coerced
        (declared fields' values the query schema coerced already), from a JSON body they keep their types."""
        return compile_filter(conditions, coll.meta.schema, max_in=self.max_in_list,
                              coerce_strings=from_query_string)

    def _parse(self, coll: _Collection, params: Mapping[str, Any]) -> tuple[Any, dict[str, Any], list[str],
                                                                          list[str] | None, str]:
        """``(filters, conditions, output fields, kept names, consistency)`` of ``params.query``."""
        query = dict(params.get("query") or {})
        consistency = query.pop("$consistency", "Strong")
        select = query.pop("$select", None)
        filters, conditions = split_query(query, coll.query_schema)
        output, keep = coll.select(None if select is None else _as_names(select))
        return filters, conditions, output, keep, consistency

    def _by_key(self, coll: _Collection, id: Any, conditions: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        key = coll.key(id)
        if key is None:
            raise NotFound(f"No record found for id '{id}'")
        match = {coll.pk.name: key}
        return key, ({"$and": [match, dict(conditions)]} if conditions else match)

    async def _one(self, coll: _Collection, id: Any, conditions: Mapping[str, Any], output: list[str],
                   consistency: Any, guarantee: int | None) -> tuple[Any, dict[str, Any]]:
        key, cond = self._by_key(coll, id, conditions)
        _, rows = await self.proxy.find(coll.meta, filter=self._filter(coll, cond), output_fields=output,
                                        limit=1, consistency=consistency, guarantee_timestamp=guarantee,
                                        with_total=False)
        if not rows:
            raise NotFound(f"No record found for id '{id}'")
        return key, rows[0]

    async def _write(self, coll: _Collection, params: dict[str, Any], rows: list[dict[str, Any]], *,
                     upsert: bool) -> Any:
        """Insert or upsert ``rows``; a refused batch names its bad rows in ``errors`` (nothing is written)."""
        try:
            if upsert:
                done = await self.proxy.upsert(coll.meta.name, rows)
            else:
                done = await self.proxy.insert(coll.meta.name, rows)
        except (errors.ParameterInvalid, errors.ParameterMissing, errors.FieldNotFound) as e:
            refused = feathers_error(e)
            bad = await asyncio.to_thread(row_errors, rows, coll.meta.schema, upsert=upsert)
            if bad:
                refused.errors = [{"index": i, "message": why} for i, why in bad]
            raise refused from None
        self._wrote(params, done.timestamp)
        return done

    # -- the Feathers methods ---------------------------------------------------------------------

    async def find(self, params: dict[str, Any] | None = None) -> Any:
        params = params if params is not None else {}
        return await self._reading(params, lambda coll: self._find(coll, params))

    async def _find(self, coll: _Collection, params: dict[str, Any]) -> Any:
        filters, conditions, output, keep, consistency = self._parse(coll, params)
        paginate = params.get("paginate")
        paginate = self._option(params, "paginate") if paginate is None else (paginate or None)
        limit = page_limit(filters.limit, paginate)
        if limit is not None and filters.skip + limit > WINDOW:
            pk = coll.pk.name
            raise BadRequest(f"$skip + $limit ({filters.skip} + {limit}) is beyond {WINDOW}: page deeper with the "
                             f"cursor form ?{pk}[$gt]=<last {pk}>&$sort[{pk}]=1&$limit=N, which has no window "
                             "limit", data={"skip": filters.skip, "limit": limit, "max": WINDOW})
        total, rows = await self.proxy.find(
            coll.meta, filter=self._filter(coll, conditions), sort=filters.sort, offset=filters.skip,
            limit=limit, output_fields=output, consistency=consistency,
            guarantee_timestamp=self._guarantee(params, consistency), with_total=bool(paginate))
        data = coll.shape(rows, keep)
        if not paginate:
            return data
        return {"total": total, "limit": limit, "skip": filters.skip, "data": data}

    async def get(self, id: Any, params: dict[str, Any] | None = None) -> dict[str, Any]:
        params = params if params is not None else {}

        async def read(coll: _Collection) -> dict[str, Any]:
            _, conditions, output, keep, consistency = self._parse(coll, params)
            _, row = await self._one(coll, id, conditions, output, consistency, self._guarantee(params, consistency))
            return coll.shape([row], keep)[0]
        return await self._reading(params, read)

    async def create(self, data: Any, params: dict[str, Any] | None = None) -> Any:
        params = params if params is not None else {}
        if isinstance(data, list) and not self._allows_multi(params, "create"):
            raise MethodNotAllowed("Can not create multiple entries")
        coll = await self._collection(params, fresh=True)
        _, _, _, keep, _ = self._parse(coll, params)   # the query filters nothing on create; $select shapes
        items = data if isinstance(data, list) else [data]
        for item in items:
            if not isinstance(item, dict):
                raise BadRequest("Data must be an object")
        if not items:
            return []
        rows = coll.rows_in([dict(item) for item in items])
        done = await self._write(coll, params, rows, upsert=False)
        created = [{**row, coll.pk.name: key} for row, key in zip(rows, done.ids)]
        created = coll.shape(created, keep)
        return created if isinstance(data, list) else created[0]

    async def update(self, id: Any, data: Any, params: dict[str, Any] | None = None) -> dict[str, Any]:
        params = params if params is not None else {}
        if id is None or isinstance(data, list):
            raise BadRequest("You can not replace multiple instances. Did you mean 'patch'?")
        if not isinstance(data, dict):
            raise BadRequest("Data must be an object")
        coll = await self._collection(params, fresh=True)
        _, conditions, _, keep, _ = self._parse(coll, params)
        key, _ = await self._one(coll, id, conditions, [coll.pk.name], "Strong", None)
        row = coll.rows_in([{**data, coll.pk.name: key}])[0]
        await self._write(coll, params, [row], upsert=True)
        return coll.shape([row], keep)[0]

    async def patch(self, id: Any, data: Any, params: dict[str, Any] | None = None) -> Any:
        params = params if params is not None else {}
        if id is None and not self._allows_multi(params, "patch"):
            raise MethodNotAllowed("Can not patch multiple entries")
        if not isinstance(data, dict):
            raise BadRequest("Data must be an object")
        coll = await self._collection(params, fresh=True)
        _, conditions, _, keep, _ = self._parse(coll, params)
        changes = coll.rows_in([{k: v for k, v in data.items() if k != coll.pk.name}])[0]
        if id is None:   # $limit and pagination never limit a multi patch
            _, targets = await self.proxy.find(coll.meta, filter=self._filter(coll, conditions),
                                               output_fields=["*"], with_total=False)
        else:
            targets = [(await self._one(coll, id, conditions, ["*"], "Strong", None))[1]]
        patched = [{k: v for k, v in {**row, **changes}.items() if k != DYNAMIC_FIELD_NAME} for row in targets]
        if patched:
            await self._write(coll, params, patched, upsert=True)   # one upsert: one timestamp for all
        shaped = coll.shape(patched, keep)
        return shaped if id is None else shaped[0]

    async def remove(self, id: Any, params: dict[str, Any] | None = None) -> Any:
        params = params if params is not None else {}
        if id is None and not self._allows_multi(params, "remove"):
            raise MethodNotAllowed("Can not remove multiple entries")
        coll = await self._collection(params, fresh=True)
        _, conditions, output, keep, _ = self._parse(coll, params)
        if id is None:
            _, targets = await self.proxy.find(coll.meta, filter=self._filter(coll, conditions),
                                               output_fields=output, with_total=False)
        else:
            targets = [(await self._one(coll, id, conditions, output, "Strong", None))[1]]
        if targets:
            done = await self.proxy.delete(coll.meta.name, ids=[row[coll.pk.name] for row in targets])
            self._wrote(params, done.timestamp)
        shaped = coll.shape(targets, keep)
        return shaped if id is None else shaped[0]

    # -- custom methods ---------------------------------------------------------------------------

    async def search(self, data: Any, params: dict[str, Any] | None = None) -> list[list[dict[str, Any]]]:
        """One hit list per query, in query order (rest-api.md, entities ``search``)."""
        params = params if params is not None else {}
        body = _object(data, _SEARCH_KEYS, "search")
        return await self._reading(params, lambda coll: self._search(coll, body, params))

    async def _search(self, coll: _Collection, body: dict[str, Any],
                      params: dict[str, Any]) -> list[list[dict[str, Any]]]:
        given = [k for k in _QUERY_FORMS if body.get(k) is not None]
        if len(given) != 1:
            raise BadRequest("search takes exactly one of vectors (an array of vectors), vectors_b64 (base64 of "
                             "little-endian float32 values, query after query), vector (one vector) or ids "
                             f"(primary keys whose stored vectors to search with); got {given or 'none'}")
        limit = _integer(body.get("limit", 10), "limit", 1)
        offset = _integer(body.get("offset", 0), "offset", 0)
        if limit + offset > self.max_topk:
            raise BadRequest(f"limit + offset ({limit} + {offset}) must be at most {self.max_topk}")
        field = body.get("field")
        if field is not None and not isinstance(field, str):
            raise BadRequest("field names the vector field to search (a string)")
        consistency = body.get("consistency", "Strong")
        guarantee = self._guarantee(params, consistency)
        if "ids" in given:
            keys = body["ids"]
            if not isinstance(keys, list) or not keys:
                raise BadRequest("ids must be a non-empty array of primary keys")
            if len(keys) > self.max_nq:
                raise BadRequest(f"nq ({len(keys)}) must be at most {self.max_nq}")
            parsed = [coll.key(k) for k in keys]
            wrong = [k for k, p in zip(keys, parsed) if p is None]
            if wrong:
                raise BadRequest(f"ids: {wrong[:5]!r} are not primary keys of {coll.pk.name!r}")
            vectors, missing = await self.proxy.stored_vectors(coll.meta, parsed, anns_field=field,
                                                               consistency=consistency,
                                                               guarantee_timestamp=guarantee)
            if missing:
                raise NotFound(f"No record found for id '{missing[0]}'", data={"missing": missing[:100]})
        elif "vectors_b64" in given:
            vectors = _vectors_b64(body["vectors_b64"], coll.vector_dim(field), self.max_nq)
        else:
            vectors = _vectors(body["vectors"] if "vectors" in given else [body["vector"]], self.max_nq)
        select = body.get("select")
        if select is not None and (not isinstance(select, list) or not all(isinstance(s, str) for s in select)):
            raise BadRequest("select must be an array of field names")
        output, keep = coll.select(select) if select else ([], [])
        output = [n for n in output if n != coll.pk.name]
        conditions = self._body_filter(coll, body.get("filter"))
        search_params = _search_params(body.get("params"))
        group_by = _optional_str(body.get("groupBy"), "groupBy")
        group_size = _integer(body.get("groupSize", 1), "groupSize", 1)
        options = dict(limit=limit, filter=conditions, anns_field=field, search_params=search_params,
                       partition_names=_names(body.get("partitions"), "partitions"), consistency=consistency,
                       guarantee_timestamp=guarantee)
        if not output and plain_top_k(search_params, offset=offset, group_by=group_by):
            # the usual search: its hits read straight off the merged result, one dict each
            return plain_hits(await self.proxy.search_result(coll.meta, vectors, **options))
        hits = await self.proxy.search(coll.meta, vectors, offset=offset, output_fields=output, group_by=group_by,
                                       group_size=group_size, **options)
        names = [*coll.int64, "id"]
        out = []
        for per_query in hits:
            shaped = []
            for h in per_query:
                entity = h["entity"] if keep is None or not select else select_fields(h["entity"], keep, "")
                shaped.append({**entity, "id": h["id"], "distance": h["distance"]})
            safe_ints(shaped, names)
            out.append(shaped)
        return out

    async def count(self, data: Any, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """``{count}``, or ``{count, groups: [{<field>: value, count}]}`` with ``groupBy`` (most rows first)."""
        params = params if params is not None else {}
        body = _object(data if data is not None else {}, _COUNT_KEYS, "count")
        return await self._reading(params, lambda coll: self._count(coll, body, params))

    async def _count(self, coll: _Collection, body: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        conditions = self._body_filter(coll, body.get("filter"))
        consistency = body.get("consistency", "Strong")
        partitions = _names(body.get("partitions"), "partitions")
        guarantee = self._guarantee(params, consistency)
        group_by = _optional_str(body.get("groupBy"), "groupBy")
        if group_by is None:
            return {"count": await self.proxy.count(coll.meta, filter=conditions, partition_names=partitions,
                                                    consistency=consistency, guarantee_timestamp=guarantee)}
        groups = await self.proxy.count_groups(coll.meta, group_by, filter=conditions,
                                               partition_names=partitions, consistency=consistency,
                                               guarantee_timestamp=guarantee)
        rows = [{group_by: value, "count": n} for value, n in groups]
        if group_by in coll.int64:
            safe_ints(rows, [group_by])
        return {"count": sum(n for _, n in groups), "groups": rows}

    def _body_filter(self, coll: _Collection, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str):   # a Milvus expression: 'year > 2000 and tag in ["a", "b"]'
            return compile_expression(value, coll.meta.schema)
        if not isinstance(value, dict):
            raise BadRequest("filter must be a query object ({\"field\": value, \"$or\": [...]}) or a Milvus "
                             "expression string")
        filters, conditions = split_query(value, coll.query_schema)
        if filters.limit is not None or filters.skip or filters.sort or filters.select is not None:
            raise BadRequest("filter selects rows; $limit, $skip, $sort and $select do not belong in it")
        return self._filter(coll, conditions, from_query_string=False)


# -- body helpers ---------------------------------------------------------------------------------------

def _object(data: Any, allowed: set[str], method: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BadRequest(f"{method} takes an object")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise BadRequest(f"{method} does not know {', '.join(unknown)}; it takes {', '.join(sorted(allowed))}")
    return data


def _integer(value: Any, name: str, minimum: int) -> int:
    if not _is_true_int(value) or value < minimum:
        raise BadRequest(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _optional_str(value: Any, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"{name} names a field (a string), got {value!r}")
    return value


def _names(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest(f"{name} must be an array of names")
    return value


def _vectors(value: Any, max_nq: int) -> np.ndarray:
    """Query vectors as one float32 matrix (numpy reads the nested lists: no per-element Python)."""
    if not isinstance(value, list) or not value:
        raise BadRequest("vectors must be a non-empty array of vectors (arrays of numbers)")
    if len(value) > max_nq:
        raise BadRequest(f"nq ({len(value)}) must be at most {max_nq}")
    try:
        with np.errstate(over="ignore"):   # beyond float32 becomes Infinity, refused below
            xq = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise BadRequest("vectors must be arrays of numbers, all of one dimension") from None
    if xq.ndim != 2 or xq.shape[1] == 0:
        raise BadRequest(f"vectors must be an nq × dim array of numbers, got shape {list(xq.shape)}")
    if not np.isfinite(xq).all():
        raise BadRequest("vectors must not contain NaN or Infinity (or numbers beyond float32)")
    return xq


def _vectors_b64(value: Any, dim: int, max_nq: int) -> np.ndarray:
    """Query vectors sent as base64 of little-endian float32 values, ``dim`` per query: no JSON numbers
    to parse (a 100 × 128 query is 68 KB of base64 instead of ~150 KB of decimal text)."""
    if not isinstance(value, str) or not value:
        raise BadRequest("vectors_b64 must be a non-empty base64 string of little-endian float32 values")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest("vectors_b64 is not valid base64") from None
    if len(raw) % (4 * dim):
        raise BadRequest(f"vectors_b64 holds {len(raw)} bytes: not a whole number of {dim}-dimensional "
                         f"float32 vectors ({4 * dim} bytes each)")
    xq = np.frombuffer(raw, dtype="<f4").reshape(-1, dim)
    if len(xq) > max_nq:
        raise BadRequest(f"nq ({len(xq)}) must be at most {max_nq}")
    if not np.isfinite(xq).all():
        raise BadRequest("vectors must not contain NaN or Infinity (or numbers beyond float32)")
    return xq.astype(np.float32, copy=False)


def _search_params(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest("params must be an object ({nprobe, ef, radius, rangeFilter})")
    out = {}
    for key, v in value.items():
        if key not in _SEARCH_PARAMS:
            raise BadRequest(f"unknown search param {key!r}; known: {', '.join(sorted(_SEARCH_PARAMS))}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
            raise BadRequest(f"search param {key!r} must be a number, got {v!r}")
        out[_SEARCH_PARAMS[key]] = v
    return out


def mount(api: "Application", ctx: "RestContext") -> None:
    http = ctx.settings.http if ctx.settings is not None else None
    caps = {} if http is None else {"max_in_list": http.max_in_list, "max_nq": http.max_nq,
                                    "max_topk": http.max_topk}
    api.use(PATH, EntitiesService(ctx.proxy, **caps), {"methods": EntitiesService.METHODS})
    proxy = ctx.proxy

    def forget_definitions(context: "HookContext") -> None:
        if proxy is not None and context.path in DEFINITION_PATHS and context.method not in _READS:
            proxy.invalidate_collections()
    # after and error: a failed create may have written and undone, a failed drop released
    api.hooks({"after": {"all": [forget_definitions]}, "error": {"all": [forget_definitions]}})
