"""Progress of long data-side work on an embedded cluster (issue 16): a flush, an explicit compaction and the
index builds of a new index go from partial to 100 % as the coordinator reports them — over
``vecgrid.write.WriteService`` (another process's proxy), in the REST ``collections`` / ``indexes`` answers,
and as the CLI's progress lines; the dashboard snapshot and ``/metrics`` carry the DataCoord's work.

Each partial state is held, not raced: one channel's sync of its log (the storage call a flush makes in a
thread), the compaction's Dask task, or the index builder's rounds wait on a gate the test opens."""

from __future__ import annotations

import argparse
import asyncio
import threading

import pytest
import pytest_asyncio

from vecgrid import cli
from vecgrid.cluster.datacoord import flush
from vecgrid.cluster.datacoord.compaction import Compaction
from vecgrid.cluster.datacoord.index_builder import IndexBuilder
from vecgrid.cluster.proxy.proxy import Proxy
from vecgrid.deploy import EmbeddedCluster
from vecgrid.http.services import RestContext
from vecgrid.http.services.collections import CollectionsService
from tests.conftest import poll_until
from tests.proxy_support import create_collection, rows_for, write_schema
from tests.querycoord_support import fast_settings

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

DIM = 8


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(tmp_path_factory):
    settings = fast_settings(tmp_path_factory.mktemp("progress") / "data", workers=1)
    settings.set("datacoord.auto_compaction", False)
    settings.set("datacoord.check_interval_s", 0.2)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    remote = Proxy(cluster.addresses.grpc)
    yield cluster, remote
    await remote.close()
    await asyncio.wait_for(cluster.stop(), 60)


def part(cluster, kind):
    return next(p for p in cluster.datacoord.parts if isinstance(p, kind))


def percentages(text: str, desc: str) -> list[int]:
    """The percentages of the plain progress lines ``desc: N % [..]``."""
    return [int(line.split(": ", 1)[1].split(" %")[0]) for line in text.splitlines() if line.startswith(desc + ": ")]


@pytest.fixture
def plain_lines(monkeypatch):
    monkeypatch.setattr(cli.Progress, "PLAIN_AFTER_S", 0.0)
    monkeypatch.setattr(cli, "POLL_S", 0.05)


async def test_a_flush_goes_from_half_its_channels_to_100_percent(cluster, monkeypatch, capsys, plain_lines):
    cluster, remote = cluster
    coll = create_collection(cluster.coord.catalog, "halves", dim=DIM, shards=2)
    await remote.insert("halves", rows_for(list(range(200)), DIM))
    held, gate = coll.vchannels[1], threading.Event()
    real = flush.flush_channel

    def gated(catalog, wal, root, channel, *args, **kw):
        if channel == held:
            assert gate.wait(120), "the test never opened the gate"
        return real(catalog, wal, root, channel, *args, **kw)

    monkeypatch.setattr(flush, "flush_channel", gated)
    follow = None
    try:
        started = await remote.writes.start_flush("", "halves")
        assert started["state"] == "Executing" and started["channels"] == 2 and started["progress"] < 100
        half = await poll_until(lambda: _state(remote, started["flush_id"], lambda s: s["channels_flushed"] == 1),
                                60, 0.05, "the free channel flushed")
        assert (half["state"], half["progress"]) == ("Executing", 50) and half["segment_ids"]
        # the CLI follows a flush of its own, held the same way, to 100 %
        args = argparse.Namespace(name="halves", no_wait=False)
        await remote.insert("halves", rows_for(list(range(200, 260)), DIM, seed=2))
        follow = asyncio.ensure_future(cli._flush(remote, args))
        await poll_until(lambda: any(j["state"] == "Executing" and j["channels_flushed"] == 1
                                     for j in cluster.datacoord.flushes(coll.id)[:1]), 60, 0.05, "the CLI's flush half done")
    finally:
        gate.set()
    assert follow is not None
    await asyncio.wait_for(follow, 60)
    done = await remote.writes.flush_state(started["flush_id"])
    assert (done["state"], done["progress"], done["channels_flushed"]) == ("Completed", 100, 2)
    published = {s.ID for s in cluster.coord.catalog.list_segments(coll.id)}
    assert set(done["segment_ids"]) <= published and len(done["segment_ids"]) >= 2
    # the REST collections service: a flush that answers at once, followed in the collection's get
    rest = CollectionsService(RestContext(coord=cluster.coord, proxy=cluster.proxy, datacoord=cluster.datacoord))
    await remote.insert("halves", rows_for(list(range(300, 320)), DIM, seed=3))
    answered = await rest.flush({"name": "halves", "wait": False}, {})
    assert answered["state"] in ("Executing", "Completed") and answered["channels"] == 2

    async def listed():
        [newest, *_] = (await rest.get("halves", {}))["flushes"]
        return newest if newest["flushId"] == answered["flushId"] and newest["state"] == "Completed" else None
    newest = await poll_until(listed, 60, 0.05, "the REST flush completed")
    assert (newest["progress"], newest["channelsFlushed"]) == (100, 2) and newest["segmentIds"]
    out = capsys.readouterr()
    shown = percentages(out.err, "flush halves")
    assert shown[-1] == 100 and any(p < 100 for p in shown), out.err
    summary = cli.json.loads(out.out.strip().splitlines()[-1])
    assert (summary["state"], summary["progress"]) == ("Completed", 100) and summary["segment_ids"]


