"""DataCoord's seal and flush policy, and the explicit flush, as Milvus's ``datacoord`` seal policies
and ``Flush`` with DataNode's sync.

A channel's growing data is sealed when its open segments reach ``datacoord.segment_max_rows`` rows
or ``segment_max_mb`` megabytes, when it has open rows and no insert for ``flush_idle_s``, and on an
explicit :meth:`FlushPolicy.flush_collection`.  Every channel written through this process's
appenders is watched, of loaded collections or not (writes may go to a collection nobody searches).

One flush of a channel:

1. **seal** — ``appender.seal`` closes the channel's open growing segments at a fresh timestamp T
   and logs a time tick there (the barrier: every row of a sealed segment is at or below T, every
   later row goes to a new segment);
2. **sync** — :func:`~vecgrid.cluster.datanode.flush.flush_channel` up to T, in a thread: the log range
   becomes sealed segments **with the growing segments' ids**, an L0 segment of the deletes, and
   the new checkpoint, in one catalog transaction.  It leaves the log files to the WAL retention,
   which keeps what a target's seek position still needs;
3. **handoff** — the QueryCoord is asked for a next target at once (``pull_target``), so shard
   leaders load the sealed segments and, on adopting each, drop the growing rows of the same id:
   no gap, no duplicate.  Once the sealed copies serve (``sealed_copies_serve``: the current
   target holds them), ``appender.handed_off`` stops counting their rows as growing memory.

A rows-or-size seal and a flush are one step here (Milvus seals, then flushes once the segment's
last write is synced); the explicit flush returns once the segments are published.

Concurrency: one flush per channel at a time (a lock per channel).  Each request takes a number;
a flush covers every request numbered before it sealed, so a request that waited while a flush
sealed after it was made returns that flush's segments instead of flushing again (concurrent
explicit flushes of one collection share the work).  A flush runs as its own task, shielded from
its callers: a cancelled caller never leaves the log half-read by one flush while the next starts.

**Progress** (Milvus's ``Flush`` answering at once and ``GetFlushState`` telling when its segments are
flushed): every explicit flush of a collection is a :class:`FlushJob` with an id, started by
:meth:`FlushPolicy.start_flush` and read with :meth:`FlushPolicy.flush_state` — Executing, Completed or
Failed, and the share of the collection's channels flushed (a channel's seal and sync are one step: the
sync of its log range to segments runs in one storage call that reports nothing before it ends).  The
last :data:`KEPT_JOBS` ended jobs are kept; :meth:`FlushPolicy.flush_collection` is a job awaited.

Failures are never dropped: the caller of an explicit flush gets the error (a job started without a
caller keeps it as its ``error``); the channel's
bookkeeping keeps it, :meth:`FlushPolicy.health_problems` reports it until a flush of the channel
succeeds, and the periodic round retries the channel every ``check_interval_s``.  The sealed
segments of a failed attempt are handed off with those of the flush that succeeds (it reads the
same log range again).

After a restart the appenders know no growing segment; rows logged by the previous process wait in
the log after the checkpoint.  :meth:`FlushPolicy.recover` finds those channels; they are flushed
after ``flush_idle_s`` (or with the channel's next flush, which reads the whole range).

Who owns what: everything here belongs to the event loop — the per-channel bookkeeping, the list
of handoffs, the running flush tasks, the jobs.  The appenders guard their own state with their locks.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from vecgrid import errors
from vecgrid.cluster.datacoord.jobs import JobTable, retrieve
from vecgrid.cluster.periodic import Periodic
from vecgrid.cluster.streaming import ChannelAppender, ChannelAppenders, SealedChannel
from vecgrid.config import DataCoordSettings
from vecgrid.proto import data_coord_pb2
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.dml import TimeTick
from vecgrid.cluster.datanode.flush import flush_channel, has_unflushed_dml
from vecgrid.storage.wal import MessageKind

log = logging.getLogger(__name__)

MB = 1 << 20
#: ended flush jobs kept for :meth:`FlushPolicy.flush_state` (running ones are always kept)
KEPT_JOBS = 64
EXECUTING, COMPLETED, FAILED = "Executing", "Completed", "Failed"

SegmentInfo = data_coord_pb2.SegmentInfo
#: ``(collection id)``: ask the QueryCoord for a next target now (a no-op for a collection not loaded)
PullTarget = Callable[[int], None]
#: ``(collection id, published segments)``: whether their sealed copies serve (leaders dropped the
#: growing rows of the same ids), or nothing holds growing rows of them (collection not loaded)
SealedCopiesServe = Callable[[int, Sequence[SegmentInfo]], bool]


@dataclass
class _Handoff:
    """Segments published by a flush, waiting until their sealed copies serve."""

    collection_id: int
    sealed: list[tuple[ChannelAppender, SealedChannel]]
    segments: list[SegmentInfo]


@dataclass
class _ChannelFlushes:
    """One channel's flush bookkeeping (the event loop's)."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    requested: int = 0        # flush requests made so far; each took the next number
    covered: int = 0          # the requests the last successful flush covered
    last: list[SegmentInfo] = field(default_factory=list)   # what that flush published
    unpublished: list[tuple[ChannelAppender, SealedChannel]] = field(default_factory=list)
    error: BaseException | None = None        # of the last attempt, until one succeeds
    failing_since: float = 0.0
    recovered_at: float | None = None         # rows of an earlier process wait in the log


