"""A :class:`~vecgrid.storage.wal.ChannelReader` over the coordinator's ChannelStream service.

Query nodes on other hosts cannot open the coordinator's WAL files; they read a
channel through this class, which has the same interface as the local
:class:`~vecgrid.storage.wal.WalReader`, so the consumer code does not care which
it has.  A background thread drains the gRPC stream into a queue; ``read(timeout)``
takes from it.  ``seek`` restarts the stream at the new position.  When the stream
breaks (the coordinator restarted or the network dropped) the reader reconnects
after ``RECONNECT_S`` and resumes after the last record it returned, so a consumer
never sees a gap or a duplicate.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Literal

import grpc

from vecgrid.proto import msg_pb2, wal_stream_pb2, wal_stream_pb2_grpc
from vecgrid.storage.wal import ChannelReader, Position, WalClosedError, WalError, WalRecord

_END = object()
_BROKEN = object()   # the stream broke in a way worth reconnecting for
_TRANSIENT = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED,
              grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
RECONNECT_S = 0.5


class RemoteChannelReader(ChannelReader):
    def __init__(self, address: str, channel: str,
                 start: Position | Literal["earliest", "latest"] | None = None, *, inclusive: bool = False) -> None:
        self._channel = channel
        self._grpc = grpc.insecure_channel(address)
        self._stub = wal_stream_pb2_grpc.ChannelStreamStub(self._grpc)
        self._position: Position | None = None
        self._call = None
        self._queue: queue.Queue = queue.Queue()
        self._closed = False
        self._start, self._inclusive = start, inclusive
        self.seek(start, inclusive=inclusive)

    @property
    def channel(self) -> str:
        return self._channel

    @property
    def position(self) -> Position | None:
        return self._position

    def seek(self, start, *, inclusive: bool = False) -> None:
        self._cancel()
        self._start, self._inclusive = start, inclusive
        request = wal_stream_pb2.ReadRequest(channel=self._channel, inclusive=inclusive, latest=start == "latest")
        if isinstance(start, Position):
            request.start.CopyFrom(msg_pb2.MsgPosition(**start.to_msg_position_kwargs()))
        self._queue = queue.Queue()
        self._call = self._stub.Read(request)
        threading.Thread(target=self._drain, args=(self._call, self._queue), daemon=True,
                         name=f"wal-stream-{self._channel}").start()

    @staticmethod
    def _drain(call, out: queue.Queue) -> None:
        try:
            for record in call:
                out.put(record)
        except grpc.RpcError as e:
            if e.code() in _TRANSIENT:
                out.put(_BROKEN)
            elif e.code() != grpc.StatusCode.CANCELLED:
                out.put(WalError(f"channel stream failed: {e.code().name} {e.details()}"))
        out.put(_END)

    def read(self, timeout: float | None = None) -> WalRecord | None:
        if self._closed:
            raise WalClosedError(f"reader of {self._channel!r} is closed")
        try:
            item = self._queue.get(timeout=timeout) if timeout != 0 else self._queue.get_nowait()
        except queue.Empty:
            return None
        if item is _BROKEN or item is _END:
            self._reconnect()
            return None
        if isinstance(item, Exception):
            self._queue.put(item)
            raise item
        position = Position.from_msg_position(item.position)
        self._position = position
        return WalRecord(position=position, kind=item.kind, payload=item.payload)

    def _reconnect(self) -> None:
        """Resume after the last record returned (or at the original start if there was none)."""
        time.sleep(RECONNECT_S)
        if self._closed:
            return
        if self._position is not None:
            self.seek(self._position, inclusive=False)
        else:
            self.seek(self._start, inclusive=self._inclusive)

    def _cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._cancel()
            self._grpc.close()
