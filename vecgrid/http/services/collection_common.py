"""What the collection, partition, index and import-job services share: decoding request bodies
(unknown or mistyped keys are a 400 that names each one, before anything is called) and encoding the
catalog's and the coordinator's answers as JSON.

Schemas travel as ``{"description", "enableDynamicField", "fields": [{"name", "type", "isPrimary",
"autoId", "params": {"dim" | "max_length"}, "description", "defaultValue"}]}``: the data
type by its Milvus name (``Int64``, ``VarChar``, ``FloatVector``...).  The input also takes Milvus REST
v2's spellings (``fieldName``, ``dataType``, ``isPrimaryKey``, ``elementTypeParams``), so a schema
written for Milvus's REST API is accepted as it is.
"""

from __future__ import annotations

import asyncio
from typing import Any, Iterable, Mapping

from vecgrid.cluster.querycoord.ddl import LoadState
from vecgrid.common.feathers_errors import BadRequest
from vecgrid.proto import common_pb2, index_coord_pb2, schema_pb2
from vecgrid.storage.catalog import Catalog, CollectionInfo
from vecgrid.storage.catalog.index_rules import INDEX_TYPE_KEY, METRIC_TYPE_KEY
from vecgrid.storage.catalog.schema_rules import DEFAULT_DB_NAME, DYNAMIC_FIELD_NAME, kv_dict

MAX_SAFE_INT = (1 << 53) - 1
WRITE, READ = "write", "read"

_TYPES = {name.lower(): number for name, number in schema_pb2.DataType.items()}


def json_int(value: int) -> int | str:
    """int64 for JSON: beyond ±(2^53 − 1) as a decimal string (JavaScript would round it)."""
    return value if -MAX_SAFE_INT <= value <= MAX_SAFE_INT else str(value)


# --- request bodies -------------------------------------------------------------------------------------

def body(data: Any, what: str) -> dict:
    if not isinstance(data, dict):
        raise BadRequest(f"{what} takes a JSON object", errors={"body": "must be a JSON object"})
    return data


def check_keys(data: Mapping[str, Any], spec: Mapping[str, Any], what: str, required: Iterable[str] = ()) -> None:
    """``spec``: key -> accepted type(s) (``bool`` never passes for ``int``); every problem in one 400."""
    problems: dict[str, str] = {}
    for key in required:
        if data.get(key) is None:
            problems[key] = "is required"
    for key, value in data.items():
        if key not in spec:
            problems[key] = "is not a known field"
            continue
        if value is None:
            continue
        accepted = spec[key] if isinstance(spec[key], tuple) else (spec[key],)
        if isinstance(value, bool) and bool not in accepted:
            problems[key] = f"must be {_type_words(accepted)}"
        elif not isinstance(value, accepted):
            problems[key] = f"must be {_type_words(accepted)}"
    if problems:
        detail = "; ".join(f"{k} {v}" for k, v in problems.items())
        raise BadRequest(f"Invalid {what}: {detail}", errors=problems)


def _type_words(types: tuple[type, ...]) -> str:
    words = {str: "a string", int: "an integer", bool: "true or false", list: "an array", dict: "an object",
             float: "a number"}
    return " or ".join(words.get(t, t.__name__) for t in types)


