"""One appender per DML channel: the only place records are stamped and logged, so that a channel's
records are in timestamp order.

A record's timestamp comes from the coordinator's oracle.  If two writers took timestamps and then
appended in the other order, a shard leader would pass tsafe beyond the later-appended record's
timestamp before reading it, and a read at that timestamp would miss it.  So :meth:`ChannelAppender.append`
takes the timestamp, builds the payloads with it and writes them under the channel's lock, and waits
for durability outside it (writers of one channel still share a group commit).  Writes, time ticks
and the flush barrier all go through here.

Read-your-writes: :attr:`ChannelAppender.acknowledged_ts` is the timestamp of the newest durable
record.  Every write acknowledged to a client has a timestamp at or below it, so a Strong read that
waits for a leader's tsafe to reach it (not a fresh oracle timestamp, which only the next time tick
would pass) sees every acknowledged write and costs nothing on a channel the leader has caught up
with.  Until this process has appended to a channel it does not know that timestamp, and a Strong
read takes a fresh one.

One request, several channels: a write whose rows hash to several channels must still be ONE timestamp
(Milvus stamps an insert once, whatever channels it spans).  :meth:`ChannelAppenders.append_many` takes
the locks of every channel involved, in channel-name order (so two such writes, or one and a single-channel
append, never wait on each other in a cycle), stamps once, builds every channel's records and only then
writes them, one ``write_many`` per channel, and waits for all of them outside the locks.  Building all
payloads before writing any keeps a bad payload from leaving one channel written and the other not; a
log that fails between two channels' writes (a disk error) can still leave the first channel's records
logged while the request raises — as a Milvus insert whose second channel's produce fails.

Who owns what: ``_lock`` (one per channel) guards the writer's order, the segment assigner and the
sealed list; ``acknowledged_ts`` is written under ``_ack_lock`` and read without it (one reference).
:class:`ChannelAppenders` opens appenders under its own lock.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from vecgrid.cluster.streaming.segment_assign import GrowingStats, SealedChannel, SegmentAssigner
from vecgrid.common.histogram import CumulativeHistogram
from vecgrid.storage.wal import MessageKind, Position, Wal, WalLockedError, WalWriter

log = logging.getLogger(__name__)

RETRY_LOCKED_S = 10.0

Record = tuple[MessageKind | int, bytes | bytearray | memoryview]


@dataclass(frozen=True)
class Appended:
    """A durable append: its timestamp and the records' positions."""

    timestamp: int
    positions: list[Position]


class ChannelAppender:
    """The appender of one channel; see the module doc."""

    def __init__(self, writer: WalWriter, allocate_timestamp: Callable[[], int],
                 allocate_segment_id: Callable[[], int]) -> None:
        self.channel = writer.channel
        self.writer = writer
        self._allocate_ts = allocate_timestamp
        self._lock = threading.Lock()
        self._ack_lock = threading.Lock()
        self.segments = SegmentAssigner(allocate_segment_id)
        self.acknowledged_ts = 0
        #: append-to-durable seconds (``vecgrid_wal_append_latency_seconds``); shared by the channels of one
        #: ChannelAppenders, which sets it
        self.append_latency = CumulativeHistogram()

    def append(self, build: Callable[[int], Iterable[Record]]) -> Appended:
        """Stamp, build and log records; returns once they are durable.  ``build(ts)`` runs under the
        channel's lock with the write's timestamp and returns the ``(kind, payload)`` records; it may
        assign growing segments (:attr:`segments`).  A failure anywhere writes nothing that is
        acknowledged: it raises."""
        started = time.perf_counter()
        with self._lock:
            ts = self._allocate_ts()
            positions = self.writer.write_many([(kind, ts, payload) for kind, payload in build(ts)])
        done = self._acknowledge(ts, positions)
        self.append_latency.observe(time.perf_counter() - started)
        return done

    def seal(self, build: Callable[[int], Iterable[Record]] = lambda ts: ()) -> tuple[Appended, SealedChannel]:
        """Close the channel's open growing segments at a fresh timestamp (the flush barrier: every row
        of a sealed segment is at or below it, every later row is in another segment), logging what
        ``build(ts)`` returns (a time tick, so that readers see the barrier)."""
        with self._lock:
            ts = self._allocate_ts()
            sealed = self.segments.seal()
            positions = self.writer.write_many([(kind, ts, payload) for kind, payload in build(ts)])
        return self._acknowledge(ts, positions), sealed

    def handed_off(self, sealed: SealedChannel) -> None:
        with self._lock:
            self.segments.handed_off(sealed)

    def stats(self) -> tuple[int, int, int, float]:
        """(open rows, open bytes, growing bytes, seconds since the last insert) of the channel."""
        with self._lock:
            s = self.segments
            idle = time.monotonic() - s.last_write if s.last_write else float("inf")
            return s.rows, s.bytes, s.growing_bytes, idle

    def logged_segments(self) -> list[GrowingStats]:
        """:meth:`SegmentAssigner.logged_segments`, under the channel's lock."""
        with self._lock:
            return self.segments.logged_segments()

    def _acknowledge(self, ts: int, positions: list[Position]) -> Appended:
        if positions:
            self.writer.wait_durable(positions[-1].offset + 1)
            with self._ack_lock:
                self.acknowledged_ts = max(self.acknowledged_ts, ts)
        return Appended(ts, positions)


