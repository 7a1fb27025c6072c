"""The client-side proxy (vecgrid.cluster.proxy) end to end: a LocalCluster of two QueryNode worker processes,
bulk-imported collections of two shards loaded by the coordinator (one with two replicas), searches and
queries through the shard leaders checked against numpy; a small fake QueryCoord in front of the real one
injects dead leaders to check the retry on the next replica and the one re-fetch of the shard leaders."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from dataclasses import dataclass

import grpc
import numpy as np
import pyarrow as pa
import pytest
import pytest_asyncio

from vecgrid import errors
from vecgrid.cluster.proxy.lb_policy import LeaderRouter
from vecgrid.cluster.proxy.proxy import Proxy, guarantee_timestamp
from vecgrid.deploy import EmbeddedCluster
from vecgrid.gpu import exprs
from vecgrid.proto import common_pb2, query_coord_pb2, query_coord_pb2_grpc, schema_pb2
from vecgrid.storage.dml import DeleteBatch, InsertBatch
from vecgrid.storage.wal import MessageKind
from tests.proxy_support import dense_hits, refused_address
from tests.querycoord_support import Coord, fast_settings, left_as_found
from tests.querynode_support import DIM, Dataset, assert_same_knn, import_collection, reference_search

pytestmark = pytest.mark.asyncio(loop_scope="module")

K = 10
GROWING_SEGMENT = 990_777


@dataclass
class Env:
    cluster: EmbeddedCluster
    coord: Coord
    proxy: Proxy
    sets: dict[str, Dataset]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("proxy")
    sets = {
        "l2": import_collection(root, "l2", metric="L2", index="FLAT", n=1200, shards=2, segment_rows=200, seed=5),
        "ip": import_collection(root, "ip", metric="IP", index="FLAT", n=800, shards=2, segment_rows=200, seed=6),
        "cos": import_collection(root, "cos", metric="COSINE", index="FLAT", n=800, shards=2, segment_rows=200,
                                 seed=7),
        "fresh": import_collection(root, "fresh", metric="L2", index="FLAT", n=300, shards=2, segment_rows=100,
                                   seed=8),
        "idle": import_collection(root, "idle", metric="L2", index="FLAT", n=100, shards=1, segment_rows=100,
                                  seed=9),
    }
    cluster = EmbeddedCluster(fast_settings(sets["l2"].data_dir, workers=2))
    await asyncio.wait_for(cluster.start(), 120)
    coord = Coord(cluster.addresses.grpc, cluster.coord)
    await coord.load(sets["l2"].collection_id, replica_number=2)
    for name in ("ip", "cos", "fresh"):
        await coord.load(sets[name].collection_id)
    proxy = Proxy(cluster.addresses.grpc)  # another process's view: the catalog over CatalogService
    yield Env(cluster, coord, proxy, sets)
    await proxy.close()
    await asyncio.wait_for(cluster.stop(), 60)


@pytest_asyncio.fixture(loop_scope="module")
async def env(cluster_env):
    """The module's cluster, given back to the next test as this one found it."""
    async with left_as_found(cluster_env.coord, cluster_env.cluster.coord):
        yield cluster_env


@pytest.fixture(autouse=True)
def leaders_cached_for_the_test(monkeypatch):
    """The tests count GetShardLeaders calls: no refresh by age within a test (one test sets its own)."""
    from vecgrid.cluster.proxy import lb_policy

    monkeypatch.setattr(lb_policy, "LEADER_CACHE_TTL_S", 3600.0, raising=False)


