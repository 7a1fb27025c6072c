"""Which growing segment an insert goes to, and how big each one is (DataCoord's segment allocation).

A channel has at most one open growing segment per partition.  Rows are assigned to it until the
channel is sealed: :meth:`SegmentAssigner.seal` closes every open segment of the channel at once and
the next insert opens new ones.  Because the appender seals under the same lock it stamps records
with, every row of a sealed segment has a timestamp at or below the seal's, and every later row goes
to another segment: a flush up to the seal's timestamp turns exactly the sealed segments into sealed
segments **with the same ids** — which is how a shard leader knows which growing rows the sealed copy
replaces.

The sizes are estimates kept for the seal policy and the growing-memory quota; they restart at zero
with the process (rows logged before a restart are sealed by the next flush of their channel all the
same: the flush reads the log, not this table).

Owned by the channel's appender lock: every method is called with it held.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable


@dataclass
class GrowingStats:
    """One open growing segment."""

    segment_id: int
    partition_id: int
    rows: int = 0
    bytes: int = 0
    opened_at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class SealedChannel:
    """What :meth:`SegmentAssigner.seal` closed: the segments and their totals."""

    segments: tuple[GrowingStats, ...]

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.segments)

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.segments)


class SegmentAssigner:
    """The open growing segments of one channel, by partition."""

    def __init__(self, allocate_segment_id: Callable[[], int]) -> None:
        self._allocate = allocate_segment_id
        self._open: dict[int, GrowingStats] = {}
        self._sealed: list[SealedChannel] = []   # sealed, their rows still growing on the leader
        self.last_write = 0.0   # monotonic time of the last assigned insert (the idle-flush clock)

    def assign(self, partition_id: int, rows: int, nbytes: int) -> int:
        """The growing segment of ``partition_id`` that takes ``rows`` rows of ``nbytes`` bytes."""
        stats = self._open.get(partition_id)
        if stats is None:
            stats = self._open[partition_id] = GrowingStats(self._allocate(), partition_id)
        stats.rows += rows
        stats.bytes += nbytes
        self.last_write = time.monotonic()
        return stats.segment_id

    def seal(self) -> SealedChannel:
        """Close every open segment: later inserts go to new ones."""
        sealed = SealedChannel(tuple(self._open.values()))
        self._open = {}
        self._sealed.append(sealed)
        return sealed

    def handed_off(self, sealed: SealedChannel) -> None:
        """The sealed copy of ``sealed`` serves: its rows no longer count as growing."""
        self._sealed = [s for s in self._sealed if s is not sealed]

    def open_segments(self) -> list[GrowingStats]:
        return list(self._open.values())

    def logged_segments(self) -> list[GrowingStats]:
        """Copies of the segments whose rows are logged and may not be flushed yet: the open ones and
        the sealed ones not handed off (a flush publishes each as a sealed segment of the same id)."""
        sealed = [s for channel in self._sealed for s in channel.segments]
        return [replace(s) for s in [*self._open.values(), *sealed]]

    @property
    def rows(self) -> int:
        """Rows of the open segments (the seal policy's measure)."""
        return sum(s.rows for s in self._open.values())

    @property
    def bytes(self) -> int:
        """Bytes of the open segments (the seal policy's measure)."""
        return sum(s.bytes for s in self._open.values())

    @property
    def growing_bytes(self) -> int:
        """Bytes the leader holds as growing rows: open segments and sealed ones not handed off yet
        (the growing-memory quota's measure)."""
        return self.bytes + sum(s.bytes for s in self._sealed)
