"""The coordinator's task scheduler on its own (a fake executor and refresh, no cluster):
cancellation ends a task at once, stop() leaves no network call behind, priorities take free slots first."""

from __future__ import annotations

import asyncio

from vecgrid.cluster.querycoord.meta.target_manager import SegmentRef
from vecgrid.cluster.querycoord.task.scheduler import TaskScheduler
from vecgrid.cluster.querycoord.task.task import Priority, SegmentTask
from tests.conftest import poll_until

HANG_GUARD_S = 30  # only so that a regression fails instead of hanging the suite


def segment_task(segment_id: int, priority: Priority = Priority.NORMAL, collection_id: int = 1) -> SegmentTask:
    return SegmentTask(collection_id, 11, SegmentRef(segment_id, 2, "ch", 1, 0), target=3, priority=priority)


class Executor:
    """Runs segment tasks until the test opens their gate; records the order they started in."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.gates: dict[int, asyncio.Event] = {}

    def gate(self, segment_id: int) -> asyncio.Event:
        return self.gates.setdefault(segment_id, asyncio.Event())

    async def run_segment(self, task: SegmentTask) -> None:
        self.started.append(task.segment.segment_id)
        await self.gate(task.segment.segment_id).wait()

    run_channel = run_leader = run_index_save = run_segment


class Refresh:
    """A distribution pull that would block (a gRPC pull of up to 5 s); records what reached the network."""

    def __init__(self) -> None:
        self.entered = 0
        self.network_calls = 0
        self.cancelled = 0
        self.gate = asyncio.Event()
        self.pokes: list[bool] = []

    async def __call__(self, nodes: set[int], poke: bool) -> None:
        self.entered += 1
        self.pokes.append(poke)
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.network_calls += 1


async def test_stop_cancels_a_running_task_without_refreshing_after_it():
    """The task's cancel used to be swallowed, and the task then awaited the refresh: stop() waited on a
    gRPC pull (and poked stopped checkers) instead of returning."""
    executor, refresh = Executor(), Refresh()
    scheduler = TaskScheduler(executor, refresh, 60.0, 60.0)
    ended = []
    scheduler.on_done(lambda task, error: ended.append((task.key, error)))
    task = segment_task(5)
    assert scheduler.add(task)
    await poll_until(lambda: executor.started == [5], 10, 0.01, "the task to start")
    async with asyncio.timeout(HANG_GUARD_S):
        await scheduler.stop()
    assert refresh.entered == 0 and refresh.network_calls == 0
    assert ended == []  # a cancelled task pokes no listener
    assert not scheduler.has(task.key) and scheduler.tasks() == []
    assert not scheduler.add(segment_task(6))  # nothing starts on a stopped scheduler
    refresh.gate.set()
    executor.gate(5).set()
    await asyncio.sleep(0)
    assert refresh.network_calls == 0 and executor.started == [5]


async def test_stop_cancels_a_refresh_in_flight():
    """A task that finished and is pulling the distribution is still the scheduler's: stop() ends that
    pull too (it had left the task table, so stop() never saw it and the pull went on)."""
    executor, refresh = Executor(), Refresh()
    scheduler = TaskScheduler(executor, refresh, 60.0, 60.0)
    task = segment_task(7)
    executor.gate(7).set()
    assert scheduler.add(task)
    await poll_until(lambda: refresh.entered == 1, 10, 0.01, "the refresh after the task")
    async with asyncio.timeout(HANG_GUARD_S):
        await scheduler.stop()
    assert refresh.cancelled == 1 and refresh.network_calls == 0


async def test_a_cancelled_task_ends_at_once_and_frees_its_key():
    executor, refresh = Executor(), Refresh()
    scheduler = TaskScheduler(executor, refresh, 60.0, 60.0)
    task = segment_task(8, collection_id=4)
    assert scheduler.add(task)
    await poll_until(lambda: executor.started == [8], 10, 0.01, "the task to start")
    assert scheduler.cancel_collection(4) == 1
    await poll_until(lambda: not scheduler.has(task.key), 10, 0.01, "the cancelled task to end")
    assert refresh.entered == 0 and task.key not in scheduler.failures
    assert scheduler.add(task)  # the key is free for the checker's next round
    executor.gate(8).set()
    await poll_until(lambda: refresh.entered == 1, 10, 0.01, "the retried task's refresh")
    assert scheduler.has(task.key)  # its key stays taken while it pulls the distribution
    refresh.gate.set()
    await poll_until(lambda: refresh.network_calls == 1, 10, 0.01, "the retried task's pull")
    await poll_until(lambda: not scheduler.has(task.key), 10, 0.01, "the key to be free after the pull")
    await scheduler.stop()


async def test_a_high_priority_task_queued_after_low_ones_takes_the_next_free_slot():
    executor, refresh = Executor(), Refresh()
    refresh.gate.set()
    scheduler = TaskScheduler(executor, refresh, 60.0, 60.0, execution_cap=2)
    for sid in (1, 2):  # fill both slots
        assert scheduler.add(segment_task(sid))
    await poll_until(lambda: executor.started == [1, 2], 10, 0.01, "two tasks holding the slots")
    for sid in (10, 11):
        assert scheduler.add(segment_task(sid, Priority.LOW))
    await poll_until(lambda: scheduler.waiting == 2, 10, 0.01, "the LOW tasks queued for a slot")
    assert scheduler.add(segment_task(20, Priority.HIGH))
    assert scheduler.add(segment_task(12, Priority.LOW))
    assert scheduler.add(segment_task(21, Priority.HIGH))
    await poll_until(lambda: scheduler.waiting == 5, 10, 0.01, "every later task queued")
    assert executor.started == [1, 2]

    executor.gate(1).set()  # one slot frees: the first HIGH task takes it, though queued after two LOW
    await poll_until(lambda: len(executor.started) == 3, 10, 0.01, "a queued task to start")
    for sid in (2, 20, 21, 10, 11, 12):
        executor.gate(sid).set()
    await poll_until(lambda: len(executor.started) == 7, 10, 0.01, "every task to start")
    assert executor.started == [1, 2, 20, 21, 10, 11, 12]  # HIGH first, FIFO within a priority
    await poll_until(lambda: not scheduler.tasks(), 10, 0.01, "every task to end")
    assert scheduler.waiting == 0
    await scheduler.stop()


async def test_a_queued_task_cancelled_gives_up_its_place_not_a_slot():
    executor, refresh = Executor(), Refresh()
    refresh.gate.set()
    scheduler = TaskScheduler(executor, refresh, 60.0, 60.0, execution_cap=1)
    assert scheduler.add(segment_task(1))
    await poll_until(lambda: executor.started == [1], 10, 0.01, "the first task holding the slot")
    assert scheduler.add(segment_task(2, Priority.HIGH, collection_id=9))
    assert scheduler.add(segment_task(3, Priority.LOW))
    await poll_until(lambda: scheduler.waiting == 2, 10, 0.01, "two tasks queued")
    assert scheduler.cancel_collection(9) == 1
    await poll_until(lambda: scheduler.waiting == 1, 10, 0.01, "the cancelled one out of the queue")
    executor.gate(1).set()
    executor.gate(3).set()
    await poll_until(lambda: not scheduler.tasks(), 10, 0.01, "the remaining tasks to end")
    assert executor.started == [1, 3]
    await scheduler.stop()


async def test_a_finished_task_keeps_its_key_until_the_distribution_shows_its_result():
    """A load that ended but whose node was not pulled yet is neither in the distribution nor in the
    scheduler: a segment checker round in that window loaded the segment a second time, on another node,
    and the next round released one copy (CI: a reduce task after 'the balancer moves nothing').  The key
    stays taken until the pull ends; the task no longer counts as pending rows meanwhile."""
    executor, refresh = Executor(), Refresh()
    scheduler = TaskScheduler(executor, refresh, 60.0, 60.0)
    task = segment_task(5)
    assert scheduler.add(task)
    await poll_until(lambda: executor.started == [5], 10, 0.01, "the task to start")
    executor.gate(5).set()
    await poll_until(lambda: refresh.entered == 1, 10, 0.01, "the distribution pull to start")
    assert scheduler.has(task.key) and not scheduler.add(segment_task(5))
    assert scheduler.tasks() == [] and scheduler.pending_rows(3) == 0
    refresh.gate.set()
    await poll_until(lambda: not scheduler.has(task.key), 10, 0.01, "the key to be free after the pull")
    assert scheduler.add(segment_task(5))
    executor.gate(5).set()
    async with asyncio.timeout(HANG_GUARD_S):
        await scheduler.stop()


async def test_only_a_task_that_succeeded_runs_the_checkers_at_once():
    """A failed task is retried at the checkers' next period, not at once: poked after every failure, the
    checkers loaded a segment whose file is corrupt again every ~30 ms."""
    class Failing(Executor):
        async def run_segment(self, task: SegmentTask) -> None:
            if task.segment.segment_id == 9:
                raise RuntimeError("checksum mismatch")

    executor, refresh = Failing(), Refresh()
    refresh.gate.set()
    scheduler = TaskScheduler(executor, refresh, 60.0, 60.0)
    failed, done = segment_task(9), segment_task(10)
    assert scheduler.add(failed)
    await poll_until(lambda: not scheduler.has(failed.key), 10, 0.01, "the failed task to settle")
    assert scheduler.add(done)
    await poll_until(lambda: not scheduler.has(done.key), 10, 0.01, "the task to settle")
    assert refresh.pokes == [False, True] and refresh.network_calls == 2
    assert "checksum mismatch" in scheduler.failures[failed.key]
    await scheduler.stop()
