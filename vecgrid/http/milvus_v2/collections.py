"""``/v2/vectordb/collections/*``: create (the quick form with ``dimension``, the full form with
``schema`` + ``indexParams``), describe, list, has, drop, rename, get_stats, get_load_state, load,
release, alter_properties.

Each action makes the call the MilvusService makes for the same thing (the coordinator's ``Ddl``, its
loads, the catalog) and answers Milvus's shapes.  As Milvus's REST ``create``: the quick form defines
the ``id`` / ``vector`` schema with the dynamic field on, an AUTOINDEX named after the vector field
(``metricType``, COSINE by default) and loads the collection; the full form loads it when it gives
``indexParams``.  vecgrid's ``create`` answers once that load is complete (an empty collection loads in
moments), so a documentation flow can insert and search right after it; ``load`` answers at once, as
Milvus's does (follow it with ``get_load_state``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from vecgrid import errors
from vecgrid.cluster.querycoord.ddl import (CREATE_LOAD_WAIT_S, NOT_LOAD, IndexRequest, LoadOptions, load_state,
                                            wait_loaded)
from vecgrid.cluster.querycoord.job.jobs import LoadRequest
from vecgrid.http.milvus_v2.handler import READ, WRITE, Action, Body, Call, bad_format, registry
from vecgrid.http.services.collection_common import schema_from_json
from vecgrid.http.services.collections import quick_schema
from vecgrid.proto import common_pb2, schema_pb2
from vecgrid.storage.catalog.index_rules import INDEX_TYPE_KEY, METRIC_TYPE_KEY
from vecgrid.storage.catalog.schema_rules import DEFAULT_DB_NAME, kv_dict

ACTIONS: dict[str, Action] = {}
action = registry(ACTIONS)

DEFAULT_METRIC = "COSINE"
TTL_PROPERTY = "collection.ttl.seconds"
# Milvus field flags vecgrid's schemas do not have: accepted when false, refused when true
_UNSUPPORTED_FIELD_FLAGS = ("isPartitionKey", "isClusteringKey", "nullable")


# --- Milvus's request values ------------------------------------------------------------------------

def go_string(value: Any) -> str:
    """A JSON value as Go's ``fmt.Sprintf("%v")`` writes it (Milvus stringifies ``params`` so)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def go_bool(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    text = go_string(value)
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise errors.ParameterInvalid(f"parse {what} fail, err: invalid syntax {text!r}")


def go_int(value: Any, what: str) -> int:
    try:
        return int(go_string(value))
    except ValueError:
        raise errors.ParameterInvalid(f"{what} must be an integer, got {value!r}") from None


def consistency_level(name: Any, default: int = common_pb2.Bounded) -> int:
    """A level by Milvus's exact (case-sensitive) name; None: ``default``."""
    if name is None or name == "":
        return default
    if isinstance(name, str) and name in common_pb2.ConsistencyLevel.keys():
        return common_pb2.ConsistencyLevel.Value(name)
    raise errors.ParameterInvalid(f"consistencyLevel can only be [Strong, Session, Bounded, Eventually, Customized], "
                                  f"default: Bounded, got {name!r}")


def index_request(raw: Any, where: str = "indexParams") -> IndexRequest:
    """One of Milvus's ``indexParams``: ``{fieldName, indexName?, metricType?, indexType?, params?}``
    (the index type may also come as ``params.index_type``)."""
    if not isinstance(raw, dict):
        raise bad_format(f"{where} must be an array of objects")
    item = Body(raw)
    field = item.get("fieldName", str, required=True)
    params = dict(item.get("params", dict, {}))
    given_type, given_metric = params.pop(INDEX_TYPE_KEY, None), params.pop(METRIC_TYPE_KEY, None)
    index_type = item.get("indexType", str, "") or (go_string(given_type) if given_type else "AUTOINDEX")
    metric = item.get("metricType", str, "") or (go_string(given_metric) if given_metric else None)
    return IndexRequest(field=field, index_type=index_type, metric=metric, params=params,
                        name=item.get("indexName", str, ""))


