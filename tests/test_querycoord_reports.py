"""ShowCollections / ShowPartitions reports from the coordinator's meta, without a cluster."""

from __future__ import annotations

from typing import Callable

import pytest

from vecgrid import errors
from vecgrid.cluster.querycoord import reports
from vecgrid.cluster.querycoord.context import CheckerContext
from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.failed_load_cache import FailedLoadCache
from vecgrid.cluster.querycoord.meta.replica_manager import ReplicaManager
from vecgrid.cluster.querycoord.meta.target_manager import TargetManager
from vecgrid.cluster.querycoord.session.node_manager import NodeInfo, NodeManager
from vecgrid.proto import query_coord_pb2


def _loaded_collection(store, current_version: int,
                       channels: tuple[query_coord_pb2.ChannelTarget, ...] = ()) -> CheckerContext:
    """Collection 1, partitions 10 and 11 fully loaded, its current target at ``current_version``."""
    store.put(
        "querycoord-target/1",
        query_coord_pb2.CollectionTarget(collectionID=1, version=current_version,
                                         Channel_targets=channels).SerializeToString(),
    )
    cm = CollectionManager(store)
    cm.put(
        query_coord_pb2.CollectionLoadInfo(collectionID=1, replica_number=1, status=query_coord_pb2.Loaded),
        [
            query_coord_pb2.PartitionLoadInfo(collectionID=1, partitionID=p, status=query_coord_pb2.Loaded)
            for p in (10, 11)
        ],
    )
    for pid in (10, 11):
        cm.set_progress(1, pid, 100)
    targets = TargetManager(store, catalog=None)
    assert targets.current(1).version == current_version
    return CheckerContext(NodeManager(), cm, ReplicaManager(store), targets, DistributionManager(), None, None, None)


def test_a_refresh_in_flight_shows_in_collections_and_partitions_alike(store):
    """Milvus answers refresh_progress from the collection's refresh state in both reports; a fully
    loaded partition of a collection whose refresh waits for target version 7 is not refreshed."""
    ctx = _loaded_collection(store, current_version=5)
    refreshing = {1: 7}
    [coll] = reports.show_collections(ctx, [1], refreshing, FailedLoadCache())
    assert (coll.percentage, coll.refresh_progress) == (100, 0)
    parts = reports.show_partitions(ctx, 1, [], refreshing, FailedLoadCache())
    assert [(p.partition_id, p.percentage, p.refresh_progress) for p in parts] == [(10, 100, 0), (11, 100, 0)]


def test_refresh_progress_is_100_once_the_target_reaches_the_refresh(store):
    ctx = _loaded_collection(store, current_version=7)
    for refreshing in ({1: 7}, {}):
        [coll] = reports.show_collections(ctx, [1], refreshing, FailedLoadCache())
        assert coll.refresh_progress == 100
        parts = reports.show_partitions(ctx, 1, [11], refreshing, FailedLoadCache())
        assert [(p.partition_id, p.refresh_progress) for p in parts] == [(11, 100)]


def _moving_channel(store) -> tuple[CheckerContext, Callable[[int, int, bool], None]]:
    """Channel ``ch`` of collection 1 (segment 7 in its current target 5) served by node 1 at channel
    version 1; node 2 has just watched it at version 2 (as in the middle of a TransferChannel).
    Returns the context and ``view(node, version, synced)`` to report a node's distribution."""
    segment = query_coord_pb2.SegmentTarget(ID=7, num_of_rows=100)
    ctx = _loaded_collection(store, current_version=5, channels=(query_coord_pb2.ChannelTarget(
        channelName="ch", partition_targets=[query_coord_pb2.PartitionTarget(partitionID=10, segments=[segment])]),))
    for node_id in (1, 2):
        ctx.nodes.add(NodeInfo(node_id, f"w{node_id}", f"127.0.0.1:{1000 + node_id}", f"tcp://w{node_id}"))
    ctx.replicas.spawn(1, {"rg": 1}, lambda: 100, lambda rg: [1, 2])

    def view(node_id: int, version: int, synced: bool) -> None:
        leader_view = query_coord_pb2.LeaderView(collection=1, channel="ch", TargetVersion=5 if synced else 0)
        if synced:
            leader_view.segment_dist[7].CopyFrom(query_coord_pb2.SegmentDist(nodeID=1, version=1))
        ctx.dist.update(node_id, query_coord_pb2.GetDataDistributionResponse(
            nodeID=node_id, lastModifyTs=version, leader_views=[leader_view],
            channels=[query_coord_pb2.ChannelVersionInfo(channel="ch", collection=1, version=version)]))
    view(1, 1, synced=True)
    return ctx, view


def test_a_moving_channel_is_served_by_its_old_leader_until_the_new_one_can_serve(store):
    """Milvus's GetShardLeader: a serviceable leader wins over a newer one that is not.  Before, the
    newest watcher was the only candidate, so GetShardLeaders failed with 503 while the new leader
    waited for its copy of the old one's view (seen in CI during TransferChannel)."""
    ctx, view = _moving_channel(store)
    view(2, 2, synced=False)
    [shard] = reports.shard_leaders(ctx, 1)
    assert (shard.channel_name, list(shard.node_ids), list(shard.node_addrs)) == ("ch", [1], ["127.0.0.1:1001"])
    [replica] = reports.replicas(ctx, 1, False, lambda n: "rg")
    assert [s.leaderID for s in replica.shard_replicas] == [1]

    view(2, 2, synced=True)              # the new leader has the view: the newest serviceable one wins
    [shard] = reports.shard_leaders(ctx, 1)
    assert list(shard.node_ids) == [2]
    [replica] = reports.replicas(ctx, 1, False, lambda n: "rg")
    assert [s.leaderID for s in replica.shard_replicas] == [2]


def test_no_serviceable_leader_is_503(store):
    ctx, view = _moving_channel(store)
    view(1, 1, synced=False)
    view(2, 2, synced=False)
    with pytest.raises(errors.ChannelNotAvailable):
        reports.shard_leaders(ctx, 1)
