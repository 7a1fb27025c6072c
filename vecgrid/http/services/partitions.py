"""``collections/:collection/partitions``: a collection's partitions with their row counts, load state
and placement (``InGPU`` / ``PartialInGPU`` / ``InMemory`` / ``PartialInMemory``, or ``NotLoaded``);
create, remove (released first), and the custom ``load`` / ``release`` (``rest-api.md``).

A partition is named by its name (the path id; ``partitions`` in the custom methods' body).
``rowCount`` follows the collections service: exact for a loaded partition, else its flushed and
unflushed rows (Milvus's ``GetPartitionStatistics``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from vecgrid import errors
from vecgrid.cluster.querycoord.ddl import LOADED, load_state, wait_loaded
from vecgrid.cluster.querycoord.job.jobs import LoadRequest
from vecgrid.common.feathers_errors import BadRequest, Conflict
from vecgrid.http.services.collection_common import (READ, WRITE, body, check_keys, describe, json_int, load_json,
                                                     positive_int, route_collection, string_list)
from vecgrid.http.services.doc_schemas import LOAD_STATE, NAME, NAMES, POSITIVE, answer, obj
from vecgrid.proto import query_coord_pb2
from vecgrid.storage.catalog import CollectionInfo

NOT_LOADED = "NotLoaded"
DEFAULT_LOAD_WAIT_S = 300.0


class PartitionsService:
    RIGHTS = {"find": READ, "get": READ, "create": WRITE, "remove": WRITE, "load": WRITE, "release": WRITE}
    _RECORD = answer({"name": {"type": "string"}, "id": {"type": ["integer", "string"]}, "collection": {"type": "string"},
                      "rowCount": {"type": "integer"}, "rowCountError": {"type": "string"},
                      "placement": {"type": "string"}, **LOAD_STATE}, ("name", "id", "collection", "rowCount"))
    _LOADED = answer({"collection": {"type": "string"}, "partitions": NAMES, **LOAD_STATE},
                     ("collection", "partitions", "loadState"))
    OPENAPI = {"tag": "Partitions of a collection; custom load and release", "multi": False, "docs": {
        "find": {"summary": "List the collection's partitions", "result": {"type": "array", "items": _RECORD}},
        "get": {"summary": "A partition by name", "result": _RECORD},
        "create": {"summary": "Create a partition", "errors": [409], "data": obj({"name": NAME}, ("name",)),
                   "example": {"name": "p1"}, "result": _RECORD},
        "remove": {"summary": "Drop a partition by name", "result": _RECORD},
        "load": {"summary": "Load partitions (wait: true answers once loaded)", "errors": [404],
                 "data": obj({"partitions": {**NAMES, "minItems": 1}, "replicas": POSITIVE, "resourceGroups": NAMES,
                              "refresh": {"type": "boolean"}, "wait": {"type": "boolean"},
                              "timeout": {"type": "number", "exclusiveMinimum": 0}}, ("partitions",)),
                 "example": {"partitions": ["_default"], "wait": True}, "result": _LOADED},
        "release": {"summary": "Release partitions", "errors": [404],
                    "data": obj({"partitions": {**NAMES, "minItems": 1}}, ("partitions",)),
                    "example": {"partitions": ["_default"]}, "result": _LOADED},
    }}

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.coord = ctx.coord
        self.catalog = ctx.coord.catalog

    async def _record(self, coll: CollectionInfo, part, placements: dict[int, int]) -> dict[str, Any]:
        state = load_state(self.coord, coll.id, [part.partitionID])
        out = {"name": part.partitionName, "id": json_int(part.partitionID), "collection": coll.name}
        count = None
        if state.state == LOADED and self.ctx.proxy is not None:
            try:
                count = await self.ctx.proxy.count(coll.name, partition_names=[part.partitionName])
            except errors.MilvusError as e:
                out["rowCountError"] = str(e)
        if count is None:
            count = await asyncio.to_thread(self.coord.row_count, coll.id, part.partitionID)
        out["rowCount"] = count
        out.update(load_json(state))
        placement = placements.get(part.partitionID)
        out["placement"] = query_coord_pb2.PartitionState.Name(placement) if placement is not None else NOT_LOADED
        return out

    def _placements(self, coll: CollectionInfo) -> dict[int, int]:
        if self.coord.collections.get(coll.id) is None:
            return {}
        return {s.partitionID: s.state for s in self.coord.partition_states(coll.id, [])}

    async def find(self, params: dict) -> list[dict[str, Any]]:
        coll = await describe(self.catalog, route_collection(params))
        placements = self._placements(coll)
        return [await self._record(coll, p, placements) for p in coll.partitions]

    async def get(self, id: str, params: dict) -> dict[str, Any]:  # noqa: A002
        coll = await describe(self.catalog, route_collection(params))
        return await self._record(coll, coll.partition(id), self._placements(coll))

    async def create(self, data: Any, params: dict) -> dict[str, Any]:
        data = body(data, "create")
        check_keys(data, {"name": str}, "partition", required=("name",))
        coll = await describe(self.catalog, route_collection(params))
        if data["name"] in coll.partition_names:
            raise Conflict(f"partition {data['name']!r} of collection {coll.name!r} already exists",
                           data={"collection": coll.name, "partition": data["name"]})
        part = await self.coord.ddl.create_partition(coll.id, data["name"])
        coll = await asyncio.to_thread(self.catalog.get_collection, coll.id)
        return await self._record(coll, part, self._placements(coll))

    async def remove(self, id: str, params: dict) -> dict[str, Any]:  # noqa: A002
        if id is None:
            raise BadRequest("remove a partition by its name (.../partitions/NAME)")
        coll = await describe(self.catalog, route_collection(params))
        before = await self._record(coll, coll.partition(id), self._placements(coll))
        await self.coord.ddl.drop_partition(coll.id, id)
        return {**before, "loadState": "LoadStateNotLoad", "loadPercent": 0, "placement": NOT_LOADED}

    async def _partition_ids(self, data: dict, coll: CollectionInfo, what: str) -> list[int]:
        names = string_list(data, "partitions", what)
        if not names:
            raise BadRequest(f"Invalid {what}: partitions must name at least one partition",
                             errors={"partitions": "is required"})
        return [coll.partition(n).partitionID for n in names]

    async def load(self, data: Any, params: dict) -> dict[str, Any]:
        data = body(data, "load")
        check_keys(data, {"partitions": list, "replicas": int, "resourceGroups": list, "refresh": bool,
                          "wait": bool, "timeout": (int, float)}, "load", required=("partitions",))
        rgs = string_list(data, "resourceGroups", "load")
        replicas = positive_int(data, "replicas", "load")
        timeout = data.get("timeout")
        timeout = DEFAULT_LOAD_WAIT_S if timeout is None else timeout   # null = not given, as for every key
        if timeout <= 0:
            raise BadRequest("Invalid load: timeout must be positive", errors={"timeout": "must be positive"})
        coll = await describe(self.catalog, route_collection(params))
        pids = await self._partition_ids(data, coll, "load")
        await self.coord.load(LoadRequest(coll.id, pids, replicas, rgs, [], bool(data.get("refresh"))))
        state = await wait_loaded(self.coord, coll.id, pids, timeout) if data.get("wait") else \
            load_state(self.coord, coll.id, pids)
        return {"collection": coll.name, "partitions": data["partitions"], **load_json(state)}

    async def release(self, data: Any, params: dict) -> dict[str, Any]:
        data = body(data, "release")
        check_keys(data, {"partitions": list}, "release", required=("partitions",))
        coll = await describe(self.catalog, route_collection(params))
        pids = await self._partition_ids(data, coll, "release")
        await self.coord.release_partitions(coll.id, pids)
        return {"collection": coll.name, "partitions": data["partitions"], **load_json(load_state(self.coord, coll.id))}


def mount(api, ctx) -> None:
    api.use("collections/:collection/partitions", PartitionsService(ctx),
            {"methods": ["find", "get", "create", "remove", "load", "release"]})
