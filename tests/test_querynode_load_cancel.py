"""A LoadSegments cancelled while its worker thread builds segments (a Dask task timeout, a gRPC
deadline) frees everything that thread took: the segments it built are released once it ends, the
memory budget comes back, no half-loaded segment stays, and the same load then succeeds."""

from __future__ import annotations

import asyncio
import threading

import pytest

from vecgrid.proto import query_coord_pb2
from tests.conftest import poll_until
from tests.querynode_support import NodeHarness, import_collection, load_request

pytest.importorskip("faiss")


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return import_collection(tmp_path_factory.mktemp("qn-cancel"), "cancel", metric="L2", index="FLAT",
                             n=600, segment_rows=200, shards=1)


@pytest.fixture
async def qn(ds):
    h = await NodeHarness(ds.data_dir).start()
    yield h
    await h.stop()


def reserved(node) -> int:
    """Bytes the node's devices have accounted to segments (GPUs and host)."""
    return sum(d.used_bytes for d in node.devices().devices)


class BlockAfterBuild:
    """Wraps ``SegmentBuilder.build``: once the ``block_on``-th segment is built (its memory
    reserved), the worker thread waits for :attr:`go` — the point where the handler gets cancelled."""

    def __init__(self, builder, block_on: int) -> None:
        self.real = builder.build
        self.block_on = block_on
        self.built = 0
        self.entered = threading.Event()
        self.go = threading.Event()

    def __call__(self, *args, **kwargs):
        seg = self.real(*args, **kwargs)
        self.built += 1
        if self.built == self.block_on:
            self.entered.set()
            assert self.go.wait(60), "the test never let the build go on"
        return seg


async def cancel_while_building(node, request, blocker: BlockAfterBuild, *, go_on: bool = True) -> None:
    handler = asyncio.ensure_future(node.load_segments(request))
    await poll_until(blocker.entered.is_set, 30, 0.01, "the build to reach the blocking point")
    handler.cancel()
    with pytest.raises(asyncio.CancelledError):
        await handler
    if go_on:
        blocker.go.set()  # the thread goes on and finishes the segments after its waiter is gone


async def test_a_full_load_cancelled_mid_build_frees_its_segments(qn, ds, monkeypatch):
    node = qn.node
    before = reserved(node)
    blocker = BlockAfterBuild(node.loader.builder, block_on=2)  # the first two segments are built when it blocks
    monkeypatch.setattr(node.loader.builder, "build", blocker)
    await cancel_while_building(node, load_request(ds), blocker)

    await poll_until(lambda: reserved(node) == before, 30, 0.02,
                     f"the memory budget back at {before} bytes")
    assert blocker.built == len(ds.segment_ids)  # the thread really built them all
    assert not any(sid in node.segments for sid in ds.segment_ids)  # no half-loaded segment
    assert not node.loader.loading

    monkeypatch.setattr(node.loader.builder, "build", blocker.real)
    await qn.load(ds)
    assert {s.segment_id for s in node.segments.list()} == set(ds.segment_ids)
    assert reserved(node) > before


async def test_a_retry_during_the_abandoned_build_waits_for_its_release(qn, ds, monkeypatch):
    """The coordinator retries a timed-out load at once: the retry must not build a second copy beside
    the one the abandoned thread is still building (twice the budget), nor fail; it waits for it."""
    node = qn.node
    blocker = BlockAfterBuild(node.loader.builder, block_on=1)
    monkeypatch.setattr(node.loader.builder, "build", blocker)
    await cancel_while_building(node, load_request(ds), blocker, go_on=False)
    retry = asyncio.ensure_future(qn.load(ds))
    blocker.go.set()
    await retry
    assert {s.segment_id for s in node.segments.list()} == set(ds.segment_ids)
    assert blocker.built == 2 * len(ds.segment_ids)  # the abandoned build, then the retry's own
    served = sum(s.memory_bytes() for s in node.segments.list())
    await poll_until(lambda: reserved(node) == served, 30, 0.02, "only the served copies accounted")


