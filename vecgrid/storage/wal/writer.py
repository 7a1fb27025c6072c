"""Durable append-only log per DML channel (the write-ahead log behind every acknowledged write).

Milvus writes DML to a message queue (Pulsar, Kafka, RocksMQ) per virtual channel and consumers seek
to ``msgpb.MsgPosition`` checkpoints. vecgrid's embedded equivalent is a directory of log files per
channel; a Kafka-backed channel or a remote streaming reader can later implement the same
:class:`ChannelReader` interface.

On-disk layout
--------------
::

    <root>/<channel>/                      e.g. <root>/by-dev-rootcoord-dml_0_449123v0/
        00000000000000000000.log           log files, named by the offset of their first record,
        00000000000000041873.log           zero-padded to 20 digits so names sort numerically
        LOCK                               flock()ed by the one writer process; holds its pid
        COMMITTED                          durable end offset, published after every sync

A record's *offset* is its sequence number in the channel (0, 1, 2, ... across files), like a Kafka
offset. A log file holds consecutive records, each framed as (little-endian)::

    length:u32 | crc32:u32 | version:u8=1 | flags:u8=0 | kind:u16 | offset:u64 | timestamp:u64 | payload

``length`` counts everything after the crc (20 header bytes + payload). ``crc32`` (zlib) covers the
payload followed by the 20 header bytes -- payload first so that its CRC can be computed outside the
writer lock. Storing the offset in every record lets a reader prove it is where it thinks it is.
``kind`` uses Milvus's ``commonpb.MsgType`` numbers (Insert 400, Delete 401, TimeTick 1200).

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

Recovery
--------
When a writer opens a channel it scans the last log file (earlier files were fsynced before the
writer moved past them, so only the last one can have a torn tail). A partial record at the end, a
record whose bytes run past the end of the file, a bad record that is the last thing in the file, or
a zero-filled tail is a torn write: it is cut off (``ftruncate`` + fsync) and logged, never misread.
A torn write can only damage records that were never acknowledged, i.e. at or after the
``COMMITTED`` offset (the last acknowledged record is tolerated too, as a lost final page). So a bad
record in the middle of the file, or a tail whose cut would drop earlier acknowledged records,
raises :class:`WalCorruptionError` and nothing is cut. Readers never cut anything; they raise
:class:`WalCorruptionError` on any bad record below the committed offset.

Positions and reading
---------------------
:class:`Position` holds the fields of Milvus ``msgpb.MsgPosition``: ``channel_name``, ``msg_id`` (the
record offset as 8 big-endian bytes) and ``timestamp``. ``open_reader(channel, start)`` starts
*after* ``start`` by default (a checkpoint names the last record consumed), or *at* it with
``inclusive=True``; ``start=None`` reads from the earliest record kept, ``"latest"`` only new ones.
``read(timeout)`` tails the log: an in-process reader is woken by a condition variable when the
writer syncs; a reader in another process polls ``COMMITTED`` every ``poll_interval`` (5 ms).

Retention
---------
``truncate_before(position)`` deletes log files whose records all have offsets below the position's,
never the last (active) file; the record at ``position`` itself is kept.
"""

from __future__ import annotations

import bisect
import contextlib
import enum
import errno
import fcntl
import logging
import os
import re
import struct
import threading
import time
import weakref
import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, Literal

from ..fsutil import fsync_dir

__all__ = [
    "MessageKind",
    "Position",
    "WalRecord",
    "ChannelReader",
    "Wal",
    "WalWriter",
    "WalReader",
    "WalError",
    "WalCorruptionError",
    "WalLockedError",
    "WalTruncatedError",
    "WalClosedError",
    "FsyncPolicy",
    "MAX_PAYLOAD_BYTES",
]

log = logging.getLogger(__package__)  # "vecgrid.storage.wal", the WAL's one logger

