"""What every part of the :class:`~.meta.Catalog` shares: the store, the id and timestamp sources,
the writer lock, the key caches and the record codec.

The catalog is one class composed of parts, one module each (:mod:`.collections`, :mod:`.indexes`,
:mod:`.segments`, :mod:`.publish`, :mod:`.checkpoints`), all over :class:`CatalogBase`. A part calls
the others through ``self``; each module's docstring names what it uses from the others.

Who owns what:

* The records live in the :class:`~vecgrid.storage.kv.MetaStore`. Within one process they are
  written only under ``CatalogBase._lock`` (a re-entrant lock, so a public method may call another):
  every read-modify-write holds it from the first read to the commit. Across processes the catalog
  has one writer, as Milvus's RootCoord/DataCoord leader, except for channel checkpoints, which
  change only by compare-and-swap (:mod:`.checkpoints`).
* ``_segment_keys`` and ``_collection_keys`` map an id to its record's key. Each is a
  :class:`KeyCache` with its own lock; they hold hints only (see there).
* ``_ids`` and ``_tso`` are shared with the rest of the process and safe across threads and processes
  by themselves.
"""

from __future__ import annotations

import threading
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from vecgrid import errors
from vecgrid.proto import common_pb2, data_coord_pb2

from ..kv import MetaStore
from ..tso import IDAllocator, TimestampOracle

S = common_pb2.SegmentState
L = data_coord_pb2.SegmentLevel
DEFAULT_DML_CHANNEL_NUM = 16
#: Milvus's ``common.AllPartitionsID``: an L0 (delete-only) segment may apply to every partition.
ALL_PARTITIONS_ID = -1

M = TypeVar("M", bound=Message)


def encode(msg: Message) -> bytes:
    return msg.SerializeToString(deterministic=True)


def decode(cls: type[M], key: str, raw: bytes) -> M:
    msg = cls()
    try:
        msg.ParseFromString(raw)
    except DecodeError:
        raise errors.ServiceInternal(f"corrupt catalog record at {key!r}") from None
    return msg


def copy_msg(msg: M) -> M:
    out = type(msg)()
    out.CopyFrom(msg)
    return out


def state_name(state: int) -> str:
    try:
        return common_pb2.SegmentState.Name(state)
    except ValueError:
        return str(state)


def check_int_id(what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.ParameterInvalid(f"{what} must be an integer, got {value!r}")
    return value


class KeyCache:
    """Record id -> its store key, for records whose key never changes while they exist.

    Entries are hints: every hit is confirmed by reading that key, and a missing record is looked
    for again by a scan, so another process creating, changing or dropping records never makes a
    read wrong. The lock makes each call atomic; it is never held across store I/O.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[int, str] = {}

    def get(self, record_id: int) -> str | None:
        with self._lock:
            return self._keys.get(record_id)

    def put(self, record_id: int, key: str) -> None:
        with self._lock:
            self._keys[record_id] = key

    def drop(self, record_id: int) -> None:
        with self._lock:
            self._keys.pop(record_id, None)


class CatalogBase:
    """The store, ids, timestamps, writer lock and key caches every catalog part works on.

    ``ids`` hands out collection, partition, database, index, segment and build ids; ``tso`` the
    hybrid timestamps recorded as creation times. ``cluster_prefix`` is Milvus's
    ``msgChannel.chanNamePrefix.cluster`` (``by-dev``): DML channels are named
    ``<prefix>-rootcoord-dml_<p>_<collectionID>v<shard>``, with ``p`` taken round-robin over
    ``dml_channel_num`` physical channels from a counter kept in the store.
    """

    def __init__(
        self,
        store: MetaStore,
        ids: IDAllocator,
        tso: TimestampOracle,
        cluster_prefix: str = "by-dev",
        *,
        dml_channel_num: int = DEFAULT_DML_CHANNEL_NUM,
    ) -> None:
        if not isinstance(cluster_prefix, str) or not cluster_prefix or "/" in cluster_prefix:
            raise ValueError(f"cluster_prefix must be a non-empty string without '/', got {cluster_prefix!r}")
        if dml_channel_num < 1:
            raise ValueError("dml_channel_num must be >= 1")
        self._store = store
        self._ids = ids
        self._tso = tso
        self.cluster_prefix = cluster_prefix
        self.dml_channel_num = dml_channel_num
        self._lock = threading.RLock()
        self._segment_keys = KeyCache()
        self._collection_keys = KeyCache()
        self._ensure_default_database()  # (.collections) an open catalog always has ``default``

    @property
    def store(self) -> MetaStore:
        return self._store

    def allocate_segment_id(self) -> int:
        return self._ids.allocate()

    def segment_id_handed_out(self, segment_id: int) -> bool:
        """Whether ``segment_id`` came from :meth:`allocate_segment_id` (or another allocation of the
        same id space), as opposed to an id a test or a legacy writer made up."""
        return self._ids.handed_out(segment_id)

    def allocate_timestamp(self) -> int:
        """A fresh hybrid timestamp from the catalog's oracle (time ticks, write requests)."""
        return self._tso.allocate()

    def allocate_ids(self, count: int) -> int:
        """Reserve ``count`` consecutive ids (e.g. auto-id primary keys); returns the first."""
        return self._ids.allocate(count)
