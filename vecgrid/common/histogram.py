"""A cumulative latency histogram as plain numbers, for roles that must not depend on a metrics library.

The roles count (query nodes, the QueryCoord, the WAL appenders); the coordinator's ``/metrics``
re-exports the numbers as Prometheus histograms, and the dashboard reads them from snapshots.
Buckets are cumulative (observations <= each upper bound), as Prometheus wants them.

State: the counters are guarded by the instance's lock (observers may run on several threads).
"""

from __future__ import annotations

import bisect
import itertools
import threading
from typing import Any

#: seconds; Prometheus's default buckets
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)


class CumulativeHistogram:
    def __init__(self, buckets: tuple[float, ...] = DEFAULT_BUCKETS) -> None:
        self.bounds = tuple(buckets)
        self._lock = threading.Lock()
        # observations per bucket, not cumulative (one bucket counted per observation, found by bisection;
        # a search observes once): the last one holds those above every bound
        self._counts = [0] * (len(self.bounds) + 1)
        self._count = 0
        self._sum = 0.0

    def observe(self, value: float) -> None:
        # the first bound >= value; NaN is under no bound
        at = bisect.bisect_left(self.bounds, value) if value == value else len(self.bounds)
        with self._lock:
            self._count += 1
            self._sum += value
            self._counts[at] += 1

    def snapshot(self) -> dict[str, Any]:
        """``{"buckets": [[bound, cumulative count], ...], "count": n, "sum": s}`` (JSON- and msgpack-able)."""
        with self._lock:
            cumulative = list(itertools.accumulate(self._counts[:-1]))
            return {"buckets": [[b, c] for b, c in zip(self.bounds, cumulative)],
                    "count": self._count, "sum": self._sum}
