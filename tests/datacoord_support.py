"""Helpers for DataCoord tests: flushed segments made without the write path's proxy (records appended
through a channel appender, then ``flush_channel``), and a scheduler plugin recording where Dask ran
each task."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
from distributed.diagnostics.plugin import SchedulerPlugin

from vecgrid.proto import data_coord_pb2
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.dml import InsertBatch
from vecgrid.storage.flush import flush_channel
from vecgrid.storage.wal import MessageKind, Wal
from tests.querynode_support import DIM, TAGS, Dataset


@dataclass
class Inserted:
    """Rows written to one channel and flushed: the new sealed segment(s) and the rows."""

    segment_ids: list[int]
    pks: np.ndarray
    vectors: np.ndarray
    columns: dict[str, np.ndarray]


def insert_and_flush(catalog: Catalog, appenders, wal: Wal, root: str, ds: Dataset, channel: str, n: int,
                     key_offset: int, seed: int = 5) -> Inserted:
    """Append ``n`` rows with keys from ``key_offset`` to ``channel`` of ``ds``'s collection through its
    appender (one timestamp, one growing segment), seal the channel and flush it up to the seal:
    the rows become one Flushed segment carrying a ``dml_position``, as the write path's flush makes."""
    coll = catalog.get_collection(ds.collection_id)
    partition_id = coll.default_partition.partitionID
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    pks = np.arange(key_offset, key_offset + n, dtype=np.int64)
    cols = {"age": (np.arange(n) % 97).astype(np.int32), "tag": np.asarray([TAGS[i % 5] for i in range(n)]),
            "score": rng.uniform(0, 1, n)}
    columns = pa.record_batch({"vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                               "age": cols["age"], "tag": cols["tag"], "score": cols["score"]})
    appender = appenders.require(channel)

    def records(ts: int):
        segment_id = appender.segments.assign(partition_id, n, columns.nbytes)
        batch = InsertBatch(coll.id, partition_id, segment_id, pa.array(pks), np.full(n, ts, np.uint64), columns)
        return [(MessageKind.INSERT, batch.encode())]

    appender.append(records)
    barrier, sealed = appender.seal()
    result = flush_channel(catalog, wal, root, channel, barrier.timestamp)
    appender.handed_off(sealed)
    segments = [s.ID for s in result.segments if s.level != data_coord_pb2.L0]
    assert len(segments) == 1, result.segments
    return Inserted(segments, pks, vectors, cols)


def with_rows(ds: Dataset, inserted: Inserted) -> Dataset:
    """``ds`` plus the inserted rows (for reference searches over every row)."""
    return replace(ds, pks=np.concatenate([ds.pks, inserted.pks]),
                   vectors=np.concatenate([ds.vectors, inserted.vectors]),
                   columns={k: np.concatenate([v, inserted.columns[k]]) for k, v in ds.columns.items()})


class TaskLog(SchedulerPlugin):
    """Every task of a prefix the scheduler ran: ``(key, worker it was processing on)`` each time it
    started processing, and ``(key, worker)`` when it finished in memory.  Read it with
    ``client.run_on_scheduler(TaskLog.read, name=...)``."""

    def __init__(self, prefix: str, name: str) -> None:
        self.prefix, self.name = prefix, name
        self.started: list[tuple[str, str]] = []
        self.finished: list[tuple[str, str]] = []
        self.scheduler = None

    async def start(self, scheduler) -> None:
        self.scheduler = scheduler

    def transition(self, key, start, finish, *args, **kwargs) -> None:
        if not str(key).startswith(self.prefix):
            return
        ts = self.scheduler.tasks.get(key) if self.scheduler is not None else None
        if finish == "processing" and ts is not None and ts.processing_on is not None:
            self.started.append((str(key), ts.processing_on.address))
        elif finish == "memory":
            self.finished.append((str(key), kwargs.get("worker") or (ts.who_has and next(iter(ts.who_has)).address)))

    @staticmethod
    def read(dask_scheduler=None, name: str = "") -> dict[str, list[tuple[str, str]]]:
        plugin = dask_scheduler.plugins[name]
        return {"started": list(plugin.started), "finished": list(plugin.finished)}
