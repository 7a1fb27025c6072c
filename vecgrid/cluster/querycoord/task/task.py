"""Task model, as Milvus's ``task`` package: what should change on which node.

A segment or channel task *grows* it on ``target`` and/or *reduces* it on ``source``
(a move does both: the source is released only after the target serves).  Leader
tasks carry ``SyncDistribution`` actions for one shard leader.  Tasks are keyed so
that the scheduler holds at most one per (replica, segment) or (replica, channel) (an
index save: one per segment);
a checker that finds the same gap again while a task runs adds nothing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from vecgrid.cluster.querycoord.meta.target_manager import SegmentRef
from vecgrid.proto import query_coord_pb2

NO_NODE = -1
MANUAL_BALANCE = "manual_balance"  # the source label of tasks from LoadBalance / Transfer* (not a checker)


def segment_task_key(replica_id: int, segment_id: int) -> tuple:
    return ("segment", replica_id, segment_id)


class Priority(enum.IntEnum):
    LOW = 0
    NORMAL = 1
    HIGH = 2


@dataclass
class SegmentTask:
    collection_id: int
    replica_id: int
    segment: SegmentRef
    target: int = NO_NODE
    source: int = NO_NODE
    origin: str = ""
    priority: Priority = Priority.NORMAL
    load_scope: int = query_coord_pb2.Full

    @property
    def key(self) -> tuple:
        return segment_task_key(self.replica_id, self.segment.segment_id)

    @property
    def nodes(self) -> set[int]:
        return {n for n in (self.target, self.source) if n != NO_NODE}

    def __str__(self) -> str:
        return (f"segment {self.segment.segment_id} of collection {self.collection_id} "
                f"(replica {self.replica_id}): {self.source} -> {self.target} [{self.origin}]")


@dataclass
class ChannelTask:
    collection_id: int
    replica_id: int
    channel: str
    target: int = NO_NODE
    source: int = NO_NODE
    origin: str = ""
    priority: Priority = Priority.HIGH

    @property
    def key(self) -> tuple:
        return ("channel", self.replica_id, self.channel)

    @property
    def nodes(self) -> set[int]:
        return {n for n in (self.target, self.source) if n != NO_NODE}

    def __str__(self) -> str:
        return (f"channel {self.channel} (replica {self.replica_id}): {self.source} -> {self.target} "
                f"[{self.origin}]")


@dataclass
class LeaderTask:
    collection_id: int
    replica_id: int
    channel: str
    leader: int
    actions: list[query_coord_pb2.SyncAction] = field(default_factory=list)
    origin: str = ""
    priority: Priority = Priority.NORMAL

    @property
    def key(self) -> tuple:
        return ("leader", self.replica_id, self.channel)

    @property
    def nodes(self) -> set[int]:
        return {self.leader}

    def __str__(self) -> str:
        return f"sync leader of {self.channel} on node {self.leader}: {len(self.actions)} action(s) [{self.origin}]"


@dataclass
class IndexSaveTask:
    """Save the indexes ``node`` built at load for a segment, and record them in the catalog.

    One per segment, not per replica (the files are the segment's): keyed by the segment."""

    collection_id: int
    segment_id: int
    node: int
    fields: dict[int, int]   # vector field id -> the live index id the node serves
    origin: str = ""
    priority: Priority = Priority.LOW

    @property
    def key(self) -> tuple:
        return ("save-index", self.segment_id)

    @property
    def nodes(self) -> set[int]:
        return {self.node}

    def __str__(self) -> str:
        return f"save index of segment {self.segment_id} on node {self.node}: fields {sorted(self.fields)} [{self.origin}]"


Task = SegmentTask | ChannelTask | LeaderTask | IndexSaveTask
