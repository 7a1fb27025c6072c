"""What the coordinator reports about loads, as Milvus's ``services.go`` / ``handlers.go`` do:
ShowCollections, ShowPartitions, GetPartitionStates, GetSegmentInfo, GetShardLeaders,
GetReplicas; and about nodes and where segment copies are served from (the REST cluster plane).
Plain functions over the checker context; the servicer and the REST services encode the results.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

from vecgrid import errors
from vecgrid.cluster.querycoord.context import CheckerContext
from vecgrid.cluster.querycoord.dist.leaders import can_serve, leader_of, replica_nodes
from vecgrid.cluster.querycoord.meta.failed_load_cache import FailedLoadCache
from vecgrid.cluster.querycoord.meta.target_manager import Scope, segment_refs
from vecgrid.cluster.querycoord.session.node_manager import STOPPING, NodeInfo
from vecgrid.common.keys import PLACEMENT_PARAM
from vecgrid.proto import common_pb2, milvus_pb2, query_coord_pb2


@dataclass
class CollectionReport:
    collection_id: int
    percentage: int
    available: bool
    refresh_progress: int
    load_fields: list[int]


def _loaded(ctx: CheckerContext, cid: int) -> query_coord_pb2.CollectionLoadInfo:
    info = ctx.collections.get(cid)
    if info is None:
        raise errors.CollectionNotLoaded(collection=cid)
    return info


def show_collections(ctx: CheckerContext, cids: list[int], refresh_versions: dict[int, int],
                     failed_loads: FailedLoadCache) -> list[CollectionReport]:
    out = []
    for cid in cids or ctx.collections.ids():
        info = ctx.collections.get(cid)
        if info is None:
            if not cids:
                continue  # released meanwhile
            failure = failed_loads.get(cid)
            raise copy.copy(failure) if failure is not None else errors.CollectionNotLoaded(collection=cid)
        replicas = ctx.replicas.of_collection(cid)
        available = any(all(ctx.online(n) for n in r.ro_nodes) for r in replicas)
        out.append(CollectionReport(cid, ctx.collections.percentage(cid), available,
                                    _refresh_progress(ctx, cid, refresh_versions), list(info.load_fields)))
    return out


def _refresh_progress(ctx: CheckerContext, cid: int, refresh_versions: dict[int, int]) -> int:
    """100 unless a refresh (LoadCollection/LoadPartitions with ``refresh``) waits for a target version
    the current target has not reached: Milvus reports the collection's refresh state for the
    collection and for each of its partitions alike."""
    wanted = refresh_versions.get(cid)
    if wanted is None:
        return 100
    current = ctx.targets.current(cid)
    return 100 if current is not None and current.version >= wanted else 0


def _loaded_partitions(ctx: CheckerContext, cid: int, pids: list[int],
                       failed_loads: FailedLoadCache | None = None) -> list[int]:
    """The requested (default: all loaded) partitions; any not loaded fails the call with 201, with the
    text of the collection's recorded load failure appended when ShowPartitions asks."""
    failure = failed_loads.get(cid) if failed_loads is not None else None
    why = f": {failure}" if failure is not None else ""
    if ctx.collections.get(cid) is None:
        raise errors.PartitionNotLoaded(f"collection {cid} is not loaded{why}", collection=cid)
    for pid in pids:
        if ctx.collections.partition(cid, pid) is None:
            raise errors.PartitionNotLoaded(why[2:], partition=pid)
    return pids or ctx.collections.partition_ids(cid)


@dataclass
class PartitionReport:
    partition_id: int
    percentage: int
    refresh_progress: int


def show_partitions(ctx: CheckerContext, cid: int, pids: list[int], refresh_versions: dict[int, int],
                    failed_loads: FailedLoadCache) -> list[PartitionReport]:
    partitions = _loaded_partitions(ctx, cid, pids, failed_loads)
    refresh = _refresh_progress(ctx, cid, refresh_versions)
    return [PartitionReport(pid, ctx.collections.partition_percentage(cid, pid), refresh) for pid in partitions]


def _on_gpu(seg: query_coord_pb2.SegmentVersionInfo) -> bool:
    """Whether a node serves this segment copy's every index from GPU memory (as its node reports)."""
    placements = [kv.value for info in seg.index_info.values() for kv in info.index_params
                  if kv.key == PLACEMENT_PARAM]
    return bool(placements) and all(p == "GPU" for p in placements)


def _gpu_share(ctx: CheckerContext, cid: int, pid: int) -> tuple[int, int]:
    """(segment copies of the partition served from GPU, all its loaded copies) over replica nodes."""
    on_gpu = total = 0
    members = {n for r in ctx.replicas.of_collection(cid) for n in replica_nodes(r)}
    for node_id, seg in ctx.dist.segments(cid):
        if node_id not in members or seg.partition != pid or not seg.index_info:
            continue
        total += 1
        on_gpu += _on_gpu(seg)
    return on_gpu, total


