"""gRPC edge of the WAL: streams a DML channel to readers on other hosts.

Thin by design: it opens a :class:`~vecgrid.storage.wal.WalReader` and forwards
records.  The blocking ``read`` runs on the stream's own thread with a short timeout so the
event loop only awaits and a cancelled stream is noticed promptly.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import grpc

from vecgrid.proto import msg_pb2, wal_stream_pb2, wal_stream_pb2_grpc
from vecgrid.storage.wal import Position, Wal, WalError

SERVICE = wal_stream_pb2.DESCRIPTOR.services_by_name["ChannelStream"]
POLL_S = 0.2


class ChannelStreamServicer(wal_stream_pb2_grpc.ChannelStreamServicer):
    def __init__(self, wal: Wal) -> None:
        self.wal = wal

    async def Read(self, request, context):
        if request.latest:
            start = "latest"
        elif request.HasField("start"):
            start = Position.from_msg_position(request.start)
        else:
            start = "earliest"
        try:
            reader = self.wal.open_reader(request.channel, start, inclusive=request.inclusive)
        except (WalError, ValueError, OSError) as e:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"channel {request.channel!r}: {e}")
        # A thread of the stream's own: its reads wait up to POLL_S each, and on the loop's default
        # executor a few idle streams would hold every thread the coordinator's other work needs.
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"wal-stream-serve-{request.channel}")
        loop = asyncio.get_running_loop()
        try:
            while True:
                try:
                    record = await loop.run_in_executor(thread, reader.read, POLL_S)
                except WalError as e:
                    await context.abort(grpc.StatusCode.DATA_LOSS, str(e))
                if record is not None:
                    yield wal_stream_pb2.Record(
                        position=msg_pb2.MsgPosition(**record.position.to_msg_position_kwargs()),
                        kind=int(record.kind), payload=record.payload)
        finally:
            reader.close()
            thread.shutdown(wait=False)


def channel_stream_service(wal: Wal):
    """The ``(add_fn, servicer, name)`` triple :meth:`GrpcServer.start` takes."""
    return (wal_stream_pb2_grpc.add_ChannelStreamServicer_to_server, ChannelStreamServicer(wal), SERVICE.full_name)
