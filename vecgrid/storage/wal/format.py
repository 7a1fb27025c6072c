"""The WAL's on-disk format and vocabulary: record framing, the COMMITTED mark, file and channel
names, positions, record kinds and errors.

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

``COMMITTED`` holds ``magic:4s="VGCM" | offset:u64 | crc32(magic + offset):u32``.

:class:`Position` holds the fields of Milvus ``msgpb.MsgPosition``: ``channel_name``, ``msg_id`` (the
record offset as 8 big-endian bytes) and ``timestamp``.

Everything here is a constant, an immutable value or a function of its arguments: no state.
"""

from __future__ import annotations

import enum
import os
import re
import struct
import zlib
from dataclasses import dataclass
from typing import Final

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
_UINT64: Final = 1 << 64


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


# ---------------------------------------------------------------------------------------------
# record framing


def _encode_header(kind: int, offset: int, timestamp: int, payload_len: int, payload_crc: int) -> bytes:
    """The 28 header bytes of a record whose payload has ``payload_len`` bytes and CRC ``payload_crc``."""
    tail = _HEADER_TAIL.pack(_RECORD_VERSION, 0, kind, offset, timestamp)
    return _PREFIX.pack(_TAIL_SIZE + payload_len, _record_crc(tail, payload_crc)) + tail


def _record_crc(header_tail: bytes, payload_crc: int) -> int:
    """A record's crc32: over the payload (``payload_crc``), then the 20 header bytes after the crc."""
    return zlib.crc32(header_tail, payload_crc)


def _header_ok(version: int, record_offset: int, expected_offset: int, length: int) -> bool:
    """Whether a decoded header is well formed and names the offset expected at its place."""
    return version == _RECORD_VERSION and record_offset == expected_offset and _TAIL_SIZE <= length <= _MAX_LENGTH


# ---------------------------------------------------------------------------------------------
# names and files of a channel


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