def milvus_schema(raw: dict[str, Any], description: str) -> schema_pb2.CollectionSchema:
    """Milvus REST v2's ``schema`` (``autoID``, ``enableDynamicField``, ``fields`` of ``fieldName``,
    ``dataType``, ``isPrimary``, ``elementTypeParams``...) as a ``CollectionSchema``: the REST app's
    schema decoding, with Milvus's flags that default to false taken off first."""
    raw = dict(raw)
    if raw.pop("functions", None):
        raise errors.ParameterInvalid("schema functions (BM25 and others) are not supported by vecgrid")
    fields = raw.get("fields")
    if isinstance(fields, list):
        cleaned = []
        for f in fields:
            if isinstance(f, dict):
                f = dict(f)
                for flag in _UNSUPPORTED_FIELD_FLAGS:
                    if f.pop(flag, False):
                        raise errors.ParameterInvalid(f"field {f.get('fieldName')!r}: {flag} is not supported "
                                                      "by vecgrid")
                if f.pop("elementDataType", None):
                    raise errors.ParameterInvalid(f"field {f.get('fieldName')!r}: Array fields are not supported "
                                                  "by vecgrid")
            cleaned.append(f)
        raw["fields"] = cleaned
    schema = schema_from_json(raw)
    if description:
        schema.description = description
    return schema


def _quick(b: Body, params: dict[str, Any]) -> tuple[schema_pb2.CollectionSchema, list[IndexRequest]]:
    dimension = b.get("dimension", int, 0)
    if dimension <= 0:
        raise errors.ParameterInvalid("dimension is required for quickly create collection(default metric type: "
                                      f"{DEFAULT_METRIC})")
    id_type = b.get("idType", str, "")
    if id_type in ("VarChar", "Varchar"):
        max_length = go_int(params["max_length"], "max_length") if "max_length" in params else None
        kind = "VarChar"
    elif id_type in ("", "Int64", "int64"):
        max_length, kind = None, "Int64"
    else:
        raise errors.ParameterInvalid(f"idType can only be [Int64, VarChar], default: Int64, got {id_type!r}")
    vector_field = b.get("vectorFieldName", str, "") or "vector"
    schema, indexes = quick_schema({"dimension": dimension, "idType": kind, "autoId": b.get("autoID", bool, False),
                                    "primaryField": b.get("primaryFieldName", str, "") or "id",
                                    "vectorField": vector_field, "maxLength": max_length,
                                    "metric": b.get("metricType", str, "") or DEFAULT_METRIC,
                                    "description": b.get("description", str, "")})
    if "enableDynamicField" in params:
        schema.enable_dynamic_field = go_bool(params["enableDynamicField"], "enableDynamicField")
    for req in indexes:
        req.name = req.name or vector_field   # Milvus names the quick form's index after its field
    return schema, indexes


# --- the actions ------------------------------------------------------------------------------------

@action("create", WRITE)
async def create(call: Call) -> dict[str, Any]:
    b, v2 = call.body, call.v2
    name = b.name()
    params = b.get("params", dict, {})
    raw_schema = b.get("schema", dict)
    if raw_schema is not None and raw_schema.get("fields"):
        schema = milvus_schema(raw_schema, b.get("description", str, ""))
        raw_indexes = b.get("indexParams", list, [])
        indexes = [index_request(item, f"indexParams[{i}]") for i, item in enumerate(raw_indexes)]
        load = bool(indexes)
    else:
        schema, indexes = _quick(b, params)
        load = True
    properties: dict[str, str] = {}
    if "ttlSeconds" in params:
        properties[TTL_PROPERTY] = go_string(params["ttlSeconds"])
    shards = go_int(params["shardsNum"], "shardsNum") if "shardsNum" in params else 1
    coll = await v2.coord.ddl.create_collection(
        v2.db, name, schema, shards_num=shards, properties=properties or None, indexes=indexes,
        load=LoadOptions() if load else None, consistency_level=consistency_level(params.get("consistencyLevel")))
    v2.definitions_changed()
    if load:
        if load_state(v2.coord, coll.id).state == NOT_LOAD:   # it existed already (Milvus's idempotent create)
            await v2.coord.load(LoadRequest(coll.id, None, 0, [], []))
        await wait_loaded(v2.coord, coll.id, None, CREATE_LOAD_WAIT_S)
    return {}


def field_json(f: schema_pb2.FieldSchema) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": f.name, "id": f.fieldID, "type": schema_pb2.DataType.Name(f.data_type), "primaryKey": f.is_primary_key,
        "partitionKey": f.is_partition_key, "clusteringKey": False, "autoId": f.autoID, "description": f.description,
        "params": [{"key": p.key, "value": p.value} for p in f.type_params],
    }
    if f.HasField("default_value"):
        which = f.default_value.WhichOneof("data")
        if which is not None:
            out["defaultValue"] = getattr(f.default_value, which)
    return out


