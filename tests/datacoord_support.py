"""Helpers for DataCoord tests: a writer that logs rows through the channel appenders (as the proxy's
writer does) and the driver of the kill -9 test; flushed segments made without the proxy (records
appended through a channel appender, then ``flush_channel``); a scheduler plugin recording where Dask
ran each task."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
from distributed.diagnostics.plugin import SchedulerPlugin

from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.proto import data_coord_pb2
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.dml import DeleteBatch, InsertBatch
from vecgrid.cluster.datanode.flush import flush_channel
from vecgrid.storage.sharding import shard_of
from vecgrid.storage.wal import MessageKind, Wal
from tests.querynode_support import DIM, TAGS, Dataset


class Writer:
    """Inserts and deletes of one collection; each call returns the timestamp of its newest record,
    once every record is durable (acknowledged)."""

    def __init__(self, appenders: ChannelAppenders, catalog: Catalog, collection_id: int) -> None:
        coll = catalog.get_collection(collection_id)
        self.appenders = appenders
        self.collection_id = collection_id
        self.channels = list(coll.vchannels)
        self.pk = coll.primary_field.name
        self.default_partition = coll.partitions[0].partitionID

    def _by_channel(self, pks: pa.Array) -> dict[str, np.ndarray]:
        shards = shard_of(pks, len(self.channels))
        return {ch: np.flatnonzero(shards == i) for i, ch in enumerate(self.channels) if (shards == i).any()}

    def insert(self, rows: pa.Table, partition_id: int | None = None) -> int:
        """``rows``: the primary key and every field column."""
        pid = self.default_partition if partition_id is None else partition_id
        pks = rows.column(self.pk).combine_chunks()
        columns = rows.drop_columns([self.pk])
        newest = 0
        for channel, at in self._by_channel(pks).items():
            part, keys = columns.take(at), pks.take(at)

            def build(ts, part=part, keys=keys):
                segment = self.appenders.require(channel).segments.assign(pid, part.num_rows, part.nbytes)
                batch = InsertBatch(self.collection_id, pid, segment, keys, np.full(part.num_rows, ts, np.uint64),
                                    part)
                return [(MessageKind.INSERT, batch.encode())]
            newest = max(newest, self.appenders.require(channel).append(build).timestamp)
        return newest

    def delete(self, pks, partition_id: int = -1) -> int:
        keys = pa.array(pks, pa.int64()) if not isinstance(pks, pa.Array) else pks
        newest = 0
        for channel, at in self._by_channel(keys).items():
            part = keys.take(at)

            def build(ts, part=part):
                batch = DeleteBatch(self.collection_id, partition_id, part, np.full(len(part), ts, np.uint64))
                return [(MessageKind.DELETE, batch.encode())]
            newest = max(newest, self.appenders.require(channel).append(build).timestamp)
        return newest


# --- a coordinator process to kill -9 -------------------------------------------------------------------
# Crash tests run the coordinator as its own process over a stock Dask scheduler and `vecgrid worker`s
# (whose shard leaders outlive it), drive writes and flushes inside it and kill it with
# VECGRID_CRASH_AT at one of the points below or in vecgrid.cluster.datanode.flush.  Until the proxy's write API
# is the way in, the driver writes through the appenders like Writer; "the reply" is its ACK line.

def reply_point(op_index: int) -> str:
    """The crash point between an op's durable write and its acknowledgement (the ACK line)."""
    return f"driver.before_reply.{op_index}"


def rows_for(pks: list[int], dim: int) -> pa.Table:
    """Rows of the test collections' schema (pk, vec, age, tag, score); a row's vector follows from its key."""
    vectors = np.stack([np.random.default_rng(pk).standard_normal(dim).astype(np.float32) for pk in pks])
    return pa.table({"pk": np.asarray(pks, np.int64),
                     "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim),
                     "age": np.zeros(len(pks), np.int32), "tag": ["new"] * len(pks), "score": np.zeros(len(pks))})


def crash_driver() -> None:
    """``python -c 'from tests.datacoord_support import crash_driver; crash_driver()' SCHEDULER DATA_DIR PORT
    COLLECTION_ID DIM OPS``: a coordinator that loads the collection, runs OPS (JSON: ``["insert", [pks]]``,
    ``["delete", [pks]]``, ``["flush"]``, ``["serve"]``: answer stdin commands ``flush`` / ``handoff`` until
    ``quit``) and prints one line per step: ``READY addr``, ``PENDING op [pks]`` before a write, ``ACK op
    [pks]`` after it, ``FLUSHED [ids]``, ``HANDED_OFF``."""
    import asyncio
    import json
    import sys

    scheduler, data_dir, port, cid, dim, ops = sys.argv[1:7]
    asyncio.run(_drive(scheduler, data_dir, int(port), int(cid), int(dim), json.loads(ops)))


def _say(*words) -> None:
    import json
    print(" ".join(w if isinstance(w, str) else json.dumps(w) for w in words), flush=True)


async def _drive(scheduler: str, data_dir: str, port: int, cid: int, dim: int, ops: list) -> None:
    import asyncio
    import sys

    from tests.conftest import poll_until
    from tests.querycoord_support import FAST, Coord
    from vecgrid.common.faults import crash_point
    from vecgrid.config import Settings
    from vecgrid.deploy import Coordinator

    settings = Settings.load(env={}, overrides={
        "common.data_dir": data_dir, "common.healthcheck_interval_s": 1.0, "querycoord.port": port,
        "http.port": 0, "proxy.port": 0, "dask.scheduler": scheduler, "datacoord.check_interval_s": 0.1,
        "datacoord.flush_idle_s": 3600.0, "datacoord.auto_compaction": False, **FAST})
    coordinator = Coordinator(settings)
    await coordinator.start(scheduler)
    try:
        await coordinator.wait_for_nodes(2)
        await Coord(coordinator.addresses.grpc, coordinator.coord).load(cid)
        _say("READY", coordinator.addresses.grpc)
        writer = Writer(coordinator.coord.appenders, coordinator.coord.catalog, cid)
        dc = coordinator.datacoord

        async def flush() -> None:
            _say("FLUSHED", await dc.flush(cid))

        async def handoff() -> None:
            await poll_until(lambda: dc.flush_policy.handoffs_waiting == 0, 60, what="the hand-off")
            _say("HANDED_OFF")

        for i, (op, *arg) in enumerate(ops):
            if op in ("insert", "delete"):
                _say("PENDING", op, arg[0])
                if op == "insert":
                    await asyncio.to_thread(writer.insert, rows_for(arg[0], dim))
                else:
                    await asyncio.to_thread(writer.delete, arg[0])
                crash_point(reply_point(i))
                _say("ACK", op, arg[0])
            elif op == "flush":
                await flush()
            elif op == "serve":
                while (line := (await asyncio.to_thread(sys.stdin.readline)).strip()) not in ("quit", ""):
                    await {"flush": flush, "handoff": handoff}[line]()
    finally:
        await coordinator.stop()


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
