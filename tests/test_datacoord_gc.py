"""Garbage collection keeps every file the catalog or a target names, and removes the others only once
they stayed unnamed for the retention period: files of failed attempts, of Dropped segments, of dropped
indexes; Dropped segment records are purged once their files are gone.  Driven sweep by sweep on a
clock the test moves, in process."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from vecgrid import errors
from vecgrid.cluster.datacoord.gc import GarbageCollector
from vecgrid.cluster.datacoord.index_builder import IndexBuilder
from vecgrid.cluster.datanode.index_build import build_segment_index
from vecgrid.cluster.index_builds import record_saved_indexes
from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.config import Settings
from vecgrid.storage import segment_files
from vecgrid.storage.catalog import arrow_schema
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import Wal
from tests.conftest import poll_until
from tests.datacoord_support import insert_and_flush
from tests.querynode_support import catalog, import_collection

pytest.importorskip("faiss")

RETENTION = 100.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def env(tmp_path):
    ds = import_collection(tmp_path, "gc", metric="L2", index="IVF_FLAT", index_params={"nlist": 8}, n=300,
                           shards=1, segment_rows=100, seed=4)
    store, cat = catalog(ds.data_dir)
    settings = Settings.load(env={}, overrides={"common.data_dir": ds.data_dir,
                                                "datacoord.gc_retention_s": RETENTION})
    clock = Clock()
    targets: set[int] = set()
    gc = GarbageCollector(cat, settings, lambda: set(targets), clock=clock)
    yield ds, cat, gc, clock, targets
    store.close()


def stored(ds) -> set[str]:
    return {f.path for f in segment_files.list_stored_files(ds.data_dir)}


def named_by_catalog(cat, ds) -> set[str]:
    return {f.path for sid in ds.segment_ids for f in cat.segment_files(sid)}


def orphan_segment(ds, cat) -> segment_files.SegmentFiles:
    """The files of a flush that failed before its publish: written, never recorded."""
    coll = cat.get_collection(ds.collection_id)
    table = arrow_schema(coll).empty_table()
    return segment_files.write_segment(ds.data_dir, coll.id, coll.default_partition.partitionID,
                                       cat.allocate_segment_id(), table)


def test_named_files_stay_and_orphans_go_only_after_the_retention(env):
    ds, cat, gc, clock, _ = env
    named = named_by_catalog(cat, ds)
    assert named and named <= stored(ds)
    orphan = orphan_segment(ds, cat)
    tmp = Path(ds.data_dir, orphan.dir, ".data.parquet.0123.tmp")   # a write in flight
    tmp.write_bytes(b"partial")
    tmp_rel = f"{orphan.dir}/{tmp.name}"

    first = gc.sweep(set())
    assert set(first.unnamed) == {orphan.data.path, tmp_rel} and first.removed == []
    clock.now += RETENTION - 1
    assert gc.sweep(set()).removed == []           # not yet: one second short
    assert {orphan.data.path, tmp_rel} <= stored(ds)
    clock.now += 1
    assert set(gc.sweep(set()).removed) == {orphan.data.path, tmp_rel}
    assert stored(ds) == named                     # everything named is still there
    assert not Path(ds.data_dir, orphan.dir).exists()
    for _ in range(3):                             # and stays, sweep after sweep
        clock.now += 10 * RETENTION
        assert gc.sweep(set()).removed == []
    assert stored(ds) == named
    for sid in ds.segment_ids:
        segment_files.read_segment(cat.segment_files_record(sid))   # every named file still verifies


def test_a_file_written_just_now_waits_a_whole_retention(env):
    """Long after the collector started, a flush writes its files: they are protected from when they were
    first seen unnamed, not from the collector's start; once published they are never removed."""
    ds, cat, gc, clock, _ = env
    gc.sweep(set())
    clock.now += 50 * RETENTION
    fresh = orphan_segment(ds, cat)
    gc.sweep(set())
    clock.now += RETENTION / 2
    assert fresh.data.path in gc.sweep(set()).unnamed
    cat.publish_segment_files(fresh, ds.channels[0])   # the flush publishes what it wrote
    clock.now += RETENTION
    result = gc.sweep(set())
    assert result.removed == [] and result.unnamed == []
    assert fresh.data.path in stored(ds)


def test_a_file_written_again_under_an_unnamed_name_gets_a_fresh_retention(env):
    """An index dropped and created again: the node saves the new index where the old, unnamed file lay
    (``index_<field>.bin``), and the coordinator records it a moment later.  The old file's clock must
    not carry over to the new file."""
    ds, cat, gc, clock, _ = env
    sid = ds.segment_ids[0]
    seg = cat.get_segment(sid)
    path = segment_files.index_path(ds.collection_id, seg.partitionID, sid, ds.vec_fid)
    segment_files.put_file(ds.data_dir, path, b"old index")
    gc.sweep(set())
    clock.now += RETENTION - 1
    assert path in gc.sweep(set()).unnamed
    segment_files.put_file(ds.data_dir, path, b"the new index, not recorded yet")
    clock.now += 1
    result = gc.sweep(set())
    assert result.removed == [] and path in result.unnamed
    assert Path(ds.data_dir, path).read_bytes() == b"the new index, not recorded yet"
    clock.now += RETENTION
    assert gc.sweep(set()).removed == [path]   # never recorded after all: it goes in its turn


