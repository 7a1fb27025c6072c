"""Appending to a channel: :class:`WalWriter`, the one writer of a channel, and when it acknowledges.

Durability and acknowledgement
------------------------------
:meth:`WalWriter.append` returns only after the record is durable:

* ``fsync="group"`` (default): appends are written immediately and a background thread calls
  ``fdatasync`` at most every ``group_commit_ms`` (10 ms); every append waits for the next sync and
  all appends covered by one sync are acknowledged together. A sync starts at once when the previous
  one is older than the interval, so an isolated append is not delayed.
* ``fsync="always"``: every append (or ``append_many`` batch) is fsynced before it returns.
* ``fsync="never"``: acknowledged once written to the OS; survives a process crash, not power loss.

If an ``fdatasync`` fails the writer is poisoned: pending and later appends raise :class:`WalError`
and the channel must be reopened (retrying fsync after a failure can silently lose data).

After each sync the writer publishes the durable end offset in ``COMMITTED``. Readers never return a
record at or beyond it, so no reader ever sees a record that a crash could still take away.

One writer per channel
----------------------
Only one process may write a channel at a time: the writer holds an exclusive, non-blocking
``fcntl.flock`` on ``LOCK`` and a second writer (in any process) gets :class:`WalLockedError` naming
the holder's pid. A single owner per channel matches Milvus (one producer per vchannel, the shard
leader) and keeps appends free of cross-process locking, which is what makes group commit cheap; the
lock is released by the kernel if the owner dies, so a replacement can take over at once.
Opening a writer recovers the channel first (:mod:`.recovery`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import threading
import time
import zlib
from collections.abc import Iterable
from typing import Final, Literal

from ..fsutil import fsync_dir
from .format import (
    _UINT64,
    HEADER_SIZE,
    MAX_PAYLOAD_BYTES,
    MessageKind,
    Position,
    WalClosedError,
    WalError,
    WalLockedError,
    _check_channel,
    _encode_header,
    _encode_marker,
    _list_logs,
    _log_name,
    _offset_to_msg_id,
    _read_marker,
)
from .recovery import _recover_channel
from .retention import _truncate_before
from .wakeup import _signal_for

log = logging.getLogger(__package__)  # "vecgrid.storage.wal", the WAL's one logger

_IOV_BATCH: Final = 512

FsyncPolicy = Literal["group", "always", "never"]


class WalWriter:
    """The single appender of one channel. Thread-safe; use :meth:`Wal.open_writer` to create.

    ``last_timestamp`` is the timestamp of the last record appended (after a reopen: the last record
    of the active log file, or ``None`` if that file is empty).

    Owners of its state: ``_lock`` (``_durable_cond`` waits on it) owns the offsets, the active file
    (``_fd``, ``_file_first``, ``_file_size``, ``_generation``), ``last_timestamp``, ``_closed``,
    ``_failed`` and every write of ``COMMITTED``. ``_sync_lock`` is held around every ``fdatasync``
    of the group-commit thread and every roll to a new file, so ``_fd`` and ``_generation`` change
    only under both locks and the sync thread may use them under ``_sync_lock`` alone. That thread
    (``fsync="group"``) owns its own ``last_sync`` time. The fds are released only once it has
    stopped (or before it started).
    """

    def __init__(
        self,
        root: str,
        channel: str,
        *,
        fsync: FsyncPolicy = "group",
        group_commit_ms: float = 10.0,
        segment_bytes: int = 64 << 20,
    ) -> None:
        if fsync not in ("group", "always", "never"):
            raise ValueError(f"fsync must be 'group', 'always' or 'never', got {fsync!r}")
        if group_commit_ms < 0:
            raise ValueError("group_commit_ms must be >= 0")
        if segment_bytes < HEADER_SIZE:
            raise ValueError("segment_bytes too small")
        self.channel = _check_channel(channel)
        self.root = os.fspath(root)
        self.dir = os.path.join(self.root, channel)
        self.fsync_policy: FsyncPolicy = fsync
        self._interval = group_commit_ms / 1000.0
        self._segment_bytes = segment_bytes

        self._lock = threading.Lock()  # guards file state and offsets
        self._durable_cond = threading.Condition(self._lock)
        self._sync_lock = threading.Lock()  # held while fsyncing / rolling, so an fd is never closed under a sync
        self._signal = _signal_for(self.dir)
        self._closed = False
        self._failed: BaseException | None = None
        self._generation = 0  # bumped by every roll to a new log file
        self._lock_fd = -1
        self._fd = -1
        self._marker_fd = -1
        try:
            self._open()
        except BaseException:
            self._release_fds()
            raise
        self._signal.writer_opened()   # this process's readers wait on our notifications, not on a watch
        self._sync_thread: threading.Thread | None = None
        if fsync == "group":
            self._sync_thread = threading.Thread(target=self._sync_loop, name=f"wal-sync-{channel}", daemon=True)
            self._sync_thread.start()

    # -- opening ------------------------------------------------------------------------------

    def _open(self) -> None:
        created = not os.path.isdir(self.dir)
        os.makedirs(self.dir, exist_ok=True)
        if created:
            fsync_dir(self.root)
        self._lock_fd = os.open(os.path.join(self.dir, "LOCK"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                raise
            holder = os.pread(self._lock_fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise WalLockedError(
                f"WAL channel {self.channel!r} under {self.root!r} is already open for writing (holder pid {holder})"
            ) from None
        os.ftruncate(self._lock_fd, 0)
        os.pwrite(self._lock_fd, f"{os.getpid()}\n".encode(), 0)

        marker_path = os.path.join(self.dir, "COMMITTED")
        self._marker_fd = os.open(marker_path, os.O_RDWR | os.O_CREAT, 0o644)
        committed = _read_marker(self._marker_fd)

        firsts = _list_logs(self.dir)
        if not firsts:
            start = committed or 0  # never reuse offsets a previous incarnation handed out
            self._file_first = start
            self._fd = os.open(os.path.join(self.dir, _log_name(start)), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            fsync_dir(self.dir)
            self._file_size = 0
            self._next_offset = start
            self.last_timestamp: int | None = None
        else:
            first = firsts[-1]
            result = _recover_channel(self.dir, self.channel, first, committed)
            self._file_first = first
            self._fd = os.open(os.path.join(self.dir, _log_name(first)), os.O_WRONLY | os.O_APPEND)
            os.fdatasync(self._fd)  # records a killed predecessor wrote but never synced become durable now
            self._file_size = result.size
            self._next_offset = result.next_offset
            self.last_timestamp = result.last_timestamp
        self._durable_offset = self._next_offset
        self._publish(self._durable_offset)

    def _publish(self, offset: int) -> None:
        os.pwrite(self._marker_fd, _encode_marker(offset), 0)

    # -- properties ---------------------------------------------------------------------------

    @property
    def next_offset(self) -> int:
        """Offset the next appended record will get."""
        with self._lock:
            return self._next_offset

    @property
    def durable_offset(self) -> int:
        """Every record below this offset is durable (and visible to readers)."""
        with self._lock:
            return self._durable_offset

    def __repr__(self) -> str:
        return f"WalWriter({self.dir!r}, fsync={self.fsync_policy!r})"

    # -- appending ----------------------------------------------------------------------------

    def append(self, kind: MessageKind | int, timestamp: int, payload: bytes | bytearray | memoryview) -> Position:
        """Append one record; returns its position once it is durable (per the fsync policy)."""
        return self.append_many([(kind, timestamp, payload)])[0]

    def append_many(
        self, records: Iterable[tuple[MessageKind | int, int, bytes | bytearray | memoryview]]
    ) -> list[Position]:
        """Append records in order with one write; returns their positions once all are durable."""
        positions = self.write_many(records)
        if positions:
            self.wait_durable(positions[-1].offset + 1)
        return positions

    def write_many(
        self, records: Iterable[tuple[MessageKind | int, int, bytes | bytearray | memoryview]]
    ) -> list[Position]:
        """Write records in order with one write and return their positions at once, before they are
        durable: :meth:`wait_durable` (``positions[-1].offset + 1``) before acknowledging them.  A caller
        that must order records by something it decides under its own lock (timestamps) writes under
        that lock and waits outside it, so that concurrent writers still share one sync."""
        prepared: list[tuple[int, int, memoryview, int]] = []
        for kind, timestamp, payload in records:
            kind = int(kind)
            if not 0 <= kind < 1 << 16:
                raise ValueError(f"record kind {kind} out of range")
            if not 0 <= timestamp < _UINT64:
                raise ValueError(f"timestamp {timestamp} is not a uint64")
            view = memoryview(payload).cast("B")
            if len(view) > MAX_PAYLOAD_BYTES:
                raise ValueError(f"payload of {len(view)} bytes exceeds {MAX_PAYLOAD_BYTES}")
            prepared.append((kind, timestamp, view, zlib.crc32(view)))  # CRC of the payload outside the lock
        if not prepared:
            return []
        with self._lock:
            self._check_usable()
            positions, end = self._write_locked(prepared)
            if self.fsync_policy == "always":
                self._sync_locked(end)
            elif self.fsync_policy == "never":
                self._durable_offset = end
                self._publish(end)
            else:
                self._durable_cond.notify_all()  # wake the sync thread
        if self.fsync_policy != "group":
            self._signal.notify()
        return positions

    def wait_durable(self, end: int) -> None:
        """Block until every record below offset ``end`` is durable; raises :class:`WalError` if a sync
        failed (the records may be lost: never acknowledge them)."""
        with self._lock:
            while self._durable_offset < end:
                if self._failed is not None:
                    raise WalError(f"WAL channel {self.channel!r} failed: {self._failed}") from self._failed
                self._durable_cond.wait()

    def _check_usable(self) -> None:
        if self._closed:
            raise WalClosedError(f"{self!r} is closed")
        if self._failed is not None:
            raise WalError(
                f"WAL channel {self.channel!r} failed and must be reopened: {self._failed}"
            ) from self._failed

    def _write_locked(self, prepared: list[tuple[int, int, memoryview, int]]) -> tuple[list[Position], int]:
        if self._file_size >= self._segment_bytes:
            try:
                self._roll_locked()
            except OSError as exc:
                self._failed = exc  # the file state is unknown now; refuse further appends
                raise WalError(f"WAL channel {self.channel!r} could not start a new log file: {exc}") from exc
        positions = []
        iov: list[bytes | memoryview] = []
        off = self._next_offset
        for kind, timestamp, view, payload_crc in prepared:
            iov.append(_encode_header(kind, off, timestamp, len(view), payload_crc))
            iov.append(view)
            positions.append(Position(self.channel, _offset_to_msg_id(off), timestamp))
            off += 1
        total = sum(len(b) for b in iov)
        try:
            self._writev_all(iov, total)
        except OSError as exc:
            # Undo a partial write so the file never holds a half record followed by good ones.
            try:
                os.ftruncate(self._fd, self._file_size)
            except OSError:
                self._failed = exc
            raise WalError(f"WAL append to {self.channel!r} failed: {exc}") from exc
        self._file_size += total
        self._next_offset = off
        self.last_timestamp = prepared[-1][1]
        return positions, off

    def _writev_all(self, iov: list[bytes | memoryview], total: int) -> None:
        written = 0
        i = 0
        while written < total:
            n = os.writev(self._fd, iov[i : i + _IOV_BATCH])
            written += n
            # drop fully written buffers, keep the remainder of a partially written one
            while i < len(iov) and n >= len(iov[i]):
                n -= len(iov[i])
                i += 1
            if n:
                iov[i] = memoryview(iov[i])[n:]

    def _roll_locked(self) -> None:
        """Start a new log file. The old one is fully synced first, so only the last file can be torn."""
        with self._sync_lock:
            os.fdatasync(self._fd)
            os.close(self._fd)
            self._fd = -1
            first = self._next_offset
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
            self._fd = os.open(os.path.join(self.dir, _log_name(first)), flags, 0o644)
            fsync_dir(self.dir)
            self._file_first = first
            self._file_size = 0
            self._generation += 1

    def _sync_locked(self, end: int) -> None:
        try:
            os.fdatasync(self._fd)
        except OSError as exc:
            self._failed = exc
            raise WalError(f"fsync of WAL channel {self.channel!r} failed: {exc}") from exc
        self._durable_offset = end
        self._publish(end)

    def _sync_loop(self) -> None:
        try:
            self._sync_loop_inner()
        except BaseException as exc:  # never leave appenders waiting on a dead thread
            log.exception("WAL %s: sync thread failed, channel is poisoned", self.channel)
            with self._lock:
                if self._failed is None:
                    self._failed = exc
                self._durable_cond.notify_all()

    def _sync_loop_inner(self) -> None:
        last_sync = 0.0
        while True:
            with self._lock:
                while self._durable_offset == self._next_offset and not self._closed:
                    self._durable_cond.wait()
                if self._durable_offset == self._next_offset:  # closed and drained
                    return
            delay = last_sync + self._interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            with self._lock:
                target = self._next_offset
                fd = self._fd
                generation = self._generation
            last_sync = time.monotonic()
            try:
                with self._sync_lock:
                    # If the file rolled since the snapshot, the roll already synced everything below target.
                    if generation == self._generation:
                        os.fdatasync(fd)
            except OSError as exc:
                log.error("WAL %s: fdatasync failed, channel is poisoned: %s", self.channel, exc)
                with self._lock:
                    self._failed = exc
                    self._durable_cond.notify_all()
                return
            with self._lock:
                if target > self._durable_offset:
                    self._durable_offset = target
                    self._publish(target)
                self._durable_cond.notify_all()
            self._signal.notify()

    def sync(self) -> None:
        """Make every record appended so far durable now (useful with ``fsync="never"``)."""
        with self._lock:
            self._check_usable()
            with self._sync_lock:
                self._sync_locked(self._next_offset)
        self._signal.notify()

    # -- retention / closing ------------------------------------------------------------------

    def truncate_before(self, position: Position) -> list[str]:
        """Same as :meth:`Wal.truncate_before`; provided on the writer for convenience."""
        return _truncate_before(self.dir, self.channel, position)

    def close(self) -> None:
        """Sync what was appended, stop the sync thread, release the channel lock. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._durable_cond.notify_all()
        try:
            if self._sync_thread is not None:
                self._sync_thread.join()
            with self._lock:
                if self._failed is None and self._fd >= 0:
                    with self._sync_lock:
                        with contextlib.suppress(WalError):
                            self._sync_locked(self._next_offset)
                self._release_fds()
        finally:
            self._signal.writer_closed()   # this process's readers watch the mark from now on

    def _release_fds(self) -> None:
        for name in ("_fd", "_marker_fd", "_lock_fd"):  # closing LOCK releases the flock last
            fd = getattr(self, name, -1)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, -1)

    def __enter__(self) -> WalWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
