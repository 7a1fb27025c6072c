""":class:`Catalog`: databases, collections, partitions, indexes, segments and channel checkpoints.

What Milvus splits between RootCoord (databases, collections, partitions, DML channels) and DataCoord
(index definitions, segments, their binlogs and index files, channel checkpoints), kept in one
:class:`~vecgrid.storage.kv.MetaStore` under Milvus-like keys (see :mod:`.keys`) as protobuf messages.

Rules every method keeps:

* **Validate, then write.** All checks (names, schema, index params, references, file checksums) run
  before any id or timestamp is allocated and before anything is written; a refused call leaves the
  store byte-for-byte unchanged. Errors are :mod:`vecgrid.errors` classes carrying Milvus codes.
* **One transaction per change.** A change touching several keys (a collection and its ``_default``
  partition, a published segment with its file checksums, index records and channel checkpoint)
  goes through a single ``store.txn()``, so a crash leaves all of it or none of it.
* **Single writer.** Read-modify-write sequences are serialised by a lock inside the object, so one
  ``Catalog`` is safe across threads. Like Milvus's RootCoord/DataCoord leader, exactly one process
  should write a given store through a Catalog; other processes may read it. The exception is
  channel checkpoints, which an import or flush beside a live server also moves: they change only
  by compare-and-swap (a guarded transaction when published with a segment), so no process can
  move one backwards.
* **Nothing cached but keys.** Reads go to the store each time, so a reader in another process sees
  what was committed. The only caches map a segment or collection id to its key; a hit is confirmed
  by reading that key, a miss scans again, so they never make a read stale.

Idempotency follows Milvus 2.4: creating a collection that exists with an identical definition,
creating a partition that exists, or creating the same index again returns the existing object;
dropping something absent returns ``False``. Creating a collection whose name exists with a
different definition is refused (``ParameterInvalid``: "create duplicate collection with different
parameters").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from google.protobuf.message import DecodeError, Message

from vecgrid import errors
from vecgrid.proto import catalog_pb2, common_pb2, data_coord_pb2, index_coord_pb2, msg_pb2, schema_pb2

from ..kv import MetaStore, MetaTxn, MetaTxnConflictError
from ..tso import IDAllocator, TimestampOracle
from . import keys, segment_bridge
from .index_rules import validate_index
from .info import CollectionInfo
from .schema_rules import (
    DEFAULT_DB_ID,
    DEFAULT_DB_NAME,
    DEFAULT_PARTITION_NAME,
    MAX_DATABASES,
    MAX_PARTITIONS,
    VECTOR_TYPES,
    field_dim,
    kv_dict,
    kv_list,
    normalize_properties,
    normalize_schema,
    normalize_shards_num,
    schema_signature,
    type_name,
    validate_name,
)

S = common_pb2.SegmentState
L = data_coord_pb2.SegmentLevel
DEFAULT_DML_CHANNEL_NUM = 16
#: Milvus's ``common.AllPartitionsID``: an L0 (delete-only) segment may apply to every partition.
ALL_PARTITIONS_ID = -1

# States a segment moves through, in order; it never moves back.
_STATE_RANK = {S.Growing: 1, S.Importing: 1, S.Sealed: 2, S.Flushing: 3, S.Flushed: 4, S.Dropped: 5}
_KIND_OF_LOGS = (
    ("binlogs", catalog_pb2.InsertLog),
    ("statslogs", catalog_pb2.StatsLog),
    ("deltalogs", catalog_pb2.DeltaLog),
)

if TYPE_CHECKING:
    from vecgrid.storage.segment_files import FileInfo
    from vecgrid.storage.segment_files import SegmentFiles as SegmentFilesRecord

M = TypeVar("M", bound=Message)


def _encode(msg: Message) -> bytes:
    return msg.SerializeToString(deterministic=True)


def _decode(cls: type[M], key: str, raw: bytes) -> M:
    msg = cls()
    try:
        msg.ParseFromString(raw)
    except DecodeError:
        raise errors.ServiceInternal(f"corrupt catalog record at {key!r}") from None
    return msg


def _copy(msg: M) -> M:
    out = type(msg)()
    out.CopyFrom(msg)
    return out


def _state_name(state: int) -> str:
    try:
        return common_pb2.SegmentState.Name(state)
    except ValueError:
        return str(state)


def _checkpoint_advances(vchannel: str, stored: bytes | None, pos: msg_pb2.MsgPosition) -> bool:
    """Whether ``pos`` may replace the stored checkpoint: a checkpoint never moves back."""
    if stored is None:
        return True
    return _decode(msg_pb2.MsgPosition, keys.channel_cp_key(vchannel), stored).timestamp <= pos.timestamp


def _check_int_id(what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.ParameterInvalid(f"{what} must be an integer, got {value!r}")
    return value


class _KeyCache:
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


class Catalog:
    """The cluster's catalog on a :class:`MetaStore`.

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
        self._segment_keys = _KeyCache()
        self._collection_keys = _KeyCache()
        self._ensure_default_database()

    @property
    def store(self) -> MetaStore:
        return self._store

    # =========================================================================================
    # databases

    def _ensure_default_database(self) -> None:
        key = keys.db_key(DEFAULT_DB_ID)
        if self._store.get(key) is None:
            info = catalog_pb2.DatabaseInfo(
                name=DEFAULT_DB_NAME,
                id=DEFAULT_DB_ID,
                state=catalog_pb2.DatabaseCreated,
                created_time=self._tso.allocate(),
            )
            # Another process opening the same store may have written it first; either record is fine.
            self._store.compare_and_swap(key, None, _encode(info))

    def _databases(self) -> list[catalog_pb2.DatabaseInfo]:
        out = [_decode(catalog_pb2.DatabaseInfo, k, v) for k, v in self._store.scan(keys.DB_INFO_PREFIX)]
        return sorted(out, key=lambda d: d.id)

    def _find_database(self, name: object) -> catalog_pb2.DatabaseInfo | None:
        if not isinstance(name, str):
            raise errors.ParameterInvalid(f"database name must be a string, got {type(name).__name__}")
        name = name or DEFAULT_DB_NAME
        return next((d for d in self._databases() if d.name == name), None)

    def _database(self, name: object) -> catalog_pb2.DatabaseInfo:
        db = self._find_database(name)
        if db is None:
            raise errors.DatabaseNotFound(database=name)
        return db

    def create_database(self, name: str, properties: Mapping[str, object] | None = None) -> catalog_pb2.DatabaseInfo:
        """Create a database; ``ParameterInvalid`` if the name is bad, taken, or 64 databases exist."""
        with self._lock:
            validate_name("database", name)
            props = normalize_properties("database", properties)
            dbs = self._databases()
            if any(d.name == name for d in dbs):
                raise errors.ParameterInvalid(f"database already exist: {name}")
            if len(dbs) >= MAX_DATABASES:
                raise errors.ParameterInvalid(
                    f"database number ({len(dbs)}) exceeds max configuration ({MAX_DATABASES})"
                )
            db_id = self._ids.allocate()
            while db_id == DEFAULT_DB_ID:  # 1 is the default database's fixed id
                db_id = self._ids.allocate()
            info = catalog_pb2.DatabaseInfo(
                name=name, id=db_id, state=catalog_pb2.DatabaseCreated, created_time=self._tso.allocate(),
                properties=props,
            )
            self._store.put(keys.db_key(db_id), _encode(info))
            return info

    def list_databases(self) -> list[catalog_pb2.DatabaseInfo]:
        """Every database, by id (``default``, id 1, first)."""
        return self._databases()

    def describe_database(self, name: str) -> catalog_pb2.DatabaseInfo:
        """``DatabaseNotFound`` if absent; ``""`` means ``default``."""
        return self._database(name)

    def drop_database(self, name: str) -> bool:
        """Drop an empty database. ``default`` and databases holding collections are refused."""
        with self._lock:
            if name == DEFAULT_DB_NAME:
                raise errors.ParameterInvalid("can not drop default database")
            db = self._find_database(name)
            if db is None:
                return False
            if self._store.scan(keys.collection_prefix(db.id)):
                raise errors.ParameterInvalid(
                    f"database:{name} not empty, must drop all collections before drop database"
                )
            self._store.delete(keys.db_key(db.id))
            return True

    # =========================================================================================
    # collections

    def _collection_records(self, db_id: int | None = None) -> list[tuple[str, catalog_pb2.CollectionInfo]]:
        rows = self._store.scan(keys.collection_prefix(db_id))
        return [(k, _decode(catalog_pb2.CollectionInfo, k, v)) for k, v in rows]

    def _find_collection(self, db_id: int, name: str) -> catalog_pb2.CollectionInfo | None:
        return next((c for _, c in self._collection_records(db_id) if c.schema.name == name), None)

    def _collection_by_id(self, collection_id: int) -> catalog_pb2.CollectionInfo | None:
        # On every task and health round: one read of the remembered key, not a scan that decodes
        # every collection. A key gone (dropped, or moved to another database) or never seen (made by
        # another process) falls back to the scan, which remembers every collection's key.
        key = self._collection_keys.get(collection_id)
        if key is not None:
            raw = self._store.get(key)
            if raw is not None:
                return _decode(catalog_pb2.CollectionInfo, key, raw)
            self._collection_keys.drop(collection_id)
        found = None
        for key, raw in self._store.scan(keys.COLLECTION_PREFIX):
            cid = keys.last_id(key)
            self._collection_keys.put(cid, key)
            if cid == collection_id:
                found = _decode(catalog_pb2.CollectionInfo, key, raw)
        return found

    def _require_collection(self, collection_id: object) -> catalog_pb2.CollectionInfo:
        cid = _check_int_id("collection id", collection_id)
        pb = self._collection_by_id(cid)
        if pb is None:
            raise errors.CollectionNotFound(collection=cid)
        return pb

    def _partitions(self, collection_id: int) -> list[catalog_pb2.PartitionInfo]:
        rows = self._store.scan(keys.partition_prefix(collection_id))
        out = [_decode(catalog_pb2.PartitionInfo, k, v) for k, v in rows]
        return sorted(out, key=lambda p: p.partitionID)

    def _view(self, pb: catalog_pb2.CollectionInfo) -> CollectionInfo:
        return CollectionInfo(pb, tuple(self._partitions(pb.ID)))

    def create_collection(
        self,
        db_name: str,
        name: str,
        schema: schema_pb2.CollectionSchema,
        shards_num: int = 1,
        properties: Mapping[str, object] | Iterable[common_pb2.KeyValuePair] | None = None,
        *,
        consistency_level: int = common_pb2.Bounded,
    ) -> CollectionInfo:
        """Validate and create a collection with its ``_default`` partition and ``shards_num`` channels.

        Field ids are assigned 100, 101, ... in schema order; see
        :func:`~.schema_rules.normalize_schema` for the rules and what is stored. ``shards_num <= 0``
        means 1 (Milvus's default), at most 16. If the name exists in the database with an identical
        definition the existing collection is returned (Milvus's CreateCollection is idempotent);
        with a different definition ``ParameterInvalid`` is raised.
        """
        with self._lock:
            db = self._database(db_name)
            stored = normalize_schema(name, db.name, schema)
            shards = normalize_shards_num(shards_num)
            props = normalize_properties("collection", properties)
            if consistency_level not in common_pb2.ConsistencyLevel.values():
                raise errors.ParameterInvalid(f"unknown consistency level {consistency_level!r}")

            existing = self._find_collection(db.id, name)
            if existing is not None:
                same = (
                    schema_signature(existing.schema) == schema_signature(stored)
                    and existing.shards_num == shards
                    and [(p.key, p.value) for p in existing.properties] == [(p.key, p.value) for p in props]
                    and existing.consistency_level == consistency_level
                )
                if same:
                    return self._view(existing)
                raise errors.ParameterInvalid(
                    f"create duplicate collection with different parameters, collection: {name}"
                )

            collection_id = self._ids.allocate()
            partition_id = self._ids.allocate()
            ts = self._tso.allocate()
            cursor_raw = self._store.get(keys.DML_CHANNEL_CURSOR_KEY)
            cursor = int(cursor_raw.decode("ascii")) if cursor_raw else 0
            pidx = [(cursor + k) % self.dml_channel_num for k in range(shards)]
            pb = catalog_pb2.CollectionInfo(
                ID=collection_id,
                schema=stored,
                create_time=ts,
                virtual_channel_names=[
                    keys.vchannel_name(self.cluster_prefix, p, collection_id, k) for k, p in enumerate(pidx)
                ],
                physical_channel_names=[keys.pchannel_name(self.cluster_prefix, p) for p in pidx],
                shards_num=shards,
                consistency_level=consistency_level,
                state=catalog_pb2.CollectionCreated,
                properties=props,
                db_id=db.id,
            )
            part = catalog_pb2.PartitionInfo(
                partitionID=partition_id,
                partitionName=DEFAULT_PARTITION_NAME,
                partition_created_timestamp=ts,
                collection_id=collection_id,
                state=catalog_pb2.PartitionCreated,
            )
            with self._store.txn() as t:
                t.put(keys.collection_key(db.id, collection_id), _encode(pb))
                t.put(keys.partition_key(collection_id, partition_id), _encode(part))
                t.put(keys.DML_CHANNEL_CURSOR_KEY, str((cursor + shards) % self.dml_channel_num).encode("ascii"))
            self._collection_keys.put(collection_id, keys.collection_key(db.id, collection_id))
            return CollectionInfo(pb, (part,))

    def describe_collection(self, db_name: str, name: str) -> CollectionInfo:
        """The collection ``name`` of database ``db_name`` (``""`` = default)."""
        db = self._database(db_name)
        if not isinstance(name, str):
            raise errors.ParameterInvalid(f"collection name must be a string, got {type(name).__name__}")
        pb = self._find_collection(db.id, name)
        if pb is None:
            raise errors.CollectionNotFound(database=db.name, collection=name)
        return self._view(pb)

    def has_collection(self, db_name: str, name: str) -> bool:
        db = self._database(db_name)
        return self._find_collection(db.id, name) is not None

    def get_collection(self, collection_id: int) -> CollectionInfo:
        """The collection with this id; ``CollectionNotFound`` if there is none (or it was dropped)."""
        return self._view(self._require_collection(collection_id))

    def list_collections(self, db_name: str = DEFAULT_DB_NAME) -> list[CollectionInfo]:
        """The collections of one database, by id (creation order)."""
        db = self._database(db_name)
        parts: dict[int, list[catalog_pb2.PartitionInfo]] = {}
        for k, v in self._store.scan(keys.PARTITION_PREFIX):
            p = _decode(catalog_pb2.PartitionInfo, k, v)
            parts.setdefault(p.collection_id, []).append(p)
        out = [
            CollectionInfo(pb, tuple(sorted(parts.get(pb.ID, []), key=lambda p: p.partitionID)))
            for _, pb in self._collection_records(db.id)
        ]
        return sorted(out, key=lambda c: c.id)

    def collection_of_channel(self, vchannel: str) -> CollectionInfo:
        """The live collection a virtual channel belongs to; ``ChannelNotFound`` otherwise."""
        try:
            _, cid, _ = keys.parse_vchannel(vchannel)
        except (ValueError, TypeError):
            raise errors.ChannelNotFound(channel=vchannel) from None
        pb = self._collection_by_id(cid)
        if pb is None or vchannel not in pb.virtual_channel_names:
            raise errors.ChannelNotFound(channel=vchannel)
        return self._view(pb)

    def drop_collection(self, db_name: str, name: str) -> bool:
        """Drop a collection in one transaction; ``False`` if there is none.

        The collection, its partitions and its channel checkpoints are deleted; its index
        definitions and segment indexes are marked deleted and its segments ``Dropped``, so that a
        garbage collector can still find their files (then :meth:`purge_segment` / :meth:`purge_index`).
        """
        with self._lock:
            db = self._database(db_name)
            pb = self._find_collection(db.id, name)
            if pb is None:
                return False
            cid = pb.ID
            with self._store.txn() as t:
                t.delete(keys.collection_key(db.id, cid))
                for k, _ in self._store.scan(keys.partition_prefix(cid)):
                    t.delete(k)
                self._mark_indexes_deleted(t, cid, index_id=None)
                self._mark_segments_dropped(t, self._segment_records(cid))
                for ch in pb.virtual_channel_names:
                    t.delete(keys.channel_cp_key(ch))
            self._collection_keys.drop(cid)
            return True

    # =========================================================================================
    # partitions

    def create_partition(self, collection_id: int, partition_name: str) -> catalog_pb2.PartitionInfo:
        """Create a partition (idempotent: an existing name returns that partition). At most 1024."""
        with self._lock:
            validate_name("partition", partition_name)
            pb = self._require_collection(collection_id)
            parts = self._partitions(pb.ID)
            for p in parts:
                if p.partitionName == partition_name:
                    return p
            if len(parts) >= MAX_PARTITIONS:
                raise errors.ParameterInvalid(
                    f"partition number ({len(parts)}) exceeds max configuration ({MAX_PARTITIONS}), "
                    f"collection: {pb.schema.name}, id: {pb.ID}"
                )
            part = catalog_pb2.PartitionInfo(
                partitionID=self._ids.allocate(),
                partitionName=partition_name,
                partition_created_timestamp=self._tso.allocate(),
                collection_id=pb.ID,
                state=catalog_pb2.PartitionCreated,
            )
            self._store.put(keys.partition_key(pb.ID, part.partitionID), _encode(part))
            return part

    def list_partitions(self, collection_id: int) -> list[catalog_pb2.PartitionInfo]:
        """The collection's partitions, by id (``_default`` first)."""
        pb = self._require_collection(collection_id)
        return self._partitions(pb.ID)

    def get_partition(self, collection_id: int, partition_name: str) -> catalog_pb2.PartitionInfo:
        pb = self._require_collection(collection_id)
        for p in self._partitions(pb.ID):
            if p.partitionName == partition_name:
                return p
        raise errors.PartitionNotFound(partition=partition_name)

    def drop_partition(self, collection_id: int, partition_name: str) -> bool:
        """Drop a partition (not ``_default``); its segments become ``Dropped``. ``False`` if absent."""
        with self._lock:
            if partition_name == DEFAULT_PARTITION_NAME:
                raise errors.ParameterInvalid("default partition cannot be deleted")
            pb = self._require_collection(collection_id)
            part = next((p for p in self._partitions(pb.ID) if p.partitionName == partition_name), None)
            if part is None:
                return False
            with self._store.txn() as t:
                t.delete(keys.partition_key(pb.ID, part.partitionID))
                self._mark_segments_dropped(t, self._segment_records(pb.ID, part.partitionID))
                for k, si in self._segment_index_records(pb.ID, part.partitionID):
                    if not si.deleted:
                        si.deleted = True
                        t.put(k, _encode(si))
            return True

    # =========================================================================================
    # indexes

    def _field_indexes(self, collection_id: int, *,
                       include_deleted: bool = False) -> list[tuple[str, catalog_pb2.FieldIndex]]:
        rows = self._store.scan(keys.field_index_prefix(collection_id))
        out = [(k, _decode(catalog_pb2.FieldIndex, k, v)) for k, v in rows]
        return [(k, fi) for k, fi in out if include_deleted or not fi.deleted]

    def _live_index(self, collection_id: int, index_id: int) -> catalog_pb2.FieldIndex:
        raw = self._store.get(keys.field_index_key(collection_id, index_id))
        key = keys.field_index_key(collection_id, index_id)
        fi = None if raw is None else _decode(catalog_pb2.FieldIndex, key, raw)
        if fi is None or fi.deleted:
            raise errors.IndexNotFound(collection=collection_id, indexID=index_id)
        return fi

    def create_index(
        self,
        collection_id: int,
        field_name: str,
        index_type: str,
        metric_type: str | None = None,
        params: Mapping[str, object] | None = None,
        *,
        index_name: str = "",
    ) -> int:
        """Define the index of a vector field; returns its index id.

        See :mod:`.index_rules` for the accepted types, metrics and parameters. The index name
        defaults to the field name. Creating the same index again returns the same id; a different
        index on a field that has one is refused (Milvus allows one index per field).
        """
        with self._lock:
            coll = self._view(self._require_collection(collection_id))
            field = coll.field(field_name)
            if field.data_type not in VECTOR_TYPES:
                raise errors.IndexNotSupported(
                    f"field {field_name!r} is {type_name(field.data_type)}; vecgrid builds indexes on FloatVector "
                    "fields only",
                    index_type=index_type,
                )
            spec = validate_index(index_type, metric_type, params, field_dim(field))
            name = index_name or field_name
            validate_name("index", name)
            for _, fi in self._field_indexes(coll.id):
                info = fi.index_info
                if info.fieldID == field.fieldID:
                    if info.index_name == name and kv_dict(info.user_index_params) == spec.user_params:
                        return info.indexID
                    raise errors.ParameterInvalid(
                        f"at most one distinct index is allowed per field: field {field_name!r} already has index "
                        f"{info.index_name!r} ({kv_dict(info.user_index_params)}); drop it first"
                    )
                if info.index_name == name:
                    raise errors.ParameterInvalid(
                        f"index name {name!r} is already used by field {coll.field_by_id(info.fieldID).name!r}"
                    )
            index_id = self._ids.allocate()
            info = index_coord_pb2.IndexInfo(
                collectionID=coll.id,
                fieldID=field.fieldID,
                index_name=name,
                indexID=index_id,
                type_params=list(field.type_params),
                index_params=kv_list(spec.index_params()),
                state=common_pb2.Finished,
                is_auto_index=spec.is_auto_index,
                user_index_params=kv_list(spec.user_params),
            )
            fi = catalog_pb2.FieldIndex(index_info=info, deleted=False, create_time=self._tso.allocate())
            self._store.put(keys.field_index_key(coll.id, index_id), _encode(fi))
            return index_id

    def describe_index(self, collection_id: int, field_name: str | None = None) -> list[index_coord_pb2.IndexInfo]:
        """The collection's live indexes (one field's if named), by field id; ``[]`` if none.

        ``total_rows`` / ``indexed_rows`` / ``pending_index_rows`` count the rows of the collection's
        Flushed, non-L0 segments and of those with a built index; ``state`` is ``Finished`` when every
        such row is indexed (trivially so with no segments), else ``InProgress``.
        """
        coll = self._view(self._require_collection(collection_id))
        field_id = coll.field(field_name).fieldID if field_name is not None else None
        indexes = [fi.index_info for _, fi in self._field_indexes(coll.id)
                   if field_id is None or fi.index_info.fieldID == field_id]
        if not indexes:
            return []
        segments = [s for s in self.list_segments(coll.id, states=[S.Flushed]) if s.level != L.L0]
        rows = {s.ID: s.num_of_rows for s in segments}
        built: dict[int, set[int]] = {}
        for _, si in self._segment_index_records(coll.id):
            if not si.deleted and si.state == common_pb2.Finished:
                built.setdefault(si.indexID, set()).add(si.segmentID)
        total = sum(rows.values())
        out = []
        for info in sorted(indexes, key=lambda i: i.fieldID):
            info = _copy(info)
            indexed = sum(rows[s] for s in built.get(info.indexID, ()) if s in rows)
            info.total_rows = total
            info.indexed_rows = indexed
            info.pending_index_rows = total - indexed
            info.state = common_pb2.Finished if indexed == total else common_pb2.InProgress
            out.append(info)
        return out

    def drop_index(self, collection_id: int, field_name: str) -> bool:
        """Mark the field's index and its segment indexes deleted; ``False`` if it has none."""
        with self._lock:
            coll = self._view(self._require_collection(collection_id))
            field = coll.field(field_name)
            target = next(
                (fi for _, fi in self._field_indexes(coll.id) if fi.index_info.fieldID == field.fieldID), None
            )
            if target is None:
                return False
            with self._store.txn() as t:
                self._mark_indexes_deleted(t, coll.id, index_id=target.index_info.indexID)
            return True

    def _mark_indexes_deleted(self, t: MetaTxn, collection_id: int, index_id: int | None) -> None:
        for k, fi in self._field_indexes(collection_id):
            if index_id is None or fi.index_info.indexID == index_id:
                fi.deleted = True
                t.put(k, _encode(fi))
        for k, si in self._segment_index_records(collection_id):
            if not si.deleted and (index_id is None or si.indexID == index_id):
                si.deleted = True
                t.put(k, _encode(si))

    def purge_index(self, collection_id: int, index_id: int) -> bool:
        """Forget a *deleted* index and its segment indexes (after their files were removed)."""
        with self._lock:
            key = keys.field_index_key(collection_id, index_id)
            raw = self._store.get(key)
            if raw is None:
                return False
            if not _decode(catalog_pb2.FieldIndex, key, raw).deleted:
                raise errors.ParameterInvalid(f"index {index_id} of collection {collection_id} is live; drop it first")
            with self._store.txn() as t:
                t.delete(key)
                for k, si in self._segment_index_records(collection_id):
                    if si.indexID == index_id:
                        t.delete(k)
            return True

    def _segment_index_records(self, collection_id: int | None = None, partition_id: int | None = None,
                               segment_id: int | None = None) -> list[tuple[str, catalog_pb2.SegmentIndex]]:
        prefix = keys.segment_index_prefix(collection_id, partition_id, segment_id)
        return [(k, _decode(catalog_pb2.SegmentIndex, k, v)) for k, v in self._store.scan(prefix)]

    def list_segment_indexes(
        self,
        collection_id: int,
        *,
        segment_id: int | None = None,
        index_id: int | None = None,
        include_deleted: bool = False,
    ) -> list[catalog_pb2.SegmentIndex]:
        """Built segment indexes of a collection (optionally one segment / index), by segment then build."""
        out = [si for _, si in self._segment_index_records(collection_id)
               if (segment_id is None or si.segmentID == segment_id)
               and (index_id is None or si.indexID == index_id)
               and (include_deleted or not si.deleted)]
        return sorted(out, key=lambda si: (si.segmentID, si.buildID))

    # =========================================================================================
    # segments

    def allocate_segment_id(self) -> int:
        return self._ids.allocate()

    def allocate_timestamp(self) -> int:
        """A fresh hybrid timestamp from the catalog's oracle (time ticks, write requests)."""
        return self._tso.allocate()

    def allocate_ids(self, count: int) -> int:
        """Reserve ``count`` consecutive ids (e.g. auto-id primary keys); returns the first."""
        return self._ids.allocate(count)

    def _segment_records(self, collection_id: int | None = None,
                         partition_id: int | None = None) -> list[tuple[str, data_coord_pb2.SegmentInfo]]:
        out = []
        for k, v in self._store.scan(keys.segment_prefix(collection_id, partition_id)):
            seg = _decode(data_coord_pb2.SegmentInfo, k, v)
            self._segment_keys.put(seg.ID, k)
            out.append((k, seg))
        return out

    def _find_segment(self, segment_id: object) -> tuple[str, data_coord_pb2.SegmentInfo] | None:
        sid = _check_int_id("segment id", segment_id)
        key = self._segment_keys.get(sid)
        if key is not None:
            raw = self._store.get(key)
            if raw is not None:
                return key, _decode(data_coord_pb2.SegmentInfo, key, raw)
            self._segment_keys.drop(sid)
        for k, raw in self._store.scan(keys.SEGMENT_PREFIX):
            if keys.last_id(k) == sid:
                self._segment_keys.put(sid, k)
                return k, _decode(data_coord_pb2.SegmentInfo, k, raw)
        return None

    def _find_segment_at(self, collection_id: int, partition_id: int,
                         segment_id: int) -> tuple[str, data_coord_pb2.SegmentInfo] | None:
        """Like :meth:`_find_segment` without a full scan: the expected key, else a known key of that id.

        Segment ids come from the allocator, so a fresh id has no record anywhere; only a caller that
        reuses an id of another partition is caught, through the key cache.
        """
        for key in (keys.segment_key(collection_id, partition_id, segment_id), self._segment_keys.get(segment_id)):
            if key is None:
                continue
            raw = self._store.get(key)
            if raw is not None:
                return key, _decode(data_coord_pb2.SegmentInfo, key, raw)
        return None

    def _require_segment(self, segment_id: object) -> tuple[str, data_coord_pb2.SegmentInfo]:
        found = self._find_segment(segment_id)
        if found is None:
            raise errors.SegmentNotFound(segment=segment_id)
        return found

    @staticmethod
    def _check_partition(coll: CollectionInfo, partition_id: object, level: int) -> None:
        pid = _check_int_id("partition id", partition_id)
        if pid == ALL_PARTITIONS_ID and level == L.L0:
            return
        if pid not in coll.partition_ids:
            raise errors.PartitionNotFound(f"collection {coll.name!r} has no partition with id {pid}", partition=pid)

    @staticmethod
    def _check_channel(coll: CollectionInfo, channel: object) -> None:
        if channel not in coll.vchannels:
            raise errors.ChannelNotFound(
                f"collection {coll.name!r} has channels {list(coll.vchannels)}", channel=channel
            )

    @staticmethod
    def _check_transition(segment_id: int, old: int, new: int) -> None:
        if new not in _STATE_RANK:
            raise errors.ParameterInvalid(f"segment state {_state_name(new)} cannot be set")
        if _STATE_RANK[new] < _STATE_RANK.get(old, 0):
            raise errors.ParameterInvalid(
                f"segment {segment_id} cannot go from {_state_name(old)} to {_state_name(new)}"
            )

    def add_segment(
        self,
        collection_id: int,
        partition_id: int,
        channel: str,
        *,
        segment_id: int | None = None,
        state: int = S.Growing,
        start_position: msg_pb2.MsgPosition | None = None,
        level: int = L.L1,
        max_row_num: int = 0,
    ) -> data_coord_pb2.SegmentInfo:
        """Record a new Growing (or Importing) segment of a partition and channel; returns its meta.

        ``segment_id`` defaults to a fresh id. Sealed data is recorded with :meth:`publish_segment`.
        ``partition_id`` may be ``-1`` (all partitions) for an L0 segment.
        """
        with self._lock:
            coll = self._view(self._require_collection(collection_id))
            self._check_partition(coll, partition_id, level)
            self._check_channel(coll, channel)
            if state not in (S.Growing, S.Importing):
                raise errors.ParameterInvalid(
                    f"a new segment is Growing or Importing, not {_state_name(state)}; "
                    "use publish_segment for sealed data"
                )
            if level not in (L.L0, L.L1, L.L2):
                raise errors.ParameterInvalid(f"segment level must be L0, L1 or L2, got {level}")
            if start_position is not None and not isinstance(start_position, msg_pb2.MsgPosition):
                raise errors.ParameterInvalid("start_position must be a msg.MsgPosition")
            if segment_id is not None:
                _check_int_id("segment id", segment_id)
                if segment_id <= 0:
                    raise errors.ParameterInvalid(f"segment id must be positive, got {segment_id}")
                if self._find_segment_at(coll.id, partition_id, segment_id) is not None:
                    raise errors.ParameterInvalid(f"segment {segment_id} already exists")
            sid = segment_id if segment_id is not None else self._ids.allocate()
            seg = data_coord_pb2.SegmentInfo(
                ID=sid, collectionID=coll.id, partitionID=partition_id, insert_channel=channel,
                state=state, max_row_num=max_row_num, level=level,
            )
            if start_position is not None:
                seg.start_position.CopyFrom(start_position)
            key = keys.segment_key(coll.id, partition_id, sid)
            self._store.put(key, _encode(seg))
            self._segment_keys.put(sid, key)
            return seg

    def get_segment(self, segment_id: int) -> data_coord_pb2.SegmentInfo:
        """A segment's meta (also when Dropped, until purged); ``SegmentNotFound`` otherwise."""
        return self._require_segment(segment_id)[1]

    def list_segments(
        self,
        collection_id: int,
        partition_id: int | None = None,
        channel: str | None = None,
        states: Iterable[int] | None = None,
    ) -> list[data_coord_pb2.SegmentInfo]:
        """Segments of a collection, by id, filtered by partition, insert channel and states.

        ``states=None`` means every state, ``Dropped`` included. Works for a dropped collection too
        (its segments stay listed, Dropped, until purged).
        """
        cid = _check_int_id("collection id", collection_id)
        wanted = None if states is None else set(states)
        out = [
            seg for _, seg in self._segment_records(cid, partition_id)
            if (channel is None or seg.insert_channel == channel) and (wanted is None or seg.state in wanted)
        ]
        return sorted(out, key=lambda s: s.ID)

    # -- files ---------------------------------------------------------------------------------

    @staticmethod
    def _normalize_file(f: object) -> catalog_pb2.SegmentFile:
        if not isinstance(f, catalog_pb2.SegmentFile):
            raise errors.ParameterInvalid(f"files must be catalog.SegmentFile messages, got {type(f).__name__}")
        out = _copy(f)
        if not out.path:
            raise errors.ParameterInvalid("a segment file has an empty path")
        if out.size < 0:
            raise errors.ParameterInvalid(f"file {out.path!r} has a negative size {out.size}")
        if not out.checksum_algorithm or not out.checksum:
            raise errors.ParameterInvalid(
                f"file {out.path!r} has no checksum (checksum_algorithm and checksum are required)"
            )
        out.checksum_algorithm = out.checksum_algorithm.lower()
        out.checksum = out.checksum.lower()
        return out

    @classmethod
    def _file_pool(cls, *sources: Iterable[object]) -> dict[str, catalog_pb2.SegmentFile]:
        pool: dict[str, catalog_pb2.SegmentFile] = {}
        for source in sources:
            for raw in source:
                f = cls._normalize_file(raw)
                prev = pool.get(f.path)
                if prev is not None and (prev.size, prev.checksum_algorithm, prev.checksum) != (
                        f.size, f.checksum_algorithm, f.checksum):
                    raise errors.ParameterInvalid(f"file {f.path!r} is listed twice with different size or checksum")
                pool[f.path] = f
        return pool

    @staticmethod
    def _bind(entry: catalog_pb2.SegmentFile | None, path: str, kind: int, field_id: int, index_id: int,
              segment_id: int) -> catalog_pb2.SegmentFile:
        if entry is None:
            raise errors.ParameterInvalid(f"segment {segment_id}: no size and checksum given for file {path!r}")
        if entry.kind not in (catalog_pb2.FileKindUnknown, kind):
            raise errors.ParameterInvalid(
                f"file {path!r} is a {catalog_pb2.FileKind.Name(kind)} of segment {segment_id}, "
                f"but was given as {catalog_pb2.FileKind.Name(entry.kind)}"
            )
        out = _copy(entry)
        out.kind = kind
        out.fieldID = field_id
        out.indexID = index_id
        return out

    def _bind_segment_files(
        self,
        seg: data_coord_pb2.SegmentInfo,
        indexes: list[catalog_pb2.SegmentIndex],
        new_files: dict[str, catalog_pb2.SegmentFile],
        old_files: dict[str, catalog_pb2.SegmentFile],
    ) -> list[catalog_pb2.SegmentFile]:
        """Give every file the segment and its indexes reference a checksum entry; return the log files'.

        Entries come from ``new_files`` first, then ``old_files`` (already recorded). Binlog sizes are
        checked against (or filled into) ``Binlog.log_size``; index files move into their
        ``SegmentIndex.files``. A new file that nothing references is an error.
        """
        referenced: set[str] = set()
        log_files: list[catalog_pb2.SegmentFile] = []
        for attr, kind in _KIND_OF_LOGS:
            for fb in getattr(seg, attr):
                for b in fb.binlogs:
                    if not b.log_path:
                        raise errors.ParameterInvalid(
                            f"segment {seg.ID}: a {attr} entry of field {fb.fieldID} has no log_path"
                        )
                    entry = self._bind(new_files.get(b.log_path, old_files.get(b.log_path)), b.log_path, kind,
                                       fb.fieldID, 0, seg.ID)
                    if b.log_size == 0:
                        b.log_size = entry.size
                    elif b.log_size != entry.size:
                        raise errors.ParameterInvalid(
                            f"segment {seg.ID}: {attr} {b.log_path!r} has log_size {b.log_size} but the file is "
                            f"{entry.size} bytes"
                        )
                    if b.log_path not in referenced:
                        referenced.add(b.log_path)
                        log_files.append(entry)
        for si in indexes:
            given = self._file_pool(si.files)
            field_id = self._live_index(seg.collectionID, si.indexID).index_info.fieldID
            del si.files[:]
            for path in si.index_file_keys:
                if path in referenced:
                    raise errors.ParameterInvalid(f"segment {seg.ID}: file {path!r} is referenced twice")
                entry = self._bind(new_files.get(path, given.get(path)), path, catalog_pb2.IndexFile,
                                   field_id, si.indexID, seg.ID)
                si.files.append(entry)
                referenced.add(path)
            stray = sorted(set(given) - set(si.index_file_keys))
            if stray:
                raise errors.ParameterInvalid(f"index build {si.indexID}: file(s) {stray} are not in index_file_keys")
            if si.serialize_size == 0:
                si.serialize_size = sum(f.size for f in si.files)
        unreferenced = sorted(set(new_files) - referenced)
        if unreferenced:
            raise errors.ParameterInvalid(f"segment {seg.ID}: file(s) {unreferenced} are not referenced by the segment")
        return sorted(log_files, key=lambda f: f.path)

    def _checksums(self, seg: data_coord_pb2.SegmentInfo) -> catalog_pb2.SegmentFileChecksums:
        key = keys.segment_files_key(seg.collectionID, seg.partitionID, seg.ID)
        raw = self._store.get(key)
        if raw is None:
            return catalog_pb2.SegmentFileChecksums(collectionID=seg.collectionID, partitionID=seg.partitionID,
                                                    segmentID=seg.ID)
        return _decode(catalog_pb2.SegmentFileChecksums, key, raw)

    def _files_record(self, seg: data_coord_pb2.SegmentInfo) -> dict[str, catalog_pb2.SegmentFile]:
        return {f.path: f for f in self._checksums(seg).files}

    def segment_root(self, segment_id: int) -> str:
        """The storage root a segment's file paths are relative to (``""``: the deployment default)."""
        return self._checksums(self._require_segment(segment_id)[1]).root

    @staticmethod
    def _check_rows(seg: data_coord_pb2.SegmentInfo) -> None:
        if seg.num_of_rows < 0:
            raise errors.ParameterInvalid(f"segment {seg.ID}: num_of_rows must not be negative")
        if seg.state != S.Flushed:
            return  # a growing segment's synced binlogs hold only part of its rows
        for fb in seg.binlogs:
            total = sum(b.entries_num for b in fb.binlogs)
            if total and total != seg.num_of_rows:
                raise errors.ParameterInvalid(
                    f"segment {seg.ID}: the binlogs of field {fb.fieldID} hold {total} rows, but num_of_rows is "
                    f"{seg.num_of_rows}"
                )

    @staticmethod
    def _merge_field_binlogs(target: Any, extra: Iterable[data_coord_pb2.FieldBinlog]) -> None:
        for fb in extra:
            if not isinstance(fb, data_coord_pb2.FieldBinlog):
                raise errors.ParameterInvalid(f"expected data.FieldBinlog, got {type(fb).__name__}")
            for existing in target:
                if existing.fieldID == fb.fieldID:
                    existing.binlogs.extend(fb.binlogs)
                    break
            else:
                target.add().CopyFrom(fb)

    def _checked_position(self, vchannel: str, position: object) -> msg_pb2.MsgPosition:
        if not isinstance(position, msg_pb2.MsgPosition):
            raise errors.ParameterInvalid(
                f"a channel checkpoint must be a msg.MsgPosition, got {type(position).__name__}"
            )
        pos = _copy(position)
        if not pos.channel_name:
            pos.channel_name = vchannel
        elif pos.channel_name != vchannel:
            raise errors.ParameterInvalid(
                f"checkpoint position is on channel {pos.channel_name!r}, not {vchannel!r}"
            )
        if not pos.msgID:
            raise errors.ParameterInvalid(f"invalid channel checkpoint for {vchannel!r}: msgID is empty")
        return pos

    # -- changes -------------------------------------------------------------------------------

    def update_segment(
        self,
        segment_id: int,
        *,
        state: int | None = None,
        num_of_rows: int | None = None,
        dml_position: msg_pb2.MsgPosition | None = None,
        binlogs: Iterable[data_coord_pb2.FieldBinlog] = (),
        statslogs: Iterable[data_coord_pb2.FieldBinlog] = (),
        deltalogs: Iterable[data_coord_pb2.FieldBinlog] = (),
        files: Iterable[catalog_pb2.SegmentFile] = (),
    ) -> data_coord_pb2.SegmentInfo:
        """Change a segment in one transaction; returns the new meta.

        ``binlogs``/``statslogs``/``deltalogs`` are *appended* (per field); every file they name needs
        an entry in ``files`` (size + checksum) unless already recorded. States only move forward
        (Growing -> Sealed -> Flushing -> Flushed -> Dropped); a Dropped segment cannot change.
        """
        with self._lock:
            key, old = self._require_segment(segment_id)
            if old.state == S.Dropped:
                if state == S.Dropped:
                    return old
                raise errors.ParameterInvalid(f"segment {old.ID} is dropped")
            seg = _copy(old)
            if state is not None:
                self._check_transition(seg.ID, seg.state, state)
                seg.state = state
                if state == S.Dropped:
                    seg.dropped_at = time.time_ns()
            if num_of_rows is not None:
                seg.num_of_rows = _check_int_id("num_of_rows", num_of_rows)
            if dml_position is not None:
                if not isinstance(dml_position, msg_pb2.MsgPosition):
                    raise errors.ParameterInvalid("dml_position must be a msg.MsgPosition")
                seg.dml_position.CopyFrom(dml_position)
            self._merge_field_binlogs(seg.binlogs, binlogs)
            self._merge_field_binlogs(seg.statslogs, statslogs)
            self._merge_field_binlogs(seg.deltalogs, deltalogs)
            self._check_rows(seg)
            record = self._checksums(old)
            old_files = {f.path: f for f in record.files}
            log_files = self._bind_segment_files(seg, [], self._file_pool(files), old_files)
            with self._store.txn() as t:
                t.put(key, _encode(seg))
                if [(_encode(f)) for f in log_files] != [_encode(old_files[p]) for p in sorted(old_files)]:
                    del record.files[:]
                    record.files.extend(log_files)
                    t.put(keys.segment_files_key(seg.collectionID, seg.partitionID, seg.ID), _encode(record))
            return seg

    def drop_segment(self, segment_id: int) -> data_coord_pb2.SegmentInfo:
        """Mark a segment Dropped (its files stay until :meth:`purge_segment`)."""
        return self.update_segment(segment_id, state=S.Dropped)

    def _mark_segments_dropped(self, t: MetaTxn, records: Iterable[tuple[str, data_coord_pb2.SegmentInfo]]) -> None:
        now = time.time_ns()
        for k, seg in records:
            if seg.state != S.Dropped:
                seg.state = S.Dropped
                seg.dropped_at = now
                t.put(k, _encode(seg))

    def publish_segment(
        self,
        segment: data_coord_pb2.SegmentInfo,
        files: Iterable[catalog_pb2.SegmentFile],
        *,
        checkpoint: msg_pb2.MsgPosition | None = None,
        indexes: Iterable[catalog_pb2.SegmentIndex] = (),
        root: str = "",
    ) -> data_coord_pb2.SegmentInfo:
        """Make a sealed segment visible: the storage layer's atomic publish point.

        ``segment`` is the full meta (collectionID, partitionID, insert_channel, num_of_rows, binlogs,
        statslogs, deltalogs, start/dml positions, level, compactionFrom); ``files`` gives the size and
        checksum of every file it (and ``indexes``) names. ``ID`` 0 allocates a new id; an existing
        Growing/Sealed record of the same id (the segment being sealed) is replaced. The stored state is
        ``Flushed`` (Milvus's state for a sealed segment whose files are written); a ``Legacy`` level
        becomes ``L1``. ``indexes`` are index builds shipped with the segment (``indexID`` and
        ``index_file_keys`` set; their files' checksums may be in ``files`` or in ``SegmentIndex.files``).
        Segments named in ``compactionFrom`` become Dropped. ``checkpoint`` advances the insert
        channel's checkpoint (an older one is ignored, as Milvus does). ``root`` is the storage root
        the file paths are relative to (kept with the checksums; see :meth:`segment_root`).

        Segment meta, file checksums, index records, compacted-from drops and the checkpoint are written
        in ONE store transaction: before it commits nothing is visible, after it all of it is. Publishing
        the identical segment again returns it unchanged.
        """
        with self._lock:
            plan = self._plan_publish(segment, files, checkpoint, indexes, root)
            self._commit_publish([plan])
            return plan[0]

    def publish_segments(self, items: Iterable[tuple[data_coord_pb2.SegmentInfo, Iterable[catalog_pb2.SegmentFile],
                                                     Mapping[str, Any]]]) -> list[data_coord_pb2.SegmentInfo]:
        """:meth:`publish_segment` for several segments in ONE transaction: all become visible or none.

        Each item is ``(segment, files, options)`` with the keyword options of :meth:`publish_segment`.
        A bulk import publishes its segments this way, so a crash mid-import publishes nothing.
        """
        with self._lock:
            plans = [self._plan_publish(seg, files, opts.get("checkpoint"), opts.get("indexes", ()),
                                        opts.get("root", "")) for seg, files, opts in items]
            self._commit_publish(plans)
            return [plan[0] for plan in plans]

    def _commit_publish(self, plans) -> None:
        checkpoints: dict[str, msg_pb2.MsgPosition] = {}
        for *_, cp in plans:
            if cp is not None and (cp.channel_name not in checkpoints
                                   or checkpoints[cp.channel_name].timestamp <= cp.timestamp):
                checkpoints[cp.channel_name] = cp
        while True:
            seen = {ch: self._store.get(keys.channel_cp_key(ch)) for ch in sorted(checkpoints)}
            try:
                with self._store.txn() as t:
                    for _, _, ops, _ in plans:
                        for op in ops:
                            if callable(op):
                                op(t)
                            else:
                                t.put(*op)
                    for ch, raw in seen.items():
                        if _checkpoint_advances(ch, raw, checkpoints[ch]):
                            t.expect(keys.channel_cp_key(ch), raw)
                            t.put(keys.channel_cp_key(ch), _encode(checkpoints[ch]))
            except MetaTxnConflictError:
                continue  # another process moved a checkpoint since it was read: decide again
            break
        for seg, key, _, _ in plans:
            self._segment_keys.put(seg.ID, key)

    def _plan_publish(self, segment, files, checkpoint, indexes, root):
        """Check one publish and return ``(segment meta, key, store writes)``; writes nothing."""
        # The caller holds self._lock.
        if not isinstance(segment, data_coord_pb2.SegmentInfo):
            raise errors.ParameterInvalid(f"segment must be a data.SegmentInfo, got {type(segment).__name__}")
        if not isinstance(root, str):
            raise errors.ParameterInvalid(f"root must be a string, got {type(root).__name__}")
        seg = _copy(segment)
        coll = self._view(self._require_collection(seg.collectionID))
        if seg.level == L.Legacy:
            seg.level = L.L1
        self._check_partition(coll, seg.partitionID, seg.level)
        self._check_channel(coll, seg.insert_channel)
        if seg.state not in (S.SegmentStateNone, S.Sealed, S.Flushing, S.Flushed):
            raise errors.ParameterInvalid(
                f"a published segment is sealed; state {_state_name(seg.state)} cannot be published"
            )
        seg.state = S.Flushed
        self._check_rows(seg)

        key = None
        old = None
        old_files: dict[str, catalog_pb2.SegmentFile] = {}
        if seg.ID:
            if seg.ID < 0:
                raise errors.ParameterInvalid(f"segment id must be positive, got {seg.ID}")
            found = self._find_segment_at(seg.collectionID, seg.partitionID, seg.ID)
            if found is not None:
                key, old = found
                if (old.collectionID, old.partitionID, old.insert_channel) != (
                        seg.collectionID, seg.partitionID, seg.insert_channel):
                    raise errors.ParameterInvalid(
                        f"segment {seg.ID} exists in collection {old.collectionID}, partition {old.partitionID}, "
                        f"channel {old.insert_channel!r}"
                    )
                if old.state == S.Dropped:
                    raise errors.ParameterInvalid(f"segment {seg.ID} is dropped")
                old_files = self._files_record(old)
                if not seg.HasField("start_position") and old.HasField("start_position"):
                    seg.start_position.CopyFrom(old.start_position)

        index_records = []
        for raw in indexes:
            if not isinstance(raw, catalog_pb2.SegmentIndex):
                raise errors.ParameterInvalid(
                    f"indexes must be catalog.SegmentIndex messages, got {type(raw).__name__}"
                )
            si = _copy(raw)
            self._live_index(coll.id, si.indexID)
            if si.segmentID not in (0, seg.ID) or si.collectionID not in (0, coll.id) or \
                    si.partitionID not in (0, seg.partitionID):
                raise errors.ParameterInvalid(f"index build {si.indexID} names another segment")
            if not si.index_file_keys:
                raise errors.ParameterInvalid(f"index build of index {si.indexID} has no index_file_keys")
            if any(s.indexID == si.indexID for s in index_records):
                raise errors.ParameterInvalid(f"index {si.indexID} is built twice for segment {seg.ID}")
            index_records.append(si)

        pool = self._file_pool(files)
        log_files = self._bind_segment_files(seg, index_records, pool, old_files)

        drops = []
        for src in seg.compactionFrom:
            found = self._find_segment(src)
            if found is None:
                raise errors.SegmentNotFound(f"segment {src} in compactionFrom", segment=src)
            if found[1].collectionID != coll.id or src == seg.ID:
                raise errors.ParameterInvalid(
                    f"segment {src} in compactionFrom is not another segment of collection {coll.id}"
                )
            drops.append(found)

        cp = None
        if checkpoint is not None:
            cp = self._checked_position(seg.insert_channel, checkpoint)

        if old is not None and old.state == S.Flushed:
            same = (
                _encode(old) == _encode(seg)
                and [_encode(f) for f in log_files] == [_encode(old_files[p]) for p in sorted(old_files)]
                and self._checksums(old).root == root
                and not index_records
            )
            if same:
                return seg, key, [], cp
            raise errors.ParameterInvalid(f"segment {seg.ID} is already published")

        # -------- everything checked: allocate, then write once --------
        if not seg.ID:
            seg.ID = self._ids.allocate()
            key = None
        if key is None:
            key = keys.segment_key(seg.collectionID, seg.partitionID, seg.ID)
        ts = self._tso.allocate() if index_records else 0
        for si in index_records:
            si.collectionID, si.partitionID, si.segmentID = coll.id, seg.partitionID, seg.ID
            si.buildID = si.buildID or self._ids.allocate()
            si.num_rows = si.num_rows or seg.num_of_rows
            si.state = common_pb2.Finished
            si.create_time = si.create_time or ts
            si.finished_time = si.finished_time or ts
        ops = [(key, _encode(seg)),
               (keys.segment_files_key(seg.collectionID, seg.partitionID, seg.ID), _encode(
                   catalog_pb2.SegmentFileChecksums(collectionID=seg.collectionID, partitionID=seg.partitionID,
                                                    segmentID=seg.ID, files=log_files, root=root)))]
        for si in index_records:
            ops.append((keys.segment_index_key(si.collectionID, si.partitionID, si.segmentID, si.buildID),
                        _encode(si)))
        ops.append(lambda t, drops=drops: self._mark_segments_dropped(t, drops))
        return seg, key, ops, cp

    def add_segment_index(
        self, index: catalog_pb2.SegmentIndex, files: Iterable[catalog_pb2.SegmentFile] = ()
    ) -> catalog_pb2.SegmentIndex:
        """Record an index built for a Flushed segment (``segmentID``, ``indexID``, ``index_file_keys``).

        Every index file needs a size and checksum, in ``files`` or ``index.files``. A previous live
        build of the same index for the segment is marked deleted in the same transaction.
        """
        with self._lock:
            if not isinstance(index, catalog_pb2.SegmentIndex):
                raise errors.ParameterInvalid(f"index must be a catalog.SegmentIndex, got {type(index).__name__}")
            si = _copy(index)
            _, seg = self._require_segment(si.segmentID)
            if seg.state != S.Flushed:
                raise errors.ParameterInvalid(
                    f"segment {seg.ID} is {_state_name(seg.state)}; only Flushed segments get indexes"
                )
            self._live_index(seg.collectionID, si.indexID)
            if not si.index_file_keys:
                raise errors.ParameterInvalid(f"index build of index {si.indexID} has no index_file_keys")
            self._bind_segment_files(data_coord_pb2.SegmentInfo(ID=seg.ID, collectionID=seg.collectionID), [si],
                                     self._file_pool(files), {})
            previous = [(k, old) for k, old in self._segment_index_records(seg.collectionID, seg.partitionID, seg.ID)
                        if old.indexID == si.indexID and not old.deleted]
            ts = self._tso.allocate()
            si.collectionID, si.partitionID = seg.collectionID, seg.partitionID
            si.buildID = self._ids.allocate()
            si.num_rows = si.num_rows or seg.num_of_rows
            si.state = common_pb2.Finished
            si.deleted = False
            si.create_time = si.create_time or ts
            si.finished_time = si.finished_time or ts
            with self._store.txn() as t:
                for k, old in previous:
                    old.deleted = True
                    t.put(k, _encode(old))
                t.put(keys.segment_index_key(si.collectionID, si.partitionID, si.segmentID, si.buildID), _encode(si))
            return si

    # -- records of vecgrid.storage.segment_files ----------------------------------------------

    def publish_segment_files(
        self,
        record: SegmentFilesRecord,
        insert_channel: str,
        *,
        checkpoint: msg_pb2.MsgPosition | None = None,
        start_position: msg_pb2.MsgPosition | None = None,
        dml_position: msg_pb2.MsgPosition | None = None,
        level: int = L.L1,
        compaction_from: Iterable[int] = (),
    ) -> data_coord_pb2.SegmentInfo:
        """:meth:`publish_segment` for a record returned by ``segment_files.write_segment``.

        The record's index files (``record.indexes``: field id -> file) become builds of each field's
        live index. See :mod:`.segment_bridge` for how the files map onto ``SegmentInfo``.
        """
        return self.publish_segment_records([dict(
            record=record, insert_channel=insert_channel, checkpoint=checkpoint, start_position=start_position,
            dml_position=dml_position, level=level, compaction_from=compaction_from)])[0]

    def publish_segment_records(self, items: Iterable[Mapping[str, Any]]) -> list[data_coord_pb2.SegmentInfo]:
        """Several :meth:`publish_segment_files` calls (keyword dicts) in ONE transaction."""
        with self._lock:
            return self.publish_segments([self._record_publish_args(**item) for item in items])

    def _record_publish_args(self, record: SegmentFilesRecord, insert_channel: str, *,
                             checkpoint: msg_pb2.MsgPosition | None = None,
                             start_position: msg_pb2.MsgPosition | None = None,
                             dml_position: msg_pb2.MsgPosition | None = None,
                             level: int = L.L1, compaction_from: Iterable[int] = ()):
        seg, files = segment_bridge.to_segment_info(record, insert_channel)
        seg.level = level
        for name, position in (("start_position", start_position), ("dml_position", dml_position)):
            if position is not None:
                if not isinstance(position, msg_pb2.MsgPosition):
                    raise errors.ParameterInvalid(f"{name} must be a msg.MsgPosition")
                getattr(seg, name).CopyFrom(position)
        seg.compactionFrom.extend(compaction_from)
        indexes = []
        if record.indexes:
            live = {fi.index_info.fieldID: fi.index_info.indexID
                    for _, fi in self._field_indexes(self._require_collection(record.collection_id).ID)}
            for field_id, info in sorted(record.indexes.items()):
                if field_id not in live:
                    raise errors.IndexNotFound(f"field {field_id} has no index", collection=record.collection_id)
                indexes.append(segment_bridge.to_segment_index(info, live[field_id], field_id))
        return seg, files, {"checkpoint": checkpoint, "indexes": indexes, "root": record.root}

    def segment_files_record(self, segment_id: int) -> SegmentFilesRecord:
        """The ``segment_files.SegmentFiles`` record to open (and verify) a segment with.

        Only for segments in that layout (one data file, at most one delete log, one file per index).
        """
        _, seg = self._require_segment(segment_id)
        checksums = self._checksums(seg)
        builds = [si for _, si in self._segment_index_records(seg.collectionID, seg.partitionID, seg.ID)
                  if not si.deleted]
        return segment_bridge.to_record(checksums.root, seg, {f.path: f for f in checksums.files}, builds)

    def add_index_file(self, segment_id: int, field_id: int, info: FileInfo, *,
                       index_id: int | None = None) -> catalog_pb2.SegmentIndex:
        """Record the index file of vector field ``field_id`` (``segment_files.put_file``'s result).

        ``index_id``: the index the file was built for; when the field's live index is another
        (dropped and created again since), ``IndexNotFound`` and nothing is recorded."""
        with self._lock:
            _, seg = self._require_segment(segment_id)
            live = {fi.index_info.fieldID: fi.index_info.indexID for _, fi in self._field_indexes(seg.collectionID)}
            if field_id not in live:
                raise errors.IndexNotFound(f"field {field_id} has no index", collection=seg.collectionID)
            if index_id is not None and live[field_id] != index_id:
                raise errors.IndexNotFound(f"index {index_id} of field {field_id} is no longer live "
                                           f"(the live one is {live[field_id]})", collection=seg.collectionID)
            build = segment_bridge.to_segment_index(info, live[field_id], field_id)
            build.segmentID = seg.ID
            return self.add_segment_index(build)

    def segment_files(self, segment_id: int) -> list[catalog_pb2.SegmentFile]:
        """Size and checksum of every file of a segment: its logs and its live index builds, by path."""
        _, seg = self._require_segment(segment_id)
        out = list(self._files_record(seg).values())
        for _, si in self._segment_index_records(seg.collectionID, seg.partitionID, seg.ID):
            if not si.deleted:
                out.extend(si.files)
        return sorted(out, key=lambda f: f.path)

    def purge_segment(self, segment_id: int) -> bool:
        """Forget a *Dropped* segment, its checksums and index builds (after its files were removed)."""
        with self._lock:
            found = self._find_segment(segment_id)
            if found is None:
                return False
            key, seg = found
            if seg.state != S.Dropped:
                raise errors.ParameterInvalid(f"segment {seg.ID} is {_state_name(seg.state)}; drop it before purging")
            with self._store.txn() as t:
                t.delete(key)
                t.delete(keys.segment_files_key(seg.collectionID, seg.partitionID, seg.ID))
                for k, _ in self._segment_index_records(seg.collectionID, seg.partitionID, seg.ID):
                    t.delete(k)
            self._segment_keys.drop(seg.ID)
            return True

    # =========================================================================================
    # channel checkpoints

    def set_channel_checkpoint(self, vchannel: str, position: msg_pb2.MsgPosition) -> bool:
        """Advance a live channel's checkpoint; an older position is ignored (returns ``False``)."""
        with self._lock:
            self.collection_of_channel(vchannel)
            pos = self._checked_position(vchannel, position)
            key, value = keys.channel_cp_key(vchannel), _encode(pos)
            # Compare-and-swap, not read-then-put: the lock holds only in this process, and an
            # import or flush in another one may move the checkpoint between the read and the write.
            while True:
                raw = self._store.get(key)
                if not _checkpoint_advances(vchannel, raw, pos):
                    return False
                if self._store.compare_and_swap(key, raw, value):
                    return True

    def get_channel_checkpoint(self, vchannel: str) -> msg_pb2.MsgPosition | None:
        """The channel's checkpoint, or ``None`` if none was set."""
        raw = self._store.get(keys.channel_cp_key(vchannel))
        return None if raw is None else _decode(msg_pb2.MsgPosition, keys.channel_cp_key(vchannel), raw)

    def channel_checkpoints(self, collection_id: int) -> dict[str, msg_pb2.MsgPosition]:
        """Checkpoint of each of the collection's channels that has one."""
        pb = self._require_collection(collection_id)
        out = {}
        for ch in pb.virtual_channel_names:
            cp = self.get_channel_checkpoint(ch)
            if cp is not None:
                out[ch] = cp
        return out
