"""The data-plane REST services ``collections``, ``collections/:collection/partitions``,
``collections/:collection/indexes`` over real HTTP, against a coordinator with two QueryNodes in this
process (an in-process Dask cluster of thread workers).  Every refused call is checked to have changed
nothing: the catalog (collections, partitions, indexes) and the loads are compared before and after."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio

from vecgrid.deploy import Coordinator
from vecgrid.cluster.querycoord import ddl
from tests.conftest import poll_until
from tests.rest_support import RestServer, catalog_state, rest_cluster

pytest.importorskip("faiss")
pytestmark = pytest.mark.asyncio(loop_scope="module")

DIM = 8
MODULES = ["collections", "partitions", "indexes", "import_jobs"]


class Env:
    def __init__(self, coordinator: Coordinator, rest: RestServer) -> None:
        self.coordinator, self.rest = coordinator, rest
        self.qc = coordinator.coord
        self.catalog = coordinator.coord.catalog
        self.proxy = coordinator.proxy

    def state(self):
        return catalog_state(self.catalog, self.qc)

    async def refused(self, status: int, verb: str, path: str, data=None, *, method=None, raw=None,
                      name: str | None = None) -> dict:
        """The call answers ``status`` with a Feathers body (of ``name``) and changes nothing."""
        before = self.state()
        code, body = await self.rest.call(verb, path, data, method=method, raw=raw)
        assert code == status, body
        assert body["code"] == status and body["className"]
        if name is not None:
            assert body["name"] == name
        assert self.state() == before
        return body


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory):
    async with rest_cluster(tmp_path_factory, "rest-collections", MODULES) as (coordinator, rest):
        yield Env(coordinator, rest)


def vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((n, DIM), dtype=np.float32)


async def create_quick(env: Env, name: str, **extra) -> dict:
    code, body = await env.rest.call("POST", "/collections", {
        "name": name, "dimension": DIM, "metric": "L2",
        "indexes": [{"field": "vector", "type": "FLAT", "metric": "L2"}], **extra})
    assert code == 201, body
    return body


async def load_and_wait(env: Env, name: str) -> dict:
    code, body = await env.rest.call("POST", "/collections", {"name": name, "wait": True, "timeout": 120},
                                     method="load")
    assert code == 200, body
    assert (body["loadState"], body["loadPercent"]) == ("LoadStateLoaded", 100)
    return body


# --- collections --------------------------------------------------------------------------------------------

async def test_quick_create_answers_the_description_of_a_pymilvus_style_collection(env):
    body = await create_quick(env, "quick")
    fields = {f["name"]: f for f in body["schema"]["fields"]}
    assert fields["id"]["type"] == "Int64" and fields["id"]["isPrimary"] and not fields["id"]["autoId"]
    assert fields["vector"]["type"] == "FloatVector" and fields["vector"]["params"] == {"dim": DIM}
    assert body["schema"]["enableDynamicField"] is True
    assert [i["type"] for i in body["indexes"]] == ["FLAT"] and body["indexes"][0]["metric"] == "L2"
    assert body["loadState"] == "LoadStateNotLoad" and body["rowCount"] == 0
    assert [p["name"] for p in body["partitions"]] == ["_default"]
    code, listed = await env.rest.call("GET", "/collections")
    assert code == 200 and {"name": "quick", "id": body["id"], "rowCount": 0, "loadState": "LoadStateNotLoad",
                            "loadPercent": 0} in listed


async def test_varchar_ids_and_auto_id_in_the_quick_form(env):
    body = await create_quick(env, "quick_str", idType="VarChar", maxLength=64)
    pk = body["schema"]["fields"][0]
    assert (pk["name"], pk["type"], pk["params"]) == ("id", "VarChar", {"max_length": 64})
    body = await create_quick(env, "quick_auto", autoId=True)
    assert body["schema"]["fields"][0]["autoId"] is True


async def test_create_with_a_full_schema(env):
    code, body = await env.rest.call("POST", "/collections", {"name": "full", "shards": 2, "schema": {
        "description": "a full one", "enableDynamicField": False, "fields": [
            {"name": "pk", "type": "Int64", "isPrimary": True},
            {"fieldName": "emb", "dataType": "FloatVector", "elementTypeParams": {"dim": 4}},
            {"name": "title", "type": "VarChar", "params": {"max_length": 32}},
            {"name": "score", "type": "Double", "defaultValue": 0.5}]},
        "indexes": [{"field": "emb", "type": "IVF_FLAT", "metric": "IP", "params": {"nlist": 16}}]})
    assert code == 201, body
    assert body["shards"] == 2 and len(body["channels"]) == 2 and body["description"] == "a full one"
    assert [f["name"] for f in body["schema"]["fields"]] == ["pk", "emb", "title", "score"]
    assert body["schema"]["fields"][3]["defaultValue"] == 0.5
    index = body["indexes"][0]
    assert (index["field"], index["type"], index["metric"], index["params"]) == ("emb", "IVF_FLAT", "IP", {"nlist": 16})


async def test_bad_creates_are_refused_and_write_nothing(env):
    await env.refused(400, "POST", "/collections", raw=b'{"name": "x", "dimension": ', name="BadRequest")
    body = await env.refused(400, "POST", "/collections", {"name": "x", "dimension": 4, "colour": "red"})
    assert body["errors"] == {"colour": "is not a known field"}
    await env.refused(400, "POST", "/collections", {"name": "x"})                       # neither schema nor dimension
    await env.refused(400, "POST", "/collections", {"name": "x", "dimension": "8"})     # wrong type
    await env.refused(400, "POST", "/collections", {"name": "x", "dimension": 0})       # Milvus's dim rule
    await env.refused(400, "POST", "/collections", {"name": "1x", "dimension": 4})      # Milvus's name rule
    await env.refused(400, "POST", "/collections", {"name": "x", "dimension": 4, "idType": "Float"})
    body = await env.refused(400, "POST", "/collections", {"name": "x", "schema": {"fields": [
        {"name": "pk", "type": "Int64", "isPrimary": True}, {"name": "v", "type": "Vector"}]}})
    assert body["errors"] == {"fields[1].type": "unknown data type 'Vector'"}
    await env.refused(400, "POST", "/collections", {"name": "x", "schema": {"fields": [
        {"name": "pk", "type": "Int64", "isPrimary": True}]}})                           # no vector field
    # the index is checked before the collection is written: nothing of it stays
    await env.refused(400, "POST", "/collections", {"name": "x", "dimension": 4,
                                                    "indexes": [{"field": "vector", "type": "NOPE"}]})
    await env.refused(400, "POST", "/collections", {"name": "x", "dimension": 4,
                                                    "indexes": [{"field": "vector", "type": "IVF_FLAT",
                                                                 "metric": "L2", "params": {"nlist": 0}}]})
    await env.refused(400, "POST", "/collections", {"name": "x", "dimension": 4, "indexes": [{"field": "id"}]})
    await env.refused(400, "POST", "/collections", {"name": "x", "dimension": 4,
                                                    "indexes": [{"field": "vector", "name": "bad-name"}]})
    await env.refused(404, "POST", "/collections", {"name": "x", "dimension": 4, "load": True,
                                                    "resourceGroups": ["no_such_group"]})
    await env.refused(400, "POST", "/collections", {"name": "x", "dimension": 4, "replicas": 2})


async def test_a_duplicate_name_is_a_conflict(env):
    await create_quick(env, "dup")
    body = await env.refused(409, "POST", "/collections", {"name": "dup", "dimension": DIM}, name="Conflict")
    assert "already exists" in body["message"]


async def test_unknown_collection_is_not_found(env):
    body = await env.refused(404, "GET", "/collections/nope", name="NotFound")
    assert body["data"]["milvusCode"] == 100
    await env.refused(404, "DELETE", "/collections/nope")
    await env.refused(404, "PATCH", "/collections/nope", {"description": "x"})
    await env.refused(404, "POST", "/collections", {"name": "nope"}, method="load")
    await env.refused(404, "POST", "/collections", {"name": "nope", "newName": "other"}, method="rename")


async def test_create_with_load_then_insert_count_search_and_describe(env):
    await create_quick(env, "loaded", load=True)
    await load_and_wait(env, "loaded")
    xs = vectors(30, seed=1)
    await env.proxy.insert("loaded", [{"id": i, "vector": xs[i].tolist(), "colour": "red" if i % 2 else "blue"}
                                      for i in range(30)])
    code, body = await env.rest.call("GET", "/collections/loaded")
    assert code == 200, body
    assert (body["loadState"], body["loadPercent"], body["rowCount"]) == ("LoadStateLoaded", 100, 30)
    assert body["replicas"] == 1 and body["resourceGroups"] == ["__default_resource_group"]
    assert [(p["name"], p["loadPercent"]) for p in body["partitionStates"]] == [("_default", 100)]
    assert body["partitionStates"][0]["state"] in ("InGPU", "PartialInGPU", "InMemory")
    hits = await env.proxy.search("loaded", xs[:2], limit=1)
    assert [h[0]["id"] for h in hits] == [0, 1]
    code, listed = await env.rest.call("GET", "/collections")
    entry = next(c for c in listed if c["name"] == "loaded")
    assert (entry["rowCount"], entry["loadState"]) == (30, "LoadStateLoaded")


async def test_create_with_load_answers_once_the_collection_is_loaded(env):
    """A collection created with ``load: true`` is searchable when the create answers (as pymilvus's
    ``create_collection`` waits for its load): a search right after it found the load still going (409)."""
    created = await create_quick(env, "ready", load=True)
    assert (created["loadState"], created["loadPercent"]) == ("LoadStateLoaded", 100), created
    hits = await env.proxy.search("ready", vectors(1), limit=1)
    assert hits == [[]]
    # wait: false answers at once, the load going on; wait belongs to load: true
    code, body = await env.rest.call("POST", "/collections", {"name": "ready_later", "dimension": DIM, "load": True,
                                                              "wait": False})
    assert code == 201, body
    await load_and_wait(env, "ready_later")
    await env.refused(400, "POST", "/collections", {"name": "x", "dimension": DIM, "wait": True}, name="BadRequest")


async def test_create_with_a_load_not_done_in_its_wait_answers_a_timeout_and_the_load_goes_on(env, monkeypatch):
    """The create's wait is bounded: past it the collection is created, the load going on."""
    monkeypatch.setattr(ddl, "CREATE_LOAD_WAIT_S", 0.0)
    code, body = await env.rest.call("POST", "/collections", {"name": "waiting", "dimension": DIM, "load": True})
    assert (code, body["name"]) == (408, "Timeout"), body
    assert "the load goes on" in body["message"]
    await load_and_wait(env, "waiting")


