"""A background loop that runs a round every ``interval_s`` or at once when poked.

Shared by the coordinators' loops (QueryCoord's checkers and observers, DataCoord's policies), which
sit on one layer and do not import each other."""

from __future__ import annotations

import asyncio
import logging

from vecgrid.cluster.wakeup import Wakeup

log = logging.getLogger(__name__)


class Periodic:
    name = "observer"

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._task: asyncio.Task | None = None
        self._wake = Wakeup()

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    @property
    def loop_task(self) -> asyncio.Task | None:
        """The loop's task while started (to tell a loop that ended from one that waits)."""
        return self._task

    def poke(self) -> None:
        self._wake.poke()

    async def round(self) -> None:
        raise NotImplementedError

    async def _loop(self) -> None:
        while True:
            await self._wake.wait(self.interval_s)
            try:
                await self.round()
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():
                    raise  # stop()
                log.exception("%s round was cancelled from inside; the loop goes on", self.name)
            except Exception:  # noqa: BLE001 - one bad round must not stop the loop
                log.exception("%s round failed", self.name)
