"""The write half of Milvus's Proxy: insert, upsert and delete, run in the coordinator's process.

A write is checked completely before anything is logged (:func:`~vecgrid.cluster.proxy.rows.prepare`: a
rejected batch writes nothing), routed to the collection's DML channels by primary key exactly as bulk
import routes rows (:func:`~vecgrid.storage.sharding.shard_of`), and logged through the channels'
appenders (:mod:`vecgrid.cluster.streaming`): ONE oracle timestamp for the whole request, whatever
channels it spans (:meth:`~vecgrid.cluster.streaming.ChannelAppenders.append_many`), every row stamped
with it, the reply sent only once every record is durable.  Inside the appender's lock each channel's
rows are assigned to the channel's open growing segment of their partition.

A write is, on each channel it touches, ONE of: an insert record; a delete record and a time tick; or —
an **upsert** — a delete record and an insert record: the delete of the keys and the insert of the rows,
both at the write's timestamp, in one append per channel (delete first).  A key hashes to one channel,
so its old and new rows are on the same log; a row is hidden by a delete only if it is older than the
delete (row ts < delete ts), so the new row survives its own upsert's delete, and a shard leader
publishes the timestamp only once the record after the delete is applied
(:func:`vecgrid.cluster.querynode.pipeline._safe_after`) — no read sees the key absent or twice.  The
upsert's delete spans every partition: a primary key is unique in its collection, wherever its old row
was.  One insert record per channel means a write's rows on one channel are at most
:data:`MAX_WRITE_BYTES` (Milvus caps a request's size too); a larger one is refused.
* **delete** takes primary keys; a delete by filter is resolved into keys first by the proxy
  (:class:`~vecgrid.cluster.proxy.write_access.LocalWrites`), as Milvus's delete runner queries before it
  deletes.

**Memory protection** (Milvus's quota center denying writes when a query node's memory is short): a shard
leader holds a channel's unflushed rows as growing segments.  Before an insert or upsert is logged the
bytes it adds are counted against ``querynode.max_growing_mb`` of every node leading one of its channels
(the growing bytes of all channels that node leads, from the appenders' segment assigners, plus this
write); a write that would pass it is refused with Milvus's quota error (code 9) and nothing is written.
A flush that hands the sealed rows off lowers the count, and writes pass again.  Which node leads which
channel is QueryCoord's knowledge: ``leaders_of_channel`` is passed in at wiring (every replica's leader
holds the rows, so it answers all of them).  Deletes are never refused: they are how space is given back.

Who owns what: the catalog and the appenders guard their state.  The writer's own is ``_seen`` (channel ->
weak reference to the appender :meth:`Writer.guarantees_sync` found it with a durable record), guarded by
``_seen_lock`` (held for dict operations only, so the loop may take it): a Strong read of such channels reads
their acknowledged timestamps on the loop (:meth:`Writer.guarantees`) instead of in a thread.  A weak
reference, since a dropped collection's appenders are closed and forgotten by the appenders.  The other
methods block (SQLite, fsync) and run in a worker thread of the caller's loop.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np
import pyarrow as pa

from vecgrid import errors
from vecgrid.cluster.proxy.rows import nbytes, prepare, to_table
from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.proto import schema_pb2
from vecgrid.storage.catalog import ALL_PARTITIONS_ID, Catalog, CollectionInfo
from vecgrid.storage.catalog.schema_rules import DEFAULT_DB_NAME, DEFAULT_PARTITION_NAME
from vecgrid.storage.dml import DeleteBatch, InsertBatch, TimeTick
from vecgrid.storage.sharding import shard_of
from vecgrid.storage.wal import MessageKind, WalError, WalLockedError

__all__ = ["MutationResult", "Writer", "MAX_WRITE_BYTES"]


MAX_WRITE_BYTES = 192 << 20   # rows of one write on one channel: one log record, under its 256 MiB limit
MB = 1 << 20


@dataclass(frozen=True)
class MutationResult:
    """Milvus's ``MutationResult``: counts, the primary keys written (input order) and the write's timestamp
    (pass it as a read's ``guarantee_timestamp`` to read this write, Milvus's Session consistency)."""

    insert_cnt: int = 0
    delete_cnt: int = 0
    upsert_cnt: int = 0
    ids: list[Any] = field(default_factory=list)
    timestamp: int = 0
    succ_index: list[int] = field(default_factory=list)
    err_index: list[int] = field(default_factory=list)


LeadersOfChannel = Callable[[str], Iterable[int]]


class Writer:
    """Inserts, upserts and deletes of the coordinator's collections (see the module doc)."""

    def __init__(self, catalog: Catalog, appenders: ChannelAppenders, *, max_growing_mb: float = 0.0,
                 leaders_of_channel: LeadersOfChannel | None = None) -> None:
        self.catalog = catalog
        self.appenders = appenders
        self.max_growing_bytes = int(max_growing_mb * MB) if max_growing_mb > 0 else 0
        self.leaders_of_channel = leaders_of_channel
        self._seen: dict[str, weakref.ref] = {}
        self._seen_lock = threading.Lock()

    # --- the API (async: the blocking work runs in a thread) ---------------------------------------------

    async def insert(self, collection: str, rows: Any, partition: str | None = None,
                     db_name: str = "") -> MutationResult:
        return await asyncio.to_thread(self.insert_sync, collection, rows, partition, db_name)

    async def upsert(self, collection: str, rows: Any, partition: str | None = None,
                     db_name: str = "") -> MutationResult:
        return await asyncio.to_thread(self.insert_sync, collection, rows, partition, db_name, upsert=True)

    async def delete(self, collection: str, ids: Any, partition: str | None = None,
                     db_name: str = "") -> MutationResult:
        return await asyncio.to_thread(self.delete_sync, collection, ids, partition, db_name)

    async def guarantees(self, channels: Iterable[str]) -> dict[str, int]:
        """:meth:`guarantees_sync`; on the loop when every channel's appender was seen with a durable record
        (the usual Strong read: one attribute per channel), else in a thread (it may open a log or append)."""
        channels = list(channels)
        seen = self._acknowledged(channels)
        return seen if seen is not None else await asyncio.to_thread(self.guarantees_sync, channels)

    def _acknowledged(self, channels: list[str]) -> dict[str, int] | None:
        with self._seen_lock:
            refs = [self._seen.get(channel) for channel in channels]
        out = {}
        for channel, ref in zip(channels, refs):
            appender = ref() if ref is not None else None
            ts = appender.acknowledged_ts if appender is not None else 0
            if not ts:
                return None
            out[channel] = ts
        return out

    # --- the work -----------------------------------------------------------------------------------------

    def insert_sync(self, collection: str, rows: Any, partition: str | None = None, db_name: str = "", *,
                    upsert: bool = False) -> MutationResult:
        coll = self.catalog.describe_collection(db_name or DEFAULT_DB_NAME, collection)
        partition_id = _partition(coll, partition).partitionID
        table = prepare(coll, to_table(rows, coll.schema), self.catalog.allocate_ids,
                                 upsert=upsert)
        pk_name = coll.primary_field.name
        parts = _by_channel(coll, table, table.column(pk_name).combine_chunks())
        sizes = {channel: nbytes(part) for channel, part in parts}
        for channel, size in sizes.items():
            if size > MAX_WRITE_BYTES:
                raise errors.ParameterTooLarge(f"the rows of one write take {size / MB:.0f} MB on channel {channel}; "
                                               f"at most {MAX_WRITE_BYTES / MB:.0f} MB per channel: split the batch")
        self._check_growing_quota(sizes)
        builds = {channel: self._insert_build(channel, coll.id, partition_id, pk_name, part, upsert)
                  for channel, part in parts}
        ts = self._append(builds)
        n = table.num_rows
        self.appenders.inserted_rows.add(coll.id, n, "upsert" if upsert else "insert")
        ids = table.column(pk_name).to_pylist()
        if upsert:
            return MutationResult(upsert_cnt=n, ids=ids, timestamp=ts, succ_index=list(range(n)))
        return MutationResult(insert_cnt=n, ids=ids, timestamp=ts, succ_index=list(range(n)))

    def delete_sync(self, collection: str, ids: Any, partition: str | None = None,
                    db_name: str = "") -> MutationResult:
        coll = self.catalog.describe_collection(db_name or DEFAULT_DB_NAME, collection)
        partition_id = _partition(coll, partition).partitionID if partition else ALL_PARTITIONS_ID
        pks = _primary_keys(coll.primary_field, ids)
        channels = coll.vchannels
        shards = shard_of(pks, len(channels))
        builds = {}
        for index, channel in enumerate(channels):
            mine = pks.filter(pa.array(shards == index)) if len(channels) > 1 else pks
            if len(mine):
                builds[channel] = _delete_build(coll.id, partition_id, mine)
        ts = self._append(builds)
        return MutationResult(delete_cnt=len(pks), ids=pks.to_pylist(), timestamp=ts,
                              succ_index=list(range(len(pks))))

    def guarantees_sync(self, channels: list[str]) -> dict[str, int]:
        """The guarantee timestamp of a Strong read, per channel: the newest durable record this process
        logged on it, at or above every write acknowledged before the read.  A shard leader that has read
        its log to the end is there already, so the read does not wait for the next time tick.  A channel
        this process has not logged on yet gets a time tick now (its timestamp is then that one); a channel
        another process holds gets a fresh oracle timestamp, as Strong reads took before.  A channel no live
        collection has: ``ChannelNotFound``, and nothing is logged."""
        out: dict[str, int] = {}
        fresh = 0
        opened = self.appenders.opened()
        for channel in channels:
            if channel not in opened:
                self.catalog.collection_of_channel(channel)  # ChannelNotFound before any log is touched
        for channel in channels:
            appender = opened.get(channel)
            ts = appender.acknowledged_ts if appender is not None else 0
            if not ts:
                appender = self.appenders.get(channel)
                if appender is not None:
                    ts = appender.append(lambda ts: [(MessageKind.TIMETICK, TimeTick(ts).encode())]).timestamp
                else:
                    fresh = fresh or self.catalog.allocate_timestamp()
                    ts = fresh
            if appender is not None:
                self._remember(channel, appender)
            out[channel] = ts
        return out

    def _remember(self, channel: str, appender: Any) -> None:
        with self._seen_lock:
            ref = self._seen.get(channel)
            if ref is None or ref() is not appender:
                self._seen = {c: r for c, r in self._seen.items() if r() is not None}   # forget dropped ones
                self._seen[channel] = weakref.ref(appender)

    # --- parts --------------------------------------------------------------------------------------------

    def _insert_build(self, channel: str, collection_id: int, partition_id: int, pk_name: str, part: pa.Table,
                      upsert: bool) -> Callable[[int], list]:
        appender = self._appender(channel)
        pks = part.column(pk_name).combine_chunks()
        columns = part.drop_columns([pk_name])
        size = nbytes(part)

        def build(ts: int) -> list:
            records = []
            if upsert:
                records.append((MessageKind.DELETE, DeleteBatch(collection_id, ALL_PARTITIONS_ID, pks, ts).encode()))
            segment_id = appender.segments.assign(partition_id, part.num_rows, size)
            records.append((MessageKind.INSERT, InsertBatch(collection_id, partition_id, segment_id, pks, ts,
                                                            columns).encode()))
            return records
        return build

    def _appender(self, channel: str):
        try:
            return self.appenders.require(channel)
        except WalLockedError as e:
            raise errors.ServiceUnavailable(f"the write was not logged: {e}") from None

    def _append(self, builds: dict[str, Callable[[int], list]]) -> int:
        try:
            if len(builds) == 1:
                (channel, build), = builds.items()
                return self.appenders.require(channel).append(build).timestamp
            return self.appenders.append_many(builds).timestamp
        except WalLockedError as e:
            raise errors.ServiceUnavailable(f"the write was not logged: {e}") from None
        except WalError as e:
            raise errors.ServiceInternal(f"the write may not be durable (the channel's log failed): {e}") from None

    def _check_growing_quota(self, adds: dict[str, int]) -> None:
        """Refuse a write that would take a shard leader past ``querynode.max_growing_mb`` (module doc)."""
        if not self.max_growing_bytes or self.leaders_of_channel is None:
            return
        adding: dict[int, int] = defaultdict(int)
        for channel, size in adds.items():
            for node in self.leaders_of_channel(channel):
                adding[node] += size
        if not adding:
            return   # not loaded: no node holds these rows yet
        held: dict[int, int] = defaultdict(int)
        for channel, appender in self.appenders.opened().items():
            growing = appender.stats()[2]
            if growing:
                for node in self.leaders_of_channel(channel):
                    held[node] += growing
        for node, size in sorted(adding.items()):
            if held[node] + size > self.max_growing_bytes:
                raise errors.ServiceQuotaExceeded(
                    f"memory quota exceeded, please allocate more resources: query node {node} would hold "
                    f"{(held[node] + size) / MB:.1f} MB of unflushed rows, more than querynode.max_growing_mb "
                    f"({self.max_growing_bytes / MB:g} MB); flush the collection or wait for the automatic flush")


