"""QueryCoord meta without a cluster: persistence, replica node assignment, load progress rules and
the health observer's collection messages."""

from __future__ import annotations

import json

import pytest

from vecgrid import errors
from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.replica_manager import ReplicaManager
from vecgrid.cluster.querycoord.observers import health_observer
from vecgrid.cluster.querycoord.observers.health_observer import HealthObserver
from vecgrid.cluster.querycoord.session.cluster import NodeClients
from vecgrid.cluster.querycoord.session.node_manager import NodeManager
from vecgrid.proto import query_coord_pb2


def test_collection_load_info_persists_and_progress_never_goes_down(store):
    cm = CollectionManager(store)
    cm.put(
        query_coord_pb2.CollectionLoadInfo(
            collectionID=1, replica_number=1, status=query_coord_pb2.Loading, load_type=query_coord_pb2.LoadCollection
        ),
        [
            query_coord_pb2.PartitionLoadInfo(collectionID=1, partitionID=p, status=query_coord_pb2.Loading)
            for p in (10, 11)
        ],
    )
    cm.set_progress(1, 10, 40)
    cm.set_progress(1, 10, 20)                 # lower: ignored while loading
    assert cm.partition_percentage(1, 10) == 40 and cm.percentage(1) == 20
    cm.set_progress(1, 10, 100)
    assert cm.partition(1, 10).status == query_coord_pb2.Loaded and not cm.is_loaded(1)
    cm.set_progress(1, 11, 100)
    assert cm.is_loaded(1)
    again = CollectionManager(store)          # a restarted coordinator
    assert again.is_loaded(1) and again.partition_ids(1) == [10, 11] and again.percentage(1) == 100
    again.remove_partitions(1, [11])
    assert CollectionManager(store).partition_ids(1) == [10]
    again.remove(1)
    assert CollectionManager(store).ids() == []


def test_replicas_get_disjoint_nodes_and_follow_their_group(store):
    rm = ReplicaManager(store)
    nodes = {"rg": [1, 2, 3]}
    ids = iter(range(100, 200))
    with pytest.raises(errors.ResourceGroupNodeNotEnough):
        rm.spawn(7, {"rg": 4}, lambda: next(ids), lambda rg: nodes[rg])
    assert rm.of_collection(7) == []          # refused before writing anything
    a, b = rm.spawn(7, {"rg": 2}, lambda: next(ids), lambda rg: nodes[rg])
    assert sorted([*a.nodes, *b.nodes]) == [1, 2, 3] and not set(a.nodes) & set(b.nodes)
    # another collection shares the nodes
    (c,) = rm.spawn(8, {"rg": 1}, lambda: next(ids), lambda rg: nodes[rg])
    assert sorted(c.nodes) == [1, 2, 3]
    # node 3 leaves the group: read-only in its replica until drained
    holder = rm.by_node(7, 3)
    nodes["rg"] = [1, 2]
    assert rm.recover(7, lambda rg: nodes[rg])
    updated = rm.get(holder.ID)
    assert 3 in updated.ro_nodes and 3 not in updated.nodes
    rm.drop_ro_node(holder.ID, 3)
    assert 3 not in rm.get(holder.ID).ro_nodes
    assert {r.ID for r in ReplicaManager(store).of_collection(7)} == {a.ID, b.ID}   # persisted
    rm.remove_collection(7)
    assert ReplicaManager(store).of_collection(7) == []


async def test_health_lists_long_unqueryable_collections_as_critical(monkeypatch):
    monkeypatch.setattr(health_observer, "UNQUERYABLE_AFTER_S", 0.0)
    nodes = NodeManager()
    observer = HealthObserver(nodes, NodeClients(nodes), 30, 1,
                              unqueryable=lambda: [(1, 42, "channel not available")])
    await observer.refresh()
    (reason,) = observer.reasons
    doc = json.loads(reason)
    assert doc["unhealthy_cluster_msgs"] == []
    assert doc["unhealthy_collection_msgs"] == [{"database_id": 1, "collection_id": 42, "reason": {
        "unhealthy_msg": "channel not available", "unhealthy_level": 2}}]
    assert observer.healthy            # Critical only: listed, still healthy


