"""What every balancer shares: the items it places, the plans it returns, the view it reads.

Milvus's ``querycoordv2/balance`` (``balance.go`` and ``utils.go``): a balancer chooses nodes
for sealed segments and DML channels and proposes moves for one replica.  It only reads —
the ``ClusterView`` the coordinator implements over its distribution and task scheduler — and
returns plans; the checkers turn plans into tasks and the scheduler runs them.  Nothing here
does I/O or awaits.

``BaseBalancer`` holds the parts the three policies have in common: the Normal-node filter
of non-forced assignment, the stopping balance that drains read-only and stopping nodes, and
the order of a replica's balance round (channels before segments, each only while no move
task of the other kind is in flight for the collection).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol, Sequence, TypeVar

from vecgrid.common.scan_cost import IndexShape
from vecgrid.proto import data_coord_pb2

# Node states as ``ClusterView.node_state`` reports them (Milvus ``session.NodeState``).
NORMAL = "Normal"
STOPPING = "Stopping"

# Milvus ``queryCoord.collectionBalanceSegmentBatchSize``: segment moves per balance round.
SEGMENT_BATCH_SIZE = 5
# Milvus ``queryCoord.collectionBalanceChannelBatchSize``: channel moves per balance round.
CHANNEL_BATCH_SIZE = 1

NO_NODE = -1  # ``source`` of an assignment plan (Milvus ``From: -1``)


@dataclass(frozen=True)
class SegmentItem:
    """A sealed segment as the balancer sees it."""

    segment_id: int
    collection_id: int
    partition_id: int
    channel: str
    num_rows: int
    level: int = 0   # data_coord_pb2.SegmentLevel; L0 segments are never moved (see movable)

    @property
    def movable(self) -> bool:
        """Whether a balance may move it: not an L0 segment, which belongs on its channel's shard
        leader (Milvus ``TargetManager.CanSegmentBeMoved``; the segment checker reloads a misplaced
        one there)."""
        return self.level != data_coord_pb2.L0


@dataclass(frozen=True)
class ChannelItem:
    """A DML channel (shard) of a collection."""

    channel: str
    collection_id: int


#: What a policy places: a segment or a channel (one placement loop serves both).
Item = TypeVar("Item", SegmentItem, ChannelItem)


@dataclass(frozen=True)
class SegmentPlan:
    """Load ``segment`` on ``target``; a move when ``source >= 0`` (release it there after),
    an assignment when ``source == -1``."""

    segment: SegmentItem
    replica_id: int
    source: int
    target: int


@dataclass(frozen=True)
class ChannelPlan:
    """Watch ``channel`` on ``target``; a move when ``source >= 0``, else an assignment."""

    channel: ChannelItem
    replica_id: int
    source: int
    target: int


@dataclass(frozen=True)
class ReplicaNodes:
    """One replica's nodes: read-write members and read-only ones being drained.

    ``channel_nodes`` is the replica's channel-exclusive split (``Replica.channel_node_infos``):
    ``(channel, its read-write nodes)`` pairs, empty node tuples while the replica is not in
    channel-exclusive mode, no pairs at all when it was loaded without that mode."""

    replica_id: int
    collection_id: int
    rw_nodes: tuple[int, ...]
    ro_nodes: tuple[int, ...]
    channel_nodes: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @property
    def channel_exclusive(self) -> bool:
        """Whether every channel has its own read-write nodes (Milvus's exclusive-mode test in
        ``ChannelLevelScoreBalancer.BalanceReplica``)."""
        return bool(self.channel_nodes) and all(nodes for _, nodes in self.channel_nodes)


class ClusterView(Protocol):
    """What a balancer reads; the coordinator implements it over its distribution and tasks."""

    def node_state(self, node_id: int) -> str:
        """``"Normal"``, ``"Stopping"``, or ``""`` when unknown or offline."""

    def node_capacity_mb(self, node_id: int) -> float:
        """Memory capacity (GPU memory on GPU nodes) in MiB; 0 when unknown."""

    def row_bytes(self, collection_id: int) -> int:
        """About how many bytes a loaded row of the collection takes (its schema's width); 0 if unknown."""

    def index_shape(self, collection_id: int) -> IndexShape:
        """The collection's vector index, as far as the rows a query compares go
        (``vecgrid.common.scan_cost``)."""

    def segments(self, node_id: int, collection_id: int | None = None) -> list[SegmentItem]:
        """Sealed segments on the node (``None``: of every collection)."""

    def channels(self, node_id: int, collection_id: int | None = None) -> list[ChannelItem]:
        """Channels the node watches (``None``: of every collection)."""

    def growing_rows(self, node_id: int, collection_id: int) -> int:
        """Rows in growing segments of the collection's delegators on the node."""

    def channel_growing_rows(self, node_id: int, channel: str) -> int:
        """Rows in the growing segments of the channel's delegator on the node (0 if it leads none)."""

    def pending_rows(self, node_id: int, collection_id: int | None = None) -> int:
        """Row delta of in-flight segment tasks on the node (+load / -release)."""

    def pending_channels(self, node_id: int, collection_id: int | None = None) -> int:
        """Channel delta of in-flight channel tasks on the node (+watch / -unwatch)."""

    def delegators(self, node_id: int, collection_id: int) -> int:
        """Shard leaders (delegators) of the collection on the node."""

    def channel_task_in_flight(self, collection_id: int) -> bool:
        """Whether a channel move task of the collection is still running."""

    def segment_task_in_flight(self, collection_id: int) -> bool:
        """Whether a segment move task of the collection is still running."""


class Balancer(Protocol):
    name: str
    channel_exclusive: bool

    def assign_segments(self, collection_id: int, segments: Sequence[SegmentItem], nodes: Sequence[int], *,
                        replica_id: int = 0, forced: bool = False) -> list[SegmentPlan]: ...

    def assign_channels(self, collection_id: int, channels: Sequence[ChannelItem], nodes: Sequence[int], *,
                        replica_id: int = 0, forced: bool = False) -> list[ChannelPlan]: ...

    def balance_replica(self, replica: ReplicaNodes) -> tuple[list[SegmentPlan], list[ChannelPlan]]: ...


# --- shared helpers -------------------------------------------------------------------------

def normal_nodes(view: ClusterView, nodes: Iterable[int]) -> list[int]:
    """The nodes in state Normal, sorted and without repeats."""
    return sorted({n for n in nodes if view.node_state(n) == NORMAL})


def candidate_nodes(view: ClusterView, nodes: Iterable[int], forced: bool) -> list[int]:
    """Assignment candidates: every given node when forced (checker placement and manual
    transfers), else only the Normal ones (Milvus skips stopping and suspended nodes)."""
    return sorted(set(nodes)) if forced else normal_nodes(view, nodes)


def held_segments(view: ClusterView, node_id: int, collection_id: int) -> set[int]:
    return {s.segment_id for s in view.segments(node_id, collection_id)}


def held_channels(view: ClusterView, node_id: int, collection_id: int) -> set[str]:
    return {c.channel for c in view.channels(node_id, collection_id)}


def node_rows(view: ClusterView, node_id: int, collection_id: int | None = None) -> int:
    """Sealed + growing rows on the node, of one collection or (``None``) of all of them.

    Growing rows live on delegators, so across collections they are summed over the
    collections whose channels the node watches."""
    sealed = sum(s.num_rows for s in view.segments(node_id, collection_id))
    if collection_id is not None:
        return sealed + view.growing_rows(node_id, collection_id)
    cids = {c.collection_id for c in view.channels(node_id)}
    return sealed + sum(view.growing_rows(node_id, cid) for cid in sorted(cids))


def unique_in_replica(counts: dict, key) -> bool:
    """Whether an item sits on exactly one node of the replica: a segment or channel that
    appears twice (a move or a duplicate not yet cleaned up) is left alone for now."""
    return counts.get(key, 0) == 1


class BaseBalancer:
    """The round structure every policy shares; subclasses supply placement and moves.

    Subclasses implement ``_place_segments`` / ``_place_channels`` (choose a target for each
    item; an item carries its current node, or ``-1`` for a new one; ``rebalance`` is true
    for the moves of an automatic balance round, where a policy may skip moves without enough
    benefit and cap the batch, and false for assignment and stopping balance) and
    ``_segment_moves`` / ``_channel_moves`` (the automatic balance of one replica over its
    Normal read-write nodes)."""

    name = ""
    #: replicas spawned under this balancer give each DML channel its own nodes (meta reads it)
    channel_exclusive = False

    def __init__(self, view: ClusterView) -> None:
        self.view = view

    @classmethod
    def from_settings(cls, view: ClusterView, settings) -> "BaseBalancer":
        """The balancer over ``view`` with what ``settings.querycoord`` says of its policy."""
        return cls(view)

    # --- public interface ---------------------------------------------------------------

    def assign_segments(self, collection_id: int, segments: Sequence[SegmentItem], nodes: Sequence[int], *,
                        replica_id: int = 0, forced: bool = False) -> list[SegmentPlan]:
        cands = candidate_nodes(self.view, nodes, forced)
        if not cands or not segments:
            return []
        return self._place_segments(collection_id, [(s, NO_NODE) for s in segments], cands, replica_id,
                                    rebalance=False)

    def assign_channels(self, collection_id: int, channels: Sequence[ChannelItem], nodes: Sequence[int], *,
                        replica_id: int = 0, forced: bool = False) -> list[ChannelPlan]:
        cands = candidate_nodes(self.view, nodes, forced)
        if not cands or not channels:
            return []
        return self._place_channels(collection_id, [(c, NO_NODE) for c in channels], cands, replica_id,
                                    rebalance=False)

    def balance_replica(self, replica: ReplicaNodes) -> tuple[list[SegmentPlan], list[ChannelPlan]]:
        """One balance round for a replica (Milvus ``BalanceReplica``).

        Nodes leaving the replica — its read-only nodes and read-write nodes no longer
        Normal — are drained first, completely and without a batch limit; while they hold
        anything of the collection nothing else is balanced.  Channels go before segments:
        channel moves are proposed only while no segment move task of the collection is in
        flight, segment moves only when no channel move is proposed in this round and no
        channel move task is in flight."""
        view, cid = self.view, replica.collection_id
        targets = normal_nodes(view, replica.rw_nodes)
        if not targets:
            return [], []
        leaving = sorted(set(replica.ro_nodes) | {n for n in replica.rw_nodes if view.node_state(n) != NORMAL})
        allow_channels = not view.segment_task_in_flight(cid)
        allow_segments = not view.channel_task_in_flight(cid)
        if any(view.segments(n, cid) or view.channels(n, cid) for n in leaving):
            channel_plans = self._stopping_channels(replica, leaving, targets) if allow_channels else []
            segment_plans: list[SegmentPlan] = []
            if not channel_plans and allow_segments:
                segment_plans = self._stopping_segments(replica, leaving, targets)
            return segment_plans, channel_plans
        channel_plans = self._channel_moves(replica, targets) if allow_channels and len(targets) > 1 else []
        segment_plans = []
        if not channel_plans and allow_segments and len(targets) > 1:
            segment_plans = self._segment_moves(replica, targets)
        return segment_plans, channel_plans

    # --- stopping balance ---------------------------------------------------------------

    def _stopping_segments(self, replica: ReplicaNodes, leaving: list[int], targets: list[int], *,
                           channel: str | None = None) -> list[SegmentPlan]:
        """Move the collection's segments (of ``channel`` only, when given) off ``leaving``."""
        cid = replica.collection_id
        items = [(s, n) for n in leaving for s in sorted(self.view.segments(n, cid), key=lambda s: s.segment_id)
                 if s.movable and channel in (None, s.channel)]
        if not items:
            return []
        return self._place_segments(cid, items, targets, replica.replica_id, rebalance=False)

    def _stopping_channels(self, replica: ReplicaNodes, leaving: list[int], targets: list[int], *,
                           channel: str | None = None) -> list[ChannelPlan]:
        """Move the collection's channels (``channel`` only, when given) off ``leaving``."""
        cid = replica.collection_id
        items = [(c, n) for n in leaving for c in sorted(self.view.channels(n, cid), key=lambda c: c.channel)
                 if channel in (None, c.channel)]
        if not items:
            return []
        return self._place_channels(cid, items, targets, replica.replica_id, rebalance=False)

    # --- policy hooks ---------------------------------------------------------------------

    def _place_segments(self, collection_id: int, items: list[tuple[SegmentItem, int]], nodes: list[int],
                        replica_id: int, *, rebalance: bool) -> list[SegmentPlan]:
        raise NotImplementedError

    def _place_channels(self, collection_id: int, items: list[tuple[ChannelItem, int]], nodes: list[int],
                        replica_id: int, *, rebalance: bool) -> list[ChannelPlan]:
        raise NotImplementedError

    def _segment_moves(self, replica: ReplicaNodes, nodes: list[int]) -> list[SegmentPlan]:
        return []

    def _channel_moves(self, replica: ReplicaNodes, nodes: list[int]) -> list[ChannelPlan]:
        return []

    # --- helpers for the move hooks ---------------------------------------------------------

    def _movable_segments(self, replica: ReplicaNodes, nodes: list[int], *,
                          channel: str | None = None) -> dict[int, list[SegmentItem]]:
        """The collection's segments (of ``channel`` only, when given) per node, without those held
        twice in the replica and L0 ones."""
        cid = replica.collection_id
        per_node = {n: self.view.segments(n, cid) for n in nodes}
        counts: dict[int, int] = {}
        for n in set(replica.rw_nodes) | set(replica.ro_nodes) | set(nodes):
            for s in (per_node[n] if n in per_node else self.view.segments(n, cid)):
                counts[s.segment_id] = counts.get(s.segment_id, 0) + 1
        return {n: [s for s in segs if s.movable and unique_in_replica(counts, s.segment_id)
                    and channel in (None, s.channel)]
                for n, segs in per_node.items()}

    def _movable_channels(self, replica: ReplicaNodes, nodes: list[int]) -> dict[int, list[ChannelItem]]:
        """The collection's channels per node (by name), without those watched twice in the replica."""
        cid = replica.collection_id
        per_node = {n: sorted(self.view.channels(n, cid), key=lambda c: c.channel) for n in nodes}
        counts: dict[str, int] = {}
        for n in set(replica.rw_nodes) | set(replica.ro_nodes) | set(nodes):
            for c in (per_node[n] if n in per_node else self.view.channels(n, cid)):
                counts[c.channel] = counts.get(c.channel, 0) + 1
        return {n: [c for c in chs if unique_in_replica(counts, c.channel)] for n, chs in per_node.items()}
