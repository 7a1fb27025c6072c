"""Metadata key-value store: the coordinator's durable catalog.

Milvus keeps its coordinator metadata in etcd under string keys laid out by prefix, e.g.
``querycoord-collection-loadinfo/<collectionID>`` or ``querycoord-replica/<collectionID>/<replicaID>``.
vecgrid keeps the same shape so that callers are written against prefixes and byte values, never
against a particular database:

* :class:`MetaStore` is the small interface every caller uses (``get``, ``put``, ``delete``,
  ``scan(prefix)``, ``compare_and_swap``, ``txn()``, ``close``). It is deliberately what etcd's KV
  API offers directly (Range with a prefix, Put, DeleteRange, and a Txn of puts/deletes guarded by a
  value comparison), so an etcd backend can be added later without touching any caller.
* :class:`SQLiteMetaStore` is the embedded default: one SQLite file in WAL mode with
  ``synchronous=FULL``, so an acknowledged ``put`` survives a crash or power loss. It is safe to use
  from several threads, and several processes may open the same file (SQLite's own file locking
  serialises writers; readers never block writers in WAL mode).
* :func:`open_meta_store` picks the backend from a path or URL. ``etcd://`` is recognised and
  rejected with a clear message until that backend exists; :func:`register_meta_store_backend`
  is the hook it will use.

Keys are ``str`` (stored as UTF-8); values are ``bytes``. ``scan`` returns pairs sorted by key in
code-point order, which is also UTF-8 byte order and etcd's order.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Final

__all__ = [
    "MetaStore",
    "MetaTxn",
    "MetaStoreError",
    "MetaStoreClosedError",
    "MetaStoreUnavailableError",
    "MetaTxnConflictError",
    "SQLiteMetaStore",
    "open_meta_store",
    "register_meta_store_backend",
    "prefix_end",
]


class MetaStoreError(Exception):
    """Base class for metadata-store errors."""


class MetaStoreClosedError(MetaStoreError):
    """Raised when a store is used after :meth:`MetaStore.close`."""


class MetaStoreUnavailableError(MetaStoreError):
    """Raised by :func:`open_meta_store` for a backend that is known but not installed."""


class MetaTxnConflictError(MetaStoreError):
    """A :meth:`MetaTxn.expect` guard did not hold at commit: nothing of the transaction was applied.

    Another writer changed the key since it was read; the caller reads again and decides again.
    """


def _check_key(key: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"meta store keys are str, got {type(key).__name__}")
    if not key:
        raise ValueError("meta store key must not be empty")
    return key


def _check_value(value: bytes | bytearray | memoryview) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"meta store values are bytes, got {type(value).__name__}")


def prefix_end(prefix: str) -> str | None:
    """Smallest string greater than every string that starts with ``prefix``.

    Used to turn a prefix scan into an index range scan (``prefix <= key < prefix_end``), the same
    trick etcd's ``clientv3.GetPrefixRangeEnd`` uses. Returns ``None`` when there is no upper bound
    (empty prefix, or a prefix made only of the largest code point).
    """
    chars = list(prefix)
    while chars:
        cp = ord(chars[-1]) + 1
        if 0xD800 <= cp <= 0xDFFF:  # surrogates cannot be encoded; skip the block
            cp = 0xE000
        if cp <= 0x10FFFF:
            chars[-1] = chr(cp)
            return "".join(chars)
        chars.pop()
    return None


class MetaTxn(ABC):
    """Writes collected inside :meth:`MetaStore.txn` and applied atomically when the block exits.

    Writes are blind, guarded only by :meth:`expect` value comparisons, because that is what an etcd
    ``Txn(If(...)).Then(...)`` applies in one round trip; a single-key read-modify-write can also go
    through :meth:`MetaStore.compare_and_swap`.
    """

    @abstractmethod
    def expect(self, key: str, value: bytes | None) -> None:
        """Commit only if ``key`` holds ``value`` (``None``: is absent) at commit time.

        Every guard is checked before any write applies, whatever their order in the block; if one
        fails, nothing is applied and the commit raises :class:`MetaTxnConflictError`.
        """

    @abstractmethod
    def put(self, key: str, value: bytes) -> None:
        """Set ``key`` to ``value`` when the transaction commits."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove ``key`` (no error if absent) when the transaction commits."""


