"""Collection, partition and index definitions: Milvus's RootCoord steps, the one owner of catalog writes.

vecgrid has no RootCoord: the catalog keeps the definitions and the QueryCoord what is loaded.  Every
change of a definition — create, alter, rename and drop of collections, create and drop of partitions and
indexes — goes through :class:`Ddl`, from REST, gRPC and the CLI alike (bulk import, which creates what
it imports into, is the one other writer).  A change that also touches what is loaded runs in Milvus's
order:

* **aliases** name a collection a second time (the catalog resolves them wherever a collection is read
  by name); a collection is dropped only once no alias names it, and never through an alias;
* **create a collection** with its indexes (and optionally load it) is all-or-nothing: the schema and
  every index are validated before anything is written, and a collection whose index or load then
  fails is dropped again (nothing of it stays);
* **drop a collection** releases it first (RootCoord's ``dropCollectionTask`` calls ReleaseCollection
  before it marks the collection deleted), so no node goes on serving a dropped collection;
* **create a partition** of a collection loaded as a whole loads it too (``SyncNewCreatedPartition``);
* **drop a partition** releases it first;
* **drop an index** of a loaded collection is refused, as Milvus's proxy does ("release it first"):
  the loaded segments would keep searching with an index the catalog no longer has.

Catalog writes run in a thread (SQLite); everything else on the coordinator's event loop, which owns
the QueryCoord's meta.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Mapping

from vecgrid import errors
from vecgrid.cluster.querycoord.job.jobs import LoadRequest
from vecgrid.proto import common_pb2, query_coord_pb2, schema_pb2
from vecgrid.storage.catalog import CollectionInfo
from vecgrid.storage.catalog.index_rules import validate_index
from vecgrid.storage.catalog.schema_rules import (DEFAULT_DB_NAME, DEFAULT_PARTITION_NAME, VECTOR_TYPES, field_dim,
                                                  normalize_schema, validate_name)

# The coordinator (vecgrid.cluster.querycoord.coordinator.QueryCoord) builds a Ddl over itself; typed
# loosely here, as importing its module would be a cycle.
QueryCoord = Any


@dataclass
class IndexRequest:
    """One index to define on a vector field (``metric`` None: the catalog's default)."""

    field: str
    index_type: str = "AUTOINDEX"
    metric: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""


@dataclass
class LoadOptions:
    replicas: int = 0
    resource_groups: list[str] = field(default_factory=list)


def _check_indexes(schema: schema_pb2.CollectionSchema, indexes: list[IndexRequest]) -> None:
    """Every index against the stored schema, before anything is written."""
    by_name = {f.name: f for f in schema.fields}
    seen: set[str] = set()
    for req in indexes:
        f = by_name.get(req.field) if isinstance(req.field, str) else None
        if f is None:
            raise errors.FieldNotFound(f"collection {schema.name!r} has no field {req.field!r}", field=req.field)
        if f.data_type not in VECTOR_TYPES:
            raise errors.IndexNotSupported(f"field {req.field!r} is not a vector field; vecgrid builds indexes on "
                                           "FloatVector fields only", index_type=req.index_type)
        if req.field in seen:
            raise errors.ParameterInvalid(f"more than one index given for field {req.field!r}")
        seen.add(req.field)
        validate_index(req.index_type, req.metric, req.params, field_dim(f))
        validate_name("index", req.name or req.field)
    names = [req.name or req.field for req in indexes]
    if len(set(names)) != len(names):
        raise errors.ParameterInvalid(f"index names must differ, got {names}")


class Ddl:
    """The definition changes above, for one :class:`QueryCoord` (its catalog and its load jobs)."""

    def __init__(self, coord: QueryCoord) -> None:
        self.coord = coord

    @property
    def catalog(self):
        return self.coord.catalog

    async def create_collection(self, db_name: str, name: str, schema: schema_pb2.CollectionSchema, *,
                                shards_num: int = 1, properties: Mapping[str, object] | None = None,
                                indexes: list[IndexRequest] = (), load: LoadOptions | None = None,
                                consistency_level: int = common_pb2.Bounded) -> CollectionInfo:
        """Create, define ``indexes``, load when ``load`` is given; all or nothing (module doc)."""
        self.coord.lifecycle.check_healthy()
        db_name = db_name or DEFAULT_DB_NAME
        stored = normalize_schema(name, db_name, schema)
        _check_indexes(stored, list(indexes))
        if load is not None:
            for rg in load.resource_groups:
                self.coord.resources.group(rg)   # 300 when unknown, before anything is written
        existed = await asyncio.to_thread(self.catalog.has_collection, db_name, name)
        coll = await asyncio.to_thread(lambda: self.catalog.create_collection(
            db_name, name, schema, shards_num, properties, consistency_level=consistency_level))
        if existed:
            return coll   # Milvus's idempotent create: the same definition again changes nothing
        try:
            for req in indexes:
                await self._define_index(coll.id, req)
            if load is not None:
                await self.coord.load(LoadRequest(coll.id, None, load.replicas, list(load.resource_groups), []))
        except BaseException:
            await self._undo_create(db_name, name, coll.id)
            raise
        return await asyncio.to_thread(self.catalog.get_collection, coll.id)

    async def _undo_create(self, db_name: str, name: str, collection_id: int) -> None:
        if self.coord.collections.get(collection_id) is not None:
            await self.coord.release_collection(collection_id)
        await asyncio.to_thread(self.catalog.drop_collection, db_name, name)

    async def drop_collection(self, db_name: str, name: str) -> CollectionInfo:
        """Release, then drop; the dropped collection as it was.  ``CollectionNotFound`` when absent."""
        self.coord.lifecycle.check_healthy()
        db_name = db_name or DEFAULT_DB_NAME
        await asyncio.to_thread(self.catalog.check_droppable, db_name, name)   # before the release
        coll = await asyncio.to_thread(self.catalog.describe_collection, db_name, name)
        await self.coord.release_collection(coll.id)
        await asyncio.to_thread(self.catalog.drop_collection, db_name, name)
        return coll

    async def create_partition(self, collection_id: int, name: str):
        self.coord.lifecycle.check_healthy()
        part = await asyncio.to_thread(self.catalog.create_partition, collection_id, name)
        await self.coord.sync_new_created_partition(collection_id, part.partitionID)
        return part

    async def drop_partition(self, collection_id: int, name: str):
        """Release the partition if loaded, then drop it; the dropped partition.  404 when absent."""
        self.coord.lifecycle.check_healthy()
        part = await asyncio.to_thread(self.catalog.get_partition, collection_id, name)
        if name == DEFAULT_PARTITION_NAME:
            raise errors.ParameterInvalid("default partition cannot be deleted")
        if self.coord.collections.partition(collection_id, part.partitionID) is not None:
            await self.coord.release_partitions(collection_id, [part.partitionID])
        await asyncio.to_thread(self.catalog.drop_partition, collection_id, name)
        return part

    async def update_load_config(self, collection_id: int, replicas: int, resource_groups: list[str]) -> None:
        """UpdateLoadConfig of one collection, which must be loaded (Milvus skips one that is not)."""
        self.coord.lifecycle.check_healthy()
        if self.coord.collections.get(collection_id) is None:
            raise errors.CollectionNotLoaded("only a loaded collection has a load config", collection=collection_id)
        await self.coord.update_load_config([collection_id], replicas, resource_groups)

    async def alter_collection(self, db_name: str, name: str, *, properties: Mapping[str, object] | None = None,
                               description: str | None = None) -> CollectionInfo:
        """Change the collection's properties (merged into the kept ones) and description; the collection."""
        self.coord.lifecycle.check_healthy()
        return await asyncio.to_thread(self.catalog.alter_collection, db_name or DEFAULT_DB_NAME, name,
                                       properties=properties, description=description)

    async def rename_collection(self, db_name: str, name: str, new_name: str) -> CollectionInfo:
        """Give the collection a new name (its id, data and load stay); the renamed collection."""
        self.coord.lifecycle.check_healthy()
        return await asyncio.to_thread(self.catalog.rename_collection, db_name or DEFAULT_DB_NAME, name, new_name)

    async def create_database(self, name: str, properties: Mapping[str, object] | None = None) -> None:
        self.coord.lifecycle.check_healthy()
        await asyncio.to_thread(self.catalog.create_database, name, properties)

    async def drop_database(self, name: str) -> bool:
        """Drop an empty database (the catalog refuses ``default`` and one that holds collections)."""
        self.coord.lifecycle.check_healthy()
        return await asyncio.to_thread(self.catalog.drop_database, name)

    async def create_alias(self, db_name: str, alias: str, collection: str) -> None:
        self.coord.lifecycle.check_healthy()
        await asyncio.to_thread(self.catalog.create_alias, db_name or DEFAULT_DB_NAME, alias, collection)

    async def alter_alias(self, db_name: str, alias: str, collection: str) -> None:
        self.coord.lifecycle.check_healthy()
        await asyncio.to_thread(self.catalog.alter_alias, db_name or DEFAULT_DB_NAME, alias, collection)

    async def drop_alias(self, db_name: str, alias: str) -> bool:
        self.coord.lifecycle.check_healthy()
        return await asyncio.to_thread(self.catalog.drop_alias, db_name or DEFAULT_DB_NAME, alias)

    async def create_index(self, db_name: str, collection: str, req: IndexRequest) -> None:
        """Define the index of a vector field (the catalog's rules; the same index again is no error).  The
        index builder builds it for the flushed segments; the index checker loads it where they are served."""
        self.coord.lifecycle.check_healthy()
        coll = await asyncio.to_thread(self.catalog.describe_collection, db_name or DEFAULT_DB_NAME, collection)
        await self._define_index(coll.id, req)

    async def _define_index(self, collection_id: int, req: IndexRequest) -> None:
        await asyncio.to_thread(self.catalog.create_index, collection_id, req.field, req.index_type, req.metric,
                                req.params, index_name=req.name)

    async def drop_index(self, collection_id: int, field_name: str) -> bool:
        self.coord.lifecycle.check_healthy()
        if self.coord.collections.get(collection_id) is not None:
            raise errors.ParameterInvalid("index cannot be dropped, collection is loaded, please release it first",
                                          collection=collection_id)
        return await asyncio.to_thread(self.catalog.drop_index, collection_id, field_name)

    async def drop_named_index(self, db_name: str, collection: str, field_name: str = "",
                               index_name: str = "") -> tuple[str, str]:
        """Drop the index named by its field, its name or both (Milvus's DropIndex); ``(index name, field
        name)`` of the dropped index.  One that is not there is :class:`~vecgrid.errors.IndexNotFound`."""
        if not field_name and not index_name:
            raise errors.ParameterInvalid("name the index's field or the index name")
        coll = await asyncio.to_thread(self.catalog.describe_collection, db_name or DEFAULT_DB_NAME, collection)
        indexes = await asyncio.to_thread(self.catalog.describe_index, coll.id)
        named = [(i.index_name, coll.field_by_id(i.fieldID).name) for i in indexes]
        matching = [(index, field) for index, field in named
                    if index_name in ("", index) and field_name in ("", field)]
        # one index per field and unique names: at most one matches.  Dropped meanwhile by another caller
        # (drop_index answers False) is not there either.
        if not matching or not await self.drop_index(coll.id, matching[0][1]):
            what = " ".join(filter(None, [f"{index_name!r}" if index_name else "",
                                          f"on field {field_name!r}" if field_name else ""]))
            raise errors.IndexNotFound(f"collection {coll.name!r} has no index {what}", collection=coll.name)
        return matching[0]


NOT_LOAD, LOADING, LOADED = "LoadStateNotLoad", "LoadStateLoading", "LoadStateLoaded"
LOAD_POLL_S = 0.1
#: how long a create with a load (REST's quick setup, Milvus's RESTful create) waits for that load
#: before answering a Timeout, the load going on
CREATE_LOAD_WAIT_S = 120.0


@dataclass
class LoadState:
    """Milvus's GetLoadState / GetLoadingProgress in one: state, percent, why the last load failed."""

    state: str
    percent: int
    error: errors.MilvusError | None = None


def load_state(coord: QueryCoord, collection_id: int, partition_ids: list[int] | None = None) -> LoadState:
    """The load state of a collection, or of some of its partitions (all of them must be loaded)."""
    coord.lifecycle.check_healthy()
    loads = coord.collections
    if loads.get(collection_id) is None or any(loads.partition(collection_id, p) is None
                                               for p in partition_ids or ()):
        failure = coord.failed_loads.get(collection_id)
        return LoadState(NOT_LOAD, 0, failure)
    if partition_ids:
        percent = min(loads.partition_percentage(collection_id, p) for p in partition_ids)
        done = all(loads.partition(collection_id, p).status == query_coord_pb2.Loaded for p in partition_ids)
    else:
        percent = loads.percentage(collection_id)
        done = loads.is_loaded(collection_id)
    return LoadState(LOADED if done and percent >= 100 else LOADING, percent)


async def wait_loaded(coord: QueryCoord, collection_id: int, partition_ids: list[int] | None,
                      timeout_s: float) -> LoadState:
    """Until the load is complete; its recorded failure if it was cancelled, ``Timeout`` after
    ``timeout_s`` (the load goes on)."""
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                state = load_state(coord, collection_id, partition_ids)
                if state.state == LOADED:
                    return state
                if state.state == NOT_LOAD:
                    raise state.error if state.error is not None else errors.CollectionNotLoaded(
                        "the load was released or cancelled while waiting", collection=collection_id)
                await asyncio.sleep(LOAD_POLL_S)
    except TimeoutError:
        state = load_state(coord, collection_id, partition_ids)
        raise errors.Timeout(f"collection {collection_id} is {state.percent} % loaded after {timeout_s:g} s; "
                             "the load goes on", collection=collection_id) from None