async def row_counts(env: Env, name: str) -> tuple[int, int, int]:
    """``rowCount`` of the collection's ``get``, of its entry in the listing, and of its default partition."""
    code, got = await env.rest.call("GET", f"/collections/{name}")
    assert code == 200, got
    code, listed = await env.rest.call("GET", "/collections")
    assert code == 200, listed
    code, parts = await env.rest.call("GET", f"/collections/{name}/partitions")
    assert code == 200, parts
    return got["rowCount"], next(c for c in listed if c["name"] == name)["rowCount"], parts[0]["rowCount"]


async def test_row_count_includes_unflushed_rows_of_a_collection_not_loaded(env):
    await create_quick(env, "unflushed")
    await env.proxy.insert("unflushed", [{"id": i, "vector": v.tolist()} for i, v in enumerate(vectors(17, seed=5))])
    assert await row_counts(env, "unflushed") == (17, 17, 17)   # never loaded, nothing flushed
    code, body = await env.rest.call("POST", "/collections", {"name": "unflushed", "wait": True}, method="flush")
    assert code == 200, body
    assert await row_counts(env, "unflushed") == (17, 17, 17)


async def test_row_count_of_a_released_collection_includes_its_unflushed_rows(env):
    created = await create_quick(env, "released", load=True)
    await load_and_wait(env, "released")
    xs = vectors(27, seed=6)
    await env.proxy.insert("released", [{"id": i, "vector": xs[i].tolist()} for i in range(23)])
    code, body = await env.rest.call("POST", "/collections", {"name": "released", "wait": True}, method="flush")
    assert code == 200, body
    # flushed while loaded: the growing segment may wait for its sealed copy to serve; counted once
    assert env.qc.row_count(int(created["id"])) == 23
    await env.proxy.insert("released", [{"id": i, "vector": xs[i].tolist()} for i in range(23, 27)])
    assert await row_counts(env, "released") == (27, 27, 27)   # loaded: count(*)
    code, body = await env.rest.call("POST", "/collections", {"name": "released"}, method="release")
    assert (code, body["loadState"]) == (200, "LoadStateNotLoad")
    assert await row_counts(env, "released") == (27, 27, 27)   # 23 flushed, 4 in the log only
    code, body = await env.rest.call("POST", "/collections", {"name": "released", "wait": True}, method="flush")
    assert code == 200, body
    assert await row_counts(env, "released") == (27, 27, 27)