class InsertedRows:
    """Rows the write path logged durably, by collection and operation (``insert`` / ``upsert``), since the
    process started: what the dashboard's rows/s and ``vecgrid_proxy_inserted_rows_total`` count.  The
    writer adds a write's row count once its records are durable (one addition per request, not per row);
    ``_lock`` guards the counts (writers run in worker threads)."""

    OPS = ("insert", "upsert")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[int, dict[str, int]] = {}   # collection id -> op -> rows

    def add(self, collection_id: int, rows: int, op: str = "insert") -> None:
        with self._lock:
            counts = self._counts.setdefault(collection_id, dict.fromkeys(self.OPS, 0))
            counts[op] += rows

    def snapshot(self) -> dict[str, int]:
        """Rows by operation, all collections together."""
        with self._lock:
            return {op: sum(c[op] for c in self._counts.values()) for op in self.OPS}

    def by_collection(self) -> dict[int, dict[str, int]]:
        with self._lock:
            return {cid: dict(counts) for cid, counts in self._counts.items()}


class ChannelAppenders:
    """The coordinator's appenders, opened on first use.  A channel another process holds open (a bulk
    tool, a test) has none for ``RETRY_LOCKED_S``: :meth:`get` answers None, :meth:`require` raises."""

    def __init__(self, wal: Wal, allocate_timestamp: Callable[[], int],
                 allocate_segment_id: Callable[[], int]) -> None:
        self.wal = wal
        self._allocate_ts = allocate_timestamp
        self._allocate_segment_id = allocate_segment_id
        self._appenders: dict[str, ChannelAppender] = {}
        self._locked_until: dict[str, float] = {}
        self._lock = threading.Lock()
        self.append_latency = CumulativeHistogram()  # every channel's appends, until durable
        self.inserted_rows = InsertedRows()          # rows of acknowledged inserts and upserts

    def get(self, channel: str) -> ChannelAppender | None:
        with self._lock:
            a = self._appenders.get(channel)
            if a is not None:
                return a
            if time.monotonic() < self._locked_until.get(channel, 0.0):
                return None
            try:
                writer = self.wal.open_writer(channel)
            except WalLockedError:
                log.info("channel %s is held by another writer; not appending to it from here for now", channel)
                self._locked_until[channel] = time.monotonic() + RETRY_LOCKED_S
                return None
            a = self._appenders[channel] = ChannelAppender(writer, self._allocate_ts, self._allocate_segment_id)
            a.append_latency = self.append_latency
            return a

    def require(self, channel: str) -> ChannelAppender:
        a = self.get(channel)
        if a is None:
            raise WalLockedError(f"channel {channel} is held by another writer")
        return a

    def append_many(self, builds: Mapping[str, Callable[[int], Iterable[Record]]]) -> Appended:
        """Stamp ONE timestamp for records on several channels (see the module doc): ``builds[channel](ts)``
        runs under every involved channel's lock and returns that channel's records; returns once all
        are durable, with the positions of every channel's records."""
        started = time.perf_counter()
        appenders = [self.require(channel) for channel in sorted(builds)]
        with contextlib.ExitStack() as held:
            for a in appenders:
                held.enter_context(a._lock)
            ts = self._allocate_ts()
            records = [[(kind, ts, payload) for kind, payload in builds[a.channel](ts)] for a in appenders]
            written = [a.writer.write_many(r) for a, r in zip(appenders, records)]
        positions: list[Position] = []
        for a, p in zip(appenders, written):
            positions.extend(a._acknowledge(ts, p).positions)
        self.append_latency.observe(time.perf_counter() - started)
        return Appended(ts, positions)

    def opened(self) -> dict[str, ChannelAppender]:
        with self._lock:
            return dict(self._appenders)

    def acknowledged_ts(self, channel: str) -> int:
        """The newest durable timestamp this process logged on ``channel``; 0 when it logged none."""
        with self._lock:
            a = self._appenders.get(channel)
        return a.acknowledged_ts if a is not None else 0

    def drop(self, channel: str) -> None:
        """Close a channel's appender (its collection was dropped)."""
        with self._lock:
            a = self._appenders.pop(channel, None)
        if a is not None:
            a.writer.close()

    def close(self) -> None:
        with self._lock:
            appenders, self._appenders = list(self._appenders.values()), {}
        for a in appenders:
            a.writer.close()