_HEADER: Final = struct.Struct("<IIBBHQQ")  # length, crc, version, flags, kind, offset, timestamp
HEADER_SIZE: Final = _HEADER.size  # 28
_HEADER_TAIL: Final = struct.Struct("<BBHQQ")  # the 20 bytes after the crc
_TAIL_SIZE: Final = _HEADER_TAIL.size
_PREFIX: Final = struct.Struct("<II")
_RECORD_VERSION: Final = 1
#: Largest payload a single record may carry.
MAX_PAYLOAD_BYTES: Final = 256 << 20
_MAX_LENGTH: Final = MAX_PAYLOAD_BYTES + _TAIL_SIZE
_MARKER: Final = struct.Struct("<4sQI")  # magic, committed end offset, crc32(magic + offset)
_MARKER_MAGIC: Final = b"VGCM"
_LOG_NAME = re.compile(r"^(\d{20})\.log$")
_CHANNEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,254}$")
_SCAN_CHUNK: Final = 1 << 20
_IOV_BATCH: Final = 512
_UINT64: Final = 1 << 64

FsyncPolicy = Literal["group", "always", "never"]


class WalError(Exception):
    """Base class for WAL errors."""


class WalCorruptionError(WalError):
    """A record that should be valid is not (bad CRC, bad framing, wrong offset, missing file)."""


class WalLockedError(WalError):
    """Another writer holds the channel's lock."""


class WalTruncatedError(WalError):
    """The requested position was deleted by :meth:`Wal.truncate_before`."""


class WalClosedError(WalError):
    """The writer or reader was closed."""


class MessageKind(enum.IntEnum):
    """Record kinds, numbered like Milvus ``commonpb.MsgType``."""

    INSERT = 400
    DELETE = 401
    TIMETICK = 1200


def _offset_to_msg_id(offset: int) -> bytes:
    return offset.to_bytes(8, "big")


@dataclass(frozen=True)
class Position:
    """A point in a channel, with the fields of Milvus ``msgpb.MsgPosition``.

    ``msg_id`` is the record offset as 8 big-endian bytes (opaque to callers, as in Milvus);
    ``timestamp`` is the record's hybrid timestamp. Convert with :meth:`to_msg_position_kwargs` /
    :meth:`from_msg_position` -- no protobuf import is needed here.
    """

    channel_name: str
    msg_id: bytes
    timestamp: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.msg_id, bytes) or len(self.msg_id) != 8:
            raise ValueError(f"msg_id must be 8 bytes (a big-endian record offset), got {self.msg_id!r}")
        if not 0 <= self.timestamp < _UINT64:
            raise ValueError(f"timestamp {self.timestamp} is not a uint64")

    @classmethod
    def at(cls, channel_name: str, offset: int, timestamp: int = 0) -> Position:
        """Position of the record with ``offset`` in ``channel_name``."""
        if not 0 <= offset < 1 << 63:
            raise ValueError(f"offset {offset} out of range")
        return cls(channel_name, _offset_to_msg_id(offset), timestamp)

    @property
    def offset(self) -> int:
        return int.from_bytes(self.msg_id, "big")

    def to_msg_position_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``msgpb.MsgPosition(**kwargs)`` (proto field names)."""
        return {"channel_name": self.channel_name, "msgID": self.msg_id, "msgGroup": "", "timestamp": self.timestamp}

    @classmethod
    def from_msg_position(cls, msg: object) -> Position:
        """Build from a ``msgpb.MsgPosition`` (or anything with its attribute names, or a dict)."""
        if isinstance(msg, dict):
            return cls(str(msg["channel_name"]), bytes(msg["msgID"]), int(msg.get("timestamp", 0)))
        return cls(str(msg.channel_name), bytes(msg.msgID), int(msg.timestamp))  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"Position({self.channel_name!r}, offset={self.offset}, timestamp={self.timestamp})"


@dataclass(frozen=True)
class WalRecord:
    """One record read back from a channel."""

    position: Position
    kind: MessageKind | int
    payload: bytes

    @property
    def offset(self) -> int:
        return self.position.offset

    @property
    def timestamp(self) -> int:
        return self.position.timestamp

    @property
    def channel_name(self) -> str:
        return self.position.channel_name


class ChannelReader(ABC):
    """Consumer of one DML channel; the interface a Kafka or remote streaming reader also implements.

    A reader is used by one thread at a time. Iterating yields the records available now and stops;
    :meth:`read` waits for the next one.
    """

    @property
    @abstractmethod
    def channel(self) -> str:
        """Channel name."""

    @property
    @abstractmethod
    def position(self) -> Position | None:
        """Position of the last record returned, or ``None`` before the first."""

    @abstractmethod
    def read(self, timeout: float | None = None) -> WalRecord | None:
        """Next record, waiting up to ``timeout`` seconds (forever if ``None``); ``None`` on timeout."""

    @abstractmethod
    def seek(self, start: Position | Literal["earliest", "latest"] | None, *, inclusive: bool = False) -> None:
        """Continue after ``start`` (or at it, with ``inclusive``); see :meth:`Wal.open_reader`."""

    @abstractmethod
    def close(self) -> None:
        """Release resources. Idempotent."""

    def __iter__(self) -> Iterator[WalRecord]:
        while (record := self.read(timeout=0)) is not None:
            yield record

    def __enter__(self) -> ChannelReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------
# helpers shared by writer and reader


def _check_channel(channel: str) -> str:
    if not isinstance(channel, str) or not _CHANNEL_NAME.match(channel):
        raise ValueError(f"invalid channel name {channel!r} (letters, digits, '_', '-', '.'; max 255)")
    return channel


def _log_name(first_offset: int) -> str:
    return f"{first_offset:020d}.log"


def _list_logs(channel_dir: str) -> list[int]:
    """First offsets of the channel's log files, ascending."""
    try:
        names = os.listdir(channel_dir)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for n in names if (m := _LOG_NAME.match(n)))




