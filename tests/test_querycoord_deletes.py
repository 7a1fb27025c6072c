"""Deletes carried by L0 segments reach every sealed segment of their channel, wherever the QueryCoord
loads it: a 3-worker LocalCluster, 12 bulk-imported segments over 2 channels (so that most sealed
segments are NOT on their channel's shard leader), deletes appended to the channels' WALs through the
coordinator's writer and flushed into L0 segments (before and after the load), then searches, counts and
pk queries through every shard leader checked against numpy over the rows minus the deleted keys: with
one replica, with two, after a TransferSegment, after a flush while loaded, and after nodes are killed.

Milvus 2.4 loads a channel's L0 segments on the delegator, which applies their deletes to every sealed
segment of the channel on any worker (``loadStreamDelete`` with ``GetLevel0Deletions``)."""

from __future__ import annotations

import asyncio
import os
import signal

import grpc
import numpy as np
import pyarrow as pa
import pytest
import pytest_asyncio

from vecgrid import errors
from vecgrid.cluster.querycoord.meta.target_manager import segment_refs
from vecgrid.deploy import EmbeddedCluster
from vecgrid.gpu import exprs
from vecgrid.gpu.results import from_search_result_data
from vecgrid.proto import data_coord_pb2, query_coord_pb2, schema_pb2
from vecgrid.storage.dml import DeleteBatch
from vecgrid.cluster.datanode.flush import flush_channel
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import MessageKind
from tests.conftest import poll_until
from tests.querycoord_support import Coord, fast_settings
from tests.querynode_support import (RemoteNode, assert_same_knn, import_collection, query_request, reference_search,
                                     search_request)

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

K = 10
CHANNEL_NOT_FOUND = errors.ChannelNotFound.code


class LeaderMoved(Exception):
    """A leader unwatched its channel (or died) while the test read through it: the balancer moved it."""


async def _leader_call(node: RemoteNode, method: str, request):
    try:
        reply = await node.call(method, request)
    except grpc.aio.AioRpcError as e:
        if e.code() == grpc.StatusCode.UNAVAILABLE:
            raise LeaderMoved(f"node {node.node_id}: {e.details()}") from e
        raise
    if reply.status.code == CHANNEL_NOT_FOUND:
        raise LeaderMoved(f"node {node.node_id}: {reply.status.reason}")
    assert reply.status.code == 0, reply.status
    return reply