def string_list(data: Mapping[str, Any], key: str, what: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest(f"Invalid {what}: {key} must be an array of strings", errors={key: "must be an array of strings"})
    return list(value)


def positive_int(data: Mapping[str, Any], key: str, what: str, default: int = 0) -> int:
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadRequest(f"Invalid {what}: {key} must be a positive integer", errors={key: "must be a positive integer"})
    return value


def route_collection(params: Mapping[str, Any]) -> str:
    name = (params.get("route") or {}).get("collection")
    if not name:
        raise BadRequest("the path names no collection")
    return name


async def describe(catalog: Catalog, name: str) -> CollectionInfo:
    """The collection by name in the default database; ``CollectionNotFound`` (404) when absent."""
    return await asyncio.to_thread(catalog.describe_collection, DEFAULT_DB_NAME, name)


# --- schemas --------------------------------------------------------------------------------------------

_FIELD_KEYS = {"name": str, "fieldName": str, "type": str, "dataType": str, "isPrimary": bool, "isPrimaryKey": bool,
               "autoId": bool, "autoID": bool, "params": dict, "elementTypeParams": dict, "typeParams": dict,
               "description": str, "defaultValue": (str, int, float, bool)}
_SCHEMA_KEYS = {"fields": list, "description": str, "enableDynamicField": bool, "autoId": bool, "autoID": bool,
                "name": str}


def _default_value(data_type: int, value: Any) -> schema_pb2.ValueField:
    D = schema_pb2.DataType
    if data_type == D.Bool and isinstance(value, bool):
        return schema_pb2.ValueField(bool_data=value)
    if data_type in (D.Int8, D.Int16, D.Int32) and isinstance(value, int) and not isinstance(value, bool):
        return schema_pb2.ValueField(int_data=value)
    if data_type == D.Int64 and isinstance(value, int) and not isinstance(value, bool):
        return schema_pb2.ValueField(long_data=value)
    if data_type == D.Float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return schema_pb2.ValueField(float_data=value)
    if data_type == D.Double and isinstance(value, (int, float)) and not isinstance(value, bool):
        return schema_pb2.ValueField(double_data=value)
    if data_type == D.VarChar and isinstance(value, str):
        return schema_pb2.ValueField(string_data=value)
    raise ValueError(f"default value {value!r} does not fit the field's type {schema_pb2.DataType.Name(data_type)}")


def schema_from_json(data: Any) -> schema_pb2.CollectionSchema:
    """A Milvus ``CollectionSchema`` from its JSON form; every shape problem in one 400 (the catalog then
    applies Milvus's schema rules)."""
    if not isinstance(data, dict):
        raise BadRequest("Invalid schema: must be an object", errors={"schema": "must be an object"})
    check_keys(data, _SCHEMA_KEYS, "schema", required=("fields",))
    schema_auto_id = bool(data.get("autoId", data.get("autoID", False)))
    schema = schema_pb2.CollectionSchema(description=data.get("description") or "",
                                         enable_dynamic_field=bool(data.get("enableDynamicField", False)))
    problems: dict[str, str] = {}
    for i, raw in enumerate(data["fields"]):
        where = f"fields[{i}]"
        if not isinstance(raw, dict):
            problems[where] = "must be an object"
            continue
        try:
            check_keys(raw, _FIELD_KEYS, where)
        except BadRequest as e:
            problems.update({f"{where}.{k}": v for k, v in e.errors.items()})
            continue
        name = raw.get("name", raw.get("fieldName"))
        type_name = raw.get("type", raw.get("dataType"))
        if not name:
            problems[f"{where}.name"] = "is required"
        if not type_name:
            problems[f"{where}.type"] = "is required"
            continue
        data_type = _TYPES.get(type_name.lower())
        if data_type is None:
            problems[f"{where}.type"] = f"unknown data type {type_name!r}"
            continue
        is_pk = bool(raw.get("isPrimary", raw.get("isPrimaryKey", False)))
        f = schema.fields.add(name=name or "", data_type=data_type, is_primary_key=is_pk,
                              autoID=bool(raw.get("autoId", raw.get("autoID", schema_auto_id and is_pk))),
                              description=raw.get("description") or "")
        params = raw.get("params", raw.get("elementTypeParams", raw.get("typeParams"))) or {}
        for key, value in params.items():
            key = "max_length" if key == "maxLength" else key
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                problems[f"{where}.params.{key}"] = "must be an integer or a string"
                continue
            f.type_params.add(key=key, value=str(value))
        if raw.get("defaultValue") is not None:
            try:
                f.default_value.CopyFrom(_default_value(data_type, raw["defaultValue"]))
            except ValueError as e:
                problems[f"{where}.defaultValue"] = str(e)
    if problems:
        raise BadRequest("Invalid schema: " + "; ".join(f"{k} {v}" for k, v in problems.items()), errors=problems)
    return schema


def schema_to_json(schema: schema_pb2.CollectionSchema) -> dict[str, Any]:
    fields = []
    for f in schema.fields:
        if f.is_dynamic or f.name == DYNAMIC_FIELD_NAME:
            continue
        out: dict[str, Any] = {"name": f.name, "id": f.fieldID, "type": schema_pb2.DataType.Name(f.data_type),
                               "isPrimary": f.is_primary_key, "autoId": f.autoID, "description": f.description}
        params = kv_dict(f.type_params)
        if params:
            out["params"] = {k: int(v) if v.isdigit() else v for k, v in params.items()}
        if f.HasField("default_value"):
            which = f.default_value.WhichOneof("data")
            if which is not None:
                out["defaultValue"] = getattr(f.default_value, which)
        fields.append(out)
    return {"description": schema.description, "enableDynamicField": schema.enable_dynamic_field, "fields": fields}


# --- indexes and loads ----------------------------------------------------------------------------------

def index_json(coll: CollectionInfo, info: index_coord_pb2.IndexInfo, placement: Mapping[str, int],
               fail_reason: str = "") -> dict[str, Any]:
    params = kv_dict(info.index_params)
    index_type = params.pop(INDEX_TYPE_KEY, "")
    metric = params.pop(METRIC_TYPE_KEY, "")
    return {
        "name": info.index_name, "id": json_int(info.indexID), "field": coll.field_by_id(info.fieldID).name,
        "type": index_type, "metric": metric,
        "params": {k: int(v) if v.lstrip("-").isdigit() else v for k, v in params.items()},
        "autoIndex": info.is_auto_index,
        "state": common_pb2.IndexState.Name(info.state), "totalRows": info.total_rows,
        "indexedRows": info.indexed_rows, "pendingRows": info.pending_index_rows,
        "failReason": fail_reason or info.index_state_fail_reason,
        "placement": dict(placement), "servedFrom": sorted(placement),
    }


def load_json(state: LoadState) -> dict[str, Any]:
    out: dict[str, Any] = {"loadState": state.state, "loadPercent": state.percent}
    if state.error is not None:
        out["loadError"] = str(state.error)
    return out
