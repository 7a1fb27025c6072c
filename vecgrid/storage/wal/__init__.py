"""Durable append-only log per DML channel (the write-ahead log behind every acknowledged write).

Milvus writes DML to a message queue (Pulsar, Kafka, RocksMQ) per virtual channel and consumers seek
to ``msgpb.MsgPosition`` checkpoints. vecgrid's embedded equivalent is a directory of log files per
channel; a Kafka-backed channel or a remote streaming reader can later implement the same
:class:`ChannelReader` interface.

The package is the WAL's interface: import its names from here (``from vecgrid.storage.wal import
Wal``). Its modules, one concern each:

* :mod:`.format` -- the on-disk layout and record framing, the ``COMMITTED`` mark, channel and file
  names, :class:`Position`, :class:`WalRecord`, :class:`MessageKind` and the errors.
* :mod:`.writer` -- :class:`WalWriter`: the one writer of a channel, fsync policies and group
  commit, acknowledgement, the ``LOCK`` file.
* :mod:`.recovery` -- cutting a torn tail off the last log file when a writer opens a channel.
* :mod:`.reader` -- :class:`ChannelReader` and :class:`WalReader`: seeking and tailing.
* :mod:`.retention` -- ``truncate_before``: deleting log files that precede a position.
* :mod:`.wakeup` -- the in-process signal by which a writer wakes its channel's readers.
* :mod:`.root` -- :class:`Wal`, the handle on the root directory that opens writers and readers.
"""

from .format import (
    MAX_PAYLOAD_BYTES,
    MessageKind,
    Position,
    WalClosedError,
    WalCorruptionError,
    WalError,
    WalLockedError,
    WalRecord,
    WalTruncatedError,
)
from .reader import ChannelReader, WalReader
from .root import Wal
from .writer import FsyncPolicy, WalWriter

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
