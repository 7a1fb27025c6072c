"""DataCoord's seal/flush policy over a real catalog and WAL (no cluster): thresholds, idle channels,
explicit flushes shared by concurrent callers, failures retried and reported, the hand-off of growing
memory, and rows an earlier process left in the log."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pytest

from vecgrid import errors
from vecgrid.cluster.datacoord import flush
from vecgrid.cluster.datacoord.component import DataCoord
from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.config import Settings
from vecgrid.proto import common_pb2, data_coord_pb2, schema_pb2
from vecgrid.storage import segment_files
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import Wal
from tests.conftest import poll_until
from tests.datacoord_support import Writer

DIM = 4


class QuerySide:
    """The QueryCoord as the flush sees it: target pulls asked for, and whether sealed copies serve."""

    def __init__(self) -> None:
        self.pulls: list[int] = []
        self.serving = False

    def pull_target(self, cid: int) -> None:
        self.pulls.append(cid)

    def sealed_copies_serve(self, cid, segments) -> bool:
        return self.serving


class Env:
    def __init__(self, root, **datacoord):
        self.data = DataDir(root)
        self.store = self.data.open_store()
        self.catalog = self.data.open_catalog(self.store, tso_key="tso/test")
        self.settings = Settings.load(env={}, overrides={"common.data_dir": str(root), **{
            f"datacoord.{k}": v for k, v in {"check_interval_s": 0.05, **datacoord}.items()}})
        self.appenders = ChannelAppenders(Wal(self.data.wal_root), self.catalog.allocate_timestamp,
                                          self.catalog.allocate_segment_id)
        self.query = QuerySide()
        self.dc = DataCoord(self.settings, self.catalog, self.appenders, self.data.segment_root,
                            pull_target=self.query.pull_target, sealed_copies_serve=self.query.sealed_copies_serve)

    def collection(self, name="c", shards=2):
        schema = schema_pb2.CollectionSchema(fields=[
            schema_pb2.FieldSchema(name="pk", data_type=schema_pb2.Int64, is_primary_key=True),
            schema_pb2.FieldSchema(name="v", data_type=schema_pb2.FloatVector,
                                   type_params=[common_pb2.KeyValuePair(key="dim", value=str(DIM))]),
        ])
        coll = self.catalog.create_collection("default", name, schema, shards_num=shards)
        return coll, Writer(self.appenders, self.catalog, coll.id)

    def published(self, cid, level=data_coord_pb2.L1):
        return [s for s in self.catalog.list_segments(cid, states=[common_pb2.Flushed]) if s.level == level]

    def rows(self, cid) -> list[int]:
        return sorted(pk for s in self.published(cid)
                      for pk in segment_files.read_segment(self.catalog.segment_files_record(s.ID)).column("pk")
                      .to_pylist())

    async def close(self):
        await self.dc.stop()
        self.appenders.close()
        self.store.close()


def rows(pks) -> pa.Table:
    pks = np.asarray(pks, np.int64)
    vectors = np.repeat(pks[:, None].astype(np.float32), DIM, axis=1)
    return pa.table({"pk": pks, "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM)})


@pytest.fixture
async def make_env(tmp_path):
    made = []

    async def make(**datacoord):
        env = Env(tmp_path, **datacoord)
        made.append(env)
        return env
    yield make
    for env in made:
        await env.close()


async def test_rows_threshold_seals_with_the_growing_ids_and_hands_off(make_env):
    env = await make_env(segment_max_rows=10, flush_idle_s=3600)
    coll, writer = env.collection(shards=1)
    channel = coll.vchannels[0]
    await env.dc.start()
    writer.insert(rows(range(6)))
    appender = env.appenders.require(channel)
    growing = [s.segment_id for s in appender.segments.open_segments()]
    await env.dc.flush_policy.round()
    assert env.published(coll.id) == []                 # 6 < 10 rows: still growing
    writer.insert(rows(range(6, 12)))
    await poll_until(lambda: env.published(coll.id), 10, what="a flush at 12 rows")
    (segment,) = env.published(coll.id)
    assert segment.ID == growing[0] and env.rows(coll.id) == list(range(12))
    assert env.query.pulls == [coll.id]
    assert appender.stats()[0] == 0 and appender.stats()[2] > 0   # sealed, but still growing on the leaders
    env.query.serving = True
    await poll_until(lambda: appender.stats()[2] == 0, 10, what="the hand-off")
    assert env.dc.flush_policy.handoffs_waiting == 0


async def test_idle_channel_is_flushed(make_env):
    env = await make_env(flush_idle_s=0.3)
    coll, writer = env.collection()
    await env.dc.start()
    writer.insert(rows(range(20)))
    await poll_until(lambda: env.rows(coll.id) == list(range(20)), 10, what="an idle flush")
    assert {s.insert_channel for s in env.published(coll.id)} == set(coll.vchannels)


async def test_explicit_flush_returns_published_segments_and_concurrent_calls_share(make_env, monkeypatch):
    env = await make_env(flush_idle_s=3600)
    coll, writer = env.collection()
    await env.dc.start()
    calls = []
    real = flush.flush_channel

    def counted(*args, **kwargs):
        calls.append(args[3])
        return real(*args, **kwargs)
    monkeypatch.setattr(flush, "flush_channel", counted)
    writer.insert(rows(range(50)))
    writer.delete([3, 4])
    # Both requests are made while each channel is busy (its flush lock held), so one flush covers both.
    # Left to the event loop, the second call's thread hops could end after the first call's seal; it then
    # flushed again, found nothing new and answered no segments for that channel.
    states = [env.dc.flush_policy._state(ch) for ch in coll.vchannels]
    for state in states:
        await state.lock.acquire()
    made = [state.requested for state in states]
    both = asyncio.gather(env.dc.flush(coll.id), env.dc.flush(coll.id))
    await poll_until(lambda: [state.requested for state in states] == [n + 2 for n in made], 10, 0.01,
                     "both requests made")
    for state in states:
        state.lock.release()
    first, second = await both
    published = {s.ID for s in env.catalog.list_segments(coll.id, states=[common_pb2.Flushed])}
    assert set(first) == published and set(second) == set(first)
    assert sorted(calls) == sorted(coll.vchannels)       # one flush per channel, shared by both calls
    assert env.rows(coll.id) == list(range(50))
    l0 = env.published(coll.id, data_coord_pb2.L0)
    assert sorted(pk for s in l0 for pk in
                  segment_files.read_deltalog(env.catalog.segment_files_record(s.ID)).column("pk").to_pylist()) == [3, 4]
    # a write acknowledged after a flush is in the next one, never lost between the two
    writer.insert(rows([100]))
    assert len(await env.dc.flush(coll.id)) == 1 and 100 in env.rows(coll.id)
    with pytest.raises(errors.CollectionNotFound):
        await env.dc.flush(987654)


async def test_failed_flush_is_raised_reported_and_retried(make_env, monkeypatch):
    env = await make_env(flush_idle_s=3600)
    coll, writer = env.collection(shards=1)
    channel = coll.vchannels[0]
    await env.dc.start()
    writer.insert(rows(range(10)))
    appender = env.appenders.require(channel)
    real = flush.flush_channel

    def broken(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(flush, "flush_channel", broken)
    with pytest.raises(errors.ServiceInternal, match="disk full"):
        await env.dc.flush(coll.id)
    assert env.published(coll.id) == [] and "disk full" in env.dc.health_reasons()[0]
    assert appender.stats()[0] == 0 and appender.stats()[2] > 0     # sealed by the failed attempt

    monkeypatch.setattr(flush, "flush_channel", real)            # the periodic round retries it
    await poll_until(lambda: env.rows(coll.id) == list(range(10)), 10, what="the retry")
    assert env.dc.health_reasons() == []
    env.query.serving = True
    await poll_until(lambda: appender.stats()[2] == 0, 10, what="the failed attempt's rows handed off too")


async def test_rows_left_by_an_earlier_process_are_flushed_when_idle(make_env):
    first = await make_env(flush_idle_s=3600)
    coll, writer = first.collection(shards=1)
    writer.insert(rows(range(7)))
    first.appenders.close()                              # that process is gone; its rows wait in the log
    second = await make_env(flush_idle_s=0.3)
    await second.dc.start()
    await poll_until(lambda: second.rows(coll.id) == list(range(7)), 10, what="the recovered rows flushed")


async def test_compaction_is_refused_until_a_part_serves_it(make_env):
    env = await make_env()
    coll, _ = env.collection()

    class Compaction:
        def __init__(self):
            self.running, self.asked = False, []

        def start(self):
            self.running = True

        async def stop(self):
            self.running = False

        async def compact(self, cid):
            self.asked.append(cid)
            return 7

    bare = await make_env()
    await bare.dc.start()
    with pytest.raises(errors.ServiceUnavailable, match="compaction is not enabled"):
        await bare.dc.compact(coll.id)
    part = Compaction()
    env.dc.add_part(part, compaction=True)
    await env.dc.start()
    assert part.running and await env.dc.compact(coll.id) == 7 and part.asked == [coll.id]
    with pytest.raises(RuntimeError):
        env.dc.add_part(Compaction())
    await env.dc.stop()
    assert not part.running
