"""A :class:`~vecgrid.storage.wal.ChannelReader` over the coordinator's ChannelStream service.

Query nodes on other hosts cannot open the coordinator's WAL files; they read a
channel through this class, which has the same interface as the local
:class:`~vecgrid.storage.wal.WalReader`, so the consumer code does not care which
it has.  A background thread drains the gRPC stream into a queue; ``read(timeout)``
takes from it.  ``seek`` restarts the stream at the new position.  When the stream
breaks (the coordinator restarted or the network dropped) the reader reconnects
after ``RECONNECT_S`` and resumes after the last record it returned, so a consumer
never sees a gap or a duplicate.

The queue holds at most ``max_buffered`` records: a slow consumer stops the drain thread,
which stops reading the stream, and gRPC flow control then holds the coordinator back.
Unbounded, a pipeline behind on a long replay buffered the whole replay in memory.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Literal

import grpc

from vecgrid.common.channels import channel as cluster_channel
from vecgrid.proto import msg_pb2, wal_stream_pb2, wal_stream_pb2_grpc
from vecgrid.storage.wal import ChannelReader, Position, WalClosedError, WalError, WalRecord

_END = object()
_BROKEN = object()   # the stream broke in a way worth reconnecting for
_TRANSIENT = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED,
              grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
RECONNECT_S = 0.5
MAX_BUFFERED = 64   # records read off the stream and not yet returned
_PUT_POLL_S = 0.1   # how often a drain blocked on a full queue checks whether its stream was dropped


class RemoteChannelReader(ChannelReader):
    """Used by one consumer thread (``read``/``seek``/``close``); each stream's drain thread only
    puts into that stream's queue, and stops when the stream's ``dropped`` event is set."""

    def __init__(self, address: str, channel: str,
                 start: Position | Literal["earliest", "latest"] | None = None, *, inclusive: bool = False,
                 max_buffered: int = MAX_BUFFERED) -> None:
        if max_buffered < 2:  # a failure and its end marker must fit behind a read
            raise ValueError(f"max_buffered {max_buffered} < 2")
        self._channel = channel
        self._grpc = cluster_channel(address)
        self._stub = wal_stream_pb2_grpc.ChannelStreamStub(self._grpc)
        self._position: Position | None = None
        self._call = None
        self._dropped: threading.Event | None = None
        self._max_buffered = max_buffered
        self._queue: queue.Queue = queue.Queue(max_buffered)
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
        self._queue = queue.Queue(self._max_buffered)
        self._dropped = threading.Event()
        self._call = self._stub.Read(request)
        threading.Thread(target=self._drain, args=(self._call, self._queue, self._dropped), daemon=True,
                         name=f"wal-stream-{self._channel}").start()

    @property
    def buffered(self) -> int:
        """Records received and not yet read (at most ``max_buffered``)."""
        return self._queue.qsize()

    @staticmethod
    def _drain(call, out: queue.Queue, dropped: threading.Event) -> None:
        def put(item) -> bool:
            while not dropped.is_set():
                try:
                    out.put(item, timeout=_PUT_POLL_S)
                    return True
                except queue.Full:
                    continue
            return False  # seek or close dropped this stream: nobody reads its queue any more

        try:
            for record in call:
                if not put(record):
                    return
        except grpc.RpcError as e:
            if e.code() in _TRANSIENT:
                put(_BROKEN)
            elif e.code() != grpc.StatusCode.CANCELLED:
                put(WalError(f"channel stream failed: {e.code().name} {e.details()}"))
        put(_END)

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
            self._queue.put(item)  # never blocks: only the end marker can follow a failure
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
        if self._dropped is not None:
            self._dropped.set()
        if self._call is not None:
            self._call.cancel()
            self._call = None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._cancel()
            self._grpc.close()
