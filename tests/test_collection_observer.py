"""The collection observer on its own (real meta over SQLite, no cluster): a LoadPartitions that times out
drops the stalled partitions and tells the nodes, retrying that call until it succeeds."""

from __future__ import annotations

from vecgrid import errors
from vecgrid.cluster.querycoord.context import CheckerContext
from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.replica_manager import ReplicaManager
from vecgrid.cluster.querycoord.meta.target_manager import TargetManager
from vecgrid.cluster.querycoord.observers.collection_observer import CollectionObserver
from vecgrid.cluster.querycoord.session.node_manager import NodeManager
from vecgrid.cluster.querycoord.task.scheduler import TaskScheduler
from vecgrid.proto import query_coord_pb2
from tests.conftest import poll_until


async def test_a_partition_load_timeout_tells_the_nodes_until_they_heard(store):
    collections = CollectionManager(store)
    loaded = query_coord_pb2.CollectionLoadInfo(
        collectionID=1, replica_number=1, load_type=query_coord_pb2.LoadPartition, status=query_coord_pb2.Loaded
    )
    collections.put(
        loaded, [query_coord_pb2.PartitionLoadInfo(collectionID=1, partitionID=10, status=query_coord_pb2.Loaded)]
    )
    collections.put(
        loaded, [query_coord_pb2.PartitionLoadInfo(collectionID=1, partitionID=11, status=query_coord_pb2.Loading)]
    )
    scheduler = TaskScheduler(None, None, 5.0, 5.0)
    ctx = CheckerContext(NodeManager(), collections, ReplicaManager(store), TargetManager(store, None),
                         DistributionManager(), scheduler, None, None)
    calls: list[tuple[int, list[int]]] = []

    async def release_on_nodes(cid: int, pids: list[int]) -> None:
        calls.append((cid, pids))
        if len(calls) == 1:
            raise errors.NodeNotFound(node=2)     # a node that did not answer: the next round asks again

    cancelled = []
    observer = CollectionObserver(ctx, 60.0, 0.0, lambda cid, why: cancelled.append(cid), release_on_nodes)
    await observer.round()
    assert collections.partition_ids(1) == [10] and collections.is_loaded(1) and cancelled == []
    await poll_until(lambda: calls == [(1, [11])], 5, 0.01, "the nodes told")
    await observer.round()
    await poll_until(lambda: len(calls) == 2, 5, 0.01, "the failed call retried")
    assert calls[1] == (1, [11])
    for _ in range(3):
        await observer.round()
    assert len(calls) == 2    # heard: not asked again
    await observer.stop()
    await scheduler.stop()
