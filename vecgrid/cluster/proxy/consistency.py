"""Read consistency, as Milvus's proxy sets it: the guarantee timestamp each channel's leader waits for.

``Strong`` (the default) makes every leader wait until its channel's tsafe reaches the channel's
newest acknowledged write — the timestamp of the newest durable record the coordinator logged on it
(:meth:`~vecgrid.cluster.proxy.writer.Writer.guarantees_sync`) — so every write acknowledged before
the read is seen, and a leader that has read its log to the end answers at once instead of waiting
for the next time tick (a fresh oracle timestamp, which Strong took before, is passed only by the
next tick: up to 200 ms per read); ``Session`` waits for this proxy's own newest write to the
collection (its ``MutationResult.timestamp``, or a channel's newest acknowledged write when that is
older: the write did not touch the channel); ``Bounded`` allows 5 s of staleness; ``Eventually``
reads whatever is there.  ``None`` takes the collection's own level, and an explicit
``guarantee_timestamp`` overrides them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from vecgrid import errors
from vecgrid.cluster.proxy.catalog_access import CatalogSource, CollectionMeta
from vecgrid.cluster.proxy.lb_policy import LeaderRouter
from vecgrid.cluster.proxy.write_access import WriteSource
from vecgrid.proto import common_pb2

GRACEFUL_TIME_MS = 5000  # Milvus's common.gracefulTime: the staleness Bounded consistency allows


def guarantee_timestamp(consistency: str | int, now: int) -> int:
    """The guarantee timestamp of a read at ``consistency`` (a ``ConsistencyLevel`` name or number),
    ``now`` being a fresh timestamp of the oracle that stamps the writes.  (Strong and Session reads of
    the :class:`Proxy` wait for acknowledged writes instead: see the module doc.)"""
    level = level_of(consistency)
    if level == common_pb2.Strong:
        return now
    if level == common_pb2.Bounded:
        return max(now - (GRACEFUL_TIME_MS << 18), 0)
    if level == common_pb2.Eventually:
        return 0  # no wait: whatever the leaders have consumed
    raise errors.ParameterInvalid(
        f"consistency level {common_pb2.ConsistencyLevel.Name(level)} is not supported "
        "by vecgrid's proxy; use Strong, Session, Bounded or Eventually, or a guarantee timestamp"
    )


_LEVELS = {name.lower(): number for name, number in common_pb2.ConsistencyLevel.items()}


def level_of(consistency: str | int) -> int:
    if isinstance(consistency, int) and consistency in _LEVELS.values():
        return consistency
    if isinstance(consistency, str) and consistency.lower() in _LEVELS:
        return _LEVELS[consistency.lower()]
    raise errors.ParameterInvalid(f"unknown consistency level {consistency!r} "
                                  f"(one of {', '.join(common_pb2.ConsistencyLevel.keys())})")


@dataclass(frozen=True)
class Guarantee:
    """A read's guarantee timestamp: one for every channel, or one per channel (Strong)."""

    default: int
    per_channel: Mapping[str, int] = field(default_factory=dict)

    def of(self, channel: str) -> int:
        return self.per_channel.get(channel, self.default)


EVERYTHING = Guarantee(0)   # Eventually: whatever the leaders have consumed


class ReadConsistency:
    """The guarantee timestamps of a proxy's reads.

    ``_session`` (collection name -> timestamp of this proxy's newest write to it) is owned by the
    proxy's event loop: its writes record it (:meth:`remember`), its Session reads wait for it.
    """

    def __init__(self, writes: WriteSource, catalog: CatalogSource, router: LeaderRouter) -> None:
        self._writes = writes
        self._catalog = catalog
        self._router = router
        self._session: dict[str, int] = {}

    def remember(self, collection: str, timestamp: int) -> None:
        """A write of this proxy to ``collection`` was acknowledged at ``timestamp``."""
        if timestamp > self._session.get(collection, 0):
            self._session[collection] = timestamp

    async def guarantee(self, consistency: str | int | None, explicit: int | None,
                            meta: CollectionMeta) -> tuple[Guarantee, int]:
        """``(guarantee timestamps, level)`` of a read: an explicit timestamp is Milvus's Customized level;
        ``consistency=None`` is the collection's own level; Strong waits, per channel, for the newest
        acknowledged write (module doc), Session for this proxy's newest write to the collection, Bounded
        counts back from a fresh timestamp of the coordinator's oracle."""
        if explicit is not None:
            return Guarantee(int(explicit)), common_pb2.Customized
        level = meta.consistency_level if consistency is None else level_of(consistency)
        if level == common_pb2.Eventually:
            return EVERYTHING, level
        if level == common_pb2.Session:
            own = self._session.get(meta.name, 0)
            if not own:
                return Guarantee(0), level
            # this proxy's write is at or below every channel's newest acknowledged record it touched; a
            # channel it did not touch need not wait for a tick to pass the write's timestamp
            acked = await self._writes.guarantees(meta.channels)
            return Guarantee(own, {channel: min(own, ts) for channel, ts in acked.items()}), level
        guarantee_timestamp(level, 0)  # refuses an unsupported level before anything is sent
        if level == common_pb2.Strong:
            await self._router.shard_leaders(
                meta.id
            )  # a collection nobody serves fails here, before its channels are asked
            return Guarantee(0, await self._writes.guarantees(meta.channels)), level
        return Guarantee(guarantee_timestamp(level, await self._catalog.recent_timestamp())), level
