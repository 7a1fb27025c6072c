"""gRPC clients to the query nodes, as Milvus's ``session.Cluster``.

One channel per node, opened on first use and closed when the node leaves.  Every
call carries the target node id in the ``ServerID`` metadata key, which is how a
Milvus QueryNode checks that a request reached the node it was meant for.
"""

from __future__ import annotations

import asyncio

import grpc

from vecgrid import errors
from vecgrid.common.channels import aio_channel
from vecgrid.cluster.querycoord.session.node_manager import NodeInfo, NodeManager
from vecgrid.common.keys import server_id_metadata
from vecgrid.proto import query_coord_pb2_grpc


class NodeClients:
    def __init__(self, nodes: NodeManager) -> None:
        self._nodes = nodes
        self._channels: dict[int, tuple[str, grpc.aio.Channel, query_coord_pb2_grpc.QueryNodeStub]] = {}
        nodes.on_down(self._forget)

    def stub(self, node_id: int) -> query_coord_pb2_grpc.QueryNodeStub:
        info = self._nodes.get(node_id)
        if info is None:
            raise errors.NodeNotFound(node=node_id)
        entry = self._channels.get(node_id)
        if entry is None or entry[0] != info.address:
            if entry is not None:
                _close_later(entry[1])  # the node restarted on another address
            channel = aio_channel(info.address)
            entry = (info.address, channel, query_coord_pb2_grpc.QueryNodeStub(channel))
            self._channels[node_id] = entry
        return entry[2]

    @staticmethod
    def metadata(node_id: int) -> tuple[tuple[str, str], ...]:
        return server_id_metadata(node_id)

    def _forget(self, info: NodeInfo) -> None:
        entry = self._channels.pop(info.node_id, None)
        if entry is not None:
            _close_later(entry[1])

    async def close(self) -> None:
        for _, channel, _ in self._channels.values():
            await channel.close()
        self._channels.clear()


def _close_later(channel: grpc.aio.Channel) -> None:
    # aio channels close with a coroutine; node listeners are synchronous, so schedule it.
    asyncio.ensure_future(channel.close())
