"""The records of one write share a timestamp (an upsert's delete and insert, a large insert split into
several records): a shard leader's tsafe may reach that timestamp only once the last of them is applied,
or a read at it sees the upsert's delete without its insert (the key absent) — and it must still reach it
without waiting for a time tick once the log has nothing more (read-your-writes)."""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from vecgrid.cluster.querynode.pipeline import ChannelPipeline
from vecgrid.storage.dml import DeleteBatch, InsertBatch, TimeTick
from vecgrid.storage.wal import ChannelReader, MessageKind, Position, WalRecord

from tests.pipeline_support import COLL, DIM, SCHEMA

CHANNEL = "by-dev-rootcoord-dml_0_7v0"


class ScriptedReader(ChannelReader):
    """Hands out a fixed list of records (a None in it: nothing readable at that call, as when a stream from
    another host has not delivered the next record yet); records what tsafe was each time the pipeline
    fetched a record, and counts the calls that found the log empty."""

    def __init__(self, records: list[WalRecord | None], pipeline_ref: list) -> None:
        self.records = list(records)
        self.pipeline_ref = pipeline_ref
        self.tsafe_at_read: list[int] = []
        self.empty_reads = 0

    @property
    def channel(self) -> str:
        return CHANNEL

    @property
    def position(self) -> Position | None:
        return None

    def read(self, timeout: float | None = None) -> WalRecord | None:
        if not self.records or self.records[0] is None:
            if self.records:
                self.records.pop(0)
            else:
                self.empty_reads += 1
            time.sleep(min(timeout or 0.0, 0.01))   # as a log with nothing new
            return None
        self.tsafe_at_read.append(self.pipeline_ref[0].tsafe)
        return self.records.pop(0)

    def seek(self, start, *, inclusive: bool = False) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


def _record(offset: int, kind: MessageKind, ts: int, payload: bytes) -> WalRecord:
    return WalRecord(Position.at(CHANNEL, offset, ts), kind, payload)


def _insert(pks: list[int], ts: int, segment: int = 40) -> bytes:
    vectors = np.ones((len(pks), DIM), np.float32)
    return InsertBatch(COLL, 1, segment, pa.array(pks, pa.int64()), np.full(len(pks), ts, np.uint64),
                       pa.record_batch({"v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                                        "age": pa.array(pks, pa.int64())})).encode()


def _delete(pks: list[int], ts: int) -> bytes:
    return DeleteBatch(COLL, -1, pa.array(pks, pa.int64()), np.full(len(pks), ts, np.uint64)).encode()


def test_tsafe_reaches_a_write_timestamp_only_after_all_its_records():
    ref: list = []
    records = [
        _record(0, MessageKind.INSERT, 100, _insert([1, 2], 100)),
        _record(1, MessageKind.DELETE, 200, _delete([1], 200)),     # an upsert of key 1: delete ...
        _record(2, MessageKind.INSERT, 200, _insert([1], 200)),     # ... and insert, one timestamp
        _record(3, MessageKind.INSERT, 300, _insert([3], 300)),
    ]
    reader = ScriptedReader(records, ref)
    pipeline = ChannelPipeline(CHANNEL, reader, COLL, SCHEMA, "L2")
    ref.append(pipeline)
    pipeline.start()
    try:
        assert pipeline.wait_tsafe(300, timeout=10), (pipeline.error, reader.tsafe_at_read)
        # when the pipeline fetched the upsert's insert, its delete was applied but tsafe must not have
        # reached 200 yet: a read at 200 would have missed key 1 altogether
        assert reader.tsafe_at_read[2] < 200, reader.tsafe_at_read
        # and the last record of the log is published without any time tick after it
        assert pipeline.tsafe == 300
        growing = pipeline.growing[40]
        hits = growing.search(np.ones((1, DIM), np.float32), 10, timestamp=200)
        assert sorted(int(i) for i in hits.dense()[1][0] if i >= 0) == [1, 2]   # key 1 once, the new row
    finally:
        pipeline.stop()


def test_a_delete_alone_in_the_log_is_not_taken_as_the_end_of_its_write():
    """An upsert's insert that arrives after its delete (a stream delivers record by record), a delete whose
    write ends with a time tick, and a delete with nothing after it yet."""
    ref: list = []
    records = [
        _record(0, MessageKind.INSERT, 100, _insert([1, 2], 100)),
        _record(1, MessageKind.DELETE, 200, _delete([1], 200)),
        None,                                                        # the upsert's insert is late
        _record(2, MessageKind.INSERT, 200, _insert([1], 200)),
        _record(3, MessageKind.DELETE, 300, _delete([2], 300)),
        _record(4, MessageKind.TIMETICK, 300, TimeTick(300).encode()),
        _record(5, MessageKind.DELETE, 400, _delete([1], 400)),     # its tick is still on its way
    ]
    reader = ScriptedReader(records, ref)
    pipeline = ChannelPipeline(CHANNEL, reader, COLL, SCHEMA, "L2")
    ref.append(pipeline)
    pipeline.start()
    try:
        assert pipeline.wait_tsafe(300, timeout=10), (pipeline.error, reader.tsafe_at_read)
        assert reader.tsafe_at_read[2] < 200, reader.tsafe_at_read   # the late insert: 200 not yet published
        deadline = time.monotonic() + 10
        while reader.empty_reads < 2 and time.monotonic() < deadline:   # the last delete applied, log empty
            time.sleep(0.01)
        assert reader.empty_reads >= 2
        assert pipeline.tsafe == 399
    finally:
        pipeline.stop()
