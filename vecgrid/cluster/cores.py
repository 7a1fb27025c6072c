"""The cores of a host, shared by the searches and index builds of every node on it.

faiss searches with one OpenMP thread per core.  A fixed share per node (cores ÷ nodes of the host)
leaves the cores of an idle node unused — and with the locality-aware balancer one node of a host
often holds every segment a search reads — while every node taking every core oversubscribes them
when all search at once (a FLAT read fans out to every node).  So a search **leases** cores: one
lock file per core in a directory of the host (``flock``, never waiting), as many as it can use and
finds free, and always at least one, taken even when every core is held (a search never waits for a
core).  The kernel drops a lease when its process dies.

Owner: the lock files belong to the host; each thread holds its own descriptors of them, since a
``flock`` lock belongs to an open file description — so the threads of one process compete for
cores as processes do.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from typing import Iterator

from vecgrid.gpu import require_faiss

try:
    import fcntl
except ImportError:  # not POSIX: every search takes the cores it asks for
    fcntl = None  # type: ignore[assignment]


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_directory() -> str:
    """Where the lock files live: one directory per user of the host (its temp dir)."""
    return os.path.join(tempfile.gettempdir(), f"vecgrid-cores-{os.getuid() if hasattr(os, 'getuid') else 0}")


class _Descriptors:
    """One thread's descriptors of the lock files, closed with the thread's local storage."""

    def __init__(self, directory: str, cores: int) -> None:
        self.fds = [os.open(os.path.join(directory, f"core-{i}"), os.O_RDWR | os.O_CREAT, 0o600)
                    for i in range(cores)]

    def __del__(self) -> None:
        for fd in self.fds:
            os.close(fd)


class HostCores:
    """Leases on the ``cores`` of this host (default: those this process may use), recorded in lock
    files under ``directory`` (default: :func:`default_directory`)."""

    def __init__(self, cores: int = 0, directory: str | None = None) -> None:
        self.cores = max(1, cores or available_cores())
        self.directory = directory or default_directory()
        if fcntl is not None:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
        self._local = threading.local()

    def _fds(self) -> list[int]:
        held = getattr(self._local, "descriptors", None)
        if held is None:
            held = self._local.descriptors = _Descriptors(self.directory, self.cores)
        return held.fds

    @contextlib.contextmanager
    def lease(self, wanted: int) -> Iterator[int]:
        """Hold up to ``wanted`` free cores while the block runs; yields how many threads to use:
        the cores leased, at least 1."""
        threads, held = self.take(wanted)
        try:
            yield threads
        finally:
            self.give_back(held)

    def take(self, wanted: int) -> tuple[int, list[int]]:
        """Lease up to ``wanted`` free cores, which the caller gives back with :meth:`give_back`:
        ``(threads to use, descriptors held)`` — the cores leased, at least one thread."""
        wanted = max(1, min(int(wanted), self.cores))
        if fcntl is None:
            return wanted, []
        fds = self._fds()
        held: list[int] = []
        # start where this thread's id points, so that concurrent searches rarely try the same files
        first = threading.get_native_id() % self.cores
        try:
            for i in range(self.cores):
                fd = fds[(first + i) % self.cores]
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                held.append(fd)
                if len(held) == wanted:
                    break
        except BaseException:
            self.give_back(held)
            raise
        return max(1, len(held)), held

    @staticmethod
    def give_back(held: list[int]) -> None:
        for fd in held:
            fcntl.flock(fd, fcntl.LOCK_UN)


# --- faiss's threads in this process ----------------------------------------------------------------

#: The OpenMP threads of faiss's work in this process: ``_fixed_threads`` when set
#: (``querynode.faiss_threads``), else as many of the host's cores as the work finds free
#: (``_host_cores``).  Written by :func:`configure_faiss_threads` when a node starts, before it
#: serves; read by every search and load thread.  Neither set (the engine used alone): faiss's own.
_fixed_threads = 0
_host_cores: HostCores | None = None


def configure_faiss_threads(threads: int) -> None:
    """``threads`` per search or build, or 0: lease the host's free cores for each (see above)."""
    global _fixed_threads, _host_cores
    _fixed_threads = max(0, int(threads))
    _host_cores = None if _fixed_threads else HostCores()


class faiss_threads:
    """``with faiss_threads(wanted):`` sets the calling thread's OpenMP threads for faiss work that can
    use ``wanted`` of them (a search: one per query, since faiss spreads a search over its queries; a
    build: every core) while the block runs.  A per-thread value: the loop and each pool thread start
    with the process default (Dask's workers: 1).  A class, not a generator: every search enters it,
    and a generator's context manager costs several times as many calls."""

    __slots__ = ("_wanted", "_held")

    def __init__(self, wanted: int) -> None:
        self._wanted = wanted
        self._held: list[int] = []

    def __enter__(self) -> None:
        if _fixed_threads:
            _set_omp_threads(_fixed_threads)
        elif _host_cores is not None:
            threads, self._held = _host_cores.take(self._wanted)
            _set_omp_threads(threads)

    def __exit__(self, *exc: object) -> None:
        if self._held:
            HostCores.give_back(self._held)
            self._held = []


def _set_omp_threads(threads: int) -> None:
    faiss = require_faiss()
    if faiss.omp_get_max_threads() != threads:
        faiss.omp_set_num_threads(threads)
