"""``VecgridClient``: the calls a pymilvus ``MilvusClient`` user reaches for, over vecgrid's REST API.

It is a thin layer over the Feathers client (:mod:`vecgrid.client.feathers`) and the services of
``rest-api.md``: ``collections`` (custom ``load``, ``release``, ``flush``, ``compact``, ``rename``) and
``collections/:collection/entities`` (custom ``search``, ``count``)::

    client = VecgridClient("http://localhost:19121")                # urllib; or transport="requests"
    client.create_collection("docs", dimension=128)                 # the quick form, loaded
    client.insert("docs", [{"id": i, "vector": v, "tag": i % 3} for i, v in enumerate(vectors)])
    hits = client.search("docs", vectors[:2], limit=5, filter={"tag": 1}, output_fields=["tag"])
    rows = client.query("docs", filter={"tag": {"$in": [0, 2]}}, output_fields=["tag"], limit=10)

Where it differs from pymilvus, on purpose: filters are Feathers queries (dicts such as
``{"age": {"$gt": 20}}``), never expression strings; ``search`` answers one list per query of
``{"id", "distance", "entity": {...}}``; ``query`` without ``limit`` pages through every match with
the cursor form (``<pk> > last``, sorted by the primary key), so it has no 16,384-row window.

Each operation is written once, as a generator of service calls (:class:`Call`); the blocking
client and :class:`AsyncVecgridClient` drive the same generators, so the two cannot drift apart.

Consistency: reads take pymilvus's ``consistency_level`` (``Strong``, ``Bounded``, ``Eventually``,
``Session``); with ``Session`` a read also sends the latest ``X-Vecgrid-Ts`` this client's writes were
answered with as ``X-Vecgrid-Guarantee-Ts``, so it sees them.

State: the primary-key name cache (``collection → field``) and the session timestamp are guarded by
one lock (the blocking client may be shared by threads).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Generator, Iterable, Mapping

from vecgrid.client.feathers import App, AsyncApp, rest
from vecgrid.common.feathers_errors import BadRequest, FeathersError, NotFound

COLLECTIONS = "collections"
ENTITIES = "collections/:collection/entities"
COLLECTION_METHODS = ("load", "release", "flush", "compact", "rename")
ENTITY_METHODS = ("search", "count")
# The entities service's largest page (rest-api.md: paginate {default: 100, max: 16384}).
MAX_PAGE = 16384
_ID_TYPES = {"int": "Int64", "int64": "Int64", "str": "VarChar", "string": "VarChar",
             "varchar": "VarChar"}
TS_HEADER = "X-Vecgrid-Ts"
GUARANTEE_HEADER = "X-Vecgrid-Guarantee-Ts"
_PRIMARY_FLAGS = ("isPrimary", "isPrimaryKey", "primaryKey", "is_primary", "primary")


@dataclass
class Call:
    """One service call an operation needs; the driver runs it and sends back the answer."""

    path: str
    method: str
    id: Any = None
    data: Any = None
    params: dict = field(default_factory=dict)


Operation = Generator[Call, Any, Any]


def _connection(timeout: float | None) -> dict:
    return {} if timeout is None else {"timeout": timeout}


def _page_records(result: Any) -> list:
    if isinstance(result, dict) and isinstance(result.get("data"), list):
        return result["data"]
    if isinstance(result, list):
        return result
    raise BadRequest(f"expected a list or a page of records, got {type(result).__name__}")


def _as_rows(data: Any) -> list[dict]:
    rows = [data] if isinstance(data, Mapping) else list(data)
    if not all(isinstance(row, Mapping) for row in rows):
        raise TypeError("data must be a dict or a list of dicts (one per entity)")
    return [dict(row) for row in rows]


def _as_ids(ids: Any) -> list:
    if isinstance(ids, (str, bytes, int)) or not isinstance(ids, Iterable):
        return [ids]
    tolist = getattr(ids, "tolist", None)
    return list(tolist()) if callable(tolist) else list(ids)


def _as_filter(filter: Any) -> dict:  # noqa: A002 - pymilvus's name
    if filter is None or filter == "":
        return {}
    if isinstance(filter, str):
        raise TypeError("vecgrid filters are Feathers queries (dicts such as {'age': {'$gt': 20}}), "
                        "not expression strings")
    if not isinstance(filter, Mapping):
        raise TypeError("filter must be a dict (a Feathers query)")
    return dict(filter)


def _and(where: dict, extra: dict) -> dict:
    return {"$and": [where, extra]} if where else extra


def _as_vectors(data: Any) -> list:
    """A list of vectors; one flat vector (list or 1-D array) counts as a batch of one."""
    ndim = getattr(data, "ndim", None)
    if ndim == 1:
        return [data]
    if ndim == 2:
        return data  # the JSON encoder turns the whole array into lists in one call
    data = list(data)
    if data and isinstance(data[0], (int, float)):
        return [data]
    return data


def _search_params(search_params: Mapping[str, Any] | None) -> dict:
    """pymilvus's ``{"metric_type", "params": {nprobe, ef, radius, range_filter}}`` as vecgrid's ``params``.

    ``metric_type`` is left out: the collection's index decides the metric.
    """
    if not search_params:
        return {}
    merged = {k: v for k, v in search_params.items() if k not in ("params", "metric_type")}
    merged.update(search_params.get("params") or {})
    renamed = {"range_filter": "rangeFilter"}
    return {renamed.get(k, k): v for k, v in merged.items()}


def _pymilvus_hit(hit: Any) -> Any:
    if not isinstance(hit, dict):
        return hit
    entity = {k: v for k, v in hit.items() if k not in ("id", "distance")}
    return {"id": hit.get("id"), "distance": hit.get("distance"), "entity": entity}


def primary_field(description: Any) -> str | None:
    """The primary key's name in a ``collections.get`` answer (its ``schema.fields`` or ``fields``)."""
    if not isinstance(description, dict):
        return None
    schema = description.get("schema") if isinstance(description.get("schema"), dict) else description
    for key in ("primaryField", "primaryKey"):
        if isinstance(schema.get(key), str):
            return schema[key]
    for entry in schema.get("fields") or []:
        if isinstance(entry, dict) and any(entry.get(flag) is True for flag in _PRIMARY_FLAGS):
            return entry.get("name")
    return None


