"""Awaiting Dask futures from a coordinator's event loop.

Every coordinator role (QueryCoord's task executor, DataCoord's index builds and compactions) awaits
the Dask tasks it submitted through :func:`task_result`, never ``await future`` directly: see there.
"""

from __future__ import annotations

import asyncio
from typing import Any

from distributed import Future

from vecgrid import errors


async def task_result(fut: Future) -> Any:
    """The value of a Dask task, fetched so that cancelling this await cannot break the client.

    ``Client._gather`` shares one in-flight gather among all callers and forgets it only once it
    has started; a caller cancelled before that (a release or a node loss cancels the scheduler's
    tasks) cancelled the shared task, and every later result of that client raised
    ``CancelledError`` forever (targets never promoted again, every load hung at 0 %).  So the
    fetch runs shielded; it ends when the future is released (``_finish``) or done.

    A ``CancelledError`` that is not this await's own (``cancelling()``) is the task's: a
    coroutine its worker cancelled raises it, and re-raised it would cancel the caller's loop.
    """
    fetch = asyncio.ensure_future(fut.result())
    fetch.add_done_callback(_retrieve)
    try:
        return await asyncio.shield(fetch)
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
        raise errors.ServiceUnavailable(f"Dask task {fut.key} was cancelled on its worker") from None


def _retrieve(fetch: asyncio.Future) -> None:
    """Mark an abandoned fetch's outcome as seen (no "exception was never retrieved" warning)."""
    if not fetch.cancelled():
        fetch.exception()
