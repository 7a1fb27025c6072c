"""Reading a channel: the :class:`ChannelReader` interface and :class:`WalReader`, which reads the log
files of a local channel.

``open_reader(channel, start)`` starts *after* ``start`` by default (a checkpoint names the last
record consumed), or *at* it with ``inclusive=True``; ``start=None`` reads from the earliest record
kept, ``"latest"`` only new ones. ``read(timeout)`` tails the log: a reader waits on its channel's
condition variable, which the writer notifies when it syncs and, for a writer in another process, the
process's watch of ``COMMITTED`` does (:class:`.wakeup.CommitWatch`); where the mark cannot be watched
the reader polls it every ``poll_interval`` (5 ms). A reader never returns a record at or beyond the
``COMMITTED`` offset, so it never sees a record that a crash could still take away.
"""

from __future__ import annotations

import bisect
import os
import time
import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Literal

from .format import (
    _HEADER,
    _SCAN_CHUNK,
    _TAIL_SIZE,
    HEADER_SIZE,
    MessageKind,
    Position,
    WalClosedError,
    WalCorruptionError,
    WalError,
    WalRecord,
    WalTruncatedError,
    _check_channel,
    _header_ok,
    _list_logs,
    _log_name,
    _offset_to_msg_id,
    _pread_exact,
    _read_marker,
    _record_crc,
)
from .wakeup import _signal_for, _Watched, commit_watch


#: The longest a reader whose ``COMMITTED`` is watched waits before it looks anyway.
_WATCHED_WAIT_S = 0.5


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


class WalReader(ChannelReader):
    """Reads one channel from a position on; tails it with :meth:`read`. Use :meth:`Wal.open_reader`.

    Owner of its state: the one thread using it at a time (the :class:`ChannelReader` contract) owns
    the open file, byte position, offsets and the committed mark last seen; it takes no lock. The
    channel's wakeup signal, shared with the writer, belongs to the signal's condition.
    """

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
        self._watch: _Watched | None = None   # this reader's watch of COMMITTED, once it has one
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
            if not _header_ok(version, roff, off, length):
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
        if not _header_ok(version, roff, off, length):
            raise WalCorruptionError(f"bad record header at {where}")
        payload = _pread_exact(self._fd, length - _TAIL_SIZE, self._file_pos + HEADER_SIZE)
        if len(payload) < length - _TAIL_SIZE:
            if must_exist:
                raise WalCorruptionError(f"committed record truncated at {where}")
            return None
        if _record_crc(header[8:], zlib.crc32(payload)) != crc:
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
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            wait = self._wait_s() if remaining is None else min(self._wait_s(), remaining)
            with self._signal.cond:
                if self._signal.version == seen:
                    self._signal.cond.wait(wait)

    def _wait_s(self) -> float:
        """How long to wait for a notification before looking again: long while the channel's writer is
        in this process or a write of ``COMMITTED`` wakes this reader (a backstop only), the poll
        interval while neither does."""
        if self._signal.writers or commit_watch.watching(self._watch):
            return _WATCHED_WAIT_S
        # never watched, or the watch ended (the mark removed, the watch failed): watch it now if it can be
        self._watch = commit_watch.watch(self.dir)
        # a new watch sees only the writes after it: look once more before waiting on it
        return 0.0 if self._watch is not None else self._poll

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        commit_watch.unwatch(self._watch)
        self._watch = None
        self._close_file()
        if self._marker_fd >= 0:
            os.close(self._marker_fd)
            self._marker_fd = -1
