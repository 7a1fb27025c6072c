"""What every checker sees, and the controller that runs them, as Milvus's ``checkers.CheckerController``.

Checkers are plain classes with a ``check()`` that reads meta, targets and the
distribution and returns tasks; the controller runs each on its own period (or at
once when poked by a job or an observer) and hands the tasks to the scheduler.
Ids and names are Milvus's (behaviour sheet §1); all start active; a deactivated
checker returns no tasks, except that the balance checker still drains stopping and
read-only nodes.
"""

from __future__ import annotations

import asyncio
import logging

from vecgrid import errors
from vecgrid.cluster.querycoord.context import CheckerContext
from vecgrid.cluster.querycoord.task.task import Task
from vecgrid.cluster.wakeup import Wakeup

log = logging.getLogger(__name__)


class Checker:
    id: int = 0
    name: str = ""

    def __init__(self, ctx: CheckerContext, interval_s: float) -> None:
        self.ctx = ctx
        self.interval_s = interval_s
        self.active = True

    def check(self) -> list[Task]:
        """This round's tasks: per loaded collection, then for what no loaded collection owns."""
        if not self.active:
            return []
        tasks: list[Task] = []
        for cid in self.ctx.collections.ids():
            tasks += self.collection_tasks(cid)
        return tasks + self.orphan_tasks(set(self.ctx.collections.ids()))

    def collection_tasks(self, cid: int) -> list[Task]:
        return []

    def orphan_tasks(self, loaded: set[int]) -> list[Task]:
        """Tasks for data of collections that are not loaded (any more)."""
        return []


class CheckerController:
    """Runs each checker in its own loop task on the coordinator's event loop.

    The loop owns every piece of state here: the loop tasks, the wake-ups and the round counts
    (``rounds``) are read and written only from coroutines and callbacks on that loop.  A round is
    counted when ``check()`` returned and its tasks went to the scheduler; a round that raised is
    counted apart (``failed_rounds``) with its error kept (``last_error``), so "N rounds ran and
    proposed nothing" can be awaited (``wait_rounds``) and a checker that keeps failing is visible.
    """

    def __init__(self, checkers: list[Checker]) -> None:
        self.checkers = {c.id: c for c in checkers}
        self._wake = {c.id: Wakeup() for c in checkers}
        self._loops: dict[int, asyncio.Task] = {}
        self._rounds = {c.id: 0 for c in checkers}
        self._failed_rounds = {c.id: 0 for c in checkers}
        self._last_error: dict[int, BaseException] = {}
        self._round_ended = asyncio.Condition()

    def start(self) -> None:
        self._loops = {cid: asyncio.ensure_future(self._loop(c)) for cid, c in self.checkers.items()}

    async def stop(self) -> None:
        for t in self._loops.values():
            t.cancel()
        await asyncio.gather(*self._loops.values(), return_exceptions=True)
        self._loops = {}

    def poke(self, checker_id: int | None = None) -> None:
        """Run every checker (or only ``checker_id``) now (Milvus's "manual check" after a job or an
        observer change)."""
        for cid, wake in self._wake.items():
            if checker_id in (None, cid):
                wake.poke()

    def run_once(self, checker: Checker) -> int:
        added = 0
        for task in checker.check():
            added += checker.ctx.scheduler.add(task)
        return added

    # --- what the loops did (diagnostics, and tests that wait for rounds instead of sleeping) ----

    def rounds(self, checker_id: int) -> int:
        """Rounds of the checker that completed since the controller was made."""
        self.get(checker_id)
        return self._rounds[checker_id]

    def failed_rounds(self, checker_id: int) -> int:
        self.get(checker_id)
        return self._failed_rounds[checker_id]

    def last_error(self, checker_id: int) -> BaseException | None:
        return self._last_error.get(checker_id)

    def loop_task(self, checker_id: int) -> asyncio.Task | None:
        """The checker's loop task while started (to tell a loop that ended from one that waits)."""
        return self._loops.get(checker_id)

    async def wait_rounds(self, checker_id: int, n: int, *, poke: bool = True) -> None:
        """Return once ``n`` more rounds of the checker completed than had when called (each poked to run
        now unless ``poke`` is false).  No deadline of its own: callers bound it with ``asyncio.timeout``."""
        target = self.rounds(checker_id) + n
        async with self._round_ended:
            while self._rounds[checker_id] < target:
                if poke:
                    self._wake[checker_id].poke()
                await self._round_ended.wait()

    async def _loop(self, checker: Checker) -> None:
        wake = self._wake[checker.id]
        while True:
            await wake.wait(checker.interval_s)
            try:
                self.run_once(checker)
            except Exception as e:  # noqa: BLE001 - one bad round must not stop the checker
                log.exception("%s failed", checker.name)
                self._failed_rounds[checker.id] += 1
                self._last_error[checker.id] = e
            else:
                self._rounds[checker.id] += 1
            async with self._round_ended:
                self._round_ended.notify_all()

    # --- ListCheckers / ActivateChecker / DeactivateChecker -----------------------------------

    def get(self, checker_id: int) -> Checker:
        checker = self.checkers.get(checker_id)
        if checker is None:
            raise errors.ServiceInternal(f"checker type not found: {checker_id}")
        return checker

    def set_active(self, checker_id: int, active: bool) -> None:
        self.get(checker_id).active = active
        if active:
            self._wake[checker_id].poke()