IN_GPU, IN_MEMORY = query_coord_pb2.PartitionState.Name(query_coord_pb2.InGPU), query_coord_pb2.PartitionState.Name(
    query_coord_pb2.InMemory
)


def segment_placements(ctx: CheckerContext, cid: int) -> dict[int, dict[int, str]]:
    """Segment id -> node -> ``InGPU`` or ``InMemory``: each served copy's placement, the per-segment
    view of what :func:`partition_states` sums per partition."""
    out: dict[int, dict[int, str]] = {}
    for node_id, seg in ctx.dist.segments(cid):
        out.setdefault(seg.ID, {})[node_id] = IN_GPU if _on_gpu(seg) else IN_MEMORY
    return out


def partition_states(ctx: CheckerContext, cid: int, pids: list[int]) -> list[query_coord_pb2.PartitionStates]:
    """InGPU / PartialInGPU when segments are served from GPU memory, else InMemory / PartialInMemory."""
    out = []
    for pid in _loaded_partitions(ctx, cid, pids):
        pct = ctx.collections.partition_percentage(cid, pid)
        on_gpu, total = _gpu_share(ctx, cid, pid)
        if on_gpu and on_gpu == total and pct >= 100:
            state = query_coord_pb2.InGPU
        elif on_gpu:
            state = query_coord_pb2.PartialInGPU
        else:
            state = query_coord_pb2.InMemory if pct >= 100 else query_coord_pb2.PartialInMemory
        out.append(query_coord_pb2.PartitionStates(partitionID=pid, state=state, inMemory_percentage=pct))
    return out


def segment_infos(ctx: CheckerContext, cid: int, sids: list[int]) -> list[query_coord_pb2.SegmentInfo]:
    """By ids: from the distribution (601 when missing); by collection: loaded and in current target."""
    current = ctx.targets.segments(cid, Scope.CURRENT)
    merged: dict[int, query_coord_pb2.SegmentInfo] = {}
    for node_id, seg in ctx.dist.segments(None if sids else cid):
        if (sids and seg.ID not in sids) or (not sids and seg.ID not in current):
            continue
        info = merged.get(seg.ID)
        if info is None:
            ref = current.get(seg.ID)
            info = merged[seg.ID] = query_coord_pb2.SegmentInfo(
                segmentID=seg.ID, collectionID=seg.collection, partitionID=seg.partition, nodeID=node_id,
                num_rows=ref.num_rows if ref is not None else 0, dmChannel=seg.channel,
                segment_state=common_pb2.Sealed, level=seg.level, index_infos=list(seg.index_info.values()),
                enable_index=bool(seg.index_info))
            if seg.index_info:
                first = next(iter(seg.index_info.values()))
                info.index_name, info.indexID = first.index_name, first.indexID
        info.node_ids.append(node_id)
        replica = ctx.replicas.by_node(seg.collection, node_id)
        if replica is not None:
            info.replica_ids.append(replica.ID)
    for sid in sids:
        if sid not in merged:
            raise errors.SegmentNotLoaded(segment=sid)
    return [merged[s] for s in (sids or sorted(merged))]


def shard_leaders(ctx: CheckerContext, cid: int) -> list[query_coord_pb2.ShardLeadersList]:
    info = _loaded(ctx, cid)
    if info.status != query_coord_pb2.Loaded and ctx.collections.percentage(cid) < 100:
        raise errors.CollectionNotFullyLoaded(collection=cid)
    current = ctx.targets.current(cid)
    if current is None or not len(current.Channel_targets):
        raise errors.CollectionOnRecovering(collection=cid)
    serviceable = can_serve(segment_refs(current), ctx.online)
    out = []
    for ch in current.Channel_targets:
        leaders = query_coord_pb2.ShardLeadersList(channel_name=ch.channelName)
        for replica in ctx.replicas.of_collection(cid):
            found = leader_of(ctx.dist, replica, ch.channelName, serviceable)
            if found is None or not serviceable(*found):
                continue
            leaders.node_ids.append(found[0])
            leaders.node_addrs.append(ctx.nodes.get(found[0]).address)
        if not leaders.node_ids:
            raise errors.ChannelNotAvailable(f"no available shard leader for {ch.channelName}",
                                             channel=ch.channelName)
        out.append(leaders)
    return out


