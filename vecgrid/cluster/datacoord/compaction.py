"""DataCoord's compaction: which segments are compacted, the plans as Dask tasks, and their publish
(Milvus's compaction trigger, plan handler and ``UpdateSegmentsInfo`` in one).

Policy, each round (every ``datacoord.check_interval_s``, unless ``datacoord.auto_compaction`` is off),
over every collection:

* **L0 compaction** of a channel holding at least ``datacoord.l0_compaction_min_segments`` L0 segments:
  their deletes go into the delete logs of the channel's sealed segments they hit, then they are
  dropped (:func:`~vecgrid.cluster.datanode.compaction.compact_l0`).  A channel waiting for one starts
  no mix plan, so a stream of small merges cannot starve it.
* **Mix compaction** per partition and channel: *small* segments (fewer rows than
  ``compaction_small_proportion`` × ``segment_max_rows`` and fewer bytes than that share of
  ``segment_max_mb``), once there are ``compaction_min_segments`` of them, are packed (largest first)
  into merges of at most the maximum size; and a segment whose delete log covers more than
  ``compaction_deleted_ratio`` of its rows is rewritten without them
  (:func:`~vecgrid.cluster.datanode.compaction.compact_mix`).
* :meth:`Compaction.compact` (Milvus's ManualCompaction) compacts a collection now, whatever the
  thresholds: every L0 segment, then every small segment that has a partner and every segment with
  deletes; it returns once all of it is published.  It is a :class:`CompactionJob` awaited:
  :meth:`Compaction.start_compaction` answers the job at once and :meth:`Compaction.compaction_state`
  reads its state, plans and progress later (Milvus's GetCompactionState).

A plan runs as the Dask task ``compact-<plan>`` on any worker (the handlers only read and write the
segment store), with ``datacoord.task_timeout_s`` per attempt: Dask redoes it elsewhere when its worker
is lost, retries it when it raises, and an attempt past its deadline is submitted again.  The
coordinator then publishes the result in ONE catalog transaction — the new segments with
``compactionFrom`` naming what they replace, which the catalog marks Dropped in the same
transaction — and asks QueryCoord to pull a next target (``pull_target``, passed in: DataCoord does
not import QueryCoord).  That target swaps the sources for the result; a shard leader stops searching a
source the moment it adopts a segment compacted from it, so reads count every row once throughout.

Crash safety: the catalog is the only state.  A coordinator killed before the publish leaves the
sources as they were and the task's files unreferenced (garbage collection removes them); killed
after it, a restarted coordinator's target observer pulls the new target by itself.  The crash points
``compaction-after-task`` and ``compaction-after-publish`` let tests kill it at exactly those moments.

Health: a collection whose planning or plans keep failing is named by
:meth:`Compaction.health_problems` until one of its plans succeeds; the failed plan's segments are free
again and the next round plans them anew (the retry).

Who owns what: all state here — the claims (a segment is in at most one plan until that plan ends;
a channel's L0 plan claims every sealed segment of the channel), the running plans, the delete-count
cache, the counters, the summaries and the explicit compactions' jobs — belongs to the coordinator's
event loop.  Other threads run only file reads and the publish (the catalog has its own lock), and
touch none of it.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import inspect
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable

from distributed import Client

from vecgrid import errors
from vecgrid.cluster.dask_futures import task_result
from vecgrid.cluster.datanode.compaction import (DeleteSource, L0Plan, L0Result, MixPlan, MixResult,
                                                 compact_l0, compact_mix)
from vecgrid.cluster.datacoord.jobs import JobTable
from vecgrid.cluster.periodic import Periodic
from vecgrid.common.faults import crash_point
from vecgrid.config import Settings
from vecgrid.proto import common_pb2, data_coord_pb2, msg_pb2
from vecgrid.storage import segment_files
from vecgrid.storage.catalog import Catalog, CollectionInfo

log = logging.getLogger(__name__)

PullTarget = Callable[[int], "Awaitable[None] | None"]
L0 = data_coord_pb2.L0
FLUSHED = common_pb2.Flushed
#: attempts of one plan's task that ran past the deadline (Dask itself redoes a task whose worker died)
MAX_ATTEMPTS = 3
#: times Dask runs a task again that raised (a worker's storage hiccup)
TASK_RETRIES = 2
KEPT_SUMMARIES = 64


@dataclass
class Plan:
    """One compaction: its task (what the handler gets) and the segments it claims."""

    id: int
    kind: str                      # "l0" or "mix"
    trigger: str                   # why: "l0-segments", "small-segments", "deleted-ratio", "manual"
    collection_id: int
    channel: str
    claims: frozenset[int]         # segments no other plan may take until this one ends
    task: L0Plan | MixPlan
    #: L0 plans: per rewritten source, field id -> index id of the index files copied with it
    index_ids: dict[int, dict[int, int]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"compact-{self.id}"


@dataclass(frozen=True)
class Outcome:
    """What a plan published: the segments it replaced and the ones that replace them."""

    plan_id: int
    kind: str
    trigger: str
    collection_id: int
    channel: str
    dropped: tuple[int, ...]
    published: tuple[int, ...]
    rows_in: int = 0
    rows_out: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"plan_id": self.plan_id, "kind": self.kind, "trigger": self.trigger, "channel": self.channel,
                "dropped": list(self.dropped), "published": list(self.published),
                "rows_in": self.rows_in, "rows_out": self.rows_out}


EXECUTING, COMPLETED, FAILED = "Executing", "Completed", "Failed"


@dataclass
class CompactionJob:
    """One explicit compaction (Milvus's ManualCompaction and GetCompactionState), the event loop's.

    It runs in phases: waiting for the collection's plans already running, its L0 plans, then its mix
    plans (planned only once the L0 ones are published: they read what those wrote).  ``progress``
    maps the phases onto 0-50 % (L0) and 50-100 % (mix), each by its plans completed, so that it never
    goes back when the mix plans appear; a phase without plans is done at once."""

    id: int
    collection_id: int
    phase: str = "waiting"                                   # waiting, l0, mix, done
    plans: dict[int, str] = field(default_factory=dict)     # plan id -> Executing / Completed / Failed
    phase_plans: dict[str, list[int]] = field(default_factory=dict)   # phase -> its plans
    outcomes: list[Outcome] = field(default_factory=list)
    error: str = ""
    task: asyncio.Task | None = None

    def plan_ended(self, plan_id: int, task: asyncio.Task) -> None:
        self.plans[plan_id] = COMPLETED if not task.cancelled() and task.exception() is None else FAILED

    @property
    def state(self) -> str:
        return FAILED if self.error else COMPLETED if self.phase == "done" else EXECUTING

    def count(self, state: str) -> int:
        return sum(1 for s in self.plans.values() if s == state)

    @property
    def progress(self) -> int:
        if self.phase == "done":
            return 100
        if self.phase not in ("l0", "mix"):
            return 0
        mine = self.phase_plans.get(self.phase, [])
        done = sum(1 for pid in mine if self.plans[pid] != EXECUTING)
        share = done / len(mine) if mine else 0.0
        return int((0 if self.phase == "l0" else 50) + 50 * share)

    def to_dict(self) -> dict[str, Any]:
        """The job as plain data (the REST answer, the WriteService's GetCompactionState)."""
        return {"compaction_id": self.id, "collection_id": self.collection_id, "state": self.state,
                "progress": self.progress, "executing_plans": self.count(EXECUTING),
                "completed_plans": self.count(COMPLETED), "failed_plans": self.count(FAILED), "error": self.error}


class Compaction(Periodic):
    """The compaction policy and its plans (see the module docstring)."""

    name = "compaction"

    def __init__(self, settings: Settings, catalog: Catalog, client: Client, segment_root: str,
                 pull_target: PullTarget) -> None:
        d = settings.datacoord
        super().__init__(d.check_interval_s)
        self.catalog, self.client, self.root, self.pull_target = catalog, client, segment_root, pull_target
        self.max_rows = d.segment_max_rows
        self.max_bytes = int(d.segment_max_mb * 1024 * 1024)
        self.small_proportion = d.compaction_small_proportion
        self.min_segments = d.compaction_min_segments
        self.deleted_ratio = d.compaction_deleted_ratio
        self.l0_min_segments = d.l0_compaction_min_segments
        self.task_timeout_s = d.task_timeout_s
        self.auto = d.auto_compaction
        self._claimed: dict[int, int] = {}                 # segment id -> plan id
        self._running: dict[int, tuple[Plan, asyncio.Task]] = {}
        self._deleted: dict[int, int] = {}                 # segment id -> rows its delete log names
        self.summaries: collections.OrderedDict[int, dict[str, Any]] = collections.OrderedDict()
        self.jobs: JobTable[CompactionJob] = JobTable("compaction", KEPT_SUMMARIES)
        self.completed = 0
        self.failures = 0
        self.last_error: str | None = None
        self._failing: dict[int, tuple[float, str]] = {}   # collection -> (since, error) until a plan succeeds

    # --- lifecycle ---------------------------------------------------------------------------------

    async def stop(self) -> None:
        """Stop the policy and cancel the plans in flight (a publish already under way completes)."""
        await super().stop()
        running = [task for _, task in self._running.values()]
        running += self.jobs.tasks()
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    def health_problems(self) -> list[str]:
        """Collections whose compaction fails (planning or a plan) and has not succeeded since."""
        now = time.monotonic()
        return [f"compaction of collection {cid} failing for {now - since:.0f} s: {error}"
                for cid, (since, error) in sorted(self._failing.items())]

    def running(self, collection_id: int | None = None) -> list[Plan]:
        return [plan for plan, _ in self._running.values()
                if collection_id is None or plan.collection_id == collection_id]

    # --- the policy ----------------------------------------------------------------------------------

    async def round(self) -> None:
        if not self.auto:
            return
        seen: set[int] = set()
        collections_now = self._collections()
        for coll in collections_now:
            try:
                seen |= await self._trigger(coll, manual=False, kinds=("l0", "mix"))
            except Exception as e:  # noqa: BLE001 - the next round tries again
                self._failed(coll.id, f"compaction policy of collection {coll.id}", e)
        for sid in set(self._deleted) - seen:  # dropped or purged since
            del self._deleted[sid]
        for cid in set(self._failing) - {c.id for c in collections_now}:  # dropped since
            del self._failing[cid]

    def _collections(self) -> list[CollectionInfo]:
        return self.catalog.all_collections()

    async def _trigger(self, coll: CollectionInfo, *, manual: bool, kinds: Iterable[str]) -> set[int]:
        """Plan and launch what ``coll`` needs; returns the ids of its Flushed segments."""
        listed = self.catalog.list_segments(coll.id, states=[FLUSHED])
        await self._count_deletes([s for s in listed if s.level != L0 and len(s.deltalogs)])
        # no await from here to the launches: claims are checked and taken in one step
        segments = self.catalog.list_segments(coll.id, states=[FLUSHED])
        plans: list[Plan] = []
        if "l0" in kinds:
            plans += self._plan_l0(coll, segments, manual)
        if "mix" in kinds:
            # a channel due for an L0 plan starts no merge meanwhile (an explicit compaction has just
            # run its L0 plans: it merges whatever L0 segments came since)
            waiting = self._l0_waiting(coll, segments, manual) if "l0" in kinds else set()
            plans += self._plan_mix(coll, segments, manual, waiting)
        for plan in plans:
            self._launch(plan)
        return {s.ID for s in segments}

    def _l0_waiting(self, coll: CollectionInfo, segments: list[data_coord_pb2.SegmentInfo], manual: bool) -> set[str]:
        """Channels with enough L0 segments for an L0 plan (started or blocked by a running plan)."""
        need = 1 if manual else self.l0_min_segments
        counts = collections.Counter(s.insert_channel for s in segments if s.level == L0)
        return {ch for ch, n in counts.items() if n >= need}

    def _plan_l0(self, coll: CollectionInfo, segments: list[data_coord_pb2.SegmentInfo], manual: bool) -> list[Plan]:
        plans = []
        for channel in sorted(self._l0_waiting(coll, segments, manual)):
            mine = [s for s in segments if s.insert_channel == channel]
            if any(s.ID in self._claimed for s in mine):
                continue  # a plan of the channel runs: its segments are not final yet
            l0 = [s for s in mine if s.level == L0]
            sealed = [s for s in mine if s.level != L0]
            plan_id = self.catalog.allocate_ids(1)
            first = self.catalog.allocate_ids(len(sealed)) if sealed else 0
            task = L0Plan(
                plan_id=plan_id, collection_id=coll.id, channel=channel, pk_name=coll.primary_field.name,
                root=self.root,
                deletes=tuple(DeleteSource(s.ID, s.partitionID, self.catalog.segment_files_record(s.ID)) for s in l0),
                sealed=tuple(self.catalog.segment_files_record(s.ID) for s in sealed),
                new_ids={s.ID: first + i for i, s in enumerate(sealed)})
            plans.append(Plan(plan_id, "l0", "manual" if manual else "l0-segments", coll.id, channel,
                              frozenset(s.ID for s in mine), task, self._index_ids(coll.id, sealed)))
        return plans

    def _index_ids(self, cid: int, segments: list[data_coord_pb2.SegmentInfo]) -> dict[int, dict[int, int]]:
        out: dict[int, dict[int, int]] = {}
        for s in segments:
            for build in self.catalog.list_segment_indexes(cid, segment_id=s.ID):
                for f in build.files:
                    out.setdefault(s.ID, {})[f.fieldID] = build.indexID
        return out

    def _small(self, seg: data_coord_pb2.SegmentInfo) -> bool:
        return (seg.num_of_rows < self.small_proportion * self.max_rows
                and _size(seg) < self.small_proportion * self.max_bytes)

    def _deleted_share(self, seg: data_coord_pb2.SegmentInfo) -> float:
        return self._deleted.get(seg.ID, 0) / max(seg.num_of_rows, 1)

    def _plan_mix(self, coll: CollectionInfo, segments: list[data_coord_pb2.SegmentInfo], manual: bool,
                  busy_channels: set[str]) -> list[Plan]:
        groups: dict[tuple[int, str], list[data_coord_pb2.SegmentInfo]] = {}
        for s in segments:
            if s.level != L0 and s.ID not in self._claimed and s.insert_channel not in busy_channels:
                groups.setdefault((s.partitionID, s.insert_channel), []).append(s)
        l0 = [s for s in segments if s.level == L0]
        plans = []
        for (pid, channel), members in sorted(groups.items()):
            small = [s for s in members if self._small(s)]
            bins: list[tuple[str, list[data_coord_pb2.SegmentInfo]]] = []
            if manual or len(small) >= self.min_segments:
                bins = [("manual" if manual else "small-segments", b) for b in self._pack(small) if len(b) > 1]
            packed = {s.ID for _, b in bins for s in b}
            threshold = 0.0 if manual else self.deleted_ratio
            bins += [("manual" if manual else "deleted-ratio", [s]) for s in members
                     if s.ID not in packed and self._deleted_share(s) > threshold]
            deletes = tuple(DeleteSource(s.ID, s.partitionID, self.catalog.segment_files_record(s.ID))
                            for s in l0 if s.insert_channel == channel and s.partitionID in (-1, pid))
            for trigger, sources in bins:
                plan_id = self.catalog.allocate_ids(1)
                task = MixPlan(plan_id=plan_id, collection_id=coll.id, partition_id=pid, channel=channel,
                               pk_name=coll.primary_field.name, root=self.root,
                               sources=tuple(self.catalog.segment_files_record(s.ID) for s in sources),
                               deletes=deletes, result_id=self.catalog.allocate_segment_id())
                plans.append(Plan(plan_id, "mix", trigger, coll.id, channel, frozenset(s.ID for s in sources), task))
        return plans

    def _pack(self, segments: list[data_coord_pb2.SegmentInfo]) -> list[list[data_coord_pb2.SegmentInfo]]:
        """First fit, largest first, into merges of at most the maximum rows and bytes."""
        bins: list[list[data_coord_pb2.SegmentInfo]] = []
        for s in sorted(segments, key=lambda s: (-s.num_of_rows, s.ID)):
            for b in bins:
                if sum(x.num_of_rows for x in b) + s.num_of_rows <= self.max_rows and \
                        sum(_size(x) for x in b) + _size(s) <= self.max_bytes:
                    b.append(s)
                    break
            else:
                bins.append([s])
        return bins

    async def _count_deletes(self, segments: list[data_coord_pb2.SegmentInfo]) -> None:
        """Fill the cache of delete-log sizes (segments are immutable: once read, always right)."""
        records = [(s.ID, self.catalog.segment_files_record(s.ID)) for s in segments if s.ID not in self._deleted]
        if not records:
            return

        def read() -> dict[int, int]:
            return {sid: segment_files.read_deltalog(record).num_rows for sid, record in records}
        self._deleted.update(await asyncio.to_thread(read))

    # --- explicit compaction -----------------------------------------------------------------------

    async def compact(self, collection_id: int) -> int:
        """Compact a collection now (every L0 segment, then every small segment with a partner and every
        segment with deletes); returns the compaction's id once all of it is published.  A plan that
        fails raises here, after the others ended."""
        job = await self.start_compaction(collection_id)
        assert job.task is not None
        await asyncio.shield(job.task)
        return job.id

    async def start_compaction(self, collection_id: int) -> CompactionJob:
        """Start compacting a collection now (see :meth:`compact`); the job, at once."""
        coll = await asyncio.to_thread(self.catalog.get_collection, collection_id)
        job = CompactionJob(await asyncio.to_thread(self.catalog.allocate_ids, 1), coll.id)
        return self.jobs.start(job, self._run_job(job, coll))

    def compaction_state(self, compaction_id: int) -> CompactionJob:
        return self.jobs.get(compaction_id)

    async def _run_job(self, job: CompactionJob, coll: CollectionInfo) -> list[Outcome]:
        try:
            while running := [task for plan, task in self._running.values() if plan.collection_id == coll.id]:
                await asyncio.gather(*running, return_exceptions=True)  # their failures are their own
            for kind in ("l0", "mix"):
                job.phase = kind
                before = {p.id for p in self.running(coll.id)}
                await self._trigger(coll, manual=True, kinds=(kind,))
                mine = [(plan, task) for plan, task in self._running.values() if plan.id not in before
                        and plan.collection_id == coll.id and plan.trigger == "manual"]
                job.phase_plans[kind] = [plan.id for plan, _ in mine]
                for plan, task in mine:
                    job.plans[plan.id] = EXECUTING
                    task.add_done_callback(lambda t, plan_id=plan.id: job.plan_ended(plan_id, t))
                results = await asyncio.gather(*(task for _, task in mine), return_exceptions=True)
                failed = next((r for r in results if isinstance(r, BaseException)), None)
                if failed is not None:
                    raise failed
                job.outcomes += results
        except BaseException as e:
            job.error = str(e) or type(e).__name__
            raise
        job.phase = "done"
        self.summaries[job.id] = {"compaction_id": job.id, "collection_id": coll.id,
                                  "plans": [o.to_dict() for o in job.outcomes]}
        while len(self.summaries) > KEPT_SUMMARIES:
            self.summaries.popitem(last=False)
        return job.outcomes

    @property
    def plans_in_flight(self) -> int:
        return len(self._running)

    # --- running a plan ------------------------------------------------------------------------------

    def _launch(self, plan: Plan) -> None:
        for sid in plan.claims:
            self._claimed[sid] = plan.id
        task = asyncio.ensure_future(self._execute(plan))
        self._running[plan.id] = (plan, task)
        task.add_done_callback(lambda t: self._ended(plan, t))
        log.info("compaction plan %d (%s, %s) of collection %d, channel %s: segments %s", plan.id, plan.kind,
                 plan.trigger, plan.collection_id, plan.channel, sorted(plan.claims))

    def _ended(self, plan: Plan, task: asyncio.Task) -> None:
        self._running.pop(plan.id, None)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self._failed(plan.collection_id, f"compaction plan {plan.id} ({plan.kind}) of collection "
                                             f"{plan.collection_id}", error)
        else:
            self.completed += 1
            self._failing.pop(plan.collection_id, None)

    def _failed(self, collection_id: int, what: str, error: BaseException) -> None:
        """A plan or a round that failed: counted and reported by :meth:`health_problems` until a plan of
        the collection succeeds; its segments are free again, so the next round plans them anew."""
        self.failures += 1
        self.last_error = f"{what}: {error}"
        since = self._failing.get(collection_id, (time.monotonic(), ""))[0]
        self._failing[collection_id] = (since, f"{what}: {error}")
        log.warning("%s failed: %s", what, error, exc_info=not isinstance(error, errors.MilvusError))

    async def _execute(self, plan: Plan) -> Outcome:
        try:
            result = await self._run_task(plan)
            crash_point("compaction-after-task")
            outcome = await asyncio.to_thread(self._publish, plan, result)
            crash_point("compaction-after-publish")
            if outcome.dropped:
                await self._follow(plan.collection_id)
            log.info("compaction plan %d published %s in place of %s", plan.id, list(outcome.published),
                     list(outcome.dropped))
            return outcome
        finally:
            for sid in plan.claims:
                if self._claimed.get(sid) == plan.id:
                    del self._claimed[sid]

    async def _run_task(self, plan: Plan) -> L0Result | MixResult:
        """The plan's Dask task, on any worker; an attempt past ``task_timeout_s`` is submitted again."""
        handler = compact_l0 if plan.kind == "l0" else compact_mix
        error: errors.MilvusError | None = None
        for attempt in range(MAX_ATTEMPTS):
            key = plan.key if attempt == 0 else f"{plan.key}-retry-{attempt}"
            fut = self.client.submit(handler, plan.task, key=key, pure=False, retries=TASK_RETRIES)
            try:
                async with asyncio.timeout(self.task_timeout_s):
                    return await task_result(fut)
            except TimeoutError:
                error = errors.Timeout(f"compaction task {key} did not finish within {self.task_timeout_s:g} s")
                log.warning("%s; submitting it again", error)
            finally:
                fut.release()
        assert error is not None
        raise error

    async def _follow(self, collection_id: int) -> None:
        """Ask QueryCoord for a next target now.  Should that fail, its target observer pulls one by
        itself within ``querycoord.next_target_interval_s``: logged, not raised (the compaction is done)."""
        try:
            pulled = self.pull_target(collection_id)
            if inspect.isawaitable(pulled):
                await pulled
        except Exception as e:  # noqa: BLE001 - retried by the target observer's own pulls
            log.warning("target pull of collection %d after a compaction failed: %s", collection_id, e)

    # --- publishing (a worker thread; the catalog's lock owns the writes) ---------------------------------

    def _require_flushed(self, plan: Plan, segment_ids: Iterable[int]) -> list[data_coord_pb2.SegmentInfo]:
        out = []
        for sid in segment_ids:
            seg = self.catalog.get_segment(sid)
            if seg.state != FLUSHED:
                raise errors.SegmentNotFound(f"segment {sid} is {common_pb2.SegmentState.Name(seg.state)}: "
                                             f"compaction plan {plan.id} abandoned", segment=sid)
            out.append(seg)
        return out

    def _publish(self, plan: Plan, result: L0Result | MixResult) -> Outcome:
        if isinstance(result, L0Result):
            return self._publish_l0(plan, result)
        return self._publish_mix(plan, result)

    def _publish_l0(self, plan: Plan, result: L0Result) -> Outcome:
        task = plan.task
        assert isinstance(task, L0Plan)
        l0_ids = [d.segment_id for d in task.deletes]
        self._require_flushed(plan, l0_ids)
        sources = self._require_flushed(plan, [r.source_id for r in result.rewritten])
        if not result.rewritten:
            # nothing of them hides a sealed row: each drop alone is safe, no transaction needed
            for sid in l0_ids:
                self.catalog.drop_segment(sid)
            return Outcome(plan.id, plan.kind, plan.trigger, plan.collection_id, plan.channel, tuple(l0_ids), ())
        live = {i.fieldID: i.indexID for i in self.catalog.describe_index(plan.collection_id)}
        items = []
        for i, (rewritten, src) in enumerate(zip(result.rewritten, sources)):
            built = plan.index_ids.get(src.ID, {})
            stale = [fid for fid in rewritten.record.indexes if live.get(fid) != built.get(fid)]
            record = rewritten.record
            if stale:  # index dropped or created again since the plan: the new segment gets its own build
                record = dataclasses.replace(record, indexes={fid: f for fid, f in record.indexes.items()
                                                              if fid not in stale})
            items.append(dict(record=record, insert_channel=plan.channel, level=src.level,
                              compaction_from=[src.ID] + (l0_ids if i == 0 else []),
                              **_positions([src])))
        published = self.catalog.publish_segment_records(items)
        return Outcome(plan.id, plan.kind, plan.trigger, plan.collection_id, plan.channel,
                       tuple([s.ID for s in sources] + l0_ids), tuple(s.ID for s in published))

    def _publish_mix(self, plan: Plan, result: MixResult) -> Outcome:
        task = plan.task
        assert isinstance(task, MixPlan)
        ids = [r.segment_id for r in task.sources]
        sources = self._require_flushed(plan, ids)
        if result.record is None:
            # every row is deleted: dropping any of them alone changes no read
            for sid in ids:
                self.catalog.drop_segment(sid)
            return Outcome(plan.id, plan.kind, plan.trigger, plan.collection_id, plan.channel, tuple(ids), (),
                           result.rows_in, 0)
        (published,) = self.catalog.publish_segment_records([dict(
            record=result.record, insert_channel=plan.channel, level=data_coord_pb2.L1, compaction_from=ids,
            **_positions(sources))])
        return Outcome(plan.id, plan.kind, plan.trigger, plan.collection_id, plan.channel, tuple(ids),
                       (published.ID,), result.rows_in, result.rows_out)


def _size(seg: data_coord_pb2.SegmentInfo) -> int:
    return sum(b.log_size for fb in seg.binlogs for b in fb.binlogs)


def _positions(sources: list[data_coord_pb2.SegmentInfo]) -> dict[str, msg_pb2.MsgPosition | None]:
    """The earliest start and the latest DML position of the sources: the result's."""
    starts = [s.start_position for s in sources if s.HasField("start_position")]
    ends = [s.dml_position for s in sources if s.HasField("dml_position")]
    return {"start_position": min(starts, key=lambda p: p.timestamp) if starts else None,
            "dml_position": max(ends, key=lambda p: p.timestamp) if ends else None}


__all__ = ["Compaction", "Outcome", "Plan", "PullTarget"]
