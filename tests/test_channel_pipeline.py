"""A watched channel: WAL → growing segments, deletes, tsafe (vecgrid.cluster.querynode.pipeline)."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

from vecgrid.cluster.querynode.pipeline import ChannelPipeline
from vecgrid.storage.dml import DeleteBatch, InsertBatch, TimeTick
from vecgrid.storage.wal import MessageKind, Wal

from tests.pipeline_support import COLL, DIM, SCHEMA

def _insert(writer, partition, segment, pks, ts, vectors):
    batch = InsertBatch(COLL, partition, segment, pa.array(pks, pa.int64()), np.full(len(pks), ts, np.uint64),
                        pa.record_batch({"v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                                         "age": pa.array(pks, pa.int64())}))
    writer.append(MessageKind.INSERT, ts, batch.encode())


def test_pipeline_consumes_inserts_deletes_and_advances_tsafe(tmp_path):
    rng = np.random.default_rng(0)
    wal = Wal(str(tmp_path))
    channel = "by-dev-rootcoord-dml_0_7v0"
    writer = wal.open_writer(channel)
    forwarded = []
    pipeline = ChannelPipeline(channel, wal.open_reader(channel), COLL, SCHEMA, "L2",
                               excluded={50: 150}, forward_delete=lambda pks, ts: forwarded.append(pks.tolist()))
    pipeline.start()
    try:
        vectors = rng.standard_normal((10, DIM)).astype(np.float32)
        _insert(writer, 1, 40, list(range(10)), 100, vectors)
        _insert(writer, 2, 41, [100, 101], 110, rng.standard_normal((2, DIM)).astype(np.float32))  # another partition
        _insert(writer, 1, 50, [200], 120, rng.standard_normal((1, DIM)).astype(np.float32))  # sealed elsewhere
        writer.append(MessageKind.DELETE, 130, DeleteBatch(COLL, 1, pa.array([3]), np.array([130], np.uint64)).encode())
        writer.append(MessageKind.TIMETICK, 140, TimeTick(140).encode())
        writer.sync()
        assert pipeline.wait_tsafe(140, timeout=5)
        assert pipeline.tsafe == 140
        # rows of every partition are kept (reads pick the loaded ones); the sealed segment's are not
        assert set(pipeline.growing) == {40, 41} and pipeline.num_growing_rows == 12
        assert pipeline.growing_partition == {40: 1, 41: 2}
        assert forwarded == [[3]]
        growing = pipeline.growing[40]
        hits = growing.search(vectors, 1, timestamp=140)
        _, ids = hits.dense()
        # Every row finds itself, except the deleted one.
        assert [int(i[0]) for j, i in enumerate(ids) if j != 3] == [j for j in range(10) if j != 3]
        assert int(ids[3][0]) != 3
        # MVCC: at ts 99 nothing is visible yet.
        assert growing.search(vectors[:1], 1, timestamp=99).dense()[1][0][0] == -1

        # A waiter wakes as soon as tsafe passes its timestamp.
        woke = threading.Event()
        threading.Thread(target=lambda: pipeline.wait_tsafe(200, 5) and woke.set()).start()
        writer.append(MessageKind.TIMETICK, 200, TimeTick(200).encode())
        writer.sync()
        assert woke.wait(5)
        assert not pipeline.wait_tsafe(10_000, timeout=0.2)

        pipeline.exclude({40: 200})
        assert set(pipeline.growing) == {41}
    finally:
        pipeline.stop()
        writer.close()