def queries(n: int = 6, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def row_of(ds: Dataset) -> dict:
    return {k: i for i, k in enumerate(ds.pks.tolist())}


class RecordingRouter(LeaderRouter):
    """Leader routing that notes the node address of every Search / Query it sends."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.sent: list[str] = []

    def node(self, address):
        self.sent.append(address)
        return super().node(address)


class RecordingProxy(Proxy):
    router_class = RecordingRouter

    @property
    def sent(self) -> list[str]:
        return self.router.sent


class FakeCoord(query_coord_pb2_grpc.QueryCoordServicer):
    """GetShardLeaders of the real coordinator, rewritten per call by ``rewrite(reply, call_number)``."""

    def __init__(self, real_address: str, rewrite) -> None:
        self.channel = grpc.aio.insecure_channel(real_address)
        self.real = query_coord_pb2_grpc.QueryCoordStub(self.channel)
        self.rewrite = rewrite
        self.calls = 0

    async def GetShardLeaders(self, request, context):
        self.calls += 1
        reply = await self.real.GetShardLeaders(request, timeout=30)
        return self.rewrite(reply, self.calls)


async def serve_fake(fake: FakeCoord) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server()
    query_coord_pb2_grpc.add_QueryCoordServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


DEAD_NODE = 999_999


def with_dead_leader_first(
    reply: query_coord_pb2.GetShardLeadersResponse, dead: str
) -> query_coord_pb2.GetShardLeadersResponse:
    out = query_coord_pb2.GetShardLeadersResponse(status=reply.status)
    for s in reply.shards:
        out.shards.add(channel_name=s.channel_name, node_ids=[DEAD_NODE, *s.node_ids],
                       node_addrs=[dead, *s.node_addrs])
    return out


def only_dead_leaders(
    reply: query_coord_pb2.GetShardLeadersResponse, dead: str
) -> query_coord_pb2.GetShardLeadersResponse:
    out = query_coord_pb2.GetShardLeadersResponse(status=reply.status)
    for s in reply.shards:
        out.shards.add(channel_name=s.channel_name, node_ids=[DEAD_NODE], node_addrs=[dead])
    return out


# --- search ------------------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", ["l2", "ip", "cos"])
async def test_search_equals_numpy(env, name):
    ds = env.sets[name]
    xq = queries()
    hits = await env.proxy.search(name, xq, limit=K)
    assert len(hits) == len(xq) and all(len(h) == K for h in hits)
    assert_same_knn(*reference_search(ds, xq, K), *dense_hits(hits))
    for row in hits:  # best first in the metric's direction
        d = [h["distance"] for h in row]
        assert d == sorted(d, reverse=name != "l2")


@pytest.mark.slow
async def test_search_merges_both_channels(env):
    ds = env.sets["l2"]
    shards = await env.proxy.shard_leaders(ds.collection_id)
    assert sorted(s.channel for s in shards) == sorted(ds.channels)
    channel_of = {}
    for ch in ds.channels:
        for sid in ds.segments_of(ch):
            for r in ds.rows_of_segment(sid):
                channel_of[int(ds.pks[r])] = ch
    xq = queries(20, seed=4)
    hits = await env.proxy.search("l2", xq, limit=K)
    assert {channel_of[h["id"]] for row in hits for h in row} == set(ds.channels)
    assert_same_knn(*reference_search(ds, xq, K), *dense_hits(hits))


@pytest.mark.slow
async def test_search_with_filter_and_output_fields(env):
    ds = env.sets["cos"]
    xq = queries(5, seed=2)
    query = {"age": {"$lt": 40}, "$or": [{"tag": "red"}, {"tag": {"$in": ["blue", "gold"]}}], "score": {"$ne": 2}}
    mask = (ds.columns["age"] < 40) & np.isin(ds.columns["tag"], ["red", "blue", "gold"])
    hits = await env.proxy.search("cos", xq, limit=K, filter=query, output_fields=["age", "tag", "score", "vec"])
    assert_same_knn(*reference_search(ds, xq, K, mask), *dense_hits(hits))
    rows = row_of(ds)
    for row in hits:
        for hit in row:
            r = rows[hit["id"]]
            assert set(hit["entity"]) == {"age", "tag", "score", "vec"}
            assert hit["entity"]["age"] == int(ds.columns["age"][r]) and hit["entity"]["tag"] == ds.columns["tag"][r]
            assert hit["entity"]["score"] == pytest.approx(float(ds.columns["score"][r]))
            np.testing.assert_allclose(hit["entity"]["vec"], ds.vectors[r], rtol=1e-6)
            assert isinstance(hit["entity"]["age"], int) and isinstance(hit["distance"], float)


@pytest.mark.slow
async def test_search_offset_and_plan_expr(env):
    ds = env.sets["ip"]
    xq = queries(4, seed=3)
    D, keys = reference_search(ds, xq, 8)
    hits = await env.proxy.search("ip", xq, limit=5, offset=3)
    assert_same_knn(D[:, 3:8], keys[:, 3:8], *dense_hits(hits, 5))
    expr = exprs.compare(exprs.column(ds.fid("age"), schema_pb2.Int32), ">=", 50)  # a ready plan.Expr works too
    hits = await env.proxy.search("ip", xq, limit=K, filter=expr)
    assert_same_knn(*reference_search(ds, xq, K, ds.columns["age"] >= 50), *dense_hits(hits))


@pytest.mark.slow
async def test_replicas_take_turns(env):
    ds = env.sets["l2"]
    proxy = RecordingProxy(env.cluster.addresses.grpc)
    try:
        shards = await proxy.shard_leaders(ds.collection_id)
        assert all(len(s.leaders) == 2 for s in shards) and len({a for s in shards for _, a in s.leaders}) == 2
        for seed in range(4):
            xq = queries(2, seed=seed)
            assert_same_knn(*reference_search(ds, xq, K), *dense_hits(await proxy.search("l2", xq, limit=K)))
        # two channels x four searches, alternating between the two replicas' leaders of each channel
        assert len(proxy.sent) == 8
        assert {a: proxy.sent.count(a) for a in set(proxy.sent)} == {a: 4 for _, a in shards[0].leaders}
    finally:
        await proxy.close()


# --- failures and retries -------------------------------------------------------------------------------------

@pytest.mark.slow
async def test_a_hung_leader_is_hedged_to_the_next_replica(env):
    """A leader that accepts the connection and never answers (a stopped process): the read went to the
    next replica only after the call's deadline (60 s), so a SIGSTOPped node failed reads that long."""
    ds = env.sets["l2"]
    with socket.socket() as hung:  # the kernel completes the handshake; nothing ever answers
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)
        hung_address = f"127.0.0.1:{hung.getsockname()[1]}"
        fake = FakeCoord(env.cluster.addresses.grpc, lambda reply, n: with_dead_leader_first(reply, hung_address))
        server, address = await serve_fake(fake)
        proxy = RecordingProxy(address, catalog=env.cluster.coord.catalog)
        try:
            xq = queries(3, seed=30)
            started = time.monotonic()
            hits = await proxy.search("l2", xq, limit=K)
            elapsed = time.monotonic() - started
            assert_same_knn(*reference_search(ds, xq, K), *dense_hits(hits))
            assert proxy.sent.count(hung_address) == 2  # each channel's turn began with it
            assert elapsed < proxy.timeout_s / 4, elapsed  # the other replica answered, not the deadline
        finally:
            await proxy.close()
            await server.stop(0)