# --- helpers ------------------------------------------------------------------------------------------------

def _partition(coll: CollectionInfo, name: str | None):
    """The named partition (Milvus: 200 partition not found), or ``_default``."""
    name = name or DEFAULT_PARTITION_NAME
    for p in coll.partitions:
        if p.partitionName == name:
            return p
    raise errors.PartitionNotFound(partition=name, collection=coll.name)


def _by_channel(coll: CollectionInfo, table: pa.Table, pks: pa.Array) -> list[tuple[str, pa.Table]]:
    """The rows of every channel they hash to (the channels with none left out), each in input order."""
    channels = coll.vchannels
    if len(channels) == 1:
        return [(channels[0], table)]
    shards = shard_of(pks, len(channels))
    order = np.argsort(shards, kind="stable")
    ordered = table.take(pa.array(order))
    counts = np.bincount(shards, minlength=len(channels))
    out, start = [], 0
    for channel, count in zip(channels, counts.tolist()):
        if count:
            out.append((channel, ordered.slice(start, count)))
        start += count
    return out


def _delete_build(collection_id: int, partition_id: int, pks: pa.Array) -> Callable[[int], list]:
    """A delete, then a time tick of its timestamp: a shard leader takes a delete as the end of its write only
    when a record of its timestamp that is not a delete follows (see the module doc)."""
    def build(ts: int) -> list:
        return [(MessageKind.DELETE, DeleteBatch(collection_id, partition_id, pks, ts).encode()),
                (MessageKind.TIMETICK, TimeTick(ts).encode())]
    return build


def _primary_keys(field: schema_pb2.FieldSchema, ids: Any) -> pa.Array:
    """``ids`` as the primary key's Arrow type; a key of the wrong type is the caller's error."""
    try:
        keys = ids if isinstance(ids, pa.Array) else pa.array(
            ids.tolist() if isinstance(ids, np.ndarray) and ids.dtype.kind == "U" else ids)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
        raise errors.ParameterInvalid(f"the primary keys to delete cannot be read: {e}") from None
    if not len(keys):
        raise errors.ParameterInvalid("no primary keys to delete")
    if keys.null_count:
        raise errors.ParameterInvalid("the primary keys to delete must not be null")
    if field.data_type == schema_pb2.Int64 and pa.types.is_integer(keys.type):
        return keys.cast(pa.int64())
    if field.data_type == schema_pb2.VarChar and (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)):
        return keys.cast(pa.string())
    raise errors.ParameterInvalid(f"the primary key {field.name!r} is {schema_pb2.DataType.Name(field.data_type)}: "
                                  f"cannot delete keys of type {keys.type}")