def test_dropped_segments_stay_while_a_target_names_them_then_go_and_are_purged(env):
    ds, cat, gc, clock, targets = env
    victim, kept = ds.segment_ids[0], ds.segment_ids[1]
    files = {f.path for f in cat.segment_files(victim)}
    cat.drop_segment(victim)              # e.g. a compaction replaced it
    targets.add(victim)                   # the current target still routes searches to it
    gc.sweep(set(targets))
    clock.now += 5 * RETENTION
    result = gc.sweep(set(targets))
    assert result.removed == [] and result.purged == [] and files <= stored(ds)
    targets.clear()                       # the next target no longer names it
    first = gc.sweep(set(targets))
    assert files <= set(first.unnamed) and first.purged == []
    clock.now += RETENTION
    result = gc.sweep(set(targets))
    assert set(result.removed) == files and result.purged == [victim]
    with pytest.raises(errors.SegmentNotFound):
        cat.get_segment(victim)
    assert {f.path for f in cat.segment_files(kept)} <= stored(ds)


def test_a_dropped_segment_record_waits_for_its_files(env, monkeypatch):
    ds, cat, gc, clock, _ = env
    victim = ds.segment_ids[0]
    data = cat.segment_files(victim)[0].path
    cat.drop_segment(victim)
    gc.sweep(set())
    remove = segment_files.remove_stored_file

    def refuse(root, path):
        if path == data:
            raise PermissionError(13, "Permission denied", path)
        return remove(root, path)
    monkeypatch.setattr(segment_files, "remove_stored_file", refuse)
    clock.now += RETENTION
    result = gc.sweep(set())
    assert "Permission denied" in gc.failures[data] and result.purged == []
    assert data in stored(ds) and cat.get_segment(victim).ID == victim
    monkeypatch.undo()
    clock.now += 1
    result = gc.sweep(set())
    assert data in result.removed and result.purged == [victim] and gc.failures == {}


def test_index_files_of_a_dropped_index_go_after_the_retention(env):
    ds, cat, gc, clock, _ = env
    data = DataDir(ds.data_dir)
    wal = Wal(str(data.wal_root))
    appenders = ChannelAppenders(wal, cat.allocate_timestamp, cat.allocate_segment_id)
    try:
        inserted = insert_and_flush(cat, appenders, wal, data.segment_root, ds, ds.channels[0], n=50,
                                    key_offset=500_000)
    finally:
        appenders.close()
    (sid,) = inserted.segment_ids
    settings = Settings.load(env={}, overrides={"common.data_dir": ds.data_dir})
    ((p,), _) = IndexBuilder(cat, None, settings).pending()
    built = build_segment_index(dataclasses.replace(p.request, build_id=cat.allocate_ids(1)))
    overtaken = build_segment_index(dataclasses.replace(p.request, build_id=cat.allocate_ids(1)))
    assert record_saved_indexes(cat, sid, {p.field_id: p.index_id}, {p.field_id: built}) == 1
    gc.sweep(set())
    clock.now += RETENTION
    result = gc.sweep(set())
    assert result.removed == [overtaken.path]          # a build nobody recorded
    assert built.path in stored(ds)
    cat.drop_index(ds.collection_id, "vec")
    gc.sweep(set())
    assert built.path in stored(ds)
    clock.now += RETENTION
    assert gc.sweep(set()).removed == [built.path]
    assert {f.path for f in cat.segment_files(sid)} <= stored(ds)   # the segment's own files stay


async def test_the_loop_sweeps_on_its_interval_and_stops(env):
    ds, cat, _, _, _ = env
    settings = Settings.load(env={}, overrides={"common.data_dir": ds.data_dir, "datacoord.gc_retention_s": 0.0,
                                                "datacoord.gc_interval_s": 0.05})
    gc = GarbageCollector(cat, settings, set)
    orphan = orphan_segment(ds, cat)
    gc.start()
    try:
        await poll_until(lambda: orphan.data.path not in stored(ds), 10, 0.05, "the orphan removed by the loop")
        assert named_by_catalog(cat, ds) <= stored(ds)
    finally:
        await asyncio.wait_for(gc.stop(), 10)
    assert gc.loop_task is None


def test_an_index_template_stays_while_its_index_is_live_and_goes_after_it_is_dropped(env):
    ds, cat, gc, clock, _ = env
    (index,) = cat.index_definitions(ds.collection_id)
    path = segment_files.template_path(ds.collection_id, ds.vec_fid, index.indexID)
    segment_files.put_file(ds.data_dir, path, b"a trained template")
    gc.sweep(set())
    clock.now += RETENTION
    assert path not in gc.sweep(set()).removed and path in stored(ds)
    cat.drop_index(ds.collection_id, "vec")
    gc.sweep(set())
    assert path in stored(ds)                          # a retention first, as for any file
    clock.now += RETENTION
    assert gc.sweep(set()).removed == [path]
