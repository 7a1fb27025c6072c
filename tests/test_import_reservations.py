"""A bulk import reserves its segments (Importing records under a lease it renews) before it writes their
files, so the garbage collector never removes a file of an import in flight, however long the import runs
— in the coordinator's process or in ``vecgrid import`` beside it — and collects the files of an import
that was abandoned once its lease went stale and the retention passed.  Nothing reads an Importing
segment as data: a count or a target built during an import sees none of it.  Driven sweep by sweep on
clocks the test moves, in process."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from vecgrid import errors
from vecgrid.cluster.datacoord.gc import GarbageCollector
from vecgrid.cluster.querycoord.meta.target_manager import TargetManager, segment_refs
from vecgrid.config import Settings
from vecgrid.proto import common_pb2
from vecgrid.cluster.datanode import bulk_import as bulk_import_module
from vecgrid.storage import segment_files
from vecgrid.cluster.datanode.bulk_import import ImportOptions, bulk_import, import_sources
from vecgrid.storage.catalog import arrow_schema
from vecgrid.cluster.datanode.import_sources import open_sources
from vecgrid.storage.layout import DataDir
from tests.querynode_support import catalog, random_table

RETENTION = 100.0
LEASE_TTL = 50.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class SlowSources:
    """The files of an import, read in small batches with ``between(i)`` called before batch ``i > 0``
    (where a long import spends its time: the test moves the collector's clock there)."""

    def __init__(self, sources, between, batch_rows: int = 50) -> None:
        self._sources, self._between, self._batch_rows = sources, between, batch_rows
        self.files, self.schema, self.num_rows, self.layout = (sources.files, sources.schema, sources.num_rows,
                                                               sources.layout)

    def batches(self, batch_rows: int | None = None):
        if batch_rows is not None:   # the first rows, read to infer a schema
            yield from self._sources.batches(batch_rows=batch_rows)
            return
        for i, batch in enumerate(self._sources.batches(batch_rows=self._batch_rows)):
            if i:
                self._between(i)
            yield batch


def parquet(tmp_path: Path, n: int = 300) -> str:
    table, *_ = random_table(n, 7, "pk", False)
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path)
    return str(path)


def settings_of(data_dir: Path) -> Settings:
    return Settings.load(env={}, overrides={"common.data_dir": str(data_dir), "datacoord.gc_retention_s": RETENTION})


def stored(root: str) -> set[str]:
    return {f.path for f in segment_files.list_stored_files(root)}


class Watch:
    """Between batches: two GC sweeps a retention apart, and what a count and a target see of the import."""

    def __init__(self, cat, store, gc: GarbageCollector, clock: Clock, root: str) -> None:
        self.cat, self.store, self.gc, self.clock, self.root = cat, store, gc, clock, root
        self.sweeps, self.files_seen, self.visible = [], set(), []

    def __call__(self, i: int) -> None:
        self.files_seen |= stored(self.root)
        self.sweeps.append(self.gc.sweep(set()))
        self.clock.now += RETENTION + 1
        self.sweeps.append(self.gc.sweep(set()))
        if self.cat.has_collection("default", "slow"):
            coll = self.cat.describe_collection("default", "slow")
            target = TargetManager(self.store, self.cat).build(coll.id, coll.partition_ids)
            self.visible.append((self.cat.flushed_rows(coll.id), sorted(segment_refs(target)),
                                 [s.ID for s in self.cat.list_segments(coll.id, states=[common_pb2.Flushed])]))


def check_published(cat, summary: dict, rows: int) -> None:
    assert summary["num_rows"] == rows
    assert cat.flushed_rows(summary["collection_id"]) == rows
    for seg in summary["segments"]:
        segment_files.read_segment(cat.segment_files_record(seg["segment_id"]))   # every file there, verified
    states = {s.state for s in cat.list_segments(summary["collection_id"])}
    assert states == {common_pb2.Flushed}


def kept_through_the_sweeps(watch, cat, summary) -> None:
    """Segments were written while the collector's clock ran, no sweep removed or hid any of them, and the
    import published its rows and gave back its lease."""
    assert len(watch.files_seen) >= 2
    assert [s.removed for s in watch.sweeps if s.removed] == []
    assert watch.visible and all(v == (0, [], []) for v in watch.visible), watch.visible
    check_published(cat, summary, 300)
    assert cat.import_leases() == {}


