"""Operator-driven moves, as Milvus's ``ops_services.go`` + ``handlers.go``: TransferSegment,
TransferChannel, LoadBalance and CheckQueryNodeDistribution.

Plans come from the balancer over the chosen destinations (forced assignment) and
become tasks labelled ``manual_balance``: load on the target, then (unless
``copy_mode``) release on the source.  A plan whose segment or channel already has a
task is skipped, so repeating a call is harmless.  Transfers return at once;
LoadBalance waits for its tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import TypeVar

from vecgrid import errors
from vecgrid.cluster.querycoord.balance import ChannelItem, SegmentItem
from vecgrid.cluster.querycoord.context import CheckerContext
from vecgrid.cluster.querycoord.meta.target_manager import Scope
from vecgrid.cluster.querycoord.session.node_manager import NORMAL
from vecgrid.cluster.querycoord.task.task import MANUAL_BALANCE, NO_NODE, ChannelTask, Priority, SegmentTask
from vecgrid.proto import query_coord_pb2

Key = TypeVar("Key", int, str)   # a segment id or a channel name


def _chosen(on_source: set[Key], current: Container[Key], requested: Key | None,
            not_on_source: Callable[[], errors.MilvusError]) -> list[Key]:
    """What a transfer moves off its source: everything there that the current target has
    (``requested`` None: transfer_all), or the one ``requested``, which must be there (else
    ``not_on_source()`` is raised) and is skipped when no longer in the target."""
    if requested is None:
        return sorted(k for k in on_source if k in current)
    if requested not in on_source:
        raise not_on_source()
    return [requested] if requested in current else []


class ManualBalance:
    def __init__(self, ctx: CheckerContext, segment_timeout_s: float) -> None:
        self.ctx = ctx
        self.segment_timeout_s = segment_timeout_s

    def _usable(self, node_id: int) -> None:
        info = self.ctx.nodes.get(node_id)
        if info is None:
            raise errors.NodeNotFound(node=node_id)
        if info.state != NORMAL:
            raise errors.NodeNotAvailable(f"node {node_id} is stopping", node=node_id)

    def _replicas_of_node(self, node_id: int) -> list[query_coord_pb2.Replica]:
        return [r for cid in self.ctx.collections.ids() for r in self.ctx.replicas.of_collection(cid)
                if node_id in r.nodes or node_id in r.ro_nodes]

    def _transfer_scope(
        self, source: int, target: int, to_all: bool
    ) -> list[tuple[query_coord_pb2.Replica, list[int]]]:
        """The replicas holding ``source``, each with its destinations (checked first: 901 / 905)."""
        self._usable(source)
        if not to_all:
            self._usable(target)
        out = []
        for replica in self._replicas_of_node(source):
            dests = [n for n in replica.nodes if n != source] if to_all else [target] if target != source else []
            out.append((replica, dests))
        return out

    # --- TransferSegment / TransferChannel ---------------------------------------------------

    def transfer_segment(self, req: query_coord_pb2.TransferSegmentRequest) -> list[tuple]:
        ctx = self.ctx
        keys = []
        for replica, dests in self._transfer_scope(req.source_nodeID, req.target_nodeID, req.to_all_nodes):
            cid = replica.collectionID
            current = ctx.targets.segments(cid, Scope.CURRENT)
            chosen = _chosen({s.ID for n, s in ctx.dist.segments(cid) if n == req.source_nodeID}, current,
                             None if req.transfer_all else req.segmentID,
                             lambda: errors.SegmentNotFound(f"segment {req.segmentID} not found in source node",
                                                            segment=req.segmentID))
            keys += self._move_segments(replica, req.source_nodeID, dests, [current[s] for s in chosen],
                                        copy=req.copy_mode)
        return keys

    def _move_segments(
        self, replica: query_coord_pb2.Replica, source: int, dests: list[int], refs, *, copy: bool
    ) -> list[tuple]:
        ctx = self.ctx
        if not refs or not dests:
            return []
        items = [SegmentItem(r.segment_id, replica.collectionID, r.partition_id, r.channel, r.num_rows) for r in refs]
        by_id = {r.segment_id: r for r in refs}
        keys = []
        for plan in ctx.balancer.assign_segments(replica.collectionID, items, dests, replica_id=replica.ID,
                                                 forced=True):
            task = SegmentTask(replica.collectionID, replica.ID, by_id[plan.segment.segment_id], target=plan.target,
                               source=NO_NODE if copy else source, origin=MANUAL_BALANCE)
            if ctx.scheduler.add(task):
                keys.append(task.key)
        return keys

    def transfer_channel(self, req: query_coord_pb2.TransferChannelRequest) -> list[tuple]:
        ctx = self.ctx
        keys = []
        for replica, dests in self._transfer_scope(req.source_nodeID, req.target_nodeID, req.to_all_nodes):
            cid = replica.collectionID
            chosen = _chosen({c.channel for n, c in ctx.dist.channels(cid) if n == req.source_nodeID},
                             ctx.targets.channels(cid, Scope.CURRENT), None if req.transfer_all else req.channel_name,
                             lambda: errors.ChannelNotFound(f"channel {req.channel_name} not found in source node",
                                                            channel=req.channel_name))
            if not chosen or not dests:
                continue
            for plan in ctx.balancer.assign_channels(cid, [ChannelItem(c, cid) for c in chosen], dests,
                                                     replica_id=replica.ID, forced=True):
                task = ChannelTask(cid, replica.ID, plan.channel.channel, target=plan.target,
                                   source=NO_NODE if req.copy_mode else req.source_nodeID, origin=MANUAL_BALANCE,
                                   priority=Priority.HIGH)
                if ctx.scheduler.add(task):
                    keys.append(task.key)
        return keys

    # --- LoadBalance (legacy, waits) -----------------------------------------------------------

    async def load_balance(self, req: query_coord_pb2.LoadBalanceRequest) -> None:
        ctx = self.ctx
        if len(req.source_nodeIDs) != 1:
            raise errors.ParameterInvalid("load balance needs exactly one source node")
        source, cid = req.source_nodeIDs[0], req.collectionID
        if ctx.collections.get(cid) is None:
            raise errors.CollectionNotLoaded(collection=cid)
        if ctx.collections.percentage(cid) < 100:
            raise errors.CollectionNotFullyLoaded(collection=cid)
        replica = ctx.replicas.by_node(cid, source)
        if replica is None:
            raise errors.NodeNotFound(f"source node {source} is not in a replica of collection {cid}", node=source)
        for dst in req.dst_nodeIDs:
            if dst not in replica.nodes:
                raise errors.NodeNotFound(f"destination node {dst} is not in the source's replica", node=dst)
        dests = [n for n in (req.dst_nodeIDs or replica.nodes) if n != source]
        current = ctx.targets.segments(cid, Scope.CURRENT)
        on_source = {s.ID for n, s in ctx.dist.segments(cid) if n == source}
        for sid in req.sealed_segmentIDs:
            if sid not in on_source:
                raise errors.SegmentNotFound(f"segment {sid} not found in source node", segment=sid)
        chosen = [sid for sid in (req.sealed_segmentIDs or sorted(on_source)) if sid in current]
        keys = self._move_segments(replica, source, dests, [current[s] for s in chosen], copy=False)
        failures = await ctx.scheduler.wait(keys, self.segment_timeout_s)
        if failures:
            raise errors.ServiceInternal("load balance failed: " + "; ".join(failures))

    # --- CheckQueryNodeDistribution ------------------------------------------------------------

    def check_distribution(self, source: int, target: int) -> None:
        ctx = self.ctx
        for node_id in (source, target):
            if ctx.nodes.get(node_id) is None:
                raise errors.NodeNotFound(node=node_id)
        src, dst = ctx.dist.node(source), ctx.dist.node(target)
        src_channels = {(c.collection, c.channel) for c in (src.channels if src else [])}
        dst_channels = {(c.collection, c.channel) for c in (dst.channels if dst else [])}
        for cid, channel in sorted(src_channels - dst_channels):
            if channel in ctx.targets.channels(cid, Scope.CURRENT_OR_NEXT):
                raise errors.ChannelLack(f"channel {channel} is on node {source} but not on node {target}",
                                         channel=channel)
        dst_segments = {s.ID for s in (dst.segments if dst else [])}
        for seg in src.segments if src else []:
            if seg.ID not in dst_segments and seg.ID in ctx.targets.segments(seg.collection, Scope.CURRENT_OR_NEXT):
                raise errors.SegmentLack(f"segment {seg.ID} is on node {source} but not on node {target}",
                                         segment=seg.ID)