def index_summary(coll, info) -> dict[str, Any]:
    return {"fieldName": coll.field_by_id(info.fieldID).name, "indexName": info.index_name,
            "metricType": kv_dict(info.index_params).get(METRIC_TYPE_KEY, "")}


@action("describe", READ)
async def describe(call: Call) -> dict[str, Any]:
    v2 = call.v2
    coll = await v2.collection(call.body.name())
    infos = await asyncio.to_thread(v2.catalog.describe_index, coll.id)
    return {
        "collectionName": coll.name, "collectionID": coll.id, "description": coll.schema.description,
        "autoId": coll.primary_field.autoID,
        "fields": [field_json(f) for f in coll.fields if not f.is_dynamic],
        "aliases": await asyncio.to_thread(v2.catalog.aliases_of, coll.id),
        "indexes": [index_summary(coll, i) for i in infos],
        "load": load_state(v2.coord, coll.id).state, "shardsNum": coll.shards_num,
        "partitionsNum": len(coll.partitions),
        "consistencyLevel": common_pb2.ConsistencyLevel.Name(coll.consistency_level),
        "enableDynamicField": coll.enable_dynamic_field,
        "properties": [{"key": k, "value": v} for k, v in coll.properties.items()],
    }


@action("list", READ)
async def list_collections(call: Call) -> list[str]:
    return [c.name for c in await asyncio.to_thread(call.v2.catalog.list_collections, call.v2.db)]


@action("has", READ)
async def has(call: Call) -> dict[str, bool]:
    return {"has": await asyncio.to_thread(call.v2.catalog.has_collection, call.v2.db, call.body.name())}


@action("drop", WRITE)
async def drop(call: Call) -> dict[str, Any]:
    try:
        await call.v2.coord.ddl.drop_collection(call.v2.db, call.body.name())
    except errors.CollectionNotFound:
        pass   # Milvus drops what is not there without an error (as the MilvusService)
    call.v2.definitions_changed()
    return {}


@action("rename", WRITE)
async def rename(call: Call) -> dict[str, Any]:
    b = call.body
    name, new_name = b.name(), b.name("newCollectionName")
    new_db = b.get("newDbName", str, "")
    if new_db not in ("", DEFAULT_DB_NAME, call.v2.db):
        raise errors.ParameterInvalid("vecgrid renames a collection within its database", database=new_db)
    await call.v2.coord.ddl.rename_collection(call.v2.db, name, new_name)
    call.v2.definitions_changed()
    return {}


@action("alter_properties", WRITE)
async def alter_properties(call: Call) -> dict[str, Any]:
    b = call.body
    name = b.name()
    properties = {k: go_string(v) for k, v in b.get("properties", dict, {}, required=True).items()}
    await call.v2.coord.ddl.alter_collection(call.v2.db, name, properties=properties)
    call.v2.definitions_changed()
    return {}


@action("get_stats", READ)
async def get_stats(call: Call) -> dict[str, int]:
    coll = await call.v2.collection(call.body.name())
    return {"rowCount": await asyncio.to_thread(call.v2.coord.row_count, coll.id)}


@action("get_load_state", READ)
async def get_load_state(call: Call) -> dict[str, Any]:
    b, v2 = call.body, call.v2
    coll = await v2.collection(b.name())
    pids = [coll.partition(p).partitionID for p in b.strings("partitionNames")] or None
    state = load_state(v2.coord, coll.id, pids)
    if state.state == NOT_LOAD:
        return {"loadState": state.state}
    return {"loadState": state.state, "loadProgress": state.percent}


@action("load", WRITE)
async def load(call: Call) -> dict[str, Any]:
    coll = await call.v2.collection(call.body.name())
    await call.v2.coord.load(LoadRequest(coll.id, None, 0, [], []))
    return {}


@action("release", WRITE)
async def release(call: Call) -> dict[str, Any]:
    v2 = call.v2
    coll = await v2.collection(call.body.name())
    await v2.coord.release_collection(coll.id)
    if v2.ctx.proxy is not None:
        v2.ctx.proxy.invalidate(coll.id)
    return {}
