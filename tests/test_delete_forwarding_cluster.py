"""A lost delete through the whole cluster: a 3-worker LocalCluster, one channel whose sealed segments
are spread over the nodes, a delete written through the coordinator's WAL writer while one worker
refuses every DeleteBatch.  The channel's leader gives up and leaves the distribution; the
coordinator's channel checker watches the channel again; once the worker heals, the leader checker's
SyncDistribution Sets bring the delete to it, and the channel serves again — no read ever returns the
deleted key."""

from __future__ import annotations

import asyncio

import grpc
import numpy as np
import pyarrow as pa
import pytest

from vecgrid import errors
from vecgrid.cluster.querycoord.meta.target_manager import segment_refs
from vecgrid.cluster.querynode.session import local_node
from vecgrid.deploy import EmbeddedCluster
from vecgrid.gpu.results import from_search_result_data
from vecgrid.proto import query_coord_pb2
from vecgrid.storage.dml import DeleteBatch
from vecgrid.storage.wal import MessageKind
from tests.conftest import poll_until
from tests.querycoord_support import Coord
from tests.querynode_support import assert_same_knn, import_collection, reference_search, search_request
from tests.querycoord_support import fast_settings
from tests.querynode_support import RemoteNode

pytestmark = [pytest.mark.slow]

K = 10
#: the leaders' delete budget (shipped to every worker with the settings)
DELETE_BUDGET = {"querynode.delete_retry_deadline_s": 1.0, "querynode.delete_call_timeout_s": 0.5}


async def _refuse_delete_batch(req: query_coord_pb2.DeleteBatchRequest) -> query_coord_pb2.DeleteBatchResponse:
    raise errors.ServiceInternal("injected: this node refuses every DeleteBatch")


def _configure_node(refuse_deletes: bool, dask_worker=None) -> int:
    """``Client.run`` target: make the worker's node refuse (or apply again) every DeleteBatch.
    Returns the node id."""
    node = local_node(dask_worker)
    if refuse_deletes:
        node.delete_batch = _refuse_delete_batch
    else:
        node.__dict__.pop("delete_batch", None)
    return node.node_id


def _settled(qc, cid: int) -> bool:
    """One leader view per channel on the current target, holding every target segment where it is."""
    current = qc.targets.current(cid)
    if current is None or qc.scheduler.tasks(cid):
        return False
    wanted = segment_refs(current)
    views = qc.dist.leader_views(cid)
    if len(views) != len({r.channel for r in wanted.values()}):
        return False
    for _, view in views:
        mine = {sid for sid, ref in wanted.items() if ref.channel == view.channel}
        if view.TargetVersion != current.version or not mine <= set(view.segment_dist):
            return False
        if any(not qc.dist.holds(view.segment_dist[sid].nodeID, sid) for sid in mine):
            return False
    return True


async def _read(coord: Coord, ds, xq: np.ndarray, guarantee: int) -> tuple[np.ndarray, np.ndarray] | None:
    """A strong search of the channel on its shard leader; None when it is refused (no serviceable
    leader, the leader refusing, the leader gone)."""
    reply = await coord.call("GetShardLeaders", query_coord_pb2.GetShardLeadersRequest(collectionID=ds.collection_id))
    if reply.status.code or not reply.shards:
        return None
    (shard,) = reply.shards
    node = RemoteNode(shard.node_ids[0], shard.node_addrs[0])
    req = search_request(ds, xq, K, channels=[shard.channel_name], from_shard_leader=False, scope=query_coord_pb2.All)
    req.req.guarantee_timestamp = guarantee
    try:
        result = await node.call("Search", req)
    except grpc.aio.AioRpcError:
        return None
    if result.status.code:
        return None
    tk = from_search_result_data(result.sliced_blob)
    D = np.full((len(xq), K), np.nan, np.float32)
    keys = np.empty((len(xq), K), dtype=object)
    keys[:] = None
    for q in range(tk.nq):
        n = tk.offsets[q + 1] - tk.offsets[q]
        D[q, :n] = tk.scores[tk.offsets[q]:tk.offsets[q + 1]]
        keys[q, :n] = tk.ids[tk.offsets[q]:tk.offsets[q + 1]].tolist()
    return D, keys


async def test_a_node_refusing_deletes_makes_the_coordinator_watch_the_channel_again(tmp_path):
    ds = import_collection(tmp_path, "lost", metric="L2", index="FLAT", n=900, shards=1, segment_rows=100, seed=5)
    settings = fast_settings(ds.data_dir)
    for key, value in DELETE_BUDGET.items():
        settings.set(key, value)
    # deletes forwarded to segments off the leader: Milvus's balancer spreads rows over the nodes
    settings.set("querycoord.balancer", "ScoreBasedBalancer")
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    qc, client, cid = cluster.coord, cluster.coord.client, ds.collection_id
    coord = Coord(cluster.addresses.grpc, qc)
    try:
        await coord.load(cid)
        await poll_until(lambda: _settled(qc, cid), 60, 0.1, "the load settled")
        ((leader, view),) = qc.dist.leader_views(cid)
        (channel_version,) = [ch.version for _, ch in qc.dist.channels(cid)]
        sid, holder = next((s, d.nodeID) for s, d in sorted(view.segment_dist.items()) if d.nodeID != leader)
        row = int(ds.rows_of_segment(sid)[0])
        victim = int(ds.pks[row])
        xq = ds.vectors[[row]]

        await client.run(_configure_node, True, workers=[qc.nodes.get(holder).worker])
        (channel,) = ds.channels
        ts = qc.appenders.require(channel).append(lambda ts: [(MessageKind.DELETE, DeleteBatch(
            cid, -1, pa.array([victim], pa.int64()), np.array([ts], np.uint64)).encode())]).timestamp
        served = 0

        async def read_checked() -> bool:
            nonlocal served
            got = await _read(coord, ds, xq, ts)
            if got is not None:
                served += 1
                assert victim not in set(got[1].ravel().tolist()), f"deleted key {victim} returned"
            return got is not None

        # the leader gives up: the coordinator no longer sees it lead the channel (its view is gone, or the
        # channel checker already watched the channel again, on any node: the same one too, whose new
        # delegator then reports its view at once), and reads are refused
        def rewatched() -> bool:
            return [ch.version for _, ch in qc.dist.channels(cid)] not in ([], [channel_version])

        async def leader_gone() -> bool:
            await read_checked()
            return rewatched() or not any(n == leader for n, _ in qc.dist.leader_views(cid))
        await poll_until(leader_gone, 60, 0.05, "the leader to leave the distribution")
        assert not await read_checked()
        # the channel checker watches it again (on some node): a new channel version, but no serviceable
        # leader while the holder still refuses (catch-up of its segment fails)
        await poll_until(rewatched, 60, 0.05, "the channel watched again")
        for _ in range(5):
            assert not await read_checked()

        await client.run(_configure_node, False, workers=[qc.nodes.get(holder).worker])
        await poll_until(lambda: _settled(qc, cid), 60, 0.1, "the channel served again")
        await poll_until(read_checked, 60, 0.1, "a read served again")
        mask = np.ones(len(ds.pks), bool)
        mask[row] = False
        D, keys = await _read(coord, ds, ds.vectors[:20], ts)
        assert_same_knn(*reference_search(ds, ds.vectors[:20], K, mask), D, keys)
        assert served >= 1
    finally:
        await asyncio.wait_for(cluster.stop(), 180)
