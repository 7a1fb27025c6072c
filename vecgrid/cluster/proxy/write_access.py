"""How a proxy writes: in the coordinator's process, or through the coordinator's ``WriteService``.

As :mod:`.catalog_access` does for reads of the catalog, the :class:`~vecgrid.cluster.proxy.proxy.Proxy`
writes through one of three sources:

* :class:`LocalWrites` — in the coordinator's process: the :class:`~vecgrid.cluster.proxy.writer.Writer`
  over the channels' appenders, and the DataCoord (flush, compaction) when one is wired;
* :class:`RemoteWrites` — any other process (``vecgrid insert``): the same calls over
  ``vecgrid.write.WriteService``, whose servicer calls the coordinator's :class:`LocalWrites`;
* :class:`NoWrites` — a proxy in a process that has the catalog but no write path: writes are refused,
  and a Strong read takes a fresh oracle timestamp as before there were writes.

Every source also answers the per-channel guarantee timestamps of Strong reads (read-your-writes), and
the progress of long data-side work as plain dicts (the DataCoord's, field for field over gRPC): a flush
or a compaction started without waiting (``flush_id`` / ``compaction_id``, ``state`` Executing, Completed
or Failed, ``progress`` %, ...) and the indexed rows of a collection's indexes (``index_name``, ``field``,
``state``, ``total_rows``, ``indexed_rows``, ``pending_index_rows``, ``progress``, ``fail_reason``).
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
from vecgrid.proto import common_pb2, schema_pb2, write_service_pb2, write_service_pb2_grpc
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.catalog.schema_rules import DEFAULT_DB_NAME

__all__ = ["DataCoordAccess", "WriteSource", "LocalWrites", "RemoteWrites", "NoWrites",
           "mutation_result_of", "ids_pb", "ids_of", "flush_state_pb", "compaction_state_pb", "index_progress_pb"]


class DataCoordAccess(Protocol):
    """What the write path asks of DataCoord (wired in by the deployment)."""

    async def flush(self, collection_id: int) -> list[int]:
        """Seal the collection's growing data; the sealed segments' ids, once they are published."""

    async def compact(self, collection_id: int) -> int:
        """Compact the collection; the compaction's id once it is published."""

    async def start_flush(self, collection_id: int) -> dict[str, Any]: ...

    def flush_state(self, flush_id: int) -> dict[str, Any]: ...

    async def start_compaction(self, collection_id: int) -> dict[str, Any]: ...

    def compaction_state(self, compaction_id: int) -> dict[str, Any]: ...

    async def index_progress(self, collection_id: int) -> list[dict[str, Any]]: ...


#: ``(db name, collection, filter, partition or None)`` -> the primary keys a Strong query finds
FilterResolver = Callable[[str, str, Any, "str | None"], Awaitable[list[Any]]]


