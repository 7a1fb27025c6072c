"""Time ticks on the DML channels of loaded collections, as Milvus's rootcoord time-tick sender.

A shard leader's tsafe advances only with the records it reads; a search with a
guarantee timestamp waits until tsafe reaches it.  So every ``interval_s`` (Milvus:
200 ms) the coordinator appends a ``TimeTick`` with a fresh timestamp to every channel
of every loaded collection, through the channel's appender
(:mod:`vecgrid.cluster.streaming.appender`), which stamps writes too: every record
logged before the tick has a smaller timestamp.  A channel another process holds open
(a bulk tool, a test) is skipped and tried again later.
"""

from __future__ import annotations

import asyncio
import logging

from vecgrid.cluster.periodic import Periodic
from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.dml import TimeTick
from vecgrid.storage.wal import MessageKind

log = logging.getLogger(__name__)


class TimeTicker(Periodic):
    name = "time ticker"

    def __init__(self, appenders: ChannelAppenders, catalog: Catalog, collections: CollectionManager,
                 interval_s: float, source_id: int = 0) -> None:
        super().__init__(interval_s)
        self.appenders, self.catalog, self.collections = appenders, catalog, collections
        self.wal = appenders.wal
        self.source_id = source_id

    def channels(self) -> list[str]:
        return [ch for cid in self.collections.ids() for ch in self.catalog.get_collection(cid).vchannels]

    async def round(self) -> None:
        await asyncio.to_thread(self.tick, self.channels())

    def tick(self, channels: list[str]) -> None:
        for channel in channels:
            a = self.appenders.get(channel)
            if a is not None:
                a.append(lambda ts: [(MessageKind.TIMETICK, TimeTick(ts, self.source_id).encode())])
