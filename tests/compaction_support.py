"""Shared set-up of the compaction tests: deletes written to a channel and flushed into L0 segments, and
what the catalog's segments hold, read straight from their files (the reference a compaction must keep)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.proto import common_pb2, data_coord_pb2
from vecgrid.storage import segment_files
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.dml import DeleteBatch
from vecgrid.cluster.datanode.flush import flush_channel
from vecgrid.storage.wal import MessageKind


def delete_and_flush(catalog: Catalog, appenders: ChannelAppenders, root: str, cid: int,
                     pks_by_channel: dict[str, list[int]]) -> dict[str, int]:
    """Delete ``pks`` on their channels (one DeleteBatch per channel, through the channel's appender), then
    flush each channel; returns the new L0 segment of each channel."""
    new_l0 = {}
    for channel, pks in sorted(pks_by_channel.items()):
        appenders.require(channel).append(lambda ts, pks=pks: [(MessageKind.DELETE, DeleteBatch(
            cid, -1, pa.array(list(pks), pa.int64()), np.full(len(pks), ts, np.uint64)).encode())])
        result = flush_channel(catalog, appenders.wal, root, channel, catalog.allocate_timestamp())
        l0 = [s.ID for s in result.segments if s.level == data_coord_pb2.L0]
        assert len(l0) == 1, result.segments
        new_l0[channel] = l0[0]
    return new_l0


@dataclass(frozen=True)
class Row:
    segment_id: int
    ts: int
    vector: tuple[float, ...]


def _deletes(record) -> list[tuple[object, int]]:
    table = segment_files.read_deltalog(record)
    return list(zip(table.column("pk").to_pylist(), table.column("ts").to_pylist()))


def visible_rows(catalog: Catalog, cid: int, pk_name: str = "pk") -> dict[object, list[Row]]:
    """Every row a read sees now: the Flushed segments' rows less those a later delete of their key hides
    (the segment's own delete log, and the L0 segments of its channel and partition)."""
    segments = catalog.list_segments(cid, states=[common_pb2.Flushed])
    l0: dict[str, list[tuple[int, list[tuple[object, int]]]]] = {}
    for s in segments:
        if s.level == data_coord_pb2.L0:
            l0.setdefault(s.insert_channel, []).append((s.partitionID, _deletes(catalog.segment_files_record(s.ID))))
    out: dict[object, list[Row]] = {}
    for s in segments:
        if s.level == data_coord_pb2.L0:
            continue
        record = catalog.segment_files_record(s.ID)
        latest: dict[object, int] = {}
        deletes = _deletes(record) + [d for pid, ds in l0.get(s.insert_channel, []) if pid in (-1, s.partitionID)
                                      for d in ds]
        for pk, ts in deletes:
            latest[pk] = max(latest.get(pk, 0), ts)
        table = segment_files.read_segment(record, [pk_name, "Timestamp", "vec"])
        for pk, ts, vec in zip(*(table.column(c).to_pylist() for c in (pk_name, "Timestamp", "vec"))):
            if not ts < latest.get(pk, 0):
                out.setdefault(pk, []).append(Row(s.ID, ts, tuple(vec)))
    return out


def rows_without_segments(rows: dict[object, list[Row]]) -> dict[object, list[tuple[int, tuple[float, ...]]]]:
    """The rows as a read sees them (which segment holds them is not part of it)."""
    return {pk: sorted((r.ts, r.vector) for r in found) for pk, found in rows.items()}
