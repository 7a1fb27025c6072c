"""``collections/:collection/indexes``: the vector indexes of a collection (``rest-api.md``).

An index is named by its index name or its field's name (the path id).  ``create`` takes
``{field, type, metric, params, name?}`` (the catalog's rules: Milvus 2.4's index types, metrics and
parameter ranges); ``get`` reports the build ``state``, ``totalRows``, ``indexedRows``, ``pendingRows``
and ``progress`` (% of the flushed segments' rows indexed, as Milvus's DescribeIndex counts them), the
index builder's ``failReason``, and where the loaded copies are served from (``placement``: copies per
``GPU`` / ``CPU``).  ``remove`` of a loaded collection's index is refused (release it first).
"""

from __future__ import annotations

import asyncio
from typing import Any

from vecgrid import errors
from vecgrid.common.feathers_errors import BadRequest, Conflict
from vecgrid.http.services.collection_common import READ, WRITE, body, describe, index_json, route_collection
from vecgrid.http.services.collections import index_requests, with_progress
from vecgrid.http.services.doc_schemas import INDEX, INDEX_RECORD
from vecgrid.storage.catalog import CollectionInfo


class IndexesService:
    RIGHTS = {"find": READ, "get": READ, "create": WRITE, "remove": WRITE}
    OPENAPI = {"tag": "Indexes of a collection (one per field), with build progress", "multi": False, "docs": {
        "find": {"summary": "List the collection's indexes with their build progress",
                 "result": {"type": "array", "items": INDEX_RECORD}},
        "get": {"summary": "An index by its name or its field's name", "result": INDEX_RECORD},
        "create": {"summary": "Create the index of a field", "errors": [409], "data": INDEX,
                   "example": {"field": "vector", "type": "IVF_FLAT", "metric": "L2", "params": {"nlist": 16}},
                   "result": INDEX_RECORD},
        "remove": {"summary": "Drop an index (refused while the collection is loaded)", "result": INDEX_RECORD},
    }}

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.coord = ctx.coord
        self.catalog = ctx.coord.catalog

    async def _json(self, coll: CollectionInfo, info) -> dict[str, Any]:
        reason = ""
        if self.ctx.datacoord is not None:
            reason = await self.ctx.datacoord.index_fail_reason(coll.id, info.fieldID)
        placement = self.coord.index_placement(coll.id, info.fieldID)
        return with_progress(index_json(coll, info, placement, reason))

    async def _find_one(self, coll: CollectionInfo, id: str):  # noqa: A002
        infos = await asyncio.to_thread(self.catalog.describe_index, coll.id)
        for info in infos:
            if info.index_name == id or coll.field_by_id(info.fieldID).name == id:
                return info
        raise errors.IndexNotFound(f"collection {coll.name!r} has no index named {id!r} (nor on a field of that name)",
                                   collection=coll.name)

    async def find(self, params: dict) -> list[dict[str, Any]]:
        coll = await describe(self.catalog, route_collection(params))
        return [await self._json(coll, i) for i in await asyncio.to_thread(self.catalog.describe_index, coll.id)]

    async def get(self, id: str, params: dict) -> dict[str, Any]:  # noqa: A002
        coll = await describe(self.catalog, route_collection(params))
        return await self._json(coll, await self._find_one(coll, id))

    async def create(self, data: Any, params: dict) -> dict[str, Any]:
        req = index_requests([body(data, "create")], "index")[0]
        coll = await describe(self.catalog, route_collection(params))
        field = coll.field(req.field)
        existing = await asyncio.to_thread(self.catalog.describe_index, coll.id, req.field)
        if existing:
            raise Conflict(f"field {req.field!r} of collection {coll.name!r} already has index "
                           f"{existing[0].index_name!r}; remove it first", data={"index": existing[0].index_name})
        await self.coord.ddl.create_index(coll.db_name, coll.name, req)
        return await self._json(coll, (await asyncio.to_thread(self.catalog.describe_index, coll.id, field.name))[0])

    async def remove(self, id: str, params: dict) -> dict[str, Any]:  # noqa: A002
        if id is None:
            raise BadRequest("remove an index by its name (.../indexes/NAME)")
        coll = await describe(self.catalog, route_collection(params))
        info = await self._find_one(coll, id)
        before = await self._json(coll, info)
        await self.coord.ddl.drop_index(coll.id, coll.field_by_id(info.fieldID).name)
        return before


def mount(api, ctx) -> None:
    api.use("collections/:collection/indexes", IndexesService(ctx), {"methods": ["find", "get", "create", "remove"]})
