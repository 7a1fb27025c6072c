"""The process's own C library through ctypes, loaded once: glibc's heap calls (``vecgrid.gpu.device``)
and Linux's inotify (``vecgrid.storage.wal.wakeup``) go through it."""

from __future__ import annotations

import ctypes
import functools


@functools.cache
def c_library() -> ctypes.CDLL | None:
    """The C library the process already runs on (errno kept for ``ctypes.get_errno``), or None where
    ctypes cannot open it.  Which calls it has depends on the library: callers look for theirs."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
