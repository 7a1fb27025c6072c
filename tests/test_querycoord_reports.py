"""ShowCollections / ShowPartitions reports from the coordinator's meta, without a cluster."""

from __future__ import annotations

from vecgrid.cluster.querycoord import reports
from vecgrid.cluster.querycoord.context import CheckerContext
from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.failed_load_cache import FailedLoadCache
from vecgrid.cluster.querycoord.meta.replica_manager import ReplicaManager
from vecgrid.cluster.querycoord.meta.target_manager import TargetManager
from vecgrid.cluster.querycoord.session.node_manager import NodeManager
from vecgrid.proto import query_coord_pb2


def _loaded_collection(store, current_version: int) -> CheckerContext:
    """Collection 1, partitions 10 and 11 fully loaded, its current target at ``current_version``."""
    store.put(
        "querycoord-target/1",
        query_coord_pb2.CollectionTarget(collectionID=1, version=current_version).SerializeToString(),
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
