"""``collections``: list, describe, create (full schema or pymilvus's quick form), alter, drop, and the
custom ``load``, ``release``, ``flush``, ``compact``, ``rename`` (``rest-api.md``, data plane).

Each method decodes the body (a 400 naming every bad key before anything is called), makes one call
of the catalog, the coordinator's :class:`~vecgrid.cluster.querycoord.ddl.Ddl` or the proxy, and
encodes the answer.  A collection is named by its name (the path id and the custom methods' ``name``),
in the default database.

Progress of long work (issue 16): ``flush`` and ``compact`` with ``wait: false`` answer at once with the
job's ``flushId`` / ``compactionId``, ``state`` (Executing, Completed, Failed) and ``progress`` (%); the
collection's ``get`` lists its recent ``flushes`` and ``compactions`` (newest first, the same fields),
and each of its ``indexes`` has ``totalRows``, ``indexedRows``, ``pendingRows``, ``state`` and ``progress``
(Milvus's DescribeIndex ``indexed_rows`` / ``total_rows`` / ``pending_index_rows``).

``rowCount`` is exact (a Strong ``count(*)``, deletes applied) for a collection loaded to 100 %; for
any other it is Milvus's ``GetCollectionStatistics`` ``row_count``: the rows of its flushed segments
plus the rows logged and not flushed yet, deletes not subtracted (the coordinator's
:meth:`~vecgrid.cluster.querycoord.coordinator.QueryCoord.row_count`).  If the count of a loaded
collection fails, that row count is given and ``rowCountError`` says why.
"""

from __future__ import annotations

import asyncio
from typing import Any

from vecgrid import errors
from vecgrid.cluster.querycoord import ddl
from vecgrid.cluster.querycoord.ddl import LOADED, NOT_LOAD, IndexRequest, LoadOptions, load_state, wait_loaded
from vecgrid.cluster.querycoord.job.jobs import LoadRequest
from vecgrid.common.feathers_errors import BadRequest, Conflict
from vecgrid.http.services.collection_common import (READ, WRITE, body, check_keys, describe, index_json,
                                                     json_int, load_json, positive_int, schema_from_json,
                                                     schema_to_json, string_list)
from vecgrid.http.services.doc_schemas import (CONSISTENCY, INDEX, INDEX_RECORD, INT64, LOAD_STATE, NAME, NAMES,
                                               POSITIVE, SCHEMA, answer, obj)
from vecgrid.proto import common_pb2, query_coord_pb2, schema_pb2
from vecgrid.storage.catalog import CollectionInfo
from vecgrid.storage.catalog.schema_rules import DEFAULT_DB_NAME, normalize_properties

DEFAULT_LOAD_WAIT_S = 300.0
#: jobs of each kind shown by a collection's ``get``
SHOWN_JOBS = 5
QUICK_MAX_LENGTH = 65_535

_CREATE_KEYS = {"name": str, "schema": dict, "dimension": int, "metric": str, "idType": str, "autoId": bool,
                "primaryField": str, "vectorField": str, "maxLength": int, "indexes": list, "shards": int,
                "properties": dict, "description": str, "consistencyLevel": str, "load": bool,
                "replicas": int, "resourceGroups": list, "wait": bool}
_INDEX_KEYS = {"field": str, "fieldName": str, "type": str, "indexType": str, "metric": str, "metricType": str,
               "params": dict, "name": str, "indexName": str}
_PATCH_KEYS = {"description": str, "properties": dict, "replicas": int, "resourceGroups": list}
_LOAD_KEYS = {"name": str, "replicas": int, "resourceGroups": list, "partitions": list, "fields": list,
              "refresh": bool, "wait": bool, "timeout": (int, float)}


