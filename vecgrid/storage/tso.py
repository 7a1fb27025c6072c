"""Hybrid timestamps (Milvus TSO) and persistent int64 ID allocation.

A Milvus hybrid timestamp packs a wall-clock reading and a counter into one uint64::

    ts = physical_ms << 18 | logical        # logical in [0, 2**18)

so timestamps sort by time, 262,144 of them can be handed out per millisecond, and the physical part
is readable as a date. Every DML message, checkpoint and search guarantee timestamp in vecgrid is one.

:class:`TimestampOracle` hands them out strictly increasing. To survive a restart (including
``kill -9`` or a power loss) without a clock that might have gone backwards, it persists an upper
bound of the physical part ("the window", 3 s ahead by default) in a :class:`~vecgrid.storage.kv.MetaStore`
*before* handing out any timestamp under it, exactly as Milvus's ``GlobalTSOAllocator`` saves
``lastSavedTime`` to etcd. After a restart the oracle starts at or above the saved bound, hence above
every timestamp handed out before. The window makes the store write rare (one per window, not per call).

:class:`IDAllocator` hands out int64 ids (collection, partition, segment ids) strictly increasing
across restarts by reserving blocks in the store with compare-and-swap, so several processes sharing
one store never receive the same id, and a crash only skips the unused part of a block.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .kv import MetaStore

__all__ = [
    "LOGICAL_BITS",
    "MAX_LOGICAL",
    "compose_ts",
    "parse_ts",
    "physical_ms_now",
    "TimestampOracle",
    "IDAllocator",
    "AllocatorConflictError",
]

LOGICAL_BITS = 18
#: Number of logical values per physical millisecond (the logical part is < MAX_LOGICAL).
MAX_LOGICAL = 1 << LOGICAL_BITS
_LOGICAL_MASK = MAX_LOGICAL - 1
_MAX_PHYSICAL = (1 << (64 - LOGICAL_BITS)) - 1
_MAX_INT64 = (1 << 63) - 1


class AllocatorConflictError(RuntimeError):
    """Another allocator changed the persisted state this allocator owns (two TSO leaders)."""


def compose_ts(physical_ms: int, logical: int) -> int:
    """Pack a physical time in milliseconds and a logical counter into a hybrid timestamp."""
    if not 0 <= logical < MAX_LOGICAL:
        raise ValueError(f"logical part {logical} out of range [0, {MAX_LOGICAL})")
    if not 0 <= physical_ms <= _MAX_PHYSICAL:
        raise ValueError(f"physical part {physical_ms} out of range")
    return (physical_ms << LOGICAL_BITS) | logical


def parse_ts(ts: int) -> tuple[int, int]:
    """Split a hybrid timestamp into ``(physical_ms, logical)``."""
    if not 0 <= ts < 1 << 64:
        raise ValueError(f"timestamp {ts} is not a uint64")
    return ts >> LOGICAL_BITS, ts & _LOGICAL_MASK


def physical_ms_now() -> int:
    """Current wall-clock time in milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


def hybrid_now() -> int:
    """The hybrid timestamp of the wall clock now (logical 0), for a reader with no TSO at hand: a
    guarantee timestamp that waits for everything written so far."""
    return compose_ts(physical_ms_now(), 0)


def _encode_int(value: int) -> bytes:
    # Decimal ASCII: readable with any KV browser (etcdctl get, sqlite3) when debugging.
    return str(value).encode("ascii")


def _decode_int(raw: bytes, key: str) -> int:
    try:
        return int(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"meta store key {key!r} holds {raw!r}, not an integer") from None