async def test_load_release_and_partial_loads(env):
    await create_quick(env, "lr")
    await env.refused(404, "POST", "/collections", {"name": "lr", "partitions": ["nope"]}, method="load")
    await env.refused(400, "POST", "/collections", {"name": "lr", "fields": ["nope"]}, method="load")
    await env.refused(400, "POST", "/collections", {"name": "lr", "replicas": 0}, method="load")
    await env.refused(400, "POST", "/collections", {"name": "lr", "wait": "yes"}, method="load")
    code, body = await env.rest.call("POST", "/collections", {"name": "lr"}, method="load")
    assert code == 200 and body["loadState"] in ("LoadStateLoading", "LoadStateLoaded")
    await load_and_wait(env, "lr")
    code, body = await env.rest.call("POST", "/collections", {"name": "lr"}, method="release")
    assert (code, body["loadState"]) == (200, "LoadStateNotLoad")
    assert env.qc.collections.get(env.catalog.describe_collection("default", "lr").id) is None
    code, body = await env.rest.call("POST", "/collections", {"name": "lr", "partitions": ["_default"],
                                                              "wait": True, "timeout": 120}, method="load")
    assert (code, body["loadState"]) == (200, "LoadStateLoaded")
    code, body = await env.rest.call("POST", "/collections", {"name": "lr", "partitions": ["_default"]},
                                     method="release")
    assert (code, body["loadState"]) == (200, "LoadStateNotLoad")


