"""Timing shared by the benchmarks: sides called in turn, call by call, in a new order every round."""

from __future__ import annotations

import random
import time
from typing import Awaitable, Callable


async def alternating(calls: dict[str, Callable[[int], Awaitable[None]]], rounds: int) -> dict[str, list[float]]:
    """Seconds each call took, the sides alternating call by call (same background load), in a new
    order each round: a side that always came right after the same one would inherit its wake
    (faiss's OpenMP threads still spinning, the other process's reply finishing on the shared cores)."""
    out: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    shuffle = random.Random(7).shuffle
    for i in range(rounds):
        shuffle(order)
        for name in order:
            call = calls[name]
            t0 = time.perf_counter()
            await call(i)
            out[name].append(time.perf_counter() - t0)
    return out
