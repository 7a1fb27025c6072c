"""A background loop's "run now" flag: ``poke()`` from anywhere, ``wait(timeout_s)`` in the loop."""

from __future__ import annotations

import asyncio


class Wakeup:
    """Sleep until poked or until the period is over, whichever is first.

    Not ``asyncio.wait_for(event.wait(), ...)``: on Python 3.11 that returns normally when the
    event fires in the same loop iteration as a cancel (python/cpython#86296), so the loop never saw
    its ``stop()`` and the stop waited forever (a checker poked by a finishing task hung CI teardowns).
    ``asyncio.timeout`` awaits the event in the loop's own task, where a cancel always lands.
    """

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def poke(self) -> None:
        self._event.set()

    async def wait(self, timeout_s: float) -> None:
        try:
            async with asyncio.timeout(timeout_s):
                await self._event.wait()
        except TimeoutError:
            pass
        self._event.clear()
