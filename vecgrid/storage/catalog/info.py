""":class:`CollectionInfo`: a read-only view of one collection as the catalog stores it."""

from __future__ import annotations

from dataclasses import dataclass

from vecgrid import errors
from vecgrid.proto import catalog_pb2, schema_pb2

from .schema_rules import DEFAULT_PARTITION_NAME, VECTOR_TYPES, field_dim, kv_dict


@dataclass(frozen=True, eq=True)
class CollectionInfo:
    """A collection's record (``pb``) plus its live partitions, read at one moment.

    Every call to the catalog returns a fresh object; changing ``pb`` changes nothing stored.
    """

    pb: catalog_pb2.CollectionInfo
    partitions: tuple[catalog_pb2.PartitionInfo, ...]

    __hash__ = None  # type: ignore[assignment]  # holds protobuf messages

    # identity -------------------------------------------------------------------------------
    @property
    def id(self) -> int:
        return self.pb.ID

    @property
    def name(self) -> str:
        return self.pb.schema.name

    @property
    def db_id(self) -> int:
        return self.pb.db_id

    @property
    def db_name(self) -> str:
        return self.pb.schema.dbName

    @property
    def schema(self) -> schema_pb2.CollectionSchema:
        return self.pb.schema

    @property
    def create_time(self) -> int:
        return self.pb.create_time

    @property
    def properties(self) -> dict[str, str]:
        return kv_dict(self.pb.properties)

    @property
    def consistency_level(self) -> int:
        return self.pb.consistency_level

    # channels -------------------------------------------------------------------------------
    @property
    def shards_num(self) -> int:
        return self.pb.shards_num

    @property
    def vchannels(self) -> tuple[str, ...]:
        """Virtual DML channels, shard 0 first."""
        return tuple(self.pb.virtual_channel_names)

    @property
    def pchannels(self) -> tuple[str, ...]:
        """Physical channel of each shard (same order as :attr:`vchannels`)."""
        return tuple(self.pb.physical_channel_names)

    # fields ---------------------------------------------------------------------------------
    @property
    def fields(self) -> tuple[schema_pb2.FieldSchema, ...]:
        return tuple(self.pb.schema.fields)

    def field(self, name: str) -> schema_pb2.FieldSchema:
        for f in self.pb.schema.fields:
            if f.name == name:
                return f
        raise errors.FieldNotFound(f"collection {self.name!r} has no field {name!r}", field=name)

    def field_by_id(self, field_id: int) -> schema_pb2.FieldSchema:
        for f in self.pb.schema.fields:
            if f.fieldID == field_id:
                return f
        raise errors.FieldNotFound(f"collection {self.name!r} has no field with id {field_id}", field=field_id)

    @property
    def primary_field(self) -> schema_pb2.FieldSchema:
        return next(f for f in self.pb.schema.fields if f.is_primary_key)

    @property
    def vector_fields(self) -> tuple[schema_pb2.FieldSchema, ...]:
        return tuple(f for f in self.pb.schema.fields if f.data_type in VECTOR_TYPES)

    @property
    def enable_dynamic_field(self) -> bool:
        return self.pb.schema.enable_dynamic_field

    @property
    def dynamic_field(self) -> schema_pb2.FieldSchema | None:
        return next((f for f in self.pb.schema.fields if f.is_dynamic), None)

    def dim(self, field_name: str) -> int:
        """``dim`` of a vector field."""
        return field_dim(self.field(field_name))

    # partitions -----------------------------------------------------------------------------
    @property
    def partition_ids(self) -> tuple[int, ...]:
        return tuple(p.partitionID for p in self.partitions)

    @property
    def partition_names(self) -> tuple[str, ...]:
        return tuple(p.partitionName for p in self.partitions)

    def partition(self, name: str) -> catalog_pb2.PartitionInfo:
        for p in self.partitions:
            if p.partitionName == name:
                return p
        raise errors.PartitionNotFound(f"collection {self.name!r} has no partition {name!r}", partition=name)

    @property
    def default_partition(self) -> catalog_pb2.PartitionInfo:
        return self.partition(DEFAULT_PARTITION_NAME)