class _BufferedTxn(MetaTxn):
    """A list of operations, replayed by the backend in order on commit."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, str, bytes | None]] = []

    def expect(self, key: str, value: bytes | None) -> None:
        self.ops.append(("expect", _check_key(key), None if value is None else _check_value(value)))

    def put(self, key: str, value: bytes) -> None:
        self.ops.append(("put", _check_key(key), _check_value(value)))

    def delete(self, key: str) -> None:
        self.ops.append(("delete", _check_key(key), None))


class MetaStore(ABC):
    """Abstract durable key-value store for coordinator metadata.

    Every write method returns only after the write is durable. Implementations must be safe to
    call from several threads. Use as a context manager to close it.
    """

    @abstractmethod
    def get(self, key: str) -> bytes | None:
        """Return the value stored under ``key``, or ``None`` if there is none."""

    @abstractmethod
    def put(self, key: str, value: bytes) -> None:
        """Store ``value`` under ``key``, replacing any previous value."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove ``key``; removing an absent key is not an error (etcd's DeleteRange semantics)."""

    @abstractmethod
    def scan(self, prefix: str) -> list[tuple[str, bytes]]:
        """Return every ``(key, value)`` whose key starts with ``prefix``, sorted by key."""

    @abstractmethod
    def compare_and_swap(self, key: str, expected: bytes | None, value: bytes | None) -> bool:
        """Atomically set ``key`` to ``value`` if its current value equals ``expected``.

        ``expected=None`` means "the key must be absent"; ``value=None`` deletes the key. Returns
        whether the swap happened. This is the one read-modify-write primitive, used by the ID
        allocator and the TSO so that several processes sharing a store never hand out the same
        number; it maps onto an etcd ``Txn(If(Value(key) == expected)).Then(Put)``.
        """

    @abstractmethod
    def _commit(self, ops: list[tuple[str, str, bytes | None]]) -> None:
        """Apply a batch of buffered ``("put"|"delete", key, value)`` operations atomically.

        ``("expect", key, value)`` entries are guards: all are checked first, and if one fails
        nothing is applied and :class:`MetaTxnConflictError` is raised.
        """

    @abstractmethod
    def close(self) -> None:
        """Release the backend's resources. Idempotent."""

    @contextlib.contextmanager
    def txn(self) -> Iterator[MetaTxn]:
        """Collect puts and deletes and apply them all-or-nothing when the block exits normally.

        If the block raises, nothing is applied. Operations are applied in the order given, so a
        later put of the same key wins. A failed :meth:`MetaTxn.expect` guard raises
        :class:`MetaTxnConflictError` on exit, with nothing applied::

            with store.txn() as t:
                t.put("querycoord-collection-loadinfo/1", info)
                t.delete("querycoord-replica/1/7")
        """
        txn = _BufferedTxn()
        yield txn
        if txn.ops:
            self._commit(txn.ops)

    def __enter__(self) -> MetaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SCHEMA: Final = "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL) WITHOUT ROWID"