class PausableRelay:
    """A TCP relay to one address that can stop passing bytes, as a SIGSTOPped process stops answering
    while the kernel keeps its connections open."""

    def __init__(self, target: str) -> None:
        self.host, port = target.rsplit(":", 1)
        self.port = int(port)
        self.passing = asyncio.Event()
        self.passing.set()
        self.tasks: set[asyncio.Task] = set()
        self.server: asyncio.Server | None = None
        self.address = ""

    async def start(self) -> "PausableRelay":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.address = f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.ensure_future(self._pipe(src, dst))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                await self.passing.wait()
                dst.write(data)
                await dst.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            dst.close()

    async def close(self) -> None:
        self.passing.set()
        self.server.close()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


@pytest.mark.slow
async def test_a_leader_list_fetched_while_a_replica_was_down_does_not_outlive_it(env, monkeypatch):
    """The proxy kept a GetShardLeaders answer until all its leaders failed: an answer fetched while one
    replica was down named one leader per channel for good, so when that leader hung (SIGSTOP) each read
    waited for the call's deadline instead of going to the replica that was back (9-20 s of failed reads
    in the fault suite).  Now the answer is asked again after LEADER_CACHE_TTL_S."""
    from vecgrid.cluster.proxy import lb_policy

    ds = env.sets["l2"]
    first = {s.channel: s.leaders[0][1] for s in await env.proxy.shard_leaders(ds.collection_id)}
    relays = {address: await PausableRelay(address).start() for address in set(first.values())}

    def rewrite(reply, n):
        out = query_coord_pb2.GetShardLeadersResponse(status=reply.status)
        for s in reply.shards:
            ids, addrs = list(s.node_ids), [relays[a].address if a in relays else a for a in s.node_addrs]
            # the first answer: one replica was down; the ones after it: both replicas serve
            out.shards.add(channel_name=s.channel_name, node_ids=ids[:1] if n == 1 else ids,
                           node_addrs=addrs[:1] if n == 1 else addrs)
        return out

    fake = FakeCoord(env.cluster.addresses.grpc, rewrite)
    server, address = await serve_fake(fake)
    proxy = Proxy(address, catalog=env.cluster.coord.catalog, timeout_s=8.0)
    try:
        xq = queries(3, seed=31)
        assert_same_knn(*reference_search(ds, xq, K), *dense_hits(await proxy.search("l2", xq, limit=K)))
        for relay in relays.values():
            relay.passing.clear()             # the one leader each channel knows of hangs
        monkeypatch.setattr(lb_policy, "LEADER_CACHE_TTL_S", 0.2, raising=False)
        time.sleep(0.3)
        started = time.monotonic()
        assert_same_knn(*reference_search(ds, xq, K), *dense_hits(await proxy.search("l2", xq, limit=K)))
        assert time.monotonic() - started < proxy.timeout_s / 4   # the other replica answered, not the deadline
        assert fake.calls >= 2
    finally:
        await proxy.close()
        await server.stop(0)
        for relay in relays.values():
            await relay.close()


