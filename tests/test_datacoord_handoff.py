"""The flush hand-off on a 2-worker embedded cluster: Strong searches and count(*) queries run without a
pause through inserts, deletes, an explicit flush and the hand-off of the growing rows to their sealed
copies; every read counts every live primary key exactly once (no gap, no duplicate), and rows deleted
during the flush stay deleted."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pyarrow as pa
import pytest

from vecgrid.cluster.proxy.proxy import Proxy
from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import common_pb2
from tests.conftest import poll_until
from tests.datacoord_support import Writer
from tests.querycoord_support import Coord, fast_settings
from tests.querynode_support import DIM, import_collection

pytestmark = pytest.mark.slow

NEW_KEYS = 10_000_000


class Rows:
    """What has been acknowledged: the live keys and their vectors.  Writes and reads take turns on
    ``turn`` so that every read knows exactly what it must see; the flush and the hand-off are not
    part of the turns — they run under the reads."""

    def __init__(self, pks: np.ndarray, vectors: np.ndarray) -> None:
        self.vectors = dict(zip(pks.tolist(), vectors))
        self.deleted: set[int] = set()
        self.turn = asyncio.Lock()

    @property
    def live(self) -> set[int]:
        return set(self.vectors) - self.deleted


async def reader(proxy: Proxy, name: str, rows: Rows, stop: asyncio.Event, log: list, rng) -> None:
    while not stop.is_set():
        async with rows.turn:
            live = rows.live
            count = await proxy.count(name)
            keys = [r["pk"] for r in await proxy.query(name)]
            probe = rng.choice(sorted(rows.vectors))
            hits = (await proxy.search(name, rows.vectors[probe], limit=5))[0]
        log.append(time.monotonic())
        assert count == len(live), f"count(*) {count}, live rows {len(live)}"
        assert len(keys) == len(set(keys)), f"duplicate keys: {len(keys) - len(set(keys))}"
        assert set(keys) == live, f"missing {sorted(live - set(keys))[:5]}, unexpected {sorted(set(keys) - live)[:5]}"
        ids = [h["id"] for h in hits]
        assert len(ids) == len(set(ids)), f"a row found twice: {ids}"
        if probe in live:
            assert ids[0] == probe and hits[0]["distance"] == pytest.approx(0.0, abs=1e-4)
        else:
            assert probe not in ids


async def write(writer: Writer, rows: Rows, pks: list[int], vectors: np.ndarray) -> None:
    table = pa.table({"pk": np.asarray(pks, np.int64),
                      "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                      "age": np.zeros(len(pks), np.int32), "tag": ["new"] * len(pks),
                      "score": np.zeros(len(pks))})
    async with rows.turn:
        await asyncio.to_thread(writer.insert, table)
        rows.vectors.update(zip(pks, vectors))


async def delete(writer: Writer, rows: Rows, pks: list[int]) -> None:
    async with rows.turn:
        await asyncio.to_thread(writer.delete, pks)
        rows.deleted.update(pks)


async def test_reads_count_every_row_once_through_flush_and_handoff(tmp_path):
    ds = import_collection(tmp_path, "handoff", metric="L2", index="FLAT", n=400, shards=2, segment_rows=200, seed=4)
    settings = fast_settings(ds.data_dir, workers=2)
    settings.set("datacoord.check_interval_s", 0.1)
    settings.set("datacoord.flush_idle_s", 3600.0)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    proxy = Proxy(cluster.addresses.grpc, catalog=cluster.coord.catalog)
    stop = asyncio.Event()
    readers: list[asyncio.Task] = []
    try:
        qc, dc = cluster.coord, cluster.datacoord
        cid = ds.collection_id
        await Coord(cluster.addresses.grpc, qc).load(cid)
        writer = Writer(qc.appenders, qc.catalog, cid)
        rows = Rows(ds.pks, ds.vectors)
        rng = np.random.default_rng(9)
        reads: list[float] = []
        readers = [asyncio.ensure_future(reader(proxy, ds.name, rows, stop, reads, np.random.default_rng(i)))
                   for i in range(2)]

        def vectors(n):
            return rng.standard_normal((n, DIM)).astype(np.float32)

        next_key = NEW_KEYS
        for _ in range(3):                                        # growing rows
            await write(writer, rows, list(range(next_key, next_key + 50)), vectors(50))
            next_key += 50
        await delete(writer, rows, [int(ds.pks[0]), NEW_KEYS + 1])

        flush = asyncio.ensure_future(dc.flush(cid))              # seal, publish, then the hand-off
        flush_started = time.monotonic()
        while not flush.done():                                   # writes while the flush runs
            await write(writer, rows, list(range(next_key, next_key + 10)), vectors(10))
            await delete(writer, rows, [next_key, NEW_KEYS + 2 + (next_key % 40), int(ds.pks[next_key % 400])])
            next_key += 10
        flushed = await flush
        sealed = [s for s in qc.catalog.list_segments(cid, states=[common_pb2.Flushed]) if s.ID in flushed]
        assert sum(s.num_of_rows for s in sealed) >= 150

        await poll_until(lambda: dc.flush_policy.handoffs_waiting == 0, 60, what="the sealed copies serving")
        handed_off = time.monotonic()
        current = {s.ID for ch in qc.targets.current(cid).Channel_targets for p in ch.partition_targets
                   for s in p.segments}
        assert set(flushed) <= current
        for _ in range(3):                                        # and after the hand-off
            await write(writer, rows, list(range(next_key, next_key + 20)), vectors(20))
            next_key += 20
        await delete(writer, rows, [NEW_KEYS + 3])
        deadline = len(reads) + 4
        await poll_until(lambda: len(reads) >= deadline or any(r.done() for r in readers), 60, what="reads after")
        stop.set()
        await asyncio.gather(*readers)                            # a reader's failed assertion fails here
        assert any(flush_started <= t <= handed_off for t in reads), "no read ran during the flush and hand-off"
        # the growing rows of the flushed segments left the leaders: their ids are growing nowhere
        def still_growing():
            return {sid for _, view in qc.dist.leader_views(cid) for sid in view.growing_segmentIDs} & set(flushed)
        await poll_until(lambda: not still_growing(), 30, what="no leader reporting the flushed ids as growing")
    finally:
        stop.set()
        await asyncio.gather(*readers, return_exceptions=True)
        await proxy.close()
        await asyncio.wait_for(cluster.stop(), 60)
