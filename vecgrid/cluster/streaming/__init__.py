"""The coordinator's side of the DML channels, as Milvus 2.5's streaming node: one appender per channel
(:mod:`.appender`) that stamps and logs every record, and the growing segments it assigns rows to
(:mod:`.segment_assign`).  The proxy's writes, the time ticks and the flushes all go through it."""

from vecgrid.cluster.streaming.appender import Appended, ChannelAppender, ChannelAppenders
from vecgrid.cluster.streaming.segment_assign import GrowingStats, SealedChannel, SegmentAssigner

__all__ = ["Appended", "ChannelAppender", "ChannelAppenders", "GrowingStats", "SealedChannel", "SegmentAssigner"]
