"""Wakeups of a channel's readers: a writer that made records durable wakes the readers of its own
process at once through the channel's condition; :class:`CommitWatch` wakes them through the same
condition when a writer in another process rewrites ``COMMITTED`` (inotify, on Linux). Where it
cannot watch (no inotify, its limits reached, no ``COMMITTED`` yet) readers poll the mark."""

from __future__ import annotations

import ctypes
import logging
import os
import struct
import sys
import threading
import weakref

from vecgrid.common.libc import c_library

log = logging.getLogger(__name__)


class _ChannelSignal:
    """Per-channel condition shared by the writer and readers of one process.

    ``version`` and ``writers`` belong to ``cond``: they are changed only with ``cond`` held (a reader
    may glance at ``writers`` without it: an int, and a stale answer only changes how it waits).
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.version = 0
        self.writers = 0   # writers of the channel open in this process: they notify after every commit

    def notify(self) -> None:
        with self.cond:
            self.version += 1
            self.cond.notify_all()

    def writer_opened(self) -> None:
        with self.cond:
            self.writers += 1

    def writer_closed(self) -> None:
        with self.cond:
            self.writers -= 1
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


_COMMITTED = "COMMITTED"


class _INotify:
    """Linux's inotify through the C library the process already has (``inotify(7)``): a blocking
    descriptor, watches added and removed, events read as ``(wd, mask)``."""

    MODIFY, Q_OVERFLOW, IGNORED = 0x2, 0x4000, 0x8000
    _EVENT = struct.Struct("iIII")   # wd, mask, cookie, length of the name that follows

    def __init__(self) -> None:
        libc = c_library()
        if not sys.platform.startswith("linux") or libc is None:
            raise OSError("inotify is Linux's")
        self._libc = libc
        self.fd = self._call(self._libc.inotify_init1, os.O_CLOEXEC)

    def _call(self, fn, *args) -> int:
        rc = fn(*args)
        if rc < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno))
        return rc

    def add_watch(self, path: str, mask: int) -> int:
        return self._call(self._libc.inotify_add_watch, self.fd, os.fsencode(path), mask)

    def rm_watch(self, wd: int) -> None:
        self._call(self._libc.inotify_rm_watch, self.fd, wd)

    def read(self) -> list[tuple[int, int]]:
        """The events queued, waiting for one if there is none."""
        data = os.read(self.fd, 64 * 1024)
        events, pos = [], 0
        while pos < len(data):
            wd, mask, _cookie, name_len = self._EVENT.unpack_from(data, pos)
            events.append((wd, mask))
            pos += self._EVENT.size + name_len
        return events


class _Watched:
    """One watched ``COMMITTED`` file: its watch descriptor, its channel's signal and how many readers
    rely on it."""

    __slots__ = ("path", "wd", "signal", "readers")

    def __init__(self, path: str, wd: int) -> None:
        self.path, self.wd, self.readers = path, wd, 0
        self.signal = _signal_for(os.path.dirname(path))   # held: its readers hold it too


class CommitWatch:
    """One inotify descriptor and one thread per process: when a channel's ``COMMITTED`` is written, by
    a writer in this process or another, the channel's signal is notified, so that a reader waits on its
    condition instead of polling the mark.

    Owners: ``_paths`` and ``_wds`` (the watched files, by path and by watch descriptor) and every
    :class:`_Watched` in them belong to ``_lock``; the descriptor is opened once under it and read only
    by the thread. A watch the kernel ends (its file system unmounted, its file freed) leaves both maps
    in the thread, and its readers poll until they can watch the file again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inotify: _INotify | None = None
        self._failed = False
        self._paths: dict[str, _Watched] = {}
        self._wds: dict[int, _Watched] = {}

    def watch(self, channel_dir: str) -> _Watched | None:
        """Start watching the channel's ``COMMITTED`` for one reader: the key to :meth:`watching` and
        :meth:`unwatch`, or ``None`` when it cannot be watched (the reader polls)."""
        path = os.path.join(os.path.realpath(channel_dir), _COMMITTED)
        with self._lock:
            if not self._started():
                return None
            watched = self._paths.get(path)
            if watched is None:
                try:
                    wd = self._inotify.add_watch(path, _INotify.MODIFY)
                except OSError as e:   # no mark yet, or the user's inotify watches are used up
                    log.debug("not watching %s (%s): its readers poll", path, e)
                    return None
                watched = self._paths[path] = self._wds[wd] = _Watched(path, wd)
            watched.readers += 1
            return watched

    def watching(self, key: _Watched | None) -> bool:
        """Whether a write of the ``COMMITTED`` behind ``key`` still wakes its reader."""
        return key is not None and self._paths.get(key.path) is key   # one dict read: no lock on every wait

    def unwatch(self, key: _Watched | None) -> None:
        with self._lock:
            if key is None or self._paths.get(key.path) is not key:   # never watched, or ended already
                return
            key.readers -= 1
            if key.readers == 0:
                del self._paths[key.path], self._wds[key.wd]
                try:
                    self._inotify.rm_watch(key.wd)
                except OSError:   # the kernel ended it meanwhile
                    pass

    def _started(self) -> bool:
        if self._failed:
            return False
        if self._inotify is None:
            try:
                self._inotify = _INotify()
            except (OSError, AttributeError) as e:   # not Linux, or the user's inotify instances used up
                log.warning("cannot watch WAL marks (%s): readers in other processes poll them", e)
                self._failed = True
                return False
            threading.Thread(target=self._run, name="wal-commit-watch", daemon=True).start()
        return True

    def _run(self) -> None:
        try:
            while True:
                for wd, mask in self._inotify.read():
                    self._dispatch(wd, mask)
        except Exception:  # noqa: BLE001 - surfaced: logged, and every reader polls again
            log.exception("the WAL mark watch failed: readers in other processes poll the marks again")
            with self._lock:
                self._failed = True
                signals = [watched.signal for watched in self._paths.values()]
                self._paths.clear()
                self._wds.clear()
            for signal in signals:   # waiting readers look again now, and poll from then on
                signal.notify()

    def _dispatch(self, wd: int, mask: int) -> None:
        with self._lock:
            if mask & _INotify.Q_OVERFLOW:   # events were lost: wake every watched channel
                signals = [watched.signal for watched in self._paths.values()]
            else:
                watched = self._wds.get(wd)
                signals = [] if watched is None else [watched.signal]
                if watched is not None and mask & _INotify.IGNORED:   # the watch ended: its readers poll
                    del self._paths[watched.path], self._wds[wd]
        for signal in signals:
            signal.notify()


#: The process's watch of ``COMMITTED`` marks.
commit_watch = CommitWatch()
