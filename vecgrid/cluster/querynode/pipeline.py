"""The DML pipeline of one watched channel, as Milvus's querynode ``pipeline`` package.

A :class:`ChannelPipeline` consumes a channel's log (any
:class:`~vecgrid.storage.wal.ChannelReader`: the local WAL, or the coordinator's
stream for a node on another host) from a seek position, on its own thread:

* **filter**: messages of other collections, and inserts into segments that are
  already sealed up to a checkpoint (Milvus's *excluded segments*, from WatchDmChannels /
  SyncDistribution UpdateVersion) are dropped.  Rows of every partition are kept, loaded
  or not, as Milvus's pipeline does since partitions load and release dynamically: reads
  choose the loaded partitions (the delegator), so a partition loaded later serves the
  rows written to it before, and one released stops serving them at once;
* **insert**: rows go to the growing segment the message names (one engine
  :class:`~vecgrid.gpu.growing.GrowingSegment` per growing segment id);
* **delete**: primary keys are deleted from every growing segment and handed to
  ``forward_delete`` — the shard leader forwards them to the nodes that hold the
  channel's sealed segments.  The thread waits until they are applied everywhere (that
  is what holds tsafe back); the wait ends when the pipeline stops (the forward is then
  cancelled) and a forward that fails fails the pipeline, tsafe still short of the delete;
* **tsafe**: after each message the channel's safe timestamp advances to the
  message's timestamp (time ticks included) — once the last message of that timestamp
  is applied: the records of one write share it (:func:`_safe_after`).  A search with a
  guarantee timestamp waits until tsafe reaches it (:meth:`wait_tsafe`).

Who owns what
-------------
* The **consumer thread** alone reads the log, writes ``_tsafe``, ``records``,
  ``_applying`` and ``error`` (others only read those single references) and writes
  rows and deletes into the growing segments.
* ``_lock`` guards the three maps the event loop changes too: ``growing``,
  ``growing_partition`` and ``excluded``.  The thread takes it to decide where an
  insert goes (and to open a segment), the loop to exclude segments and to snapshot
  them (:meth:`growing_segments`, :attr:`num_growing_rows`).  It is held for map
  operations only — never across an insert, a delete or a forward — so the loop never
  waits for the thread's work.  An insert decided just before an exclusion lands in the
  segment the exclusion dropped: harmless, that segment is garbage.
* Excluded segments are dropped, not released: a read may still be searching one, and
  the thread may still be appending to it; each is freed with its last reference.
* ``_cond`` wakes the tsafe waiters.

A failed pipeline (``error`` set, reported through ``on_failure``) consumes nothing more and
drops its growing segments: the channel has to be watched again.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from typing import Callable

import numpy as np
import pyarrow as pa

from vecgrid.common.rates import RateWindow
from vecgrid.gpu.growing import GrowingSegment, InterimIndex
from vecgrid.proto import schema_pb2
from vecgrid.storage.dml import DeleteBatch, InsertBatch, TimeTick, decode_dml
from vecgrid.storage.wal import ChannelReader, MessageKind, WalError

log = logging.getLogger(__name__)

#: ``(pks, timestamps)`` -> a future of the forward to wait for, or None when it is done already
DeleteForwarder = Callable[[np.ndarray, np.ndarray], "concurrent.futures.Future[None] | None"]


def _safe_after(record, following) -> int:
    """tsafe once ``record`` is applied, ``following`` being the next record if it is readable already.

    The records of one write share its timestamp (an upsert's delete, then its insert): tsafe may reach it
    only once the last of them is applied, or a read at it would see the key deleted and not yet inserted.
    A following record of a later timestamp proves the write complete.  Without one, a delete is never
    taken as the end of its write (the coordinator ends a write that only deletes with a time tick of the
    same timestamp) — the insert of its upsert may still be on its way from another host, record by record;
    an insert or a tick is always the last record of its write."""
    if following is not None:
        return record.timestamp if following.timestamp > record.timestamp else record.timestamp - 1
    return record.timestamp - 1 if record.kind == MessageKind.DELETE else record.timestamp


class _Stopped(Exception):
    """The pipeline stopped while the thread waited for a forward (not a failure)."""


class ChannelPipeline:
    def __init__(self, channel: str, reader: ChannelReader, collection_id: int,
                 schema: schema_pb2.CollectionSchema, metric: str, *,
                 excluded: dict[int, int] | None = None, interim: InterimIndex | None = None,
                 forward_delete: DeleteForwarder | None = None,
                 on_failure: Callable[[Exception], None] | None = None,
                 poll_s: float = 0.05) -> None:
        self.channel = channel
        self.collection_id = collection_id
        self.schema = schema
        self.metric = metric
        self.interim = interim   # given to every growing segment (vecgrid.gpu.growing.InterimIndex)
        self._lock = threading.Lock()   # guards growing, growing_partition and excluded (see the module doc)
        self.excluded = dict(excluded or {})  # segment id -> timestamp up to which it is sealed
        self.forward_delete = forward_delete
        self.on_failure = on_failure          # called on the consumer thread once ``error`` is set
        self.growing: dict[int, GrowingSegment] = {}
        self.growing_partition: dict[int, int] = {}
        self.error: Exception | None = None
        self._reader = reader
        self._poll_s = poll_s
        self._vector = next(f for f in schema.fields if f.data_type == schema_pb2.FloatVector)
        self._dim = int(next(kv.value for kv in self._vector.type_params if kv.key == "dim"))
        self._pk = next(f for f in schema.fields if f.is_primary_key)
        self._ids = {f.name: f.fieldID for f in schema.fields}
        self._tsafe = 0
        # WAL bytes of this collection's inserts and deletes consumed per second (GetMetrics' quota
        # metrics); added to by the consumer thread only, read from any (the window has its lock)
        self.insert_rate = RateWindow()
        self.delete_rate = RateWindow()
        self.records = 0                          # records consumed since the seek position
        self._applying: tuple[str, float] | None = None   # (message kind, monotonic start)
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"pipeline-{channel}", daemon=True)

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> "ChannelPipeline":
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop consuming and wait for the thread to end (blocking: call it off the event loop).

        The join is unbounded on purpose: every wait of the thread ends within ``poll_s`` of the
        stop (a read, a forward in flight — cancelled), so nothing of the channel outlives it."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        self._reader.close()

    # --- tsafe -----------------------------------------------------------------------------

    @property
    def tsafe(self) -> int:
        return self._tsafe

    def wait_tsafe(self, ts: int, timeout: float) -> bool:
        """Block until tsafe >= ``ts``; False on timeout (or if the pipeline stopped or failed)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._tsafe < ts:
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set() or self.error is not None:
                    return False
                self._cond.wait(left)
            return True

    def lag_reason(self) -> str:
        """Why tsafe may lag, for a timeout's reason: what the consumer thread is doing."""
        applying = self._applying
        if applying is not None:
            return (f"{self.records} records consumed; applying a {applying[0]} for "
                    f"{time.monotonic() - applying[1]:.1f} s")
        return f"{self.records} records consumed; waiting for the next record"

    # --- exclusion (segments sealed elsewhere) -----------------------------------------------

    def exclude(self, segments: dict[int, int]) -> None:
        """Stop taking inserts for ``segments`` (id -> sealed-up-to timestamp) and drop their growing
        rows (from any thread; the segments are not released, see the module doc)."""
        with self._lock:
            self.excluded.update(segments)
            for segment_id in segments:
                self.growing.pop(segment_id, None)
                self.growing_partition.pop(segment_id, None)

    def growing_segments(self) -> list[tuple[int, int, GrowingSegment]]:
        """A snapshot of ``(segment id, partition id, segment)`` of the growing segments."""
        with self._lock:
            return [(sid, self.growing_partition[sid], g) for sid, g in self.growing.items()]

    @property
    def num_growing_rows(self) -> int:
        return sum(g.num_rows for _, _, g in self.growing_segments())

    # --- the consumer thread ---------------------------------------------------------------

    def _run(self) -> None:
        try:
            record = None
            while not self._stop.is_set():
                if record is None:
                    record = self._reader.read(timeout=self._poll_s)
                    if record is None:
                        continue
                message = decode_dml(record.payload)
                self._applying = (type(message).__name__, time.monotonic())
                self._apply(message)
                self._count_consumed(message, len(record.payload))
                self._applying = None
                following = self._reader.read(timeout=0)
                with self._cond:
                    self.records += 1
                    self._tsafe = max(self._tsafe, _safe_after(record, following))
                    self._cond.notify_all()
                record = following
        except _Stopped:
            return
        except (WalError, Exception) as e:  # noqa: BLE001 - reported through .error, on_failure and health
            if not self._stop.is_set():
                self._fail(e)

    def _fail(self, error: Exception) -> None:
        log.error("the pipeline of %s failed: %s", self.channel, error, exc_info=error)
        self.error = error
        with self._lock:   # it serves nothing more: free the growing rows now
            self.growing.clear()
            self.growing_partition.clear()
        with self._cond:
            self._cond.notify_all()
        if self.on_failure is not None:
            self.on_failure(error)

    def _count_consumed(self, message, size: int) -> None:
        if getattr(message, "collection_id", None) != self.collection_id:
            return
        if isinstance(message, InsertBatch):
            self.insert_rate.add(size)
        elif isinstance(message, DeleteBatch):
            self.delete_rate.add(size)

    def _apply(self, message) -> None:
        if isinstance(message, TimeTick):
            return
        if message.collection_id != self.collection_id:
            return
        if isinstance(message, InsertBatch):
            self._insert(message)
        elif isinstance(message, DeleteBatch):
            self._delete(message)

    def _insert(self, batch: InsertBatch) -> None:
        with self._lock:
            sealed_up_to = self.excluded.get(batch.segment_id)
            keep = np.ones(batch.num_rows, dtype=bool) if sealed_up_to is None else batch.timestamps > sealed_up_to
            if not keep.any():
                return
            growing = self.growing.get(batch.segment_id)
            if growing is None:
                growing = GrowingSegment(self._dim, self.metric, segment_id=batch.segment_id,
                                         field_id=self._vector.fieldID, schema=self.schema,
                                         pk_field_id=self._pk.fieldID, interim=self.interim)
                self.growing[batch.segment_id] = growing
                self.growing_partition[batch.segment_id] = batch.partition_id
        table = pa.Table.from_batches([batch.columns]).filter(pa.array(keep))
        vectors = np.stack(table.column(self._vector.name).to_numpy(zero_copy_only=False)).astype(np.float32) \
            if table.num_rows else np.zeros((0, self._dim), np.float32)
        columns = {self._ids[name]: table.column(name).to_numpy(zero_copy_only=False)
                   for name in table.column_names if name in self._ids and name != self._vector.name}
        pks = np.asarray(batch.primary_keys.to_numpy(zero_copy_only=False))[keep]
        growing.insert(pks, vectors, timestamps=batch.timestamps[keep], columns=columns)

    def _delete(self, batch: DeleteBatch) -> None:
        pks = np.asarray(batch.primary_keys.to_numpy(zero_copy_only=False))
        for _, _, growing in self.growing_segments():
            growing.delete(pks, batch.timestamps)
        if self.forward_delete is not None:
            self._wait_forward(self.forward_delete(pks, batch.timestamps))

    def _wait_forward(self, forward: "concurrent.futures.Future[None] | None") -> None:
        """Block until the forward is done (its failure raised), or until the pipeline stops: then
        it is cancelled and the thread ends without passing the delete."""
        if forward is None:
            return
        while True:
            try:
                forward.result(timeout=self._poll_s)
                return
            except concurrent.futures.TimeoutError:
                if self._stop.is_set():
                    forward.cancel()
                    raise _Stopped() from None
            except concurrent.futures.CancelledError:
                if self._stop.is_set():
                    raise _Stopped() from None
                raise RuntimeError("the forward of a delete was cancelled") from None
