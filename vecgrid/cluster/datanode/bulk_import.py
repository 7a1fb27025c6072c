"""Bulk import: files straight into sealed segments of a collection.

:func:`bulk_import` reads Parquet files, ``.npy`` vectors with optional Parquet /
CSV scalars, or JSON rows, local or from S3 (see :mod:`.import_sources`), creates
the collection from the files' columns when it does not exist, and writes sealed segments of at most
``segment_rows`` rows or ``segment_bytes`` bytes per channel.

It is all-or-nothing.  Every batch is validated against the schema before it is
buffered, so a bad row is found before any segment is published.  Segment files are
written as they fill but stay invisible until the end, when every segment is published
in ONE catalog transaction.  On any failure the written files are deleted, and a
collection this import created is dropped again (the undo steps, as in Milvus's
load jobs).

However long it runs, the garbage collector leaves its files alone: as Milvus's import
does, each segment is recorded (state ``Importing``, which nothing reads as data) before
its files are written, under a lease a thread renews every quarter of ``LEASE_TTL_S``
(:mod:`vecgrid.storage.catalog.import_leases`).  Publishing turns them Flushed; a failed
import releases the lease, dropping them; a killed one stops renewing, and the collector
drops them once the lease is stale, then removes their files a retention later.

Rows get the import's timestamp in the segment's ``Timestamp`` column (Milvus's
system field 1), so they are visible to every search issued after the import returns.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from vecgrid import errors
from vecgrid.proto import common_pb2, schema_pb2
from vecgrid.storage import segment_files
from vecgrid.storage.segment_files import TIMESTAMP_FIELD
from vecgrid.storage.catalog import Catalog, CollectionInfo, arrow_field, arrow_schema, arrow_type, validate_rows
from vecgrid.storage.catalog.schema_rules import (DEFAULT_DB_NAME, DEFAULT_PARTITION_NAME, DYNAMIC_FIELD_NAME,
                                                  normalize_schema)
from vecgrid.cluster.datanode.import_sources import JSON_TEXT_KEY, Sources, infer_schema, open_sources
from vecgrid.storage.layout import DataDir
from vecgrid.storage.sharding import shard_of
from vecgrid.storage.tso import compose_ts, physical_ms_now

log = logging.getLogger(__name__)

IMPORT_TSO_KEY = "tso/bulk-import"  # its own oracle: the coordinator owns the main one
LEASE_TTL_S = 600.0  # an import whose lease went unrenewed this long is taken for dead (wall clock)


@dataclass
class ImportOptions:
    collection: str
    db_name: str = DEFAULT_DB_NAME
    partition: str = DEFAULT_PARTITION_NAME
    primary_key: str | None = None
    metric: str = "L2"
    index: str = "FLAT"
    index_params: dict[str, Any] = field(default_factory=dict)
    shards: int = 1
    segment_rows: int = 1_000_000
    segment_bytes: int = 512 * 1024 * 1024


@dataclass
class _Buffer:
    """Rows of one channel waiting to become a segment."""

    batches: list[pa.Table] = field(default_factory=list)
    rows: int = 0
    nbytes: int = 0


class _Lease:
    """The import's lease on its reserved segments, renewed by a thread of its own every ``ttl_s / 4``
    (reading a slow source or writing a big segment never delays a renewal).

    Who owns what: the renewing thread alone writes ``lost`` (the error that ended the lease) and
    ``renew_error`` (the last failed renewal, tried again next period: once the ttl passed without one,
    the collector may expire the lease and the import's next reservation or its publish fails); the
    import's thread reads them and calls :meth:`close` once."""

    def __init__(self, catalog: Catalog, lease_id: str, owner: str, ttl_s: float) -> None:
        self.catalog, self.id, self.ttl_s = catalog, lease_id, ttl_s
        catalog.open_import_lease(lease_id, owner, ttl_s)
        self.lost: errors.MilvusError | None = None
        self.renew_error: Exception | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name=f"import-lease-{lease_id}", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl_s / 4):
            try:
                self.catalog.renew_import_lease(self.id)
                self.renew_error = None
            except errors.ServiceUnavailable as e:   # the lease is gone: the import cannot publish
                self.lost = e
                return
            except Exception as e:  # noqa: BLE001 - the store failed: tried again next period (class doc)
                self.renew_error = e
                log.warning("import lease %s: renewal failed (tried again in %.0f s): %s", self.id, self.ttl_s / 4, e)

    def check(self) -> None:
        if self.lost is not None:
            raise self.lost

    def close(self) -> None:
        """Stop renewing and release the lease: what it still holds Importing (nothing once published)
        becomes Dropped.  A release that fails is left to the collector, which expires the lease."""
        self._stop.set()
        self._thread.join()
        try:
            self.catalog.release_import_lease(self.id)
        except Exception as e:  # noqa: BLE001 - not lost: the collector expires the lease after its ttl
            log.warning("import lease %s could not be released (the garbage collector expires it in %.0f s): %s",
                        self.id, self.ttl_s, e)


