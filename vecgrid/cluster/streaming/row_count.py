"""A collection's (or partition's) row count whether or not it is loaded: Milvus's
``GetCollectionStatistics`` / ``GetPartitionStatistics`` ``row_count`` — rows of its flushed segments
plus rows logged but not flushed yet, deletes not subtracted.

Two owners, read without a lock over both:

* the **catalog** owns the flushed segments (their ``num_of_rows``);
* each channel's **appender** owns its growing segments' row counts (the segment assigner, under the
  appender's lock): the open segments and those a flush sealed and has not handed off.

A flush publishes a growing segment as a sealed one **with the same id**, so the growing segments are
read first and then the catalog, and a growing segment the catalog already knows (in any state: a
compaction may have replaced it since) is left out: a flush between the two reads is counted once.

The appenders count what this process logged.  Rows an earlier process logged and did not flush are
counted once the flush policy's recovery flush publishes them (``flush_idle_s`` after the start).
"""

from __future__ import annotations

from vecgrid.cluster.streaming.appender import ChannelAppenders
from vecgrid.cluster.streaming.segment_assign import GrowingStats
from vecgrid.proto import common_pb2, data_coord_pb2
from vecgrid.storage.catalog import Catalog


def _logged_segments(appenders: ChannelAppenders, channels: list[str]) -> list[GrowingStats]:
    opened = appenders.opened()  # a channel this process never wrote has nothing growing here
    return [s for channel in channels if channel in opened for s in opened[channel].logged_segments()]


def row_count(catalog: Catalog, appenders: ChannelAppenders, collection_id: int,
              partition_id: int | None = None) -> int:
    """Flushed plus unflushed rows of the collection (or one partition); blocking (SQLite)."""
    coll = catalog.get_collection(collection_id)
    growing = _logged_segments(appenders, list(coll.vchannels))  # before the catalog: see the module doc
    recorded = catalog.list_segments(collection_id, partition_id)
    flushed = sum(s.num_of_rows for s in recorded
                  if s.state == common_pb2.Flushed and s.level != data_coord_pb2.L0)
    known = {s.ID for s in recorded}
    unflushed = sum(s.rows for s in growing
                    if s.segment_id not in known and partition_id in (None, s.partition_id))
    return flushed + unflushed
