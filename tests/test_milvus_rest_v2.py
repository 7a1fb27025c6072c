"""Milvus's RESTful API v2 (``POST /v2/vectordb/...``) on the coordinator's REST port: a
Milvus-documentation-style flow as curl would send it (JSON bodies, the ``{"code", "data"}`` envelope),
the full-schema form, the error codes of Milvus's REST layer, and auth with Milvus's ``Bearer
user:password``."""

from __future__ import annotations

import asyncio
import base64
import json
import random
import time
from typing import Any

import pytest
import pytest_asyncio
import tornado.httpclient
import tornado.httpserver
import tornado.netutil

from vecgrid.http.app import make_app
from vecgrid.http.services.accounts import add_user
from tests.rest_support import auth_on_api

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

DIM = 4


class V2Client:
    """curl -X POST <base>/v2/vectordb/<path> -d '<json>', answering (HTTP status, decoded body)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.http = tornado.httpclient.AsyncHTTPClient(force_instance=True)

    async def raw(self, path: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        response = await self.http.fetch(f"{self.base}/v2/vectordb/{path}", method="POST", body=body,
                                         headers={"Content-Type": "application/json", **(headers or {})},
                                         raise_error=False, request_timeout=120)
        return response.code, json.loads(response.body) if response.body else None

    async def call(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, Any]:
        return await self.raw(path, json.dumps(body).encode(), headers)

    async def ok(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
        """The ``data`` of a call that must succeed."""
        status, answer = await self.call(path, body, headers)
        assert status == 200 and answer.get("code") == 0, (path, body, status, answer)
        return answer["data"]

    async def fails(self, path: str, body: dict[str, Any], code: int) -> str:
        """The message of a call that must fail with ``code`` (HTTP 200, Milvus's envelope)."""
        status, answer = await self.call(path, body)
        assert status == 200 and answer["code"] == code and "data" not in answer, (path, body, status, answer)
        return answer["message"]

    async def loaded(self, name: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while (await self.ok("collections/get_load_state", {"collectionName": name}))["loadState"] != "LoadStateLoaded":
            assert time.monotonic() < deadline, f"{name} not loaded after {timeout} s"
            await asyncio.sleep(0.1)

    def close(self) -> None:
        self.http.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def v2(embedded):
    client = V2Client(embedded.addresses.http)
    yield client
    client.close()


def rows_of(n: int) -> list[dict[str, Any]]:
    rng = random.Random(7)
    return [{"id": i, "vector": [rng.random() for _ in range(DIM)], "color": f"c{i % 3}", "year": 2000 + i}
            for i in range(n)]


async def test_documentation_flow(v2):
    rows = rows_of(100)
    assert isinstance(await v2.ok("collections/list", {}), list)
    # quick setup, as the docs' first example (Strong: the flow reads its own writes at once)
    assert await v2.ok("collections/create", {"collectionName": "v2_quick", "dimension": DIM, "metricType": "L2",
                                              "params": {"consistencyLevel": "Strong"}}) == {}
    assert await v2.ok("collections/has", {"collectionName": "v2_quick"}) == {"has": True}
    assert "v2_quick" in await v2.ok("collections/list", {"dbName": "default"})
    described = await v2.ok("collections/describe", {"collectionName": "v2_quick"})
    assert described["collectionName"] == "v2_quick" and described["load"] == "LoadStateLoaded"
    assert described["enableDynamicField"] is True and described["consistencyLevel"] == "Strong"
    assert described["autoId"] is False and described["aliases"] == [] and described["shardsNum"] == 1
    assert [(f["name"], f["type"], f["primaryKey"]) for f in described["fields"]] == [
        ("id", "Int64", True), ("vector", "FloatVector", False)]
    assert {"key": "dim", "value": str(DIM)} in described["fields"][1]["params"]
    assert described["indexes"] == [{"fieldName": "vector", "indexName": "vector", "metricType": "L2"}]
    state = await v2.ok("collections/get_load_state", {"collectionName": "v2_quick"})
    assert state == {"loadState": "LoadStateLoaded", "loadProgress": 100}

    # insert with dynamic keys, search with a filter and outputFields, query, get, count(*)
    inserted = await v2.ok("entities/insert", {"collectionName": "v2_quick", "data": rows})
    assert inserted == {"insertCount": 100, "insertIds": list(range(100))}
    hits = await v2.ok("entities/search", {"collectionName": "v2_quick", "data": [rows[5]["vector"]], "limit": 3,
                                           "annsField": "vector", "outputFields": ["color", "year"]})
    assert len(hits) == 3 and hits[0]["id"] == 5 and hits[0]["color"] == "c2" and hits[0]["year"] == 2005
    assert hits[0]["distance"] == pytest.approx(0.0, abs=1e-5) and set(hits[0]) == {"id", "distance", "color", "year"}
    two = await v2.ok("entities/search", {"collectionName": "v2_quick", "limit": 2,
                                          "data": [rows[5]["vector"], rows[7]["vector"]]})
    assert [h["id"] for h in two][::2] == [5, 7] and len(two) == 4 and set(two[0]) == {"id", "distance"}
    filtered = await v2.ok("entities/search", {
        "collectionName": "v2_quick", "data": [rows[5]["vector"]], "limit": 10, "outputFields": ["year", "color"],
        "filter": 'year >= 2050 and color in ["c0", "c1"]', "searchParams": {"metricType": "L2", "params": {}}})
    assert len(filtered) == 10 and all(h["year"] >= 2050 and h["color"] != "c2" for h in filtered)
    templated = await v2.ok("entities/search", {"collectionName": "v2_quick", "data": [rows[5]["vector"]],
                                                "filter": "year < {y}", "exprParams": {"y": 2003}})
    assert sorted(h["id"] for h in templated) == [0, 1, 2]

    found = await v2.ok("entities/query", {"collectionName": "v2_quick", "filter": 'color == "c1" and year < 2030',
                                           "outputFields": ["year"]})
    assert sorted(r["id"] for r in found) == [i for i in range(30) if i % 3 == 1]
    assert set(found[0]) == {"id", "year"}
    page = await v2.ok("entities/query", {"collectionName": "v2_quick", "filter": "id >= 0", "limit": 5, "offset": 10,
                                          "outputFields": ["color"]})
    assert [r["id"] for r in page] == [10, 11, 12, 13, 14]
    everything = await v2.ok("entities/query", {"collectionName": "v2_quick", "filter": "id == 3"})
    assert everything[0]["color"] == "c0" and len(everything[0]["vector"]) == DIM   # "*" by default
    assert await v2.ok("entities/query", {"collectionName": "v2_quick", "outputFields": ["count(*)"]}) == [
        {"count(*)": 100}]
    got = await v2.ok("entities/get", {"collectionName": "v2_quick", "id": [3, 4], "outputFields": ["vector", "color"]})
    assert [g["id"] for g in got] == [3, 4] and got[0]["color"] == "c0"
    assert got[0]["vector"] == pytest.approx(rows[3]["vector"], abs=1e-6)
    as_strings = await v2.ok("entities/get", {"collectionName": "v2_quick", "id": 3, "outputFields": ["year"]},
                             headers={"Accept-Type-Allow-Int64": "false"})
    assert as_strings == [{"id": "3", "year": 2003}]   # Int64 values as strings; the dynamic key stays a number

    # delete by ids (an `id in` filter, and `id`), by filter; upsert
    assert await v2.ok("entities/delete", {"collectionName": "v2_quick", "filter": "id in [0, 1]"}) == {
        "deleteCount": 2}
    assert await v2.ok("entities/delete", {"collectionName": "v2_quick", "id": [2]}) == {"deleteCount": 1}
    await v2.ok("entities/delete", {"collectionName": "v2_quick", "filter": "year > 2089"})
    count = await v2.ok("entities/query", {"collectionName": "v2_quick", "outputFields": ["count(*)"]})
    assert count == [{"count(*)": 87}]
    upserted = await v2.ok("entities/upsert", {"collectionName": "v2_quick", "data": [
        {"id": 5, "vector": rows[5]["vector"], "color": "gold", "year": 1999}]})
    assert upserted == {"upsertCount": 1, "upsertIds": [5]}
    assert await v2.ok("entities/get", {"collectionName": "v2_quick", "id": 5, "outputFields": ["color", "year"]}) == [
        {"id": 5, "color": "gold", "year": 1999}]

    # partitions
    assert await v2.ok("partitions/create", {"collectionName": "v2_quick", "partitionName": "p1"}) == {}
    assert await v2.ok("partitions/list", {"collectionName": "v2_quick"}) == ["_default", "p1"]
    assert await v2.ok("partitions/has", {"collectionName": "v2_quick", "partitionName": "p1"}) == {"has": True}
    assert await v2.ok("partitions/has", {"collectionName": "v2_quick", "partitionName": "p9"}) == {"has": False}
    await v2.ok("entities/insert", {"collectionName": "v2_quick", "partitionName": "p1", "data": [
        {"id": 1000 + i, "vector": rows[i]["vector"], "color": "p1"} for i in range(3)]})
    assert await v2.ok("partitions/get_stats", {"collectionName": "v2_quick", "partitionName": "p1"}) == {
        "rowCount": 3}
    in_p1 = await v2.ok("entities/query", {"collectionName": "v2_quick", "partitionNames": ["p1"], "filter": "id > 0",
                                           "outputFields": ["color"]})
    assert [(r["id"], r["color"]) for r in in_p1] == [(1000, "p1"), (1001, "p1"), (1002, "p1")]
    assert await v2.ok("partitions/release", {"collectionName": "v2_quick", "partitionNames": ["p1"]}) == {}
    assert (await v2.ok("collections/get_load_state", {"collectionName": "v2_quick", "partitionNames": ["p1"]}))[
        "loadState"] == "LoadStateNotLoad"
    assert await v2.ok("partitions/load", {"collectionName": "v2_quick", "partitionNames": ["p1"]}) == {}
    await v2.loaded("v2_quick")
    assert await v2.ok("partitions/drop", {"collectionName": "v2_quick", "partitionName": "p1"}) == {}
    assert await v2.ok("partitions/list", {"collectionName": "v2_quick"}) == ["_default"]

    # indexes: describe and list; a loaded collection's index is not dropped; release, drop, create, load
    assert await v2.ok("indexes/list", {"collectionName": "v2_quick"}) == ["vector"]
    [index] = await v2.ok("indexes/describe", {"collectionName": "v2_quick", "indexName": "vector"})
    assert index["fieldName"] == "vector" and index["indexType"] == "AUTOINDEX" and index["metricType"] == "L2"
    assert {"totalRows", "indexedRows", "pendingRows", "indexState", "failReason"} <= set(index)
    message = await v2.fails("indexes/drop", {"collectionName": "v2_quick", "indexName": "vector"}, 1100)
    assert "release" in message
    assert await v2.ok("collections/release", {"collectionName": "v2_quick"}) == {}
    assert await v2.ok("collections/get_load_state", {"collectionName": "v2_quick"}) == {
        "loadState": "LoadStateNotLoad"}
    assert await v2.ok("indexes/drop", {"collectionName": "v2_quick", "indexName": "vector"}) == {}
    assert await v2.ok("indexes/list", {"collectionName": "v2_quick"}) == []
    await v2.fails("indexes/describe", {"collectionName": "v2_quick", "indexName": "vector"}, 700)
    assert await v2.ok("indexes/create", {"collectionName": "v2_quick", "indexParams": [
        {"fieldName": "vector", "indexName": "vec_idx", "metricType": "L2", "indexType": "IVF_FLAT",
         "params": {"nlist": 8}}]}) == {}
    [index] = await v2.ok("indexes/describe", {"collectionName": "v2_quick", "indexName": "vec_idx"})
    assert (index["indexType"], index["metricType"]) == ("IVF_FLAT", "L2")
    assert await v2.ok("collections/load", {"collectionName": "v2_quick"}) == {}
    await v2.loaded("v2_quick")
    hits = await v2.ok("entities/search", {"collectionName": "v2_quick", "data": [rows[9]["vector"]], "limit": 1,
                                           "searchParams": {"metricType": "L2", "params": {"nprobe": 8}}})
    assert hits[0]["id"] == 9

    # aliases: a second name, resolved where a collection name is read; not dropped through
    assert await v2.ok("aliases/create", {"aliasName": "v2_shelf", "collectionName": "v2_quick"}) == {}
    assert await v2.ok("aliases/describe", {"aliasName": "v2_shelf"}) == {
        "aliasName": "v2_shelf", "collectionName": "v2_quick", "dbName": "default"}
    assert await v2.ok("aliases/list", {"collectionName": "v2_quick"}) == ["v2_shelf"]
    assert (await v2.ok("collections/describe", {"collectionName": "v2_quick"}))["aliases"] == ["v2_shelf"]
    hits = await v2.ok("entities/search", {"collectionName": "v2_shelf", "data": [rows[9]["vector"]], "limit": 1})
    assert hits[0]["id"] == 9
    await v2.fails("collections/drop", {"collectionName": "v2_shelf"}, 1100)
    assert await v2.ok("aliases/drop", {"aliasName": "v2_shelf"}) == {}
    assert await v2.ok("aliases/list", {}) == []

    # rename, properties, stats, drop
    assert await v2.ok("collections/rename", {"collectionName": "v2_quick", "newCollectionName": "v2_renamed"}) == {}
    assert await v2.ok("collections/has", {"collectionName": "v2_quick"}) == {"has": False}
    assert await v2.ok("collections/alter_properties", {"collectionName": "v2_renamed",
                                                        "properties": {"collection.ttl.seconds": 3600}}) == {}
    described = await v2.ok("collections/describe", {"collectionName": "v2_renamed"})
    assert {"key": "collection.ttl.seconds", "value": "3600"} in described["properties"]
    hits = await v2.ok("entities/search", {"collectionName": "v2_renamed", "data": [rows[9]["vector"]], "limit": 1})
    assert hits[0]["id"] == 9
    assert (await v2.ok("collections/get_stats", {"collectionName": "v2_renamed"}))["rowCount"] >= 87
    assert await v2.ok("collections/drop", {"collectionName": "v2_renamed"}) == {}
    assert await v2.ok("collections/has", {"collectionName": "v2_renamed"}) == {"has": False}
    assert await v2.ok("collections/drop", {"collectionName": "v2_renamed"}) == {}   # Milvus: no error


async def test_full_schema_create(v2):
    schema = {"autoID": False, "enableDynamicField": False, "fields": [
        {"fieldName": "my_id", "dataType": "Int64", "isPrimary": True},
        {"fieldName": "my_vector", "dataType": "FloatVector", "elementTypeParams": {"dim": str(DIM)}},
        {"fieldName": "my_varchar", "dataType": "VarChar", "isPartitionKey": False,
         "elementTypeParams": {"max_length": 64}}]}
    await v2.ok("collections/create", {"collectionName": "v2_full", "schema": schema, "params": {
        "consistencyLevel": "Strong"}, "indexParams": [{"fieldName": "my_vector", "metricType": "IP",
                                                        "indexName": "my_vector", "params": {"index_type": "FLAT"}}]})
    described = await v2.ok("collections/describe", {"collectionName": "v2_full"})
    assert [f["name"] for f in described["fields"]] == ["my_id", "my_vector", "my_varchar"]
    assert described["enableDynamicField"] is False and described["load"] == "LoadStateLoaded"
    [index] = await v2.ok("indexes/describe", {"collectionName": "v2_full", "indexName": "my_vector"})
    assert (index["indexType"], index["metricType"]) == ("FLAT", "IP")
    rows = [{"my_id": i, "my_vector": [1.0, float(i), 0.0, 0.0], "my_varchar": f"v{i}"} for i in range(10)]
    assert (await v2.ok("entities/insert", {"collectionName": "v2_full", "data": rows}))["insertCount"] == 10
    hits = await v2.ok("entities/search", {"collectionName": "v2_full", "data": [[0.0, 1.0, 0.0, 0.0]], "limit": 2,
                                           "annsField": "my_vector", "filter": 'my_varchar != "v9"',
                                           "outputFields": ["my_varchar"]})
    assert [(h["id"], h["my_varchar"]) for h in hits] == [(8, "v8"), (7, "v7")]   # IP: larger is closer
    await v2.ok("entities/insert", {"collectionName": "v2_full", "data": {
        "my_id": 100, "my_vector": [0.1, 0.2, 0.3, 0.4], "my_varchar": "tenths"}})   # one row as an object
    got = await v2.ok("entities/get", {"collectionName": "v2_full", "id": 100, "outputFields": ["my_vector"]})
    assert got == [{"my_id": 100, "my_vector": [0.1, 0.2, 0.3, 0.4]}]   # float32 as Milvus writes it
    status, answer = await v2.call("entities/insert", {"collectionName": "v2_full", "data": [
        {**rows[0], "extra": 1}]})   # no dynamic field: an unknown key is refused
    assert status == 200 and answer["code"] != 0
    await v2.fails("entities/search", {"collectionName": "v2_full", "data": [[0.0, 1.0, 0.0, 0.0]],
                                       "searchParams": {"metricType": "L2"}}, 1100)   # not the index's metric
    await v2.ok("collections/drop", {"collectionName": "v2_full"})


async def test_errors(v2):
    assert "collection not found" in await v2.fails("collections/describe", {"collectionName": "nope"}, 100)
    await v2.fails("entities/query", {"collectionName": "nope", "filter": "id > 0"}, 100)
    for body in (b"{not json", b"", b"[1, 2]", b"NaN"):
        status, answer = await v2.raw("collections/describe", body)
        assert status == 200 and answer["code"] == 1801, (body, answer)
    message = await v2.fails("collections/describe", {}, 1802)
    assert "collectionName" in message
    await v2.fails("collections/describe", {"collectionName": ""}, 1802)
    await v2.fails("collections/describe", {"collectionName": 5}, 1801)
    await v2.fails("collections/list", {"dbName": "other"}, 800)
    await v2.fails("collections/create", {"collectionName": "v2_err"}, 1100)   # neither dimension nor schema
    status, answer = await v2.call("collections/frobnicate", {"collectionName": "x"})
    assert status == 404 and "collections/describe" in answer["message"]

    await v2.ok("collections/create", {"collectionName": "v2_err", "dimension": DIM})
    try:
        assert "cannot parse expression" in await v2.fails(
            "entities/query", {"collectionName": "v2_err", "filter": "id >>> 3"}, 1100)
        await v2.fails("entities/get", {"collectionName": "v2_err", "id": ["a"]}, 1806)
        await v2.fails("entities/delete", {"collectionName": "v2_err"}, 1802)
        await v2.fails("entities/insert", {"collectionName": "v2_err"}, 1802)
        await v2.fails("entities/search", {"collectionName": "v2_err", "data": [[1, 2]]}, 1100)   # wrong dim
        await v2.fails("entities/search", {"collectionName": "v2_err", "data": [["x"]]}, 1801)
        await v2.fails("entities/query", {"collectionName": "v2_err", "consistencyLevel": "Strongest"}, 1100)
        await v2.fails("partitions/load", {"collectionName": "v2_err"}, 1802)
    finally:
        await v2.ok("collections/drop", {"collectionName": "v2_err"})


async def test_auth(embedded, tmp_path):
    """With auth on: Milvus's ``Bearer user:password`` (a user's email), basic auth and vecgrid tokens;
    without credentials 401/1800, without the right 403/1401, before anything runs."""
    ctx, api = auth_on_api(embedded, tmp_path)
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    server = tornado.httpserver.HTTPServer(make_app(ctx, api))
    server.add_sockets(sockets)
    client = V2Client(f"http://127.0.0.1:{sockets[0].getsockname()[1]}")
    try:
        await add_user(api, "reader@x.io", "reader-password", ["reader"])
        await add_user(api, "writer@x.io", "writer-password", ["writer"])
        reader = {"Authorization": "Bearer reader@x.io:reader-password"}
        for headers in ({}, {"Authorization": "Bearer reader@x.io:wrong"}, {"Authorization": "Bearer garbage"}):
            status, answer = await client.call("collections/list", {}, headers)
            assert (status, answer) == (401, {"code": 1800, "message": "user hasn't authenticated"}), headers
        assert isinstance(await client.ok("collections/list", {}, reader), list)
        status, answer = await client.call("collections/create", {"collectionName": "v2_auth", "dimension": DIM},
                                           reader)
        assert status == 403 and answer["code"] == 1401
        assert not embedded.coord.catalog.has_collection("default", "v2_auth")
        basic = {"Authorization": "Basic " + base64.b64encode(b"writer@x.io:writer-password").decode()}
        assert await client.ok("collections/drop", {"collectionName": "v2_auth"}, basic) == {}
        login = await api.service("authentication").create({"strategy": "local", "email": "writer@x.io",
                                                            "password": "writer-password"})
        token = {"Authorization": f"Bearer {login['accessToken']}"}
        assert await client.ok("collections/has", {"collectionName": "v2_auth"}, token) == {"has": False}
    finally:
        client.close()
        server.stop()
        ctx.store.close()


async def test_databases(v2):
    """A collection of another database is that database's only; a database holding one is not dropped."""
    assert await v2.ok("databases/create", {"dbName": "v2lab"}) == {}
    assert sorted(await v2.ok("databases/list", {})) == ["default", "v2lab"]
    assert (await v2.ok("databases/describe", {"dbName": "v2lab"}))["dbName"] == "v2lab"
    lab = {"dbName": "v2lab", "collectionName": "labbed"}
    assert await v2.ok("collections/create", {**lab, "dimension": DIM, "metricType": "L2",
                                              "params": {"consistencyLevel": "Strong"}}) == {}
    assert await v2.ok("entities/insert", {**lab, "data": rows_of(5)}) == {"insertCount": 5, "insertIds": [0, 1, 2, 3, 4]}
    hits = await v2.ok("entities/search", {**lab, "data": [rows_of(5)[3]["vector"]], "limit": 1})
    assert hits[0]["id"] == 3
    assert await v2.ok("entities/query", {**lab, "outputFields": ["count(*)"]}) == [{"count(*)": 5}]
    assert "labbed" in await v2.ok("collections/list", {"dbName": "v2lab"})
    assert "labbed" not in await v2.ok("collections/list", {})
    await v2.fails("collections/describe", {"collectionName": "labbed"}, 100)
    assert "not empty" in await v2.fails("databases/drop", {"dbName": "v2lab"}, 1100)
    assert await v2.ok("collections/drop", lab) == {}
    assert await v2.ok("databases/drop", {"dbName": "v2lab"}) == {}
    await v2.fails("collections/list", {"dbName": "v2lab"}, 800)


async def test_hybrid_search(v2):
    """Two vector fields, searched apart and fused with RRF and the weighted ranker (as MilvusService)."""
    schema = {"autoID": False, "enableDynamicField": True, "fields": [
        {"fieldName": "id", "dataType": "Int64", "isPrimary": True},
        {"fieldName": "text_vec", "dataType": "FloatVector", "elementTypeParams": {"dim": "2"}},
        {"fieldName": "image_vec", "dataType": "FloatVector", "elementTypeParams": {"dim": "2"}}]}
    await v2.ok("collections/create", {"collectionName": "v2_multi", "schema": schema,
                                       "params": {"consistencyLevel": "Strong"}, "indexParams": [
        {"fieldName": "text_vec", "metricType": "L2", "indexName": "t", "params": {"index_type": "FLAT"}},
        {"fieldName": "image_vec", "metricType": "IP", "indexName": "i", "params": {"index_type": "FLAT"}}]})
    await v2.ok("entities/insert", {"collectionName": "v2_multi", "data": [
        {"id": i, "text_vec": [float(i), 0.0], "image_vec": [1.0, i / 10], "tag": i % 2} for i in range(30)]})
    searches = [{"data": [[3.0, 0.0]], "annsField": "text_vec", "limit": 5},
                {"data": [[0.0, 1.0]], "annsField": "image_vec", "limit": 5, "filter": "tag == 1"}]
    fused = await v2.ok("entities/hybrid_search", {"collectionName": "v2_multi", "search": searches,
                                                   "rerank": {"strategy": "rrf", "params": {"k": 60}}, "limit": 4,
                                                   "outputFields": ["tag"]})
    assert [(h["id"], h["tag"]) for h in fused] == [(29, 1), (3, 1), (2, 0), (27, 1)]
    fused = await v2.ok("entities/hybrid_search", {"collectionName": "v2_multi", "search": searches, "limit": 3,
                                                   "rerank": {"strategy": "weighted", "params": {"weights": [1, 0]}}})
    assert [h["id"] for h in fused] == [3, 2, 4]
    await v2.fails("entities/hybrid_search", {"collectionName": "v2_multi", "search": searches, "rerank": {
        "strategy": "weighted", "params": {"weights": [1]}}}, 1100)
    await v2.ok("collections/drop", {"collectionName": "v2_multi"})
