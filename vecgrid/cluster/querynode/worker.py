"""How a shard delegator reaches the nodes that serve its segments, as Milvus's ``querynodev2/cluster``
(``Worker``, ``Manager``).

The delegator talks to every node of its leader view — its own included — through one
interface, :class:`Worker`: :class:`LocalWorker` calls this process's QueryNode handlers,
:class:`RemoteWorker` sends the same request over gRPC with the target's ``serverid``
metadata.  Either way a failed reply Status raises the :class:`~vecgrid.errors.MilvusError`
it stands for and a transport failure raises ``ServiceUnavailable``, so the delegator has one
code path whichever node it calls.

The read calls a fan-out makes (``search_segments``, ``query_segments``, ``get_statistics``)
are plain methods returning an awaitable: a remote worker has put its request on the wire when
the method returns, so the peers work while the leader computes its own part; a local worker's
work starts when the awaitable is first scheduled.

:class:`Workers` (Milvus's ``cluster.Manager``) hands out the worker of a node id.  Its
state is the :class:`~vecgrid.cluster.querynode.peers.PeerClients` address book and a cache of
remote workers, both owned by the node's event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Awaitable, Protocol, Sequence

import grpc

from vecgrid import errors
from vecgrid.cluster.querynode.peers import PeerClients
from vecgrid.proto import common_pb2, internal_pb2, query_coord_pb2

#: deadline of one sub-request a leader sends a worker (a read, a load, a release)
SUB_CALL_TIMEOUT_S = 120.0
ROW_COUNT_KEY = "row_count"


# --- GetStatistics replies (one shape on the worker side and the leader side) ----------------------

def row_count_statistics(rows: int) -> internal_pb2.GetStatisticsResponse:
    """The GetStatistics reply for ``rows`` visible rows."""
    return internal_pb2.GetStatisticsResponse(status=common_pb2.Status(), stats=[
        common_pb2.KeyValuePair(key=ROW_COUNT_KEY, value=str(int(rows)))])


def total_row_count(replies: Sequence[internal_pb2.GetStatisticsResponse]) -> int:
    return sum(int(kv.value) for r in replies for kv in r.stats if kv.key == ROW_COUNT_KEY)


# --- the interface ---------------------------------------------------------------------------------

class Worker(Protocol):
    """A query node as its shard leaders see it.  Every call raises on a failed reply."""

    @property
    def node_id(self) -> int: ...

    async def load_segments(self, req: query_coord_pb2.LoadSegmentsRequest) -> None: ...

    async def release_segments(self, req: query_coord_pb2.ReleaseSegmentsRequest) -> None: ...

    def search_segments(self, req: query_coord_pb2.SearchRequest) -> Awaitable[internal_pb2.SearchResults]: ...

    def query_segments(self, req: query_coord_pb2.QueryRequest) -> Awaitable[internal_pb2.RetrieveResults]: ...

    def query_stream_segments(
        self, req: query_coord_pb2.QueryRequest
    ) -> AsyncIterator[internal_pb2.RetrieveResults]: ...

    def get_statistics(
        self, req: query_coord_pb2.GetStatisticsRequest
    ) -> Awaitable[internal_pb2.GetStatisticsResponse]: ...

    async def delete_batch(self, req: query_coord_pb2.DeleteBatchRequest) -> query_coord_pb2.DeleteBatchResponse:
        """The same deletes on several segments; per-segment outcomes in ``failed_ids`` /
        ``missing_ids`` (the Status only says the call itself worked)."""
        ...


class WorkerHandlers(Protocol):
    """The QueryNode handlers a :class:`LocalWorker` calls (structural: no import of the node)."""

    @property
    def node_id(self) -> int: ...

    async def load_segments(self, req: query_coord_pb2.LoadSegmentsRequest) -> common_pb2.Status: ...

    async def release_segments(self, req: query_coord_pb2.ReleaseSegmentsRequest) -> common_pb2.Status: ...

    async def search_segments(self, req: query_coord_pb2.SearchRequest) -> internal_pb2.SearchResults: ...

    async def search_own_part(self, req: query_coord_pb2.SearchRequest,
                              growing: Sequence[Any]) -> internal_pb2.SearchResults: ...

    async def query_segments(self, req: query_coord_pb2.QueryRequest) -> internal_pb2.RetrieveResults: ...

    def query_stream_segments(
        self, req: query_coord_pb2.QueryRequest
    ) -> AsyncIterator[internal_pb2.RetrieveResults]: ...

    async def get_statistics(self, req: query_coord_pb2.GetStatisticsRequest) -> internal_pb2.GetStatisticsResponse: ...

    async def delete_batch(self, req: query_coord_pb2.DeleteBatchRequest) -> query_coord_pb2.DeleteBatchResponse: ...


class LocalWorker:
    """This node, called in-process (its handlers raise MilvusError instead of replying a Status)."""

    def __init__(self, node: WorkerHandlers) -> None:
        self._node = node

    @property
    def node_id(self) -> int:
        return self._node.node_id

    async def load_segments(self, req: query_coord_pb2.LoadSegmentsRequest) -> None:
        await self._node.load_segments(req)

    async def release_segments(self, req: query_coord_pb2.ReleaseSegmentsRequest) -> None:
        await self._node.release_segments(req)

    def search_segments(self, req: query_coord_pb2.SearchRequest) -> Awaitable[internal_pb2.SearchResults]:
        return self._node.search_segments(req)

    def search_own_part(self, req: query_coord_pb2.SearchRequest,
                        growing: Sequence[Any]) -> Awaitable[internal_pb2.SearchResults]:
        """A leader's own part of its channel's search: the sealed segments ``req`` lists (none when
        it lists none) and the channel's ``growing`` views, searched together (only this node holds
        the growing rows, so no other worker has this call)."""
        return self._node.search_own_part(req, growing)

    def query_segments(self, req: query_coord_pb2.QueryRequest) -> Awaitable[internal_pb2.RetrieveResults]:
        return self._node.query_segments(req)

    def query_stream_segments(self, req: query_coord_pb2.QueryRequest) -> AsyncIterator[internal_pb2.RetrieveResults]:
        return self._node.query_stream_segments(req)

    def get_statistics(
        self, req: query_coord_pb2.GetStatisticsRequest
    ) -> Awaitable[internal_pb2.GetStatisticsResponse]:
        return self._node.get_statistics(req)

    async def delete_batch(self, req: query_coord_pb2.DeleteBatchRequest) -> query_coord_pb2.DeleteBatchResponse:
        return await self._node.delete_batch(req)


class RemoteWorker:
    """Another node, over gRPC; the stub is looked up per call (the peer may have moved)."""

    def __init__(self, node_id: int, peers: PeerClients, timeout_s: float = SUB_CALL_TIMEOUT_S) -> None:
        self._node_id = node_id
        self._peers = peers
        self.timeout_s = timeout_s

    @property
    def node_id(self) -> int:
        return self._node_id

    def _start(self, method: str, req: Any) -> Any:
        """The gRPC call of ``method``, created now (its request goes out on the next loop
        iteration); ``None`` when no address is known (raised when awaited, as any other failure)."""
        if not self._peers.knows(self._node_id):
            return None
        return getattr(self._peers.stub(self._node_id), method)(
            req, metadata=self._peers.metadata(self._node_id), timeout=self.timeout_s)

    def _unary(self, method: str, req: Any) -> Awaitable[Any]:
        """The checked reply of ``method``, as a task owning the call: cancelling the task cancels the
        RPC, even before the task first ran (a coroutine cancelled then never awaits its call, which
        would run on to its deadline)."""
        call = self._start(method, req)
        task = asyncio.ensure_future(self._reply(method, call))
        if call is not None:
            task.add_done_callback(lambda t: call.cancel() if t.cancelled() else None)
        return task

    async def _reply(self, method: str, call: Any) -> Any:
        if call is None:
            raise self._unknown()
        try:
            reply = await call
        except grpc.aio.AioRpcError as e:
            raise self._transport_error(method, e) from None
        return _checked(reply)

    def _unknown(self) -> errors.MilvusError:
        return errors.NodeNotFound(f"no address known for worker node {self._node_id}", node=self._node_id)

    def _transport_error(self, method: str, e: grpc.aio.AioRpcError) -> errors.MilvusError:
        return errors.ServiceUnavailable(f"{method} on node {self._node_id}: {e.code().name} {e.details()}")

    async def load_segments(self, req: query_coord_pb2.LoadSegmentsRequest) -> None:
        await self._unary("LoadSegments", req)

    async def release_segments(self, req: query_coord_pb2.ReleaseSegmentsRequest) -> None:
        await self._unary("ReleaseSegments", req)

    def search_segments(self, req: query_coord_pb2.SearchRequest) -> Awaitable[internal_pb2.SearchResults]:
        return self._unary("SearchSegments", req)

    def query_segments(self, req: query_coord_pb2.QueryRequest) -> Awaitable[internal_pb2.RetrieveResults]:
        return self._unary("QuerySegments", req)

    def get_statistics(
        self, req: query_coord_pb2.GetStatisticsRequest
    ) -> Awaitable[internal_pb2.GetStatisticsResponse]:
        return self._unary("GetStatistics", req)

    async def query_stream_segments(
        self, req: query_coord_pb2.QueryRequest
    ) -> AsyncIterator[internal_pb2.RetrieveResults]:
        call = self._start("QueryStreamSegments", req)
        if call is None:
            raise self._unknown()
        try:
            async for msg in call:
                yield _checked(msg)
        except grpc.aio.AioRpcError as e:
            raise self._transport_error("QueryStreamSegments", e) from None

    async def delete_batch(self, req: query_coord_pb2.DeleteBatchRequest) -> query_coord_pb2.DeleteBatchResponse:
        """DeleteBatch; a peer without it (UNIMPLEMENTED) gets one ``Delete`` per segment, whose
        outcomes are reported the same way (``segment not found`` → ``missing_ids``)."""
        call = self._start("DeleteBatch", req)
        if call is None:
            raise self._unknown()
        try:
            return _checked(await call)
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise self._transport_error("DeleteBatch", e) from None
        failed, missing = [], []
        for sid in req.segment_ids:
            one = query_coord_pb2.DeleteRequest(
                base=req.base,
                collection_id=req.collection_id,
                partition_id=req.partition_id,
                vchannel_name=req.vchannel_name,
                segment_id=sid,
                primary_keys=req.primary_keys,
                timestamps=req.timestamps,
                scope=req.scope,
            )
            try:
                await self._unary("Delete", one)
            except (errors.SegmentNotFound, errors.SegmentNotLoaded):
                missing.append(sid)
            except errors.ServiceUnavailable:
                raise
            except errors.MilvusError:
                failed.append(sid)
        return query_coord_pb2.DeleteBatchResponse(status=common_pb2.Status(), failed_ids=failed, missing_ids=missing)


def _checked(reply: Any) -> Any:
    """``reply`` when its Status (or the reply itself, a Status) is success; else its error, raised."""
    errors.raise_for_status(reply if isinstance(reply, common_pb2.Status) else reply.status)
    return reply


class Workers:
    """The worker of each node id (Milvus's ``cluster.Manager``): this node's own, or a remote one
    through the node's peer address book."""

    def __init__(self, local: LocalWorker, peers: PeerClients) -> None:
        self.local = local
        self._peers = peers
        self._remote: dict[int, RemoteWorker] = {}

    def get(self, node_id: int) -> Worker:
        if node_id == self.local.node_id:
            return self.local
        worker = self._remote.get(node_id)
        if worker is None:
            worker = self._remote[node_id] = RemoteWorker(node_id, self._peers)
        return worker

    def knows(self, node_id: int) -> bool:
        """Whether ``node_id`` can be called: this node, or a peer with a known address."""
        return node_id == self.local.node_id or self._peers.knows(node_id)
