"""`vecgrid load | release | search | status` as a user runs them, against a real coordinator (an embedded
cluster of two QueryNode workers) with bulk-imported data; searches are checked against numpy and every
failure is one `vecgrid: error:` line."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import numpy as np
import pytest
import pytest_asyncio

from vecgrid.cli import EXIT_BROKEN_PIPE
from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import milvus_pb2, query_coord_pb2
from tests.cli_support import Result, assert_one_line_error
from tests.proxy_support import dense_hits, refused_address
from tests.querycoord_support import Coord, fast_settings, left_as_found
from tests.querynode_support import DIM, assert_same_knn, import_collection, reference_search

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]


async def vecgrid(*args: str, timeout: float = 120) -> Result:
    """Run the CLI in a subprocess without blocking the loop that serves the cluster."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "vecgrid.cli", *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return Result(proc.returncode, out.decode(), err.decode())


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    books = import_collection(root, "books", metric="L2", index="FLAT", n=900, shards=2, segment_rows=150, seed=12)
    pairs = import_collection(root, "pairs", metric="IP", index="FLAT", n=300, shards=1, segment_rows=100, seed=13)
    cluster = EmbeddedCluster(fast_settings(books.data_dir, workers=2))
    await asyncio.wait_for(cluster.start(), 120)
    yield cluster, Coord(cluster.addresses.grpc, cluster.coord), books, pairs, root
    await asyncio.wait_for(cluster.stop(), 60)


@pytest_asyncio.fixture(loop_scope="module")
async def env(cluster_env):
    """The module's cluster, given back to the next test as this one found it."""
    async with left_as_found(cluster_env[1], cluster_env[0].coord):
        yield cluster_env


async def test_load_status_search_release(env):
    cluster, coord, books, _, root = env
    addr = ["--coord", cluster.addresses.grpc]

    report = json.loads((await vecgrid("status", "--json", *addr, "--rest", cluster.addresses.http)).stdout)
    assert len(report["nodes"]) == 2 and all(n["state"] == "Normal" for n in report["nodes"])
    assert report["health"]["status"] == "ok" and len(report["health"]["components"]) == 6
    # no REST where it is looked for: the status still comes, saying the health is unknown
    unknown = json.loads((await vecgrid("status", "--json", *addr, "--rest", "http://" + refused_address())).stdout)
    assert unknown["health"]["status"] == "unreachable" and len(unknown["nodes"]) == 2
    (entry,) = [c for c in report["collections"] if c["name"] == "books"]
    assert (entry["loaded"], entry["load_percentage"], entry["partitions"]) == (False, None, [])

    done = await vecgrid("load", "books", *addr)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "collection books loaded: 100 %"
    assert await coord.percentage(books.collection_id) == 100

    text = await vecgrid("status", *addr, "--rest", cluster.addresses.http)
    assert text.returncode == 0, text.stderr
    assert "query nodes: 2" in text.stdout and "loaded 100 %" in text.stdout
    # the same components as GET /health
    assert "health: ok" in text.stdout
    health_lines = [line.split() for line in text.stdout.splitlines() if line.startswith("  ") and " ok " in line]
    assert {line[0] for line in health_lines} == {"coordinator", "scheduler", "metadata-store", "wal",
                                                  *(f"querynode-{n.node_id}" for n in cluster.coord.nodes.all())}
    assert "partition _default" in text.stdout and "InMemory" in text.stdout
    assert "pairs" in text.stdout and "not loaded" in text.stdout
    report = json.loads((await vecgrid("status", "--json", *addr)).stdout)
    (entry,) = [c for c in report["collections"] if c["name"] == "books"]
    assert entry["loaded"] and entry["load_percentage"] == 100 and entry["id"] == books.collection_id
    assert [(p["name"], p["state"], p["load_percentage"]) for p in entry["partitions"]] == \
        [("_default", "InMemory", 100)]

    xq = np.random.default_rng(5).standard_normal((3, DIM)).astype(np.float32)
    np.save(root / "q.npy", xq)
    found = await vecgrid("search", "books", "--vectors", str(root / "q.npy"), "--limit", "5",
                          "--filter", '{"age": {"$lt": 30}, "tag": {"$ne": "red"}}', "--output-fields", "age,tag",
                          *addr)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    mask = (books.columns["age"] < 30) & (books.columns["tag"] != "red")
    assert_same_knn(*reference_search(books, xq, 5, mask), *dense_hits(hits, 5))
    assert all(set(h["entity"]) == {"age", "tag"} and h["entity"]["age"] < 30 for row in hits for h in row)
    same = await vecgrid("search", "books", "--vectors", str(root / "q.npy"), "--limit", "5",
                         "--filter", 'age < 30 and tag != "red"', "--output-fields", "age,tag", *addr)
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout) == hits   # the Milvus expression selects what the query object does

    np.save(root / "one.npy", xq[0])  # a single vector is one query
    one = json.loads((await vecgrid("search", "books", "--vectors", str(root / "one.npy"), *addr)).stdout)
    assert len(one) == 1 and len(one[0]) == 10

    gone = await vecgrid("release", "books", *addr)
    assert gone.returncode == 0 and gone.stdout.strip() == "collection books released"
    reply = await coord.call(
        "ShowCollections", query_coord_pb2.ShowCollectionsRequest(collectionIDs=[books.collection_id])
    )
    assert reply.status.code == 101
    assert_one_line_error(await vecgrid("search", "books", "--vectors", str(root / "q.npy"), *addr),
                           "collection not loaded")
    again = await vecgrid("release", "books", *addr)  # releasing what is not loaded succeeds, as in Milvus
    assert again.returncode == 0