class TimestampOracle:
    """Thread-safe source of strictly increasing hybrid timestamps, persistent across restarts.

    Exactly one oracle may own ``key`` at a time (Milvus has one TSO leader). A second oracle
    writing the same key is detected when either next extends its window, and that one raises
    :class:`AllocatorConflictError` rather than risk handing out duplicates.

    ``clock`` returns the physical time in ms; it is injectable for tests. If the clock goes
    backwards the oracle keeps its own physical time and continues with logical increments.
    """

    def __init__(
        self,
        store: MetaStore,
        key: str = "tso/timestamp",
        *,
        window_ms: int = 3000,
        clock: Callable[[], int] = physical_ms_now,
    ) -> None:
        if window_ms < 1:
            raise ValueError("window_ms must be >= 1")
        self._store = store
        self._key = key
        self._window_ms = window_ms
        self._clock = clock
        self._lock = threading.Lock()
        raw = store.get(key)
        self._saved_raw: bytes | None = raw
        saved = 0 if raw is None else _decode_int(raw, key)
        # Every timestamp handed out before had physical < saved, so starting at max(now, saved)
        # with logical 0 puts the first new timestamp above all of them.
        self._physical = max(clock(), saved)
        self._logical = 0
        self._saved_bound = saved
        self._persist_bound(self._physical + window_ms)

    @property
    def key(self) -> str:
        return self._key

    def _persist_bound(self, bound: int) -> None:
        new_raw = _encode_int(bound)
        if not self._store.compare_and_swap(self._key, self._saved_raw, new_raw):
            raise AllocatorConflictError(
                f"TSO key {self._key!r} was changed by another allocator; only one TimestampOracle may own it"
            )
        self._saved_raw = new_raw
        self._saved_bound = bound

    def allocate(self, count: int = 1) -> int:
        """Reserve ``count`` consecutive timestamps and return the first.

        The batch is ``ts, ts + 1, ..., ts + count - 1`` (same physical ms); every later call returns
        a larger value, across threads and across restarts of the process.
        """
        if not 1 <= count <= MAX_LOGICAL:
            raise ValueError(f"count must be in [1, {MAX_LOGICAL}], got {count}")
        with self._lock:
            now = self._clock()
            if now > self._physical:
                self._physical = now
                self._logical = 0
            if self._logical + count > MAX_LOGICAL:
                # This millisecond is used up: move to the next one without waiting for the clock.
                self._physical += 1
                self._logical = 0
            if self._physical >= self._saved_bound:
                self._persist_bound(self._physical + self._window_ms)
            ts = compose_ts(self._physical, self._logical)
            self._logical += count
            return ts

    def last(self) -> int:
        """The largest timestamp handed out so far by this oracle (or its start point minus one)."""
        with self._lock:
            return compose_ts(self._physical, self._logical) - 1


class IDAllocator:
    """Strictly increasing int64 ids, persistent across restarts, safe across processes.

    The store holds, under ``key``, the first id not yet reserved by anyone. An allocator reserves a
    block of ``block_size`` ids with compare-and-swap and hands them out locally; a crash wastes the
    rest of its block but never reuses an id. Ids from one allocator are strictly increasing; ids
    from two allocators sharing the key are unique (each block goes to exactly one of them).
    """

    def __init__(self, store: MetaStore, key: str, *, block_size: int = 10_000, start: int = 1) -> None:
        if block_size < 1:
            raise ValueError("block_size must be >= 1")
        if not 0 <= start <= _MAX_INT64:
            raise ValueError("start must be a non-negative int64")
        self._store = store
        self._key = key
        self._block_size = block_size
        self._start = start
        self._lock = threading.Lock()
        self._next = 0  # next id to hand out from the local block
        self._end = 0  # end (exclusive) of the local block

    @property
    def key(self) -> str:
        return self._key

    def _reserve(self, count: int) -> None:
        size = max(self._block_size, count)
        while True:
            raw = self._store.get(self._key)
            begin = self._start if raw is None else max(_decode_int(raw, self._key), self._start)
            end = begin + size
            if end - 1 > _MAX_INT64:
                raise OverflowError(f"ID allocator {self._key!r} exhausted the int64 range")
            if self._store.compare_and_swap(self._key, raw, _encode_int(end)):
                self._next, self._end = begin, end
                return
            # Another process reserved a block in between; read again and retry.

    def allocate(self, count: int = 1) -> int:
        """Reserve ``count`` consecutive ids and return the first (``id, ..., id + count - 1``)."""
        if count < 1:
            raise ValueError("count must be >= 1")
        with self._lock:
            if self._end - self._next < count:
                self._reserve(count)
            first = self._next
            self._next += count
            return first

    def handed_out(self, value: int) -> bool:
        """Whether ``value`` may have been returned by :meth:`allocate` of some allocator of this key:
        reserved (below the stored mark) and not waiting unused in this allocator's own block.  An id
        in another process's unused block counts as handed out (this process cannot see that block)."""
        with self._lock:
            if self._next <= value < self._end:
                return False
            raw = self._store.get(self._key)
        reserved_end = self._start if raw is None else max(_decode_int(raw, self._key), self._start)
        return self._start <= value < reserved_end
