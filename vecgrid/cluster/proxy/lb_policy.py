"""Which shard leader answers a read: Milvus's proxy ``lb_policy.go`` with its shard-client manager.

QueryCoord's ``GetShardLeaders`` names one leader per replica for every DML channel of a loaded
collection; the :class:`LeaderRouter` caches that answer per collection and sends each channel's
request to one of its leaders, taking the replicas in turn so the load spreads.  A leader that fails
(unreachable, not serving the channel, any error that is not the request's own fault) is replaced by
the next replica's; when every leader of a channel failed, the cached leaders are dropped, fetched
again once and tried again.  A cached answer is also asked again once it is :data:`LEADER_CACHE_TTL_S`
old (as Milvus's proxy refreshes its shard-leader cache): an answer fetched while a replica was down
names fewer leaders, and without the refresh it would be used until its leaders all failed, leaving a
read nothing to hedge to when its one leader hangs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

import grpc

from vecgrid import errors
from vecgrid.common import in_process
from vecgrid.common.channels import aio_channel
from vecgrid.cluster.gather import gather_all
from vecgrid.cluster.proxy.catalog_access import unary_call
from vecgrid.common.keys import server_id_metadata
from vecgrid.proto import common_pb2, query_coord_pb2, query_coord_pb2_grpc

log = logging.getLogger(__name__)

# The request itself is wrong: another replica would refuse it too, so it is not retried.
#: how long a read waits on a silent shard leader before it asks the next one too (see _on_leaders)
HEDGE_AFTER_S = 1.0
#: how long a cached GetShardLeaders answer is used before a read asks QueryCoord again
LEADER_CACHE_TTL_S = 3.0
#: the bound of that refresh: a coordinator that does not answer at once leaves the cached leaders in use
LEADER_REFRESH_TIMEOUT_S = 1.0
_REQUEST_ERRORS = (errors.ParameterInvalid, errors.ParameterMissing, errors.ParameterTooLarge,
                   errors.FieldNotFound, errors.PartitionNotFound, errors.IndexNotFound,
                   errors.OperationNotSupported, errors.Timeout, errors.Canceled)


def _copy(req: Any) -> Any:
    out = type(req)()
    out.CopyFrom(req)
    return out


@dataclass(frozen=True)
class Shard:
    """One DML channel and its serviceable leaders, one per replica: ``(node id, address)``."""

    channel: str
    leaders: tuple[tuple[int, str], ...]


class _LeadersFailed(Exception):
    """Every leader of one channel failed; ``error`` is what to report if fetching them again does not help."""

    def __init__(self, error: errors.MilvusError) -> None:
        super().__init__(str(error))
        self.error = error


class LeaderRouter:
    """Shard leaders of each collection, and the request of each channel sent to one of them.

    ``coord`` is the coordinator's QueryCoord stub (its channel is the proxy's to close).  The leader
    cache (``_leaders``, with one lock per collection so channels failing together share one
    ``GetShardLeaders``), the replicas' turns and the node channels are owned by the proxy's event loop.
    """

    def __init__(self, coord: query_coord_pb2_grpc.QueryCoordStub, coord_address: str, timeout_s: float) -> None:
        self._coord = coord
        self._coord_address = coord_address
        self._timeout_s = timeout_s
        self._leaders: dict[int, list[Shard]] = {}
        self._fetched_at: dict[int, float] = {}  # monotonic time of each cached answer
        self._leader_locks: dict[int, asyncio.Lock] = {}
        self._turns: dict[str, int] = {}
        self._nodes: dict[str, tuple[grpc.aio.Channel, query_coord_pb2_grpc.QueryNodeStub]] = {}

    async def close(self) -> None:
        for channel, _ in self._nodes.values():
            await channel.close()
        self._nodes.clear()

    async def shard_leaders(self, collection_id: int, *, refresh: bool = False) -> list[Shard]:
        """The collection's shards with their leaders (cached; ``refresh`` asks QueryCoord again)."""
        cached = self._leaders.get(collection_id)
        if cached is not None and not refresh:
            if time.monotonic() - self._fetched_at.get(collection_id, 0.0) < LEADER_CACHE_TTL_S:
                return cached
            try:
                return await self._fetch_leaders(collection_id, stale=cached, timeout_s=LEADER_REFRESH_TIMEOUT_S)
            except errors.MilvusError as e:
                # the coordinator is away (restarting, unreachable): the leaders it named still serve, and a
                # read that finds them failing asks again; until then, once per TTL
                log.warning("shard leaders of collection %d not refreshed, the cached ones stay in use: %s",
                            collection_id, e)
                self._fetched_at[collection_id] = time.monotonic()
                return cached
        return await self._fetch_leaders(collection_id, stale=cached)


    async def _fetch_leaders(self, collection_id: int, stale: list[Shard] | None,
                             timeout_s: float | None = None) -> list[Shard]:
        """Ask QueryCoord, unless another request already replaced ``stale`` while this one waited:
        channels failing together share one GetShardLeaders."""
        lock = self._leader_locks.setdefault(collection_id, asyncio.Lock())
        async with lock:
            current = self._leaders.get(collection_id)
            if current is not None and current is not stale:
                return current
            reply = await unary_call(self._coord.GetShardLeaders, query_coord_pb2.GetShardLeadersRequest(
                base=common_pb2.MsgBase(msg_type=common_pb2.GetShardLeaders), collectionID=collection_id),
                timeout=timeout_s or self._timeout_s, what=f"GetShardLeaders at the coordinator {self._coord_address}")
            shards = [Shard(s.channel_name, tuple(zip(s.node_ids, s.node_addrs))) for s in reply.shards]
            if not shards:
                raise errors.ChannelNotAvailable("QueryCoord reported no shard leaders", collection=collection_id)
            self._leaders[collection_id] = shards
            self._fetched_at[collection_id] = time.monotonic()
            return shards


    def invalidate(self, collection_id: int) -> None:
        """Forget the cached shard leaders of a collection (after a release or a failure)."""
        self._leaders.pop(collection_id, None)
        self._fetched_at.pop(collection_id, None)


    async def fan_out(self, collection_id: int, method: str,
                      request: Callable[[str, int], Any]) -> tuple[list[Shard], list[Any]]:
        """Send ``request(channel, channel_count)`` to a leader of every channel, concurrently."""
        shards = await self.shard_leaders(collection_id)

        async def one(shard: Shard) -> Any:
            req = request(shard.channel, len(shards))
            try:
                return await self._on_leaders(shard, method, req)
            except _LeadersFailed:
                fresh = await self._fetch_leaders(collection_id, stale=shards)  # raises if QueryCoord knows why
                again = next((s for s in fresh if s.channel == shard.channel), None)
                if again is None:
                    raise errors.ChannelNotAvailable(f"QueryCoord no longer reports channel {shard.channel}",
                                                     collection=collection_id) from None
                try:
                    return await self._on_leaders(again, method, req)
                except _LeadersFailed as failed:
                    self.invalidate(collection_id)
                    raise failed.error from None

        if len(shards) == 1:   # no task, no gather: the usual small collection
            return shards, [await one(shards[0])]
        return shards, await gather_all(one(s) for s in shards)


    async def _on_leaders(self, shard: Shard, method: str, req: Any) -> Any:
        """``method`` on the channel's leaders, starting with the next one in turn, until one answers.

        A leader that has not answered after :data:`HEDGE_AFTER_S` (a hung or stopped process, whose
        call would only end at its deadline) gets company: the same read goes to the next leader too,
        and the first answer wins (the other call is cancelled).  Reads only: Search and Query."""
        if not shard.leaders:
            raise _LeadersFailed(errors.ChannelNotAvailable(channel=shard.channel))
        turn = self._turns.get(shard.channel, 0)
        self._turns[shard.channel] = turn + 1
        order = [shard.leaders[(turn + i) % len(shard.leaders)] for i in range(len(shard.leaders))]
        failures: list[str] = []
        if len(order) == 1:  # one replica: nothing to hedge to, and no task on the latency-bound path
            node_id, address = order[0]
            try:
                return await self._call(method, req, node_id, address)
            except _REQUEST_ERRORS:
                raise
            except errors.MilvusError as e:
                self._failed(method, shard, node_id, address, e, failures)
                raise _LeadersFailed(type(e)(self._story(method, shard, failures))) from None
        pending: dict[asyncio.Future, tuple[int, str]] = {}
        last: errors.MilvusError | None = None

        def launch() -> None:
            node_id, address = order[len(pending) + len(failures)]
            copy = req if not pending and not failures else _copy(req)  # each call its own targetID
            pending[asyncio.ensure_future(self._call(method, copy, node_id, address))] = (node_id, address)

        launch()
        try:
            while pending:
                more = len(pending) + len(failures) < len(order)
                done, _ = await asyncio.wait(pending, timeout=HEDGE_AFTER_S if more else None,
                                             return_when=asyncio.FIRST_COMPLETED)
                if not done:
                    launch()  # the leaders tried so far are silent: the next one too
                    continue
                for call in done:
                    node_id, address = pending.pop(call)
                    try:
                        return call.result()
                    except _REQUEST_ERRORS:
                        raise
                    except errors.MilvusError as e:
                        self._failed(method, shard, node_id, address, e, failures)
                        last = e
                        if len(pending) + len(failures) < len(order):
                            launch()
        finally:
            for call in pending:
                call.cancel()
        assert last is not None
        raise _LeadersFailed(type(last)(self._story(method, shard, failures)))  # the last failure's kind

    async def _call(self, method: str, req: Any, node_id: int, address: str) -> Any:
        req.req.base.targetID = node_id
        return await unary_call(getattr(self.node(address), method), req, timeout=self._timeout_s,
                                what=f"{method} on node {node_id} at {address}", metadata=server_id_metadata(node_id))

    @staticmethod
    def _failed(method: str, shard: Shard, node_id: int, address: str, error: errors.MilvusError,
                failures: list[str]) -> None:
        log.warning("%s of channel %s failed on node %d (%s), trying the next replica: %s",
                    method, shard.channel, node_id, address, error)
        failures.append(f"node {node_id} ({address}): {error}")

    @staticmethod
    def _story(method: str, shard: Shard, failures: list[str]) -> str:
        return f"{method} on channel {shard.channel} failed on every shard leader: " + "; ".join(failures)


    def node(self, address: str) -> query_coord_pb2_grpc.QueryNodeStub:
        """The stub of the node at ``address`` (one channel per node, kept until :meth:`close`); a node
        serving in this process is called directly (:mod:`vecgrid.common.in_process`)."""
        local = in_process.stub_at(address)
        if local is not None:
            return local
        entry = self._nodes.get(address)
        if entry is None:
            channel = aio_channel(address)
            entry = self._nodes[address] = (channel, query_coord_pb2_grpc.QueryNodeStub(channel))
        return entry[1]

