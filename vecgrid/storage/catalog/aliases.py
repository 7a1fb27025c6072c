"""Collection aliases: a second name of a collection in its database (Milvus's CreateAlias family).

Part of :class:`~.meta.Catalog`.  An alias is resolved wherever a collection is read by name
(:meth:`~.collections.CollectionMeta.describe_collection` and ``has_collection``), so every door —
MilvusService, REST, the proxy — accepts it; changes by name (drop, rename) refuse an alias, as
Milvus does, and a collection with aliases cannot be dropped until they are.  Names of collections
and aliases of one database never collide.  Rules and messages follow Milvus 2.4's RootCoord
(``meta_table.go``: CreateAlias, AlterAlias, DropAlias).
"""

from __future__ import annotations

from vecgrid import errors
from vecgrid.proto import catalog_pb2

from . import keys
from .base import CatalogBase, decode, encode
from .schema_rules import validate_name


class AliasMeta(CatalogBase):
    """Aliases of collections, one record each."""

    def _aliases(self, db_id: int) -> list[catalog_pb2.AliasInfo]:
        return [decode(catalog_pb2.AliasInfo, k, v) for k, v in self._store.scan(keys.alias_prefix(db_id))]

    def _find_alias(self, db_id: int, alias: str) -> catalog_pb2.AliasInfo | None:
        raw = self._store.get(keys.alias_key(db_id, alias)) if isinstance(alias, str) and alias else None
        return None if raw is None else decode(catalog_pb2.AliasInfo, keys.alias_key(db_id, alias), raw)

    def _aliased_collection(self, db_id: int, alias: str):
        """The collection record an alias names, or ``None`` (no such alias)."""
        info = self._find_alias(db_id, alias)
        return None if info is None else self._collection_by_id(info.collectionID)

    def aliases_of(self, collection_id: int) -> list[str]:
        """The aliases naming a collection, sorted."""
        coll = self.get_collection(collection_id)
        return sorted(a.alias_name for a in self._aliases(coll.db_id) if a.collectionID == collection_id)

    def _check_alias(self, db, alias: str, collection: str):
        validate_name("alias", alias)
        if self._find_collection(db.id, alias) is not None:
            raise errors.ParameterInvalid(f"cannot create or alter alias, a collection with the same name already "
                                          f"exists: {alias}")
        target = self._find_collection(db.id, collection) if isinstance(collection, str) else None
        if target is None:
            if isinstance(collection, str) and self._find_alias(db.id, collection) is not None:
                raise errors.ParameterInvalid(f"cannot create an alias of an alias: {collection}")
            raise errors.CollectionNotFound(database=db.name, collection=collection)
        return target

    def create_alias(self, db_name: str, alias: str, collection: str) -> None:
        """Name ``collection`` also ``alias``; the same alias of the same collection again changes nothing."""
        with self._lock:
            db = self._database(db_name)
            target = self._check_alias(db, alias, collection)
            existing = self._find_alias(db.id, alias)
            if existing is not None:
                if existing.collectionID == target.ID:
                    return
                other = self._collection_by_id(existing.collectionID)
                raise errors.ParameterInvalid(
                    f"alias exists and already aliased to another collection, alias: {alias}, collection: "
                    f"{collection}, other collection: {other.schema.name if other is not None else existing.collectionID}")
            self._write_alias(db.id, alias, target.ID)

    def alter_alias(self, db_name: str, alias: str, collection: str) -> None:
        """Point an existing alias at another collection."""
        with self._lock:
            db = self._database(db_name)
            target = self._check_alias(db, alias, collection)
            if self._find_alias(db.id, alias) is None:
                raise errors.ParameterInvalid(f"failed to alter alias, alias does not exist: {alias}")
            self._write_alias(db.id, alias, target.ID)

    def _write_alias(self, db_id: int, alias: str, collection_id: int) -> None:
        info = catalog_pb2.AliasInfo(alias_name=alias, collectionID=collection_id, created_time=self._tso.allocate(),
                                     dbID=db_id)
        self._store.put(keys.alias_key(db_id, alias), encode(info))

    def drop_alias(self, db_name: str, alias: str) -> bool:
        """Drop an alias; ``False`` when there is none (Milvus drops what is not there without an error)."""
        with self._lock:
            db = self._database(db_name)
            if self._find_alias(db.id, alias) is None:
                return False
            self._store.delete(keys.alias_key(db.id, alias))
            return True

    def describe_alias(self, db_name: str, alias: str) -> str:
        """The name of the collection ``alias`` names."""
        db = self._database(db_name)
        coll = self._aliased_collection(db.id, alias)
        if coll is None:
            raise errors.ParameterInvalid(f"alias not found[database={db.name}][alias={alias}]")
        return coll.schema.name

    def list_aliases(self, db_name: str, collection: str = "") -> list[tuple[str, str]]:
        """``(alias, collection name)`` of the database's aliases, or of one collection's (its name or an alias)."""
        db = self._database(db_name)
        only = None
        if collection:
            target = self._find_collection(db.id, collection) or self._aliased_collection(db.id, collection)
            if target is None:
                raise errors.CollectionNotFound(database=db.name, collection=collection)
            only = target.ID
        names = {c.ID: c.schema.name for _, c in self._collection_records(db.id)}
        return sorted((a.alias_name, names.get(a.collectionID, "")) for a in self._aliases(db.id)
                      if only is None or a.collectionID == only)

    def _refuse_alias_name(self, db, name: str, what: str) -> None:
        """A change by name (drop, rename) that names an alias: refused, as Milvus's RootCoord does."""
        if self._find_alias(db.id, name) is not None:
            raise errors.ParameterInvalid(f"cannot {what} the collection via alias = {name}")

    def _refuse_aliased(self, db, pb: catalog_pb2.CollectionInfo) -> None:
        """Dropping a collection that aliases still name: refused until they are dropped."""
        names = sorted(a.alias_name for a in self._aliases(db.id) if a.collectionID == pb.ID)
        if names:
            raise errors.ParameterInvalid(f"unable to drop the collection [{pb.schema.name}] because it has "
                                          f"associated aliases {names}, please remove all aliases before dropping "
                                          "the collection")

    def check_droppable(self, db_name: str, name: str) -> None:
        """Raise what :meth:`drop_collection` would refuse ``name`` for (an alias, a collection with aliases):
        the coordinator asks before it releases the collection."""
        db = self._database(db_name)
        self._refuse_alias_name(db, name, "drop")
        pb = self._find_collection(db.id, name)
        if pb is not None:
            self._refuse_aliased(db, pb)
