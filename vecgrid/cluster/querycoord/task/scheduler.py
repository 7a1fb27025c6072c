"""Task scheduler, as Milvus's ``task.Scheduler``: dedup, priorities, deadlines, bookkeeping.

Checkers and manual balancing add tasks; at most one task per key runs at a time
(a second ``add`` with the same key is refused), at most ``execution_cap`` run at
once, and a freed slot goes to the highest priority waiting (FIFO within a priority).
A task that fails or passes its deadline is logged and dropped: the checkers see the
same gap on their next round and make a new one, which is how Milvus retries.  When a
task ends the involved nodes' distribution is pulled at once, so the next checker round
sees the result (not after an index save, which changes no distribution).  After a success
the checkers run at once; after a failure they wait for their period, as Milvus's do: run
at once, they loaded a segment with a corrupt file again every ~30 ms, reading the whole
file each time.

A cancelled task (``stop()``, a release, a node loss) ends at once: no pull, no listener.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from typing import Awaitable, Callable

from vecgrid.cluster.querycoord.task.executor import DaskExecutor
from vecgrid.cluster.querycoord.task.task import ChannelTask, IndexSaveTask, LeaderTask, SegmentTask, Task

log = logging.getLogger(__name__)

EXECUTION_CAP = 256  # Milvus's queryCoord.taskExecutionCap
#: the executor method that carries out each kind of task
RUNNERS = {SegmentTask: "run_segment", ChannelTask: "run_channel", LeaderTask: "run_leader",
           IndexSaveTask: "run_index_save"}


class PrioritySlots:
    """``capacity`` execution slots; a freed slot goes to the highest priority waiting, FIFO within one.

    A slot is handed straight from :meth:`release` to the waiter it wakes, so a task added later
    cannot take it first, and no slot is free while a task waits.  Owned by the event loop.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"execution cap {capacity} < 1")
        self._free = capacity
        self._waiters: list[tuple[int, int, asyncio.Future]] = []  # heap of (-priority, arrival, wake-up)
        self._arrivals = itertools.count()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    async def acquire(self, priority: int) -> None:
        if self._free:
            self._free -= 1
            return
        entry = (-priority, next(self._arrivals), asyncio.get_running_loop().create_future())
        heapq.heappush(self._waiters, entry)
        try:
            await entry[2]
        except asyncio.CancelledError:
            if entry[2].done() and not entry[2].cancelled():
                self.release()  # handed a slot in the same tick as the cancel: pass it on
            else:
                self._waiters.remove(entry)
                heapq.heapify(self._waiters)
            raise

    def release(self) -> None:
        if self._waiters:
            heapq.heappop(self._waiters)[2].set_result(None)
        else:
            self._free += 1


