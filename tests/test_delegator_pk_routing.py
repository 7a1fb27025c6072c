"""Deletes on a channel reach only the sealed segments whose pk statistics may hold the keys."""

from __future__ import annotations

import asyncio

import numpy as np

from vecgrid.cluster.querynode.pk_stats import PkStats
from tests.delegator_support import close, make_cluster


def test_bloom_filter_never_misses_and_rarely_passes_absent_keys():
    held = np.arange(0, 200_000, 2, dtype=np.int64)
    stats = PkStats(held)
    assert stats.might_contain(held).all()
    absent = np.arange(1, 200_000, 2, dtype=np.int64)
    assert stats.might_contain(absent).mean() < 0.05
    assert not stats.might_contain(np.array([-5, 10**9])).any()  # outside the key range
    words = np.array([f"k{i}" for i in range(1000)])
    s = PkStats(words)
    assert s.might_contain(words).all()
    assert s.might_contain(np.array([f"x{i}" for i in range(1000)])).mean() < 0.05
    assert not PkStats(np.zeros(0, np.int64)).might_contain(np.array([1])).any()


async def test_a_delete_goes_only_to_the_segments_holding_its_keys(tmp_path):
    c = await make_cluster(tmp_path, "L2")
    try:
        delegator = c.leader.node.delegator_for(c.ds.channels[0])
        assert set(delegator.deltas.pk_stats) == set(c.ds.segment_ids)
        target = c.ds.segment_ids[1]  # on the worker
        victim = int(c.full.pks[c.ds.rows_of_segment(target)[0]])
        c.delete([victim])
        c.tick()
        assert await asyncio.to_thread(delegator.pipeline.wait_tsafe, c.ts, 10)
        segments = {s.segment_id: s for s in [*c.leader.node.segments.list(), *c.worker.node.segments.list()]}
        touched = {sid for sid, seg in segments.items() if len(seg.runtime_deletes)}
        assert touched == {target}
    finally:
        await close(c)
