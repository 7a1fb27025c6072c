"""Writes through the proxy on an embedded cluster of two QueryNode workers: inserts, upserts and deletes in
the coordinator's process and from another process's proxy (over WriteService), read back at once by Strong
and Session reads.  The coordinator ticks the channels every 30 s only: a read that waited for a tick would
hang, so every read here shows that Strong costs no tick."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import numpy as np
import pytest
import pytest_asyncio

from vecgrid import errors
from vecgrid.cluster.proxy.proxy import Proxy
from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import query_coord_pb2
from vecgrid.storage.catalog import CollectionInfo
from tests.proxy_support import create_collection, rows_for
from tests.querycoord_support import Coord, fast_settings

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

DIM = 16
READ_S = 20   # every read answers well within this, or it waited for a time tick (30 s)


@dataclass
class Env:
    cluster: EmbeddedCluster
    coord: Coord
    local: Proxy    # the coordinator's own (in-process writer)
    remote: Proxy   # another process's view: catalog and writes over gRPC
    colls: dict[str, CollectionInfo]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory):
    settings = fast_settings(tmp_path_factory.mktemp("write"), workers=2)
    settings.set("querycoord.time_tick_interval_s", 30.0)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    catalog = cluster.coord.catalog
    colls = {
        "two": create_collection(catalog, "two", dim=DIM, shards=2, dynamic=True),
        "auto": create_collection(catalog, "auto", dim=DIM, shards=1, auto_id=True),
        "keys": create_collection(catalog, "keys", dim=DIM, shards=2, str_pk=True),
        "churn": create_collection(catalog, "churn", dim=DIM, shards=2),
        "idle": create_collection(catalog, "idle", dim=DIM, shards=1),
    }
    coord = Coord(cluster.addresses.grpc, cluster.coord)
    for coll in colls.values():
        await coord.load(coll.id)
    remote = Proxy(cluster.addresses.grpc)
    yield Env(cluster, coord, cluster.proxy, remote, colls)
    await remote.close()
    await asyncio.wait_for(cluster.stop(), 60)


async def test_a_strong_read_of_an_idle_channel_waits_for_no_tick(env):
    async with asyncio.timeout(READ_S):
        assert await env.remote.count("idle") == 0
        assert await env.local.count("idle") == 0
        assert await env.remote.search("idle", np.zeros(DIM, np.float32), limit=3) == [[]]


async def test_inserted_rows_are_seen_by_the_next_strong_read(env):
    for proxy, first in ((env.local, 0), (env.remote, 1000)):
        pks = list(range(first, first + 50))
        rows = rows_for(pks, DIM, seed=first)
        done = await proxy.insert("two", rows)
        assert (done.insert_cnt, done.ids) == (50, pks) and done.timestamp > 0
        async with asyncio.timeout(READ_S):
            assert await proxy.count("two", filter={"pk": {"$gte": first, "$lt": first + 50}}) == 50
            hits = await proxy.search("two", rows["vec"][:3], limit=1, output_fields=["age", "tag"])
            assert [h[0]["id"] for h in hits] == pks[:3]
            assert hits[0][0]["entity"] == {"age": pks[0] % 100, "tag": "w"}
            found = await proxy.query("two", filter={"pk": {"$in": pks[:4]}}, output_fields=["age"])
            assert [r["pk"] for r in found] == pks[:4]
    async with asyncio.timeout(READ_S):
        assert await env.remote.count("two") == 100


async def test_dynamic_fields_and_rows_as_dicts(env):
    rows = [{"pk": 5000 + i, "vec": np.full(DIM, i, np.float32).tolist(), "age": i, "tag": "dyn", "color": f"c{i}"}
            for i in range(3)]
    await env.remote.insert("two", rows)
    async with asyncio.timeout(READ_S):
        found = await env.remote.query("two", filter={"tag": "dyn"}, output_fields=["*"])
    assert [(r["pk"], r["color"]) for r in found] == [(5000, "c0"), (5001, "c1"), (5002, "c2")]


async def test_auto_ids_are_allocated_and_a_given_key_is_refused(env):
    rows = rows_for(list(range(20)), DIM, seed=3)
    pk_given = dict(rows)
    del rows["pk"]
    done = await env.remote.insert("auto", rows)
    assert done.insert_cnt == 20 and len(set(done.ids)) == 20 and all(isinstance(i, int) for i in done.ids)
    async with asyncio.timeout(READ_S):
        assert sorted(r["pk"] for r in await env.remote.query("auto", output_fields=["pk"])) == sorted(done.ids)
    with pytest.raises(errors.ParameterInvalid, match="can not assign primary field data when auto id enabled pk"):
        await env.remote.insert("auto", pk_given)
    with pytest.raises(errors.ParameterInvalid, match="upsert can not assign primary field data"):
        await env.remote.upsert("auto", rows)


async def test_delete_by_ids_and_by_filter(env):
    pks = [f"k{i:03d}" for i in range(40)]
    rows = rows_for(pks, DIM, seed=4)
    rows["age"] = np.arange(40, dtype=np.int32)
    await env.remote.insert("keys", rows)
    gone = await env.remote.delete("keys", ids=pks[:5])
    assert (gone.delete_cnt, gone.ids) == (5, pks[:5])
    async with asyncio.timeout(READ_S):
        assert await env.remote.count("keys") == 35
    by_filter = await env.remote.delete("keys", filter={"age": {"$gte": 30}})
    assert by_filter.delete_cnt == 10 and sorted(by_filter.ids) == pks[30:]
    nothing = await env.local.delete("keys", filter={"age": {"$gte": 1000}})
    assert nothing.delete_cnt == 0
    async with asyncio.timeout(READ_S):
        assert sorted(r["pk"] for r in await env.remote.query("keys", output_fields=["pk"])) == pks[5:30]
    with pytest.raises(errors.ParameterInvalid, match="either primary keys"):
        await env.remote.delete("keys")
    with pytest.raises(errors.ParameterInvalid, match="VarChar"):
        await env.remote.delete("keys", ids=[1, 2])


async def test_a_session_read_sees_the_proxys_own_write(env):
    await env.remote.insert("two", rows_for([7000], DIM, seed=5, tag="session"))   # one of the two channels
    async with asyncio.timeout(READ_S):
        assert [r["pk"] for r in await env.remote.query("two", filter={"tag": "session"},
                                                         consistency="Session")] == [7000]
    # the write's timestamp as a read's guarantee timestamp (the channel holds it: no tick needed)
    done = await env.local.insert("idle", rows_for([1], DIM, seed=5, tag="session"))
    async with asyncio.timeout(READ_S):
        assert await env.remote.count("idle", filter={"tag": "session"}, guarantee_timestamp=done.timestamp) == 1
    await env.local.delete("idle", ids=[1])


async def test_upserts_never_show_a_key_absent_or_twice(env):
    """Readers count the keys continuously while every key is upserted again and again."""
    keys = list(range(64))
    await env.local.insert("churn", rows_for(keys, DIM, seed=6, tag="v0"))
    stop = asyncio.Event()
    seen: list[int] = []

    async def reader(proxy: Proxy) -> None:
        while not stop.is_set():
            seen.append(await proxy.count("churn"))
            found = await proxy.query("churn", output_fields=["pk"])
            assert sorted(r["pk"] for r in found) == keys, "a key absent or doubled"

    readers = [asyncio.ensure_future(reader(p)) for p in (env.local, env.remote)]
    try:
        for version in range(1, 16):
            batch = keys[version % 4::4]
            rows = rows_for(batch, DIM, seed=version, tag=f"v{version}")
            done = await (env.local if version % 2 else env.remote).upsert("churn", rows)
            assert done.upsert_cnt == len(batch)
            await asyncio.sleep(0)
        stop.set()
        async with asyncio.timeout(60):
            await asyncio.gather(*readers)
    finally:
        stop.set()
        for r in readers:
            r.cancel()
    assert seen and set(seen) == {len(keys)}
    async with asyncio.timeout(READ_S):
        tags = {r["pk"]: r["tag"] for r in await env.remote.query("churn", output_fields=["tag"])}
    assert tags[3] == "v15" and tags[0] == "v12"   # the last upsert of each key wins


async def test_write_errors_are_milvus_errors(env):
    with pytest.raises(errors.CollectionNotFound):
        await env.remote.insert("nope", rows_for([1], DIM))
    with pytest.raises(errors.PartitionNotFound, match="p9"):
        await env.remote.insert("two", rows_for([1], DIM), partition="p9")
    bad = rows_for([1, 2], DIM)
    bad["vec"][1, 3] = np.nan
    with pytest.raises(errors.ParameterInvalid, match="NaN or Inf"):
        await env.remote.insert("two", bad)
    with pytest.raises(errors.CollectionNotFound):
        await env.remote.flush("no-such-collection")
    with pytest.raises(errors.CollectionNotFound):
        await env.local.compact("no-such-collection")


async def test_a_strong_read_of_channels_with_acknowledged_writes_takes_no_thread(env, monkeypatch):
    """Once the writer has seen a channel's appender with a durable record, a Strong read's guarantee is one
    attribute read on the loop: no thread hand-off per search."""
    writer = env.local.writes.writer
    channels = list(env.colls["churn"].vchannels)
    await env.local.insert("churn", rows_for(list(range(5000, 5040)), DIM))   # 40 keys: both channels
    first = await writer.guarantees(channels)
    assert all(first.values())
    offloaded = []
    real = asyncio.to_thread

    def recording(fn, *args, **kwargs):
        offloaded.append(fn)
        return real(fn, *args, **kwargs)
    monkeypatch.setattr(asyncio, "to_thread", recording)
    again = await writer.guarantees(channels)
    assert writer.guarantees_sync not in offloaded
    assert again == first == {c: writer.appenders.acknowledged_ts(c) for c in channels}


async def test_growing_rows_follow_the_partitions_loaded_and_released(env):
    """Delegators keep the rows of every partition and reads see the loaded ones (Milvus's dynamic partition
    load): a partition loaded later serves what was written to it before and after, one released stops at
    once.  Delegators used to keep only the partitions loaded when they started, so rows written to a
    partition loaded later were never seen before a flush."""
    catalog = env.cluster.coord.catalog
    coll = create_collection(catalog, "parts", dim=DIM, shards=2)
    p1 = (await env.cluster.coord.ddl.create_partition(coll.id, "p1")).partitionID
    default = next(p.partitionID for p in catalog.get_collection(coll.id).partitions if p.partitionID != p1)
    await env.coord.ok(
        "LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=coll.id, partitionIDs=[default])
    )
    await env.coord.wait_loaded(coll.id, 60)
    before = rows_for(list(range(100, 120)), DIM, seed=7)
    await env.local.insert("parts", rows_for(list(range(20)), DIM, seed=8))
    await env.remote.insert("parts", before, partition="p1")
    async with asyncio.timeout(READ_S):
        assert await env.remote.count("parts") == 20
        assert [h[0]["id"] for h in await env.remote.search("parts", before["vec"][:3], limit=1)] != [100, 101, 102]
    with pytest.raises(errors.PartitionNotLoaded):
        await env.remote.count("parts", partition_names=["p1"])

    await env.coord.ok("LoadPartitions", query_coord_pb2.LoadPartitionsRequest(collectionID=coll.id, partitionIDs=[p1]))
    await env.coord.wait_loaded(coll.id, 60)
    await env.local.insert("parts", rows_for(list(range(200, 210)), DIM, seed=9), partition="p1")
    async with asyncio.timeout(READ_S):
        assert await env.remote.count("parts", partition_names=["p1"]) == 30
        assert await env.remote.count("parts") == 50
        assert [h[0]["id"] for h in await env.remote.search("parts", before["vec"][:3], limit=1)] == [100, 101, 102]

    await env.coord.ok(
        "ReleasePartitions", query_coord_pb2.ReleasePartitionsRequest(collectionID=coll.id, partitionIDs=[p1])
    )
    async with asyncio.timeout(READ_S):
        assert await env.remote.count("parts") == 20
        hits = await env.local.search("parts", before["vec"][:3], limit=5)
        assert not {h["id"] for q in hits for h in q} & set(range(100, 210))
    await env.coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=coll.id))
