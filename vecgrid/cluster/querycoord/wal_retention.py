"""Keep the DML log of idle channels short: their checkpoints follow the time ticks, and log
files nothing can need any more are dropped.

The coordinator ticks every channel of every loaded collection (:mod:`.timetick`), so
even a channel nobody writes to grows.  Every ``interval_s`` this sweep moves the
checkpoint of each channel whose log holds only ticks after it
(:func:`~vecgrid.storage.flush.advance_idle_checkpoint`); the next target picks the new
checkpoint up as the channel's seek position, as a Milvus target does after DataNode
moved it.

Dropping files is one sweep behind, and never past a seek position that a current or
next target still names: a channel watch started from such a target must find its
start in the log (a reader that needs a dropped file fails with ``WalTruncatedError``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable

from vecgrid.cluster.periodic import Periodic
from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.target_manager import Scope, TargetManager
from vecgrid.proto import msg_pb2
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.flush import advance_idle_checkpoint
from vecgrid.storage.wal import Position, Wal

log = logging.getLogger(__name__)


class WalRetention(Periodic):
    name = "wal retention"

    def __init__(self, wal: Wal, catalog: Catalog, collections: CollectionManager, targets: TargetManager,
                 interval_s: float, on_advance: Callable[[int], None] = lambda cid: None) -> None:
        super().__init__(interval_s)
        self.wal, self.catalog, self.collections, self.targets = wal, catalog, collections, targets
        self.on_advance = on_advance
        self._previous: dict[str, Position] = {}  # checkpoint set by the last sweep, per channel

    async def round(self) -> None:
        for cid in await asyncio.to_thread(self.sweep):
            self.on_advance(cid)

    def sweep(self) -> list[int]:
        """One pass over the loaded collections; returns those whose checkpoints moved."""
        moved = []
        for cid in self.collections.ids():
            seeks = self._seek_positions(cid)
            advanced = False
            for channel in self.catalog.get_collection(cid).vchannels:
                checkpoint = advance_idle_checkpoint(self.catalog, self.wal, channel)
                self._truncate(channel, seeks.get(channel, []))
                if checkpoint is not None:
                    self._previous[channel] = Position.from_msg_position(checkpoint)
                    advanced = True
            if advanced:
                moved.append(cid)
        return moved

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
