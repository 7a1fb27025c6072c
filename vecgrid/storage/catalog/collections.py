"""Databases, collections and partitions: what Milvus's RootCoord keeps.

Part of :class:`~.meta.Catalog` (see :mod:`.base` for the lock that owns every write). A collection is
created with its ``_default`` partition and its DML channels in one transaction; dropping one drops
its partitions and channel checkpoints and marks its indexes deleted and its segments Dropped in the
same transaction (through :mod:`.indexes` and :mod:`.segments`: ``_mark_indexes_deleted``,
``_segment_records``, ``_segment_index_records``, ``_mark_segments_dropped``).

``get_collection`` and ``collection_of_channel`` run on every coordinator task and health round: they
read the collection's remembered key (``_collection_keys``) rather than scanning every collection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from vecgrid import errors
from vecgrid.proto import catalog_pb2, common_pb2, schema_pb2

from . import keys
from .base import CatalogBase, check_int_id, decode, encode
from .info import CollectionInfo
from .schema_rules import (
    DEFAULT_DB_ID,
    DEFAULT_DB_NAME,
    DEFAULT_PARTITION_NAME,
    MAX_DATABASES,
    MAX_PARTITIONS,
    normalize_properties,
    normalize_schema,
    normalize_shards_num,
    schema_signature,
    validate_name,
)


class CollectionMeta(CatalogBase):
    """Databases, collections (schema, shards / DML channels) and partitions."""

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
            self._store.compare_and_swap(key, None, encode(info))

    def _databases(self) -> list[catalog_pb2.DatabaseInfo]:
        out = [decode(catalog_pb2.DatabaseInfo, k, v) for k, v in self._store.scan(keys.DB_INFO_PREFIX)]
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
            self._store.put(keys.db_key(db_id), encode(info))
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
        return [(k, decode(catalog_pb2.CollectionInfo, k, v)) for k, v in rows]

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
                return decode(catalog_pb2.CollectionInfo, key, raw)
            self._collection_keys.drop(collection_id)
        found = None
        for key, raw in self._store.scan(keys.COLLECTION_PREFIX):
            cid = keys.last_id(key)
            self._collection_keys.put(cid, key)
            if cid == collection_id:
                found = decode(catalog_pb2.CollectionInfo, key, raw)
        return found

    def _require_collection(self, collection_id: object) -> catalog_pb2.CollectionInfo:
        cid = check_int_id("collection id", collection_id)
        pb = self._collection_by_id(cid)
        if pb is None:
            raise errors.CollectionNotFound(collection=cid)
        return pb

    def _partitions(self, collection_id: int) -> list[catalog_pb2.PartitionInfo]:
        rows = self._store.scan(keys.partition_prefix(collection_id))
        out = [decode(catalog_pb2.PartitionInfo, k, v) for k, v in rows]
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

            if self._find_alias(db.id, name) is not None:
                raise errors.ParameterInvalid(f"collection name [{name}] conflicts with an existing alias, please "
                                              "choose a unique name")
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
                t.put(keys.collection_key(db.id, collection_id), encode(pb))
                t.put(keys.partition_key(collection_id, partition_id), encode(part))
                t.put(keys.DML_CHANNEL_CURSOR_KEY, str((cursor + shards) % self.dml_channel_num).encode("ascii"))
            self._collection_keys.put(collection_id, keys.collection_key(db.id, collection_id))
            return CollectionInfo(pb, (part,))

    def describe_collection(self, db_name: str, name: str) -> CollectionInfo:
        """The collection ``name`` of database ``db_name`` (``""`` = default)."""
        db = self._database(db_name)
        if not isinstance(name, str):
            raise errors.ParameterInvalid(f"collection name must be a string, got {type(name).__name__}")
        pb = self._find_collection(db.id, name) or self._aliased_collection(db.id, name)
        if pb is None:
            raise errors.CollectionNotFound(database=db.name, collection=name)
        return self._view(pb)

    def has_collection(self, db_name: str, name: str) -> bool:
        """Whether ``name`` names a collection of the database, or an alias of one (as Milvus answers)."""
        db = self._database(db_name)
        return (self._find_collection(db.id, name) or self._aliased_collection(db.id, name)) is not None

    def get_collection(self, collection_id: int) -> CollectionInfo:
        """The collection with this id; ``CollectionNotFound`` if there is none (or it was dropped)."""
        return self._view(self._require_collection(collection_id))

    def list_collections(self, db_name: str = DEFAULT_DB_NAME) -> list[CollectionInfo]:
        """The collections of one database, by id (creation order)."""
        return self._collections(self._database(db_name).id)

    def all_collections(self) -> list[CollectionInfo]:
        """The collections of every database, by id: what DataCoord's policies sweep (one scan)."""
        return self._collections(None)

    def _collections(self, db_id: int | None) -> list[CollectionInfo]:
        parts: dict[int, list[catalog_pb2.PartitionInfo]] = {}
        for k, v in self._store.scan(keys.PARTITION_PREFIX):
            p = decode(catalog_pb2.PartitionInfo, k, v)
            parts.setdefault(p.collection_id, []).append(p)
        out = [
            CollectionInfo(pb, tuple(sorted(parts.get(pb.ID, []), key=lambda p: p.partitionID)))
            for _, pb in self._collection_records(db_id)
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
            self.check_droppable(db.name, name)
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

    def rename_collection(self, db_name: str, old_name: str, new_name: str) -> CollectionInfo:
        """Milvus's RenameCollection within one database: the id, channels, segments and loads stay.

        ``CollectionNotFound`` when ``old_name`` does not exist; ``ParameterInvalid`` for a bad new name
        or one another collection of the database holds (nothing is written then).
        """
        with self._lock:
            db = self._database(db_name)
            validate_name("collection", new_name)
            if isinstance(old_name, str):
                self._refuse_alias_name(db, old_name, "rename")
            if self._find_alias(db.id, new_name) is not None:
                raise errors.ParameterInvalid(f"cannot rename collection to an existing alias: {new_name}")
            pb = self._find_collection(db.id, old_name) if isinstance(old_name, str) else None
            if pb is None:
                raise errors.CollectionNotFound(database=db.name, collection=old_name)
            if new_name == old_name:
                return self._view(pb)
            if self._find_collection(db.id, new_name) is not None:
                raise errors.ParameterInvalid(
                    f"duplicated new collection name {db.name}:{new_name} with other collection name")
            pb.schema.name = new_name
            self._store.put(keys.collection_key(db.id, pb.ID), encode(pb))
            return self._view(pb)

    def alter_collection(self, db_name: str, name: str, *, properties: Mapping[str, object] | None = None,
                         description: str | None = None) -> CollectionInfo:
        """Milvus's AlterCollection: ``properties`` are merged into the collection's (a key given again is
        replaced), ``description`` replaces the schema's. Validated before anything is written."""
        with self._lock:
            db = self._database(db_name)
            if not isinstance(name, str):
                raise errors.ParameterInvalid(f"collection name must be a string, got {type(name).__name__}")
            pb = self._find_collection(db.id, name)
            if pb is None:
                raise errors.CollectionNotFound(database=db.name, collection=name)
            if description is not None and not isinstance(description, str):
                raise errors.ParameterInvalid(f"description must be a string, got {type(description).__name__}")
            merged = {p.key: p.value for p in pb.properties}
            merged.update({p.key: p.value for p in normalize_properties("collection", properties)})
            props = normalize_properties("collection", merged)
            del pb.properties[:]
            pb.properties.extend(props)
            if description is not None:
                pb.schema.description = description
            self._store.put(keys.collection_key(db.id, pb.ID), encode(pb))
            return self._view(pb)

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
            self._store.put(keys.partition_key(pb.ID, part.partitionID), encode(part))
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
                        t.put(k, encode(si))
            return True
