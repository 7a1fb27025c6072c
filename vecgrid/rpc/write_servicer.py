"""gRPC edge of the write path (``vecgrid.write.WriteService``): decode, call, encode.

Proxies in other processes (``vecgrid insert``) write here, and take the guarantee timestamps of their
Strong reads here.  Every call goes to the coordinator's own
:class:`~vecgrid.cluster.proxy.write_access.LocalWrites` (the Writer over the channels' appenders, the
DataCoord for flush and compaction); until the coordinator wires it (start-up) the service answers
"service not ready".  Failures come back as a Milvus ``common.Status`` in the reply.
"""

from __future__ import annotations

import asyncio
import json

from vecgrid import errors
from vecgrid.cluster.proxy.rows import decode_table
from vecgrid.cluster.proxy.write_access import (LocalWrites, compaction_state_pb, flush_state_pb, ids_of, ids_pb,
                                                index_progress_pb)
from vecgrid.cluster.proxy.writer import MutationResult
from vecgrid.cluster.querycoord.ddl import Ddl, IndexRequest
from vecgrid.proto import write_service_pb2 as pb, write_service_pb2_grpc
from vecgrid.rpc.service import milvus_servicer
from vecgrid.rpc.status import success

SERVICE = pb.DESCRIPTOR.services_by_name["WriteService"]


def mutation_result(result: MutationResult) -> pb.MutationResult:
    return pb.MutationResult(status=success(), IDs=ids_pb(result.ids), succ_index=result.succ_index,
                             err_index=result.err_index, acknowledged=True, insert_cnt=result.insert_cnt,
                             delete_cnt=result.delete_cnt, upsert_cnt=result.upsert_cnt, timestamp=result.timestamp)


@milvus_servicer(SERVICE, write_service_pb2_grpc.WriteServiceServicer)
class WriteServicer:
    """``writes`` and ``ddl`` (the owner of definition changes: ``CreateIndex``, ``DropIndex``) are set by the
    coordinator once its write path is built (read on the event loop)."""

    def __init__(self, writes: LocalWrites | None = None, ddl: Ddl | None = None) -> None:
        self.writes = writes
        self.ddl = ddl

    def _writes(self) -> LocalWrites:
        if self.writes is None:
            raise errors.ServiceNotReady("the coordinator's write path is still starting")
        return self.writes

    def _ddl(self) -> Ddl:
        if self.ddl is None:
            raise errors.ServiceNotReady("the coordinator's write path is still starting")
        return self.ddl

    async def Insert(self, request, context):
        rows = await asyncio.to_thread(decode_table, request.rows)
        return mutation_result(await self._writes().insert(request.db_name, request.collection_name, rows,
                                                           request.partition_name or None))

    async def Upsert(self, request, context):
        rows = await asyncio.to_thread(decode_table, request.rows)
        return mutation_result(await self._writes().insert(request.db_name, request.collection_name, rows,
                                                           request.partition_name or None, upsert=True))

    async def Delete(self, request, context):
        ids = ids_of(request.ids) if request.HasField("ids") else None
        try:
            where = json.loads(request.filter) if request.filter else None
        except ValueError as e:
            raise errors.ParameterInvalid(f"the filter is not JSON: {e}") from None
        return mutation_result(await self._writes().delete(request.db_name, request.collection_name, ids, where,
                                                           request.partition_name or None))

    async def Flush(self, request, context):
        if request.no_wait:
            state = await self._writes().start_flush(request.db_name, request.collection_name)
            return pb.FlushResponse(status=success(), collectionID=state["collection_id"], flushID=state["flush_id"])
        cid, segments = await self._writes().flush(request.db_name, request.collection_name)
        return pb.FlushResponse(status=success(), collectionID=cid, segmentIDs=segments)

    async def Compact(self, request, context):
        if request.no_wait:
            state = await self._writes().start_compaction(request.db_name, request.collection_name)
            return pb.CompactResponse(status=success(), collectionID=state["collection_id"],
                                      compactionID=state["compaction_id"])
        cid, plan = await self._writes().compact(request.db_name, request.collection_name)
        return pb.CompactResponse(status=success(), collectionID=cid, compactionID=plan)

    async def GetFlushState(self, request, context):
        reply = flush_state_pb(await self._writes().flush_state(request.flushID))
        reply.status.CopyFrom(success())
        return reply

    async def GetCompactionState(self, request, context):
        reply = compaction_state_pb(await self._writes().compaction_state(request.compactionID))
        reply.status.CopyFrom(success())
        return reply

    async def GetIndexBuildProgress(self, request, context):
        found = await self._writes().index_progress(request.db_name, request.collection_name, request.index_name)
        return pb.GetIndexBuildProgressResponse(status=success(), indexes=[index_progress_pb(i) for i in found])

    async def CreateIndex(self, request, context):
        try:
            params = json.loads(request.params) if request.params else {}
        except ValueError as e:
            raise errors.ParameterInvalid(f"the index parameters are not JSON: {e}") from None
        if not isinstance(params, dict):
            raise errors.ParameterInvalid("the index parameters must be a JSON object")
        writes = self._writes()   # "not ready" before anything is written
        await self._ddl().create_index(request.db_name, request.collection_name, IndexRequest(
            request.field_name, request.index_type or "AUTOINDEX", request.metric_type or None, params,
            request.index_name))
        (index,) = await writes.index_progress(request.db_name, request.collection_name, request.field_name)
        return pb.CreateIndexResponse(status=success(), index=index_progress_pb(index))

    async def DropIndex(self, request, context):
        index_name, field_name = await self._ddl().drop_named_index(
            request.db_name, request.collection_name, request.field_name, request.index_name)
        return pb.DropIndexResponse(status=success(), index_name=index_name, field_name=field_name)

    async def GetGuaranteeTimestamps(self, request, context):
        found = await self._writes().guarantees(list(request.channels))
        return pb.GuaranteeTimestampsResponse(status=success(), timestamps=[found[c] for c in request.channels])


def write_service(servicer: WriteServicer):
    """The ``(add_fn, servicer, name)`` triple :meth:`GrpcServer.start` takes."""
    return (write_service_pb2_grpc.add_WriteServiceServicer_to_server, servicer, SERVICE.full_name)
