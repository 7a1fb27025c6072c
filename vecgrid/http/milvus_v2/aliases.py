"""``/v2/vectordb/aliases/*``: create, drop, alter, describe, list.

The calls of the MilvusService's alias methods: the coordinator's ``Ddl`` for changes, the catalog for
reads (an alias is resolved wherever a collection name is read, these routes included).
"""

from __future__ import annotations

import asyncio
from typing import Any

from vecgrid.http.milvus_v2.handler import READ, WRITE, Action, Call, registry
from vecgrid.storage.catalog.schema_rules import DEFAULT_DB_NAME

ACTIONS: dict[str, Action] = {}
action = registry(ACTIONS)


@action("create", WRITE)
async def create(call: Call) -> dict[str, Any]:
    b, v2 = call.body, call.v2
    await v2.coord.ddl.create_alias(v2.db, b.name("aliasName"), b.name())
    v2.definitions_changed()
    return {}


@action("alter", WRITE)
async def alter(call: Call) -> dict[str, Any]:
    b, v2 = call.body, call.v2
    await v2.coord.ddl.alter_alias(v2.db, b.name("aliasName"), b.name())
    v2.definitions_changed()
    return {}


@action("drop", WRITE)
async def drop(call: Call) -> dict[str, Any]:
    await call.v2.coord.ddl.drop_alias(call.v2.db, call.body.name("aliasName"))
    call.v2.definitions_changed()
    return {}


@action("describe", READ)
async def describe(call: Call) -> dict[str, str]:
    alias = call.body.name("aliasName")
    collection = await asyncio.to_thread(call.v2.catalog.describe_alias, call.v2.db, alias)
    return {"aliasName": alias, "collectionName": collection, "dbName": call.v2.db or DEFAULT_DB_NAME}


@action("list", READ)
async def list_aliases(call: Call) -> list[str]:
    collection = call.body.get("collectionName", str, "")
    return [alias for alias, _ in await asyncio.to_thread(call.v2.catalog.list_aliases, call.v2.db, collection)]