class WriteSource(Protocol):
    async def insert(self, db_name: str, collection: str, rows: Any, partition: str | None,
                     upsert: bool = False) -> MutationResult: ...

    async def delete(self, db_name: str, collection: str, ids: Any, filter: Any,
                     partition: str | None) -> MutationResult: ...

    async def flush(self, db_name: str, collection: str) -> tuple[int, list[int]]: ...

    async def compact(self, db_name: str, collection: str) -> tuple[int, int]: ...

    async def start_flush(self, db_name: str, collection: str) -> dict[str, Any]: ...

    async def flush_state(self, flush_id: int) -> dict[str, Any]: ...

    async def start_compaction(self, db_name: str, collection: str) -> dict[str, Any]: ...

    async def compaction_state(self, compaction_id: int) -> dict[str, Any]: ...

    async def index_progress(self, db_name: str, collection: str, index_name: str = "") -> list[dict[str, Any]]: ...

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

    async def start_flush(self, db_name: str, collection: str) -> dict[str, Any]:
        datacoord = self._datacoord("flush")
        return await datacoord.start_flush(await self._collection_id(db_name, collection))

    async def flush_state(self, flush_id: int) -> dict[str, Any]:
        return self._datacoord("flush").flush_state(flush_id)

    async def start_compaction(self, db_name: str, collection: str) -> dict[str, Any]:
        datacoord = self._datacoord("compaction")
        return await datacoord.start_compaction(await self._collection_id(db_name, collection))

    async def compaction_state(self, compaction_id: int) -> dict[str, Any]:
        return self._datacoord("compaction").compaction_state(compaction_id)

    async def index_progress(self, db_name: str, collection: str, index_name: str = "") -> list[dict[str, Any]]:
        """Every index of the collection, or the one named (by its name or its field's)."""
        datacoord = self._datacoord("index progress")
        found = await datacoord.index_progress(await self._collection_id(db_name, collection))
        if not index_name:
            return found
        named = [i for i in found if index_name in (i["index_name"], i["field"])]
        if not named:
            raise errors.IndexNotFound(f"collection {collection!r} has no index named {index_name!r} (nor on a "
                                       "field of that name)", collection=collection)
        return named

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

    async def start_flush(self, *args: Any, **kw: Any) -> dict[str, Any]:
        raise self._refuse()

    async def flush_state(self, *args: Any, **kw: Any) -> dict[str, Any]:
        raise self._refuse()

    async def start_compaction(self, *args: Any, **kw: Any) -> dict[str, Any]:
        raise self._refuse()

    async def compaction_state(self, *args: Any, **kw: Any) -> dict[str, Any]:
        raise self._refuse()

    async def index_progress(self, *args: Any, **kw: Any) -> list[dict[str, Any]]:
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
        request = write_service_pb2.InsertRequest(
            db_name=db_name,
            collection_name=collection,
            partition_name=partition or "",
            rows=await asyncio.to_thread(encode_table, rows),
        )
        return mutation_result_of(await self._call("Upsert" if upsert else "Insert", request))

    async def delete(self, db_name: str, collection: str, ids: Any, filter: Any,
                     partition: str | None) -> MutationResult:
        _check_delete_args(ids, filter)
        request = write_service_pb2.DeleteRequest(
            db_name=db_name, collection_name=collection, partition_name=partition or ""
        )
        if filter is not None:
            if not isinstance(filter, (dict, str)):
                raise errors.ParameterInvalid("a delete's filter over gRPC must be a query object (a dict) or a "
                                              "Milvus expression (a string)")
            request.filter = json.dumps(filter)
        else:
            request.ids.CopyFrom(ids_pb(ids))
        return mutation_result_of(await self._call("Delete", request))

    async def flush(self, db_name: str, collection: str) -> tuple[int, list[int]]:
        reply = await self._call("Flush", write_service_pb2.FlushRequest(db_name=db_name, collection_name=collection))
        return reply.collectionID, list(reply.segmentIDs)

    async def compact(self, db_name: str, collection: str) -> tuple[int, int]:
        reply = await self._call(
            "Compact", write_service_pb2.CompactRequest(db_name=db_name, collection_name=collection)
        )
        return reply.collectionID, reply.compactionID

    async def start_flush(self, db_name: str, collection: str) -> dict[str, Any]:
        reply = await self._call(
            "Flush", write_service_pb2.FlushRequest(db_name=db_name, collection_name=collection, no_wait=True)
        )
        return await self.flush_state(reply.flushID)

    async def flush_state(self, flush_id: int) -> dict[str, Any]:
        return flush_state_of(
            await self._call("GetFlushState", write_service_pb2.GetFlushStateRequest(flushID=flush_id))
        )

    async def start_compaction(self, db_name: str, collection: str) -> dict[str, Any]:
        reply = await self._call(
            "Compact", write_service_pb2.CompactRequest(db_name=db_name, collection_name=collection, no_wait=True)
        )
        return await self.compaction_state(reply.compactionID)

    async def compaction_state(self, compaction_id: int) -> dict[str, Any]:
        reply = await self._call(
            "GetCompactionState", write_service_pb2.GetCompactionStateRequest(compactionID=compaction_id)
        )
        return compaction_state_of(reply, compaction_id)

    async def index_progress(self, db_name: str, collection: str, index_name: str = "") -> list[dict[str, Any]]:
        reply = await self._call("GetIndexBuildProgress", write_service_pb2.GetIndexBuildProgressRequest(
            db_name=db_name, collection_name=collection, index_name=index_name))
        return [index_progress_of(i) for i in reply.indexes]

    async def create_index(self, db_name: str, collection: str, field: str, index_type: str, metric: str,
                           params: dict[str, Any], index_name: str = "") -> dict[str, Any]:
        reply = await self._call("CreateIndex", write_service_pb2.CreateIndexRequest(
            db_name=db_name, collection_name=collection, field_name=field, index_type=index_type,
            metric_type=metric, params=json.dumps(params) if params else "", index_name=index_name))
        return index_progress_of(reply.index)

    async def drop_index(self, db_name: str, collection: str, field: str = "",
                         index_name: str = "") -> dict[str, str]:
        """Drop the index named by its field, its name or both; the dropped index's name and field."""
        reply = await self._call("DropIndex", write_service_pb2.DropIndexRequest(
            db_name=db_name, collection_name=collection, field_name=field, index_name=index_name))
        return {"index_name": reply.index_name, "field": reply.field_name}

    async def guarantees(self, channels: Sequence[str]) -> dict[str, int]:
        reply = await self._call(
            "GetGuaranteeTimestamps", write_service_pb2.GuaranteeTimestampsRequest(channels=list(channels))
        )
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