@dataclass
class FlushJob:
    """One explicit flush of a collection (the event loop's): which channels it flushes and which are
    done.  ``progress`` is the share of channels flushed, in % (100 once Completed)."""

    id: int
    collection_id: int
    channels: tuple[str, ...]
    flushed: dict[str, list[SegmentInfo]] = field(default_factory=dict)   # channel -> segments published
    error: str = ""
    task: asyncio.Task | None = None

    @property
    def state(self) -> str:
        if self.error:
            return FAILED
        return COMPLETED if len(self.flushed) == len(self.channels) else EXECUTING

    @property
    def progress(self) -> int:
        if not self.channels:
            return 100
        return len(self.flushed) * 100 // len(self.channels)

    @property
    def segments(self) -> list[SegmentInfo]:
        return [s for ch in self.channels for s in self.flushed.get(ch, ())]

    def to_dict(self) -> dict:
        """The job as plain data (the REST answer, the WriteService's GetFlushState)."""
        return {"flush_id": self.id, "collection_id": self.collection_id, "state": self.state,
                "progress": self.progress, "channels": len(self.channels), "channels_flushed": len(self.flushed),
                "segment_ids": [s.ID for s in self.segments], "error": self.error}


class FlushPolicy(Periodic):
    """See the module doc."""

    name = "flush policy"

    def __init__(self, catalog: Catalog, appenders: ChannelAppenders, segment_root: str,
                 settings: DataCoordSettings, *, pull_target: PullTarget,
                 sealed_copies_serve: SealedCopiesServe, source_id: Callable[[], int] = lambda: 0) -> None:
        super().__init__(settings.check_interval_s)
        self.catalog, self.appenders, self.segment_root = catalog, appenders, segment_root
        self.wal = appenders.wal
        self.max_rows = settings.segment_max_rows
        self.max_bytes = settings.segment_max_mb * MB
        self.idle_s = settings.flush_idle_s
        self.pull_target, self.sealed_copies_serve, self.source_id = pull_target, sealed_copies_serve, source_id
        self._channels: dict[str, _ChannelFlushes] = {}
        self._handoffs: list[_Handoff] = []
        self._running: set[asyncio.Task] = set()
        self._jobs: JobTable[FlushJob] = JobTable("flush", KEPT_JOBS)

    # --- lifecycle --------------------------------------------------------------------------------

    async def recover(self) -> None:
        """Find the channels whose log holds rows after the checkpoint (logged before this process)."""
        now = time.monotonic()
        for channel in await asyncio.to_thread(self._unflushed_channels):
            self._state(channel).recovered_at = now

    def _unflushed_channels(self) -> list[str]:
        return [channel for coll in self.catalog.all_collections() for channel in coll.vchannels
                if has_unflushed_dml(self.catalog, self.wal, channel)]

    async def stop(self) -> None:
        """Stop the policy, then wait for the flushes under way (a flush's thread cannot be stopped)."""
        await super().stop()
        await asyncio.gather(*self._running, *self._jobs.tasks(),
                             return_exceptions=True)

    # --- the policy -------------------------------------------------------------------------------

    async def round(self) -> None:
        # A failure is kept in the channel's bookkeeping (health, retry next round), logged by _serve.
        await asyncio.gather(*(self.flush_channel(ch) for ch in self.due_channels()), return_exceptions=True)
        self._hand_off()

    def due_channels(self) -> list[str]:
        """Channels whose open rows passed a threshold or went idle, that failed, or that hold rows of
        an earlier process for ``flush_idle_s``."""
        due = []
        for channel, appender in self.appenders.opened().items():
            rows, nbytes, _, idle_s = appender.stats()
            if rows >= self.max_rows or nbytes >= self.max_bytes or (rows and idle_s >= self.idle_s):
                due.append(channel)
        now = time.monotonic()
        for channel, state in self._channels.items():
            if channel not in due and (state.error is not None or (
                    state.recovered_at is not None and now - state.recovered_at >= self.idle_s)):
                due.append(channel)
        return due

    def health_problems(self) -> list[str]:
        now = time.monotonic()
        return [f"flush of channel {channel} failing for {now - s.failing_since:.0f} s: {s.error}"
                for channel, s in sorted(self._channels.items()) if s.error is not None]

    # --- flushing ---------------------------------------------------------------------------------

    async def flush_collection(self, collection_id: int) -> list[SegmentInfo]:
        """Seal and flush every channel of the collection; returns the segments published (sealed and
        L0) once they are.  Raises the first channel's failure after every channel finished."""
        job = await self.start_flush(collection_id)
        assert job.task is not None
        return await asyncio.shield(job.task)

    async def start_flush(self, collection_id: int) -> FlushJob:
        """Start flushing every channel of the collection; the job, at once (``CollectionNotFound``
        for an unknown id)."""
        coll = await asyncio.to_thread(self.catalog.get_collection, collection_id)
        job_id = await asyncio.to_thread(self.catalog.allocate_ids, 1)
        job = FlushJob(job_id, coll.id, tuple(coll.vchannels))
        return self._jobs.start(job, self._run_job(job))

    def flush_state(self, job_id: int) -> FlushJob:
        return self._jobs.get(job_id)

    def jobs(self, collection_id: int | None = None) -> list[FlushJob]:
        """The kept jobs (of one collection), newest first."""
        return self._jobs.newest_first(collection_id)

    @property
    def flushes_in_flight(self) -> int:
        return sum(1 for j in self._jobs.newest_first() if j.state == EXECUTING)

    async def _run_job(self, job: FlushJob) -> list[SegmentInfo]:
        async def one(channel: str) -> None:
            job.flushed[channel] = await self.flush_channel(channel)
        results = await asyncio.gather(*(one(ch) for ch in job.channels), return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            job.error = f"{failed[0]}" or type(failed[0]).__name__
            raise failed[0]
        return job.segments

    async def flush_channel(self, channel: str) -> list[SegmentInfo]:
        """Flush one channel (see the module doc for the sharing); the segments it published."""
        state = self._state(channel)
        state.requested += 1
        task = asyncio.ensure_future(self._serve(channel, state, state.requested))
        self._running.add(task)
        task.add_done_callback(self._finished)
        return await asyncio.shield(task)

    def _finished(self, task: asyncio.Task) -> None:
        self._running.discard(task)
        retrieve(task)

    def _state(self, channel: str) -> _ChannelFlushes:
        state = self._channels.get(channel)
        if state is None:
            state = self._channels[channel] = _ChannelFlushes()
        return state

    async def _serve(self, channel: str, state: _ChannelFlushes, ticket: int) -> list[SegmentInfo]:
        async with state.lock:
            if state.covered >= ticket:
                return state.last  # a flush that sealed after this request was made covered it
            try:
                covers, segments = await self._flush(channel, state)
            except BaseException as e:
                if state.error is None:
                    state.failing_since = time.monotonic()
                    log.warning("flush of channel %s failed; retried every %.1f s until it succeeds: %s",
                                channel, self.interval_s, e, exc_info=e)
                state.error = e if not isinstance(e, asyncio.CancelledError) else RuntimeError("flush cancelled")
                raise
            if state.error is not None:
                log.info("flush of channel %s succeeded after failing for %.0f s", channel,
                         time.monotonic() - state.failing_since)
            state.error, state.covered, state.last = None, covers, segments
            return segments

    async def _flush(self, channel: str, state: _ChannelFlushes) -> tuple[int, list[SegmentInfo]]:
        """One flush; returns the requests it covers (all made before its seal) and its segments."""
        covers = state.requested
        try:
            coll = await asyncio.to_thread(self.catalog.collection_of_channel, channel)
        except errors.ChannelNotFound:
            self._channels.pop(channel, None)  # dropped: nothing of it is kept or served
            return covers, []
        if not os.path.isdir(self.wal.channel_dir(channel)):
            return covers, []  # never written
        appender = await asyncio.to_thread(self.appenders.require, channel)  # may open (and recover) the log
        covers = state.requested  # the seal's timestamp is taken after every request made so far
        appended, sealed = await asyncio.to_thread(appender.seal, self._barrier)
        state.unpublished.append((appender, sealed))
        result = await asyncio.to_thread(flush_channel, self.catalog, self.wal, self.segment_root, channel,
                                         appended.timestamp, trim=False)
        segments = list(result.segments)
        self._handoffs.append(_Handoff(coll.id, state.unpublished, segments))
        state.unpublished, state.recovered_at = [], None
        if segments:
            log.info("channel %s flushed up to ts %d: segments %s", channel, appended.timestamp,
                     [s.ID for s in segments])
            try:
                self.pull_target(coll.id)
            except Exception:  # noqa: BLE001 - published all the same; the target observer pulls at its interval
                log.warning("collection %d: no next target pulled after the flush of %s; the target observer "
                            "pulls one at its next interval", coll.id, channel, exc_info=True)
        self._hand_off()
        return covers, segments

    def _barrier(self, ts: int) -> list[tuple[MessageKind, bytes]]:
        return [(MessageKind.TIMETICK, TimeTick(ts, self.source_id()).encode())]

    def _hand_off(self) -> None:
        """Stop counting the rows of flushed segments as growing once their sealed copies serve."""
        waiting = []
        for handoff in self._handoffs:
            try:
                served = self.sealed_copies_serve(handoff.collection_id, handoff.segments)
            except Exception:  # noqa: BLE001 - asked again next round; the rows stay counted meanwhile
                log.warning("cannot tell whether collection %d serves segments %s", handoff.collection_id,
                            [s.ID for s in handoff.segments], exc_info=True)
                served = False
            if served:
                for appender, sealed in handoff.sealed:
                    appender.handed_off(sealed)
            else:
                waiting.append(handoff)
        self._handoffs = waiting

    @property
    def handoffs_waiting(self) -> int:
        return len(self._handoffs)
