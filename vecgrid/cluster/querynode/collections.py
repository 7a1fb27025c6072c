"""Collections a QueryNode serves: schema, load meta and index definitions.

Milvus's QueryNode keeps one entry per collection in its ``CollectionManager``: it is
created by the first ``LoadSegments`` / ``WatchDmChannels`` that carries the schema,
extended by ``LoadPartitions`` and dropped by ``ReleaseCollection``.  Here a
:class:`Collection` holds the same facts and :class:`CollectionManager` the table of
them.

A :class:`Collection` is changed only through :meth:`Collection.updated`, which returns
a new object: a request builds the collection it needs, does its (possibly failing)
work against it, and only then :meth:`CollectionManager.commit`\\ s it, so a failed
request leaves the node's state as it was.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable, Iterable

from vecgrid import errors
from vecgrid.proto import index_coord_pb2, query_coord_pb2, schema_pb2

VECTOR_TYPES = frozenset({schema_pb2.FloatVector, schema_pb2.BinaryVector, schema_pb2.Float16Vector,
                          schema_pb2.BFloat16Vector, schema_pb2.SparseFloatVector})


def field_dim(f: schema_pb2.FieldSchema) -> int:
    for kv in f.type_params:
        if kv.key == "dim":
            try:
                return int(kv.value)
            except ValueError:
                return 0
    return 0


@dataclass
class Collection:
    """One loaded collection as this node knows it (treat as immutable; see :meth:`updated`)."""

    id: int
    schema: schema_pb2.CollectionSchema
    load_type: int = query_coord_pb2.UnKnownType
    partitions: frozenset[int] = frozenset()
    load_fields: tuple[int, ...] = ()
    indexes: dict[int, index_coord_pb2.IndexInfo] = field(default_factory=dict)  # by field id
    db_name: str = ""
    resource_group: str = ""
    replica_id: int = 0

    # -- schema --------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.schema.name

    @property
    def fields(self) -> dict[int, schema_pb2.FieldSchema]:
        return {f.fieldID: f for f in self.schema.fields}

    def field(self, field_id: int) -> schema_pb2.FieldSchema:
        for f in self.schema.fields:
            if f.fieldID == field_id:
                return f
        raise errors.FieldNotFound(f"collection {self.id} has no field {field_id}", field=field_id)

    @property
    def pk_field(self) -> schema_pb2.FieldSchema:
        for f in self.schema.fields:
            if f.is_primary_key:
                return f
        raise errors.CollectionIllegalSchema(f"collection {self.id} has no primary key")

    def loads_field(self, field_id: int) -> bool:
        """Whether the field's data is loaded (partial load: ``load_fields``; the pk always is)."""
        if not self.load_fields:
            return True
        return field_id in self.load_fields or field_id == self.pk_field.fieldID

    @property
    def vector_fields(self) -> list[schema_pb2.FieldSchema]:
        return [f for f in self.schema.fields if f.data_type in VECTOR_TYPES and self.loads_field(f.fieldID)]

    @property
    def scalar_fields(self) -> list[schema_pb2.FieldSchema]:
        """Loaded non-vector fields other than the primary key."""
        return [f for f in self.schema.fields
                if f.data_type not in VECTOR_TYPES and not f.is_primary_key and self.loads_field(f.fieldID)]

    def load_meta(self) -> query_coord_pb2.LoadMetaInfo:
        return query_coord_pb2.LoadMetaInfo(load_type=self.load_type, collectionID=self.id,
                                            partitionIDs=sorted(self.partitions), db_name=self.db_name,
                                            resource_group=self.resource_group, load_fields=list(self.load_fields))

    # -- changes -------------------------------------------------------------------------------
    def updated(self, *, schema: schema_pb2.CollectionSchema | None = None,
                load_meta: query_coord_pb2.LoadMetaInfo | None = None,
                index_infos: Iterable[index_coord_pb2.IndexInfo] = (),
                add_partitions: Iterable[int] = (), remove_partitions: Iterable[int] = (),
                replica_id: int = 0) -> "Collection":
        """A copy with the request's facts merged in: a newer schema replaces the old one,
        load meta adds partitions (and sets the load type / fields when given), index infos
        replace those of their fields."""
        new = copy.copy(self)
        if schema is not None and len(schema.fields):
            new.schema = schema
        partitions = set(self.partitions)
        if load_meta is not None:
            if load_meta.load_type:
                new.load_type = load_meta.load_type
            partitions.update(load_meta.partitionIDs)
            if load_meta.load_fields:
                new.load_fields = tuple(load_meta.load_fields)
            new.db_name = load_meta.db_name or self.db_name
            new.resource_group = load_meta.resource_group or self.resource_group
        partitions.update(add_partitions)
        partitions.difference_update(remove_partitions)
        new.partitions = frozenset(partitions)
        indexes = dict(self.indexes)
        for info in index_infos:
            indexes[info.fieldID] = info
        new.indexes = indexes
        if replica_id:
            new.replica_id = replica_id
        return new


