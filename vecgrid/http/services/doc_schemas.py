"""JSON Schema fragments of the services' OpenAPI declarations (``OPENAPI`` class attributes): the
shapes the REST bodies and answers share.  Documentation only: nothing validates against these; each
service checks its bodies itself (``collection_common.check_keys``, ``cluster_plane._Data``), and
these schemas say what those checks accept.  ``tests/test_rest_fuzz.py`` sends what they describe."""

from __future__ import annotations

from typing import Any

INT64 = {"type": ["integer", "string"], "description": "an int64: beyond ±(2^53 − 1) a decimal string"}
NAME = {"type": "string", "minLength": 1}
NAMES = {"type": "array", "items": {"type": "string"}}
POSITIVE = {"type": "integer", "minimum": 1}
CONSISTENCY = {"enum": ["Strong", "Session", "Bounded", "Eventually"]}
LOAD_STATE = {"loadState": {"type": "string", "examples": ["LoadStateLoaded"]},
              "loadPercent": {"type": "number", "minimum": 0, "maximum": 100},
              "loadError": {"type": "string"}}


def obj(properties: dict[str, Any], required: tuple[str, ...] = (), *, closed: bool = True,
        description: str | None = None) -> dict[str, Any]:
    """An object schema: ``closed`` refuses unknown keys, as the services' key checks do."""
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    if closed:
        out["additionalProperties"] = False
    if description:
        out["description"] = description
    return out


def answer(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """An answer's schema: the keys it always has, open to more (answers may grow)."""
    return obj(properties, required, closed=False)


FIELD = {**obj({
    "name": NAME, "type": {"type": "string", "examples": ["Int64", "VarChar", "FloatVector", "JSON"]},
    "isPrimary": {"type": "boolean"}, "autoId": {"type": "boolean"},
    "params": {"type": "object", "description": "`dim` of a vector, `max_length` of a VarChar",
               "examples": [{"dim": 128}]},
    "description": {"type": "string"}, "defaultValue": {"type": ["string", "integer", "number", "boolean"]},
    "fieldName": NAME, "dataType": {"type": "string"}, "isPrimaryKey": {"type": "boolean"},
    "autoID": {"type": "boolean"}, "elementTypeParams": {"type": "object"}, "typeParams": {"type": "object"},
}, description="a field; Milvus REST v2's spellings (fieldName, dataType, isPrimaryKey, elementTypeParams) "
               "are accepted too"), "anyOf": [{"required": ["name"]}, {"required": ["fieldName"]}]}
SCHEMA = obj({"fields": {"type": "array", "items": FIELD}, "description": {"type": "string"},
              "enableDynamicField": {"type": "boolean"}, "autoId": {"type": "boolean"},
              "autoID": {"type": "boolean"}, "name": {"type": "string"}}, ("fields",))
INDEX = {**obj({"field": NAME, "type": {"type": "string", "examples": ["AUTOINDEX", "IVF_FLAT", "HNSW"]},
             "metric": {"type": "string", "examples": ["L2", "IP", "COSINE"]},
             "params": {"type": "object", "examples": [{"nlist": 16}]}, "name": {"type": "string"},
             "fieldName": NAME, "indexType": {"type": "string"}, "metricType": {"type": "string"},
             "indexName": {"type": "string"}},
            description="`field` (or `fieldName`) is required; type defaults to AUTOINDEX"),
         "anyOf": [{"required": ["field"]}, {"required": ["fieldName"]}]}
INDEX_RECORD = answer({"name": {"type": "string"}, "id": INT64, "field": {"type": "string"},
                       "type": {"type": "string"}, "metric": {"type": "string"}, "params": {"type": "object"},
                       "state": {"type": "string"}, "totalRows": {"type": "integer"},
                       "indexedRows": {"type": "integer"}, "pendingRows": {"type": "integer"},
                       "progress": {"type": "integer"}, "failReason": {"type": "string"},
                       "placement": {"type": "object"}},
                      ("name", "field", "state", "progress"))
