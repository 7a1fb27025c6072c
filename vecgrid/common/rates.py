"""Per-second rates over a short window, as Milvus's ``ratelimitutil.RateCollector``.

Milvus's nodes report ``quota_metrics.Rms`` (NQ per second, consumed insert and delete bytes per
second) averaged over ``DefaultAvgDuration`` (3 s); QuotaCenter reads them to throttle writes and
reads.  A :class:`RateWindow` keeps one bucket per whole second and averages the last complete
``window_s`` seconds, so the figure does not jump with the fraction of the current second.

Owned by no thread: ``add`` and ``rate`` may be called from any thread (searches are observed on
a node's event loop, WAL records on a pipeline's consumer thread); one lock guards the buckets.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

DEFAULT_WINDOW_S = 3


class RateWindow:
    """Amount per second over the last ``window_s`` complete seconds."""

    def __init__(self, window_s: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = int(window_s or DEFAULT_WINDOW_S)
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[int, float] = {}   # whole second -> amount added in it

    def add(self, amount: float) -> None:
        second = int(self._clock())
        with self._lock:
            self._buckets[second] = self._buckets.get(second, 0.0) + amount
            if len(self._buckets) > self.window_s + 1:
                for old in [s for s in self._buckets if s < second - self.window_s]:
                    del self._buckets[old]

    def rate(self) -> float:
        now = int(self._clock())
        first = now - self.window_s
        with self._lock:
            total = sum(v for s, v in self._buckets.items() if first <= s < now)
        return total / self.window_s