def test_partition_states_tell_gpu_from_host_memory(store):
    from vecgrid.cluster.querycoord import reports
    from vecgrid.cluster.querycoord.context import CheckerContext
    from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
    from vecgrid.common.keys import PLACEMENT_PARAM
    from vecgrid.proto import common_pb2

    cm, rm, dist = CollectionManager(store), ReplicaManager(store), DistributionManager()
    cm.put(
        query_coord_pb2.CollectionLoadInfo(collectionID=1, replica_number=1, status=query_coord_pb2.Loading),
        [
            query_coord_pb2.PartitionLoadInfo(collectionID=1, partitionID=p, status=query_coord_pb2.Loading)
            for p in (10, 11, 12)
        ],
    )
    rm.spawn(1, {"rg": 1}, lambda: 5, lambda rg: [1, 2])
    ctx = CheckerContext(NodeManager(), cm, rm, None, dist, None, None, None)

    def seg(sid, pid, placement):
        s = query_coord_pb2.SegmentVersionInfo(ID=sid, collection=1, partition=pid)
        s.index_info[101].index_params.append(common_pb2.KeyValuePair(key=PLACEMENT_PARAM, value=placement))
        return s
    dist.update(1, query_coord_pb2.GetDataDistributionResponse(lastModifyTs=1, segments=[
        seg(100, 10, "GPU"), seg(101, 10, "GPU"), seg(102, 11, "GPU"), seg(104, 12, "CPU")]))
    dist.update(2, query_coord_pb2.GetDataDistributionResponse(lastModifyTs=1, segments=[seg(103, 11, "CPU")]))
    for pid in (10, 11, 12):
        cm.set_progress(1, pid, 100)
    states = {p.partitionID: p.state for p in reports.partition_states(ctx, 1, [])}
    assert states == {10: query_coord_pb2.InGPU, 11: query_coord_pb2.PartialInGPU, 12: query_coord_pb2.InMemory}
    with pytest.raises(errors.PartitionNotLoaded):
        reports.partition_states(ctx, 1, [13])


def test_failed_load_cache_answers_the_most_frequent_recent_failure():
    from vecgrid.cluster.querycoord.meta.failed_load_cache import FailedLoadCache
    now = [0.0]
    cache = FailedLoadCache(expire_s=100, clock=lambda: now[0])
    assert cache.get(1) is None
    cache.put(1, errors.SegmentLoadFailed("checksum mismatch", segment=7))
    cache.put(1, errors.MemoryLimitExceeded("no room"))
    cache.put(1, errors.SegmentLoadFailed("checksum mismatch", segment=8))
    cache.put(1, RuntimeError("boom"))                 # not a Milvus error: recorded as an internal one
    assert cache.get(1).code == 604 and "segment=8" in str(cache.get(1)) and cache.get(2) is None
    now[0] = 50.0
    cache.put(1, errors.MemoryLimitExceeded("no room"))
    cache.put(1, errors.MemoryLimitExceeded("no room"))
    assert isinstance(cache.get(1), errors.MemoryLimitExceeded)
    now[0] = 120.0                                     # the 604s are older than 100 s; the rest is not
    assert isinstance(cache.get(1), errors.MemoryLimitExceeded)
    cache.remove(1)
    assert cache.get(1) is None


async def test_a_failing_health_refresh_makes_the_cluster_unhealthy_until_one_succeeds():
    """A refresh that raises must not leave the last (healthy) answer standing: it is the problem."""
    from tests.conftest import poll_until

    broken = {"now": False}

    def datacoord_problems() -> list[str]:
        if broken["now"]:
            raise RuntimeError("catalog unreadable")
        return []

    nodes = NodeManager()
    observer = HealthObserver(nodes, NodeClients(nodes), 0.01, 1)
    observer.roles.append(("datacoord", lambda: 1, datacoord_problems))
    await observer.start()
    try:
        assert observer.healthy
        broken["now"] = True
        await poll_until(lambda: not observer.healthy, 10, 0.01, "the failed refresh to show")
        (msg,) = json.loads(observer.reasons[0])["unhealthy_cluster_msgs"]
        assert msg["role"] == "querycoord" and "catalog unreadable" in msg["reason"]["unhealthy_msg"]
        broken["now"] = False
        await poll_until(lambda: observer.healthy and not observer.reasons, 10, 0.01, "health back")
    finally:
        await observer.stop()


def test_a_distribution_reply_refreshes_growing_rows_even_when_lastmodifyts_stands():
    """Inserts fill growing segments without moving a node's lastModifyTs (it moves on loads, releases
    and deletes); the balancer reads the growing rows from the leader views, so a full reply must
    replace them."""
    from vecgrid.cluster.querycoord.dist.distribution import DistributionManager

    dist = DistributionManager()

    def reply(growing: int) -> query_coord_pb2.GetDataDistributionResponse:
        return query_coord_pb2.GetDataDistributionResponse(lastModifyTs=7, leader_views=[
            query_coord_pb2.LeaderView(collection=1, channel="ch-0", num_of_growing_rows=growing)])

    dist.update(3, reply(10))
    dist.update(3, reply(500))
    ((node, view),) = dist.leader_views(1)
    assert (node, view.num_of_growing_rows) == (3, 500)
    dist.update(3, query_coord_pb2.GetDataDistributionResponse())  # no body (nothing changed): only the heartbeat
    assert dist.leader_views(1)[0][1].num_of_growing_rows == 500
