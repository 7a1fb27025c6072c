"""In-process wakeups: a writer that made records durable wakes the readers of its channel at once
(readers in other processes poll ``COMMITTED`` instead)."""

from __future__ import annotations

import os
import threading
import weakref


class _ChannelSignal:
    """Per-channel condition shared by the writer and readers of one process.

    ``version`` belongs to ``cond``: it is read and bumped only with ``cond`` held.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.version = 0

    def notify(self) -> None:
        with self.cond:
            self.version += 1
            self.cond.notify_all()


# One signal per channel directory in this process; the registry belongs to _signals_lock.
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
