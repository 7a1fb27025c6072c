"""The DataCoord component: the coordinator's data-side loops and the explicit flush and compaction.

It runs in the coordinator process beside the QueryCoord, over the same catalog and the same channel
appenders, and talks to the QueryCoord only through the callables it is built with (the two sit on
one layer and do not import each other).  It owns

* the seal/flush policy (:class:`~vecgrid.cluster.datacoord.flush.FlushPolicy`), always;
* the **parts** added with :meth:`DataCoord.add_part` before :meth:`DataCoord.start`: background
  loops such as compaction, index builds and garbage collection.  A part has ``start()`` (plain or
  async) and ``async stop()``; it may have ``health_problems() -> list[str]``.  Parts start in the
  order added, after the flush policy, and stop in reverse, before it — a compaction never outlives
  the flushes it reads from.  ``stop()`` may come without ``start()`` (a start-up that failed).  The part that compacts is added with ``compaction=True`` and must have
  ``async compact(collection_id)``; :meth:`DataCoord.compact` delegates to it.

Progress of long work (Milvus's GetFlushState, GetCompactionState, GetIndexBuildProgress): a flush or
an explicit compaction started with :meth:`DataCoord.start_flush` / :meth:`DataCoord.start_compaction`
answers an id at once, read later with :meth:`DataCoord.flush_state` / :meth:`DataCoord.compaction_state`;
:meth:`DataCoord.index_progress` reads the indexed rows of a collection's indexes; :meth:`DataCoord.activity`
sums it up for the dashboard and ``/metrics``.  Every answer is plain data (the write path's callers
sit on the same layer and do not import this package).

Stop it before the QueryCoord: its flushes write through the QueryCoord's appenders.

Who owns what: the parts list and the compaction part are set before start and only read after;
everything else belongs to the parts (see theirs).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Callable, Protocol

from vecgrid import errors
from vecgrid.cluster.component import Component
from vecgrid.cluster.datacoord.flush import FlushPolicy, PullTarget, SealedCopiesServe
from vecgrid.cluster.datacoord.index_builder import index_progress
from vecgrid.cluster.lifecycle import StateCode
from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.config import Settings
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.wal import WalLockedError

log = logging.getLogger(__name__)

ROLE = "datacoord"


class Part(Protocol):
    """A background part of the DataCoord (see the module doc)."""

    def start(self) -> Any: ...

    async def stop(self) -> None: ...


class DataCoord(Component):
    def __init__(self, settings: Settings, catalog: Catalog, appenders: ChannelAppenders, segment_root: str, *,
                 pull_target: PullTarget, sealed_copies_serve: SealedCopiesServe,
                 node_id: Callable[[], int] = lambda: 0) -> None:
        super().__init__(settings, ROLE)
        self.catalog = catalog
        self._node_id = node_id
        self.flush_policy = FlushPolicy(catalog, appenders, segment_root, settings.datacoord,
                                        pull_target=pull_target, sealed_copies_serve=sealed_copies_serve,
                                        source_id=node_id)
        self.parts: list[Part] = []
        self._compaction: Any = None
        self._started = False

    def add_part(self, part: Part, *, compaction: bool = False) -> None:
        """Run ``part`` with the component (before :meth:`start`); ``compaction``: it serves :meth:`compact`."""
        if self._started:
            raise RuntimeError("parts are added before the DataCoord starts")
        if compaction:
            if self._compaction is not None:
                raise ValueError("a compaction part is already added")
            self._compaction = part
        self.parts.append(part)

    async def start(self) -> None:
        self._started = True
        self.lifecycle.node_id = self._node_id()
        await self.flush_policy.recover()
        self.flush_policy.start()
        for part in self.parts:
            started = part.start()
            if inspect.isawaitable(started):
                await started
        self.lifecycle.set(StateCode.Healthy)
        log.info("datacoord healthy with %d part(s) beside the flush policy", len(self.parts))

    async def stop(self) -> None:
        self.lifecycle.set(StateCode.Stopping)
        for part in reversed(self.parts):
            await part.stop()
        await self.flush_policy.stop()

    def health_reasons(self) -> list[str]:
        """What keeps the data side from being healthy (failing flushes, parts' problems)."""
        reasons = self.flush_policy.health_problems()
        for part in self.parts:
            problems = getattr(part, "health_problems", None)
            if problems is not None:
                reasons += problems()
        return reasons

    # --- requests ---------------------------------------------------------------------------------

    async def flush(self, collection_id: int) -> list[int]:
        """Seal and flush every channel of the collection; the ids of the segments published (sealed
        and L0), once they are.  ``CollectionNotFound`` for an unknown id."""
        self.lifecycle.check_healthy()
        try:
            segments = await self.flush_policy.flush_collection(collection_id)
        except (errors.MilvusError, asyncio.CancelledError):
            raise
        except WalLockedError as e:
            raise errors.ServiceUnavailable(f"flush of collection {collection_id}: {e}") from e
        except Exception as e:
            raise errors.ServiceInternal(f"flush of collection {collection_id} failed: {e}") from e
        return [s.ID for s in segments]

    async def compact(self, collection_id: int) -> Any:
        """Compact the collection now, through the compaction part."""
        self.lifecycle.check_healthy()
        return await self._compaction_part().compact(collection_id)

    async def start_flush(self, collection_id: int) -> dict[str, Any]:
        """Start a flush of every channel of the collection; its state (``FlushJob.to_dict``) at once."""
        self.lifecycle.check_healthy()
        return (await self.flush_policy.start_flush(collection_id)).to_dict()

    def flush_state(self, flush_id: int) -> dict[str, Any]:
        """A flush's state now; ``ParameterInvalid`` for an id the coordinator does not keep."""
        return self.flush_policy.flush_state(flush_id).to_dict()

    def flushes(self, collection_id: int) -> list[dict[str, Any]]:
        """The collection's kept flushes, newest first."""
        return [job.to_dict() for job in self.flush_policy.jobs(collection_id)]

    async def start_compaction(self, collection_id: int) -> dict[str, Any]:
        """Start an explicit compaction of the collection; its state (``CompactionJob.to_dict``) at once."""
        self.lifecycle.check_healthy()
        return (await self._compaction_part().start_compaction(collection_id)).to_dict()

    def compaction_state(self, compaction_id: int) -> dict[str, Any]:
        return self._compaction_part().compaction_state(compaction_id).to_dict()

    def compactions(self, collection_id: int) -> list[dict[str, Any]]:
        """The collection's kept explicit compactions, newest first."""
        if self._compaction is None:
            return []
        return [job.to_dict() for job in self._compaction.jobs.newest_first(collection_id)]

    def _compaction_part(self) -> Any:
        if self._compaction is None:
            raise errors.ServiceUnavailable("compaction is not enabled")
        return self._compaction

    async def index_progress(self, collection_id: int) -> list[dict[str, Any]]:
        """The collection's indexes with their indexed, total and pending rows (see
        :func:`~vecgrid.cluster.datacoord.index_builder.index_progress`) and ``fail_reason``."""
        found = await asyncio.to_thread(index_progress, self.catalog, [collection_id])
        if not found:
            await asyncio.to_thread(self.catalog.get_collection, collection_id)  # CollectionNotFound
        for index in found:
            index["fail_reason"] = await self.index_fail_reason(collection_id, index["field_id"])
        return found

    async def activity(self) -> dict[str, Any]:
        """Work in flight, for the dashboard and ``/metrics``: flushes, compaction plans (explicit or
        not) and index builds running, and every index's pending rows (catalog reads, in a thread)."""
        builds = sum(getattr(part, "builds_in_flight", 0) for part in self.parts)
        compaction = self._compaction
        return {"flushes_in_flight": self.flush_policy.flushes_in_flight,
                "compaction_plans_in_flight": compaction.plans_in_flight if compaction is not None else 0,
                "index_builds_in_flight": builds,
                "indexes": await asyncio.to_thread(index_progress, self.catalog)}

    async def index_fail_reason(self, collection_id: int, field_id: int) -> str:
        """Why builds of the field's index in the collection fail ('' when none does): the index
        builder's last error per segment, as Milvus's DescribeIndex ``index_state_fail_reason``.
        The parts' ``failures`` are copied here, on the loop that owns them."""
        failures: dict[tuple[int, int], str] = {}
        for part in self.parts:
            failures.update(getattr(part, "failures", None) or {})
        if not failures:
            return ""
        segments = {s.ID for s in await asyncio.to_thread(self.catalog.list_segments, collection_id)}
        return "; ".join(f"segment {sid}: {why}" for (sid, fid), why in sorted(failures.items())
                         if fid == field_id and sid in segments)
