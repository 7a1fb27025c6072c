"""gRPC clients from one QueryNode to the others (a shard leader calls its workers).

A node learns its peers' addresses from the coordinator's requests
(``vecgrid.node_address.<id>`` in ``base.properties``; tests call
:meth:`PeerClients.register`).  :class:`~vecgrid.cluster.querynode.worker.RemoteWorker`
makes the calls; every call carries the target node id in the ``serverid`` metadata key,
as Milvus's clients do, so a call that reaches the wrong process is refused there.

All state (addresses, open channels, channels being closed) is owned by the node's event loop.
"""

from __future__ import annotations

import asyncio

import grpc

from vecgrid import errors
from vecgrid.common.channels import aio_channel
from vecgrid.common.keys import server_id_metadata


class PeerClients:
    def __init__(self) -> None:
        self._addresses: dict[int, str] = {}
        self._channels: dict[int, tuple[str, grpc.aio.Channel, object]] = {}
        self._closing: set[asyncio.Task] = set()   # channels of peers that moved, closing

    def register(self, node_id: int, address: str) -> None:
        self._addresses[int(node_id)] = address

    def forget(self, node_id: int) -> None:
        self._addresses.pop(int(node_id), None)

    def knows(self, node_id: int) -> bool:
        return int(node_id) in self._addresses

    def address(self, node_id: int) -> str | None:
        return self._addresses.get(int(node_id))

    def stub(self, node_id: int):
        """A ``QueryNodeStub`` for ``node_id`` (channel opened on first use, reopened on a new address)."""
        from vecgrid.proto import query_coord_pb2_grpc

        address = self._addresses.get(int(node_id))
        if address is None:
            raise errors.NodeNotFound(node=node_id)
        entry = self._channels.get(node_id)
        if entry is None or entry[0] != address:
            if entry is not None:  # the peer moved: close the old channel in the background
                closing = asyncio.ensure_future(entry[1].close())
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)
            channel = aio_channel(address)
            entry = (address, channel, query_coord_pb2_grpc.QueryNodeStub(channel))
            self._channels[node_id] = entry
        return entry[2]

    @staticmethod
    def metadata(node_id: int) -> tuple[tuple[str, str], ...]:
        return server_id_metadata(node_id)

    async def close(self) -> None:
        for _, channel, _ in self._channels.values():
            await channel.close()
        self._channels.clear()
        await asyncio.gather(*self._closing)