class _Operations:
    """The operations as generators of :class:`Call`; the drivers are the subclasses."""

    def __init__(self) -> None:
        self._primary: dict[str, str] = {}
        self._session_ts = 0  # the latest X-Vecgrid-Ts of this client's writes
        self._lock = threading.Lock()

    # -- helpers ---------------------------------------------------------------------------
    def _remember_primary(self, collection: str, name: str | None) -> None:
        with self._lock:
            if name is None:
                self._primary.pop(collection, None)
            else:
                self._primary[collection] = name

    def _primary_key(self, collection: str, timeout: float | None) -> Operation:
        with self._lock:
            known = self._primary.get(collection)
        if known is not None:
            return known
        description = yield Call(COLLECTIONS, "get", id=collection,
                                 params={"connection": _connection(timeout)})
        name = primary_field(description)
        if name is None:
            raise BadRequest(f"cannot tell the primary key of {collection!r} from its description")
        self._remember_primary(collection, name)
        return name

    def _entities(self, collection: str, query: dict | None = None, timeout: float | None = None, *,
                  consistency: str | None = None, write: bool = False) -> dict:
        """Params of an entities call; a write collects its answer's headers, a Session read
        sends the latest write's timestamp as its guarantee (rest-api.md "Consistency")."""
        params: dict[str, Any] = {"route": {"collection": collection},
                                  "connection": _connection(timeout)}
        if query:
            params["query"] = query
        if write:
            params["response_headers"] = {}
        if isinstance(consistency, str) and consistency.lower() == "session":
            with self._lock:
                session_ts = self._session_ts
            if session_ts:
                params["headers"] = {GUARANTEE_HEADER: str(session_ts)}
        return params

    def _wrote(self, params: dict) -> None:
        written = (params.get("response_headers") or {}).get(TS_HEADER.lower())
        if written is not None and str(written).isdigit():
            with self._lock:
                self._session_ts = max(self._session_ts, int(written))

    # -- collections -----------------------------------------------------------------------
    def _op_create_collection(self, collection_name: str, dimension: int | None = None, *,
                              primary_field_name: str | None = None, id_type: str | None = None,
                              vector_field_name: str | None = None, metric_type: str | None = None,
                              auto_id: bool | None = None, max_length: int | None = None,
                              schema: Mapping[str, Any] | None = None, index_params: Any = None,
                              num_shards: int | None = None, consistency_level: str | None = None,
                              description: str | None = None, properties: Mapping[str, Any] | None = None,
                              load: bool | None = None, timeout: float | None = None,
                              **extra: Any) -> Operation:
        body: dict[str, Any] = {"name": collection_name}
        common = {"shards": num_shards, "consistencyLevel": consistency_level,
                  "description": description, "properties": properties}
        body.update({k: v for k, v in common.items() if v is not None})
        if schema is not None:
            if dimension is not None:
                raise TypeError("give either dimension (the quick form) or schema, not both")
            body["schema"] = dict(schema)
            primary = primary_field({"schema": body["schema"]})
        else:
            if dimension is None:
                raise TypeError("create_collection needs dimension (the quick form) or schema")
            body["dimension"] = int(dimension)
            if metric_type is not None:
                body["metric"] = metric_type
            if id_type is not None:
                if str(id_type).lower() not in _ID_TYPES:
                    raise ValueError(f"id_type must be one of {sorted(_ID_TYPES)}")
                body["idType"] = _ID_TYPES[str(id_type).lower()]
            if auto_id is not None:
                body["autoId"] = bool(auto_id)
            quick = {"primaryField": primary_field_name, "vectorField": vector_field_name,
                     "maxLength": max_length}
            body.update({k: v for k, v in quick.items() if v is not None})
            primary = primary_field_name or "id"  # the quick form's primary key (rest-api.md)
            if load is None:
                load = True  # pymilvus's quick setup answers a loaded collection
        if index_params is not None:
            body["indexes"] = index_params
        if load is not None:
            body["load"] = bool(load)
        body.update(extra)
        result = yield Call(COLLECTIONS, "create", data=body,
                            params={"connection": _connection(timeout)})
        self._remember_primary(collection_name, primary)
        if load:
            # create answers while the load is under way; pymilvus's answers once it is loaded.
            result = yield Call(COLLECTIONS, "load", data={"name": collection_name, "wait": True},
                                params={"connection": _connection(timeout)})
        return result

    def _op_drop_collection(self, collection_name: str, timeout: float | None = None) -> Operation:
        try:
            return (yield Call(COLLECTIONS, "remove", id=collection_name,
                               params={"connection": _connection(timeout)}))
        finally:
            self._remember_primary(collection_name, None)

    def _op_has_collection(self, collection_name: str, timeout: float | None = None) -> Operation:
        try:
            yield Call(COLLECTIONS, "get", id=collection_name,
                       params={"connection": _connection(timeout)})
        except NotFound:
            return False
        return True

    def _op_describe_collection(self, collection_name: str, timeout: float | None = None) -> Operation:
        description = yield Call(COLLECTIONS, "get", id=collection_name,
                                 params={"connection": _connection(timeout)})
        primary = primary_field(description)
        if primary is not None:
            self._remember_primary(collection_name, primary)
        return description

    def _op_list_collections(self, timeout: float | None = None) -> Operation:
        names: list[str] = []
        while True:
            query = {"$skip": len(names)} if names else {}
            result = yield Call(COLLECTIONS, "find", params={"query": query,
                                                             "connection": _connection(timeout)})
            page = _page_records(result)
            names.extend(entry["name"] if isinstance(entry, dict) else entry for entry in page)
            if not isinstance(result, dict) or not page or len(names) >= int(result.get("total", 0)):
                return names

    def _op_load_collection(self, collection_name: str, replica_number: int | None = None, *,
                            resource_groups: list[str] | None = None,
                            partition_names: list[str] | None = None, wait: bool = True,
                            timeout: float | None = None, **extra: Any) -> Operation:
        body: dict[str, Any] = {"name": collection_name, "wait": wait}
        if replica_number is not None:
            body["replicas"] = int(replica_number)
        if resource_groups is not None:
            body["resourceGroups"] = list(resource_groups)
        if partition_names is not None:
            body["partitions"] = list(partition_names)
        body.update(extra)
        return (yield Call(COLLECTIONS, "load", data=body, params={"connection": _connection(timeout)}))

    def _op_release_collection(self, collection_name: str, *, partition_names: list[str] | None = None,
                               timeout: float | None = None) -> Operation:
        body: dict[str, Any] = {"name": collection_name}
        if partition_names is not None:
            body["partitions"] = list(partition_names)
        return (yield Call(COLLECTIONS, "release", data=body, params={"connection": _connection(timeout)}))

    def _op_flush(self, collection_name: str, *, wait: bool = True,
                  timeout: float | None = None) -> Operation:
        return (yield Call(COLLECTIONS, "flush", data={"name": collection_name, "wait": wait},
                           params={"connection": _connection(timeout)}))

    def _op_compact(self, collection_name: str, timeout: float | None = None) -> Operation:
        return (yield Call(COLLECTIONS, "compact", data={"name": collection_name},
                           params={"connection": _connection(timeout)}))

    def _op_rename_collection(self, old_name: str, new_name: str,
                              timeout: float | None = None) -> Operation:
        try:
            return (yield Call(COLLECTIONS, "rename", data={"name": old_name, "newName": new_name},
                               params={"connection": _connection(timeout)}))
        finally:
            self._remember_primary(old_name, None)

    # -- entities --------------------------------------------------------------------------
    def _op_insert(self, collection_name: str, data: Any, timeout: float | None = None) -> Operation:
        rows = _as_rows(data)
        pk = yield from self._primary_key(collection_name, timeout)
        params = self._entities(collection_name, {"$select": [pk]}, timeout, write=True)
        created = yield Call(ENTITIES, "create", data=rows, params=params)
        self._wrote(params)
        created = created if isinstance(created, list) else [created]
        return {"insert_count": len(created), "ids": [record.get(pk) for record in created]}

    def _op_upsert(self, collection_name: str, data: Any, timeout: float | None = None) -> Operation:
        rows = _as_rows(data)
        pk = yield from self._primary_key(collection_name, timeout)
        missing = [index for index, row in enumerate(rows) if row.get(pk) is None]
        if missing:
            raise BadRequest(f"upsert needs the primary key {pk!r} in every row", data={"rows": missing})
        for row in rows:  # update(pk) is the service's upsert; Feathers has no multi update
            params = self._entities(collection_name, {"$select": [pk]}, timeout, write=True)
            yield Call(ENTITIES, "update", id=row[pk], data=row, params=params)
            self._wrote(params)
        return {"upsert_count": len(rows)}

    def _op_delete(self, collection_name: str, ids: Any = None, filter: Any = None,  # noqa: A002
                   timeout: float | None = None) -> Operation:
        where = _as_filter(filter)
        if ids is None and not where:
            raise TypeError("delete needs ids or a non-empty filter (an empty one would remove everything)")
        pk = yield from self._primary_key(collection_name, timeout)
        if ids is not None:
            where = _and(where, {pk: {"$in": _as_ids(ids)}})
        params = self._entities(collection_name, {**where, "$select": [pk]}, timeout, write=True)
        removed = yield Call(ENTITIES, "remove", id=None, params=params)
        self._wrote(params)
        removed = removed if isinstance(removed, list) else [removed]
        return {"delete_count": len(removed), "ids": [record.get(pk) for record in removed]}

    def _op_get(self, collection_name: str, ids: Any, output_fields: list[str] | None = None, *,
                consistency_level: str | None = None, timeout: float | None = None) -> Operation:
        wanted = _as_ids(ids)
        if not wanted:
            return []
        pk = yield from self._primary_key(collection_name, timeout)
        query: dict[str, Any] = {pk: {"$in": wanted}, "$limit": len(wanted)}
        if output_fields and output_fields != ["*"]:
            query["$select"] = list(output_fields)
        if consistency_level is not None:
            query["$consistency"] = consistency_level
        found = yield Call(ENTITIES, "find", params=self._entities(collection_name, query, timeout,
                                                                   consistency=consistency_level))
        return _page_records(found)

    def _op_query(self, collection_name: str, filter: Any = None,  # noqa: A002
                  output_fields: list[str] | None = None, *, ids: Any = None, limit: int | None = None,
                  offset: int | None = None, sort: Mapping[str, int] | None = None,
                  consistency_level: str | None = None, timeout: float | None = None) -> Operation:
        where = _as_filter(filter)
        shaping: dict[str, Any] = {}
        if output_fields and output_fields != ["*"]:
            shaping["$select"] = list(output_fields)
        if consistency_level is not None:
            shaping["$consistency"] = consistency_level
        needs_pk = ids is not None or (limit is None and sort is None and offset is None)
        pk = (yield from self._primary_key(collection_name, timeout)) if needs_pk else None
        if ids is not None:
            where = _and(where, {pk: {"$in": _as_ids(ids)}})
        if limit is not None or sort is not None or offset is not None:
            query = {**where, **shaping, "$limit": MAX_PAGE if limit is None else int(limit)}
            if sort is not None:
                query["$sort"] = dict(sort)
            if offset:
                query["$skip"] = int(offset)
            found = yield Call(ENTITIES, "find", params=self._entities(
                collection_name, query, timeout, consistency=consistency_level))
            return _page_records(found)
        # Every match: the cursor form (rest-api.md), which has no offset window.
        rows: list = []
        after: Any = None
        while True:
            page_where = where if after is None else _and(where, {pk: {"$gt": after}})
            query = {**page_where, **shaping, "$sort": {pk: 1}, "$limit": MAX_PAGE}
            found = yield Call(ENTITIES, "find", params=self._entities(
                collection_name, query, timeout, consistency=consistency_level))
            page = _page_records(found)
            rows.extend(page)
            page_limit = int(found.get("limit", MAX_PAGE)) if isinstance(found, dict) else MAX_PAGE
            if not page or len(page) < page_limit:
                return rows
            after = page[-1][pk]

    def _op_search(self, collection_name: str, data: Any = None, filter: Any = None,  # noqa: A002
                   limit: int = 10, output_fields: list[str] | None = None,
                   search_params: Mapping[str, Any] | None = None, *, ids: Any = None,
                   anns_field: str | None = None, partition_names: list[str] | None = None,
                   offset: int | None = None, group_by_field: str | None = None,
                   group_size: int | None = None, consistency_level: str | None = None,
                   timeout: float | None = None) -> Operation:
        if (data is None) == (ids is None):
            raise TypeError("search needs query vectors (data) or stored ids (ids), one of the two")
        body: dict[str, Any] = {"limit": int(limit)}
        if data is not None:
            body["vectors"] = _as_vectors(data)
        else:
            body["ids"] = _as_ids(ids)
        where = _as_filter(filter)
        if where:
            body["filter"] = where
        if output_fields:
            body["select"] = list(output_fields)
        params = _search_params(search_params)
        if params:
            body["params"] = params
        optional = {"field": anns_field, "partitions": partition_names, "offset": offset,
                    "groupBy": group_by_field, "groupSize": group_size,
                    "consistency": consistency_level}
        body.update({k: v for k, v in optional.items() if v is not None})
        hits = yield Call(ENTITIES, "search", data=body, params=self._entities(
            collection_name, timeout=timeout, consistency=consistency_level))
        return [[_pymilvus_hit(hit) for hit in per_query] for per_query in hits]

    def _op_count(self, collection_name: str, filter: Any = None, *,  # noqa: A002
                  group_by_field: str | None = None, partition_names: list[str] | None = None,
                  consistency_level: str | None = None, timeout: float | None = None) -> Operation:
        body: dict[str, Any] = {}
        where = _as_filter(filter)
        if where:
            body["filter"] = where
        optional = {"groupBy": group_by_field, "partitions": partition_names,
                    "consistency": consistency_level}
        body.update({k: v for k, v in optional.items() if v is not None})
        return (yield Call(ENTITIES, "count", data=body, params=self._entities(
            collection_name, timeout=timeout, consistency=consistency_level)))