def test_a_long_import_in_the_coordinator_keeps_its_files_and_shows_nothing_until_published(tmp_path):
    data_dir = tmp_path / "data"
    store, cat = catalog(str(data_dir))
    try:
        root = DataDir(str(data_dir)).segment_root
        clock = Clock(1000.0)
        watch = Watch(cat, store, GarbageCollector(cat, settings_of(data_dir), set, clock=clock), clock, root)
        summary = import_sources(cat, root, SlowSources(open_sources([parquet(tmp_path)]), watch),
                                 ImportOptions(collection="slow", primary_key="pk", segment_rows=100))
        kept_through_the_sweeps(watch, cat, summary)
    finally:
        store.close()


def test_a_long_import_by_the_cli_beside_a_live_coordinator_keeps_its_files(tmp_path, monkeypatch):
    """``vecgrid import`` opens its own store and catalog on the data dir (another process in life); the
    coordinator's collector sees the import's reservations through the shared metadata store."""
    data_dir = tmp_path / "data"
    store, cat = catalog(str(data_dir))   # the live coordinator's
    try:
        root = DataDir(str(data_dir)).segment_root
        clock = Clock(1000.0)
        watch = Watch(cat, store, GarbageCollector(cat, settings_of(data_dir), set, clock=clock), clock, root)
        real_open = bulk_import_module.open_sources
        monkeypatch.setattr(bulk_import_module, "open_sources", lambda files: SlowSources(real_open(files), watch))
        summary = bulk_import(str(data_dir), [parquet(tmp_path)],
                              ImportOptions(collection="slow", primary_key="pk", segment_rows=100, shards=2))
        kept_through_the_sweeps(watch, cat, summary)
    finally:
        store.close()


def test_an_import_whose_lease_expired_publishes_nothing(tmp_path):
    """The collector judged the import abandoned (its lease went stale): its reservations are Dropped,
    and the import, alive after all, finds out and undoes itself instead of publishing files the
    collector may remove."""
    data_dir = tmp_path / "data"
    store, cat = catalog(str(data_dir))
    try:
        root = DataDir(str(data_dir)).segment_root
        wall = Clock(2_000_000_000.0)
        gc = GarbageCollector(cat, settings_of(data_dir), set, clock=Clock(1000.0), wall_clock=wall)

        def stall(i: int) -> None:
            if i == 3:
                wall.now += 10 * 24 * 3600   # the import's renewals stopped for days, as the collector sees it
                gc.sweep(set())

        with pytest.raises(errors.ServiceUnavailable, match="lease"):
            import_sources(cat, root, SlowSources(open_sources([parquet(tmp_path)]), stall),
                           ImportOptions(collection="slow", primary_key="pk", segment_rows=100))
        assert not cat.has_collection("default", "slow")
        assert cat.import_leases() == {}
    finally:
        store.close()


@pytest.fixture
def existing(tmp_path):
    """A collection with data, and a catalog and collector over its data dir (clocks the test moves)."""
    data_dir = tmp_path / "data"
    bulk_import(str(data_dir), [parquet(tmp_path, 100)], ImportOptions(collection="base", primary_key="pk"))
    store, cat = catalog(str(data_dir))
    clock, wall = Clock(1000.0), Clock(2_000_000_000.0)
    gc = GarbageCollector(cat, settings_of(data_dir), set, clock=clock, wall_clock=wall)
    yield cat, gc, clock, wall, DataDir(str(data_dir)).segment_root
    store.close()


def reserve_and_write(cat, root: str, lease: str, now: float):
    """What an import does for one segment: reserve it under its lease, then write its files."""
    coll = cat.describe_collection("default", "base")
    seg = cat.reserve_import_segment(lease, coll.id, coll.default_partition.partitionID, coll.vchannels[0], now=now)
    assert seg.state == common_pb2.Importing
    files = segment_files.write_segment(root, coll.id, seg.partitionID, seg.ID, arrow_schema(coll).empty_table())
    return seg, {files.data.path}


