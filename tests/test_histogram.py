"""CumulativeHistogram: each bound's count is the observations at or below it, whatever order they came in."""

from __future__ import annotations

import random

from vecgrid.common.histogram import DEFAULT_BUCKETS, CumulativeHistogram


def test_each_bound_counts_the_observations_at_or_below_it():
    rng = random.Random(3)
    values = [rng.choice(DEFAULT_BUCKETS) for _ in range(300)] + [rng.uniform(0, 12) for _ in range(1000)] \
        + [0.0, 20.0, float("nan")]
    h = CumulativeHistogram()
    for v in values:
        h.observe(v)
    snap = h.snapshot()
    assert snap["buckets"] == [[b, sum(1 for v in values if v <= b)] for b in DEFAULT_BUCKETS]
    assert snap["count"] == len(values)
    assert snap["buckets"][-1][1] == len(values) - 2 - sum(1 for v in values if 10.0 < v <= 12.0)