def index_requests(raw: Any, what: str = "indexes") -> list[IndexRequest]:
    if not isinstance(raw, list):
        raise BadRequest(f"Invalid {what}: must be an array", errors={what: "must be an array"})
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise BadRequest(f"Invalid {what}[{i}]: must be an object", errors={f"{what}[{i}]": "must be an object"})
        check_keys(item, _INDEX_KEYS, f"{what}[{i}]")
        field = item.get("field", item.get("fieldName"))
        if not field:
            raise BadRequest(f"Invalid {what}[{i}]: field is required", errors={f"{what}[{i}].field": "is required"})
        out.append(IndexRequest(field=field, index_type=item.get("type", item.get("indexType")) or "AUTOINDEX",
                                metric=item.get("metric", item.get("metricType")), params=item.get("params") or {},
                                name=item.get("name", item.get("indexName")) or ""))
    return out


def quick_schema(data: dict) -> tuple[schema_pb2.CollectionSchema, list[IndexRequest]]:
    """pymilvus's quick setup: ``id`` (Int64, or VarChar when ``idType`` says so) primary key, ``vector``
    FloatVector of ``dimension``, the dynamic field on, an AUTOINDEX with ``metric`` (COSINE)."""
    id_type = (data.get("idType") or "Int64").lower()
    if id_type not in ("int64", "int", "varchar", "string", "str"):
        raise BadRequest("Invalid collection: idType must be Int64 or VarChar", errors={"idType": "must be Int64 or VarChar"})
    varchar = id_type in ("varchar", "string", "str")
    pk_name, vec_name = data.get("primaryField") or "id", data.get("vectorField") or "vector"
    pk = schema_pb2.FieldSchema(name=pk_name, is_primary_key=True, autoID=bool(data.get("autoId", False)),
                                data_type=schema_pb2.VarChar if varchar else schema_pb2.Int64)
    if varchar:
        pk.type_params.add(key="max_length", value=str(data.get("maxLength") or QUICK_MAX_LENGTH))
    vec = schema_pb2.FieldSchema(name=vec_name, data_type=schema_pb2.FloatVector)
    vec.type_params.add(key="dim", value=str(data["dimension"]))
    schema = schema_pb2.CollectionSchema(fields=[pk, vec], enable_dynamic_field=True,
                                         description=data.get("description") or "")
    indexes = [IndexRequest(field=vec_name, index_type="AUTOINDEX", metric=data.get("metric") or "COSINE")]
    return schema, indexes


def consistency_level(data: dict) -> int:
    name = data.get("consistencyLevel")
    if name is None:
        return common_pb2.Bounded
    for known, number in common_pb2.ConsistencyLevel.items():
        if known.lower() == name.lower():
            return number
    raise BadRequest(f"Invalid collection: unknown consistencyLevel {name!r}",
                     errors={"consistencyLevel": f"one of {', '.join(common_pb2.ConsistencyLevel.keys())}"})


_JOB_KEYS = {"flush_id": "flushId", "compaction_id": "compactionId", "state": "state", "progress": "progress",
             "channels": "channels", "channels_flushed": "channelsFlushed", "segment_ids": "segmentIds",
             "executing_plans": "executingPlans", "completed_plans": "completedPlans",
             "failed_plans": "failedPlans", "error": "error"}


def job_json(job: dict[str, Any]) -> dict[str, Any]:
    """A flush or compaction state (the DataCoord's dict) in the REST's names; ids as JSON-safe ints."""
    out: dict[str, Any] = {}
    for key, name in _JOB_KEYS.items():
        if key in job:
            value = job[key]
            if key in ("flush_id", "compaction_id"):
                value = json_int(value)
            elif key == "segment_ids":
                value = [json_int(v) for v in value]
            out[name] = value
    return out


