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
    def __init__(self, checkers: list[Checker]) -> None:
        self.checkers = {c.id: c for c in checkers}
        self._wake = {c.id: Wakeup() for c in checkers}
        self._loops: list[asyncio.Task] = []

    def start(self) -> None:
        self._loops = [asyncio.ensure_future(self._loop(c)) for c in self.checkers.values()]

    async def stop(self) -> None:
        for t in self._loops:
            t.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        self._loops = []

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

    async def _loop(self, checker: Checker) -> None:
        wake = self._wake[checker.id]
        while True:
            await wake.wait(checker.interval_s)
            try:
                self.run_once(checker)
            except Exception:  # noqa: BLE001 - one bad round must not stop the checker
                log.exception("%s failed", checker.name)

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
