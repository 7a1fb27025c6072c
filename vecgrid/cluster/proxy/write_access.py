"""How a proxy writes: in the coordinator's process, or through the coordinator's ``WriteService``.

As :mod:`.catalog_access` does for reads of the catalog, the :class:`~vecgrid.cluster.proxy.proxy.Proxy`
writes through one of three sources:

* :class:`LocalWrites` — in the coordinator's process: the :class:`~vecgrid.cluster.proxy.writer.Writer`
  over the channels' appenders, and the DataCoord (flush, compaction) when one is wired;
* :class:`RemoteWrites` — any other process (``vecgrid insert``): the same calls over
  ``vecgrid.write.WriteService``, whose servicer calls the coordinator's :class:`LocalWrites`;
* :class:`NoWrites` — a proxy in a process that has the catalog but no write path: writes are refused,
  and a Strong read takes a fresh oracle timestamp as before there were writes.

Every source also answers the per-channel guarantee timestamps of Strong reads (read-your-writes).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable, Iterable, Protocol, Sequence

import grpc

from vecgrid import errors
from vecgrid.cluster.proxy.catalog_access import unary_call
from vecgrid.cluster.proxy.rows import encode_table
from vecgrid.cluster.proxy.writer import MutationResult, Writer
from vecgrid.proto import schema_pb2, write_service_pb2 as W, write_service_pb2_grpc
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.catalog.schema_rules import DEFAULT_DB_NAME

__all__ = ["DataCoordAccess", "WriteSource", "LocalWrites", "RemoteWrites", "NoWrites",
           "mutation_result_of", "ids_pb", "ids_of"]


class DataCoordAccess(Protocol):
    """What the write path asks of DataCoord (wired in by the deployment)."""

    async def flush(self, collection_id: int) -> list[int]:
        """Seal the collection's growing data; the sealed segments' ids, once they are published."""

    async def compact(self, collection_id: int) -> int:
        """Start a compaction of the collection; the plan's id."""


#: ``(db name, collection, filter, partition or None)`` -> the primary keys a Strong query finds
FilterResolver = Callable[[str, str, Any, "str | None"], Awaitable[list[Any]]]


class WriteSource(Protocol):
    async def insert(self, db_name: str, collection: str, rows: Any, partition: str | None,
                     upsert: bool = False) -> MutationResult: ...

    async def delete(self, db_name: str, collection: str, ids: Any, filter: Any,
                     partition: str | None) -> MutationResult: ...

    async def flush(self, db_name: str, collection: str) -> tuple[int, list[int]]: ...

    async def compact(self, db_name: str, collection: str) -> tuple[int, int]: ...

    async def guarantees(self, channels: Sequence[str]) -> dict[str, int]: ...

    async def close(self) -> None: ...


def _check_delete_args(ids: Any, filter: Any) -> None:
    if (ids is None) == (filter is None):
        raise errors.ParameterInvalid("delete takes either primary keys (ids) or a filter, not both and not none")


class LocalWrites:
    """The coordinator's own write path (see the module doc).  ``resolve`` turns a delete's filter into primary
    keys (the proxy's Strong query); ``datacoord`` may be None until a DataCoord is wired."""

    def __init__(self, writer: Writer, resolve: FilterResolver, datacoord: DataCoordAccess | None = None) -> None:
        self.writer = writer
        self.resolve = resolve
        self.datacoord = datacoord

    async def insert(self, db_name: str, collection: str, rows: Any, partition: str | None,
                     upsert: bool = False) -> MutationResult:
        if upsert:
            return await self.writer.upsert(collection, rows, partition, db_name)
        return await self.writer.insert(collection, rows, partition, db_name)

    async def delete(self, db_name: str, collection: str, ids: Any, filter: Any,
                     partition: str | None) -> MutationResult:
        """By primary keys, or by filter: the keys a Strong query finds now (Milvus's delete runner queries
        at its timestamp, then deletes what it found at a later one)."""
        _check_delete_args(ids, filter)
        if filter is not None:
            ids = await self.resolve(db_name, collection, filter, partition)
            if not ids:
                return MutationResult()   # nothing matched: nothing to log
        return await self.writer.delete(collection, ids, partition, db_name)

    def _datacoord(self, what: str) -> DataCoordAccess:
        if self.datacoord is None:
            raise errors.ServiceUnimplemented(f"{what} needs the DataCoord component, which this coordinator "
                                              "does not run")
        return self.datacoord

    async def _collection_id(self, db_name: str, collection: str) -> int:
        coll = await asyncio.to_thread(self.writer.catalog.describe_collection, db_name or DEFAULT_DB_NAME,
                                       collection)
        return coll.id

    async def flush(self, db_name: str, collection: str) -> tuple[int, list[int]]:
        datacoord = self._datacoord("flush")
        cid = await self._collection_id(db_name, collection)
        return cid, list(await datacoord.flush(cid))

    async def compact(self, db_name: str, collection: str) -> tuple[int, int]:
        datacoord = self._datacoord("compaction")
        cid = await self._collection_id(db_name, collection)
        return cid, int(await datacoord.compact(cid))

    async def guarantees(self, channels: Sequence[str]) -> dict[str, int]:
        return await self.writer.guarantees(channels)

    async def close(self) -> None:
        """The writer belongs to the coordinator."""


