"""Background loops stop even when a poke lands in the same loop iteration as the stop's cancel.

On Python 3.11 ``asyncio.wait_for(event.wait(), ...)`` returned normally in that case, so the loop
went on and ``stop()`` waited forever: checkers poked by a finishing task hung CI teardowns."""

from __future__ import annotations

import asyncio

from vecgrid.cluster.checkers.base import Checker, CheckerController
from vecgrid.cluster.observers.periodic import Periodic
from vecgrid.cluster.wakeup import Wakeup


class CountingLoop(Periodic):
    name = "counting"

    def __init__(self) -> None:
        super().__init__(interval_s=60)
        self.rounds = 0

    async def round(self) -> None:
        self.rounds += 1


class IdleChecker(Checker):
    def __init__(self, checker_id: int) -> None:
        super().__init__(ctx=None, interval_s=60)
        self.id = checker_id

    def check(self) -> list:
        return []


async def test_periodic_stop_meeting_a_poke_stops():
    loop = CountingLoop()
    loop.start()
    for _ in range(20):
        loop.poke()
        await asyncio.sleep(0.01)  # the round ran and the loop waits again
        loop.poke()
        await asyncio.wait_for(loop.stop(), 2)
        loop.start()
    assert loop.rounds >= 20
    await asyncio.wait_for(loop.stop(), 2)


async def test_checker_controller_stop_meeting_a_poke_stops():
    controller = CheckerController([IdleChecker(1), IdleChecker(2)])
    controller.start()
    await asyncio.sleep(0.01)
    controller.poke()
    await asyncio.wait_for(controller.stop(), 2)


async def test_wakeup_returns_on_poke_or_after_the_period():
    wake = Wakeup()
    loop = asyncio.get_running_loop()
    started = loop.time()
    await wake.wait(0.05)
    assert loop.time() - started >= 0.05
    wake.poke()
    started = loop.time()
    await wake.wait(10)
    assert loop.time() - started < 1
    started = loop.time()
    await wake.wait(0.05)  # the poke was consumed: this one waits out its period
    assert loop.time() - started >= 0.05
