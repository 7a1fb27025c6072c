"""Flush: turn a channel's logged DML up to a timestamp into sealed segments.

This is the job Milvus's DataNode does when it syncs a growing segment.  For one
DML channel, :func:`flush_channel` reads the WAL from the channel's checkpoint up to
``up_to_ts`` (inclusive) and:

* seals the inserted rows into one sealed segment per (partition, growing segment)
  of the range, with the rows' timestamps in the ``Timestamp`` column and, as its
  deltalog, the deletes of the range that hit its own rows (delete ts >= row ts);
* writes every delete of the range into an **L0 segment** of the channel (a deltalog
  only, partition "all"), which is how Milvus 2.4 carries deletes for rows sealed
  earlier: a query node applies a channel's L0 deletes to all its sealed segments;
* publishes all of it and the new channel checkpoint in ONE catalog transaction,
  then (``trim=True``) drops WAL files that lie entirely before the checkpoint.

**Segment ids.**  A sealed segment keeps the id of the growing segment its rows were
logged into (``InsertBatch.segment_id``) when that id came from the catalog's id
allocator and the catalog does not know it yet.  That is what makes the handoff exact: a
shard leader that adopts sealed segment *S* drops its growing rows of segment *S*, so
every row is served by exactly one copy — no gap, no duplicate.  Any other id gets a
fresh one, as before: an id nobody allocated (a test's or a legacy writer's constant
could collide with a later allocation), an id already published (the same growing id
cut by two flushes at arbitrary timestamps, which the write path's seal barrier never
does), or an id this flush already used for another partition.

A crash at any point before the publish leaves the catalog and the checkpoint as they
were, so the next flush reads the same range again (and writes the same segment ids
over the unreferenced files of the failed attempt).  The crash points
``flush.before_publish`` and ``flush.after_publish`` (:mod:`vecgrid.common.faults`) let
tests kill the process there.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from vecgrid import errors
from vecgrid.common.faults import crash_point
from vecgrid.proto import data_coord_pb2, msg_pb2
from vecgrid.storage import segment_files
from vecgrid.storage.segment_files import TIMESTAMP_FIELD
from vecgrid.storage.catalog import ALL_PARTITIONS_ID, Catalog, CollectionInfo, arrow_schema
from vecgrid.storage.dml import DeleteBatch, InsertBatch, decode_dml
from vecgrid.storage.wal import MessageKind, Position, Wal, WalRecord


@dataclass
class FlushResult:
    segments: list[data_coord_pb2.SegmentInfo] = field(default_factory=list)
    checkpoint: msg_pb2.MsgPosition | None = None
    records: int = 0


@dataclass
class _Range:
    """What one flush read from the channel."""

    inserts: dict[tuple[int, int], list[InsertBatch]] = field(default_factory=lambda: defaultdict(list))
    deletes: list[DeleteBatch] = field(default_factory=list)
    last: WalRecord | None = None
    count: int = 0


def _read_range(wal: Wal, channel: str, checkpoint: msg_pb2.MsgPosition | None, up_to_ts: int) -> _Range:
    start = Position.from_msg_position(checkpoint) if checkpoint is not None else "earliest"
    reader = wal.open_reader(channel, start)
    found = _Range()
    try:
        while (record := reader.read(timeout=0)) is not None:
            if record.timestamp > up_to_ts:
                break
            message = decode_dml(record.payload)
            if isinstance(message, InsertBatch):
                found.inserts[(message.partition_id, message.segment_id)].append(message)
            elif isinstance(message, DeleteBatch):
                found.deletes.append(message)
            found.last, found.count = record, found.count + 1
    finally:
        reader.close()
    return found


def _rows(coll: CollectionInfo, batches: list[InsertBatch]) -> pa.Table:
    schema = arrow_schema(coll).append(pa.field(TIMESTAMP_FIELD, pa.uint64(), nullable=False))
    tables = []
    for batch in batches:
        table = pa.Table.from_batches([batch.columns])
        pk = coll.primary_field.name
        if pk not in table.column_names:
            table = table.append_column(pk, batch.primary_keys)
        table = table.append_column(TIMESTAMP_FIELD, pa.array(batch.timestamps.astype(np.uint64)))
        tables.append(table.select(schema.names).cast(schema))
    return pa.concat_tables(tables)


def _own_deletes(rows: pa.Table, pk_name: str, deletes: list[DeleteBatch]) -> tuple[list, list] | None:
    """The deletes of the range that hit rows of this segment (row ts < delete ts)."""
    row_ts: dict = defaultdict(list)
    for pk, ts in zip(rows.column(pk_name).to_pylist(), rows.column(TIMESTAMP_FIELD).to_pylist()):
        row_ts[pk].append(ts)
    pks, tss = [], []
    for batch in deletes:
        for pk, ts in zip(batch.primary_keys.to_pylist(), batch.timestamps.tolist()):
            if any(r < ts for r in row_ts.get(pk, ())):  # a delete hides older rows only (an upsert)
                pks.append(pk)
                tss.append(ts)
    return (pks, tss) if pks else None


def _sealed_id(catalog: Catalog, growing_id: int, taken: set[int]) -> int:
    """The id of the sealed segment made of growing segment ``growing_id``'s rows (see the module doc)."""
    keep = growing_id > 0 and growing_id not in taken and catalog.segment_id_handed_out(growing_id)
    if keep:
        try:
            catalog.get_segment(growing_id)
            keep = False
        except errors.SegmentNotFound:
            pass
    segment_id = growing_id if keep else catalog.allocate_segment_id()
    taken.add(segment_id)
    return segment_id