def replica_usage(info: query_coord_pb2.ResourceGroupInfo, replicas: list[query_coord_pb2.Replica],
                  group_of: Callable[[int], str | None]) -> None:
    """DescribeResourceGroup's per-collection counts over every loaded ``replicas``, as Milvus's: the
    group's loaded replicas, their nodes now in other groups (outgoing), and the group's nodes serving
    other groups' replicas (incoming)."""
    members = {n.node_id for n in info.nodes}
    for replica in replicas:
        cid, nodes = replica.collectionID, (*replica.nodes, *replica.ro_nodes)
        if replica.resource_group == info.name:
            info.num_loaded_replica[cid] += 1
            outgoing = sum(1 for n in nodes if group_of(n) != info.name)
            if outgoing:
                info.num_outgoing_node[cid] += outgoing
        else:
            incoming = sum(1 for n in nodes if n in members)
            if incoming:
                info.num_incoming_node[cid] += incoming


MB = 1 << 20

# Node states of the REST cluster plane: suspended is the coordinator's (SuspendNode), the others the node's.
NODE_NORMAL, NODE_SUSPENDED, NODE_STOPPING = "normal", "suspended", "stopping"


@dataclass
class NodeReport:
    """One query node as the coordinator knows it; ``hardware`` and ``devices`` come from the node's own
    GetMetrics report (``metrics_error`` says why they are missing when the node did not answer)."""

    info: NodeInfo
    state: str
    resource_group: str | None
    channels: list[str]
    segments: list[int]
    memory_capacity_bytes: int
    hardware: dict[str, Any]
    devices: list[dict[str, Any]]
    metrics_error: str | None


def node_report(info: NodeInfo, suspended: bool, resource_group: str | None, channels: list[str],
                segments: list[int], mem_capacity_mb: float, metrics: dict[str, Any] | None) -> NodeReport:
    state = NODE_STOPPING if info.state == STOPPING else NODE_SUSPENDED if suspended else NODE_NORMAL
    base = (metrics or {}).get("base_component_infos", {})
    error = base.get("error_reason") or "no answer" if base.get("has_error") or metrics is None else None
    hardware = {} if error else dict(base.get("hardware_infos", {}))
    capacity = int(mem_capacity_mb * MB) or int(hardware.get("memory", 0))
    return NodeReport(info, state, resource_group, channels, segments, capacity, hardware,
                      [] if error else list(metrics.get("devices", [])), error)


def replicas(ctx: CheckerContext, cid: int, with_shard_nodes: bool,
             group_of: Callable[[int], str | None]) -> list[milvus_pb2.ReplicaInfo]:
    """GetReplicas; ``num_outbound_node`` counts the replica's nodes now in other groups, per group."""
    if ctx.collections.get(cid) is None:
        return []
    current = ctx.targets.current(cid)
    channels = [ch.channelName for ch in current.Channel_targets] if current is not None else []
    serviceable = can_serve(segment_refs(current), ctx.online)
    out = []
    for r in ctx.replicas.of_collection(cid):
        info = milvus_pb2.ReplicaInfo(replicaID=r.ID, collectionID=cid, node_ids=list(r.nodes),
                                      resource_group_name=r.resource_group,
                                      partition_ids=ctx.collections.partition_ids(cid))
        for node_id in r.ro_nodes:
            rg = group_of(node_id)
            if rg is not None and rg != r.resource_group:
                info.num_outbound_node[rg] += 1
        shards = []
        for channel in channels:
            found = leader_of(ctx.dist, r, channel, serviceable)
            if found is None or not ctx.online(found[0]):
                shards = []
                break
            nodes = [found[0]]
            if with_shard_nodes:
                nodes = sorted({n for n, s in ctx.dist.segments(cid) if s.channel == channel
                                and n in replica_nodes(r)} | {found[0]})
            shards.append(milvus_pb2.ShardReplica(leaderID=found[0], leader_addr=ctx.nodes.get(found[0]).address,
                                         dm_channel_name=channel, node_ids=nodes))
        info.shard_replicas.extend(shards)
        out.append(info)
    return out


def index_placement(ctx: CheckerContext, cid: int, field_id: int) -> dict[str, int]:
    """Where the loaded copies of a vector field's segments are served from: copies per placement
    (``GPU`` / ``CPU``) over the replicas' nodes, as their nodes last reported; ``{}`` when not loaded."""
    counts: dict[str, int] = {}
    if ctx.collections.get(cid) is None:
        return counts
    members = {n for r in ctx.replicas.of_collection(cid) for n in replica_nodes(r)}
    for node_id, seg in ctx.dist.segments(cid):
        info = seg.index_info.get(field_id) if node_id in members else None
        if info is None:
            continue
        for kv in info.index_params:
            if kv.key == PLACEMENT_PARAM:
                counts[kv.value] = counts.get(kv.value, 0) + 1
    return counts