async def _state(remote, flush_id, ok):
    state = await remote.writes.flush_state(flush_id)
    return state if ok(state) else None


async def test_an_explicit_compaction_reports_its_plan_then_100_percent(cluster, monkeypatch, capsys, plain_lines):
    cluster, remote = cluster
    coll = create_collection(cluster.coord.catalog, "merged", dim=DIM, shards=1)
    for first in (0, 100):   # two small segments of one channel: one merge
        await remote.insert("merged", rows_for(list(range(first, first + 100)), DIM, seed=first))
        await remote.flush("merged")
    compaction = part(cluster, Compaction)
    gate = asyncio.Event()
    real = compaction._run_task

    async def gated(plan):
        await gate.wait()
        return await real(plan)

    monkeypatch.setattr(compaction, "_run_task", gated)
    rest = CollectionsService(RestContext(coord=cluster.coord, proxy=cluster.proxy, datacoord=cluster.datacoord))
    started = await rest.compact({"name": "merged", "wait": False}, {})
    held = await poll_until(lambda: _compaction(remote, started["compactionId"], lambda s: s["executing_plans"] == 1),
                            60, 0.05, "the merge planned")
    assert (held["state"], held["progress"], held["completed_plans"]) == ("Executing", 50, 0)
    [shown] = (await rest.get("merged", {}))["compactions"]
    assert (shown["compactionId"], shown["state"], shown["executingPlans"]) == (started["compactionId"], "Executing", 1)
    follow = asyncio.ensure_future(cli._compact(remote, argparse.Namespace(name="merged", no_wait=False)))
    await poll_until(lambda: "compact merged: " in capsys.readouterr().err or None, 60, 0.05, "the CLI's first line")
    gate.set()
    await asyncio.wait_for(follow, 60)
    done = await remote.writes.compaction_state(started["compactionId"])
    assert (done["state"], done["progress"], done["completed_plans"], done["failed_plans"]) == ("Completed", 100, 1, 0)
    newest = (await rest.get("merged", {}))["compactions"]
    assert all(j["state"] == "Completed" and j["progress"] == 100 for j in newest)
    assert len([s for s in cluster.coord.catalog.list_segments(coll.id) if s.state == 4]) == 1   # Flushed: merged
    assert percentages(capsys.readouterr().err, "compact merged")[-1] == 100


async def _compaction(remote, compaction_id, ok):
    state = await remote.writes.compaction_state(compaction_id)
    return state if ok(state) else None


async def test_a_new_index_is_built_from_0_to_100_percent(cluster, monkeypatch, capsys, plain_lines):
    cluster, remote = cluster
    catalog = cluster.coord.catalog
    coll = catalog.create_collection("default", "later", write_schema(DIM), shards_num=2)
    await remote.insert("later", rows_for(list(range(300)), DIM))
    await remote.flush("later")
    builder = part(cluster, IndexBuilder)
    gate = asyncio.Event()
    real = builder.round

    async def gated():
        await gate.wait()
        await real()

    monkeypatch.setattr(builder, "round", gated)
    args = argparse.Namespace(name="later", no_wait=False, field="vec", index_type="IVF_FLAT", metric="L2",
                              index_name="", timeout=120.0)
    follow = asyncio.ensure_future(cli._create_index(remote, args, {"nlist": 4}))
    first = await poll_until(lambda: _index(remote), 60, 0.05, "the index created")
    assert (first["state"], first["indexed_rows"], first["total_rows"], first["pending_index_rows"]) == (
        "InProgress", 0, 300, 300) and first["progress"] == 0
    indexes = CollectionsService(RestContext(coord=cluster.coord, proxy=cluster.proxy, datacoord=cluster.datacoord))
    [listed] = (await indexes.get("later", {}))["indexes"]
    assert (listed["indexedRows"], listed["pendingRows"], listed["totalRows"], listed["progress"]) == (0, 300, 300, 0)
    gate.set()
    await asyncio.wait_for(follow, 120)
    [done] = await remote.writes.index_progress("", "later", "vec")
    assert (done["state"], done["indexed_rows"], done["pending_index_rows"], done["progress"]) == ("Finished", 300, 0, 100)
    out = capsys.readouterr()
    shown = percentages(out.err, "index later.vec")
    assert shown[0] == 0 and shown[-1] == 100, out.err
    summary = cli.json.loads(out.out.strip().splitlines()[-1])
    assert (summary["index_name"], summary["indexed_rows"], summary["total_rows"]) == ("vec", 300, 300)
    activity = await cluster.datacoord.activity()
    [later] = [i for i in activity["indexes"] if i["collection"] == "later"]
    assert (later["pending_index_rows"], later["indexed_rows"]) == (0, 300)
    assert coll.id == later["collection_id"]


async def _index(remote):
    try:
        return (await remote.writes.index_progress("", "later", "vec"))[0]
    except Exception:  # noqa: BLE001 - not created yet
        return None


async def test_unknown_jobs_are_refused_with_the_reason(cluster):
    cluster, remote = cluster
    from vecgrid import errors

    with pytest.raises(errors.ParameterInvalid, match="no flush 1"):
        await remote.writes.flush_state(1)
    with pytest.raises(errors.ParameterInvalid, match="no compaction 1"):
        await remote.writes.compaction_state(1)
    with pytest.raises(errors.CollectionNotFound):
        await remote.writes.start_flush("", "nope")
