"""Keep the DML log short: checkpoints of idle channels follow the time ticks, and log files
nothing can need any more are dropped.

The coordinator ticks every channel of every loaded collection (:mod:`.timetick`), so
even a channel nobody writes to grows.  Every ``interval_s`` this sweep moves the
checkpoint of each channel whose log holds only ticks after it
(:func:`~vecgrid.cluster.datanode.flush.advance_idle_checkpoint`); the next target picks the new
checkpoint up as the channel's seek position, as a Milvus target does after DataNode
moved it.

Dropping files is one sweep behind the checkpoint, whoever moved it (this sweep or a
flush: DataCoord's flush leaves the log alone), and never past a seek position that a
current or next target still names: a channel watch started from such a target must
find its start in the log (a reader that needs a dropped file fails with
``WalTruncatedError``).  Every channel with a log is swept, also of a collection that is
not loaded (writes and flushes go there too; with no target nothing reads its log).

No race with a flush: the flush publishes its segments and checkpoint in one catalog
transaction and the checkpoint only moves forward (compare-and-swap), so this sweep either
sees the rows a flush is sealing (and moves nothing) or only ticks after a checkpoint.
A file is dropped only below a checkpoint that was published a sweep earlier, below
which everything is in published segments.

Owned by the sweep's thread: ``_previous`` (one sweep at a time: :meth:`round` awaits it).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable

from vecgrid import errors
from vecgrid.cluster.periodic import Periodic
from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.target_manager import Scope, TargetManager
from vecgrid.proto import msg_pb2
from vecgrid.storage.catalog import Catalog
from vecgrid.cluster.datanode.flush import advance_idle_checkpoint
from vecgrid.storage.wal import Position, Wal

log = logging.getLogger(__name__)


class WalRetention(Periodic):
    name = "wal retention"

    def __init__(self, wal: Wal, catalog: Catalog, collections: CollectionManager, targets: TargetManager,
                 interval_s: float, on_advance: Callable[[int], None] = lambda cid: None) -> None:
        super().__init__(interval_s)
        self.wal, self.catalog, self.collections, self.targets = wal, catalog, collections, targets
        self.on_advance = on_advance
        self._previous: dict[str, Position] = {}  # checkpoint seen by the last sweep, per channel

    async def round(self) -> None:
        for cid in await asyncio.to_thread(self.sweep):
            self.on_advance(cid)

    def sweep(self) -> list[int]:
        """One pass; returns the loaded collections whose checkpoints moved."""
        loaded = self.collections.ids()
        moved = []
        for cid in loaded:
            advanced = [advance_idle_checkpoint(self.catalog, self.wal, channel)
                        for channel in self.catalog.get_collection(cid).vchannels]
            if any(cp is not None for cp in advanced):
                moved.append(cid)
        self._trim(set(loaded))
        return moved

    def _trim(self, loaded: set[int]) -> None:
        """Drop every channel's files before the checkpoint of the previous sweep (and before its
        targets' seek positions), then remember the checkpoint for the next sweep."""
        for channel in self.wal.channels():
            try:
                cid = self.catalog.collection_of_channel(channel).id
            except errors.ChannelNotFound:   # dropped collection: its log goes with it, elsewhere
                self._previous.pop(channel, None)
                continue
            self._truncate(channel, self._seek_positions(cid).get(channel, []) if cid in loaded else [])
            checkpoint = self.catalog.get_channel_checkpoint(channel)
            if checkpoint is not None:
                self._previous[channel] = Position.from_msg_position(checkpoint)

    def _seek_positions(self, cid: int) -> dict[str, list[Position | None]]:
        """Each channel's seek positions in the current and next targets (None: from the start)."""
        out: dict[str, list[Position | None]] = {}
        for scope in (Scope.CURRENT, Scope.NEXT):
            for name, ch in self.targets.channels(cid, scope).items():
                seek = ch.seek_position if ch.HasField("seek_position") and len(ch.seek_position.msgID) else None
                out.setdefault(name, []).append(_position(seek))
        return out

    def _truncate(self, channel: str, seeks: list[Position | None]) -> None:
        cut = self._previous.get(channel)
        if cut is None or None in seeks:
            return
        cut = min([cut, *seeks], key=lambda p: p.offset)
        removed = self.wal.truncate_before(cut)
        if removed:
            log.info("channel %s: dropped %d log file(s) before offset %d", channel, len(removed), cut.offset)


def _position(seek: msg_pb2.MsgPosition | None) -> Position | None:
    return None if seek is None else Position.from_msg_position(seek)