async def test_patch_description_properties_and_load_config(env):
    await create_quick(env, "pt")
    code, body = await env.rest.call("PATCH", "/collections/pt", {"description": "patched",
                                                                  "properties": {"collection.ttl.seconds": 60}})
    assert code == 200, body
    assert body["description"] == "patched" and body["properties"] == {"collection.ttl.seconds": "60"}
    await env.refused(400, "PATCH", "/collections/pt", {"properties": {"collection.ttl.seconds": -5}})
    await env.refused(400, "PATCH", "/collections/pt", {"name": "other"})
    body = await env.refused(409, "PATCH", "/collections/pt", {"replicas": 1})   # not loaded
    assert body["data"]["milvusCode"] == 101
    await load_and_wait(env, "pt")
    await env.refused(404, "PATCH", "/collections/pt", {"resourceGroups": ["no_such_group"], "description": "x"})
    code, body = await env.rest.call("PATCH", "/collections/pt", {"replicas": 2})
    assert code == 200, body
    await poll_until(lambda: len(env.qc.replica_infos(body["id"], False)) == 2, 60, what="a second replica")
    code, body = await env.rest.call("GET", "/collections/pt")
    assert body["replicas"] == 2


async def test_rename(env):
    created = await create_quick(env, "before")
    await create_quick(env, "taken")
    await env.refused(409, "POST", "/collections", {"name": "before", "newName": "taken"}, method="rename")
    await env.refused(400, "POST", "/collections", {"name": "before", "newName": "1bad"}, method="rename")
    await env.refused(400, "POST", "/collections", {"name": "before"}, method="rename")
    code, body = await env.rest.call("POST", "/collections", {"name": "before", "newName": "after"}, method="rename")
    assert (code, body["name"], body["id"]) == (200, "after", created["id"])
    assert (await env.rest.call("GET", "/collections/before"))[0] == 404


async def test_flush_and_compact(env):
    await create_quick(env, "fl", load=True)
    await load_and_wait(env, "fl")
    await env.proxy.insert("fl", [{"id": i, "vector": v.tolist()} for i, v in enumerate(vectors(20, seed=2))])
    code, body = await env.rest.call("POST", "/collections", {"name": "fl", "wait": True}, method="flush")
    assert code == 200, body
    assert body["segmentIds"] and env.catalog.flushed_rows(env.catalog.describe_collection("default", "fl").id) == 20
    code, body = await env.rest.call("POST", "/collections", {"name": "fl"}, method="compact")
    assert code == 200 and "compactionId" in body, body
    await env.refused(404, "POST", "/collections", {"name": "nope"}, method="flush")