@pytest.mark.slow
async def test_dead_leader_is_skipped_for_the_next_replica(env, caplog):
    ds = env.sets["l2"]
    dead = refused_address()
    fake = FakeCoord(env.cluster.addresses.grpc, lambda reply, n: with_dead_leader_first(reply, dead))
    server, address = await serve_fake(fake)
    proxy = RecordingProxy(address, catalog=env.cluster.coord.catalog)  # in-process catalog (the REST app's way)
    try:
        caplog.set_level(logging.WARNING, logger="vecgrid.cluster.proxy.lb_policy")
        for seed in range(3):
            xq = queries(3, seed=10 + seed)
            assert_same_knn(*reference_search(ds, xq, K), *dense_hits(await proxy.search("l2", xq, limit=K)))
        assert proxy.sent[:2] == [dead, dead]  # first turn of each channel: the dead leader, then the next
        assert proxy.sent.count(dead) == 2
        assert len(proxy.sent) == 2 * 3 + 2
        assert fake.calls == 1  # another replica answered: no need to ask QueryCoord again
        assert f"node {DEAD_NODE} ({dead})" in caplog.text and "trying the next replica" in caplog.text
        rows = await proxy.query("l2", filter={"age": 3}, limit=5)
        assert [r["pk"] for r in rows] == sorted(ds.pks[ds.columns["age"] == 3].tolist())[:5]
    finally:
        await proxy.close()
        await server.stop(0)
        await fake.channel.close()


@pytest.mark.slow
async def test_leaders_are_fetched_again_once_when_all_fail(env):
    ds = env.sets["ip"]
    dead = refused_address()
    fake = FakeCoord(env.cluster.addresses.grpc,
                     lambda reply, n: only_dead_leaders(reply, dead) if n == 1 else reply)
    server, address = await serve_fake(fake)
    proxy = Proxy(address, catalog=env.cluster.coord.catalog)
    try:
        xq = queries(3, seed=21)
        assert_same_knn(*reference_search(ds, xq, K), *dense_hits(await proxy.search("ip", xq, limit=K)))
        assert fake.calls == 2
        await proxy.search("ip", xq, limit=K)
        assert fake.calls == 2  # the fresh leaders are cached
    finally:
        await proxy.close()
        await server.stop(0)
        await fake.channel.close()


