"""The client-side role of Milvus's Proxy: route reads to shard leaders, merge, answer plain Python.

For a collection the :class:`Proxy`

1. reads what it needs from the catalog (:mod:`.catalog_access`: id, schema, DML
   channels, partitions, the vector index's metric) — in-process from a
   :class:`~vecgrid.storage.catalog.Catalog` (the REST app) or over the
   coordinator's ``CatalogService`` (the CLI), and keeps the descriptions;
2. turns the read's consistency level into guarantee timestamps (:mod:`.consistency`);
3. sends the read to a shard leader of every channel (:mod:`.lb_policy`: the leaders QueryCoord's
   ``GetShardLeaders`` reports, replicas in turn, the next one on a failure);
4. merges the channels' answers and decodes them into plain Python (:mod:`.task_search`,
   :mod:`.task_query`).

Writes — ``insert``, ``upsert``, ``delete``, ``flush``, ``compact`` — go to the
coordinator's :class:`~vecgrid.cluster.proxy.writer.Writer` (and DataCoord) in its
own process, or over its ``WriteService`` from any other (:mod:`.write_access`), as
reads of the catalog do.

Filters are query objects in the REST seed's syntax (:mod:`.filters`) or ready
``plan.Expr`` messages.  Reads name the collection, or pass the :class:`CollectionMeta` a caller has just
described (it then is not read again).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from vecgrid import errors
from vecgrid.common.channels import aio_channel
from vecgrid.cluster.proxy import task_query, task_search
from vecgrid.cluster.proxy.catalog_access import CatalogSource, CollectionMeta, LocalCatalog, RemoteCatalog
from vecgrid.cluster.proxy.consistency import ReadConsistency, guarantee_timestamp
from vecgrid.cluster.proxy.lb_policy import LeaderRouter, Shard
from vecgrid.cluster.proxy.read_parts import Filter, ReadContext
from vecgrid.cluster.proxy.rows import to_table
from vecgrid.cluster.proxy.write_access import DataCoordAccess, LocalWrites, NoWrites, RemoteWrites, WriteSource
from vecgrid.cluster.proxy.writer import MutationResult, Writer
from vecgrid.proto import query_coord_pb2_grpc, schema_pb2
from vecgrid.storage.catalog import Catalog

__all__ = ["Proxy", "Shard", "guarantee_timestamp", "Filter", "MutationResult"]

DEFAULT_TIMEOUT_S = 60.0


class Proxy:
    """Search and query a collection through the shard leaders QueryCoord reports.

    ``coord_address`` is the coordinator's gRPC ``host:port``; ``catalog`` the
    coordinator's catalog when the proxy runs in its process (else the catalog is read
    over gRPC from the same address); ``writer`` (and ``datacoord``) the coordinator's
    write path in its process (else writes go over gRPC; a proxy given only the catalog
    cannot write).  Use as ``async with Proxy(addr) as proxy:`` or call :meth:`close`.

    Collection descriptions are kept by name (Milvus's proxy meta cache) until
    :meth:`invalidate_collections` — the REST app calls it after every definition change it
    serves — or until a caller asks for a ``fresh`` one (a read that failed on a kept one).

    ``_metas`` and ``_meta_epoch`` are owned by the proxy's event loop, as are the state of its
    :attr:`router` and :attr:`guarantees`.  ``router_class`` picks the leader routing (a subclass
    may record or pin the leaders).
    """

    router_class: type[LeaderRouter] = LeaderRouter

    def __init__(self, coord_address: str, *, catalog: Catalog | None = None, writer: Writer | None = None,
                 datacoord: DataCoordAccess | None = None, db_name: str = "",
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.coord_address = coord_address
        self.db_name = db_name
        self.timeout_s = timeout_s
        self._coord_channel = aio_channel(coord_address)
        # Public for callers that also manage loads over the same connection (the CLI).
        self.coord = query_coord_pb2_grpc.QueryCoordStub(self._coord_channel)
        if catalog is None and writer is not None:
            catalog = writer.catalog
        self.catalog: CatalogSource = (LocalCatalog(catalog) if catalog is not None
                                       else RemoteCatalog(self._coord_channel, coord_address, timeout_s))
        self.writes: WriteSource
        if writer is not None:
            self.writes = LocalWrites(writer, self._filter_keys, datacoord)
        elif catalog is not None:
            self.writes = NoWrites(catalog)
        else:
            self.writes = RemoteWrites(self._coord_channel, coord_address, timeout_s)
        self.router = self.router_class(self.coord, coord_address, timeout_s)
        self.guarantees = ReadConsistency(self.writes, self.catalog, self.router)
        self._reads = ReadContext(self._meta, self.guarantees, self.router)
        self._metas: dict[tuple[str, str], CollectionMeta] = {}
        self._meta_epoch = 0   # bumped by invalidate_collections: a describe begun before it is not kept
        self._base = self      # whose descriptions and epoch these are (see in_database)
        self._databases: dict[str, Proxy] = {}   # the base's views by database; the event loop's, as _metas

    async def __aenter__(self) -> "Proxy":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def in_database(self, db_name: str) -> "Proxy":
        """This proxy for the collections of database ``db_name`` (``""``: the default): the same
        connections, router, write path and kept descriptions (keyed by database), made once."""
        base = self._base
        if db_name == base.db_name:
            return base
        sibling = base._databases.get(db_name)
        if sibling is None:
            sibling = copy.copy(base)
            sibling.db_name = db_name
            sibling._reads = ReadContext(sibling._meta, sibling.guarantees, sibling.router)
            base._databases[db_name] = sibling
        return sibling

    async def close(self) -> None:
        if self._base is not self:
            return   # the connections are the base proxy's
        await self.router.close()
        await self.writes.close()
        await self.catalog.close()
        await self._coord_channel.close()

    # --- metadata ---------------------------------------------------------------------------------

    async def describe(self, collection: str, *, fresh: bool = False) -> CollectionMeta:
        """The collection's description, kept from an earlier call unless ``fresh`` (see the class doc)."""
        key = (self.db_name, collection)
        base = self._base
        if not fresh:
            kept = base._metas.get(key)
            if kept is not None:
                return kept
        epoch = base._meta_epoch
        try:
            meta = await self.catalog.describe(collection, self.db_name)
        except errors.CollectionNotFound:
            if epoch == base._meta_epoch:
                base._metas.pop(key, None)
            raise
        if epoch == base._meta_epoch:   # no definition changed while it was read
            base._metas[key] = meta
        return meta

    def invalidate_collections(self) -> None:
        """Forget every kept description: a collection, partition or index definition changed (Milvus's
        InvalidateCollectionMetaCache, for every collection at once: a rename changes two names)."""
        self._base._meta_epoch += 1
        self._base._metas.clear()

    async def _meta(self, collection: "str | CollectionMeta") -> CollectionMeta:
        """A read's collection: a name is described; a caller that has just described it (the REST service,
        which needs the schema first) passes the :class:`CollectionMeta` and saves the catalog read."""
        return collection if isinstance(collection, CollectionMeta) else await self.describe(collection)

    async def shard_leaders(self, collection_id: int, *, refresh: bool = False) -> list[Shard]:
        """The collection's shards with their leaders (cached; ``refresh`` asks QueryCoord again)."""
        return await self.router.shard_leaders(collection_id, refresh=refresh)

    def invalidate(self, collection_id: int) -> None:
        """Forget the cached shard leaders of a collection (after a release or a failure)."""
        self.router.invalidate(collection_id)

    # --- reads: the options are the task functions' ------------------------------------------------

    async def search(
        self, collection: "str | CollectionMeta", vectors: Any, **options: Any
    ) -> list[list[dict[str, Any]]]:
        """The nearest rows of every query vector, best first: :func:`.task_search.search`."""
        return await task_search.search(self._reads, collection, vectors, **options)

    async def search_result(self, collection: "str | CollectionMeta", vectors: Any,
                            **options: Any) -> schema_pb2.SearchResultData:
        """:meth:`search`'s hits as the merged ``SearchResultData`` the leaders answered (a plain top-k
        search from the first hit, whole fields): what Milvus's own API passes on undecoded."""
        return await task_search.search(self._reads, collection, vectors, raw=True, **options)

    async def stored_vectors(self, collection: "str | CollectionMeta", ids: Sequence[Any],
                             **options: Any) -> tuple[np.ndarray, list[Any]]:
        """The stored vectors of primary keys, and the keys not found: :func:`.task_query.stored_vectors`."""
        return await task_query.stored_vectors(self._reads, collection, ids, **options)

    async def query(self, collection: "str | CollectionMeta", **options: Any) -> list[dict[str, Any]]:
        """Rows matching a filter, ordered by primary key: :func:`.task_query.query`."""
        return await task_query.query(self._reads, collection, **options)

    async def count(self, collection: "str | CollectionMeta", **options: Any) -> int:
        """How many rows match a filter (Milvus's ``count(*)``): :func:`.task_query.count`."""
        return await task_query.count(self._reads, collection, **options)

    async def find(self, collection: "str | CollectionMeta",
                   **options: Any) -> tuple[int | None, list[dict[str, Any]]]:
        """``(total, page)`` of sorted rows from one snapshot: :func:`.task_query.find`."""
        return await task_query.find(self._reads, collection, **options)

    async def count_groups(
        self, collection: "str | CollectionMeta", field: str, **options: Any
    ) -> list[tuple[Any, int]]:
        """``[(value, rows)]`` of a scalar field's distinct values: :func:`.task_query.count_groups`."""
        return await task_query.count_groups(self._reads, collection, field, **options)

    # --- writes -----------------------------------------------------------------------------------

    async def insert(self, collection: str, rows: Any, partition: str | None = None) -> MutationResult:
        """Insert rows — a list of ``{field: value}`` dicts, a dict of columns, or an Arrow table — into
        ``partition`` (``_default``); answers once they are durable, with their primary keys and the
        write's timestamp.  Keys outside the schema go to the dynamic field when the schema has one."""
        return await self._insert(collection, rows, partition, upsert=False)

    async def upsert(self, collection: str, rows: Any, partition: str | None = None) -> MutationResult:
        """Insert rows, replacing the rows of their primary keys (delete + insert at one timestamp)."""
        return await self._insert(collection, rows, partition, upsert=True)

    async def _insert(self, collection: str, rows: Any, partition: str | None, upsert: bool) -> MutationResult:
        if isinstance(self.writes, RemoteWrites):   # rows travel as Arrow: convert them here, with the schema
            if isinstance(rows, pa.RecordBatch):
                rows = pa.Table.from_batches([rows])
            elif not isinstance(rows, pa.Table):
                rows = await asyncio.to_thread(to_table, rows, (await self.describe(collection)).schema)
        return self._remember(collection, await self.writes.insert(self.db_name, collection, rows, partition, upsert))

    async def delete(self, collection: str, ids: Sequence[Any] | None = None, filter: Filter = None,
                     partition: str | None = None) -> MutationResult:
        """Delete rows by primary key (``ids``) or every row a Strong query for ``filter`` finds now."""
        return self._remember(collection, await self.writes.delete(self.db_name, collection, ids, filter, partition))

    async def flush(self, collection: str) -> list[int]:
        """Seal the collection's growing data; the ids of the sealed segments, once they are published."""
        return (await self.writes.flush(self.db_name, collection))[1]

    async def compact(self, collection: str) -> int:
        """Start a compaction of the collection; the plan's id."""
        return (await self.writes.compact(self.db_name, collection))[1]

    def _remember(self, collection: str, result: MutationResult) -> MutationResult:
        self.guarantees.remember(collection, result.timestamp)
        return result

    async def _filter_keys(self, db_name: str, collection: str, filter: Filter, partition: str | None) -> list[Any]:
        """The primary keys a Strong query for ``filter`` finds (a delete by filter, on the coordinator)."""
        meta = await self.catalog.describe(collection, db_name)
        pk = meta.pk_field.name
        found = await task_query.query(self._reads, meta, filter=filter, output_fields=[pk],
                                       partition_names=[partition] if partition else [], consistency="Strong")
        return [row[pk] for row in found]
