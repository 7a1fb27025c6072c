"""``/v2/vectordb/databases/*``: create, drop, list, describe.

The calls of the MilvusService's database methods: the coordinator's ``Ddl`` for changes (a database
holding collections, and ``default``, are not dropped), the catalog for reads.  These actions name
their database in ``dbName`` itself, so they run in the default one.
"""

from __future__ import annotations

import asyncio
from typing import Any

from vecgrid.http.milvus_v2.handler import READ, WRITE, Action, Call, registry
from vecgrid.storage.catalog.schema_rules import kv_dict

ACTIONS: dict[str, Action] = {}
action = registry(ACTIONS)
#: the body key that names the database these actions work on (the handler also reads it: see the module)
DB_KEY = "dbName"


@action("create", WRITE)
async def create(call: Call) -> dict[str, Any]:
    properties = call.body.get("properties", dict, None)
    await call.v2.coord.ddl.create_database(call.body.name(DB_KEY), properties)
    return {}


@action("drop", WRITE)
async def drop(call: Call) -> dict[str, Any]:
    await call.v2.coord.ddl.drop_database(call.body.name(DB_KEY))
    call.v2.definitions_changed()
    return {}


@action("list", READ)
async def list_databases(call: Call) -> list[str]:
    return [d.name for d in await asyncio.to_thread(call.v2.catalog.list_databases)]


@action("describe", READ)
async def describe(call: Call) -> dict[str, Any]:
    db = await asyncio.to_thread(call.v2.catalog.describe_database, call.body.name(DB_KEY))
    return {"dbName": db.name, "dbID": db.id, "properties": [{"key": k, "value": v}
                                                            for k, v in kv_dict(db.properties).items()]}
