"""``/v2/vectordb/partitions/*``: create, drop, has, list, load, release, get_stats.

The calls of the MilvusService's partition methods: the coordinator's ``Ddl`` (a new partition of a
loaded collection is loaded too; a dropped one is released first), its loads, and its row counts.
"""

from __future__ import annotations

import asyncio
from typing import Any

from vecgrid.cluster.querycoord.job.jobs import LoadRequest
from vecgrid.http.milvus_v2.handler import READ, WRITE, Action, Call, registry

ACTIONS: dict[str, Action] = {}
action = registry(ACTIONS)


@action("create", WRITE)
async def create(call: Call) -> dict[str, Any]:
    b, v2 = call.body, call.v2
    coll = await v2.collection(b.name())
    await v2.coord.ddl.create_partition(coll.id, b.name("partitionName"))
    v2.definitions_changed()
    return {}


@action("drop", WRITE)
async def drop(call: Call) -> dict[str, Any]:
    b, v2 = call.body, call.v2
    coll = await v2.collection(b.name())
    await v2.coord.ddl.drop_partition(coll.id, b.name("partitionName"))
    v2.definitions_changed()
    return {}


@action("has", READ)
async def has(call: Call) -> dict[str, bool]:
    b = call.body
    coll = await call.v2.collection(b.name())
    return {"has": b.name("partitionName") in coll.partition_names}


@action("list", READ)
async def list_partitions(call: Call) -> list[str]:
    return list((await call.v2.collection(call.body.name())).partition_names)


@action("get_stats", READ)
async def get_stats(call: Call) -> dict[str, int]:
    b, v2 = call.body, call.v2
    coll = await v2.collection(b.name())
    pid = coll.partition(b.name("partitionName")).partitionID
    return {"rowCount": await asyncio.to_thread(v2.coord.row_count, coll.id, pid)}


@action("load", WRITE)
async def load(call: Call) -> dict[str, Any]:
    b, v2 = call.body, call.v2
    coll = await v2.collection(b.name())
    pids = [coll.partition(p).partitionID for p in b.strings("partitionNames", required=True)]
    await v2.coord.load(LoadRequest(coll.id, pids, 0, [], []))
    return {}


@action("release", WRITE)
async def release(call: Call) -> dict[str, Any]:
    b, v2 = call.body, call.v2
    coll = await v2.collection(b.name())
    pids = [coll.partition(p).partitionID for p in b.strings("partitionNames", required=True)]
    await v2.coord.release_partitions(coll.id, pids)
    if v2.ctx.proxy is not None:
        v2.ctx.proxy.invalidate(coll.id)
    return {}