class TaskScheduler:
    """Tasks by key (``_tasks``) and the asyncio task running each (``_running``), plus every run
    still alive, also after its task ended while it pulls the distribution (``_live``: what
    :meth:`stop` cancels).  A key stays taken (``_settling``) from the end of its task until that pull
    ended: before it, the distribution does not show the task's result yet, and a checker that saw
    neither would do the work again (Milvus ends a task only once the distribution shows it).
    Owned by the coordinator's event loop."""

    def __init__(self, executor: DaskExecutor, refresh: Callable[[set[int], bool], Awaitable[None]],
                 segment_timeout_s: float, channel_timeout_s: float, *, execution_cap: int = EXECUTION_CAP) -> None:
        self.executor = executor
        self._refresh = refresh
        self._timeouts = {SegmentTask: segment_timeout_s, ChannelTask: channel_timeout_s,
                          LeaderTask: channel_timeout_s, IndexSaveTask: segment_timeout_s}
        self._tasks: dict[tuple, Task] = {}
        self._running: dict[tuple, asyncio.Task] = {}
        self._live: set[asyncio.Task] = set()
        self._settling: set[tuple] = set()
        self._slots = PrioritySlots(execution_cap)
        self._stopped = False
        self.failures: dict[tuple, str] = {}   # last failure per key, for diagnostics
        self._on_done: list[Callable[[Task, BaseException | None], None]] = []

    def on_done(self, listener: Callable[[Task, BaseException | None], None]) -> None:
        """``listener(task, error)`` when a task finished (``error`` None) or failed; not when cancelled."""
        self._on_done.append(listener)

    # --- adding -----------------------------------------------------------------------------

    def add(self, task: Task) -> bool:
        """Start ``task`` unless one with its key is in flight (or the scheduler stopped); returns
        whether it was added."""
        if self._stopped or self.has(task.key):
            return False
        self._tasks[task.key] = task
        running = self._running[task.key] = asyncio.ensure_future(self._run(task))
        self._live.add(running)
        running.add_done_callback(self._live.discard)
        # A task cancelled before its first step never enters ``_run`` (nor its ``finally``), so its key
        # would stay taken forever (a release or load timeout right after a checker round leaked one).
        # Milvus's scheduler drops a cancelled task from its maps at once; this does it when it ends.
        running.add_done_callback(lambda _, key=task.key, t=task: self._forget(key, t))
        return True

    def _forget(self, key: tuple, task: Task) -> None:
        if self._tasks.get(key) is task:
            del self._tasks[key]
            self._running.pop(key, None)

    @property
    def waiting(self) -> int:
        """Tasks queued for an execution slot."""
        return self._slots.waiting

    async def _run(self, task: Task) -> None:
        settles = not isinstance(task, IndexSaveTask)  # a save moves nothing: no distribution to pull
        try:
            error = await self._execute(task)
            if settles:
                self._settling.add(task.key)
        finally:  # the task has ended, also when cancelled: it no longer counts as work in flight
            self._forget(task.key, task)
        try:
            for listener in self._on_done:
                listener(task, error)
            if settles:
                try:
                    await self._refresh(task.nodes, error is None)
                except Exception:  # noqa: BLE001 - the periodic pull catches up
                    log.debug("refreshing the distribution after %s failed", task, exc_info=True)
        finally:
            self._settling.discard(task.key)

    async def _execute(self, task: Task) -> Exception | None:
        """Run ``task`` in a slot; returns its failure.  A cancel propagates (no failure to record)."""
        await self._slots.acquire(int(task.priority))
        try:
            run = getattr(self.executor, RUNNERS[type(task)])
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel (see wakeup.py)
            async with asyncio.timeout(self._timeouts[type(task)]):
                await run(task)
        except Exception as e:  # noqa: BLE001 - the checkers retry; the scheduler must go on
            self.failures[task.key] = f"{task}: {e}"
            log.warning("task failed: %s: %s", task, e)
            return e
        finally:
            self._slots.release()
        self.failures.pop(task.key, None)
        return None

    # --- queries (checkers and the balancer's view) -------------------------------------------

    def has(self, key: tuple) -> bool:
        """Whether a task with ``key`` is in flight, or ended and its nodes' distribution is being pulled."""
        return key in self._tasks or key in self._settling

    def tasks(self, collection_id: int | None = None) -> list[Task]:
        return [t for t in self._tasks.values() if collection_id is None or t.collection_id == collection_id]

    def segment_in_flight(self, collection_id: int) -> bool:
        return any(isinstance(t, SegmentTask) for t in self.tasks(collection_id))

    def channel_in_flight(self, collection_id: int) -> bool:
        return any(isinstance(t, ChannelTask) for t in self.tasks(collection_id))

    def pending_rows(self, node_id: int, collection_id: int | None = None) -> int:
        delta = 0
        for t in self.tasks(collection_id):
            if isinstance(t, SegmentTask):
                delta += t.segment.num_rows * ((t.target == node_id) - (t.source == node_id))
        return delta

    def pending_channels(self, node_id: int, collection_id: int | None = None) -> int:
        return sum((t.target == node_id) - (t.source == node_id)
                   for t in self.tasks(collection_id) if isinstance(t, ChannelTask))

    # --- cancelling -------------------------------------------------------------------------

    def cancel(self, predicate: Callable[[Task], bool]) -> int:
        hits = [key for key, t in self._tasks.items() if predicate(t)]
        for key in hits:
            running = self._running.get(key)
            if running is not None:
                running.cancel()
        return len(hits)

    def cancel_node(self, node_id: int) -> int:
        """A node left: its tasks can never finish (Dask tasks pinned to a gone worker wait forever)."""
        return self.cancel(lambda t: node_id in t.nodes)

    def cancel_collection(self, collection_id: int) -> int:
        return self.cancel(lambda t: t.collection_id == collection_id)

    async def wait(self, keys: list[tuple], timeout_s: float) -> list[str]:
        """Wait for the tasks with ``keys``; returns the failures among them."""
        running = [self._running[k] for k in keys if k in self._running]
        if running:
            await asyncio.wait(running, timeout=timeout_s)
        return [self.failures[k] for k in keys if k in self.failures]

    async def stop(self) -> None:
        """Cancel every run, also one pulling the distribution after its task, and wait for them."""
        self._stopped = True
        tasks = list(self._live)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

