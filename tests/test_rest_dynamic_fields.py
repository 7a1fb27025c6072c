"""Keys of the dynamic field over real HTTP: a quick-form collection (only ``id`` and ``vector`` declared, the
dynamic field on) whose records carry ``year`` — mostly integers, some doubles, some strings, some rows without
it — filtered, sorted, selected, counted and grouped through ``collections/:collection/entities``, every answer
checked against a plain Python computation with Milvus's rules (a row lacking the key, or holding another
kind of value, does not match a comparison; ``$ne`` / ``$nin`` match it)."""

from __future__ import annotations

import urllib.parse

import numpy as np
import pytest
import pytest_asyncio

from tests.conftest import poll_until
from tests.rest_support import rest_cluster

pytest.importorskip("faiss")
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

DIM = 8
N = 1000
MISSING = object()


def _year(i: int):
    r = i % 10
    base = 1990 + (i // 10 * 3 + i) % 35
    if r <= 6:
        return base               # integers
    if r == 7:
        return base + 0.5         # doubles
    if r == 8:
        return str(base)          # strings
    return MISSING                # no key at all


YEARS = [_year(i) for i in range(N)]
VECTORS = np.random.default_rng(3).random((N, DIM), dtype=np.float32)


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def rest(tmp_path_factory):
    async with rest_cluster(tmp_path_factory, "rest-dynamic", ["collections", "entities"]) as (coordinator, server):
        server.proxy = coordinator.proxy
        code, body = await server.call("POST", "/collections", {
            "name": "books", "dimension": DIM, "metric": "L2",
            "indexes": [{"field": "vector", "type": "FLAT", "metric": "L2"}]})
        assert code == 201, body
        code, body = await server.call("POST", "/collections", {"name": "books", "wait": True, "timeout": 120},
                                       method="load")
        assert code == 200, body
        rows = []
        for i in range(N):
            row = {"id": i, "vector": VECTORS[i].tolist(), "title": f"b{i}"}
            if YEARS[i] is not MISSING:
                row["year"] = YEARS[i]
            rows.append(row)
        for start in (0, N // 2):   # the first half sealed (flushed), the second in growing segments
            code, body = await server.call("POST", "/collections/books/entities", rows[start:start + N // 2])
            assert code == 201, body
            if start == 0:
                code, body = await server.call("POST", "/collections", {"name": "books", "wait": True},
                                               method="flush")
                assert code == 200 and body["segmentIds"], body
                await poll_until(lambda: coordinator.datacoord.flush_policy.handoffs_waiting == 0, 60,
                                 what="the sealed segment serving")
        yield server


def qs(**pairs) -> str:
    return "?" + "&".join(f"{urllib.parse.quote(k)}={urllib.parse.quote(str(v))}" for k, v in pairs.items())


async def test_search_filters_on_a_dynamic_key_and_selects_it(rest):
    mask = np.asarray([is_number(y) and y >= 2015 for y in YEARS])
    queries = np.random.default_rng(9).random((3, DIM), dtype=np.float32)
    code, hits = await rest.call("POST", "/collections/books/entities", {
        "vectors": queries.tolist(), "limit": 10, "filter": {"year": {"$gte": 2015}}, "select": ["year"]},
        method="search")
    assert code == 200, hits
    ids = np.flatnonzero(mask)
    d = ((queries[:, None, :] - VECTORS[ids][None]) ** 2).sum(-1)
    want = ids[np.argsort(d, axis=1, kind="stable")[:, :10]]
    assert [[h["id"] for h in per] for per in hits] == want.tolist()
    for per in hits:
        for h in per:
            assert set(h) == {"id", "distance", "year"} and h["year"] == YEARS[h["id"]]


async def test_find_filters_sorts_and_selects_a_dynamic_key_from_a_query_string(rest):
    code, page = await rest.call("GET", "/collections/books/entities" + qs(**{
        "year[$gte]": 2018, "$sort[year]": -1, "$select[]": "year", "$limit": 1000}))
    assert code == 200, page
    matching = [i for i, y in enumerate(YEARS) if is_number(y) and y >= 2018]
    want = sorted(matching, key=lambda i: (-YEARS[i], i))
    assert page["total"] == len(matching) > 0
    assert [r["id"] for r in page["data"]] == want
    assert all(set(r) == {"id", "year"} and r["year"] == YEARS[r["id"]] for r in page["data"])


async def test_sorting_by_a_dynamic_key_puts_rows_without_it_last(rest):
    for direction in (1, -1):
        code, page = await rest.call("GET", "/collections/books/entities" + qs(**{
            "$sort[year]": direction, "$select[]": "year", "$limit": 1000}))
        assert code == 200, page
        got = [r["id"] for r in page["data"]]
        present = [i for i in range(N) if YEARS[i] is not MISSING]
        group = {float: 0, int: 0, str: 1}

        def key(i):
            y = YEARS[i]
            return (group[type(y)], y if is_number(y) else 0, y if isinstance(y, str) else "")
        ordered = sorted(present, key=lambda i: (key(i), -i if direction == -1 else i), reverse=direction == -1)
        assert got == ordered + [i for i in range(N) if YEARS[i] is MISSING]
        assert "year" not in page["data"][-1]


async def test_query_string_values_are_typed_and_body_values_keep_their_type(rest):
    # ?year=2001 is the number 2001: matches numeric years only, not the string "2001"
    code, page = await rest.call("GET", "/collections/books/entities" + qs(year=2001, **{"$limit": 1000}))
    assert code == 200, page
    numeric_rows = [i for i, y in enumerate(YEARS) if is_number(y) and y == 2001]
    assert sorted(r["id"] for r in page["data"]) == numeric_rows and numeric_rows
    string_rows = [i for i, y in enumerate(YEARS) if y == "2001"]
    code, body = await rest.call("POST", "/collections/books/entities", {"filter": {"year": "2001"}},
                                 method="count")
    assert (code, body) == (200, {"count": len(string_rows)}) and string_rows


async def test_count_with_filters_and_rows_lacking_the_key(rest):
    cases = [
        ({"year": {"$lt": 2000}}, lambda y: is_number(y) and y < 2000),
        ({"year": {"$gt": 2000, "$lte": 2010.5}}, lambda y: is_number(y) and 2000 < y <= 2010.5),
        ({"year": {"$ne": 2001}}, lambda y: not (is_number(y) and y == 2001)),
        ({"year": {"$in": [1995, 2003.5, "2010"]}}, lambda y: y in (1995, 2003.5, "2010") and y is not MISSING),
        ({"year": {"$nin": [1995, 2003.5]}}, lambda y: not (is_number(y) and y in (1995, 2003.5))),
        ({"year": {"$like": "20%"}}, lambda y: isinstance(y, str) and y.startswith("20")),
        ({"$or": [{"year": {"$lt": 1992}}, {"id": {"$lt": 5}}]}, None),
    ]
    for query, pred in cases:
        code, body = await rest.call("POST", "/collections/books/entities", {"filter": query}, method="count")
        assert code == 200, (query, body)
        if pred is None:
            want = sum(1 for i, y in enumerate(YEARS) if (is_number(y) and y < 1992) or i < 5)
        else:
            want = sum(1 for y in YEARS if pred(y))
        assert body == {"count": want} and 0 < want < N, query
    code, page = await rest.call("GET", "/collections/books/entities" + qs(**{"year[$ne]": 2001, "$limit": 0}))
    assert (code, page["total"]) == (200, sum(1 for y in YEARS if not (is_number(y) and y == 2001)))


async def test_count_grouped_by_a_dynamic_key(rest):
    code, body = await rest.call("POST", "/collections/books/entities", {"groupBy": "year"}, method="count")
    assert code == 200, body
    want: dict = {}
    for y in YEARS:
        y = None if y is MISSING else y      # rows lacking the key: the group of null
        tag = (type(y).__name__ if not is_number(y) else "number", y)
        want[tag] = want.get(tag, 0) + 1
    got = {(type(g["year"]).__name__ if not is_number(g["year"]) else "number", g["year"]): g["count"]
           for g in body["groups"]}
    assert got == want and body["count"] == N


async def test_bad_conditions_on_dynamic_keys_are_400(rest):
    for query in ({"year": {"$gt": True}}, {"year": None}, {"year": {"nested": 1}}):
        code, body = await rest.call("POST", "/collections/books/entities", {"filter": query}, method="count")
        assert code == 400 and body["name"] == "BadRequest", (query, body)


async def test_proxy_query_and_find_return_only_the_named_dynamic_keys(rest):
    """The proxy's own API (the CLI's and the Python layer's): ``output_fields`` naming dynamic keys answer
    those keys only, whatever path the read takes (cut by key, or sorted then fetched by key)."""
    proxy = rest.proxy
    rows = await proxy.query("books", filter={"id": {"$lt": 20}}, output_fields=["year"])
    assert [r["id"] for r in rows] == list(range(20))
    assert all(r == ({"id": r["id"]} if YEARS[r["id"]] is MISSING else {"id": r["id"], "year": YEARS[r["id"]]})
               for r in rows)
    for sort in ([("id", -1)], [("year", 1)], [("title", -1), ("id", 1)]):
        total, page = await proxy.find("books", filter={"id": {"$lt": 50}}, sort=sort, limit=10,
                                       output_fields=["title"])
        assert total == 50 and len(page) == 10
        assert all(set(r) == {"id", "title"} and r["title"] == f"b{r['id']}" for r in page), (sort, page)


async def test_search_groups_by_a_dynamic_key(rest):
    q = VECTORS[0]
    code, hits = await rest.call("POST", "/collections/books/entities", {
        "vector": q.tolist(), "limit": 4, "groupBy": "year", "groupSize": 2, "filter": {"year": {"$gte": 1990}}},
        method="search")
    assert code == 200, hits
    ids = [i for i, y in enumerate(YEARS) if is_number(y)]
    d = ((VECTORS[ids] - q) ** 2).sum(-1)
    groups: dict = {}
    for j in np.argsort(d, kind="stable"):
        members = groups.setdefault(YEARS[ids[j]], [])
        if len(members) < 2:
            members.append(ids[j])
    want = [i for members in list(groups.values())[:4] for i in members]
    assert [h["id"] for h in hits[0]] == want