class SQLiteMetaStore(MetaStore):
    """:class:`MetaStore` on one SQLite file.

    Durability: the database runs in WAL journal mode with ``synchronous=FULL``, which makes SQLite
    fsync the write-ahead log at every commit, so a ``put`` that returned survives ``kill -9`` and a
    power loss. Concurrency: one connection per store object guarded by a lock (SQLite connections
    must not be used by two threads at once); other processes open their own connections and SQLite's
    file locks serialise writers, waiting up to ``busy_timeout`` seconds for a lock instead of failing
    at once. Writes that need atomicity across keys use ``BEGIN IMMEDIATE`` so that the write lock is
    taken up front and a concurrent writer cannot make the transaction fail half-way.

    ``path`` may be ``":memory:"`` for a private, non-durable store (tests only).
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        self.path = os.fspath(path)
        if self.path != ":memory:":
            parent = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(parent, exist_ok=True)
        self._lock = threading.Lock()
        # isolation_level=None: autocommit; explicit BEGIN for multi-statement transactions.
        conn = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if self.path != ":memory:" and str(mode).lower() != "wal":
                raise MetaStoreError(f"could not switch {self.path!r} to WAL journal mode (got {mode!r})")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn

    def __repr__(self) -> str:
        return f"SQLiteMetaStore({self.path!r})"

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None:
                raise MetaStoreClosedError(f"{self!r} is closed")
            yield self._conn

    @contextlib.contextmanager
    def _write_txn(self) -> Iterator[sqlite3.Connection]:
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def get(self, key: str) -> bytes | None:
        _check_key(key)
        with self._connection() as conn:
            row = conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def put(self, key: str, value: bytes) -> None:
        _check_key(key)
        value = _check_value(value)
        with self._connection() as conn:
            conn.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (key, value))

    def delete(self, key: str) -> None:
        _check_key(key)
        with self._connection() as conn:
            conn.execute("DELETE FROM kv WHERE key = ?", (key,))

    def scan(self, prefix: str) -> list[tuple[str, bytes]]:
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be str, got {type(prefix).__name__}")
        end = prefix_end(prefix)
        with self._connection() as conn:
            if end is None:
                rows = conn.execute("SELECT key, value FROM kv WHERE key >= ? ORDER BY key", (prefix,)).fetchall()
            else:
                rows = conn.execute(
                    "SELECT key, value FROM kv WHERE key >= ? AND key < ? ORDER BY key", (prefix, end)
                ).fetchall()
        return [(k, bytes(v)) for k, v in rows]

    def compare_and_swap(self, key: str, expected: bytes | None, value: bytes | None) -> bool:
        _check_key(key)
        expected = None if expected is None else _check_value(expected)
        value = None if value is None else _check_value(value)
        with self._write_txn() as conn:
            row = conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
            current = None if row is None else bytes(row[0])
            if current != expected:
                return False
            if value is None:
                conn.execute("DELETE FROM kv WHERE key = ?", (key,))
            else:
                conn.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (key, value))
            return True

    def _commit(self, ops: list[tuple[str, str, bytes | None]]) -> None:
        with self._write_txn() as conn:
            for op, key, value in ops:
                if op != "expect":
                    continue
                row = conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
                if (None if row is None else bytes(row[0])) != value:
                    raise MetaTxnConflictError(f"{key!r} changed since it was read; nothing was written")
            for op, key, value in ops:
                if op == "expect":
                    continue
                if op == "put":
                    conn.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (key, value))
                else:
                    conn.execute("DELETE FROM kv WHERE key = ?", (key,))

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


# ---------------------------------------------------------------------------------------------
# backend selection

_BackendFactory = Callable[[str], MetaStore]
_BACKENDS: dict[str, _BackendFactory] = {}


def register_meta_store_backend(scheme: str, factory: _BackendFactory) -> None:
    """Make ``open_meta_store("<scheme>://...")`` call ``factory(url)``.

    This is how an optional backend (etcd) plugs in without changing callers of
    :func:`open_meta_store`; registering a scheme again replaces the previous factory.
    """
    _BACKENDS[scheme.lower()] = factory


def _open_sqlite_url(url: str) -> MetaStore:
    # sqlite:///abs/path.db -> /abs/path.db ; sqlite://rel/path.db -> rel/path.db
    path = url.split("://", 1)[1]
    if not path:
        raise ValueError(f"sqlite URL {url!r} names no file")
    return SQLiteMetaStore(path)


def _etcd_unavailable(url: str) -> MetaStore:
    raise MetaStoreUnavailableError(
        f"cannot open {url!r}: the etcd meta store backend is not installed yet; "
        "use a SQLite file path (or sqlite:///path/to/meta.db) instead"
    )


register_meta_store_backend("sqlite", _open_sqlite_url)
register_meta_store_backend("etcd", _etcd_unavailable)
register_meta_store_backend("etcds", _etcd_unavailable)


def open_meta_store(url_or_path: str | os.PathLike[str]) -> MetaStore:
    """Open the metadata store named by a filesystem path or a URL.

    * a plain path (``data/meta.db``) or ``sqlite:///abs/path.db`` -> :class:`SQLiteMetaStore`
    * ``etcd://host:2379`` -> :class:`MetaStoreUnavailableError` until the etcd backend is added
    * any other scheme -> :class:`ValueError`
    """
    target = os.fspath(url_or_path)
    if "://" not in target:
        return SQLiteMetaStore(target)
    scheme = target.split("://", 1)[0].lower()
    factory = _BACKENDS.get(scheme)
    if factory is None:
        known = ", ".join(sorted(_BACKENDS))
        raise ValueError(f"unknown meta store URL scheme {scheme!r} in {target!r} (known: {known}, or a file path)")
    return factory(target)