class Env:
    def __init__(self, cluster: EmbeddedCluster, ds) -> None:
        self.cluster, self.ds = cluster, ds
        self.coord = Coord(cluster.addresses.grpc, cluster.coord)
        self.deleted_rows: list[int] = []           # input rows whose keys are deleted so far
        self.l0_ids: set[int] = set()
        self.channel_rows = {ch: np.concatenate([ds.rows_of_segment(s) for s in ds.segments_of(ch)])
                             for ch in ds.channels}

    @property
    def qc(self):
        return self.cluster.coord

    @property
    def cid(self) -> int:
        return self.ds.collection_id

    def alive(self) -> np.ndarray:
        mask = np.ones(len(self.ds.pks), bool)
        mask[self.deleted_rows] = False
        return mask

    async def delete_and_flush(self, per_segment: int, offset: int) -> list[int]:
        """Delete ``per_segment`` rows of every sealed segment (one DeleteBatch per channel, written through
        the coordinator's writer of the channel), flush each channel; returns the new L0 segment ids."""
        ds, qc = self.ds, self.qc
        new_l0 = []
        for ch in ds.channels:
            rows = np.concatenate([ds.rows_of_segment(s)[offset:offset + per_segment] for s in ds.segments_of(ch)])
            qc.appenders.require(ch).append(lambda ts: [(MessageKind.DELETE, DeleteBatch(
                self.cid, -1, pa.array(ds.pks[rows].tolist(), pa.int64()), np.full(len(rows), ts, np.uint64)).encode())])
            up_to = qc.catalog.allocate_timestamp()
            root = DataDir(ds.data_dir).segment_root
            result = await asyncio.to_thread(flush_channel, qc.catalog, qc.ticker.wal, root, ch, up_to)
            l0 = [s.ID for s in result.segments if s.level == data_coord_pb2.L0]
            assert len(l0) == 1 and all(s.level == data_coord_pb2.L0 for s in result.segments), result.segments
            new_l0 += l0
            self.deleted_rows += rows.tolist()
        self.l0_ids |= set(new_l0)
        return new_l0

    # --- the state of the cluster ---------------------------------------------------------------

    def views(self) -> list[tuple[int, query_coord_pb2.LeaderView]]:
        return self.qc.dist.leader_views(self.cid)

    def settled(self, replicas: int) -> bool:
        """Every segment of the current target (L0 ones on the leader) in one leader view per channel and
        replica, every view on the current target version, no task pending."""
        current = self.qc.targets.current(self.cid)
        if current is None or self.qc.scheduler.tasks(self.cid):
            return False
        wanted = segment_refs(current)
        if not self.l0_ids <= set(wanted):
            return False
        views = self.views()
        alive = {n.node_id for n in self.qc.nodes.all()}
        if len(views) != replicas * len(self.ds.channels):
            return False
        for leader, view in views:
            if view.TargetVersion != current.version or leader not in alive:
                return False
            mine = {sid for sid, ref in wanted.items() if ref.channel == view.channel}
            if not mine <= set(view.segment_dist):
                return False
            where = {sid: view.segment_dist[sid].nodeID for sid in mine}
            if any(n not in alive or not self.qc.dist.holds(n, sid) for sid, n in where.items()):
                return False   # routed to a dead node, or to one that does not hold it (yet)
            if any(n != leader for sid, n in where.items() if wanted[sid].level == data_coord_pb2.L0):
                return False   # an L0 segment not on its leader: the view is not serviceable
        return True

    def assert_spread(self) -> None:
        """L0 segments on their channel's leader; sealed segments of a channel also on other nodes."""
        elsewhere = 0
        for leader, view in self.views():
            for sid, dist in view.segment_dist.items():
                if sid in self.l0_ids:
                    assert dist.nodeID == leader, f"L0 segment {sid} on node {dist.nodeID}, leader {leader}"
                elif dist.nodeID != leader:
                    elsewhere += 1
            assert any(sid in self.l0_ids for sid in view.segment_dist), f"no L0 segment in the view of {leader}"
        assert elsewhere > 0, "every sealed segment is on its leader: the test would prove nothing"

    # --- reads through every shard leader -------------------------------------------------------

    async def assert_deletes_applied(self) -> None:
        """The check below, again (as a client would) when the balancer moved a leader during it."""
        for attempt in range(3):
            try:
                return await self._assert_deletes_applied_once()
            except LeaderMoved:
                if attempt == 2:
                    raise
                replicas = len(self.qc.replicas.of_collection(self.cid))
                await poll_until(lambda: self.settled(replicas), 60, 0.1, "the moved leader serving")

    async def _assert_deletes_applied_once(self) -> None:
        ds = self.ds
        alive = self.alive()
        deleted = set(ds.pks[self.deleted_rows].tolist())
        rng = np.random.default_rng(len(self.deleted_rows))
        # the deleted rows' own vectors (each its own nearest neighbour unless deleted) + random queries
        picks = rng.choice(self.deleted_rows, 6, replace=False)
        xq = np.concatenate([ds.vectors[picks], rng.standard_normal((3, ds.vectors.shape[1]))]).astype(np.float32)
        D_ref, K_ref = reference_search(ds, xq, K, mask=alive)
        shards = await self.coord.leaders(self.cid)
        replicas = {len(s.node_ids) for s in shards}
        assert len(replicas) == 1
        guarantee = self.qc.catalog.allocate_timestamp()      # strong: every delete written so far
        for r in range(replicas.pop()):
            hits: list[list[tuple[float, object]]] = [[] for _ in range(len(xq))]
            for shard in shards:
                node = RemoteNode(shard.node_ids[r], shard.node_addrs[r])
                req = search_request(ds, xq, K, channels=[shard.channel_name], from_shard_leader=False,
                                     scope=query_coord_pb2.All)
                req.req.guarantee_timestamp = guarantee
                reply = await _leader_call(node, "Search", req)
                tk = from_search_result_data(reply.sliced_blob)
                for q in range(tk.nq):
                    for j in range(tk.offsets[q], tk.offsets[q + 1]):
                        hits[q].append((float(tk.scores[j]), tk.ids[j].item()))

                rows = self.channel_rows[shard.channel_name]
                expected = sorted(ds.pks[rows[alive[rows]]].tolist())
                count_req = query_request(ds, is_count=True, from_shard_leader=False, channels=[shard.channel_name])
                count_req.req.guarantee_timestamp = guarantee
                count = await _leader_call(node, "Query", count_req)
                got_count = count.fields_data[0].scalars.long_data.data[0]
                pk_col = exprs.column(ds.fid(ds.pk_name), schema_pb2.Int64, is_primary_key=True)
                pk_req = query_request(ds, expr=exprs.compare(pk_col, ">=", 0), from_shard_leader=False,
                                       channels=[shard.channel_name])
                pk_req.req.guarantee_timestamp = guarantee
                got = await _leader_call(node, "Query", pk_req)
                got_pks = sorted(got.ids.int_id.data)
                where = f"replica {r}, channel {shard.channel_name}, leader {shard.node_ids[r]}"
                assert not deleted & set(got_pks), f"{where}: deleted keys returned: {sorted(deleted & set(got_pks))}"
                assert got_pks == expected, where
                assert got_count == len(expected), f"{where}: count {got_count}, expected {len(expected)}"
            D = np.full((len(xq), K), np.nan, dtype=np.float32)
            keys = np.empty((len(xq), K), dtype=object)
            keys[:] = None
            for q, row in enumerate(hits):
                row.sort(key=lambda h: h[0])       # L2: smaller is better
                for j, (score, key) in enumerate(row[:K]):
                    D[q, j], keys[q, j] = score, key
            found = {k for row in keys for k in row if k is not None}
            assert not deleted & found, f"replica {r}: deleted keys found by search: {sorted(deleted & found)}"
            assert_same_knn(D_ref, K_ref, D, keys)

    async def load(self, replicas: int = 1) -> None:
        await self.coord.load(self.cid, replica_number=replicas)
        await poll_until(lambda: self.settled(replicas), 60, 0.1, "load settled")

    async def release(self) -> None:
        await self.coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=self.cid))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("deletes")
    ds = import_collection(root, "dels", metric="L2", index="FLAT", n=1200, shards=2, segment_rows=100, seed=11)
    settings = fast_settings(ds.data_dir)
    settings.set("querycoord.next_target_interval_s", 1.0)
    # deletes must reach segments off their channel's leader: Milvus's balancer spreads rows over the nodes
    settings.set("querycoord.balancer", "ScoreBasedBalancer")
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    env = Env(cluster, ds)
    await env.delete_and_flush(per_segment=4, offset=0)   # L0 segments before any load
    yield env
    # generous: once (in CI, on a loaded 2-core machine) closing the workers after the node-kill test
    # took over 60 s
    await asyncio.wait_for(cluster.stop(), 180)


