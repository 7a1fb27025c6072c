"""The coordinator's ChannelStream service reads each stream's WAL records on a thread of its own: a
stream waits up to POLL_S for the next record, and on the event loop's default executor (six threads
on a 2-core host) a few idle streams starved every other ``asyncio.to_thread`` of the coordinator — the
REST and proxy catalog reads waited ~200 ms behind them."""

from __future__ import annotations

import asyncio
import threading

import grpc

from vecgrid.proto import wal_stream_pb2, wal_stream_pb2_grpc
from vecgrid.rpc.channel_stream_servicer import ChannelStreamServicer
from vecgrid.storage.wal import MessageKind, Wal, WalReader

CHANNELS = [f"by-dev-rootcoord-dml_{i}_1v0" for i in range(3)]


async def test_streams_read_on_threads_of_their_own(tmp_path, monkeypatch):
    wal = Wal(str(tmp_path / "wal"))
    for ts, channel in enumerate(CHANNELS, start=1):
        writer = wal.open_writer(channel)
        writer.append(MessageKind.TIMETICK, ts, b"tick")
    readers_on: set[str] = set()
    original = WalReader.read

    def recording_read(self, timeout=None):
        readers_on.add(threading.current_thread().name)
        return original(self, timeout)

    monkeypatch.setattr(WalReader, "read", recording_read)
    server = grpc.aio.server()
    wal_stream_pb2_grpc.add_ChannelStreamServicer_to_server(ChannelStreamServicer(wal), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = wal_stream_pb2_grpc.ChannelStreamStub(channel)
            streams = [stub.Read(wal_stream_pb2.ReadRequest(channel=name)) for name in CHANNELS]
            firsts = [await stream.read() for stream in streams]      # each stream is now tailing
            assert [r.payload for r in firsts] == [b"tick"] * len(CHANNELS)
            assert await asyncio.to_thread(lambda: "the default executor is free") == "the default executor is free"
            for stream in streams:
                stream.cancel()
    finally:
        await server.stop(0)
    assert readers_on and all(name.startswith("wal-stream-serve") for name in readers_on), readers_on