def default_lease_id() -> str:
    return f"cli-{os.getpid()}-{uuid.uuid4().hex[:12]}"


class _Import:
    def __init__(self, catalog: Catalog, root: str, sources: Sources, opts: ImportOptions,
                 progress: Callable[[int], None], cancelled: Callable[[], bool] = lambda: False,
                 before_publish: Callable[[list[dict[str, Any]]], None] = lambda segments: None, *,
                 created: Callable[[int], None] = lambda collection_id: None, lease_id: str | None = None,
                 lease_ttl_s: float = LEASE_TTL_S) -> None:
        self.catalog, self.root, self.sources, self.opts, self.progress = catalog, root, sources, opts, progress
        self.cancelled, self.before_publish, self.on_created = cancelled, before_publish, created
        self.lease_id, self.lease_ttl_s = lease_id or default_lease_id(), lease_ttl_s
        self.lease: _Lease | None = None
        self.created = False
        self.written: list[tuple[segment_files.SegmentFiles, str]] = []
        self.timestamp = compose_ts(physical_ms_now(), 0)

    def run(self) -> dict[str, Any]:
        self.lease = _Lease(self.catalog, self.lease_id,
                            f"{socket.gethostname()} pid {os.getpid()}: import into {self.opts.collection!r}",
                            self.lease_ttl_s)
        coll = self._collection()
        partition = self.catalog.get_partition(coll.id, self.opts.partition)
        pk_field = coll.primary_field
        channels = list(coll.vchannels)
        buffers = [_Buffer() for _ in channels]
        keys: list[np.ndarray] = []  # every primary key, checked for duplicates once before publishing
        out_schema = arrow_schema(coll).append(pa.field(TIMESTAMP_FIELD, pa.uint64(), nullable=False))

        for batch in self.sources.batches():
            self._check_cancelled()
            table = _complete(coll, validate_rows(coll, batch))
            if pk_field.autoID:
                first = self.catalog.allocate_ids(table.num_rows)
                table = table.add_column(0, pk_field.name, pa.array(np.arange(first, first + table.num_rows)))
            table = table.append_column(TIMESTAMP_FIELD, pa.array(np.full(table.num_rows, self.timestamp, np.uint64)))
            table = table.select(out_schema.names).cast(out_schema)
            pks = table.column(pk_field.name)
            keys.append(pks.to_numpy())
            shards = shard_of(pks.combine_chunks(), len(channels))
            for shard, buffer in enumerate(buffers):
                part = table.filter(pa.array(shards == shard)) if len(channels) > 1 else table
                if part.num_rows:
                    buffer.batches.append(part)
                    buffer.rows += part.num_rows
                    buffer.nbytes += part.nbytes
                    self._seal_full(coll, partition.partitionID, channels[shard], buffer)
            self.progress(batch.num_rows)
        for shard, buffer in enumerate(buffers):
            if buffer.rows:
                self._seal(coll, partition.partitionID, channels[shard], buffer)
        if not self.written:
            raise errors.ParameterInvalid("the input files hold no rows")
        _check_unique(keys)
        self._check_cancelled()   # the last moment: publishing is one transaction
        self.catalog.renew_import_lease(self.lease.id)   # raises if the collector took it for dead
        self.before_publish([{"segment_id": record.segment_id, "partition_id": record.partition_id,
                              "channel": channel, "num_rows": record.num_rows} for record, channel in self.written])
        published = self.catalog.publish_segment_records(
            [{"record": record, "insert_channel": channel} for record, channel in self.written])
        self.lease.close()
        return _summary(self.catalog.get_collection(coll.id), published)

    def _check_cancelled(self) -> None:
        self.lease.check()
        if self.cancelled():
            raise errors.Canceled("the import was cancelled; nothing was published")

    def _collection(self) -> CollectionInfo:
        opts = self.opts
        if self.catalog.has_collection(opts.db_name, opts.collection):
            coll = self.catalog.describe_collection(opts.db_name, opts.collection)
            if opts.partition != DEFAULT_PARTITION_NAME:
                self.catalog.create_partition(coll.id, opts.partition)
            return self.catalog.describe_collection(opts.db_name, opts.collection)
        first = next(self.sources.batches(batch_rows=16), None)
        schema = infer_schema(opts.collection, self.sources.schema, opts.primary_key, first)
        schema = normalize_schema(opts.collection, opts.db_name, schema)  # validates before anything is written
        coll = self.catalog.create_collection(opts.db_name, opts.collection, schema, shards_num=opts.shards)
        self.created = True
        self.on_created(coll.id)
        for f in coll.schema.fields:
            if f.data_type == schema_pb2.FloatVector:
                self.catalog.create_index(coll.id, f.name, opts.index, opts.metric, opts.index_params)
        if opts.partition != DEFAULT_PARTITION_NAME:
            self.catalog.create_partition(coll.id, opts.partition)
        return self.catalog.get_collection(coll.id)

    def _seal_full(self, coll: CollectionInfo, partition_id: int, channel: str, buffer: _Buffer) -> None:
        """Cut as many full segments off ``buffer`` as it holds (by rows, or by bytes)."""
        row_bytes = max(1, buffer.nbytes // max(buffer.rows, 1))
        limit = max(1, min(self.opts.segment_rows, self.opts.segment_bytes // row_bytes))
        if buffer.rows < limit:
            return
        table = pa.concat_tables(buffer.batches)
        start = 0
        while table.num_rows - start >= limit:
            self._write(coll, partition_id, channel, table.slice(start, limit))
            start += limit
        rest = table.slice(start)
        buffer.batches, buffer.rows, buffer.nbytes = [rest], rest.num_rows, rest.nbytes

    def _seal(self, coll: CollectionInfo, partition_id: int, channel: str, buffer: _Buffer) -> None:
        self._write(coll, partition_id, channel, pa.concat_tables(buffer.batches))
        buffer.batches, buffer.rows, buffer.nbytes = [], 0, 0

    def _write(self, coll: CollectionInfo, partition_id: int, channel: str, table: pa.Table) -> None:
        # reserved before any file is written: the collector never finds them unnamed
        segment_id = self.catalog.reserve_import_segment(self.lease.id, coll.id, partition_id, channel).ID
        record = segment_files.write_segment(self.root, coll.id, partition_id, segment_id, table)
        self.written.append((record, channel))

    def undo(self) -> None:
        if self.lease is not None:
            self.lease.close()   # its reservations become Dropped before their files go
        for record, _ in self.written:
            segment_files.delete_segment(self.root, record.collection_id, record.partition_id, record.segment_id)
            self._forget(record.segment_id)
        if self.created:
            self.catalog.drop_collection(self.opts.db_name, self.opts.collection)

    def _forget(self, segment_id: int) -> None:
        """Purge a dropped reservation whose files are deleted (the collector would, a retention later)."""
        try:
            if self.catalog.get_segment(segment_id).state == common_pb2.Dropped:
                self.catalog.purge_segment(segment_id)
        except Exception as e:  # noqa: BLE001 - not lost: the collector purges a Dropped segment without files
            log.warning("import: reserved segment %s left for the garbage collector to purge: %s", segment_id, e)


def _complete(coll: CollectionInfo, table: pa.Table) -> pa.Table:
    """What the files may leave out, as the proxy's inserts fill it in: fields with a default value take
    it, and a collection with the dynamic field gets ``$meta``, the columns outside the schema as one
    JSON object per row (``{}`` without any)."""
    n = table.num_rows
    for f in coll.schema.fields:
        if f.HasField("default_value") and not f.is_primary_key:
            default = pa.scalar(getattr(f.default_value, f.default_value.WhichOneof("data")), arrow_type(f))
            if f.name not in table.column_names:
                table = table.append_column(arrow_field(f), pa.repeat(default, n))
            elif table.column(f.name).null_count:
                table = table.set_column(table.column_names.index(f.name), arrow_field(f),
                                         table.column(f.name).fill_null(default))
    dynamic = coll.dynamic_field
    if dynamic is None:
        return table
    known = {f.name for f in coll.schema.fields}
    extras = [name for name in table.column_names if name not in known]
    given = table.column(DYNAMIC_FIELD_NAME).to_pylist() if DYNAMIC_FIELD_NAME in table.column_names else [None] * n
    if extras:
        values = {name: table.column(name).to_pylist() for name in extras}
        # nested values (objects, lists) arrive as JSON text (import_sources): stored as the value they spell
        text = {name for name in extras if (table.schema.field(name).metadata or {}).get(JSON_TEXT_KEY)}
        meta = []
        for i in range(n):
            obj = json.loads(given[i]) if given[i] else {}
            obj.update({name: json.loads(column[i]) if name in text else column[i]
                        for name, column in values.items() if column[i] is not None})
            meta.append(json.dumps(obj, default=str))
    else:
        meta = [g or "{}" for g in given]
    table = table.drop([name for name in (*extras, DYNAMIC_FIELD_NAME) if name in table.column_names])
    return table.append_column(arrow_field(dynamic), pa.array(meta, pa.string()))


def _check_unique(keys: list[np.ndarray]) -> None:
    everything = np.concatenate(keys)
    if everything.dtype == object:
        everything = everything.astype(str)
    uniq, counts = np.unique(everything, return_counts=True)
    if (counts > 1).any():
        raise errors.ParameterInvalid(f"duplicate primary key {uniq[counts > 1][0]!r} in the input files")


def _summary(coll: CollectionInfo, segments) -> dict[str, Any]:
    return {
        "collection": coll.name,
        "collection_id": coll.id,
        "db_name": coll.db_name or DEFAULT_DB_NAME,
        "partition_ids": [p.partitionID for p in coll.partitions],
        "fields": [
            {"field_id": f.fieldID, "name": f.name, "data_type": schema_pb2.DataType.Name(f.data_type),
             **({"dim": int(next(kv.value for kv in f.type_params if kv.key == "dim"))}
                if f.data_type == schema_pb2.FloatVector else {}),
             **({"primary_key": True, "auto_id": f.autoID} if f.is_primary_key else {})}
            for f in coll.schema.fields
        ],
        "channels": list(coll.vchannels),
        "segments": [{"segment_id": s.ID, "partition_id": s.partitionID, "channel": s.insert_channel,
                      "num_rows": s.num_of_rows} for s in segments],
        "num_rows": sum(s.num_of_rows for s in segments),
    }


def check_options(opts: ImportOptions) -> None:
    if opts.segment_rows < 1 or opts.segment_bytes < 1:
        raise errors.ParameterInvalid("segment size limits must be positive")


def import_sources(catalog: Catalog, segment_root: str, sources: Sources, opts: ImportOptions, *,
                   progress: Callable[[int], None] = lambda n: None,
                   cancelled: Callable[[], bool] = lambda: False,
                   before_publish: Callable[[list[dict[str, Any]]], None] = lambda segments: None,
                   created: Callable[[int], None] = lambda collection_id: None, lease_id: str | None = None,
                   lease_ttl_s: float = LEASE_TTL_S) -> dict[str, Any]:
    """Import opened ``sources`` through a catalog the caller owns (the coordinator's, for its REST
    import jobs): all or nothing as :func:`bulk_import`.  ``progress(rows)`` is called after every
    batch; ``cancelled()`` is asked before every batch and before publishing, and a True answer undoes
    everything and raises :class:`~vecgrid.errors.Canceled`.  ``before_publish(segments)`` is called
    with the segments about to be published (``segment_id``, ``partition_id``, ``channel``,
    ``num_rows``) just before the one transaction that publishes them: a caller that records them can
    tell afterwards, even after a crash, whether they were published; raising there publishes nothing.
    ``created(collection_id)`` is called right after the import created its collection.  ``lease_id``
    names the import's lease on its reserved segments (module doc; default: a fresh one), renewed every
    ``lease_ttl_s / 4``.  Blocking: run it in a thread."""
    check_options(opts)
    job = _Import(catalog, segment_root, sources, opts, progress, cancelled, before_publish, created=created,
                  lease_id=lease_id, lease_ttl_s=lease_ttl_s)
    try:
        return job.run()
    except BaseException:
        job.undo()
        raise


def bulk_import(data_dir: str, files: list[str], opts: ImportOptions,
                progress: bool | Callable[[int], Any] = False, segment_root: str = "") -> dict[str, Any]:
    """Import ``files`` into ``data_dir``'s catalog, the segments under ``segment_root`` (default: the
    data dir; an s3:// root needs its store configured, :meth:`DataDir.of`); returns the summary the CLI
    prints as JSON.  ``progress``: True for a tqdm bar on a terminal, or ``factory(total rows)`` of an
    object with ``update(rows)`` and ``close()`` (the CLI's bar-or-plain-lines)."""
    check_options(opts)
    sources = open_sources(files)
    data = DataDir(data_dir, segment_root)
    store = data.open_store()
    bar = (progress(sources.num_rows) if callable(progress) else _progress_bar(sources.num_rows)) if progress else None
    try:
        job = _Import(data.open_catalog(store, tso_key=IMPORT_TSO_KEY), data.segment_root, sources, opts,
                      bar.update if bar else (lambda n: None))
        try:
            return job.run()
        except BaseException:
            job.undo()
            raise
    finally:
        if bar is not None:
            bar.close()
        store.close()


def _progress_bar(total: int):
    from tqdm import tqdm

    # disable=None: draw the bar on a terminal, stay silent when stderr is a pipe or a file.
    return tqdm(total=total, unit="rows", unit_scale=True, file=sys.stderr, desc="import", disable=None)


def summary_json(summary: dict[str, Any]) -> str:
    return json.dumps(summary, separators=(",", ":"))