async def test_an_index_reload_cancelled_mid_build_frees_the_new_copies(qn, ds, monkeypatch):
    node = qn.node
    await qn.load(ds)
    served = {sid: node.segments.get(sid) for sid in ds.segment_ids}
    before = reserved(node)
    blocker = BlockAfterBuild(node.loader.builder, block_on=2)
    monkeypatch.setattr(node.loader.builder, "build", blocker)
    await cancel_while_building(node, load_request(ds, load_scope=query_coord_pb2.Index, version=5), blocker)

    await poll_until(lambda: reserved(node) == before, 30, 0.02,
                     f"the memory budget back at {before} bytes")
    assert blocker.built == len(ds.segment_ids)
    # the node still serves the copies it had, untouched
    assert {sid: node.segments.get(sid) for sid in ds.segment_ids} == served
    assert not any(seg.released for seg in served.values())

    monkeypatch.setattr(node.loader.builder, "build", blocker.real)
    status = await qn.call("LoadSegments", load_request(ds, load_scope=query_coord_pb2.Index, version=6))
    assert status.code == 0, status
    assert all(node.segments.get(sid).version == 6 for sid in ds.segment_ids)
    assert all(seg.released for seg in served.values())
    await poll_until(lambda: reserved(node) == before, 30, 0.02, "the old copies' memory given back")


async def test_work_under_the_dml_lock_runs_to_its_end_before_the_cancel_lands():
    """Deletes applied in a thread under the node's DML lock: a cancelled caller must not free the lock
    (and so let a Delete in) while its thread still applies them."""
    from vecgrid.cluster.querynode.loader import LoadThreads

    threads = LoadThreads()
    entered, go = threading.Event(), threading.Event()
    finished = []

    def apply_deletes():
        entered.set()
        assert go.wait(60)
        finished.append(True)

    lock = asyncio.Lock()

    async def holder():
        async with lock:
            await threads.run_to_end(apply_deletes)

    caller = asyncio.ensure_future(holder())
    await poll_until(entered.is_set, 30, 0.01, "the thread to start")
    caller.cancel()
    for _ in range(3):
        await asyncio.sleep(0)
    assert lock.locked() and not caller.done()  # cannot end: its thread is still blocked
    go.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert finished == [True] and not lock.locked()


class _FailingRelease:
    released = False

    def release(self):
        raise RuntimeError("device fault while freeing")


async def test_a_failed_release_of_abandoned_segments_makes_the_node_unhealthy(qn):
    """Nobody awaits the release of a cancelled load's segments: when it fails, their budget is lost
    for good, so the node must say so in CheckHealth instead of only logging it."""
    node = qn.node
    assert node.health_reasons() == []
    node.loader._threads.discard([_FailingRelease()])
    await poll_until(lambda: node.health_reasons() != [], 30, 0.02, "the failed release in CheckHealth")
    (reason,) = node.health_reasons()
    assert "releasing 1 abandoned segment(s) failed" in reason and "device fault while freeing" in reason


async def test_work_under_the_dml_lock_that_fails_after_the_cancel_makes_the_node_unhealthy(qn):
    """Deletes applied under the DML lock for a caller that was cancelled meanwhile: if they fail, the
    node's segments may lack deletes and nobody is left to retry, so the node turns unhealthy."""
    node = qn.node
    entered, go = threading.Event(), threading.Event()

    def apply_deletes():
        entered.set()
        assert go.wait(60)
        raise ValueError("bad deltalog")

    caller = asyncio.ensure_future(node.loader._threads.run_to_end(apply_deletes))
    await poll_until(entered.is_set, 30, 0.01, "the thread to start")
    caller.cancel()
    go.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    (reason,) = node.health_reasons()
    assert "apply_deletes failed after its caller was cancelled" in reason and "bad deltalog" in reason
