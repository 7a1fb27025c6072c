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


class _Targets:
    """The coordinator's current target of collection 1: version 7, channel "ch" with no sealed segment."""

    def current(self, cid: int) -> query_coord_pb2.CollectionTarget | None:
        target = query_coord_pb2.CollectionTarget(collectionID=1, version=7)
        target.Channel_targets.add(channelName="ch", dropped_segmentIDs=[41])
        return target


class _CopyingViews(_Recording):
    """Copies the source's real view: the source serves "ch" synced to target version 7 with only growing
    rows (nothing sealed), and the target reports its view as a node that applied the copy would."""

    def __init__(self) -> None:
        super().__init__()
        self.targets = _Targets()
        self.synced: list[query_coord_pb2.SyncDistributionRequest] = []
        self.applies_version = True
        self.dist.update(1, query_coord_pb2.GetDataDistributionResponse(
            nodeID=1, lastModifyTs=1, channels=[query_coord_pb2.ChannelVersionInfo(channel="ch", collection=1)],
            leader_views=[query_coord_pb2.LeaderView(collection=1, channel="ch", TargetVersion=7)]))

        async def pull(node_id: int) -> None:
            self.events.append(("pull", node_id))
            versions = [a.TargetVersion for s in self.synced for a in s.actions
                        if a.type == query_coord_pb2.UpdateVersion and self.applies_version]
            self.dist.update(node_id, query_coord_pb2.GetDataDistributionResponse(
                nodeID=node_id, lastModifyTs=len(self.events),
                channels=[query_coord_pb2.ChannelVersionInfo(channel="ch", collection=1, version=2)],
                leader_views=[query_coord_pb2.LeaderView(collection=1, channel="ch",
                                                         TargetVersion=max(versions, default=0))]))
        self.pull_dist = pull

    def submit(self, method, request, node_id, key, after=None):
        if method == "sync_distribution":
            self.synced.append(request)
        return super().submit(method, request, node_id, key, after)

    _copied_view = DaskExecutor._copied_view


async def test_a_channel_move_gives_the_target_the_target_version_with_no_sealed_segment():
    """Before, a source view with nothing sealed was not copied: the new leader had target version 0 (not
    serviceable) until the target observer's next round, and with the source unsubscribed GetShardLeaders
    answered "no available shard leader" (CI, a query right after channel moves of a growing-only
    collection)."""
    executor = _CopyingViews()
    await executor.run_channel(ChannelTask(1, 100, "ch", target=2, source=1))
    [sync] = executor.synced
    [update] = [a for a in sync.actions if a.type == query_coord_pb2.UpdateVersion]
    assert (update.TargetVersion, list(update.droppedInTarget)) == (7, [41])
    assert ("unsub_dm_channel", 1) in executor.events


async def test_a_channel_move_keeps_the_source_while_the_target_reports_no_target_version():
    """The copy carried a target version: the target must report it before the source goes."""
    executor = _CopyingViews()
    executor.applies_version = False   # say, a node restarted between the copy and the pull
    with pytest.raises(errors.ServiceUnavailable):
        await executor.run_channel(ChannelTask(1, 100, "ch", target=2, source=1))
    assert ("unsub_dm_channel", 1) not in executor.events