def flush_channel(catalog: Catalog, wal: Wal, root: str, channel: str, up_to_ts: int, *,
                  trim: bool = True) -> FlushResult:
    """Seal everything logged on ``channel`` with timestamp <= ``up_to_ts`` (see the module doc).

    ``trim=False`` leaves the log files before the new checkpoint in place, for a caller whose
    readers may still need them (the coordinator: a channel watch from a target's older seek
    position); its WAL retention drops them later."""
    coll = catalog.collection_of_channel(channel)
    found = _read_range(wal, channel, catalog.get_channel_checkpoint(channel), up_to_ts)
    if found.last is None:
        return FlushResult()
    position = msg_pb2.MsgPosition(**found.last.position.to_msg_position_kwargs())
    pk_name = coll.primary_field.name
    items = []
    taken: set[int] = set()
    for (partition_id, growing_id), batches in sorted(found.inserts.items()):
        rows = _rows(coll, batches)
        record = segment_files.write_segment(root, coll.id, partition_id, _sealed_id(catalog, growing_id, taken),
                                             rows, deltalog=_own_deletes(rows, pk_name, found.deletes))
        items.append({"record": record, "insert_channel": channel, "checkpoint": position,
                      "dml_position": position})
    if found.deletes:
        pks = [pk for batch in found.deletes for pk in batch.primary_keys.to_pylist()]
        tss = [ts for batch in found.deletes for ts in batch.timestamps.tolist()]
        empty = arrow_schema(coll).append(pa.field(TIMESTAMP_FIELD, pa.uint64(), nullable=False)).empty_table()
        record = segment_files.write_segment(root, coll.id, ALL_PARTITIONS_ID, catalog.allocate_segment_id(),
                                             empty, deltalog=(pks, tss))
        items.append({"record": record, "insert_channel": channel, "checkpoint": position,
                      "dml_position": position, "level": data_coord_pb2.L0})
    crash_point("flush.before_publish")
    if items:
        segments = catalog.publish_segment_records(items)
    else:  # only time ticks in the range: just move the checkpoint
        catalog.set_channel_checkpoint(channel, position)
        segments = []
    crash_point("flush.after_publish")
    if trim:
        wal.truncate_before(found.last.position)
    return FlushResult(segments=segments, checkpoint=position, records=found.count)


def advance_idle_checkpoint(catalog: Catalog, wal: Wal, channel: str) -> msg_pb2.MsgPosition | None:
    """Move the channel's checkpoint to its last time tick when nothing but ticks follows it.

    An idle channel still gets a tick every 200 ms.  If its checkpoint stayed put, every node
    that watches it would replay all ticks since, and no log file could ever be dropped; so,
    as Milvus's DataNode does for an idle channel, the checkpoint follows the ticks.  Data
    after the checkpoint is left alone: only :func:`flush_channel` may move past it.
    Returns the new checkpoint, or ``None`` when it did not move.
    """
    if not os.path.isdir(wal.channel_dir(channel)):
        return None
    checkpoint = catalog.get_channel_checkpoint(channel)
    last = None
    with wal.open_reader(channel, Position.from_msg_position(checkpoint) if checkpoint is not None else "earliest") as reader:
        while (record := reader.read(timeout=0)) is not None:
            if record.kind != MessageKind.TIMETICK:
                return None
            last = record
    if last is None:
        return None
    position = msg_pb2.MsgPosition(**last.position.to_msg_position_kwargs())
    return position if catalog.set_channel_checkpoint(channel, position) else None


def has_unflushed_dml(catalog: Catalog, wal: Wal, channel: str) -> bool:
    """Whether the channel's log holds an insert or delete after its checkpoint: rows a process
    logged before it stopped, which the next flush of the channel seals."""
    if not os.path.isdir(wal.channel_dir(channel)):
        return False
    checkpoint = catalog.get_channel_checkpoint(channel)
    with wal.open_reader(channel, Position.from_msg_position(checkpoint) if checkpoint is not None else "earliest") as reader:
        while (record := reader.read(timeout=0)) is not None:
            if record.kind != MessageKind.TIMETICK:
                return True
    return False
