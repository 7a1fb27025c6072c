"""What a proxy knows about a collection, read from the catalog in-process or over gRPC.

Milvus's proxy asks RootCoord for a collection's schema and channels and IndexCoord
for its index (and so its metric).  vecgrid's coordinator keeps that catalog; the
:class:`~vecgrid.cluster.proxy.proxy.Proxy` reads it

* in the coordinator's own process (the REST app) straight from the
  :class:`~vecgrid.storage.catalog.Catalog` — :class:`LocalCatalog`;
* from any other process (``vecgrid search``) through the coordinator's
  ``vecgrid.catalog.CatalogService`` — :class:`RemoteCatalog`.

Both hand out the same ``CollectionDescription`` message (built once, by
:func:`describe`, which the gRPC servicer also calls), wrapped in a
:class:`CollectionMeta` that answers the proxy's questions: which partition ids,
which vector field and metric, which output field ids.  Both also hand out fresh
timestamps from the coordinator's oracle — the one that stamps writes and time ticks —
so a strong read waits for every write acknowledged before it, even while the oracle
runs ahead of the wall clock (after a restart it starts up to its save window ahead).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Awaitable, Callable, Iterable, Protocol, Sequence

import grpc

from vecgrid import errors
from vecgrid.proto import catalog_service_pb2, catalog_service_pb2_grpc, common_pb2, schema_pb2
from vecgrid.storage.catalog import Catalog, CollectionInfo, DEFAULT_DB_NAME
from vecgrid.storage.catalog.index_rules import METRIC_TYPE_KEY
from vecgrid.storage.tso import hybrid_now
from vecgrid.storage.catalog.schema_rules import VECTOR_TYPES, field_dim

Description = catalog_service_pb2.CollectionDescription
ALL_FIELDS = "*"


# --- building descriptions (coordinator side) -----------------------------------------------------

def _description(catalog: Catalog, coll: CollectionInfo) -> Description:
    return Description(info=coll.pb, partitions=list(coll.partitions), indexes=catalog.describe_index(coll.id))


def describe(catalog: Catalog, db_name: str = "", name: str = "", collection_id: int = 0) -> Description:
    """One collection by id (when non-zero) or by name in ``db_name`` ("" = default database)."""
    if collection_id:
        return _description(catalog, catalog.get_collection(collection_id))
    if not name:
        raise errors.ParameterMissing("a collection name or id is required")
    return _description(catalog, catalog.describe_collection(db_name or DEFAULT_DB_NAME, name))


def describe_all(catalog: Catalog, db_name: str = "") -> list[Description]:
    return [_description(catalog, c) for c in catalog.list_collections(db_name or DEFAULT_DB_NAME)]


# --- the proxy's view of one collection -------------------------------------------------------------

@dataclass(frozen=True)
class CollectionMeta:
    """A collection as the proxy plans requests over it (read-only; re-read to see changes).  What every
    request asks of it is worked out once per description (the proxy keeps descriptions between requests)."""

    pb: Description

    __hash__ = None  # type: ignore[assignment]  # holds protobuf messages

    @property
    def id(self) -> int:
        return self.pb.info.ID

    @property
    def name(self) -> str:
        return self.pb.info.schema.name

    @property
    def db_id(self) -> int:
        return self.pb.info.db_id

    @property
    def schema(self) -> schema_pb2.CollectionSchema:
        return self.pb.info.schema

    @property
    def channels(self) -> tuple[str, ...]:
        return tuple(self.pb.info.virtual_channel_names)

    @property
    def consistency_level(self) -> int:
        return self.pb.info.consistency_level

    @cached_property
    def pk_field(self) -> schema_pb2.FieldSchema:
        return next(f for f in self.schema.fields if f.is_primary_key)

    @cached_property
    def partitions(self) -> dict[str, int]:
        """Partition ids by name (shared: do not change it)."""
        return {p.partitionName: p.partitionID for p in self.pb.partitions}

    @cached_property
    def _vector_fields(self) -> tuple[schema_pb2.FieldSchema, ...]:
        return tuple(f for f in self.schema.fields if f.data_type in VECTOR_TYPES)

    @cached_property
    def memo(self) -> dict[str, Any]:
        """What the proxy derives from this description and keeps with it (its search request
        templates): gone with the description when the collection changes.  Owned by the proxy's loop."""
        return {}

    @cached_property
    def _dims(self) -> dict[int, int]:
        return {f.fieldID: field_dim(f) for f in self._vector_fields}

    def dim(self, field: schema_pb2.FieldSchema) -> int:
        """The ``dim`` of a vector field of this collection."""
        return self._dims[field.fieldID]

    @cached_property
    def _metrics(self) -> dict[int, str]:
        out: dict[int, str] = {}
        for info in self.pb.indexes:
            for kv in info.index_params:
                if kv.key == METRIC_TYPE_KEY:
                    out.setdefault(info.fieldID, kv.value.upper())
        return out

    def field(self, name: str) -> schema_pb2.FieldSchema:
        for f in self.schema.fields:
            if f.name == name:
                return f
        raise errors.ParameterInvalid(f"collection {self.name!r} has no field {name!r}", field=name)

    def partition_ids(self, names: Iterable[str]) -> list[int]:
        """Ids of the named partitions; ``[]`` (every partition) when none are named."""
        if not names:
            return []
        known = self.partitions
        out = []
        for name in names:
            if name not in known:
                raise errors.PartitionNotFound(partition=name, collection=self.name)
            out.append(known[name])
        return out

    def vector_field(self, name: str | None = None) -> schema_pb2.FieldSchema:
        """The vector field to search: ``name``, or the only one the collection has."""
        vectors = self._vector_fields
        if name is not None:
            f = self.field(name)
            if f.data_type not in VECTOR_TYPES:
                raise errors.ParameterInvalid(f"field {name!r} is not a vector field", field=name)
            return f
        if len(vectors) != 1:
            raise errors.ParameterInvalid(f"collection {self.name!r} has {len(vectors)} vector fields "
                                          f"({', '.join(f.name for f in vectors)}); name the one to search")
        return vectors[0]

    def metric(self, field: schema_pb2.FieldSchema) -> str:
        """The metric of the vector field's index: what its distances mean and which way they sort."""
        metric = self._metrics.get(field.fieldID)
        if metric is not None:
            return metric
        raise errors.IndexNotFound(f"vector field {field.name!r} of collection {self.name!r} has no index",
                                   collection=self.name)

    def output_field_ids(self, names: Sequence[str]) -> list[int]:
        """Field ids of ``names`` (``"*"`` = every field), schema order, each once."""
        if ALL_FIELDS in names:
            return [f.fieldID for f in self.schema.fields]
        ids: list[int] = []
        for name in names:
            fid = self.field(name).fieldID
            if fid not in ids:
                ids.append(fid)
        return ids


