"""The root handle: :class:`Wal`, a directory holding one sub-directory per channel, which opens the
channels' writers and readers."""

from __future__ import annotations

import contextlib
import fcntl
import os
from typing import Literal

from ..fsutil import fsync_dir
from .format import _CHANNEL_NAME, Position, WalLockedError, _check_channel, _read_marker_at
from .reader import WalReader
from .retention import _truncate_before
from .writer import FsyncPolicy, WalWriter


class Wal:
    """Handle on a WAL root directory holding one sub-directory per channel.

    Cheap to create; holds no resources itself. Writers and readers it opens must be closed. Its one
    piece of state, ``root``, is set in ``__init__`` and never changes: no owner needed.
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