def test_an_abandoned_import_is_collected_once_its_lease_is_stale_and_the_retention_passed(existing):
    cat, gc, clock, wall, root = existing
    cat.open_import_lease("killed", owner="a process that will be killed", ttl_s=LEASE_TTL, now=wall.now)
    seg, paths = reserve_and_write(cat, root, "killed", wall.now)
    kept = stored(root)
    for _ in range(4):   # the process still renews: kept, whatever the retention
        clock.now += 10 * RETENTION
        wall.now += LEASE_TTL / 2
        cat.renew_import_lease("killed", now=wall.now)
        sweep = gc.sweep(set())
        assert sweep.removed == [] and not set(sweep.unnamed) & paths
    assert cat.get_segment(seg.ID).state == common_pb2.Importing
    # the process is killed: no renewal any more
    wall.now += LEASE_TTL + 1
    sweep = gc.sweep(set())
    assert sweep.expired == [seg.ID] and sweep.removed == []
    assert cat.get_segment(seg.ID).state == common_pb2.Dropped   # abandoned: no longer reserved
    assert cat.import_leases() == {}
    clock.now += RETENTION - 1
    assert gc.sweep(set()).removed == []                        # its files wait a retention still
    clock.now += 1
    sweep = gc.sweep(set())
    assert set(sweep.removed) == paths and sweep.purged == [seg.ID]
    assert stored(root) == kept - paths
    with pytest.raises(errors.SegmentNotFound):
        cat.get_segment(seg.ID)


def test_a_released_lease_drops_what_it_did_not_publish(existing):
    cat, gc, clock, wall, root = existing
    cat.open_import_lease("failed", owner="an import that fails", ttl_s=LEASE_TTL, now=wall.now)
    seg, _ = reserve_and_write(cat, root, "failed", wall.now)
    assert cat.release_import_lease("failed") == [seg.ID]
    assert cat.get_segment(seg.ID).state == common_pb2.Dropped
    assert cat.import_leases() == {}
    with pytest.raises(errors.ServiceUnavailable):
        cat.renew_import_lease("failed", now=wall.now)


def test_a_publish_racing_the_expiry_of_its_reservation_publishes_nothing(existing, tmp_path, monkeypatch):
    """The collector (another process: its own catalog on the store) drops the reservation between the
    import's checks and its commit: the commit is guarded by the reservation, so nothing is published."""
    cat, gc, clock, wall, root = existing
    cat.open_import_lease("racing", owner="an import", ttl_s=LEASE_TTL, now=wall.now)
    coll = cat.describe_collection("default", "base")
    seg = cat.reserve_import_segment("racing", coll.id, coll.default_partition.partitionID, coll.vchannels[0],
                                     now=wall.now)
    table, *_ = random_table(10, 9, "pk", False)
    record = segment_files.write_segment(root, coll.id, seg.partitionID, seg.ID, table)
    store, collector = catalog(str(tmp_path / "data"))
    try:
        real_plan = cat._plan_publish

        def plan_then_expire(*args, **kw):
            plan = real_plan(*args, **kw)
            assert collector.expire_import_leases(now=wall.now + 10 * LEASE_TTL) == [seg.ID]
            return plan

        monkeypatch.setattr(cat, "_plan_publish", plan_then_expire)
        rows = cat.flushed_rows(coll.id)
        with pytest.raises(errors.ServiceUnavailable, match="no longer reserved"):
            cat.publish_segment_files(record, coll.vchannels[0])
        assert cat.get_segment(seg.ID).state == common_pb2.Dropped
        assert cat.flushed_rows(coll.id) == rows
    finally:
        store.close()


def test_a_failed_import_leaves_no_reservation_behind(existing, tmp_path):
    cat, gc, clock, wall, root = existing
    coll = cat.describe_collection("default", "base")
    before = [s.ID for s in cat.list_segments(coll.id)]
    table, *_ = random_table(300, 5, "pk", False)
    pq.write_table(table.slice(0, 150), tmp_path / "a.parquet")
    pq.write_table(table.slice(100), tmp_path / "b.parquet")   # rows 100..149 twice
    with pytest.raises(errors.ParameterInvalid, match="duplicate primary key"):
        import_sources(cat, root, open_sources([str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]),
                       ImportOptions(collection="base", primary_key="pk", segment_rows=60))
    assert [s.ID for s in cat.list_segments(coll.id)] == before
    assert cat.import_leases() == {}
    assert gc.sweep(set()).unnamed == []   # its files were deleted with it
