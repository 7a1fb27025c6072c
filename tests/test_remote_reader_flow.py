"""RemoteChannelReader buffers at most ``max_buffered`` records: behind a slow consumer the drain
thread stops reading and gRPC flow control holds the sender, and no record is lost or reordered
(a fake ChannelStream server on a free port, no coordinator)."""

from __future__ import annotations

import threading
import time
from concurrent import futures

import grpc
import pytest

from vecgrid.proto import msg_pb2, wal_stream_pb2, wal_stream_pb2_grpc
from vecgrid.cluster.streaming.remote_reader import RemoteChannelReader
from vecgrid.storage.wal import MessageKind, Position

CHANNEL = "by-dev-rootcoord-dml_0_1v0"
RECORDS = 200
BOUND = 8


class Source(wal_stream_pb2_grpc.ChannelStreamServicer):
    """Records 0..RECORDS-1 of one channel from the requested start, then an open (tailing) stream."""

    def __init__(self) -> None:
        self.sent = 0
        self.streams = 0

    def Read(self, request, context):
        self.streams += 1
        first = 0
        if request.HasField("start"):
            first = Position.from_msg_position(request.start).offset + (0 if request.inclusive else 1)
        for offset in range(first, RECORDS):
            position = Position.at(CHANNEL, offset, 1000 + offset)
            yield wal_stream_pb2.Record(position=msg_pb2.MsgPosition(**position.to_msg_position_kwargs()),
                                        kind=int(MessageKind.TIMETICK), payload=offset.to_bytes(4, "big") * 256)
            self.sent += 1
        ended = threading.Event()
        context.add_callback(ended.set)
        ended.wait()


@pytest.fixture
def source():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    src = Source()
    wal_stream_pb2_grpc.add_ChannelStreamServicer_to_server(src, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield src, f"127.0.0.1:{port}"
    server.stop(0).wait()


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.005)


def drain_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"wal-stream-{CHANNEL}"]


def test_a_slow_consumer_never_buffers_past_the_bound(source):
    src, address = source
    reader = RemoteChannelReader(address, CHANNEL, "earliest", max_buffered=BOUND)
    offsets, peak = [], 0
    try:
        while len(offsets) < RECORDS:
            # a slow consumer: before each read, the drain fills the queue as far as it may
            wait_until(lambda: reader.buffered >= BOUND or src.sent == RECORDS, 30, "the drain to fill the queue")
            wait_until(lambda: reader.buffered >= min(BOUND, RECORDS - len(offsets)), 30, "the last records")
            peak = max(peak, reader.buffered)
            record = reader.read(timeout=30)
            assert record is not None
            assert record.payload == record.position.offset.to_bytes(4, "big") * 256
            offsets.append(record.position.offset)
        assert reader.read(timeout=0) is None
    finally:
        reader.close()
    assert offsets == list(range(RECORDS))  # nothing lost, nothing reordered, nothing twice
    assert peak == BOUND
    wait_until(lambda: not drain_threads(), 30, "the drain thread to end after close")


def test_seek_and_close_free_a_drain_blocked_on_a_full_queue(source):
    src, address = source
    reader = RemoteChannelReader(address, CHANNEL, "earliest", max_buffered=BOUND)
    try:
        wait_until(lambda: reader.buffered == BOUND, 30, "a full queue")
        assert [reader.read(timeout=30).position.offset for _ in range(3)] == [0, 1, 2]
        reader.seek(Position.at(CHANNEL, 150))  # exclusive: from 151 on
        wait_until(lambda: len(drain_threads()) == 1, 30, "the old stream's drain to end")
        got = [reader.read(timeout=30).position.offset for _ in range(RECORDS - 151)]
        assert got == list(range(151, RECORDS))
        assert src.streams == 2
    finally:
        reader.close()
    wait_until(lambda: not drain_threads(), 30, "the drain thread to end after close")