class NoWrites:
    """A proxy with the catalog in-process but no write path (module doc)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def _refuse(self) -> errors.MilvusError:
        return errors.ServiceUnavailable("this proxy has no write path: build it with the coordinator's writer, "
                                         "or give it only the coordinator's address")

    async def insert(self, *args: Any, **kw: Any) -> MutationResult:
        raise self._refuse()

    async def delete(self, *args: Any, **kw: Any) -> MutationResult:
        raise self._refuse()

    async def flush(self, *args: Any, **kw: Any) -> tuple[int, list[int]]:
        raise self._refuse()

    async def compact(self, *args: Any, **kw: Any) -> tuple[int, int]:
        raise self._refuse()

    async def guarantees(self, channels: Sequence[str]) -> dict[str, int]:
        now = await asyncio.to_thread(self.catalog.allocate_timestamp)
        return {channel: now for channel in channels}

    async def close(self) -> None:
        """Nothing of its own."""


class RemoteWrites:
    """The coordinator's write path through ``vecgrid.write.WriteService``; rows travel as Arrow IPC."""

    def __init__(self, channel: grpc.aio.Channel, address: str, timeout_s: float = 60.0) -> None:
        self.stub = write_service_pb2_grpc.WriteServiceStub(channel)
        self.address = address
        self.timeout_s = timeout_s

    async def _call(self, method: str, request: Any) -> Any:
        return await unary_call(getattr(self.stub, method), request, timeout=self.timeout_s,
                                what=f"{method} at the coordinator {self.address}")

    async def insert(self, db_name: str, collection: str, rows: Any, partition: str | None,
                     upsert: bool = False) -> MutationResult:
        """``rows`` must already be an Arrow table (the proxy converts them with the collection's schema)."""
        request = W.InsertRequest(db_name=db_name, collection_name=collection, partition_name=partition or "",
                                  rows=await asyncio.to_thread(encode_table, rows))
        return mutation_result_of(await self._call("Upsert" if upsert else "Insert", request))

    async def delete(self, db_name: str, collection: str, ids: Any, filter: Any,
                     partition: str | None) -> MutationResult:
        _check_delete_args(ids, filter)
        request = W.DeleteRequest(db_name=db_name, collection_name=collection, partition_name=partition or "")
        if filter is not None:
            if not isinstance(filter, dict):
                raise errors.ParameterInvalid("a delete's filter over gRPC must be a query object (a dict)")
            request.filter = json.dumps(filter)
        else:
            request.ids.CopyFrom(ids_pb(ids))
        return mutation_result_of(await self._call("Delete", request))

    async def flush(self, db_name: str, collection: str) -> tuple[int, list[int]]:
        reply = await self._call("Flush", W.FlushRequest(db_name=db_name, collection_name=collection))
        return reply.collectionID, list(reply.segmentIDs)

    async def compact(self, db_name: str, collection: str) -> tuple[int, int]:
        reply = await self._call("Compact", W.CompactRequest(db_name=db_name, collection_name=collection))
        return reply.collectionID, reply.compactionID

    async def guarantees(self, channels: Sequence[str]) -> dict[str, int]:
        reply = await self._call("GetGuaranteeTimestamps", W.GuaranteeTimestampsRequest(channels=list(channels)))
        if len(reply.timestamps) != len(channels):
            raise errors.ServiceInternal(f"the coordinator answered {len(reply.timestamps)} guarantee timestamps "
                                         f"for {len(channels)} channels")
        return dict(zip(channels, reply.timestamps))

    async def close(self) -> None:
        """The channel is the proxy's; it closes it."""


# --- wire form --------------------------------------------------------------------------------------------

def ids_pb(ids: Iterable[Any]) -> schema_pb2.IDs:
    """Primary keys as Milvus's ``schema.IDs`` (int64 or strings)."""
    values = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    if values and all(isinstance(v, str) for v in values):
        return schema_pb2.IDs(str_id=schema_pb2.StringArray(data=values))
    try:
        return schema_pb2.IDs(int_id=schema_pb2.LongArray(data=values))
    except (TypeError, ValueError):
        raise errors.ParameterInvalid("primary keys must all be integers or all be strings") from None


def ids_of(ids: schema_pb2.IDs) -> list[Any]:
    which = ids.WhichOneof("id_field")
    if which == "int_id":
        return list(ids.int_id.data)
    if which == "str_id":
        return list(ids.str_id.data)
    return []


def mutation_result_of(reply: W.MutationResult) -> MutationResult:
    return MutationResult(insert_cnt=reply.insert_cnt, delete_cnt=reply.delete_cnt, upsert_cnt=reply.upsert_cnt,
                          ids=ids_of(reply.IDs), timestamp=reply.timestamp, succ_index=list(reply.succ_index),
                          err_index=list(reply.err_index))
