"""The entities service keeps a collection's description between calls (no catalog read per search) and
sees every definition change at once: a rename, a drop, a collection made again with a new field, a new
partition through REST — and one made behind REST's back (the coordinator's own DDL), which the first
read that fails on the kept description finds by describing again.  Over real HTTP against a
coordinator with two QueryNodes in this process (thread workers)."""

from __future__ import annotations


import numpy as np
import pytest
import pytest_asyncio

from tests.rest_support import RestServer, rest_cluster
from vecgrid.deploy import Coordinator

pytest.importorskip("faiss")
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

DIM = 4
MODULES = ["collections", "partitions", "indexes", "entities"]


class Env:
    def __init__(self, coordinator: Coordinator, rest: RestServer) -> None:
        self.coordinator, self.rest = coordinator, rest
        self.proxy = coordinator.proxy
        self.described: list[str] = []   # names the proxy read from the catalog, in order
        catalog = self.proxy.catalog
        real = catalog.describe

        async def counting(name: str, db_name: str = ""):
            self.described.append(name)
            return await real(name, db_name)
        catalog.describe = counting

    async def create_loaded(self, name: str, extra_fields: list[dict] = ()) -> None:
        schema = {"enableDynamicField": False, "fields": [
            {"name": "id", "type": "Int64", "isPrimary": True},
            {"name": "vector", "type": "FloatVector", "params": {"dim": DIM}}, *extra_fields]}
        code, body = await self.rest.call("POST", "/collections", {
            "name": name, "schema": schema, "indexes": [{"field": "vector", "type": "FLAT", "metric": "L2"}]})
        assert code == 201, body
        code, body = await self.rest.call("POST", "/collections", {"name": name, "wait": True, "timeout": 120},
                                          method="load")
        assert code == 200 and body["loadState"] == "LoadStateLoaded", body

    async def insert(self, name: str, rows: list[dict]) -> None:
        code, body = await self.rest.call("POST", f"/collections/{name}/entities", rows)
        assert code == 201, body

    async def count(self, name: str, **body) -> tuple[int, dict]:
        return await self.rest.call("POST", f"/collections/{name}/entities", body, method="count")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory):
    async with rest_cluster(tmp_path_factory, "rest-entities-meta", MODULES) as (coordinator, rest):
        yield Env(coordinator, rest)


def rows(ids, **fields) -> list[dict]:
    rng = np.random.default_rng(len(ids))
    return [{"id": i, "vector": rng.random(DIM).tolist(), **fields} for i in ids]


async def test_reads_describe_the_collection_once_until_a_definition_changes(env):
    await env.create_loaded("kept")
    await env.insert("kept", rows(range(5)))
    env.described.clear()
    for _ in range(3):
        assert await env.count("kept") == (200, {"count": 5})
        code, hits = await env.rest.call("POST", "/collections/kept/entities", {"vector": [0.5] * DIM, "limit": 2},
                                         method="search")
        assert code == 200 and len(hits[0]) == 2
        code, page = await env.rest.call("GET", "/collections/kept/entities?$limit=1")
        assert code == 200 and page["total"] == 5
    assert env.described.count("kept") <= 1   # the first read, unless an earlier call kept it already
    code, body = await env.rest.call("POST", "/collections/kept/partitions", {"name": "p1"})
    assert code == 201, body
    env.described.clear()
    assert await env.count("kept", partitions=["p1"]) == (200, {"count": 0})
    assert env.described == ["kept"]    # the partition change dropped the kept description


async def test_a_rename_is_seen_at_once(env):
    await env.create_loaded("before")
    await env.insert("before", rows(range(3)))
    assert await env.count("before") == (200, {"count": 3})   # kept now
    code, body = await env.rest.call("POST", "/collections", {"name": "before", "newName": "after"}, method="rename")
    assert code == 200, body
    code, body = await env.count("before")
    assert code == 404 and body["name"] == "NotFound", body
    assert await env.count("after") == (200, {"count": 3})


async def test_a_drop_and_a_collection_made_again_with_a_new_field_are_seen_at_once(env):
    await env.create_loaded("again")
    await env.insert("again", rows(range(4)))
    assert await env.count("again") == (200, {"count": 4})
    code, body = await env.rest.call("DELETE", "/collections/again")
    assert code == 200, body
    code, body = await env.count("again")
    assert code == 404 and body["name"] == "NotFound", body
    await env.create_loaded("again", [{"name": "color", "type": "VarChar", "params": {"max_length": 16}}])
    await env.insert("again", rows([7], color="red"))
    code, page = await env.rest.call("GET", "/collections/again/entities?color=red&$select[]=color")
    assert code == 200, page
    assert page["data"] == [{"id": 7, "color": "red"}]


async def test_a_partition_made_behind_rest_is_found_by_describing_again(env):
    """The coordinator's own DDL (an import job, a script in the process) does not pass REST's hooks: the
    read that fails on the kept description describes the collection again and is tried once more."""
    await env.create_loaded("aside")
    await env.insert("aside", rows(range(2)))
    assert await env.count("aside") == (200, {"count": 2})   # kept now
    coll_id = (await env.proxy.describe("aside", fresh=True)).id
    await env.coordinator.coord.ddl.create_partition(coll_id, "side")
    env.described.clear()
    assert await env.count("aside", partitions=["side"]) == (200, {"count": 0})
    assert env.described == ["aside"]
    code, body = await env.count("aside", partitions=["nowhere"])   # a real miss still fails, described once
    assert code == 404 and body["name"] == "NotFound", body
    assert env.described == ["aside", "aside"]