# --- sources ------------------------------------------------------------------------------------------

async def unary_call(method: Callable[..., Awaitable[Any]], request: Any, *, timeout: float, what: str,
                     metadata: Any = None) -> Any:
    """One unary call whose reply carries a ``status``: a failed Status raises its MilvusError, and a
    transport failure (peer down, deadline) raises :class:`~vecgrid.errors.ServiceUnavailable` naming ``what``."""
    try:
        reply = await method(request, timeout=timeout, metadata=metadata)
    except grpc.aio.AioRpcError as e:
        raise errors.ServiceUnavailable(f"{what}: {e.code().name} {e.details() or ''}".rstrip()) from None
    errors.raise_for_status(reply if isinstance(reply, common_pb2.Status) else reply.status)
    return reply


class CatalogSource(Protocol):
    async def describe(self, name: str, db_name: str = "") -> CollectionMeta: ...

    async def describe_id(self, collection_id: int) -> CollectionMeta: ...

    async def list(self, db_name: str = "") -> list[CollectionMeta]: ...

    async def timestamp(self) -> int: ...

    async def recent_timestamp(self) -> int: ...

    async def close(self) -> None: ...


class LocalCatalog:
    """The catalog of this process; reads run in a thread (SQLite) so the event loop only awaits."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    async def describe(self, name: str, db_name: str = "") -> CollectionMeta:
        return CollectionMeta(await asyncio.to_thread(describe, self.catalog, db_name, name))

    async def describe_id(self, collection_id: int) -> CollectionMeta:
        return CollectionMeta(await asyncio.to_thread(describe, self.catalog, collection_id=collection_id))

    async def list(self, db_name: str = "") -> list[CollectionMeta]:
        return [CollectionMeta(d) for d in await asyncio.to_thread(describe_all, self.catalog, db_name)]

    async def timestamp(self) -> int:
        return await asyncio.to_thread(self.catalog.allocate_timestamp)  # may persist the oracle's window

    async def recent_timestamp(self) -> int:
        """A timestamp no later than the oracle's next (a Bounded read counts back from it): the wall clock's,
        as the oracle of this process stamps physical time from it — no allocation, no thread."""
        return hybrid_now()

    async def close(self) -> None:
        """The catalog belongs to its owner; nothing to release here."""


class RemoteCatalog:
    """The coordinator's catalog through ``vecgrid.catalog.CatalogService``."""

    def __init__(self, channel: grpc.aio.Channel, address: str, timeout_s: float = 30.0) -> None:
        self.stub = catalog_service_pb2_grpc.CatalogServiceStub(channel)
        self.address = address
        self.timeout_s = timeout_s

    async def _describe(self, request: catalog_service_pb2.DescribeCollectionRequest) -> CollectionMeta:
        reply = await unary_call(self.stub.DescribeCollection, request, timeout=self.timeout_s,
                                 what=f"DescribeCollection at the coordinator {self.address}")
        return CollectionMeta(reply.collection)

    async def describe(self, name: str, db_name: str = "") -> CollectionMeta:
        return await self._describe(catalog_service_pb2.DescribeCollectionRequest(db_name=db_name,
                                                                                  collection_name=name))

    async def describe_id(self, collection_id: int) -> CollectionMeta:
        return await self._describe(catalog_service_pb2.DescribeCollectionRequest(collectionID=collection_id))

    async def list(self, db_name: str = "") -> list[CollectionMeta]:
        reply = await unary_call(self.stub.ListCollections, catalog_service_pb2.ListCollectionsRequest(
            db_name=db_name), timeout=self.timeout_s, what=f"ListCollections at the coordinator {self.address}")
        return [CollectionMeta(d) for d in reply.collections]

    async def timestamp(self) -> int:
        reply = await unary_call(self.stub.AllocTimestamp, catalog_service_pb2.AllocTimestampRequest(),
                                 timeout=self.timeout_s, what=f"AllocTimestamp at the coordinator {self.address}")
        return reply.timestamp

    async def recent_timestamp(self) -> int:
        """The coordinator's oracle (this host's clock may differ from the coordinator's)."""
        return await self.timestamp()

    async def close(self) -> None:
        """The channel is the proxy's; it closes it."""
