"""VecgridClient against vecgrid's real ``collections`` and ``entities`` services, with every transport.

The services run on an in-process Dask cluster of two workers behind the REST app on loopback (as in
tests/test_rest_collections.py); the blocking clients run in a worker thread so that the server, which
shares the test's event loop, keeps serving. Each transport works on its own collection.
"""

from __future__ import annotations

import asyncio

import httpx
import numpy as np
import pytest
import pytest_asyncio
import requests

from tests.rest_support import rest_cluster
from vecgrid.client import AsyncVecgridClient, BadRequest, Conflict, NotFound, VecgridClient

pytest.importorskip("faiss")
pytestmark = pytest.mark.asyncio(loop_scope="module")

DIM = 8
N = 300


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def base(tmp_path_factory):
    async with rest_cluster(tmp_path_factory, "client-vecgrid", ["collections", "entities"]) as (_, rest):
        yield rest.base


def session_flow(client, name: str) -> None:
    """The quickstart's steps and a few mistakes, each checked against what the services answer."""
    vectors = np.random.default_rng(3).random((N, DIM), dtype=np.float32)
    created = client.create_collection(name, dimension=DIM, metric_type="L2")
    assert created["loadState"] == "LoadStateLoaded"  # the quick create answers once loaded
    assert name in client.list_collections()
    assert client.describe_collection(name)["schema"]["fields"][0]["isPrimary"] is True

    inserted = client.insert(name, [{"id": i, "vector": vectors[i], "year": 2000 + i % 25} for i in range(N)])
    assert inserted == {"insert_count": N, "ids": list(range(N))}
    hits = client.search(name, vectors[[4, 9]], limit=3, filter={"id": {"$lt": 100}},
                         output_fields=["year"], consistency_level="Session")
    assert [per_query[0]["id"] for per_query in hits] == [4, 9]  # one list per query, in order
    assert hits[0][0]["distance"] == 0.0 and hits[0][0]["entity"] == {"year": 2004}
    assert client.search(name, ids=[7], limit=1)[0][0]["id"] == 7

    newest = client.query(name, filter={"id": {"$gte": N - 5}}, output_fields=["year"], sort={"id": -1}, limit=2)
    assert newest == [{"id": N - 1, "year": 2000 + (N - 1) % 25}, {"id": N - 2, "year": 2000 + (N - 2) % 25}]
    assert len(client.query(name, filter={"id": {"$lt": 150}})) == 150  # every match, by cursor
    assert [row["id"] for row in client.get(name, [5, 6])] == [5, 6]
    assert client.count(name, filter={"id": {"$lt": 10}}) == {"count": 10}

    assert client.upsert(name, [{"id": 5, "vector": vectors[5], "year": 1999}]) == {"upsert_count": 1}
    assert client.get(name, 5, output_fields=["year"], consistency_level="Session") == [{"id": 5, "year": 1999}]
    assert client.delete(name, ids=[1, 2, 3])["delete_count"] == 3
    assert client.delete(name, filter={"id": {"$gte": N - 10}})["delete_count"] == 10
    assert client.count(name, consistency_level="Session") == {"count": N - 13}

    with pytest.raises(Conflict):
        client.create_collection(name, dimension=DIM)
    with pytest.raises(BadRequest) as wrong_dimension:
        client.insert(name, [{"id": 10_000, "vector": [1.0, 2.0]}])
    assert wrong_dimension.value.errors[0]["index"] == 0
    client.release_collection(name)
    with pytest.raises(Conflict) as not_loaded:
        client.search(name, vectors[0])
    assert not_loaded.value.data["milvusCode"] == 101
    assert client.load_collection(name)["loadState"] == "LoadStateLoaded"
    assert client.flush(name)["name"] == name
    client.drop_collection(name)
    assert client.has_collection(name) is False
    with pytest.raises(NotFound):
        client.describe_collection(name)


@pytest.mark.parametrize("transport", ["urllib", "requests", "httpx"])
async def test_vecgrid_client_with_each_blocking_transport(base, transport):
    chosen = requests.Session() if transport == "requests" else transport
    client = VecgridClient(base, transport=chosen, timeout=120)
    try:
        await asyncio.to_thread(session_flow, client, f"docs_{transport}")
    finally:
        client.close()


async def test_async_vecgrid_client(base):
    vectors = np.random.default_rng(4).random((20, DIM), dtype=np.float32)
    http = httpx.AsyncClient(timeout=120)
    async with http, AsyncVecgridClient(base, http) as client:
        await client.create_collection("docs_async", dimension=DIM)
        inserted = await client.insert("docs_async", [{"id": i, "vector": vectors[i]} for i in range(20)])
        assert inserted["insert_count"] == 20
        hits = await client.search("docs_async", vectors[:3], limit=1, consistency_level="Session")
        assert [per_query[0]["id"] for per_query in hits] == [0, 1, 2]
        assert await client.count("docs_async") == {"count": 20}
        await client.drop_collection("docs_async")
        assert await client.has_collection("docs_async") is False
