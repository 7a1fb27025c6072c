"""Compaction without a query cluster: the task handlers on their own, then DataCoord's policy and plans
over an in-process Dask cluster (threads, no process): L0 compaction writes a channel's deletes into the
delete logs of the sealed segments they hit and drops the L0 segments; mix compaction merges small
segments, leaves deleted rows out and keeps every row's timestamp; the triggers (L0 count, small
segments, deleted ratio), the explicit ``compact`` and the claims that keep a segment in one plan.

What a read sees is computed from the catalog's files (:func:`tests.compaction_support.visible_rows`):
a compaction must leave it exactly as it was."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio
from distributed import Client, LocalCluster

from vecgrid.cluster.datacoord.compaction import Compaction
from vecgrid.cluster.datanode.compaction import (DeleteSource, Deletes, L0Plan, MixPlan, compact_l0, compact_mix)
from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.config import Settings
from vecgrid.proto import common_pb2, data_coord_pb2
from vecgrid.storage import segment_files
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import Wal
from tests.compaction_support import delete_and_flush, rows_without_segments, visible_rows
from tests.conftest import poll_until
from tests.querynode_support import Dataset, catalog as open_catalog, import_collection

FLUSHED, DROPPED, L0 = common_pb2.Flushed, common_pb2.Dropped, data_coord_pb2.L0


# --- which delete hides which row --------------------------------------------------------------------

def test_a_delete_hides_only_rows_written_before_it():
    rows_pk = np.array([1, 2, 3, 3, 4], np.int64)
    rows_ts = np.array([10, 10, 10, 30, 10], np.uint64)
    # (1, 5): before the row; (2, 10): the same timestamp (an upsert's delete and its insert); (3, 20): hides
    # the first row of key 3, not the second (written again after it); (9, 50): no such key
    deletes = Deletes(np.array([1, 2, 3, 9], np.int64), np.array([5, 10, 20, 50], np.uint64))
    assert deletes.hidden(rows_pk, rows_ts).tolist() == [False, False, True, False, False]
    assert deletes.hiding_any(rows_pk, rows_ts).tolist() == [False, False, True, False]
    strings = Deletes(np.array(["b", "a"]), np.array([20, 20], np.uint64))
    assert strings.hidden(np.array(["a", "c", "b"]), np.array([10, 10, 30], np.uint64)).tolist() == [True, False, False]


# --- the data -------------------------------------------------------------------------------------------

@dataclass
class Env:
    ds: Dataset
    catalog: Catalog
    appenders: ChannelAppenders

    @property
    def cid(self) -> int:
        return self.ds.collection_id

    @property
    def root(self) -> str:
        return DataDir(self.ds.data_dir).segment_root

    def segments(self, channel: str | None = None, *, level: int | None = None, states=(FLUSHED,)):
        return [s for s in self.catalog.list_segments(self.cid, channel=channel, states=list(states))
                if level is None or (s.level == L0) == (level == L0)]

    def delete(self, pks_by_channel: dict[str, list[int]]) -> dict[str, int]:
        return delete_and_flush(self.catalog, self.appenders, self.root, self.cid, pks_by_channel)

    def keys_of(self, segment_id: int, rows: slice) -> list[int]:
        return self.ds.pks[self.ds.rows_of_segment(segment_id)[rows]].tolist()

    def visible(self):
        return rows_without_segments(visible_rows(self.catalog, self.cid))


@pytest.fixture
def env(tmp_path):
    # 2 channels of about 300 rows, in segments of 100 rows (and one of the rest)
    ds = import_collection(tmp_path, "cmp", metric="L2", index="FLAT", n=600, shards=2, segment_rows=100, seed=5)
    store, catalog = open_catalog(ds.data_dir)
    appenders = ChannelAppenders(Wal(DataDir(ds.data_dir).wal_root), catalog.allocate_timestamp,
                                 catalog.allocate_segment_id)
    yield Env(ds, catalog, appenders)
    appenders.close()
    store.close()


# --- the handlers ---------------------------------------------------------------------------------------

def test_l0_handler_rewrites_only_the_segments_its_deletes_hide_rows_of(env):
    ch = env.ds.channels[0]
    hit = env.segments(ch, level=data_coord_pb2.L1)[0].ID
    gone = env.keys_of(hit, slice(0, 5))
    l0 = env.delete({ch: gone + [10**12]})[ch]           # one key no segment holds
    sealed = env.segments(ch, level=data_coord_pb2.L1)
    plan = L0Plan(plan_id=1, collection_id=env.cid, channel=ch, pk_name="pk", root=env.root,
                  deletes=(DeleteSource(l0, -1, env.catalog.segment_files_record(l0)),),
                  sealed=tuple(env.catalog.segment_files_record(s.ID) for s in sealed),
                  new_ids={s.ID: 1000 + i for i, s in enumerate(sealed)})
    result = compact_l0(plan)
    (rewritten,) = result.rewritten
    assert rewritten.source_id == hit and rewritten.new_deletes == len(gone)
    old = env.catalog.segment_files_record(hit)
    new = rewritten.record
    assert new.segment_id == plan.new_ids[hit] and new.num_rows == old.num_rows
    assert bytes(segment_files.get_file(new.root, new.data)) == bytes(segment_files.get_file(old.root, old.data))
    deltalog = segment_files.read_deltalog(new)
    assert sorted(deltalog.column("pk").to_pylist()) == sorted(gone)


def test_l0_handler_skips_deletes_the_segments_own_log_already_applies(env):
    """A flush writes a range's deletes both into the L0 segment and into the delete log of the segment
    sealed from that range: such a segment needs no rewrite."""
    ch = env.ds.channels[0]
    seg = env.segments(ch)[0]
    record = env.catalog.segment_files_record(seg.ID)
    keys = env.keys_of(seg.ID, slice(0, 3))
    ts = env.catalog.allocate_timestamp()
    own = segment_files.write_deltalog(dataclasses.replace(record, segment_id=555), keys, [ts] * 3)
    # the same deletes as an L0 segment of the channel
    l0_record = segment_files.write_segment(env.root, env.cid, -1, 556, segment_files.read_segment(record).slice(0, 0),
                                            deltalog=(keys, [ts] * 3))
    plan = L0Plan(plan_id=2, collection_id=env.cid, channel=ch, pk_name="pk", root=env.root,
                  deletes=(DeleteSource(556, -1, l0_record),), sealed=(own,), new_ids={555: 557})
    assert compact_l0(plan).rewritten == ()


def test_mix_handler_merges_leaves_deleted_rows_out_and_keeps_timestamps(env):
    ch = env.ds.channels[1]
    sources = env.segments(ch)
    by_l0 = env.keys_of(sources[0].ID, slice(0, 7)) + env.keys_of(sources[2].ID, slice(50, 52))
    l0 = env.delete({ch: by_l0})[ch]
    before = env.visible()
    records = tuple(env.catalog.segment_files_record(s.ID) for s in sources)
    plan = MixPlan(plan_id=3, collection_id=env.cid, partition_id=sources[0].partitionID, channel=ch, pk_name="pk",
                   root=env.root, sources=records,
                   deletes=(DeleteSource(l0, -1, env.catalog.segment_files_record(l0)),), result_id=4242)
    result = compact_mix(plan)
    rows = sum(s.num_of_rows for s in sources)
    assert (result.rows_in, result.rows_out) == (rows, rows - len(by_l0))
    table = segment_files.read_segment(result.record)
    assert result.record.deltalog is None
    got = {pk: (ts, tuple(v)) for pk, ts, v in zip(*(table.column(c).to_pylist() for c in ("pk", "Timestamp", "vec")))}
    mine = {pk: rows for pk, rows in before.items() if pk in got or pk in by_l0}
    assert not set(by_l0) & set(got)
    assert {pk: [row] for pk, row in got.items()} == {pk: rows for pk, rows in mine.items() if pk not in by_l0}
    assert set(table.column("Timestamp").to_pylist()) == {env.ds.import_ts}


# --- the policy and its plans on Dask -------------------------------------------------------------------

@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def dask_client():
    async with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, asynchronous=True,
                            dashboard_address=None) as cluster, Client(cluster, asynchronous=True) as client:
        yield client


def compaction_of(env: Env, client: Client, **overrides) -> tuple[Compaction, list[int]]:
    settings = Settings.load(env={}, overrides={"datacoord.check_interval_s": 0.05, **overrides})
    pulled: list[int] = []
    return Compaction(settings, env.catalog, client, env.root, pulled.append), pulled


on_module_loop = pytest.mark.asyncio(loop_scope="module")
_HOLD = threading.Event()


def _hold_the_worker() -> None:
    _HOLD.wait(60)


async def _scheduler_keys(client: Client) -> dict[str, str]:
    return await client.run_on_scheduler(lambda dask_scheduler: {str(k): t.state
                                                                 for k, t in dask_scheduler.tasks.items()})


@on_module_loop
async def test_l0_compaction_runs_once_a_channel_has_enough_l0_segments(env, dask_client):
    ch0, ch1 = env.ds.channels
    s0 = env.segments(ch0)
    first = env.delete({ch0: env.keys_of(s0[0].ID, slice(0, 4)), ch1: env.keys_of(env.segments(ch1)[0].ID,
                                                                                 slice(0, 2))})
    second = env.delete({ch0: env.keys_of(s0[1].ID, slice(10, 13))})
    before = env.visible()
    compaction, pulled = compaction_of(env, dask_client, **{"datacoord.l0_compaction_min_segments": 2,
                                                           "datacoord.compaction_min_segments": 100})
    compaction.start()
    try:
        await poll_until(lambda: not env.segments(ch0, level=L0), 30, 0.05, "the L0 segments of channel 0 dropped")
        await poll_until(lambda: compaction.completed >= 1 and not compaction.running(), 30, 0.05, "the plan ended")
    finally:
        await compaction.stop()
    assert compaction.failures == 0, compaction.last_error
    assert [s.ID for s in env.segments(ch1, level=L0)] == [first[ch1]]   # one L0 segment: below the threshold
    hit = {s0[0].ID, s0[1].ID}
    assert {s.ID for s in env.segments(ch0, states=(DROPPED,))} == {first[ch0], second[ch0]} | hit
    new = [s for s in env.segments(ch0) if s.ID not in {x.ID for x in s0}]
    # each rewritten segment replaces one source; the L0 segments are dropped by the same transaction
    assert sorted(src for s in new for src in s.compactionFrom if src in hit) == sorted(hit)
    assert {src for s in new for src in s.compactionFrom} == hit | {first[ch0], second[ch0]}
    assert all(len(s.deltalogs) == 1 for s in new)
    assert env.visible() == before
    assert pulled == [env.cid]


@on_module_loop
async def test_an_l0_rewrite_keeps_the_index_files_of_the_live_index(env, dask_client):
    ch = env.ds.channels[0]
    seg = env.segments(ch)[0]
    vec = env.ds.vec_fid
    (index,) = env.catalog.describe_index(env.cid)
    info = segment_files.put_file(env.root, segment_files.index_path(env.cid, seg.partitionID, seg.ID, vec),
                                  b"an index file")
    env.catalog.add_index_file(seg.ID, vec, info, index_id=index.indexID)
    env.delete({ch: env.keys_of(seg.ID, slice(0, 2))})
    compaction, _ = compaction_of(env, dask_client, **{"datacoord.l0_compaction_min_segments": 1,
                                                      "datacoord.compaction_min_segments": 100})
    compaction.start()
    try:
        await poll_until(lambda: not env.segments(ch, level=L0) and not compaction.running(), 30, 0.05,
                         "the L0 plan published")
    finally:
        await compaction.stop()
    (rewritten,) = [s for s in env.segments(ch) if seg.ID in s.compactionFrom]
    (build,) = env.catalog.list_segment_indexes(env.cid, segment_id=rewritten.ID)
    assert build.indexID == index.indexID
    record = env.catalog.segment_files_record(rewritten.ID)
    assert record.indexes[vec].path == segment_files.index_path(env.cid, seg.partitionID, rewritten.ID, vec)
    assert bytes(segment_files.get_file(record.root, record.indexes[vec])) == b"an index file"


@on_module_loop
async def test_mix_compaction_by_count_merges_small_segments_and_drops_deleted_rows(env, dask_client):
    ch0, ch1 = env.ds.channels
    gone = env.keys_of(env.segments(ch0)[2].ID, slice(0, 9))
    env.delete({ch0: gone})
    before = env.visible()
    sources = {ch: env.segments(ch, level=data_coord_pb2.L1) for ch in (ch0, ch1)}
    compaction, _ = compaction_of(env, dask_client, **{"datacoord.compaction_min_segments": 3})
    compaction.start()
    try:
        await poll_until(lambda: all(len(env.segments(ch, level=data_coord_pb2.L1)) == 1 for ch in (ch0, ch1))
                         and not compaction.running(), 30, 0.05, "one segment per channel")
    finally:
        await compaction.stop()
    assert compaction.failures == 0, compaction.last_error
    for ch in (ch0, ch1):
        (merged,) = env.segments(ch, level=data_coord_pb2.L1)
        assert sorted(merged.compactionFrom) == sorted(s.ID for s in sources[ch])
        assert not len(merged.deltalogs)
        assert merged.num_of_rows == sum(s.num_of_rows for s in sources[ch]) - (len(gone) if ch == ch0 else 0)
    assert env.visible() == before
    assert not set(gone) & set(before)


@on_module_loop
async def test_deleted_ratio_rewrites_a_segment_without_its_deleted_rows(env, dask_client):
    ch = env.ds.channels[0]
    victim = env.segments(ch)[1]
    count = len(env.segments(ch))
    env.delete({ch: env.keys_of(victim.ID, slice(0, 30))})     # 30 % of its rows
    before = env.visible()
    compaction, _ = compaction_of(env, dask_client, **{"datacoord.l0_compaction_min_segments": 1,
                                                      "datacoord.compaction_min_segments": 100})
    compaction.start()
    try:
        # the L0 plan writes the deletes into the segment's delete log; the ratio then rewrites it
        await poll_until(lambda: any(s.num_of_rows == 70 for s in env.segments(ch)) and not compaction.running(),
                         30, 0.05, "the segment rewritten without its deleted rows")
    finally:
        await compaction.stop()
    assert compaction.failures == 0, compaction.last_error
    assert len(env.segments(ch, level=data_coord_pb2.L1)) == count and not env.segments(ch, level=L0)
    (rewritten,) = [s for s in env.segments(ch) if s.num_of_rows == 70]
    assert not len(rewritten.deltalogs)
    assert env.visible() == before


@on_module_loop
async def test_explicit_compact_merges_everything_and_returns_once_published(env, dask_client):
    ch0, ch1 = env.ds.channels
    env.delete({ch0: env.keys_of(env.segments(ch0)[0].ID, slice(0, 5))})
    env.delete({ch1: env.keys_of(env.segments(ch1)[2].ID, slice(0, 5))})
    rows = {ch: sum(s.num_of_rows for s in env.segments(ch, level=data_coord_pb2.L1)) for ch in (ch0, ch1)}
    before = env.visible()
    compaction, pulled = compaction_of(env, dask_client)   # default thresholds: the policy would do nothing
    compaction_id = await compaction.compact(env.cid)
    for ch in (ch0, ch1):
        assert not env.segments(ch, level=L0)
        (merged,) = env.segments(ch, level=data_coord_pb2.L1)
        assert merged.num_of_rows == rows[ch] - 5 and not len(merged.deltalogs)
    assert env.visible() == before
    summary = compaction.summaries[compaction_id]
    assert {p["kind"] for p in summary["plans"]} == {"l0", "mix"}
    assert set(pulled) == {env.cid}
    # nothing left to do: a second call plans nothing
    again = await compaction.compact(env.cid)
    assert compaction.summaries[again]["plans"] == []


@pytest.mark.slow  # waits out a late task (2.1 s): make test runs it
@on_module_loop
async def test_a_segment_is_in_one_plan_and_a_late_task_is_submitted_again(env, dask_client):
    """The one worker thread is held: the plan's first attempt passes its deadline and is submitted again;
    rounds meanwhile plan nothing with the claimed segments."""
    _HOLD.clear()
    blocker = dask_client.submit(_hold_the_worker, pure=False, key="blocker")

    async def holding() -> bool:
        return (await _scheduler_keys(dask_client)).get("blocker") == "processing"
    await poll_until(holding, 10, 0.05, "the worker thread held")
    compaction, _ = compaction_of(env, dask_client, **{"datacoord.compaction_min_segments": 3,
                                                      "datacoord.task_timeout_s": 2.0})
    try:
        await compaction.round()
        plans = compaction.running(env.cid)
        assert len(plans) == 2 and not set.intersection(*(set(p.claims) for p in plans))
        for _ in range(3):
            await compaction.round()
            assert {p.id for p in compaction.running(env.cid)} == {p.id for p in plans}

        async def retried() -> bool:
            return any(k.endswith("-retry-1") for k in await _scheduler_keys(dask_client))
        await poll_until(retried, 10, 0.05, "a second attempt of a late task")
        _HOLD.set()
        await poll_until(lambda: not compaction.running(), 30, 0.05, "the plans ended")
    finally:
        _HOLD.set()
        await compaction.stop()
        blocker.release()
    assert compaction.failures == 0, compaction.last_error
    assert all(len(env.segments(ch)) == 1 for ch in env.ds.channels)



@on_module_loop
async def test_a_failing_plan_is_a_health_problem_until_a_plan_succeeds(env, dask_client):
    ch = env.ds.channels[0]
    victim = env.catalog.segment_files_record(env.segments(ch)[0].ID)
    data = Path(env.root, victim.data.path)
    hidden = data.with_name("elsewhere.parquet")
    data.rename(hidden)
    compaction, _ = compaction_of(env, dask_client, **{"datacoord.compaction_min_segments": 3})
    compaction.start()
    try:
        await poll_until(lambda: compaction.health_problems(), 30, 0.05, "the failing plan reported")
        (problem,) = compaction.health_problems()
        assert f"collection {env.cid}" in problem and victim.data.path in problem
        assert len(env.segments(ch)) > 1                 # nothing published for the failing plan
        hidden.rename(data)                              # the next round's plan succeeds
        await poll_until(lambda: len(env.segments(ch)) == 1 and not compaction.health_problems(), 30, 0.05,
                         "the plan retried and succeeded")
    finally:
        await compaction.stop()
    assert compaction.failures >= 1