def _declare_services(app: Any) -> None:
    app.service(COLLECTIONS, methods=COLLECTION_METHODS)
    app.service(ENTITIES, methods=ENTITY_METHODS)


def _transport_app(uri: str, transport: Any, headers: dict) -> App:
    if isinstance(transport, App):
        return transport
    if transport in (None, "urllib"):
        return rest(uri).urllib(headers=headers)
    if transport == "requests":
        return rest(uri).requests(headers=headers)
    if transport == "httpx":
        return rest(uri).httpx(headers=headers)
    kind = f"{type(transport).__module__}.{type(transport).__name__}"
    if kind.startswith("requests."):
        return rest(uri).requests(transport, headers=headers)
    if kind.startswith("httpx."):
        app = rest(uri).httpx(transport, headers=headers)
        if isinstance(app, AsyncApp):
            raise TypeError("an httpx.AsyncClient goes with AsyncVecgridClient")
        return app
    raise TypeError("transport must be 'urllib', 'requests', 'httpx', a requests.Session, "
                    "an httpx.Client or a vecgrid.client App")


def _headers(token: str | None) -> dict:
    return {"Authorization": f"Bearer {token}"} if token else {}


class VecgridClient(_Operations):
    """A blocking client shaped like pymilvus's ``MilvusClient``.

    ``transport``: ``"urllib"`` (default, standard library), ``"requests"``, ``"httpx"``, a
    ``requests.Session``, an ``httpx.Client``, or a configured :class:`~vecgrid.client.App`.
    ``token`` is sent as ``Authorization: Bearer``; ``user`` and ``password`` log in with the local
    strategy at once (``user`` is the account's email). ``timeout`` (seconds) is the default of
    every call; each method also takes ``timeout=``.
    """

    def __init__(self, uri: str = "http://localhost:19121", *, transport: Any = None,
                 token: str | None = None, user: str | None = None, password: str | None = None,
                 timeout: float | None = None) -> None:
        super().__init__()
        self.app = _transport_app(uri, transport, _headers(token))
        self.timeout = timeout
        _declare_services(self.app)
        if user is not None:
            self.app.authenticate({"strategy": "local", "email": user, "password": password})

    def _run(self, operation: Operation) -> Any:
        try:
            call = next(operation)
            while True:
                params = dict(call.params)
                if self.timeout is not None and not params.get("connection"):
                    params["connection"] = {"timeout": self.timeout}
                try:
                    result = self._send(call, params)
                except FeathersError as error:
                    call = operation.throw(error)
                else:
                    call = operation.send(result)
        except StopIteration as done:
            return done.value

    def _send(self, call: Call, params: dict) -> Any:
        service = self.app.service(call.path)
        if call.method == "find":
            return service.find(params)
        if call.method == "get":
            return service.get(call.id, params)
        if call.method in ("update", "patch"):
            return getattr(service, call.method)(call.id, call.data, params)
        if call.method == "remove":
            return service.remove(call.id, params)
        return getattr(service, call.method)(call.data, params)  # create and custom methods

    def close(self) -> None:
        self.app.close()

    def __enter__(self) -> "VecgridClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def create_collection(self, collection_name: str, dimension: int | None = None, **kwargs: Any) -> Any:
        """Quick form ``(name, dimension, metric_type=, id_type="int"|"str", auto_id=,
        primary_field_name=, vector_field_name=, max_length=)``, loaded unless ``load=False``; or
        ``schema=`` (the collections service's schema JSON). Both take ``index_params`` (a list of
        ``{field, type, metric, params}``), ``num_shards``, ``consistency_level``, ``description``,
        ``properties``; other keywords go to the body as they are."""
        return self._run(self._op_create_collection(collection_name, dimension, **kwargs))

    def drop_collection(self, collection_name: str, **kwargs: Any) -> Any:
        return self._run(self._op_drop_collection(collection_name, **kwargs))

    def has_collection(self, collection_name: str, **kwargs: Any) -> bool:
        return self._run(self._op_has_collection(collection_name, **kwargs))

    def describe_collection(self, collection_name: str, **kwargs: Any) -> dict:
        return self._run(self._op_describe_collection(collection_name, **kwargs))

    def list_collections(self, **kwargs: Any) -> list[str]:
        return self._run(self._op_list_collections(**kwargs))

    def load_collection(self, collection_name: str, replica_number: int | None = None, **kwargs: Any) -> Any:
        """Waits until loaded (``wait=False`` to return at once), as pymilvus does."""
        return self._run(self._op_load_collection(collection_name, replica_number, **kwargs))

    def release_collection(self, collection_name: str, **kwargs: Any) -> Any:
        return self._run(self._op_release_collection(collection_name, **kwargs))

    def flush(self, collection_name: str, **kwargs: Any) -> Any:
        return self._run(self._op_flush(collection_name, **kwargs))

    def compact(self, collection_name: str, **kwargs: Any) -> Any:
        return self._run(self._op_compact(collection_name, **kwargs))

    def rename_collection(self, old_name: str, new_name: str, **kwargs: Any) -> Any:
        return self._run(self._op_rename_collection(old_name, new_name, **kwargs))

    def insert(self, collection_name: str, data: Any, **kwargs: Any) -> dict:
        """``{"insert_count", "ids"}``; vectors may be lists or numpy arrays."""
        return self._run(self._op_insert(collection_name, data, **kwargs))

    def upsert(self, collection_name: str, data: Any, **kwargs: Any) -> dict:
        """``{"upsert_count"}``: one full upsert (``update``) per row, each row with its primary key."""
        return self._run(self._op_upsert(collection_name, data, **kwargs))

    def delete(self, collection_name: str, ids: Any = None, filter: Any = None, **kwargs: Any) -> dict:  # noqa: A002
        """``{"delete_count", "ids"}`` of the entities removed by ids and/or a Feathers filter."""
        return self._run(self._op_delete(collection_name, ids, filter, **kwargs))

    def get(self, collection_name: str, ids: Any, output_fields: list[str] | None = None, **kwargs: Any) -> list:
        return self._run(self._op_get(collection_name, ids, output_fields, **kwargs))

    def query(self, collection_name: str, filter: Any = None,  # noqa: A002
              output_fields: list[str] | None = None, **kwargs: Any) -> list:
        return self._run(self._op_query(collection_name, filter, output_fields, **kwargs))

    def search(self, collection_name: str, data: Any = None, filter: Any = None,  # noqa: A002
               limit: int = 10, output_fields: list[str] | None = None,
               search_params: Mapping[str, Any] | None = None, **kwargs: Any) -> list[list[dict]]:
        return self._run(self._op_search(collection_name, data, filter, limit, output_fields,
                                         search_params, **kwargs))

    def count(self, collection_name: str, filter: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        return self._run(self._op_count(collection_name, filter, **kwargs))


class AsyncVecgridClient(_Operations):
    """:class:`VecgridClient` over an ``httpx.AsyncClient``: every method is a coroutine.

    With ``user``/``password`` the login happens before the first call. State (the pending login,
    the primary-key cache) belongs to the event loop that awaits the client.
    """

    def __init__(self, uri: str, client: Any = None, *, token: str | None = None,
                 user: str | None = None, password: str | None = None,
                 timeout: float | None = None) -> None:
        super().__init__()
        import httpx

        if isinstance(client, AsyncApp):
            self.app = client
        else:
            made = client is None
            client = httpx.AsyncClient() if made else client
            if not isinstance(client, httpx.AsyncClient):
                raise TypeError("AsyncVecgridClient takes an httpx.AsyncClient or an AsyncApp")
            self.app = rest(uri).httpx(client, headers=_headers(token))
            self.app.transport.owned = made  # close() closes only a client made here
        self.timeout = timeout
        self._login = {"strategy": "local", "email": user, "password": password} if user else None
        _declare_services(self.app)

    async def _run(self, operation: Operation) -> Any:
        if self._login is not None:
            login, self._login = self._login, None
            await self.app.authenticate(login)
        try:
            call = next(operation)
            while True:
                params = dict(call.params)
                if self.timeout is not None and not params.get("connection"):
                    params["connection"] = {"timeout": self.timeout}
                try:
                    result = await self._send(call, params)
                except FeathersError as error:
                    call = operation.throw(error)
                else:
                    call = operation.send(result)
        except StopIteration as done:
            return done.value

    async def _send(self, call: Call, params: dict) -> Any:
        service = self.app.service(call.path)
        if call.method == "find":
            return await service.find(params)
        if call.method == "get":
            return await service.get(call.id, params)
        if call.method in ("update", "patch"):
            return await getattr(service, call.method)(call.id, call.data, params)
        if call.method == "remove":
            return await service.remove(call.id, params)
        return await getattr(service, call.method)(call.data, params)

    async def close(self) -> None:
        await self.app.aclose()

    async def __aenter__(self) -> "AsyncVecgridClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def create_collection(self, collection_name: str, dimension: int | None = None, **kwargs: Any) -> Any:
        return await self._run(self._op_create_collection(collection_name, dimension, **kwargs))

    async def drop_collection(self, collection_name: str, **kwargs: Any) -> Any:
        return await self._run(self._op_drop_collection(collection_name, **kwargs))

    async def has_collection(self, collection_name: str, **kwargs: Any) -> bool:
        return await self._run(self._op_has_collection(collection_name, **kwargs))

    async def describe_collection(self, collection_name: str, **kwargs: Any) -> dict:
        return await self._run(self._op_describe_collection(collection_name, **kwargs))

    async def list_collections(self, **kwargs: Any) -> list[str]:
        return await self._run(self._op_list_collections(**kwargs))

    async def load_collection(self, collection_name: str, replica_number: int | None = None, **kwargs: Any) -> Any:
        return await self._run(self._op_load_collection(collection_name, replica_number, **kwargs))

    async def release_collection(self, collection_name: str, **kwargs: Any) -> Any:
        return await self._run(self._op_release_collection(collection_name, **kwargs))

    async def flush(self, collection_name: str, **kwargs: Any) -> Any:
        return await self._run(self._op_flush(collection_name, **kwargs))

    async def compact(self, collection_name: str, **kwargs: Any) -> Any:
        return await self._run(self._op_compact(collection_name, **kwargs))

    async def rename_collection(self, old_name: str, new_name: str, **kwargs: Any) -> Any:
        return await self._run(self._op_rename_collection(old_name, new_name, **kwargs))

    async def insert(self, collection_name: str, data: Any, **kwargs: Any) -> dict:
        return await self._run(self._op_insert(collection_name, data, **kwargs))

    async def upsert(self, collection_name: str, data: Any, **kwargs: Any) -> dict:
        return await self._run(self._op_upsert(collection_name, data, **kwargs))

    async def delete(self, collection_name: str, ids: Any = None, filter: Any = None, **kwargs: Any) -> dict:  # noqa: A002
        return await self._run(self._op_delete(collection_name, ids, filter, **kwargs))

    async def get(self, collection_name: str, ids: Any, output_fields: list[str] | None = None, **kwargs: Any) -> list:
        return await self._run(self._op_get(collection_name, ids, output_fields, **kwargs))

    async def query(self, collection_name: str, filter: Any = None,  # noqa: A002
                    output_fields: list[str] | None = None, **kwargs: Any) -> list:
        return await self._run(self._op_query(collection_name, filter, output_fields, **kwargs))

    async def search(self, collection_name: str, data: Any = None, filter: Any = None,  # noqa: A002
                     limit: int = 10, output_fields: list[str] | None = None,
                     search_params: Mapping[str, Any] | None = None, **kwargs: Any) -> list[list[dict]]:
        return await self._run(self._op_search(collection_name, data, filter, limit, output_fields,
                                               search_params, **kwargs))

    async def count(self, collection_name: str, filter: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        return await self._run(self._op_count(collection_name, filter, **kwargs))
