"""Recovery of a channel after a crash, run by a writer when it opens the channel.

When a writer opens a channel it scans the last log file (earlier files were fsynced before the
writer moved past them, so only the last one can have a torn tail). A partial record at the end, a
record whose bytes run past the end of the file, a bad record that is the last thing in the file, or
a zero-filled tail is a torn write: it is cut off (``ftruncate`` + fsync) and logged, never misread.
A torn write can only damage records that were never acknowledged, i.e. at or after the
``COMMITTED`` offset (the last acknowledged record is tolerated too, as a lost final page). So a bad
record in the middle of the file, or a tail whose cut would drop earlier acknowledged records,
raises :class:`WalCorruptionError` and nothing is cut. Readers never cut anything; they raise
:class:`WalCorruptionError` on any bad record below the committed offset.
"""

from __future__ import annotations

import logging
import os
import zlib
from dataclasses import dataclass

from .format import (
    _HEADER,
    _SCAN_CHUNK,
    _TAIL_SIZE,
    HEADER_SIZE,
    WalCorruptionError,
    _header_ok,
    _log_name,
    _pread_exact,
    _record_crc,
)

log = logging.getLogger(__package__)  # "vecgrid.storage.wal", the WAL's one logger


@dataclass
class _ScanResult:
    size: int  # bytes of valid records
    next_offset: int
    last_timestamp: int | None


def _recover_channel(channel_dir: str, channel: str, first: int, committed: int | None) -> _ScanResult:
    """Recover the channel's last log file (starting at offset ``first``) and check that it reaches the
    ``committed`` offset; returns where appending resumes."""
    result = _recover_file(os.path.join(channel_dir, _log_name(first)), first, committed)
    if committed is not None and result.next_offset < committed - 1:
        raise WalCorruptionError(
            f"WAL channel {channel!r} ends at offset {result.next_offset} but records up to "
            f"{committed - 1} were acknowledged (a log file is missing or was truncated)"
        )
    return result


def _all_zero(fd: int, start: int, end: int) -> bool:
    pos = start
    while pos < end:
        chunk = os.pread(fd, min(_SCAN_CHUNK, end - pos), pos)
        if not chunk or chunk.count(0) != len(chunk):
            return False
        pos += len(chunk)
    return True


def _recover_file(path: str, first_offset: int, committed: int | None) -> _ScanResult:
    """Validate every record of the last log file and cut a torn tail (see the module docstring)."""
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
            plausible = _header_ok(version, roff, off, length)
            end = pos + 8 + length
            if not plausible:
                problem = "invalid record header"
                torn = _all_zero(fd, pos, file_size)
                break
            if end > file_size:
                problem, torn = f"incomplete record ({file_size - pos} of {8 + length} bytes)", True
                break
            payload = _pread_exact(fd, length - _TAIL_SIZE, pos + HEADER_SIZE)
            if _record_crc(header[8:], zlib.crc32(payload)) != crc:
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
