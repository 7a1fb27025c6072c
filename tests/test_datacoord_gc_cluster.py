"""Garbage collection beside a serving cluster, with the QueryCoord's targets: a loaded segment replaced
by a compaction (a new segment with its rows, published with ``compactionFrom``) keeps its files while a
current or next target names it; once the targets moved on its files go after the retention and its
record is purged; every file of a served segment stays, and searches still equal numpy."""

from __future__ import annotations

import asyncio

import pytest

from vecgrid import errors
from vecgrid.cluster.datacoord.gc import GarbageCollector
from vecgrid.cluster.querycoord.meta.target_manager import Scope
from vecgrid.deploy import EmbeddedCluster
from vecgrid.storage import segment_files
from tests.conftest import poll_until
from tests.querycoord_support import Coord, assert_search_matches, fast_settings
from tests.querynode_support import import_collection

pytest.importorskip("faiss")
pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


def segments_in_targets(qc) -> set[int]:
    """What the integrator wires in: every segment of a current or next target."""
    return {sid for cid in qc.collections.ids() for sid in qc.targets.segments(cid, Scope.CURRENT_OR_NEXT)}


async def test_a_compacted_away_segment_stays_while_targeted_then_goes(tmp_path):
    ds = import_collection(tmp_path, "gccluster", metric="L2", index="FLAT", n=600, shards=2, segment_rows=150,
                           seed=13)
    settings = fast_settings(ds.data_dir, workers=2)
    settings.set("querycoord.next_target_interval_s", 0.5)
    settings.set("datacoord.gc_retention_s", 1.0)
    settings.set("datacoord.gc_interval_s", 0.1)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    gc = None
    try:
        qc, coord = cluster.coord, Coord(cluster.addresses.grpc, cluster.coord)
        cat = qc.catalog
        await coord.load(ds.collection_id)
        await assert_search_matches(coord, ds)
        gc = GarbageCollector(cat, settings, lambda: segments_in_targets(qc))
        gc.start()

        victim = ds.segment_ids[0]
        old = cat.segment_files_record(victim)
        victim_files = {f.path for f in cat.segment_files(victim)}
        seg = cat.get_segment(victim)
        rows = segment_files.read_segment(old)                  # every column, row timestamps included
        new = segment_files.write_segment(ds.data_dir, ds.collection_id, seg.partitionID, cat.allocate_segment_id(),
                                          rows)
        cat.publish_segment_files(new, seg.insert_channel, compaction_from=[victim])

        seen_targeted = 0
        while victim in segments_in_targets(qc):               # a target still routes searches to it
            assert victim_files <= {f.path for f in segment_files.list_stored_files(ds.data_dir)}
            seen_targeted += 1
            await asyncio.sleep(0.05)
        assert seen_targeted > 0

        def collected():
            try:
                cat.get_segment(victim)
            except errors.SegmentNotFound:
                return not victim_files & {f.path for f in segment_files.list_stored_files(ds.data_dir)}
            return False
        await poll_until(collected, 60, what="the compacted-away segment removed and purged")
        assert gc.failures == {}
        stored = {f.path for f in segment_files.list_stored_files(ds.data_dir)}
        for sid in [*ds.segment_ids[1:], new.segment_id]:
            assert {f.path for f in cat.segment_files(sid)} <= stored
        await poll_until(lambda: victim not in {s.ID for _, s in qc.dist.segments(ds.collection_id)}
                         and new.segment_id in {s.ID for _, s in qc.dist.segments(ds.collection_id)}, 60,
                         what="the new segment served in place of the old")
        await assert_search_matches(coord, ds)
    finally:
        if gc is not None:
            await asyncio.wait_for(gc.stop(), 30)
        await asyncio.wait_for(cluster.stop(), 120)
