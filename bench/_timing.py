"""Timing shared by the benchmarks: sides called in turn, call by call, in a new order every round."""

from __future__ import annotations

import random
import time
from typing import Awaitable, Callable

import numpy as np


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


async def side_figures(calls: dict[str, Callable[[int], Awaitable[None]]], nq: int, rounds: int) -> dict[str, float]:
    """Five warm-up rounds (connections, caches), then the sides in turn: ``<side>_qps_nq<nq>`` for a
    batch (``rounds`` calls each), ``<side>_p50_ms_nq1`` and ``_p99_ms_nq1`` for single queries
    (five times as many calls: percentiles need them)."""
    await alternating(calls, 5)
    out: dict[str, float] = {}
    for name, xs in (await alternating(calls, rounds if nq > 1 else 5 * rounds)).items():
        if nq > 1:
            out[f"{name}_qps_nq{nq}"] = round(nq * len(xs) / sum(xs), 1)
        else:
            out[f"{name}_p50_ms_nq1"] = round(float(np.percentile(xs, 50)) * 1e3, 3)
            out[f"{name}_p99_ms_nq1"] = round(float(np.percentile(xs, 99)) * 1e3, 3)
    return out
