"""The write-ahead log of the DML channels; see :mod:`.writer` for the design.

The package is the WAL's interface: import its names from here (``from vecgrid.storage.wal import Wal``).
"""

from .writer import (
    MAX_PAYLOAD_BYTES,
    ChannelReader,
    FsyncPolicy,
    MessageKind,
    Position,
    Wal,
    WalClosedError,
    WalCorruptionError,
    WalError,
    WalLockedError,
    WalReader,
    WalRecord,
    WalTruncatedError,
    WalWriter,
)

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
