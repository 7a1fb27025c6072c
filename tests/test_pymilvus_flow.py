"""pymilvus, unchanged, against vecgrid's MilvusService: a Milvus-documentation-style flow end to end,
run by the real clients — pymilvus 2.4 (the Milvus 2.4 SDK) and the newest 3.x — each in its own venv
(tests/milvus_clients.py) against an embedded cluster.

The script asserts as it goes (a failed assert fails the test with the client's traceback) and prints
what the test checks again here.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.milvus_clients import run_client

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

FLOW = r'''
import json, random, sys
from pymilvus import DataType, MilvusClient

out = {}
client = MilvusClient(sys.argv[1])
out["version"] = client.get_server_version()

# --- the quick form: an id, a vector, the dynamic field; AUTOINDEX, loaded ---------------------------
client.create_collection("quick", dimension=8, metric_type="L2")
assert client.has_collection("quick") and "quick" in client.list_collections()
assert str(client.get_load_state("quick")["state"]) == "Loaded"
random.seed(7)
rows = [{"id": i, "vector": [random.random() for _ in range(8)], "color": f"c{i % 3}", "year": 2000 + i}
        for i in range(200)]
assert client.insert("quick", rows)["insert_count"] == 200

hits = client.search("quick", [rows[5]["vector"]], limit=3, output_fields=["color", "year"],
                     consistency_level="Strong")
assert hits[0][0]["id"] == 5 and hits[0][0]["entity"] == {"color": "c2", "year": 2005}, hits
hits = client.search("quick", [rows[5]["vector"]], limit=10, filter="year >= 2150 and color in ['c0', 'c1']",
                     output_fields=["year", "color"], consistency_level="Strong")
assert len(hits[0]) == 10 and all(h["entity"]["year"] >= 2150 and h["entity"]["color"] != "c2" for h in hits[0])
out["filtered_hits"] = len(hits[0])

found = client.query("quick", filter='color == "c1" and year < 2030', output_fields=["year"],
                     consistency_level="Strong")
assert sorted(r["id"] for r in found) == [i for i in range(30) if i % 3 == 1], found
got = client.get("quick", ids=[3, 4], output_fields=["vector", "color"])
assert [g["id"] for g in got] == [3, 4] and got[0]["color"] == "c0"
assert [round(x, 5) for x in got[0]["vector"]] == [round(x, 5) for x in rows[3]["vector"]]
out["count"] = client.query("quick", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"]

assert client.delete("quick", ids=[0, 1])["delete_count"] == 2
client.delete("quick", filter="year > 2190")
out["count_after_deletes"] = client.query("quick", output_fields=["count(*)"],
                                          consistency_level="Strong")[0]["count(*)"]
client.upsert("quick", [{"id": 5, "vector": rows[5]["vector"], "color": "gold", "year": 1999}])
assert client.get("quick", ids=[5], output_fields=["color", "year"], consistency_level="Strong")[0] == \
    {"id": 5, "color": "gold", "year": 1999}

pages = []
iterator = client.query_iterator("quick", batch_size=50, filter="id >= 0", output_fields=["year"])
while True:
    page = iterator.next()
    if not page:
        break
    pages.append(len(page))
iterator.close()
out["iterator_pages"] = pages

# --- aliases: a second name, resolved everywhere a collection name is ---------------------------------
client.create_alias("quick", "shelf")
assert client.describe_alias("shelf")["collection_name"] == "quick"
assert client.list_aliases("quick")["aliases"] == ["shelf"]
assert client.describe_collection("quick")["aliases"] == ["shelf"]
hits = client.search("shelf", [rows[7]["vector"]], limit=1, consistency_level="Strong")
assert hits[0][0]["id"] == 7
try:
    client.drop_collection("shelf")
    raise AssertionError("dropped through an alias")
except Exception as e:
    out["drop_via_alias"] = str(e)

# --- a custom schema, its own index, partitions ------------------------------------------------------
schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=32)
schema.add_field("title", DataType.VARCHAR, max_length=64)
schema.add_field("score", DataType.FLOAT)
schema.add_field("emb", DataType.FLOAT_VECTOR, dim=4)
index_params = client.prepare_index_params()
index_params.add_index("emb", index_type="IVF_FLAT", metric_type="IP", params={"nlist": 8})
client.create_collection("articles", schema=schema, index_params=index_params)
described = client.describe_collection("articles")
assert [f["name"] for f in described["fields"]] == ["pk", "title", "score", "emb"]
assert client.list_indexes("articles") == ["emb"]
assert client.describe_index("articles", "emb")["index_type"] == "IVF_FLAT"

client.create_partition("articles", "recent")
assert client.has_partition("articles", "recent")
assert sorted(client.list_partitions("articles")) == ["_default", "recent"]
old = [{"pk": f"a{i}", "title": f"old {i}", "score": i / 10, "emb": [1.0, 0.0, 0.0, i / 100]} for i in range(20)]
new = [{"pk": f"b{i}", "title": f"new {i}", "score": i / 10, "emb": [1.0, 0.0, 0.0, i / 100]} for i in range(20)]
client.insert("articles", old)
client.insert("articles", new, partition_name="recent")
hits = client.search("articles", [[1.0, 0.0, 0.0, 0.0]], limit=5, partition_names=["recent"],
                     output_fields=["title"], search_params={"params": {"nprobe": 8}}, consistency_level="Strong")
assert len(hits[0]) == 5 and all(h["pk"].startswith("b") for h in hits[0]), hits   # keyed by the primary key's name
titles = client.query("articles", filter='title like "new 1%"', output_fields=["title"], consistency_level="Strong")
assert sorted(t["title"] for t in titles) == sorted(f"new {i}" for i in range(20) if str(i).startswith("1"))

client.flush("articles")
assert client.get_collection_stats("articles")["row_count"] == 40
compaction = client.compact("articles")
out["compaction_state"] = str(client.get_compaction_state(compaction))
try:   # not part of vecgrid's MilvusService: real gRPC UNIMPLEMENTED, which pymilvus reports
    client.list_users()
    raise AssertionError("list_users answered")
except Exception as e:
    out["list_users"] = str(e)
client.release_collection("articles")
assert str(client.get_load_state("articles")["state"]) == "NotLoad"
client.drop_index("articles", "emb")
assert client.list_indexes("articles") == []
index_params = client.prepare_index_params()
index_params.add_index("emb", index_type="FLAT", metric_type="IP")
client.create_index("articles", index_params)
client.load_collection("articles")
hits = client.search("articles", [[1.0, 0.0, 0.0, 0.0]], limit=40, consistency_level="Strong")
out["articles_hits"] = len(hits[0])

# --- hybrid search over two vector fields, both rankers; the search iterator ---------------------------
from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker
schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
schema.add_field("id", DataType.INT64, is_primary=True)
schema.add_field("text_vec", DataType.FLOAT_VECTOR, dim=2)
schema.add_field("image_vec", DataType.FLOAT_VECTOR, dim=2)
index_params = client.prepare_index_params()
index_params.add_index("text_vec", index_type="FLAT", metric_type="L2")
index_params.add_index("image_vec", index_type="FLAT", metric_type="IP")
client.create_collection("multi", schema=schema, index_params=index_params)
client.insert("multi", [{"id": i, "text_vec": [float(i), 0.0], "image_vec": [1.0, float(i) / 10], "tag": i % 2}
                        for i in range(30)])
text = AnnSearchRequest([[3.0, 0.0]], "text_vec", {"metric_type": "L2"}, limit=5)
image = AnnSearchRequest([[0.0, 1.0]], "image_vec", {"metric_type": "IP"}, limit=5, expr="tag == 1")
fused = client.hybrid_search("multi", [text, image], RRFRanker(), limit=4, output_fields=["tag"],
                             consistency_level="Strong")
out["rrf"] = [(h["id"], round(h["distance"], 6), h["entity"]["tag"]) for h in fused[0]]
fused = client.hybrid_search("multi", [text, image], WeightedRanker(1.0, 0.0), limit=3, consistency_level="Strong")
out["weighted_text_only"] = [h["id"] for h in fused[0]]
seen = []
iterator = client.search_iterator("multi", [[3.0, 0.0]], anns_field="text_vec", batch_size=7, limit=20,
                                  search_params={"metric_type": "L2"}, consistency_level="Strong")
while True:
    page = iterator.next()
    if not page:
        break
    seen.extend(h.id for h in page)   # the iterator pages Hit objects
iterator.close()
out["search_iterator"] = seen
client.drop_collection("multi")

client.alter_alias("articles", "shelf")
assert client.describe_alias("shelf")["collection_name"] == "articles"
client.drop_alias("shelf")
# --- databases: a collection of another database is that database's only -------------------------------
client.create_database("lab")
assert sorted(client.list_databases()) == ["default", "lab"]
lab = MilvusClient(sys.argv[1], db_name="lab")
lab.create_collection("quick", dimension=2, metric_type="L2")   # the same name as default's "quick"
lab.insert("quick", [{"id": 1, "vector": [0.0, 1.0]}, {"id": 2, "vector": [5.0, 5.0]}])
assert [h["id"] for h in lab.search("quick", [[0.0, 1.0]], limit=2, consistency_level="Strong")[0]] == [1, 2]
assert lab.query("quick", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"] == 2
assert client.query("quick", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"] > 100
try:
    client.drop_database("lab")
    raise AssertionError("dropped a database holding a collection")
except Exception as e:
    out["drop_full_database"] = str(e)
lab.drop_collection("quick")
client.drop_database("lab")
assert client.list_databases() == ["default"]

client.rename_collection("articles", "papers")
assert sorted(client.list_collections()) == ["papers", "quick"]
client.drop_collection("papers")
client.drop_collection("quick")
assert client.list_collections() == []
print(json.dumps(out))
'''


@pytest.mark.parametrize("client", ["pymilvus-2.4", "pymilvus-3"])
async def test_pymilvus_runs_the_documentation_flow(embedded, client):
    uri = f"http://127.0.0.1:{embedded.milvus.port}"
    done = await asyncio.to_thread(run_client, client, FLOW, uri)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["version"].startswith("v2.4")
    assert out["filtered_hits"] == 10
    assert out["count"] == 200
    assert out["count_after_deletes"] == 200 - 2 - 9
    assert out["iterator_pages"] == [50, 50, 50, 39]
    assert out["articles_hits"] == 40
    assert "via alias = shelf" in out["drop_via_alias"]
    assert "not empty" in out["drop_full_database"]
    assert out["compaction_state"] in ("Executing", "Completed")
    assert "UNIMPLEMENTED" in out["list_users"] or "nimplemented" in out["list_users"]
    # RRF (k = 60): text ranks 3, 2, 4, 1, 5 by L2 to (3, 0); image holds the odd ids, best by IP to (0, 1):
    # 29, 27, 25, 23, 21.  No id is in both lists: ranks 1 of each tie at 1/61, then ranks 2 at 1/62
    assert [(i, d) for i, d, _ in out["rrf"]] == [(29, round(1 / 61, 6)), (3, round(1 / 61, 6)),
                                                  (2, round(1 / 62, 6)), (27, round(1 / 62, 6))]
    assert all(tag == i % 2 for i, _, tag in out["rrf"])
    assert out["weighted_text_only"] == [3, 2, 4]
    assert out["search_iterator"] == sorted(range(30), key=lambda i: ((i - 3) ** 2, i))[:20]