def with_progress(index: dict[str, Any]) -> dict[str, Any]:
    """An index's JSON with ``progress``: the % of the flushed segments' rows indexed (100 with none)."""
    total = index["totalRows"]
    return {**index, "progress": index["indexedRows"] * 100 // total if total else 100}


SUMMARY = answer({"name": {"type": "string"}, "id": INT64, "rowCount": {"type": "integer"},
                  "rowCountError": {"type": "string"}, **LOAD_STATE}, ("name", "id", "rowCount", "loadState"))
DESCRIPTION = answer({
    "name": {"type": "string"}, "id": INT64, "description": {"type": "string"}, "schema": {"type": "object"},
    "shards": {"type": "integer"}, "channels": NAMES, "consistencyLevel": {"type": "string"},
    "properties": {"type": "object"}, "createdAt": INT64, "rowCount": {"type": "integer"},
    "partitions": {"type": "array", "items": answer({"name": {"type": "string"}, "id": INT64})},
    "indexes": {"type": "array", "items": INDEX_RECORD}, "flushes": {"type": "array"},
    "compactions": {"type": "array"}, "replicas": {"type": "integer"}, "resourceGroups": NAMES,
    "partitionStates": {"type": "array"}, **LOAD_STATE},
    ("name", "id", "schema", "partitions", "indexes", "loadState"))


class CollectionsService:
    """The ``collections`` service over the coordinator's catalog, DDL, loads and proxy (module doc)."""

    RIGHTS = {"find": READ, "get": READ, "create": WRITE, "patch": WRITE, "remove": WRITE, "load": WRITE,
              "release": WRITE, "flush": WRITE, "compact": WRITE, "rename": WRITE}
    OPENAPI = {"tag": "Collections of the default database: create (quick or full form), describe, alter, drop; "
                      "custom load, release, flush, compact, rename",
               "multi": False, "docs": {
        "find": {"summary": "List the collections (name, id, rowCount, loadState, loadPercent)",
                 "result": {"type": "array", "items": SUMMARY}},
        "get": {"summary": "Describe a collection: schema, shards, partitions, indexes, load state, replicas",
                "result": DESCRIPTION},
        "create": {"summary": "Create a collection: the quick form (dimension) or a full schema", "errors": [409],
                   "description": "Give either `dimension` (the quick form: an `id` primary key, a `vector` field, "
                                  "the dynamic field on and an AUTOINDEX with `metric`) or `schema` (with optional "
                                  "`indexes`). `load: true` loads it before answering.",
                   "data": {**obj({
                       "name": NAME, "dimension": {**POSITIVE, "description": "the quick form's vector size"},
                       "metric": {"type": "string", "examples": ["COSINE", "L2", "IP"]},
                       "idType": {"enum": ["Int64", "VarChar", "int64", "varchar"]}, "autoId": {"type": "boolean"},
                       "primaryField": NAME, "vectorField": NAME, "maxLength": POSITIVE,
                       "schema": SCHEMA, "indexes": {"type": "array", "items": INDEX}, "shards": POSITIVE,
                       "properties": {"type": "object"}, "description": {"type": "string"},
                       "consistencyLevel": CONSISTENCY, "load": {"type": "boolean"},
                       "replicas": {**POSITIVE, "description": "with load: true"},
                       "resourceGroups": {**NAMES, "description": "with load: true"},
                       "wait": {"type": "boolean", "description": "with load: true: answer once loaded (default), "
                                                                  "or at once (false)"}}, ("name",)),
                       "oneOf": [{"required": ["dimension"]}, {"required": ["schema"]}]},
                   "example": {"name": "demo", "dimension": 4, "metric": "L2", "load": True},
                   "result": DESCRIPTION},
        "patch": {"summary": "Alter a collection: description, properties, or its load's replicas / resource groups",
                  "data": obj({"description": {"type": "string"}, "properties": {"type": "object"},
                               "replicas": POSITIVE, "resourceGroups": NAMES}),
                  "result": DESCRIPTION},
        "remove": {"summary": "Drop a collection (released first); answers its summary as it was",
                   "result": SUMMARY},
        "load": {"summary": "Load a collection (or some partitions); wait: true answers once loaded",
                 "errors": [404],
                 "data": obj({"name": NAME, "replicas": POSITIVE, "resourceGroups": NAMES, "partitions": NAMES,
                              "fields": NAMES, "refresh": {"type": "boolean"}, "wait": {"type": "boolean"},
                              "timeout": {"type": "number", "exclusiveMinimum": 0}}, ("name",)),
                 "example": {"name": "demo", "wait": True},
                 "result": answer({"name": {"type": "string"}, **LOAD_STATE}, ("name", "loadState"))},
        "release": {"summary": "Release a collection (or some partitions)", "errors": [404],
                    "data": obj({"name": NAME, "partitions": NAMES}, ("name",)),
                    "example": {"name": "demo"},
                    "result": answer({"name": {"type": "string"}, **LOAD_STATE}, ("name", "loadState"))},
        "flush": {"summary": "Seal and publish the growing segments; wait: false answers at once with the flush's id",
                  "errors": [404],
                  "data": obj({"name": NAME, "wait": {"type": "boolean"}}, ("name",)),
                  "example": {"name": "demo"},
                  "result": answer({"name": {"type": "string"}, "segmentIds": {"type": "array", "items": INT64},
                                    "flushId": INT64, "state": {"type": "string"}, "progress": {"type": "number"}},
                                   ("name",))},
        "compact": {"summary": "Compact the sealed segments; wait: false answers at once with the compaction's id",
                    "errors": [404],
                    "data": obj({"name": NAME, "wait": {"type": "boolean"}}, ("name",)),
                    "example": {"name": "demo"},
                    "result": answer({"name": {"type": "string"}, "compactionId": INT64,
                                      "state": {"type": "string"}, "progress": {"type": "number"}}, ("name",))},
        "rename": {"summary": "Rename a collection", "errors": [404, 409],
                   "data": obj({"name": NAME, "newName": NAME}, ("name", "newName")),
                   "example": {"name": "demo", "newName": "demo2"},
                   "result": DESCRIPTION},
    }}

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.coord = ctx.coord
        self.catalog = ctx.coord.catalog

    # --- encoding ---------------------------------------------------------------------------------

    async def _row_count(self, coll: CollectionInfo, loaded: bool) -> dict[str, Any]:
        if loaded and self.ctx.proxy is not None:
            try:
                return {"rowCount": await self.ctx.proxy.count(coll.name)}
            except errors.MilvusError as e:
                logged = await asyncio.to_thread(self.coord.row_count, coll.id)
                return {"rowCount": logged, "rowCountError": str(e)}
        return {"rowCount": await asyncio.to_thread(self.coord.row_count, coll.id)}

    async def _summary(self, coll: CollectionInfo) -> dict[str, Any]:
        state = load_state(self.coord, coll.id)
        return {"name": coll.name, "id": json_int(coll.id),
                **await self._row_count(coll, state.state == LOADED), **load_json(state)}

    async def _describe(self, coll: CollectionInfo) -> dict[str, Any]:
        state = load_state(self.coord, coll.id)
        out = {
            "name": coll.name, "id": json_int(coll.id), "description": coll.schema.description,
            "schema": schema_to_json(coll.schema), "shards": coll.shards_num, "channels": list(coll.vchannels),
            "consistencyLevel": common_pb2.ConsistencyLevel.Name(coll.consistency_level),
            "properties": coll.properties, "createdAt": json_int(coll.create_time),
            "partitions": [{"name": p.partitionName, "id": json_int(p.partitionID)} for p in coll.partitions],
            **await self._row_count(coll, state.state == LOADED), **load_json(state),
        }
        infos = await asyncio.to_thread(self.catalog.describe_index, coll.id)
        out["indexes"] = [with_progress(index_json(coll, i, self.coord.index_placement(coll.id, i.fieldID)))
                          for i in infos]
        datacoord = self.ctx.datacoord
        out["flushes"] = [job_json(j) for j in datacoord.flushes(coll.id)[:SHOWN_JOBS]] if datacoord else []
        out["compactions"] = [job_json(j) for j in datacoord.compactions(coll.id)[:SHOWN_JOBS]] if datacoord else []
        replicas = self.coord.replica_infos(coll.id, False) if state.state != NOT_LOAD else []
        out["replicas"] = len(replicas)
        out["resourceGroups"] = sorted({r.resource_group_name for r in replicas})
        names = {p.partitionID: p.partitionName for p in coll.partitions}
        states = self.coord.partition_states(coll.id, []) if state.state != NOT_LOAD else []
        out["partitionStates"] = [
            {
                "name": names.get(s.partitionID, ""),
                "id": json_int(s.partitionID),
                "state": query_coord_pb2.PartitionState.Name(s.state),
                "loadPercent": s.inMemory_percentage,
            }
            for s in states
        ]
        return out

    # --- standard methods -------------------------------------------------------------------------

    async def find(self, params: dict) -> list[dict[str, Any]]:
        colls = await asyncio.to_thread(self.catalog.list_collections, DEFAULT_DB_NAME)
        return [await self._summary(c) for c in colls]

    async def get(self, id: str, params: dict) -> dict[str, Any]:  # noqa: A002
        return await self._describe(await describe(self.catalog, id))

    async def create(self, data: Any, params: dict) -> dict[str, Any]:
        data = body(data, "create")
        check_keys(data, _CREATE_KEYS, "collection", required=("name",))
        if ("schema" in data) == ("dimension" in data):
            raise BadRequest("Invalid collection: give either a schema or a dimension (the quick form)",
                             errors={"schema": "either schema or dimension", "dimension": "either schema or dimension"})
        if "schema" in data:
            quick_only = [k for k in ("metric", "idType", "autoId", "primaryField", "vectorField", "maxLength")
                          if k in data]
            if quick_only:
                raise BadRequest(f"Invalid collection: {', '.join(quick_only)} belong to the quick form (dimension)",
                                 errors={k: "only with dimension" for k in quick_only})
            schema, indexes = schema_from_json(data["schema"]), []
        else:
            schema, indexes = quick_schema(data)
        if data.get("indexes") is not None:
            indexes = index_requests(data["indexes"])
        if "properties" in data:
            normalize_properties("collection", data["properties"])   # a bad property is a 400 before anything
        level = consistency_level(data)
        load = None
        if data.get("load"):
            load = LoadOptions(positive_int(data, "replicas", "collection"), string_list(data, "resourceGroups",
                                                                                         "collection"))
        elif any(k in data for k in ("replicas", "resourceGroups", "wait")):
            raise BadRequest("Invalid collection: replicas, resourceGroups and wait go with load: true",
                             errors={k: "only with load: true" for k in ("replicas", "resourceGroups", "wait")
                                     if k in data})
        name = data["name"]
        if await asyncio.to_thread(self.catalog.has_collection, DEFAULT_DB_NAME, name):
            raise Conflict(f"collection {name!r} already exists", data={"collection": name})
        coll = await self.coord.ddl.create_collection(
            DEFAULT_DB_NAME, name, schema, shards_num=data.get("shards") or 1, properties=data.get("properties"),
            indexes=indexes, load=load, consistency_level=level)
        if load is not None and data.get("wait", True):
            # searchable once created, as pymilvus's create_collection waits for its load; wait: false answers at once
            await wait_loaded(self.coord, coll.id, None, ddl.CREATE_LOAD_WAIT_S)
        return await self._describe(coll)

    async def patch(self, id: str, data: Any, params: dict) -> dict[str, Any]:  # noqa: A002
        if id is None:
            raise BadRequest("patch a collection by its name (/collections/NAME)")
        data = body(data, "patch")
        check_keys(data, _PATCH_KEYS, "collection patch")
        rgs = string_list(data, "resourceGroups", "collection patch")
        replicas = positive_int(data, "replicas", "collection patch")
        if "properties" in data:
            normalize_properties("collection", data["properties"])
        coll = await describe(self.catalog, id)
        if replicas or rgs:
            await self.coord.ddl.update_load_config(coll.id, replicas, rgs)
        if "properties" in data or "description" in data:
            coll = await self.coord.ddl.alter_collection(DEFAULT_DB_NAME, id, properties=data.get("properties"),
                                                         description=data.get("description"))
        return await self._describe(coll)

    async def remove(self, id: str, params: dict) -> dict[str, Any]:  # noqa: A002
        if id is None:
            raise BadRequest("remove a collection by its name (/collections/NAME)")
        coll = await describe(self.catalog, id)
        before = await self._summary(coll)
        await self.coord.ddl.drop_collection(DEFAULT_DB_NAME, id)
        return {**before, "loadState": NOT_LOAD, "loadPercent": 0}

    # --- custom methods ---------------------------------------------------------------------------

    async def load(self, data: Any, params: dict) -> dict[str, Any]:
        data = body(data, "load")
        check_keys(data, _LOAD_KEYS, "load", required=("name",))
        partitions = string_list(data, "partitions", "load")
        fields = string_list(data, "fields", "load")
        rgs = string_list(data, "resourceGroups", "load")
        replicas = positive_int(data, "replicas", "load")
        timeout = data.get("timeout")
        timeout = DEFAULT_LOAD_WAIT_S if timeout is None else timeout   # null = not given, as for every key
        if timeout <= 0:
            raise BadRequest("Invalid load: timeout must be positive", errors={"timeout": "must be positive"})
        coll = await describe(self.catalog, data["name"])
        pids = [coll.partition(p).partitionID for p in partitions] or None
        field_ids = [coll.field(f).fieldID for f in fields]
        await self.coord.load(LoadRequest(coll.id, pids, replicas, rgs, field_ids, bool(data.get("refresh"))))
        if data.get("wait"):
            state = await wait_loaded(self.coord, coll.id, pids, timeout)
        else:
            state = load_state(self.coord, coll.id, pids)
        return {"name": coll.name, **load_json(state)}

    async def release(self, data: Any, params: dict) -> dict[str, Any]:
        data = body(data, "release")
        check_keys(data, {"name": str, "partitions": list}, "release", required=("name",))
        partitions = string_list(data, "partitions", "release")
        coll = await describe(self.catalog, data["name"])
        if partitions:
            await self.coord.release_partitions(coll.id, [coll.partition(p).partitionID for p in partitions])
        else:
            await self.coord.release_collection(coll.id)
        return {"name": coll.name, **load_json(load_state(self.coord, coll.id))}

    async def flush(self, data: Any, params: dict) -> dict[str, Any]:
        """Answers once the sealed segments are published; with ``wait: false`` at once, with the flush's
        id and progress (the collection's ``get`` follows it in ``flushes``)."""
        data = body(data, "flush")
        check_keys(data, {"name": str, "wait": bool}, "flush", required=("name",))
        proxy = self._proxy("flush")
        if data.get("wait", True):
            segments = await proxy.flush(data["name"])
            return {"name": data["name"], "segmentIds": [json_int(s) for s in segments], "state": "Completed",
                    "progress": 100}
        return {"name": data["name"], **job_json(await proxy.writes.start_flush(proxy.db_name, data["name"]))}

    async def compact(self, data: Any, params: dict) -> dict[str, Any]:
        """Answers once the compaction is published; with ``wait: false`` at once, with its progress (the
        collection's ``get`` follows it in ``compactions``)."""
        data = body(data, "compact")
        check_keys(data, {"name": str, "wait": bool}, "compact", required=("name",))
        proxy = self._proxy("compact")
        if data.get("wait", True):
            plan = await proxy.compact(data["name"])
            return {"name": data["name"], "compactionId": json_int(plan), "state": "Completed", "progress": 100}
        return {"name": data["name"], **job_json(await proxy.writes.start_compaction(proxy.db_name, data["name"]))}

    async def rename(self, data: Any, params: dict) -> dict[str, Any]:
        data = body(data, "rename")
        check_keys(data, {"name": str, "newName": str}, "rename", required=("name", "newName"))
        await describe(self.catalog, data["name"])   # 404 first
        if data["newName"] != data["name"] and \
                await asyncio.to_thread(self.catalog.has_collection, DEFAULT_DB_NAME, data["newName"]):
            raise Conflict(f"collection {data['newName']!r} already exists", data={"collection": data["newName"]})
        coll = await self.coord.ddl.rename_collection(DEFAULT_DB_NAME, data["name"], data["newName"])
        return await self._describe(coll)

    def _proxy(self, what: str):
        if self.ctx.proxy is None:
            raise errors.ServiceUnimplemented(f"{what} needs the coordinator's proxy, which this app was built without")
        return self.ctx.proxy


def mount(api, ctx) -> None:
    api.use("collections", CollectionsService(ctx),
            {"methods": ["find", "get", "create", "patch", "remove", "load", "release", "flush", "compact", "rename"]})
