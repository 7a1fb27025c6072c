"""Idle channels: the checkpoint follows the time ticks, and log files no target needs are dropped."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.target_manager import TargetManager
from vecgrid.cluster.querycoord.wal_retention import WalRetention
from vecgrid.proto import query_coord_pb2, schema_pb2, common_pb2
from vecgrid.storage.dml import InsertBatch, TimeTick
from vecgrid.cluster.datanode.flush import advance_idle_checkpoint, flush_channel
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import MessageKind, Position, Wal, WalTruncatedError

import pytest


@pytest.fixture
def setup(tmp_path):
    data = DataDir(tmp_path)
    store = data.open_store()
    catalog = data.open_catalog(store, tso_key="tso/test")
    schema = schema_pb2.CollectionSchema(fields=[
        schema_pb2.FieldSchema(name="pk", data_type=schema_pb2.Int64, is_primary_key=True),
        schema_pb2.FieldSchema(name="v", data_type=schema_pb2.FloatVector,
                               type_params=[common_pb2.KeyValuePair(key="dim", value="4")]),
    ])
    coll = catalog.create_collection("default", "idle", schema)
    wal = Wal(str(data.wal_root))
    writer = wal.open_writer(coll.vchannels[0], segment_bytes=512)  # a few ticks per file
    yield data, store, catalog, coll, wal, writer
    writer.close()
    store.close()


def _ticks(writer, first_ts, n):
    return [writer.append(MessageKind.TIMETICK, ts, TimeTick(ts).encode()) for ts in range(first_ts, first_ts + n)]


def _insert(writer, coll, ts):
    batch = InsertBatch(coll.id, coll.partitions[0].partitionID, 77, pa.array([ts], pa.int64()),
                        np.full(1, ts, np.uint64), pa.record_batch({"v": pa.array([[1.0] * 4], pa.list_(pa.float32(), 4))}))
    return writer.append(MessageKind.INSERT, ts, batch.encode())


def test_checkpoint_follows_ticks_and_never_passes_data(setup):
    data, store, catalog, coll, wal, writer = setup
    channel = coll.vchannels[0]
    assert advance_idle_checkpoint(catalog, wal, channel) is None          # empty log: nothing to do
    last = _ticks(writer, 100, 5)[-1]
    writer.sync()
    cp = advance_idle_checkpoint(catalog, wal, channel)
    assert Position.from_msg_position(cp).offset == last.offset and catalog.get_channel_checkpoint(channel).timestamp == 104
    assert advance_idle_checkpoint(catalog, wal, channel) is None          # nothing new since

    _insert(writer, coll, 200)                                               # data: only a flush may pass it
    _ticks(writer, 201, 3)
    writer.sync()
    assert advance_idle_checkpoint(catalog, wal, channel) is None
    assert catalog.get_channel_checkpoint(channel).timestamp == 104
    flushed = flush_channel(catalog, wal, data.segment_root, channel, up_to_ts=203)
    assert [s.num_of_rows for s in flushed.segments] == [1] and flushed.checkpoint.timestamp == 203
    last = _ticks(writer, 300, 2)[-1]
    writer.sync()
    assert Position.from_msg_position(advance_idle_checkpoint(catalog, wal, channel)).offset == last.offset


def test_sweep_drops_files_one_sweep_behind_and_keeps_target_seeks(setup):
    data, store, catalog, coll, wal, writer = setup
    channel = coll.vchannels[0]
    collections, targets = _load(store, catalog, coll)
    retention = WalRetention(wal, catalog, collections, targets, 60.0)
    def files() -> list[int]:  # first offsets of the log files
        return sorted(int(n[:-4]) for n in os.listdir(wal.channel_dir(channel)) if n.endswith(".log"))

    first = _ticks(writer, 100, 40)
    writer.sync()
    assert len(files()) > 3
    targets.promote(coll.id, targets.pull_next(coll.id, collections.partition_ids(coll.id)))  # seek: "earliest"
    assert retention.sweep() == [coll.id]
    before = files()
    _ticks(writer, 200, 40)
    writer.sync()
    retention.sweep()
    assert files()[0] == before[0]          # the current target still seeks from the start of the log

    # The next target takes the moved checkpoint; once it is current, one sweep later the files before it go.
    targets.promote(coll.id, targets.pull_next(coll.id, collections.partition_ids(coll.id)))
    seek = targets.current(coll.id).Channel_targets[0].seek_position
    assert seek.timestamp == 239
    _ticks(writer, 300, 40)
    writer.sync()
    retention.sweep()
    kept = files()
    seek_offset = Position.from_msg_position(seek).offset
    assert 0 < kept[0] <= seek_offset < kept[1]   # the file holding the seek position is the first one kept
    with pytest.raises(WalTruncatedError):
        wal.open_reader(channel, first[0], inclusive=True)
    with wal.open_reader(channel, Position.from_msg_position(seek)) as reader:    # the seek position is still there
        assert reader.read(timeout=0).timestamp == 300


def _load(store, catalog, coll):
    collections, targets = CollectionManager(store), TargetManager(store, catalog)
    collections.put(
        query_coord_pb2.CollectionLoadInfo(
            collectionID=coll.id,
            replica_number=1,
            status=query_coord_pb2.Loaded,
            load_type=query_coord_pb2.LoadCollection,
        ),
        [
            query_coord_pb2.PartitionLoadInfo(
                collectionID=coll.id, partitionID=coll.partitions[0].partitionID, status=query_coord_pb2.Loaded
            )
        ],
    )
    return collections, targets


def test_flushed_channel_files_go_once_no_target_seeks_before_them(setup):
    """The coordinator's flush leaves the log alone (``trim=False``): a channel watch from the current
    target's older seek position must still find it.  The retention drops the files once no target
    seeks before them, also on a channel that is never idle and of a collection that is not loaded."""
    data, store, catalog, coll, wal, writer = setup
    channel = coll.vchannels[0]
    collections, targets = _load(store, catalog, coll)
    retention = WalRetention(wal, catalog, collections, targets, 60.0)
    _ticks(writer, 100, 5)
    writer.sync()
    retention.sweep()
    targets.promote(coll.id, targets.pull_next(coll.id, collections.partition_ids(coll.id)))
    old_seek = Position.from_msg_position(targets.current(coll.id).Channel_targets[0].seek_position)
    for ts in range(200, 240, 4):            # rows and ticks over many files, then a flush
        _insert(writer, coll, ts)
        _ticks(writer, ts + 1, 3)
    writer.sync()
    flushed = flush_channel(catalog, wal, data.segment_root, channel, up_to_ts=230, trim=False)
    new_seek = Position.from_msg_position(flushed.checkpoint)
    _insert(writer, coll, 300)               # the channel keeps being written: never idle
    writer.sync()
    retention.sweep()
    retention.sweep()
    with wal.open_reader(channel, old_seek) as reader:     # the current target still seeks there
        assert reader.read(timeout=0).timestamp == 200

    targets.promote(coll.id, targets.pull_next(coll.id, collections.partition_ids(coll.id)))
    retention.sweep()
    with pytest.raises(WalTruncatedError):
        wal.open_reader(channel, old_seek)
    with wal.open_reader(channel, new_seek) as reader:
        assert reader.read(timeout=0).timestamp == 231

    # not loaded: no target, no reader; one sweep after the flush its files go too
    targets.remove(coll.id)
    collections.remove(coll.id)
    _ticks(writer, 301, 20)
    writer.sync()
    later = flush_channel(catalog, wal, data.segment_root, channel, up_to_ts=320, trim=False)
    _ticks(writer, 400, 10)
    writer.sync()
    retention.sweep()
    retention.sweep()
    firsts = sorted(int(n[:-4]) for n in os.listdir(wal.channel_dir(channel)) if n.endswith(".log"))
    assert firsts[0] <= Position.from_msg_position(later.checkpoint).offset < firsts[1]
