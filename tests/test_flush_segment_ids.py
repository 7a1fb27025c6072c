"""A flush turns each growing segment into a sealed segment of the same id: how a shard leader knows
which growing rows the sealed copy replaces (no gap, no duplicate)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vecgrid.cluster.streaming import ChannelAppender
from vecgrid.proto import common_pb2, data_coord_pb2, schema_pb2
from vecgrid.storage import segment_files
from vecgrid.storage.dml import DeleteBatch, InsertBatch, TimeTick
from vecgrid.cluster.datanode.flush import flush_channel
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import MessageKind, Wal

DIM = 4


@pytest.fixture
def setup(tmp_path):
    data = DataDir(tmp_path)
    store = data.open_store()
    catalog = data.open_catalog(store, tso_key="tso/test")
    schema = schema_pb2.CollectionSchema(fields=[
        schema_pb2.FieldSchema(name="pk", data_type=schema_pb2.Int64, is_primary_key=True),
        schema_pb2.FieldSchema(name="v", data_type=schema_pb2.FloatVector,
                               type_params=[common_pb2.KeyValuePair(key="dim", value=str(DIM))]),
    ])
    coll = catalog.create_collection("default", "ids", schema)
    wal = Wal(str(data.wal_root))
    appender = ChannelAppender(wal.open_writer(coll.vchannels[0]), catalog.allocate_timestamp,
                               catalog.allocate_segment_id)
    yield data, catalog, coll, wal, appender
    appender.writer.close()
    store.close()


def _batch(coll, partition_id, segment_id, pks, ts):
    vectors = pa.array([[float(p)] * DIM for p in pks], pa.list_(pa.float32(), DIM))
    return InsertBatch(coll.id, partition_id, segment_id, pa.array(pks, pa.int64()),
                       np.full(len(pks), ts, np.uint64), pa.record_batch({"v": vectors})).encode()


def _insert(appender, coll, pks, partition_id=None, segment_id=None):
    """Rows as the write path logs them: into the growing segment the appender assigns (or a given id)."""
    pid = coll.partitions[0].partitionID if partition_id is None else partition_id

    def build(ts):
        sid = appender.segments.assign(pid, len(pks), 8 * len(pks)) if segment_id is None else segment_id
        return [(MessageKind.INSERT, _batch(coll, pid, sid, pks, ts))]
    return appender.append(build)


def _seal(appender):
    appended, sealed = appender.seal(lambda ts: [(MessageKind.TIMETICK, TimeTick(ts).encode())])
    return appended.timestamp, sealed


def _sealed_l1(result):
    return [s for s in result.segments if s.level == data_coord_pb2.L1]


def test_sealed_segment_keeps_the_growing_id(setup):
    data, catalog, coll, wal, appender = setup
    _insert(appender, coll, [1, 2, 3])
    _insert(appender, coll, [4])
    barrier, sealed = _seal(appender)
    (growing,) = sealed.segments
    result = flush_channel(catalog, wal, data.segment_root, coll.vchannels[0], up_to_ts=barrier)
    (segment,) = _sealed_l1(result)
    assert segment.ID == growing.segment_id and segment.num_of_rows == 4
    assert catalog.get_segment(growing.segment_id).state == common_pb2.Flushed
    rows = segment_files.read_segment(catalog.segment_files_record(segment.ID))
    assert rows.column("pk").to_pylist() == [1, 2, 3, 4]

    # the next growing segment is a new one, and is sealed under its own id
    _insert(appender, coll, [5])
    barrier, sealed = _seal(appender)
    (again,) = _sealed_l1(flush_channel(catalog, wal, data.segment_root, coll.vchannels[0], up_to_ts=barrier))
    assert again.ID == sealed.segments[0].segment_id != growing.segment_id


def test_ids_not_from_the_allocator_or_already_known_get_a_fresh_one(setup):
    data, catalog, coll, wal, appender = setup
    other = catalog.create_partition(coll.id, "p2").partitionID
    # 990001 was never handed out; the same id in two partitions cannot name two segments
    _insert(appender, coll, [1, 2], segment_id=990001)
    _insert(appender, coll, [3], partition_id=other, segment_id=990001)
    real = catalog.allocate_segment_id()
    _insert(appender, coll, [4], segment_id=real)
    cut, _ = _seal(appender)
    _insert(appender, coll, [5], segment_id=real)     # the same growing id after a flush point (a legacy
    end, _ = _seal(appender)                           # caller flushing at any timestamp): known by then
    first = _sealed_l1(flush_channel(catalog, wal, data.segment_root, coll.vchannels[0], up_to_ts=cut))
    by_rows = {tuple(segment_files.read_segment(catalog.segment_files_record(s.ID)).column("pk").to_pylist()): s.ID
               for s in first}
    assert set(by_rows) == {(1, 2), (3,), (4,)}
    assert by_rows[(4,)] == real
    assert 990001 not in by_rows.values() and len(set(by_rows.values())) == 3
    (second,) = _sealed_l1(flush_channel(catalog, wal, data.segment_root, coll.vchannels[0], up_to_ts=end))
    assert second.ID not in by_rows.values()



def test_a_segment_gets_only_the_deletes_of_its_older_rows(setup):
    """An upsert logs a delete and the new row at ONE timestamp, and a delete hides only older rows (the
    query nodes' and compaction's rule).  The flush gave a segment every delete of its keys at or after a
    row's timestamp, so an upsert of a key sealed earlier put a delete of the new row into the new
    segment's own delete log: harmless only as long as every reader applies the strict rule."""
    data, catalog, coll, wal, appender = setup
    pid = coll.partitions[0].partitionID
    _insert(appender, coll, [1, 2])

    def upsert(ts):  # pk 2 again, and pk 7, whose older row lies in no segment of this range
        sid = appender.segments.assign(pid, 2, 16)
        delete = DeleteBatch(coll.id, -1, pa.array([2, 7], pa.int64()), np.full(2, ts, np.uint64)).encode()
        return [(MessageKind.DELETE, delete), (MessageKind.INSERT, _batch(coll, pid, sid, [2, 7], ts))]
    upserted = appender.append(upsert).timestamp
    barrier, _ = _seal(appender)
    (segment,) = _sealed_l1(flush_channel(catalog, wal, data.segment_root, coll.vchannels[0], up_to_ts=barrier))
    deleted = segment_files.read_deltalog(catalog.segment_files_record(segment.ID)).to_pylist()
    assert deleted == [{"pk": 2, "ts": upserted}]  # the older row of pk 2 only