async def test_remove_releases_first(env):
    created = await create_quick(env, "gone", load=True)
    await load_and_wait(env, "gone")
    cid = int(created["id"])
    code, body = await env.rest.call("DELETE", "/collections/gone")
    assert (code, body["name"], body["loadState"]) == (200, "gone", "LoadStateNotLoad")
    assert env.qc.collections.get(cid) is None
    assert not env.catalog.has_collection("default", "gone")
    await poll_until(lambda: not env.qc.dist.segments(cid) and not env.qc.dist.channels(cid), 60,
                     what="the nodes to drop the collection")
    await env.refused(404, "DELETE", "/collections/gone")


async def test_unknown_custom_method_and_bodies(env):
    await env.refused(405, "POST", "/collections", {"name": "quick"}, method="explode")
    await env.refused(400, "POST", "/collections", [1, 2], method="load")
    await env.refused(405, "PUT", "/collections/quick", {"name": "quick"})


# --- partitions ---------------------------------------------------------------------------------------------

async def test_partitions_create_find_load_release_remove(env):
    await create_quick(env, "parts")
    code, body = await env.rest.call("POST", "/collections/parts/partitions", {"name": "p1"})
    assert (code, body["name"], body["placement"], body["loadState"]) == (201, "p1", "NotLoaded", "LoadStateNotLoad")
    await env.refused(409, "POST", "/collections/parts/partitions", {"name": "p1"})
    await env.refused(400, "POST", "/collections/parts/partitions", {"name": "1bad"})
    await env.refused(400, "POST", "/collections/parts/partitions", {"title": "p2"})
    await env.refused(404, "POST", "/collections/nope/partitions", {"name": "p2"})
    await env.refused(404, "GET", "/collections/parts/partitions/p9")
    code, listed = await env.rest.call("GET", "/collections/parts/partitions")
    assert code == 200 and [p["name"] for p in listed] == ["_default", "p1"]

    await env.refused(404, "POST", "/collections/parts/partitions", {"partitions": ["p9"]}, method="load")
    await env.refused(400, "POST", "/collections/parts/partitions", {"partitions": []}, method="load")
    code, body = await env.rest.call("POST", "/collections/parts/partitions",
                                     {"partitions": ["p1"], "wait": True, "timeout": 120}, method="load")
    assert (code, body["loadState"]) == (200, "LoadStateLoaded"), body
    cid = int((await env.rest.call("GET", "/collections/parts"))[1]["id"])
    await env.proxy.insert("parts", [{"id": i, "vector": v.tolist()} for i, v in enumerate(vectors(7, seed=3))],
                           partition="p1")
    code, p1 = await env.rest.call("GET", "/collections/parts/partitions/p1")
    assert (p1["loadState"], p1["loadPercent"], p1["rowCount"]) == ("LoadStateLoaded", 100, 7)
    assert p1["placement"] in ("InGPU", "PartialInGPU", "InMemory")
    code, default = await env.rest.call("GET", "/collections/parts/partitions/_default")
    assert (default["loadState"], default["placement"]) == ("LoadStateNotLoad", "NotLoaded")

    # a partition created in a collection loaded as a whole is loaded too (SyncNewCreatedPartition)
    await env.rest.call("POST", "/collections", {"name": "parts"}, method="release")
    await load_and_wait(env, "parts")
    code, body = await env.rest.call("POST", "/collections/parts/partitions", {"name": "p2"})
    assert code == 201, body
    await poll_until(lambda: env.qc.collections.partition(cid, int(body["id"])) is not None, 60,
                     what="the new partition to be loaded")

    code, body = await env.rest.call("POST", "/collections/parts/partitions", {"partitions": ["p1"]}, method="release")
    assert code == 200, body
    await env.refused(400, "DELETE", "/collections/parts/partitions/_default")
    code, body = await env.rest.call("DELETE", "/collections/parts/partitions/p2")   # loaded: released first
    assert (code, body["name"]) == (200, "p2"), body
    assert env.qc.collections.partition(cid, int(body["id"])) is None
    code, listed = await env.rest.call("GET", "/collections/parts/partitions")
    assert [p["name"] for p in listed] == ["_default", "p1"]
    await env.refused(404, "DELETE", "/collections/parts/partitions/p2")


# --- indexes ------------------------------------------------------------------------------------------------

