"""Tests for vecgrid.storage.dml: InsertBatch / DeleteBatch / TimeTick payload round trips."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vecgrid.storage.dml import DeleteBatch, DmlDecodeError, InsertBatch, TimeTick, decode_dml
from vecgrid.storage.wal import MessageKind, Wal

pytestmark = pytest.mark.timeout(60)


def columns(n: int, dim: int = 8, seed: int = 0) -> pa.RecordBatch:
    rng = np.random.default_rng(seed)
    return pa.record_batch(
        {
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * dim, dtype=np.float32)), dim),
            "age": pa.array(rng.integers(0, 100, n, dtype=np.int32)),
            "name": pa.array([f"n{i}" if i % 5 else None for i in range(n)]),
            "meta": pa.array([f'{{"i": {i}}}' for i in range(n)]),
        }
    )


def test_insert_round_trip_int_pk():
    n = 257
    cols = columns(n)
    timestamps = np.arange(n, dtype=np.uint64) + (1 << 60)
    batch = InsertBatch(449123, 449124, 449125, np.arange(1000, 1000 + n), timestamps, cols)
    payload = batch.encode()
    assert isinstance(payload, bytes) and payload[:4] == b"VGDM"
    back = decode_dml(payload)
    assert isinstance(back, InsertBatch)
    assert (back.collection_id, back.partition_id, back.segment_id) == (449123, 449124, 449125)
    assert back.num_rows == n
    assert back.primary_keys.type == pa.int64()
    assert back.primary_keys.to_pylist() == list(range(1000, 1000 + n))
    assert back.timestamps.dtype == np.uint64 and (back.timestamps == batch.timestamps).all()
    assert back.columns.equals(cols)
    assert back.columns.schema.field("vector").type == pa.list_(pa.float32(), 8)
    assert InsertBatch.decode(memoryview(payload)).num_rows == n


def test_insert_round_trip_str_pk_scalar_ts_and_table_input():
    cols = pa.Table.from_batches([columns(3), columns(2, seed=1)])
    batch = InsertBatch(1, 2, 3, ["a", "b", "c", "d", "e"], 99, cols)
    assert batch.columns.num_rows == 5 and (batch.timestamps == 99).all()
    back = InsertBatch.decode(batch.encode())
    assert back.primary_keys.to_pylist() == ["a", "b", "c", "d", "e"]
    assert back.columns.equals(batch.columns)


def test_insert_keeps_user_schema_metadata():
    cols = columns(4)
    cols = cols.replace_schema_metadata({b"origin": b"test"})
    back = InsertBatch.decode(InsertBatch(1, 2, 3, np.arange(4), 1, cols).encode())
    assert back.columns.schema.metadata == {b"origin": b"test"}


def test_insert_validation():
    cols = columns(3)
    with pytest.raises(ValueError, match="primary keys"):
        InsertBatch(1, 2, 3, [1, 2], 1, cols)
    with pytest.raises(ValueError, match="timestamps"):
        InsertBatch(1, 2, 3, [1, 2, 3], [1, 2], cols)
    with pytest.raises(ValueError, match="reserved"):
        InsertBatch(1, 2, 3, [1], 1, pa.record_batch({"$pk": [1]}))
    with pytest.raises(ValueError, match="null"):
        InsertBatch(1, 2, 3, pa.array([1, None, 3]), 1, cols)
    with pytest.raises(TypeError):
        InsertBatch(1, 2, 3, np.array([1.5, 2.5, 3.5]), 1, cols)
    with pytest.raises(ValueError, match="int64"):
        InsertBatch(1 << 63, 2, 3, [1, 2, 3], 1, cols)


@pytest.mark.parametrize("pks", [np.array([5, 9, -3], dtype=np.int64), ["x", "y", "z"]])
def test_delete_round_trip(pks):
    batch = DeleteBatch(7, -1, pks, [10, 11, 12])
    back = DeleteBatch.decode(batch.encode())
    assert (back.collection_id, back.partition_id) == (7, -1)
    assert back.primary_keys.to_pylist() == list(pks)
    assert back.timestamps.tolist() == [10, 11, 12]
    assert back.num_rows == 3


def test_timetick_round_trip():
    tt = TimeTick(441_864_054_374_400_007, source_id=12)
    assert decode_dml(tt.encode()) == tt
    assert TimeTick.decode(TimeTick(5).encode()) == TimeTick(5, 0)


def test_decode_errors():
    ins = InsertBatch(1, 2, 3, [1], 1, columns(1)).encode()
    with pytest.raises(DmlDecodeError):
        decode_dml(b"VG")
    with pytest.raises(DmlDecodeError, match="magic"):
        decode_dml(b"XXXX" + ins[4:])
    with pytest.raises(DmlDecodeError, match="version"):
        decode_dml(ins[:4] + b"\x09" + ins[5:])
    with pytest.raises(DmlDecodeError, match="kind"):
        decode_dml(ins[:5] + b"\x09" + ins[6:])
    with pytest.raises(DmlDecodeError):
        decode_dml(ins[: len(ins) // 2])
    with pytest.raises(DmlDecodeError, match="not a DeleteBatch"):
        DeleteBatch.decode(ins)
    with pytest.raises(DmlDecodeError, match="not an InsertBatch"):
        InsertBatch.decode(TimeTick(1).encode())


def test_payloads_through_the_wal(tmp_path):
    wal = Wal(tmp_path)
    ch = "by-dev-rootcoord-dml_1_7v0"
    msgs = [
        (MessageKind.INSERT, InsertBatch(7, 8, 9, np.arange(10), 100, columns(10))),
        (MessageKind.DELETE, DeleteBatch(7, 8, [3, 4], 101)),
        (MessageKind.TIMETICK, TimeTick(102)),
    ]
    with wal.open_writer(ch, fsync="always") as w:
        w.append_many([(kind, 100 + i, msg.encode()) for i, (kind, msg) in enumerate(msgs)])
    with wal.open_reader(ch) as r:
        got = [decode_dml(rec.payload) for rec in r]
    assert isinstance(got[0], InsertBatch) and got[0].columns.equals(msgs[0][1].columns)
    assert isinstance(got[1], DeleteBatch) and got[1].primary_keys.to_pylist() == [3, 4]
    assert got[2] == TimeTick(102)
