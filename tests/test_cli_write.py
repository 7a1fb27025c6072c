"""`vecgrid insert | delete | flush | compact` as a user runs them: bad arguments fail in one line before anything
connects (fast lane); against an embedded cluster of two QueryNode workers (slow) the rows of Parquet, JSON
lines and .npy + Parquet files become searchable, deletes take them away, and every command ends with one
JSON line."""

from __future__ import annotations

import asyncio
import json
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import pytest_asyncio

from tests.cli_support import Result, assert_one_line_error, run_in_process
from tests.proxy_support import create_collection

DIM = 8


# --- fast: refused before anything connects ----------------------------------------------------------------

@pytest.mark.parametrize("args,fragment", [
    (["delete", "c"], "one of the arguments --ids --filter is required"),
    (["delete", "c", "--ids", "1", "--filter", "{}"], "not allowed with argument --ids"),
    (["delete", "c", "--filter", "{nope"], "--filter is not a JSON object"),
    (["delete", "c", "--ids", " , "], "--ids is empty"),
    (["insert", "c", "/no/such.parquet"], "does not exist"),
    (["insert", "c", "x.txt"], "expected .parquet, .npy or .csv"),
    (["insert", "c", "a.jsonl", "b.parquet"], "cannot be mixed"),
    (["insert", "c", "a.jsonl", "--batch-rows", "0"], "--batch-rows must be 1 or more"),
    (["flush"], "the following arguments are required: NAME"),
    (["create-index", "c"], "the following arguments are required: --field"),
    (["create-index", "c", "--field", "vec", "--params", "{nope"], "--params is not JSON"),
    (["create-index", "c", "--field", "vec", "--params", "[1]"], "--params must be a JSON object"),
    (["drop-index", "c"], "name the index: --field F, --index-name N or both"),
])
def test_bad_arguments_fail_in_one_line(args, fragment, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.txt").write_text("1\n")
    result = run_in_process([*args, "--coord", "127.0.0.1:1"], capsys)
    assert_one_line_error(result, fragment)
    assert result.returncode == 2


# --- slow: against a cluster ----------------------------------------------------------------------------------

async def vecgrid(*args: str, timeout: float = 120) -> Result:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "vecgrid.cli", *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return Result(proc.returncode, out.decode(), err.decode())


def summary(result: Result) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(tmp_path_factory):
    from vecgrid.deploy import EmbeddedCluster
    from tests.querycoord_support import Coord, fast_settings

    root = tmp_path_factory.mktemp("cliwrite")
    cluster = EmbeddedCluster(fast_settings(root / "data", workers=2))
    await asyncio.wait_for(cluster.start(), 120)
    coll = create_collection(cluster.coord.catalog, "books", dim=DIM, shards=2, dynamic=True)
    await Coord(cluster.addresses.grpc, cluster.coord).load(coll.id)
    yield cluster, root, coll
    await asyncio.wait_for(cluster.stop(), 60)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_insert_delete_flush_compact_end_to_end(cluster):
    cluster, root, coll = cluster
    addr = ["--coord", cluster.addresses.grpc]
    proxy = cluster.proxy
    rng = np.random.default_rng(3)

    vectors = rng.standard_normal((300, DIM)).astype(np.float32)
    pq.write_table(pa.table({"pk": np.arange(300), "vec": pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.reshape(-1)), DIM), "age": pa.array(np.arange(300) % 50, pa.int32()),
        "tag": ["parquet"] * 300}), root / "rows.parquet")
    done = summary(await vecgrid("insert", "books", str(root / "rows.parquet"), "--batch-rows", "128", *addr))
    assert (done["collection"], done["insert_count"], done["batches"]) == ("books", 300, 3) and done["timestamp"] > 0
    assert await proxy.count("books") == 300
    hits = await proxy.search("books", vectors[:2], limit=1)
    assert [h[0]["id"] for h in hits] == [0, 1]

    with open(root / "rows.jsonl", "w") as f:
        for i in range(5):
            f.write(json.dumps({"pk": 1000 + i, "vec": [float(i)] * DIM, "age": i, "tag": "json", "shelf": i}) + "\n")
    done = summary(await vecgrid("insert", "books", str(root / "rows.jsonl"), *addr))
    assert done["insert_count"] == 5
    found = await proxy.query("books", filter={"tag": "json"}, output_fields=["*"])
    assert [(r["pk"], r["shelf"]) for r in found] == [(1000 + i, i) for i in range(5)]

    np.save(root / "vec.npy", rng.standard_normal((20, DIM)).astype(np.float32))
    pq.write_table(pa.table({"pk": np.arange(2000, 2020), "age": pa.array(np.zeros(20), pa.int32()),
                             "tag": ["npy"] * 20}), root / "scalars.parquet")
    done = summary(await vecgrid("insert", "books", str(root / "vec.npy"), str(root / "scalars.parquet"), *addr))
    assert done["insert_count"] == 20
    assert await proxy.count("books", filter={"tag": "npy"}) == 20

    done = summary(await vecgrid("delete", "books", "--ids", "0,1,2,1000", *addr))
    assert done["delete_count"] == 4
    done = summary(await vecgrid("delete", "books", "--filter", '{"tag": "npy"}', *addr))
    assert done["delete_count"] == 20
    assert await proxy.count("books") == 300 + 5 + 20 - 4 - 20

    flushed = summary(await vecgrid("flush", "books", *addr))
    published = {s.ID for s in cluster.coord.catalog.list_segments(coll.id)}
    assert flushed["collection"] == "books" and flushed["segment_ids"] and set(flushed["segment_ids"]) <= published
    assert await proxy.count("books") == 300 + 5 + 20 - 4 - 20          # the same rows, now sealed
    compacted = summary(await vecgrid("compact", "books", *addr))
    assert compacted["collection"] == "books" and isinstance(compacted["compaction_id"], int)
    assert await proxy.count("books") == 300 + 5 + 20 - 4 - 20

    # a bad row stops the insert with one line saying how far it got
    with open(root / "bad.jsonl", "w") as f:
        for i in range(4):
            f.write(json.dumps({"pk": 3000 + i, "vec": [1.0] * (DIM if i < 2 else 3), "age": i, "tag": "bad"}) + "\n")
    assert_one_line_error(await vecgrid("insert", "books", str(root / "bad.jsonl"), "--batch-rows", "2", *addr),
                          "the dim (3) of the vector", "after 2 of 4 rows were inserted")
    assert await proxy.count("books", filter={"tag": "bad"}) == 2
    assert_one_line_error(await vecgrid("insert", "nope", str(root / "rows.jsonl"), *addr), "collection not found")


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_insert_upsert_replaces_the_rows_of_its_keys(cluster):
    cluster, root, _ = cluster
    addr = ["--coord", cluster.addresses.grpc]
    proxy = cluster.proxy

    def rows(path, pks, tag):
        with open(path, "w") as f:
            for pk in pks:
                f.write(json.dumps({"pk": pk, "vec": [float(pk % 7)] * DIM, "age": 1, "tag": tag}) + "\n")
    rows(root / "first.jsonl", range(4000, 4004), "first")
    assert summary(await vecgrid("insert", "books", str(root / "first.jsonl"), *addr))["insert_count"] == 4
    # two keys that are there, two new ones: the first two replaced, the other two inserted
    rows(root / "again.jsonl", range(4002, 4006), "again")
    done = summary(await vecgrid("insert", "books", str(root / "again.jsonl"), "--upsert", "--batch-rows", "3",
                                 *addr))
    assert (done["upsert_count"], done["batches"]) == (4, 2) and "insert_count" not in done
    found = await proxy.query("books", filter={"pk": {"$gte": 4000, "$lt": 4010}}, output_fields=["pk", "tag"])
    assert sorted((r["pk"], r["tag"]) for r in found) == [(4000, "first"), (4001, "first"), (4002, "again"),
                                                           (4003, "again"), (4004, "again"), (4005, "again")]


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_drop_index_then_create_another(cluster):
    cluster, _, _ = cluster
    addr = ["--coord", cluster.addresses.grpc]
    shelf = create_collection(cluster.coord.catalog, "shelf", dim=DIM, shards=1)   # FLAT on vec, as imports do
    refused = await vecgrid("create-index", "shelf", "--field", "vec", "--type", "HNSW", *addr)
    assert_one_line_error(refused, "already has index 'vec'",
                          f"drop it first: vecgrid drop-index shelf --field vec --coord {cluster.addresses.grpc}")
    assert summary(await vecgrid("drop-index", "shelf", "--field", "vec", *addr)) == {
        "collection": "shelf", "index_name": "vec", "field": "vec"}
    assert cluster.coord.catalog.describe_index(shelf.id) == []
    assert_one_line_error(await vecgrid("drop-index", "shelf", "--index-name", "vec", *addr),
                          "index not found", "no index 'vec'")
    created = summary(await vecgrid("create-index", "shelf", "--field", "vec", "--type", "HNSW", *addr))
    assert (created["index_name"], created["state"]) == ("vec", "Finished")
    # books is loaded: its index stays, as Milvus refuses it
    assert_one_line_error(await vecgrid("drop-index", "books", "--field", "vec", *addr), "release it first")