def _read_marker(fd: int) -> int | None:
    """Committed end offset from an open COMMITTED file, or ``None`` if absent/unreadable."""
    for _ in range(3):  # a concurrent pwrite can be observed half-done; it never stays so
        raw = os.pread(fd, _MARKER.size, 0)
        if len(raw) < _MARKER.size:
            return None
        magic, offset, crc = _MARKER.unpack(raw)
        if magic == _MARKER_MAGIC and zlib.crc32(raw[:12]) == crc:
            return offset
    return None


def _encode_marker(offset: int) -> bytes:
    head = struct.pack("<4sQ", _MARKER_MAGIC, offset)
    return head + struct.pack("<I", zlib.crc32(head))


def _read_marker_at(channel_dir: str) -> int | None:
    try:
        fd = os.open(os.path.join(channel_dir, "COMMITTED"), os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return _read_marker(fd)
    finally:
        os.close(fd)


def _pread_exact(fd: int, n: int, pos: int) -> bytes:
    """pread that retries short reads (a short result means EOF)."""
    data = os.pread(fd, n, pos)
    if len(data) == n or not data:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = os.pread(fd, n - got, pos + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _all_zero(fd: int, start: int, end: int) -> bool:
    pos = start
    while pos < end:
        chunk = os.pread(fd, min(_SCAN_CHUNK, end - pos), pos)
        if not chunk or chunk.count(0) != len(chunk):
            return False
        pos += len(chunk)
    return True


class _ChannelSignal:
    """Per-channel condition shared by the writer and readers of one process."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.version = 0

    def notify(self) -> None:
        with self.cond:
            self.version += 1
            self.cond.notify_all()


_signals: weakref.WeakValueDictionary[str, _ChannelSignal] = weakref.WeakValueDictionary()
_signals_lock = threading.Lock()


def _signal_for(channel_dir: str) -> _ChannelSignal:
    key = os.path.realpath(channel_dir)
    with _signals_lock:
        sig = _signals.get(key)
        if sig is None:
            sig = _ChannelSignal()
            _signals[key] = sig
        return sig


@dataclass
class _ScanResult:
    size: int  # bytes of valid records
    next_offset: int
    last_timestamp: int | None


def _recover_file(path: str, first_offset: int, committed: int | None) -> _ScanResult:
    """Validate every record of the last log file and cut a torn tail (see module docstring)."""
    fd = os.open(path, os.O_RDWR)
    try:
        file_size = os.fstat(fd).st_size
        pos, off, last_ts = 0, first_offset, None
        problem: str | None = None
        torn = False
        while pos < file_size:
            remaining = file_size - pos
            if remaining < HEADER_SIZE:
                problem, torn = f"partial header ({remaining} of {HEADER_SIZE} bytes)", True
                break
            header = os.pread(fd, HEADER_SIZE, pos)
            length, crc, version, _flags, _kind, roff, ts = _HEADER.unpack(header)
            plausible = version == _RECORD_VERSION and roff == off and _TAIL_SIZE <= length <= _MAX_LENGTH
            end = pos + 8 + length
            if not plausible:
                problem = "invalid record header"
                torn = _all_zero(fd, pos, file_size)
                break
            if end > file_size:
                problem, torn = f"incomplete record ({file_size - pos} of {8 + length} bytes)", True
                break
            payload = _pread_exact(fd, length - _TAIL_SIZE, pos + HEADER_SIZE)
            if zlib.crc32(header[8:], zlib.crc32(payload)) != crc:
                problem = "CRC mismatch"
                torn = end == file_size or _all_zero(fd, end, file_size)
                break
            pos, off, last_ts = end, off + 1, ts
        if problem is None:
            return _ScanResult(pos, off, last_ts)
        where = f"{path} at byte {pos} (record offset {off})"
        # A torn write only ever damages records at or after the committed mark (they were never
        # acknowledged); the last acknowledged record is tolerated too (a lost final page). Anything
        # that would cut earlier acknowledged records is corruption, whatever it looks like.
        if committed is not None and (off < committed - 1 or (not torn and off < committed)):
            raise WalCorruptionError(
                f"corrupt WAL record in {where}: {problem}; records up to offset {committed - 1} "
                "were acknowledged, refusing to cut them"
            )
        if committed is not None and off < committed:
            log.error("WAL %s: cutting torn tail (%s); acknowledged record %d is lost", where, problem, off)
        else:
            log.warning("WAL %s: cutting torn tail (%s), %d bytes", where, problem, file_size - pos)
        os.ftruncate(fd, pos)
        os.fsync(fd)
        return _ScanResult(pos, off, last_ts)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# writer


class WalWriter:
    """The single appender of one channel. Thread-safe; use :meth:`Wal.open_writer` to create.

    ``last_timestamp`` is the timestamp of the last record appended (after a reopen: the last record
    of the active log file, or ``None`` if that file is empty).
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
            path = os.path.join(self.dir, _log_name(first))
            result = _recover_file(path, first, committed)
            if committed is not None and result.next_offset < committed - 1:
                raise WalCorruptionError(
                    f"WAL channel {self.channel!r} ends at offset {result.next_offset} but records up to "
                    f"{committed - 1} were acknowledged (a log file is missing or was truncated)"
                )
            self._file_first = first
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
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
            tail = _HEADER_TAIL.pack(_RECORD_VERSION, 0, kind, off, timestamp)
            crc = zlib.crc32(tail, payload_crc)
            iov.append(_PREFIX.pack(_TAIL_SIZE + len(view), crc) + tail)
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
        if self._sync_thread is not None:
            self._sync_thread.join()
        with self._lock:
            if self._failed is None and self._fd >= 0:
                with self._sync_lock:
                    with contextlib.suppress(WalError):
                        self._sync_locked(self._next_offset)
            self._release_fds()
        self._signal.notify()

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


# ---------------------------------------------------------------------------------------------
# reader


class WalReader(ChannelReader):
    """Reads one channel from a position on; tails it with :meth:`read`. Use :meth:`Wal.open_reader`."""

    def __init__(
        self,
        root: str,
        channel: str,
        start: Position | Literal["earliest", "latest"] | None = None,
        *,
        inclusive: bool = False,
        poll_interval: float = 0.005,
    ) -> None:
        self._channel = _check_channel(channel)
        self.root = os.fspath(root)
        self.dir = os.path.join(self.root, channel)
        self._poll = max(0.0005, poll_interval)
        self._signal = _signal_for(self.dir)
        self._marker_fd = -1
        self._fd = -1
        self._file_first = -1
        self._file_pos = 0
        self._next_offset = 0
        self._position: Position | None = None
        self._known_committed: int | None = None
        self._closed = False
        self.seek(start, inclusive=inclusive)

    @property
    def channel(self) -> str:
        return self._channel

    @property
    def position(self) -> Position | None:
        return self._position

    @property
    def next_offset(self) -> int:
        """Offset of the record the next successful read returns."""
        return self._next_offset

    def __repr__(self) -> str:
        return f"WalReader({self.dir!r}, next_offset={self._next_offset})"

    # -- committed mark -----------------------------------------------------------------------

    def _committed(self) -> int | None:
        if self._marker_fd < 0:
            try:
                self._marker_fd = os.open(os.path.join(self.dir, "COMMITTED"), os.O_RDONLY)
            except FileNotFoundError:
                return None
        committed = _read_marker(self._marker_fd)
        if committed is not None:
            self._known_committed = committed
        return committed

    # -- positioning --------------------------------------------------------------------------

    def _close_file(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1
        self._file_first = -1
        self._file_pos = 0

    def _open_file(self, first: int) -> bool:
        """Open the log file starting at ``first``; False if it does not exist."""
        try:
            fd = os.open(os.path.join(self.dir, _log_name(first)), os.O_RDONLY)
        except FileNotFoundError:
            return False
        self._close_file()
        self._fd, self._file_first, self._file_pos = fd, first, 0
        return True

    def seek(self, start: Position | Literal["earliest", "latest"] | None, *, inclusive: bool = False) -> None:
        """Position the reader.

        ``None``/``"earliest"``: the earliest record still kept. ``"latest"``: the next record to be
        committed. A :class:`Position`: the record after it (default: a checkpoint names the last
        record consumed), or the record itself with ``inclusive=True``. Raises
        :class:`WalTruncatedError` if that record was deleted, :class:`WalError` if it is beyond the
        end of the log.
        """
        if self._closed:
            raise WalClosedError(f"{self!r} is closed")
        self._close_file()
        self._position = None
        for _attempt in range(5):  # files may be deleted by a concurrent truncate_before
            firsts = _list_logs(self.dir)
            if start is None or start == "earliest":
                target = firsts[0] if firsts else (self._committed() or 0)
            elif start == "latest":
                committed = self._committed()
                if committed is None:
                    committed = self._scan_end(firsts)
                target = committed
            elif isinstance(start, Position):
                if start.channel_name != self._channel:
                    raise ValueError(f"position is for channel {start.channel_name!r}, reader is on {self._channel!r}")
                target = start.offset if inclusive else start.offset + 1
            else:
                raise TypeError(f"start must be a Position, 'earliest', 'latest' or None, got {start!r}")
            if not firsts:
                self._next_offset = target
                return
            if target < firsts[0]:
                raise WalTruncatedError(
                    f"channel {self._channel!r}: offset {target} was truncated (earliest kept is {firsts[0]})"
                )
            i = bisect.bisect_right(firsts, target) - 1
            if not self._open_file(firsts[i]):
                continue
            reached, pos = self._scan_to(target)
            if reached < target:
                raise WalError(f"channel {self._channel!r}: offset {target} is beyond the end of the log ({reached})")
            self._file_pos = pos
            self._next_offset = target
            return
        raise WalTruncatedError(f"channel {self._channel!r}: log files keep disappearing while seeking")

    def _scan_end(self, firsts: list[int]) -> int:
        if not firsts:
            return 0
        if not self._open_file(firsts[-1]):
            return firsts[-1]
        reached, _ = self._scan_to(1 << 63)
        self._close_file()
        return reached

    def _scan_to(self, target: int) -> tuple[int, int]:
        """Walk record headers of the open file up to ``target``; returns (offset reached, byte pos)."""
        off, pos = self._file_first, 0
        buf, buf_start = b"", 0
        size = os.fstat(self._fd).st_size
        while off < target:
            rel = pos - buf_start
            if rel + HEADER_SIZE > len(buf):
                buf, buf_start, rel = os.pread(self._fd, _SCAN_CHUNK, pos), pos, 0
                if len(buf) < HEADER_SIZE:
                    break
            length, _crc, version, _flags, _kind, roff, _ts = _HEADER.unpack_from(buf, rel)
            if version != _RECORD_VERSION or roff != off or not _TAIL_SIZE <= length <= _MAX_LENGTH:
                raise WalCorruptionError(
                    f"channel {self._channel!r}: bad record header at byte {pos} of {_log_name(self._file_first)} "
                    f"(expected offset {off})"
                )
            end = pos + 8 + length
            if end > size:
                size = os.fstat(self._fd).st_size
                if end > size:
                    break  # incomplete: being written right now
            pos, off = end, off + 1
        return off, pos

    # -- reading ------------------------------------------------------------------------------

    def _try_next(self) -> WalRecord | None:
        # Re-read the committed mark only when the last value read does not already cover us.
        committed: int | None = self._known_committed
        if committed is None or self._next_offset >= committed:
            committed = self._committed()
            if committed is not None and self._next_offset >= committed:
                return None
        must_exist = committed is not None
        off = self._next_offset
        while True:
            if self._fd < 0:
                if not self._open_file(off):
                    return self._missing(off, must_exist)
            header = _pread_exact(self._fd, HEADER_SIZE, self._file_pos)
            if not header:
                # End of this file: the writer may have rolled to a file starting at `off`.
                if off != self._file_first and os.path.exists(os.path.join(self.dir, _log_name(off))):
                    self._close_file()
                    continue
                return self._missing(off, must_exist)
            break
        where = f"channel {self._channel!r}, {_log_name(self._file_first)} byte {self._file_pos} (offset {off})"
        if len(header) < HEADER_SIZE:
            if must_exist:
                raise WalCorruptionError(f"committed record truncated at {where}")
            return None
        length, crc, version, _flags, kind, roff, ts = _HEADER.unpack(header)
        if version != _RECORD_VERSION or roff != off or not _TAIL_SIZE <= length <= _MAX_LENGTH:
            raise WalCorruptionError(f"bad record header at {where}")
        payload = _pread_exact(self._fd, length - _TAIL_SIZE, self._file_pos + HEADER_SIZE)
        if len(payload) < length - _TAIL_SIZE:
            if must_exist:
                raise WalCorruptionError(f"committed record truncated at {where}")
            return None
        if zlib.crc32(header[8:], zlib.crc32(payload)) != crc:
            if must_exist or os.fstat(self._fd).st_size > self._file_pos + 8 + length:
                raise WalCorruptionError(f"CRC mismatch at {where}")
            return None  # no COMMITTED mark and this is the tail: may still be in flight
        self._file_pos += 8 + length
        self._next_offset = off + 1
        try:
            mkind: MessageKind | int = MessageKind(kind)
        except ValueError:
            mkind = kind
        self._position = Position(self._channel, _offset_to_msg_id(off), ts)
        return WalRecord(self._position, mkind, payload)

    def _missing(self, off: int, must_exist: bool) -> None:
        if not must_exist:
            return None
        firsts = _list_logs(self.dir)
        if firsts and off < firsts[0]:
            raise WalTruncatedError(f"channel {self._channel!r}: offset {off} was truncated while reading")
        raise WalCorruptionError(
            f"channel {self._channel!r}: record {off} is below the committed offset but the log ends before it"
        )

    def read(self, timeout: float | None = None) -> WalRecord | None:
        if self._closed:
            raise WalClosedError(f"{self!r} is closed")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._signal.cond:
                seen = self._signal.version
            record = self._try_next()
            if record is not None:
                return record
            wait = self._poll
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                wait = min(wait, remaining)
            with self._signal.cond:
                if self._signal.version == seen:
                    self._signal.cond.wait(wait)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._close_file()
        if self._marker_fd >= 0:
            os.close(self._marker_fd)
            self._marker_fd = -1


# ---------------------------------------------------------------------------------------------
# retention and the root handle


def _truncate_before(channel_dir: str, channel: str, position: Position) -> list[str]:
    if position.channel_name != channel:
        raise ValueError(f"position is for channel {position.channel_name!r}, not {channel!r}")
    firsts = _list_logs(channel_dir)
    removed = []
    # A file is entirely before the position when the next file starts at or below it. The last
    # file is never removed: it is the active one (and its successor's existence proves the others
    # are closed, so this is safe without the writer's lock).
    for first, next_first in zip(firsts, firsts[1:]):
        if next_first > position.offset:
            break
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(channel_dir, _log_name(first)))
            removed.append(_log_name(first))
    if removed:
        fsync_dir(channel_dir)
    return removed


class Wal:
    """Handle on a WAL root directory holding one sub-directory per channel.

    Cheap to create; holds no resources itself. Writers and readers it opens must be closed.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.abspath(os.fspath(root))
        os.makedirs(self.root, exist_ok=True)

    def __repr__(self) -> str:
        return f"Wal({self.root!r})"

    def channel_dir(self, channel: str) -> str:
        return os.path.join(self.root, _check_channel(channel))

    def channels(self) -> list[str]:
        """Names of the channels that exist under the root, sorted."""
        return sorted(
            n for n in os.listdir(self.root) if _CHANNEL_NAME.match(n) and os.path.isdir(os.path.join(self.root, n))
        )

    def open_writer(
        self,
        channel: str,
        *,
        fsync: FsyncPolicy = "group",
        group_commit_ms: float = 10.0,
        segment_bytes: int = 64 << 20,
    ) -> WalWriter:
        """Open (creating if needed) ``channel`` for appending; recovers a torn tail first.

        Raises :class:`WalLockedError` if another writer has it open, :class:`WalCorruptionError`
        if the last file is corrupt before its committed end.
        """
        return WalWriter(self.root, channel, fsync=fsync, group_commit_ms=group_commit_ms, segment_bytes=segment_bytes)

    def open_reader(
        self,
        channel: str,
        start: Position | Literal["earliest", "latest"] | None = None,
        *,
        inclusive: bool = False,
        poll_interval: float = 0.005,
    ) -> WalReader:
        """Open a reader positioned by ``start`` (see :meth:`WalReader.seek`); exclusive by default."""
        return WalReader(self.root, channel, start, inclusive=inclusive, poll_interval=poll_interval)

    def committed_offset(self, channel: str) -> int | None:
        """The channel's durable end offset as last published by a writer (``None`` if never)."""
        return _read_marker_at(self.channel_dir(channel))

    def truncate_before(self, position: Position) -> list[str]:
        """Delete the log files whose records all precede ``position``; returns the removed names.

        The record at ``position`` and everything after it are kept, and the active (last) file is
        never deleted. Readers still positioned before the cut get :class:`WalTruncatedError` when
        they need a removed file.
        """
        return _truncate_before(self.channel_dir(position.channel_name), position.channel_name, position)

    def drop_channel(self, channel: str) -> None:
        """Delete a channel's directory (e.g. after its collection is dropped); no writer may hold it."""
        path = self.channel_dir(channel)
        if not os.path.isdir(path):
            return
        lock_fd = os.open(os.path.join(path, "LOCK"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise WalLockedError(f"cannot drop channel {channel!r}: a writer has it open") from None
            for name in os.listdir(path):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(path, name))
            os.rmdir(path)
            fsync_dir(self.root)
        finally:
            os.close(lock_fd)

