"""Helpers for DataCoord tests: writes logged as the proxy's write path logs them — through the channel
appenders, rows routed to channels by primary key as bulk import routes them, each batch into the
growing segment the appender assigns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.dml import DeleteBatch, InsertBatch
from vecgrid.storage.sharding import shard_of
from vecgrid.storage.wal import MessageKind


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
