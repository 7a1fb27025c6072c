"""JobQueue: a collection's jobs run one at a time in arrival order; its lock lives only while used."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import poll_until
from vecgrid.cluster.querycoord.job.jobs import JobQueue


async def test_a_collection_lock_is_dropped_once_no_job_holds_or_waits_for_it():
    queue = JobQueue()
    for cid in range(50):
        async with queue.lock(cid):
            assert queue.busy() == [cid]
    assert queue.busy() == []


async def test_jobs_of_one_collection_run_in_arrival_order_and_others_in_parallel():
    queue = JobQueue()
    log: list[str] = []
    release = asyncio.Event()

    async def job(cid: int, name: str, wait: asyncio.Event | None = None) -> None:
        async with queue.lock(cid):
            log.append(f"{name}+")
            if wait is not None:
                await wait.wait()
            await asyncio.sleep(0)
            log.append(f"{name}-")

    first = asyncio.create_task(job(1, "a", release))
    await poll_until(lambda: log == ["a+"], 5, 0.01, "the first job to start")
    waiting = [asyncio.create_task(job(1, name)) for name in ("b", "c")]
    await job(2, "other")  # another collection does not wait for collection 1
    assert log == ["a+", "other+", "other-"]
    assert queue.busy() == [1]
    release.set()
    await asyncio.gather(first, *waiting)
    assert log[3:] == ["a-", "b+", "b-", "c+", "c-"]
    assert queue.busy() == []


async def test_a_cancelled_waiter_or_a_failed_job_leaves_no_lock_behind():
    queue = JobQueue()
    holding, release = asyncio.Event(), asyncio.Event()

    async def holder() -> None:
        async with queue.lock(7):
            holding.set()
            await release.wait()

    async def waiter() -> None:
        async with queue.lock(7):
            pytest.fail("a cancelled waiter must not run")

    held = asyncio.create_task(holder())
    await holding.wait()
    waiting = asyncio.create_task(waiter())
    await poll_until(lambda: queue.busy() == [7] and not waiting.done(), 5, 0.01, "the waiter to queue")
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    await held
    assert queue.busy() == []

    with pytest.raises(RuntimeError, match="job failed"):
        async with queue.lock(7):
            raise RuntimeError("job failed")
    assert queue.busy() == []
    async with queue.lock(7):  # the collection takes jobs again
        assert queue.busy() == [7]