@pytest.mark.slow
async def test_every_leader_dead_fails_clearly(env):
    dead = refused_address()
    fake = FakeCoord(env.cluster.addresses.grpc, lambda reply, n: only_dead_leaders(reply, dead))
    server, address = await serve_fake(fake)
    proxy = Proxy(address, catalog=env.cluster.coord.catalog)
    try:
        with pytest.raises(errors.ServiceUnavailable) as info:
            await proxy.search("l2", queries(1), limit=3)
        text = str(info.value)
        assert "failed on every shard leader" in text and f"node {DEAD_NODE} ({dead})" in text
        assert fake.calls == 2  # the first answer, then one more try
        with pytest.raises(errors.ServiceUnavailable):
            await proxy.count("l2")
        assert fake.calls >= 3  # the failure dropped the cached leaders
    finally:
        await proxy.close()
        await server.stop(0)
        await fake.channel.close()


@pytest.mark.slow
async def test_request_errors_from_a_node_are_not_retried(env):
    ds = env.sets["l2"]
    proxy = RecordingProxy(env.cluster.addresses.grpc)
    try:
        bad = exprs.compare(exprs.column(4242, schema_pb2.Int64), "<", 3)  # a field no segment has
        with pytest.raises(errors.MilvusError) as info:
            await proxy.search("l2", queries(1), limit=3, filter=bad)
        assert info.value.code in (1100, 1700)
        assert len(proxy.sent) <= len(ds.channels)  # one leader per channel asked, no other replica
    finally:
        await proxy.close()


# --- query and count ----------------------------------------------------------------------------------------------

@pytest.mark.slow
async def test_query_with_filter_limit_and_offset(env):
    ds = env.sets["l2"]
    query = {"age": {"$lt": 20}, "tag": {"$ne": "red"}}
    mask = (ds.columns["age"] < 20) & (ds.columns["tag"] != "red")
    expected = sorted(ds.pks[mask].tolist())
    rows = await env.proxy.query("l2", filter=query, output_fields=["age", "tag", "score"], limit=7)
    assert [r["pk"] for r in rows] == expected[:7]
    at = row_of(ds)
    for r in rows:
        i = at[r["pk"]]
        assert set(r) == {"pk", "age", "tag", "score"}
        assert (r["age"], r["tag"]) == (int(ds.columns["age"][i]), ds.columns["tag"][i])
        assert r["score"] == pytest.approx(float(ds.columns["score"][i]))
    page = await env.proxy.query("l2", filter=query, limit=7, offset=5)
    assert [r["pk"] for r in page] == expected[5:12] and set(page[0]) == {"pk"}
    everything = await env.proxy.query("l2", filter=query)
    assert [r["pk"] for r in everything] == expected
    assert await env.proxy.query("l2", filter=query, limit=0) == []
    assert await env.proxy.count("l2", filter=query) == int(mask.sum())
    assert await env.proxy.count("l2") == len(ds.pks)
    assert await env.proxy.count("l2", filter={"tag": "red"}, partition_names=["_default"]) == \
        int((ds.columns["tag"] == "red").sum())


