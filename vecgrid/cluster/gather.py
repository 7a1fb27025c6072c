"""Run calls concurrently and get all their results — or the first failure, with nothing left behind.

``asyncio.gather`` alone leaves the other calls running when one fails, and a failure that lands
after the first one is never retrieved ("Task exception was never retrieved" at garbage
collection).  Catching ``BaseException`` around it to turn failures into errors also turns a
cancel (a client gone, a Dask task cancelled, a stop) into an error reply.  :func:`gather_all`
does neither: on any failure of a call — or a cancel of the caller — it cancels every call,
awaits them all (so their outcomes are retrieved and none runs on), then re-raises what ended it,
``CancelledError`` included.  The shard leader's fan-out and the proxy's use it.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Iterable, TypeVar

T = TypeVar("T")


async def gather_all(calls: Iterable[Awaitable[T]]) -> list[T]:
    """The results of ``calls`` in order; on the first failure (or a cancel) every call is cancelled
    and awaited before the failure propagates.  Futures and tasks among ``calls`` are used as they
    are (a caller can tell which one failed by its ``exception()``)."""
    tasks = [asyncio.ensure_future(c) for c in calls]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
