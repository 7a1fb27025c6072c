"""Shared set-up of the delegator tests: a leader and a worker QueryNode in process over gRPC, one watched
channel with sealed segments spread over both, and a WAL writer that feeds the leader growing rows,
deletes and time ticks (what the write path does)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from vecgrid.gpu.results import from_search_result_data
from vecgrid.proto import data_coord_pb2, query_coord_pb2
from vecgrid.storage.dml import DeleteBatch, InsertBatch, TimeTick
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import MessageKind, Wal
from tests.querynode_support import DIM, TAGS, NodeHarness, import_collection, load_request, search_request

K = 10
LEADER, WORKER = 7, 8
GROWING_SEGMENT = 990001


class Cluster:
    """Leader + worker nodes, one watched channel, and a WAL writer for that channel."""

    def __init__(self, ds, leader, worker, writer):
        self.ds, self.leader, self.worker, self.writer = ds, leader, worker, writer
        self.ts = ds.import_ts + (1 << 18)
        self.partition = ds.summary["segments"][0]["partition_id"]
        self.full = ds          # ds plus the growing rows
        self.deleted: set = set()

    def next_ts(self) -> int:
        self.ts += 1 << 18
        return self.ts

    def insert(self, n: int, seed: int) -> int:
        rng = np.random.default_rng(seed)
        vectors = rng.standard_normal((n, DIM)).astype(np.float32)
        start = int(self.full.pks.max()) + 1
        pks = np.arange(start, start + n, dtype=np.int64)
        age = (np.arange(n) % 97).astype(np.int32)
        tag = np.asarray([TAGS[i % 5] for i in range(n)])
        score = rng.uniform(0, 1, n)
        ts = self.next_ts()
        batch = InsertBatch(self.ds.collection_id, self.partition, GROWING_SEGMENT, pa.array(pks, pa.int64()),
                            np.full(n, ts, np.uint64), pa.record_batch({
                                "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                                "age": pa.array(age), "tag": pa.array(tag), "score": pa.array(score)}))
        self.writer.append(MessageKind.INSERT, ts, batch.encode())
        self.writer.sync()
        cols = {"age": np.concatenate([self.full.columns["age"], age]),
                "tag": np.concatenate([self.full.columns["tag"], tag]),
                "score": np.concatenate([self.full.columns["score"], score])}
        self.full = dataclasses.replace(self.full, pks=np.concatenate([self.full.pks, pks]),
                                        vectors=np.concatenate([self.full.vectors, vectors]), columns=cols)
        return ts

    def delete(self, pks) -> int:
        ts = self.next_ts()
        self.writer.append(MessageKind.DELETE, ts, DeleteBatch(
            self.ds.collection_id, -1, pa.array(list(pks), pa.int64()), np.full(len(pks), ts, np.uint64)).encode())
        self.writer.sync()
        self.deleted |= set(int(p) for p in pks)
        return ts

    def tick(self, ts: int | None = None) -> int:
        ts = ts or self.next_ts()
        self.writer.append(MessageKind.TIMETICK, ts, TimeTick(ts).encode())
        self.writer.sync()
        return ts

    def mask(self, age_below=None, tags=None) -> np.ndarray:
        m = ~np.isin(self.full.pks, list(self.deleted))
        if age_below is not None:
            m &= self.full.columns["age"] < age_below
        if tags is not None:
            m &= np.isin(self.full.columns["tag"], tags)
        return m


async def make_cluster(tmp_path, metric: str, *, index: str = "FLAT", index_params: dict | None = None,
                       interim_rows: int | None = None) -> Cluster:
    """``interim_rows``: the leader's ``querynode.interim_index_rows`` (growing segments' interim index)."""
    ds = import_collection(tmp_path, f"deleg_{metric.lower()}", metric=metric, index=index, index_params=index_params,
                           n=600, shards=1, segment_rows=150, seed=3)
    (channel,) = ds.channels
    writer = Wal(DataDir(ds.data_dir).wal_root).open_writer(channel, fsync="always")
    leader = await NodeHarness(ds.data_dir, LEADER).start()
    if interim_rows is not None:
        leader.settings.querynode.interim_index_rows = interim_rows
    worker = await NodeHarness(ds.data_dir, WORKER).start()
    template = load_request(ds)
    watch = query_coord_pb2.WatchDmChannelsRequest(
        nodeID=LEADER, collectionID=ds.collection_id, schema=template.schema, load_meta=template.load_meta,
        index_info_list=template.index_info_list, version=1,
        infos=[data_coord_pb2.VchannelInfo(collectionID=ds.collection_id, channelName=channel)])
    watch.base.properties[f"vecgrid.node_address.{WORKER}"] = worker.node.address
    status = await leader.call("WatchDmChannels", watch)
    assert status.code == 0, status
    segs = ds.segment_ids
    for dst, ids in ((LEADER, segs[::2]), (WORKER, segs[1::2])):
        await leader.load(ds, ids, dst_node_id=dst, need_transfer=True, version=5)
    return Cluster(ds, leader, worker, writer)


async def close(c: Cluster) -> None:
    await c.leader.stop()
    await c.worker.stop()
    c.writer.close()


def leader_search_request(c: Cluster, xq, expr=None, guarantee=0, **kw):
    req = search_request(c.ds, xq, K, expr=expr, from_shard_leader=False, scope=query_coord_pb2.All, **kw)
    req.req.guarantee_timestamp = guarantee
    return req


async def search(c: Cluster, xq, expr=None, guarantee=0):
    reply = await c.leader.call("Search", leader_search_request(c, xq, expr, guarantee))
    assert reply.status.code == 0, reply.status
    return reply, from_search_result_data(reply.sliced_blob)
