"""Bulk import and flush: files and WAL ranges become sealed segments, all or nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vecgrid import errors
from vecgrid.proto import common_pb2, data_coord_pb2, schema_pb2
from vecgrid.storage import segment_files
from vecgrid.cluster.datanode.bulk_import import TIMESTAMP_FIELD, ImportOptions, bulk_import
from vecgrid.storage.dml import DeleteBatch, InsertBatch, TimeTick
from vecgrid.cluster.datanode.flush import flush_channel
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import MessageKind, Wal

DIM = 16


@pytest.fixture
def npy_inputs(tmp_path):
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((2500, DIM)).astype(np.float32)
    np.save(tmp_path / "embedding.npy", vectors)
    pq.write_table(pa.table({"age": np.arange(2500, dtype=np.int32), "tag": [f"t{i % 7}" for i in range(2500)]}),
                   tmp_path / "scalars.parquet")
    return [str(tmp_path / "embedding.npy"), str(tmp_path / "scalars.parquet")], vectors


def _catalog(data_dir, key="tso/test"):
    data = DataDir(data_dir)
    store = data.open_store()
    return data, store, data.open_catalog(store, tso_key=key)


def _read_all(catalog, data, coll_id, level=data_coord_pb2.L1):
    tables = [segment_files.read_segment(catalog.segment_files_record(s.ID))
              for s in catalog.list_segments(coll_id, states=[common_pb2.Flushed]) if s.level == level]
    return pa.concat_tables(tables) if tables else None


def test_import_npy_with_scalars_creates_collection_and_segments(tmp_path, npy_inputs):
    files, vectors = npy_inputs
    summary = bulk_import(str(tmp_path / "data"), files, ImportOptions(collection="docs", shards=2, segment_rows=1000,
                                                                        metric="COSINE", index="IVF_FLAT",
                                                                        index_params={"nlist": 16}))
    assert summary["num_rows"] == 2500 and len(summary["channels"]) == 2
    assert all(s["num_rows"] <= 1000 for s in summary["segments"])
    assert sum(s["num_rows"] for s in summary["segments"]) == 2500
    by_name = {f["name"]: f for f in summary["fields"]}
    assert by_name["id"]["primary_key"] and by_name["id"]["auto_id"]
    assert by_name["embedding"] == {"field_id": by_name["embedding"]["field_id"], "name": "embedding",
                                    "data_type": "FloatVector", "dim": DIM}
    assert by_name["age"]["data_type"] == "Int32" and by_name["tag"]["data_type"] == "VarChar"

    data, store, catalog = _catalog(tmp_path / "data")
    coll = catalog.describe_collection("default", "docs")
    (index,) = catalog.describe_index(coll.id)
    assert {kv.key: kv.value for kv in index.index_params}["metric_type"] == "COSINE"
    rows = _read_all(catalog, data, coll.id)
    order = np.argsort(rows.column("age").to_numpy())
    got = np.stack(rows.column("embedding").to_numpy(zero_copy_only=False))[order]
    np.testing.assert_array_equal(got, vectors)  # every row, bit for bit
    assert len(set(rows.column("id").to_pylist())) == 2500
    assert rows.column(TIMESTAMP_FIELD).to_numpy().min() > 0
    store.close()


def test_import_into_existing_collection_and_partition(tmp_path):
    table = pa.table({"pk": pa.array([1, 2, 3], pa.int64()),
                      "vec": pa.array([[0.0] * 4, [1.0] * 4, [2.0] * 4], pa.list_(pa.float32(), 4)),
                      "meta": pa.array([{"a": 1}, {"a": 2}, {"a": 3}])})
    pq.write_table(table, tmp_path / "a.parquet")
    first = bulk_import(str(tmp_path / "d"), [str(tmp_path / "a.parquet")],
                        ImportOptions(collection="c", primary_key="pk"))
    second = bulk_import(str(tmp_path / "d"), [str(tmp_path / "a.parquet")],
                         ImportOptions(collection="c", partition="p2"))
    assert second["collection_id"] == first["collection_id"]
    assert len(second["partition_ids"]) == 2
    assert second["segments"][0]["partition_id"] not in first["partition_ids"]


def test_bad_file_publishes_nothing(tmp_path):
    good = np.ones((70_000, 4), np.float32)
    good[69_999, 2] = np.nan  # in the second batch, after a segment's worth of rows was written
    np.save(tmp_path / "vec.npy", good)
    data_dir = str(tmp_path / "d")
    with pytest.raises(errors.ParameterInvalid, match="NaN|nan|finite"):
        bulk_import(data_dir, [str(tmp_path / "vec.npy")], ImportOptions(collection="c", segment_rows=10_000))
    data, store, catalog = _catalog(data_dir)
    assert not catalog.has_collection("default", "c")  # the collection this import created is undone
    segments_dir = tmp_path / "d" / "segments"
    leftovers = [f for _, _, fs in os.walk(segments_dir) for f in fs] if segments_dir.exists() else []
    assert leftovers == []
    store.close()


def test_bad_inputs_are_clear_errors(tmp_path):
    np.save(tmp_path / "v.npy", np.ones((10, 4), np.float32))
    (tmp_path / "s.csv").write_text("age\n" + "\n".join(map(str, range(9))) + "\n")
    with pytest.raises(errors.ParameterInvalid, match="different numbers of rows"):
        bulk_import(str(tmp_path / "d"), [str(tmp_path / "v.npy"), str(tmp_path / "s.csv")],
                    ImportOptions(collection="c"))
    pq.write_table(pa.table({"pk": [1, 1], "v": pa.array([[1.0, 2.0]] * 2, pa.list_(pa.float32(), 2))}),
                   tmp_path / "dup.parquet")
    with pytest.raises(errors.ParameterInvalid, match="duplicate primary key"):
        bulk_import(str(tmp_path / "d"), [str(tmp_path / "dup.parquet")], ImportOptions(collection="c2", primary_key="pk"))
    pq.write_table(pa.table({"a": [1]}), tmp_path / "novec.parquet")
    with pytest.raises(errors.ParameterInvalid, match="no vector column"):
        bulk_import(str(tmp_path / "d"), [str(tmp_path / "novec.parquet")], ImportOptions(collection="c3"))


@pytest.mark.slow
def test_cli_prints_json_summary_last_and_one_line_errors(tmp_path, npy_inputs):
    files, _ = npy_inputs
    cmd = [sys.executable, "-m", "vecgrid.cli", "import", "--data-dir", str(tmp_path / "d"), "--collection", "docs"]
    ok = subprocess.run(cmd + files, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    summary = json.loads(ok.stdout.strip().splitlines()[-1])
    assert summary["collection"] == "docs" and summary["num_rows"] == 2500
    assert {"collection_id", "partition_ids", "fields", "channels", "segments"} <= set(summary)
    bad = subprocess.run(cmd[:-1] + ["bad", str(tmp_path / "missing.npy")], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


# --- flush -------------------------------------------------------------------------------------

def _collection(catalog):
    schema = schema_pb2.CollectionSchema(fields=[
        schema_pb2.FieldSchema(name="pk", data_type=schema_pb2.Int64, is_primary_key=True),
        schema_pb2.FieldSchema(name="v", data_type=schema_pb2.FloatVector,
                               type_params=[common_pb2.KeyValuePair(key="dim", value="4")]),
    ])
    return catalog.create_collection("default", "f", schema)


def _insert(writer, coll, partition_id, segment_id, pks, ts):
    vectors = pa.array([[float(p)] * 4 for p in pks], pa.list_(pa.float32(), 4))
    batch = InsertBatch(coll.id, partition_id, segment_id, pa.array(pks, pa.int64()),
                        np.full(len(pks), ts, np.uint64), pa.record_batch({"v": vectors}))
    return writer.append(MessageKind.INSERT, ts, batch.encode())


def test_flush_seals_rows_and_deletes_up_to_a_timestamp(tmp_path):
    data, store, catalog = _catalog(tmp_path)
    coll = _collection(catalog)
    channel = coll.vchannels[0]
    partition_id = coll.partitions[0].partitionID
    wal = Wal(str(data.wal_root))
    writer = wal.open_writer(channel)
    _insert(writer, coll, partition_id, 900, [1, 2, 3], ts=100)
    writer.append(MessageKind.DELETE, 110, DeleteBatch(coll.id, partition_id, pa.array([2]), np.array([110], np.uint64)).encode())
    writer.append(MessageKind.TIMETICK, 120, TimeTick(120).encode())
    _insert(writer, coll, partition_id, 901, [4, 5], ts=200)  # after the flush timestamp
    writer.sync()

    result = flush_channel(catalog, wal, data.segment_root, channel, up_to_ts=150)
    assert result.records == 3 and result.checkpoint.timestamp == 120
    sealed = [s for s in result.segments if s.level == data_coord_pb2.L1]
    l0 = [s for s in result.segments if s.level == data_coord_pb2.L0]
    assert len(sealed) == 1 and sealed[0].num_of_rows == 3 and len(l0) == 1
    record = catalog.segment_files_record(sealed[0].ID)
    rows = segment_files.read_segment(record)
    assert rows.column("pk").to_pylist() == [1, 2, 3]
    assert rows.column(TIMESTAMP_FIELD).to_pylist() == [100, 100, 100]
    assert segment_files.read_deltalog(record).column("pk").to_pylist() == [2]
    assert segment_files.read_deltalog(catalog.segment_files_record(l0[0].ID)).column("pk").to_pylist() == [2]
    assert catalog.get_channel_checkpoint(channel).timestamp == 120

    # The rest of the log is flushed next time, from the checkpoint on: nothing twice.
    second = flush_channel(catalog, wal, data.segment_root, channel, up_to_ts=1000)
    assert [s.num_of_rows for s in second.segments] == [2]
    assert segment_files.read_segment(catalog.segment_files_record(second.segments[0].ID)).column("pk").to_pylist() == [4, 5]
    assert flush_channel(catalog, wal, data.segment_root, channel, up_to_ts=1000).records == 0
    writer.close()
    store.close()


def test_failed_flush_changes_nothing_and_is_retried(tmp_path, monkeypatch):
    data, store, catalog = _catalog(tmp_path)
    coll = _collection(catalog)
    channel = coll.vchannels[0]
    wal = Wal(str(data.wal_root))
    writer = wal.open_writer(channel)
    _insert(writer, coll, coll.partitions[0].partitionID, 900, [1, 2], ts=100)
    writer.sync()

    def crash(*args, **kwargs):
        raise OSError("simulated crash before the catalog commit")

    monkeypatch.setattr(catalog, "publish_segment_records", crash)
    with pytest.raises(OSError):
        flush_channel(catalog, wal, data.segment_root, channel, up_to_ts=1000)
    assert catalog.list_segments(coll.id) == [] and catalog.get_channel_checkpoint(channel) is None
    monkeypatch.undo()
    result = flush_channel(catalog, wal, data.segment_root, channel, up_to_ts=1000)
    assert [s.num_of_rows for s in result.segments] == [2]
    writer.close()
    store.close()