async def _kill_worker(cluster: EmbeddedCluster, node_id: int) -> None:
    """SIGKILL the node's worker process through its nanny (no RPC to the workers, see test_querycoord_nodes)."""
    info = cluster.coord.nodes.get(node_id)
    nanny = next(w for w in cluster.cluster.workers.values() if w.worker_address == info.worker)
    os.kill(nanny.process.pid, signal.SIGKILL)


async def test_l0_written_before_the_load_reaches_segments_on_every_node(env):
    await env.load()
    env.assert_spread()
    await env.assert_deletes_applied()
    await env.release()


async def test_l0_deletes_with_two_replicas(env):
    await env.load(replicas=2)
    env.assert_spread()
    await env.assert_deletes_applied()
    await env.release()


async def test_l0_written_while_loaded_then_segment_transferred(env):
    qc = env.qc
    await env.load()
    version = qc.targets.current(env.cid).version
    await env.delete_and_flush(per_segment=3, offset=10)
    await poll_until(lambda: qc.targets.current(env.cid).version != version and env.settled(1), 60, 0.1,
                     "the new L0 segments current and served")
    env.assert_spread()
    await env.assert_deletes_applied()

    # move a sealed segment to a node that does not lead its channel: it is loaded there by a Dask task
    # and joins the leader's view by a SyncDistribution Set
    await env.coord.ok("SuspendBalance", query_coord_pb2.SuspendBalanceRequest())
    try:
        nodes = [n.node_id for n in qc.nodes.all()]
        leader, view = env.views()[0]
        sid, holder = next((s, d.nodeID) for s, d in sorted(view.segment_dist.items()) if s not in env.l0_ids)
        target = next(n for n in nodes if n not in (leader, holder))
        await env.coord.ok(
            "TransferSegment",
            query_coord_pb2.TransferSegmentRequest(source_nodeID=holder, target_nodeID=target, segmentID=sid),
        )

        def moved() -> bool:
            v = dict(env.views()).get(leader)
            return v is not None and sid in v.segment_dist and v.segment_dist[sid].nodeID == target \
                and not qc.scheduler.tasks(env.cid)
        await poll_until(moved, 30, 0.1, f"segment {sid} moved to node {target}")
        await env.assert_deletes_applied()
    finally:
        await env.coord.ok("ResumeBalance", query_coord_pb2.ResumeBalanceRequest())
    await env.release()


async def test_killed_nodes_segments_reload_with_the_l0_deletes(env):
    """A node that leads no channel but holds sealed segments is killed, then the leader of a channel;
    their segments (and the channel) are served elsewhere, then the restarted workers get their share
    back by balance: the L0 deletes reach the segments in every step."""
    qc = env.qc
    await env.load()
    await env.assert_deletes_applied()
    leaders = {leader for leader, _ in env.views()}
    holders = {d.nodeID for _, v in env.views() for d in v.segment_dist.values()}
    victims = [n for n in sorted(holders) if n not in leaders][:1] + [env.views()[0][0]]
    for victim in victims:
        old_address = qc.nodes.get(victim).address
        await _kill_worker(env.cluster, victim)
        await poll_until(lambda: (n := qc.nodes.get(victim)) is None or n.address != old_address, 30, 0.05,
                         f"node {victim} to leave")
        await poll_until(lambda: env.settled(1), 60, 0.1, f"node {victim}'s channels and segments served again")
        await env.assert_deletes_applied()
    # the nanny restarts the killed workers (same node ids); the balancer gives them segments again
    await poll_until(lambda: len(qc.nodes) == 3 and len({n for n, _ in qc.dist.segments(env.cid)}) == 3
                     and env.settled(1), 60, 0.2, "segments balanced onto the restarted nodes")
    env.assert_spread()
    await env.assert_deletes_applied()
    await env.release()