class CollectionManager:
    """The collections of one node, by id.  ``on_change`` runs after every change."""

    def __init__(self, on_change: Callable[[], None] = lambda: None) -> None:
        self._collections: dict[int, Collection] = {}
        self._on_change = on_change

    def __len__(self) -> int:
        return len(self._collections)

    def __contains__(self, collection_id: int) -> bool:
        return collection_id in self._collections

    def get(self, collection_id: int) -> Collection | None:
        return self._collections.get(collection_id)

    def require(self, collection_id: int) -> Collection:
        """The collection, or Milvus's ``collection not loaded`` (101)."""
        coll = self._collections.get(collection_id)
        if coll is None:
            raise errors.CollectionNotLoaded(collection=collection_id)
        return coll

    def all(self) -> list[Collection]:
        return [self._collections[k] for k in sorted(self._collections)]

    def prepare(self, collection_id: int, *, schema: schema_pb2.CollectionSchema | None,
                load_meta: query_coord_pb2.LoadMetaInfo | None,
                index_infos: Iterable[index_coord_pb2.IndexInfo] = (), replica_id: int = 0) -> Collection:
        """The collection a load request works with (not stored until :meth:`commit`).

        An unknown collection needs the request's schema (Milvus creates it from there)."""
        current = self._collections.get(collection_id)
        if current is None:
            if schema is None or not len(schema.fields):
                raise errors.ParameterInvalid(
                    f"collection {collection_id} is not loaded on this node and the request carries no schema",
                    collection=collection_id)
            current = Collection(collection_id, schema)
            if not any(f.is_primary_key for f in schema.fields):
                raise errors.CollectionIllegalSchema(f"collection {collection_id}: the schema has no primary key")
        return current.updated(schema=schema, load_meta=load_meta, index_infos=index_infos,
                               replica_id=replica_id)

    def commit(self, coll: Collection) -> None:
        """Store ``coll`` (``on_change`` runs only when it differs from what was stored)."""
        if self._collections.get(coll.id) == coll:
            return
        self._collections[coll.id] = coll
        self._on_change()

    def add_partitions(self, collection_id: int, partition_ids: Iterable[int]) -> bool:
        """LoadPartitions: add partitions to a known collection; ``False`` (nothing done) if unknown."""
        coll = self._collections.get(collection_id)
        if coll is None:
            return False
        self.commit(coll.updated(add_partitions=partition_ids))
        return True

    def remove_partitions(self, collection_id: int, partition_ids: Iterable[int]) -> bool:
        coll = self._collections.get(collection_id)
        if coll is None:
            return False
        self.commit(coll.updated(remove_partitions=partition_ids))
        return True

    def remove(self, collection_id: int) -> Collection | None:
        coll = self._collections.pop(collection_id, None)
        if coll is not None:
            self._on_change()
        return coll
