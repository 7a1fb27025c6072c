"""``/v2/vectordb/indexes/*``: create, describe, list, drop.

``create`` defines each of ``indexParams`` (Milvus's ``{fieldName, indexName, metricType, indexType?,
params?}``) with the coordinator's ``Ddl``; ``describe`` answers the index's build state and rows
(Milvus's DescribeIndex: ``indexState``, ``totalRows``, ``indexedRows``, ``pendingRows``,
``failReason``); ``drop`` of a loaded collection's index is refused as Milvus refuses it (release
first).
"""

from __future__ import annotations

import asyncio
from typing import Any

from vecgrid import errors
from vecgrid.http.milvus_v2.collections import index_request
from vecgrid.http.milvus_v2.handler import READ, WRITE, Action, Call, registry
from vecgrid.proto import common_pb2
from vecgrid.storage.catalog.index_rules import INDEX_TYPE_KEY, METRIC_TYPE_KEY
from vecgrid.storage.catalog.schema_rules import kv_dict

ACTIONS: dict[str, Action] = {}
action = registry(ACTIONS)


@action("create", WRITE)
async def create(call: Call) -> dict[str, Any]:
    b, v2 = call.body, call.v2
    name = b.name()
    requests = [index_request(item, f"indexParams[{i}]")
                for i, item in enumerate(b.get("indexParams", list, required=True))]
    try:
        for req in requests:
            await v2.coord.ddl.create_index(v2.db, name, req)
    finally:
        v2.definitions_changed()
    return {}


@action("list", READ)
async def list_indexes(call: Call) -> list[str]:
    coll = await call.v2.collection(call.body.name())
    return [i.index_name for i in await asyncio.to_thread(call.v2.catalog.describe_index, coll.id)]


@action("describe", READ)
async def describe(call: Call) -> list[dict[str, Any]]:
    b, v2 = call.body, call.v2
    coll = await v2.collection(b.name())
    index_name = b.name("indexName")
    infos = [i for i in await asyncio.to_thread(v2.catalog.describe_index, coll.id) if i.index_name == index_name]
    if not infos:
        raise errors.IndexNotFound(f"collection {coll.name!r} has no index {index_name!r}", collection=coll.name)
    out = []
    for i in infos:
        # as Milvus's DescribeIndex: the parameters the user gave (AUTOINDEX stays AUTOINDEX)
        built = kv_dict(i.index_params)
        params = {**built, **kv_dict(i.user_index_params)}
        out.append({"indexName": i.index_name, "fieldName": coll.field_by_id(i.fieldID).name,
                    "indexType": params.get(INDEX_TYPE_KEY, ""), "metricType": params.get(METRIC_TYPE_KEY, ""),
                    "totalRows": i.total_rows, "pendingRows": i.pending_index_rows, "indexedRows": i.indexed_rows,
                    "indexState": common_pb2.IndexState.Name(i.state), "failReason": i.index_state_fail_reason})
    return out


@action("drop", WRITE)
async def drop(call: Call) -> dict[str, Any]:
    b, v2 = call.body, call.v2
    await v2.coord.ddl.drop_named_index(v2.db, b.name(), index_name=b.name("indexName"))
    v2.definitions_changed()
    return {}
