"""The task executor's channel move on its own (Dask calls and distribution pulls recorded, no cluster):
the source stops serving only after the coordinator has seen the target serve."""

from __future__ import annotations

import pytest

from vecgrid import errors
from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.cluster.querycoord.session.node_manager import NodeInfo, NodeManager
from vecgrid.cluster.querycoord.task.executor import DaskExecutor
from vecgrid.cluster.querycoord.task.task import NO_NODE, ChannelTask
from vecgrid.proto import query_coord_pb2


class _Done:
    """A Dask future of a call that succeeded."""

    def __init__(self, key: str) -> None:
        self.key = key

    async def result(self) -> None:
        return None

    def release(self) -> None:
        pass


class _Recording(DaskExecutor):
    """Records each node call and each distribution pull in the order they happen; the requests
    themselves (built from the catalog and targets) are not what is under test."""

    def __init__(self) -> None:
        nodes = NodeManager()
        for node_id in (1, 2):
            nodes.add(NodeInfo(node_id, f"w{node_id}", f"127.0.0.1:{1000 + node_id}", f"tcp://w{node_id}"))
        self.events: list[tuple[str, int]] = []

        self.node_reports_channel = True

        async def pull(node_id: int) -> None:
            self.events.append(("pull", node_id))
            channels = [query_coord_pb2.ChannelVersionInfo(channel="ch", collection=1, version=2)]
            self.dist.update(node_id, query_coord_pb2.GetDataDistributionResponse(
                nodeID=node_id, lastModifyTs=len(self.events),
                channels=channels if self.node_reports_channel else []))
        super().__init__(None, nodes, None, None, None, None, DistributionManager(), lambda: "coord:1", pull)

    def submit(self, method, request, node_id, key, after=None):
        self.events.append((method, node_id))
        return _Done(key)

    def watch_request(self, task):
        return query_coord_pb2.WatchDmChannelsRequest(nodeID=task.target)

    def _copied_view(self, task, new_leader):
        return query_coord_pb2.SyncDistributionRequest(channel=task.channel)


async def test_a_channel_move_unsubscribes_the_source_only_after_the_target_was_pulled():
    """Before, the unsubscribe followed the copied view at once: a periodic pull of the source after it
    and none of the target since its watch left GetShardLeaders no serviceable leader (503) until the
    task's closing pull, and the proxy's one retry of a search in that window failed."""
    executor = _Recording()
    await executor.run_channel(ChannelTask(1, 100, "ch", target=2, source=1))
    assert executor.events == [("watch_dm_channels", 2), ("sync_distribution", 2), ("pull", 2),
                               ("unsub_dm_channel", 1)]


async def test_a_channel_grow_or_reduce_alone_pulls_nothing():
    executor = _Recording()
    await executor.run_channel(ChannelTask(1, 100, "ch", target=2))
    await executor.run_channel(ChannelTask(1, 100, "ch", source=1, target=NO_NODE))
    assert executor.events == [("watch_dm_channels", 2), ("unsub_dm_channel", 1)]


async def test_a_channel_move_keeps_the_source_when_the_pull_does_not_show_the_target_watching():
    """A pull that failed (the node answered an error status: only logged by the puller) or a node that
    does not report the channel: the source keeps serving, and the task fails for the checkers to retry."""
    executor = _Recording()
    executor.node_reports_channel = False
    with pytest.raises(errors.ServiceUnavailable):
        await executor.run_channel(ChannelTask(1, 100, "ch", target=2, source=1))
    assert ("unsub_dm_channel", 1) not in executor.events