def flush_state_pb(state: dict[str, Any]) -> write_service_pb2.GetFlushStateResponse:
    return write_service_pb2.GetFlushStateResponse(flushed=state["state"] == "Completed", flushID=state["flush_id"],
                                   collectionID=state["collection_id"], state=state["state"],
                                   progress=state["progress"], channels=state["channels"],
                                   channels_flushed=state["channels_flushed"], segmentIDs=state["segment_ids"],
                                   fail_reason=state["error"])


def flush_state_of(reply: write_service_pb2.GetFlushStateResponse) -> dict[str, Any]:
    return {"flush_id": reply.flushID, "collection_id": reply.collectionID, "state": reply.state,
            "progress": reply.progress, "channels": reply.channels, "channels_flushed": reply.channels_flushed,
            "segment_ids": list(reply.segmentIDs), "error": reply.fail_reason}


def compaction_state_pb(state: dict[str, Any]) -> write_service_pb2.GetCompactionStateResponse:
    return write_service_pb2.GetCompactionStateResponse(state=state["state"], executingPlanNo=state["executing_plans"],
                                        completedPlanNo=state["completed_plans"], failedPlanNo=state["failed_plans"],
                                        progress=state["progress"], collectionID=state["collection_id"],
                                        fail_reason=state["error"])


def compaction_state_of(reply: write_service_pb2.GetCompactionStateResponse, compaction_id: int) -> dict[str, Any]:
    return {"compaction_id": compaction_id, "collection_id": reply.collectionID, "state": reply.state,
            "progress": reply.progress, "executing_plans": reply.executingPlanNo,
            "completed_plans": reply.completedPlanNo, "failed_plans": reply.failedPlanNo, "error": reply.fail_reason}


def index_progress_pb(index: dict[str, Any]) -> write_service_pb2.IndexProgress:
    return write_service_pb2.IndexProgress(
        index_name=index["index_name"],
        field_name=index["field"],
        indexID=index["index_id"],
        state=common_pb2.IndexState.Value(index["state"]),
        total_rows=index["total_rows"],
        indexed_rows=index["indexed_rows"],
        pending_index_rows=index["pending_index_rows"],
        progress=index["progress"],
        fail_reason=index.get("fail_reason", ""),
    )


def index_progress_of(reply: write_service_pb2.IndexProgress) -> dict[str, Any]:
    return {"index_name": reply.index_name, "field": reply.field_name, "index_id": reply.indexID,
            "state": common_pb2.IndexState.Name(reply.state), "total_rows": reply.total_rows,
            "indexed_rows": reply.indexed_rows, "pending_index_rows": reply.pending_index_rows,
            "progress": reply.progress, "fail_reason": reply.fail_reason}


def mutation_result_of(reply: write_service_pb2.MutationResult) -> MutationResult:
    return MutationResult(insert_cnt=reply.insert_cnt, delete_cnt=reply.delete_cnt, upsert_cnt=reply.upsert_cnt,
                          ids=ids_of(reply.IDs), timestamp=reply.timestamp, succ_index=list(reply.succ_index),
                          err_index=list(reply.err_index))
