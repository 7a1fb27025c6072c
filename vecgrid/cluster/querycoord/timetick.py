"""Time ticks on the DML channels of loaded collections, as Milvus's rootcoord time-tick sender.

A shard leader's tsafe advances only with the records it reads; a search with a
guarantee timestamp (strong consistency: "now") waits until tsafe reaches it.  So every
``interval_s`` (Milvus: 200 ms) the coordinator appends a ``TimeTick`` with a fresh
timestamp to every channel of every loaded collection: every record written before it
has a smaller timestamp, because writes take their timestamps from the same oracle.

The coordinator is the channels' single appender; :meth:`writer` is where the write path
gets the same writer.  A channel another process holds open (a bulk tool, a test) is
skipped and tried again later.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.observers.periodic import Periodic
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.dml import TimeTick
from vecgrid.storage.wal import MessageKind, Wal, WalLockedError, WalWriter

log = logging.getLogger(__name__)

RETRY_LOCKED_S = 10.0


class TimeTicker(Periodic):
    name = "time ticker"

    def __init__(self, wal: Wal, catalog: Catalog, collections: CollectionManager, interval_s: float,
                 source_id: int = 0) -> None:
        super().__init__(interval_s)
        self.wal, self.catalog, self.collections = wal, catalog, collections
        self.source_id = source_id
        self._writers: dict[str, WalWriter] = {}
        self._locked_until: dict[str, float] = {}
        self._lock = threading.Lock()

    def writer(self, channel: str) -> WalWriter | None:
        """The channel's writer, opened on first use; None while another process holds it."""
        with self._lock:
            w = self._writers.get(channel)
            if w is not None:
                return w
            if time.monotonic() < self._locked_until.get(channel, 0.0):
                return None
            try:
                w = self._writers[channel] = self.wal.open_writer(channel)
            except WalLockedError:
                log.info("channel %s is held by another writer; no time ticks from here for now", channel)
                self._locked_until[channel] = time.monotonic() + RETRY_LOCKED_S
            return w

    def channels(self) -> list[str]:
        return [ch for cid in self.collections.ids() for ch in self.catalog.get_collection(cid).vchannels]

    async def round(self) -> None:
        await asyncio.to_thread(self.tick, self.channels())

    def tick(self, channels: list[str]) -> None:
        for channel in channels:
            w = self.writer(channel)
            if w is not None:
                ts = self.catalog.allocate_timestamp()
                w.append(MessageKind.TIMETICK, ts, TimeTick(ts, self.source_id).encode())

    async def stop(self) -> None:
        await super().stop()
        with self._lock:
            for w in self._writers.values():
                w.close()
            self._writers.clear()
