"""``collections/:collection/entities`` over real HTTP against an embedded cluster of two QueryNode workers:
the Feathers adapter (find with the common syntax, ``$sort`` across shards, exact totals, the cursor form,
get/update/patch/remove), ``search`` (nq 1, 2 and 100 against a numpy brute force, by ids, filters, range,
grouping) and ``count``, ``X-Vecgrid-Ts`` sessions, int64 safety, bad input that writes nothing — and the
shared adapter cases (tests/adapter_support.py) on a collection whose records carry a vector."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

import numpy as np
import orjson
import pytest
import pytest_asyncio
import tornado.httpclient
import tornado.httpserver
import tornado.netutil

from tests import adapter_support
from tests.proxy_support import create_collection
from tests.querycoord_support import Coord, fast_settings
from vecgrid import errors
from vecgrid.deploy import EmbeddedCluster
from vecgrid.http.feathers.application import Application
from vecgrid.http.feathers.rest import make_tornado_app
from vecgrid.http.milvus_errors import feathers_error, milvus_error_hook
from vecgrid.http.services import RestContext
from vecgrid.http.services import entities
from vecgrid.proto import common_pb2, schema_pb2

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

DIM = 16
N = 600
TAGS = np.asarray(["t0", "t1", "t2", "t3", "t4"])
PEOPLE_COLLECTIONS = ("people0", "people1")


@dataclass
class Env:
    cluster: EmbeddedCluster
    base: str
    client: tornado.httpclient.AsyncHTTPClient
    vectors: np.ndarray
    pks: np.ndarray
    extra: dict = field(default_factory=dict)

    async def call(self, method: str, path: str, body=None, headers=None, raw: bytes | None = None):
        data = raw if raw is not None else (orjson.dumps(body) if body is not None else None)
        if data is None and method in ("POST", "PUT", "PATCH"):
            data = b""
        response = await self.client.fetch(tornado.httpclient.HTTPRequest(
            self.base + path, method=method, body=data, allow_nonstandard_methods=True, request_timeout=120,
            headers={"Content-Type": "application/json", **(headers or {})}), raise_error=False)
        return response.code, (json.loads(response.body) if response.body else None), response.headers

    async def custom(self, collection: str, method: str, body, headers=None):
        return await self.call("POST", f"/collections/{collection}/entities", body,
                               headers={"X-Service-Method": method, **(headers or {})})


def _kv(**items):
    return [common_pb2.KeyValuePair(key=k, value=str(v)) for k, v in items.items()]


def _people_schema() -> schema_pb2.CollectionSchema:
    """The adapter cases' records (id, name, age) plus a vector; ``age`` has a default (Milvus fields are not
    nullable) and other keys go to the dynamic field."""
    return schema_pb2.CollectionSchema(
        enable_dynamic_field=True,
        fields=[
            schema_pb2.FieldSchema(name="id", data_type=schema_pb2.Int64, is_primary_key=True),
            schema_pb2.FieldSchema(name="name", data_type=schema_pb2.VarChar, type_params=_kv(max_length=64)),
            schema_pb2.FieldSchema(
                name="age", data_type=schema_pb2.Int64, default_value=schema_pb2.ValueField(long_data=0)
            ),
            schema_pb2.FieldSchema(name="vec", data_type=schema_pb2.FloatVector, type_params=_kv(dim=4)),
        ],
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory):
    settings = fast_settings(tmp_path_factory.mktemp("rest-entities"), workers=2)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    catalog = cluster.coord.catalog
    loaded = [create_collection(catalog, "items", dim=DIM, shards=2, dynamic=True),
              create_collection(catalog, "strict", dim=DIM, shards=2),
              create_collection(catalog, "keys", dim=DIM, shards=2, str_pk=True),
              create_collection(catalog, "ip", dim=DIM, shards=2, metric="IP")]
    for name in PEOPLE_COLLECTIONS:
        coll = catalog.create_collection("default", name, _people_schema(), shards_num=2)
        catalog.create_index(coll.id, "vec", "FLAT", "L2")
        loaded.append(coll)
    create_collection(catalog, "cold", dim=DIM, shards=1)   # never loaded
    coord = Coord(cluster.addresses.grpc, cluster.coord)
    for coll in loaded:
        await coord.load(coll.id)
    api = Application()
    api.hooks({"error": {"all": [milvus_error_hook]}})
    entities.mount(api, RestContext(coord=cluster.coord, proxy=cluster.proxy, settings=settings))
    server = tornado.httpserver.HTTPServer(make_tornado_app(api))
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    server.add_sockets(sockets)
    port = sockets[0].getsockname()[1]
    client = tornado.httpclient.AsyncHTTPClient(force_instance=True, max_body_size=256 << 20)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((N, DIM)).astype(np.float32)
    pks = np.arange(N, dtype=np.int64) * 3 + 1
    e = Env(cluster, f"http://127.0.0.1:{port}", client, vectors, pks)
    rows = [{"pk": int(k), "vec": v, "age": int(k % 100), "tag": str(TAGS[i % 5]), "color": f"c{i % 3}"}
            for i, (k, v) in enumerate(zip(pks.tolist(), vectors.tolist()))]
    for start in (0, N // 2):   # two writes, two JSON bodies
        code, body, headers = await e.call("POST", "/collections/items/entities", rows[start:start + N // 2])
        assert code == 201, body
        assert len(body) == N // 2 and "vec" not in body[0] and body[0]["color"] == rows[start]["color"]
        e.extra["ts"] = int(headers["X-Vecgrid-Ts"])
    yield e
    client.close()
    server.stop()
    await asyncio.wait_for(cluster.stop(), 60)


def brute_force(env: Env, queries: np.ndarray, k: int, mask: np.ndarray | None = None):
    base = env.vectors if mask is None else env.vectors[mask]
    keys = env.pks if mask is None else env.pks[mask]
    d = ((queries[:, None, :] - base[None, :, :]) ** 2).sum(-1)
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    return keys[order], np.take_along_axis(d, order, 1)


# --- search ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("nq", [1, 2, 100])
async def test_search_answers_one_list_per_query_in_order(env, nq):
    queries = np.random.default_rng(nq).standard_normal((nq, DIM)).astype(np.float32)
    code, hits, _ = await env.custom("items", "search", {"vectors": queries.tolist(), "limit": 5},
                                     headers={"X-Vecgrid-Guarantee-Ts": str(env.extra["ts"])})
    assert code == 200, hits
    want, dist = brute_force(env, queries, 5)
    assert len(hits) == nq
    assert [[h["id"] for h in per] for per in hits] == want.tolist()
    np.testing.assert_allclose([[h["distance"] for h in per] for per in hits], dist, rtol=1e-4, atol=1e-4)


async def test_search_takes_vectors_as_base64_float32(env):
    """``vectors_b64``: the same queries as little-endian float32 bytes in base64 answer what ``vectors``
    answers; a body that is not whole vectors, not base64, or holds NaN is a 400."""
    import base64

    queries = np.random.default_rng(5).standard_normal((7, DIM)).astype(np.float32)
    as_json = await env.custom("items", "search", {"vectors": queries.tolist(), "limit": 4})
    encoded = base64.b64encode(queries.astype("<f4").tobytes()).decode()
    as_b64 = await env.custom("items", "search", {"vectors_b64": encoded, "limit": 4})
    assert as_json[0] == as_b64[0] == 200 and as_b64[1] == as_json[1]
    for body, words in [
        ({"vectors_b64": base64.b64encode(queries.tobytes()[:-4]).decode()}, "whole number"),
        ({"vectors_b64": "not base64!"}, "not valid base64"),
        ({"vectors_b64": base64.b64encode(np.full(DIM, np.nan, np.float32).tobytes()).decode()}, "NaN"),
        ({"vectors_b64": encoded, "vectors": queries.tolist()}, "exactly one of"),
        ({"vectors_b64": 5}, "base64 string"),
    ]:
        code, answer, _ = await env.custom("items", "search", {**body, "limit": 4})
        assert code == 400 and words in answer["message"], (body, answer)


async def test_search_one_vector_by_ids_with_filter_select_and_offset(env):
    q = env.vectors[10]
    code, hits, _ = await env.custom("items", "search", {"vector": q.tolist(), "limit": 3, "offset": 1,
                                                         "filter": {"age": {"$lt": 50}, "tag": {"$ne": "t1"}},
                                                         "select": ["age", "tag", "vec", "color"]})
    assert code == 200, hits
    ages, tags = env.pks % 100, TAGS[np.arange(N) % 5]
    mask = (ages < 50) & (tags != "t1")
    want, _ = brute_force(env, q[None], 4, mask)
    assert [h["id"] for h in hits[0]] == want[0, 1:].tolist()
    for h in hits[0]:
        i = int(np.flatnonzero(env.pks == h["id"])[0])
        assert (h["age"], h["tag"], h["color"]) == (h["id"] % 100, TAGS[i % 5], f"c{i % 3}")
        np.testing.assert_allclose(h["vec"], env.vectors[i], rtol=1e-6)
    ids = env.pks[[5, 77, 300]].tolist()
    code, hits, _ = await env.custom("items", "search", {"ids": ids, "limit": 2})
    assert code == 200, hits
    assert [per[0]["id"] for per in hits] == ids and all(per[0]["distance"] < 1e-4 for per in hits)
    code, body, _ = await env.custom("items", "search", {"ids": [2], "limit": 2})   # keys are 3k + 1
    assert (code, body["name"]) == (404, "NotFound")


async def test_range_search_and_grouping(env):
    q = env.vectors[3]
    _, dist = brute_force(env, q[None], N)
    lo, hi = float(dist[0, 2]), float(dist[0, 40])
    code, hits, _ = await env.custom("items", "search", {"vector": q.tolist(), "limit": 100,
                                                         "params": {"radius": hi, "rangeFilter": lo}})
    assert code == 200, hits
    keys, d = brute_force(env, q[None], N)
    inside = (d[0] >= lo) & (d[0] < hi)
    assert [h["id"] for h in hits[0]] == keys[0][inside].tolist()
    code, hits, _ = await env.custom("items", "search", {"vector": q.tolist(), "limit": 3, "groupBy": "tag",
                                                         "groupSize": 2})
    assert code == 200, hits
    tag_of = dict(zip(env.pks.tolist(), TAGS[np.arange(N) % 5].tolist()))
    groups: dict[str, list[int]] = {}
    for k in keys[0].tolist():
        members = groups.setdefault(tag_of[k], [])
        if len(members) < 2:
            members.append(k)
    want = [k for members in list(groups.values())[:3] for k in members]
    assert [h["id"] for h in hits[0]] == want and all(h["tag"] == tag_of[h["id"]] for h in hits[0])


async def test_range_search_in_the_direction_of_the_metric(env):
    """IP: larger is closer, so the range is radius < distance <= rangeFilter."""
    await env.cluster.proxy.insert("ip", {"pk": env.pks.tolist(), "vec": env.vectors, "age": (env.pks % 100).astype(
        np.int32), "tag": ["ip"] * N})
    q = env.vectors[8] * 0.5
    scores = env.vectors @ q
    order = np.argsort(-scores, kind="stable")
    lo, hi = float(scores[order[30]]), float(scores[order[1]])
    code, hits, _ = await env.custom("ip", "search", {"vector": q.tolist(), "limit": 50,
                                                      "params": {"radius": lo, "rangeFilter": hi}})
    assert code == 200, hits
    inside = [int(env.pks[i]) for i in order if lo < scores[i] <= hi]
    assert [h["id"] for h in hits[0]] == inside and len(inside) == 29
    code, body, _ = await env.custom("ip", "search", {"vector": q.tolist(), "params": {"radius": hi, "rangeFilter": lo}})
    assert code == 400 and "range_filter" in body["message"]


async def test_count_exact_and_grouped(env):
    code, body, _ = await env.custom("items", "count", {})
    assert (code, body) == (200, {"count": N})
    code, body, _ = await env.custom("items", "count", {"filter": {"age": {"$gte": 90}}, "groupBy": "tag"})
    assert code == 200, body
    mask = env.pks % 100 >= 90
    values, counts = np.unique(TAGS[np.arange(N) % 5][mask], return_counts=True)
    assert body["count"] == int(mask.sum())
    assert sorted((g["tag"], g["count"]) for g in body["groups"]) == list(zip(values.tolist(), counts.tolist()))
    assert [g["count"] for g in body["groups"]] == sorted((g["count"] for g in body["groups"]), reverse=True)


# --- find ---------------------------------------------------------------------------------------------------

async def test_find_sorts_on_any_scalar_field_across_shards_with_exact_totals(env):
    code, page, _ = await env.call("GET", "/collections/items/entities?$sort[age]=-1&$sort[pk]=1&$skip=3&$limit=7"
                                          "&$select[]=age&tag[$in][]=t0&tag[$in][]=t3")
    assert code == 200, page
    mask = np.isin(TAGS[np.arange(N) % 5], ["t0", "t3"])
    ages = env.pks % 100
    order = np.lexsort((env.pks[mask], -ages[mask]))
    assert page["total"] == int(mask.sum()) and (page["skip"], page["limit"]) == (3, 7)
    assert page["data"] == [{"pk": int(k), "age": int(k % 100)} for k in env.pks[mask][order][3:10]]
    code, page, _ = await env.call("GET", "/collections/items/entities?$limit=0&age[$lt]=10")
    assert (code, page) == (200, {"total": int((ages < 10).sum()), "limit": 0, "skip": 0, "data": []})
    code, page, _ = await env.call("GET", "/collections/items/entities?$limit=0&tag[$like]=%253")  # like '%3'
    assert (code, page["total"]) == (200, N // 5)
    code, page, _ = await env.call("GET", "/collections/items/entities?$limit=0&$or[0][tag][$like]=t_"
                                          "&$or[1][age]=3&age[$eq]=3")
    assert (code, page["total"]) == (200, int((ages == 3).sum()))
    code, page, _ = await env.call("GET", "/collections/items/entities?$sort[tag]=1&$sort[age]=-1&$limit=5")
    tags = TAGS[np.arange(N) % 5]
    order = np.lexsort((env.pks, -ages, tags))
    assert [r["pk"] for r in page["data"]] == env.pks[order][:5].tolist()
    assert page["data"][0]["color"] and "vec" not in page["data"][0]   # dynamic keys yes, vectors no


async def test_the_cursor_form_pages_past_the_window_and_the_window_is_refused(env):
    seen, last = [], None
    while True:
        cursor = "" if last is None else f"&pk[$gt]={last}"
        code, page, _ = await env.call("GET", f"/collections/items/entities?$sort[pk]=1&$limit=128{cursor}"
                                              "&$select[]=pk&$consistency=Eventually")
        assert code == 200, page
        if not page["data"]:
            break
        seen += [r["pk"] for r in page["data"]]
        last = seen[-1]
    assert seen == env.pks.tolist()
    code, body, _ = await env.call("GET", "/collections/items/entities?$skip=16300&$limit=100")
    assert code == 400 and "cursor form" in body["message"] and "pk[$gt]" in body["message"]


# --- writes -------------------------------------------------------------------------------------------------

async def test_get_update_patch_remove_with_sessions_and_int64_safety(env):
    big = (1 << 60) + 1
    row = {"pk": big, "vec": [0.5] * DIM, "age": 7, "tag": "big"}
    code, created, headers = await env.call("POST", "/collections/strict/entities", row)
    assert code == 201 and created == {"pk": str(big), "age": 7, "tag": "big"}
    ts = headers["X-Vecgrid-Ts"]
    code, got, _ = await env.call("GET", f"/collections/strict/entities/{big}?$consistency=Eventually",
                                  headers={"X-Vecgrid-Guarantee-Ts": ts})
    assert (code, got) == (200, {"pk": str(big), "age": 7, "tag": "big"})
    code, got, _ = await env.call("GET", f"/collections/strict/entities/{big}?$select[]=vec&$select[]=tag")
    assert got == {"pk": str(big), "vec": [0.5] * DIM, "tag": "big"}
    code, body, _ = await env.call("GET", f"/collections/strict/entities/{big}?tag=other")
    assert (code, body["message"]) == (404, f"No record found for id '{big}'")
    code, updated, headers = await env.call("PUT", f"/collections/strict/entities/{big}",
                                            {"pk": 1, "vec": [0.25] * DIM, "age": 8, "tag": "new"})
    assert code == 200 and updated == {"pk": str(big), "age": 8, "tag": "new"} and "X-Vecgrid-Ts" in headers
    code, patched, headers = await env.call("PATCH", f"/collections/strict/entities/{big}", {"age": 9})
    assert code == 200 and patched == {"pk": str(big), "age": 9, "tag": "new"}
    code, got, _ = await env.call("GET", f"/collections/strict/entities/{big}?$select[]=vec&$select[]=age",
                                  headers={"X-Vecgrid-Guarantee-Ts": headers["X-Vecgrid-Ts"]})
    assert got == {"pk": str(big), "vec": [0.25] * DIM, "age": 9}
    code, page, _ = await env.call("GET", f"/collections/strict/entities?pk={big}")
    assert page["total"] == 1 and page["data"][0]["pk"] == str(big)
    code, removed, headers = await env.call("DELETE", f"/collections/strict/entities/{big}?$select[]=tag")
    assert (code, removed) == (200, {"pk": str(big), "tag": "new"}) and "X-Vecgrid-Ts" in headers
    code, _, _ = await env.call("GET", f"/collections/strict/entities/{big}")
    assert code == 404


async def test_multi_remove_by_query_answers_the_removed_records(env):
    rows = [{"pk": 9000 + i, "vec": [float(i)] * DIM, "age": i, "tag": "gone" if i % 2 else "kept"}
            for i in range(6)]
    assert (await env.call("POST", "/collections/strict/entities", rows))[0] == 201
    code, removed, headers = await env.call("DELETE", "/collections/strict/entities?tag=gone&$select[]=age")
    assert code == 200 and sorted(r["pk"] for r in removed) == [9001, 9003, 9005] and "X-Vecgrid-Ts" in headers
    code, page, _ = await env.call("GET", "/collections/strict/entities?pk[$gte]=9000&pk[$lt]=9100")
    assert sorted(r["pk"] for r in page["data"]) == [9000, 9002, 9004]
    code, body, _ = await env.call("PATCH", "/collections/strict/entities?tag=kept", {"age": 1})
    assert (code, body["message"]) == (405, "Can not patch multiple entries")


async def test_varchar_keys_and_malformed_bodies(env):
    rows = [{"pk": f"k{i:03d}", "vec": [float(i)] * DIM, "age": i, "tag": "s"} for i in range(10)]
    code, created, _ = await env.call("POST", "/collections/keys/entities", rows)
    assert code == 201 and [r["pk"] for r in created] == [r["pk"] for r in rows]
    code, page, _ = await env.call("GET", "/collections/keys/entities?$sort[pk]=-1&$limit=3&$select[]=age")
    assert page == {"total": 10, "limit": 3, "skip": 0,
                    "data": [{"pk": "k009", "age": 9}, {"pk": "k008", "age": 8}, {"pk": "k007", "age": 7}]}
    code, got, _ = await env.call("GET", "/collections/keys/entities/k003?$select[]=tag")
    assert (code, got) == (200, {"pk": "k003", "tag": "s"})
    code, hits, _ = await env.custom("keys", "search", {"ids": ["k004"], "limit": 1, "select": ["age"]})
    assert hits == [[{"id": "k004", "distance": 0.0, "age": 4}]]
    code, body, _ = await env.call("POST", "/collections/keys/entities", raw=b'{"pk": "k100", "vec": [')
    assert (code, body["name"]) == (400, "BadRequest")
    code, removed, _ = await env.call("DELETE", "/collections/keys/entities/k003")
    assert removed == {"pk": "k003", "age": 3, "tag": "s"}
    code, body, _ = await env.custom("keys", "count", {"filter": {"pk": {"$like": "k00%"}}})
    assert body == {"count": 9}


# --- bad input never hurts -------------------------------------------------------------------------------------

async def _counts(env) -> tuple[int, int]:
    out = []
    for name in ("items", "strict"):
        code, body, _ = await env.custom(name, "count", {})
        assert code == 200, body
        out.append(body["count"])
    return tuple(out)


def _row(pk, **kw):
    return {"pk": pk, "vec": [0.1] * DIM, "age": 1, "tag": "x", **kw}


async def test_bad_input_is_a_feathers_error_and_writes_nothing(env):
    before = await _counts(env)
    entities_url = "/collections/strict/entities"
    code, body, _ = await env.call("POST", entities_url, [_row(20001), _row(20002, vec=[0.1] * (DIM - 1)),
                                                          _row(20003, vec="nope"), _row(20004, color="x")])
    assert code == 400 and body["name"] == "BadRequest"
    assert [e["index"] for e in body["errors"]] == [1, 2, 3], body["errors"]
    assert "dim" in body["errors"][0]["message"] and "unexpected field `color`" in body["errors"][2]["message"]
    raw = b'{"pk": 20005, "vec": [NaN' + b', 0.1' * (DIM - 1) + b'], "age": 1, "tag": "x"}'
    code, body, _ = await env.call("POST", entities_url, raw=raw)
    assert code == 400 and "NaN" in body["message"]
    cases = [
        ("POST", entities_url, [_row(20006), _row(20006)], None, 400),               # a key twice
        ("POST", entities_url, {"pk": "abc", "vec": [0.1] * DIM, "age": 1, "tag": "x"}, None, 400),
        ("POST", "/collections/nope/entities", _row(20007), None, 404),
        ("GET", entities_url + "?age=old", None, None, 400),
        ("GET", entities_url + "?vec=1", None, None, 400),
        ("GET", entities_url + "?age[$regex]=1", None, None, 400),
        ("GET", entities_url + "?$sort[vec]=1", None, None, 400),
        ("GET", entities_url + "?$select[]=nope", None, None, 400),
        ("GET", "/collections/cold/entities", None, None, 409),
        ("PATCH", entities_url + "/1", {"age": "x"}, None, 404),
        ("PUT", entities_url, _row(1), None, 400),
    ]
    for method, url, body_in, headers, status in cases:
        code, body, _ = await env.call(method, url, body_in, headers)
        assert code == status, (method, url, body)
        assert body["name"] and body["message"]
    searches = [
        ({"vectors": [[0.1] * (DIM - 1)]}, 400),
        ({"vectors": [[0.1] * DIM, [0.1] * (DIM - 1)]}, 400),
        ({"vectors": [["a"] * DIM]}, 400),
        ({"vectors": [[1e39] * DIM]}, 400),
        ({"vectors": [[0.0] * DIM] * 16385}, 400),
        ({"vector": [0.1] * DIM, "limit": 16385}, 400),
        ({"vector": [0.1] * DIM, "limit": 10000, "offset": 7000}, 400),
        ({"vector": [0.1] * DIM, "filter": {"age": {"$in": list(range(16385))}}}, 400),
        ({"vector": [0.1] * DIM, "filter": {"age": "x"}}, 400),
        ({"vector": [0.1] * DIM, "params": {"nprobe": "x"}}, 400),
        ({"vector": [0.1] * DIM, "groupSize": 0}, 400),            # checked without groupBy too
        ({"vector": [0.1] * DIM, "wat": 1}, 400),
        ({"vector": [0.1] * DIM, "consistency": "Sometimes"}, 400),
        ({"vector": [0.1] * DIM, "partitions": ["p9"]}, 404),
    ]
    for body_in, status in searches:
        code, body, _ = await env.custom("strict", "search", body_in)
        assert code == status, (str(body_in)[:80], body)
    code, body, _ = await env.custom("cold", "search", {"vector": [0.1] * DIM})
    assert code == 409 and "load" in body["message"] and body["data"]["milvusCode"] == 101
    assert await _counts(env) == before


# --- the shared adapter cases ------------------------------------------------------------------------------------

SKIPPED = {
    "case_create_generates_or_takes_the_id":
        "a Milvus primary key is either always generated (autoID: a key in the body is refused) or always given",
    "case_update_replaces":
        "a field left out of an update takes its default value: Milvus 2.4 fields are not nullable, so the "
        "replaced record still has every field of the schema",
    "case_unknown_dollar_names":
        "$like is an operator of the entities service (rest-api.md), not an unknown name",
    "case_unique_fields_refuse_a_clash_and_change_nothing":
        "the 'unique' option is for small records (users' emails); an entity's only unique field is its "
        "primary key, and a write with an existing key is an upsert or refused by Milvus's rules",
}


class BoundEntities:
    """An entities service bound to one collection, as the adapter cases call a service: Feathers errors for
    Milvus errors (the app's error hook), and a vector added to every record written whole."""

    def __init__(self, env: Env, collection: str, service: entities.EntitiesService) -> None:
        self.env, self.collection, self.service = env, collection, service

    def _params(self, params):
        params = dict(params or {})
        params["route"] = {"collection": self.collection}
        return params

    @staticmethod
    def _with_vector(data):
        def one(record):
            return {**record, "vec": [0.5] * 4} if isinstance(record, dict) and "vec" not in record else record
        return [one(r) for r in data] if isinstance(data, list) else one(data)

    async def _run(self, method, *args):
        try:
            return await getattr(self.service, method)(*args)
        except errors.MilvusError as e:
            raise feathers_error(e) from None

    async def find(self, params=None):
        return await self._run("find", self._params(params))

    async def get(self, id, params=None):
        return await self._run("get", id, self._params(params))

    async def create(self, data, params=None):
        return await self._run("create", self._with_vector(data), self._params(params))

    async def update(self, id, data, params=None):
        return await self._run("update", id, self._with_vector(data), self._params(params))

    async def patch(self, id, data, params=None):
        return await self._run("patch", id, data, self._params(params))

    async def remove(self, id, params=None):
        return await self._run("remove", id, self._params(params))

    _find, _get, _create, _update, _patch, _remove = find, get, create, update, patch, remove


@pytest.mark.parametrize("case", adapter_support.CASES, ids=[c.__name__ for c in adapter_support.CASES])
async def test_adapter_case(env, case):
    if case.__name__ in SKIPPED:
        pytest.skip(SKIPPED[case.__name__])
    proxy = env.cluster.proxy
    for name in PEOPLE_COLLECTIONS:   # every case starts from empty collections
        await proxy.delete(name, filter={"id": {"$gte": -(1 << 63)}})
    names = iter(PEOPLE_COLLECTIONS)

    def make(id="id", paginate=None, multi=False, query_schema=None):
        assert id == "id"   # the collection's primary key; the query schema comes from its Milvus schema
        return BoundEntities(env, next(names), entities.EntitiesService(proxy, paginate=paginate, multi=multi))

    await case(make)