@pytest.mark.slow
async def test_strong_reads_see_a_row_written_just_before(env):
    """A row appended to the channel (as the write path will: the coordinator's writer, a timestamp of its
    oracle) is seen by the next Strong read; the coordinator's time ticks let the leaders' tsafe pass it."""
    ds = env.sets["fresh"]
    coord = env.cluster.coord
    partition = ds.summary["segments"][0]["partition_id"]
    vec = np.full((1, DIM), 50.0, dtype=np.float32)  # far from every imported row
    pk = int(ds.pks.max()) + 1000
    columns = pa.record_batch({"vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), DIM),
                               "age": pa.array(np.asarray([7], np.int32)), "tag": pa.array(["new"]),
                               "score": pa.array([0.5])})
    ts = coord.appenders.require(ds.channels[0]).append(lambda ts: [(MessageKind.INSERT, InsertBatch(
        ds.collection_id, partition, GROWING_SEGMENT, pa.array([pk], pa.int64()), np.full(1, ts, np.uint64),
        columns).encode())]).timestamp
    hits = await env.proxy.search("fresh", vec, limit=1, output_fields=["tag"])  # Strong by default
    assert hits[0][0]["id"] == pk and hits[0][0]["distance"] == pytest.approx(0.0)
    assert hits[0][0]["entity"] == {"tag": "new"}
    # range and grouping searches (rounds over one snapshot) at Bounded read what a plain one does: the
    # leaders' snapshot, not the guarantee timestamp 5 s back, before the row was written
    ranged = await env.proxy.search("fresh", vec, limit=1, consistency="Bounded", search_params={"radius": 1.0})
    assert [h["id"] for h in ranged[0]] == [pk]
    grouped = await env.proxy.search("fresh", vec, limit=1, consistency="Bounded", group_by="tag")
    assert [h["id"] for h in grouped[0]] == [pk]
    assert await env.proxy.count("fresh") == len(ds.pks) + 1
    assert [r["pk"] for r in await env.proxy.query("fresh", filter={"tag": "new"})] == [pk]
    assert await env.proxy.catalog.timestamp() > ts  # the coordinator's oracle, over CatalogService
    # an explicit guarantee timestamp is used as given; other levels wait less or not at all
    assert await env.proxy.count("fresh", guarantee_timestamp=ts) == len(ds.pks) + 1
    assert await env.proxy.count("fresh", consistency="Eventually") in (len(ds.pks), len(ds.pks) + 1)
    assert await env.proxy.count("fresh", consistency=None) in (len(ds.pks), len(ds.pks) + 1)  # Bounded
    # deleted again: the collection holds what the other tests expect
    coord.appenders.require(ds.channels[0]).append(lambda ts: [(MessageKind.DELETE, DeleteBatch(
        ds.collection_id, -1, pa.array([pk], pa.int64()), np.full(1, ts, np.uint64)).encode())])
    assert await env.proxy.count("fresh") == len(ds.pks)
    assert await env.proxy.query("fresh", filter={"tag": "new"}) == []


# --- errors ---------------------------------------------------------------------------------------------------------

@pytest.mark.slow
async def test_errors_are_milvus_errors_with_clear_reasons(env):
    proxy = env.proxy
    xq = queries(1)
    with pytest.raises(errors.CollectionNotFound):
        await proxy.search("nope", xq)
    with pytest.raises(errors.CollectionNotLoaded):
        await proxy.search("idle", xq)
    cases = [
        (dict(limit=0), errors.ParameterInvalid, "limit (0) + offset (0) should be in range"),
        (dict(limit=20000), errors.ParameterInvalid, "should be in range [1, 16384]"),
        (dict(output_fields=["nope"]), errors.ParameterInvalid, "has no field 'nope'"),
        (dict(filter={"age": "x"}), errors.ParameterInvalid, "type mismatch: field 'age' is Int32"),
        (dict(filter={"vec": 1}), errors.ParameterInvalid, "vector field"),
        (dict(partition_names=["p9"]), errors.PartitionNotFound, "p9"),
        (dict(anns_field="age"), errors.ParameterInvalid, "'age' is not a vector field"),
        (dict(search_params={"metric_type": "IP"}), errors.ParameterInvalid, "does not match the index"),
        (dict(consistency="Sometimes"), errors.ParameterInvalid, "unknown consistency level 'Sometimes'"),
        (dict(consistency="Customized"), errors.ParameterInvalid, "Customized is not supported"),
    ]
    for kw, cls, text in cases:
        with pytest.raises(cls) as info:
            await proxy.search("l2", xq, **kw)
        assert text in str(info.value), (kw, str(info.value))
    with pytest.raises(errors.ParameterInvalid, match="dimension 3, field 'vec' has dimension 16"):
        await proxy.search("l2", np.zeros((2, 3), np.float32))
    with pytest.raises(errors.ParameterInvalid, match="must not be negative"):
        await proxy.query("l2", limit=-1)
    unreachable = Proxy(refused_address())
    try:
        with pytest.raises(errors.ServiceUnavailable, match="DescribeCollection at the coordinator"):
            await unreachable.search("l2", xq)
    finally:
        await unreachable.close()


async def test_guarantee_timestamps_follow_the_consistency_level():
    now = 1_000_000 << 18
    assert guarantee_timestamp("Strong", now) == now == guarantee_timestamp(common_pb2.Strong, now)
    assert guarantee_timestamp("bounded", now) == now - (5000 << 18)
    assert guarantee_timestamp("Eventually", now) == 0
    with pytest.raises(errors.ParameterInvalid, match="Customized is not supported"):
        guarantee_timestamp("Customized", now)
