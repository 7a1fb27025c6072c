"""Retention: deleting the log files a channel no longer needs.

``truncate_before(position)`` deletes log files whose records all have offsets below the position's,
never the last (active) file; the record at ``position`` itself is kept.
"""

from __future__ import annotations

import contextlib
import os

from ..fsutil import fsync_dir
from .format import Position, _list_logs, _log_name


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