async def test_load_with_replicas_in_a_resource_group(env):
    cluster, coord, _, pairs, _ = env
    addr = ["--coord", cluster.addresses.grpc]
    done = await vecgrid("load", "pairs", "--replicas", "2", "--resource-group", "__default_resource_group", *addr)
    assert done.returncode == 0, done.stderr
    replicas = (await coord.ok("GetReplicas", milvus_pb2.GetReplicasRequest(collectionID=pairs.collection_id))).replicas
    assert len(replicas) == 2 and {r.resource_group_name for r in replicas} == {"__default_resource_group"}
    shards = await coord.leaders(pairs.collection_id)
    assert all(len(s.node_ids) == 2 for s in shards)
    assert (await vecgrid("release", "pairs", *addr)).returncode == 0


async def test_errors_are_one_line(env):
    cluster, _, _, _, root = env
    addr = ["--coord", cluster.addresses.grpc]
    np.save(root / "q2.npy", np.zeros((1, DIM), np.float32))
    assert_one_line_error(await vecgrid("load", "nope", *addr), "collection not found")
    assert_one_line_error(await vecgrid("load", "pairs", "--replicas", "3", *addr),
                           "resource group node not enough")
    assert_one_line_error(await vecgrid("load", "pairs", "--resource-group", "rg9", *addr),
                           "resource group not found")
    assert_one_line_error(await vecgrid("search", "pairs", "--vectors", str(root / "q2.npy"),
                                         "--filter", '{"colour": "red"}', *addr), "has no field 'colour'")
    bad = await vecgrid("search", "pairs", "--vectors", str(root / "q2.npy"), "--filter", "{age: 3}", *addr)
    assert_one_line_error(bad, "--filter is not a JSON object")
    assert bad.returncode == 2
    # not JSON: a Milvus expression, compiled against the schema by the proxy
    assert_one_line_error(await vecgrid("search", "pairs", "--vectors", str(root / "q2.npy"),
                                         "--filter", 'colour == "red"', *addr), "colour")
    assert_one_line_error(await vecgrid("search", "pairs", "--vectors", str(root / "q2.npy"),
                                         "--filter", "id >", *addr), "cannot parse expression")
    assert_one_line_error(await vecgrid("search", "pairs", "--vectors", str(root / "missing.npy"), *addr),
                           "cannot read --vectors")
    assert_one_line_error(await vecgrid("load", "pairs", "--replicas", "0", *addr), "--replicas must be 1 or more")
    assert_one_line_error(await vecgrid("status", "--coord", refused_address()), "service unavailable",
                           "ListQueryNode at")


async def test_status_into_a_closed_pipe_ends_quietly(env):
    """`vecgrid status --json | head -1`: once the reader is gone, no `Broken pipe` error and no traceback."""
    cluster = env[0]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader went away before the first line, as `head` does after its lines
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "vecgrid.cli", "status", "--json", "--coord", cluster.addresses.grpc,
        "--rest", cluster.addresses.http, stdout=write_end, stderr=asyncio.subprocess.PIPE)
    os.close(write_end)
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert (proc.returncode, err.decode()) == (EXIT_BROKEN_PIPE, "")