async def test_indexes_find_get_remove_create(env):
    await create_quick(env, "idx")
    code, listed = await env.rest.call("GET", "/collections/idx/indexes")
    assert code == 200 and len(listed) == 1
    index = listed[0]
    assert (index["name"], index["field"], index["type"], index["metric"]) == ("vector", "vector", "FLAT", "L2")
    assert (index["state"], index["indexedRows"], index["pendingRows"], index["failReason"]) == ("Finished", 0, 0, "")
    assert index["placement"] == {}
    assert (await env.rest.call("GET", "/collections/idx/indexes/vector"))[1] == index
    await env.refused(404, "GET", "/collections/idx/indexes/nope")
    await env.refused(409, "POST", "/collections/idx/indexes", {"field": "vector", "type": "HNSW", "metric": "L2"})

    await load_and_wait(env, "idx")
    await env.proxy.insert("idx", [{"id": i, "vector": v.tolist()} for i, v in enumerate(vectors(12, seed=4))])
    await env.rest.call("POST", "/collections", {"name": "idx"}, method="flush")

    async def placement():
        return (await env.rest.call("GET", "/collections/idx/indexes/vector"))[1]["placement"]

    served = await poll_until(placement, 60, what="the flushed segment to be served")
    assert set(served) <= {"GPU", "CPU"} and sum(served.values()) >= 1
    await env.refused(400, "DELETE", "/collections/idx/indexes/vector")   # loaded: release it first
    await env.rest.call("POST", "/collections", {"name": "idx"}, method="release")
    code, body = await env.rest.call("DELETE", "/collections/idx/indexes/vector")
    assert (code, body["name"]) == (200, "vector")
    assert (await env.rest.call("GET", "/collections/idx/indexes"))[1] == []

    await env.refused(400, "POST", "/collections/idx/indexes", {"field": "vector", "type": "NOPE"})
    await env.refused(400, "POST", "/collections/idx/indexes", {"field": "vector", "type": "HNSW", "metric": "L3"})
    await env.refused(400, "POST", "/collections/idx/indexes", {"field": "id", "type": "FLAT"})
    await env.refused(400, "POST", "/collections/idx/indexes", {"field": "nope", "type": "FLAT"})
    await env.refused(400, "POST", "/collections/idx/indexes", {"type": "FLAT"})
    code, body = await env.rest.call("POST", "/collections/idx/indexes",
                                     {"field": "vector", "type": "IVF_FLAT", "metric": "L2", "params": {"nlist": 4},
                                      "name": "ivf"})
    assert code == 201, body
    assert (body["name"], body["type"], body["params"]) == ("ivf", "IVF_FLAT", {"nlist": 4})
    cid = env.catalog.describe_collection("default", "idx").id
    await poll_until(lambda: env.catalog.describe_index(cid)[0].indexed_rows == 12, 120,
                     what="the IVF index to be built")
    code, body = await env.rest.call("GET", "/collections/idx/indexes/ivf")
    assert (body["state"], body["indexedRows"], body["pendingRows"]) == ("Finished", 12, 0)


# --- import jobs into a loaded collection ---------------------------------------------------------------------

async def test_an_import_into_a_loaded_collection_is_served_when_it_completes(env, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    await create_quick(env, "imp", load=True)
    await load_and_wait(env, "imp")
    xs = vectors(40, seed=5)
    imports = Path(env.coordinator.settings.common.data_dir, "imports")   # an import root
    imports.mkdir(exist_ok=True)
    path = imports / "imp.parquet"
    pq.write_table(pa.table({"id": pa.array(range(1000, 1040), pa.int64()),
                             "vector": pa.FixedSizeListArray.from_arrays(pa.array(xs.reshape(-1)), DIM)}), path)
    code, job = await env.rest.call("POST", "/import-jobs", {"collection": "imp", "files": [str(path)]})
    assert code == 201, job

    async def completed():
        body = (await env.rest.call("GET", f"/import-jobs/{job['id']}"))[1]
        assert body["state"] in ("Pending", "Importing", "Completed"), body
        return body["state"] == "Completed"
    await poll_until(completed, 60, what="the import job")

    async def counted():
        body = (await env.rest.call("GET", "/collections/imp"))[1]
        return body["rowCount"] == 40
    await poll_until(counted, 60, what="the imported rows to be served")
    hits = await env.proxy.search("imp", xs[:2], limit=1)
    assert [h[0]["id"] for h in hits] == [1000, 1001]
