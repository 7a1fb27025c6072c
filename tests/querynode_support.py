"""Shared set-up of the QueryNode tests: bulk-imported data, a node on a free port, request builders,
and numpy references."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import grpc
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vecgrid.cluster.querycoord.load_info import load_segments_request
from vecgrid.cluster.querynode.node import QueryNode
from vecgrid.config import Settings
from vecgrid.gpu import exprs
from vecgrid.gpu.evaluation import knn_ground_truth
from vecgrid.gpu.results import encode_placeholder_group
from vecgrid.proto import internal_pb2, plan_pb2, query_coord_pb2, query_coord_pb2_grpc
from vecgrid.rpc.querynode_servicer import serve_querynode
from vecgrid.cluster.datanode.bulk_import import TIMESTAMP_FIELD, ImportOptions, bulk_import
from vecgrid.storage.layout import DataDir

DIM = 16
NODE_ID = 7
TAGS = ["red", "green", "blue", "cyan", "gold"]


@dataclass
class Dataset:
    """One imported collection and the rows it holds (row i of the arrays = input row i)."""

    name: str
    data_dir: str
    summary: dict
    metric: str
    index: str
    pks: np.ndarray
    vectors: np.ndarray
    columns: dict[str, np.ndarray]
    import_ts: int = 0
    field_ids: dict[str, int] = field(default_factory=dict)

    @property
    def collection_id(self) -> int:
        return self.summary["collection_id"]

    @property
    def channels(self) -> list[str]:
        return self.summary["channels"]

    @property
    def segment_ids(self) -> list[int]:
        return [s["segment_id"] for s in self.summary["segments"]]

    def segments_of(self, channel: str) -> list[int]:
        return [s["segment_id"] for s in self.summary["segments"] if s["channel"] == channel]

    def fid(self, name: str) -> int:
        return self.field_ids[name]

    @property
    def pk_name(self) -> str:
        return next(f["name"] for f in self.summary["fields"] if f.get("primary_key"))

    @property
    def vec_fid(self) -> int:
        return self.fid("vec")

    def rows_of_segment(self, segment_id: int) -> np.ndarray:
        """Input row numbers of the rows stored in a segment."""
        (seg,) = [s for s in self.summary["segments"] if s["segment_id"] == segment_id]
        path = Path(self.data_dir, "segments", str(self.collection_id), str(seg["partition_id"]),
                    str(segment_id), "data.parquet")
        keys = pq.read_table(path, columns=[self.pk_name]).column(0).to_numpy(zero_copy_only=False)
        index = {k: i for i, k in enumerate(self.pks.tolist())}
        return np.asarray([index[k] for k in keys.tolist()], dtype=np.int64)


def random_table(n: int, seed: int, pk: str, str_pk: bool) -> tuple[pa.Table, np.ndarray, np.ndarray, dict]:
    """Rows to import: the table, and its keys, vectors and scalar columns as numpy for the references."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    pks = np.asarray([f"k{i:05d}" for i in range(n)]) if str_pk else np.arange(n, dtype=np.int64) * 3 + 1
    cols = {"age": (np.arange(n) % 97).astype(np.int32), "tag": np.asarray([TAGS[i % 5] for i in range(n)]),
            "score": rng.uniform(0, 1, n)}
    table = pa.table({pk: pks, "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                      "age": cols["age"], "tag": cols["tag"], "score": cols["score"]})
    return table, pks, vectors, cols


def import_collection(root: Path, name: str, *, metric: str, index: str, index_params: dict | None = None,
                      n: int = 2000, shards: int = 2, segment_rows: int = 450, str_pk: bool = False,
                      seed: int = 1) -> Dataset:
    pk = "key" if str_pk else "pk"
    table, pks, vectors, cols = random_table(n, seed, pk, str_pk)
    src = root / f"{name}.parquet"
    pq.write_table(table, src)
    data_dir = root / "data"
    summary = bulk_import(str(data_dir), [str(src)], ImportOptions(
        collection=name, primary_key=pk, metric=metric, index=index, index_params=index_params or {},
        shards=shards, segment_rows=segment_rows))
    ds = Dataset(name, str(data_dir), summary, metric, index, pks, vectors, cols,
                 field_ids={f["name"]: f["field_id"] for f in summary["fields"]})
    first = summary["segments"][0]
    path = Path(data_dir, "segments", str(ds.collection_id), str(first["partition_id"]), str(first["segment_id"]),
                "data.parquet")
    ds.import_ts = int(pq.read_table(path, columns=[TIMESTAMP_FIELD]).column(0)[0].as_py())
    return ds


def catalog(data_dir: str):
    data = DataDir(data_dir)
    store = data.open_store()
    return store, data.open_catalog(store, tso_key="tso/querynode-tests")


def load_request(
    ds: Dataset, segment_ids: Iterable[int] | None = None, **kw: Any
) -> query_coord_pb2.LoadSegmentsRequest:
    store, cat = catalog(ds.data_dir)
    try:
        kw.setdefault("dst_node_id", NODE_ID)
        kw.setdefault("version", 1)
        return load_segments_request(cat, ds.collection_id, ds.segment_ids if segment_ids is None else segment_ids,
                                     **kw)
    finally:
        store.close()


class NodeHarness:
    """A QueryNode serving gRPC on a free port, plus a stub that addresses it by id."""

    def __init__(self, data_dir: str, node_id: int = NODE_ID, chunk_bytes: int | None = None) -> None:
        self.settings = Settings.load(env={}, overrides={"common.data_dir": data_dir, "querynode.port": 0,
                                                        "querynode.grace_s": 0.1})
        self.node = QueryNode(self.settings, f"qn-{node_id}")
        if chunk_bytes:
            self.node.stream_chunk_bytes = chunk_bytes
        self.node_id = node_id
        self.server = None
        self.channel = None
        self.stub = None

    async def start(self, assign: bool = True) -> "NodeHarness":
        self.server = await serve_querynode(self.node, "127.0.0.1", 0)
        if assign:
            self.node.assign_node_id(self.node_id)
        self.channel = grpc.aio.insecure_channel(self.node.address)
        self.stub = query_coord_pb2_grpc.QueryNodeStub(self.channel)
        return self

    @property
    def md(self) -> tuple[tuple[str, str], ...]:
        return (("serverid", str(self.node_id)),)

    async def call(self, method: str, request: Any, **kw: Any) -> Any:
        kw.setdefault("metadata", self.md)
        kw.setdefault("timeout", 60)
        return await getattr(self.stub, method)(request, **kw)

    async def stream(self, method: str, request: Any) -> list[Any]:
        return [r async for r in getattr(self.stub, method)(request, metadata=self.md, timeout=60)]

    async def load(self, ds: Dataset, segment_ids: Iterable[int] | None = None, **kw: Any):
        status = await self.call("LoadSegments", load_request(ds, segment_ids, **kw))
        assert status.code == 0, status
        return status

    async def stop(self) -> None:
        await self.channel.close()
        await self.server.stop(0)
        await self.node.close()


# --- requests ---------------------------------------------------------------------------------------------------

def search_request(ds: Dataset, queries: np.ndarray, topk: int, *, expr: plan_pb2.Expr | None = None,
                   output: Iterable[int] = (), params: dict | None = None, metric: str | None = None,
                   segment_ids: Iterable[int] = (), partitions: Iterable[int] = (), mvcc: int = 0,
                   channels: Iterable[str] | None = None, from_shard_leader: bool = True,
                   scope: int = query_coord_pb2.Historical, plan: bytes | None = None, placeholder: bytes | None = None
                   ) -> query_coord_pb2.SearchRequest:
    metric = ds.metric if metric is None else metric
    if params is None:
        params = {"nprobe": 128} if ds.index.startswith("IVF") else {}
    plan = plan if plan is not None else exprs.search_plan(field_id=ds.vec_fid, topk=topk, metric=metric, expr=expr,
                                                       search_params=params, output_field_ids=list(output))
    inner = internal_pb2.SearchRequest(
        collectionID=ds.collection_id, partitionIDs=list(partitions), serialized_expr_plan=plan,
        placeholder_group=placeholder if placeholder is not None else encode_placeholder_group(queries),
        output_fields_id=list(output), mvcc_timestamp=mvcc, nq=len(queries), topk=topk, metricType=metric)
    return query_coord_pb2.SearchRequest(req=inner, dml_channels=list(ds.channels if channels is None else channels),
                           segmentIDs=list(segment_ids), from_shard_leader=from_shard_leader, scope=scope)


def query_request(ds: Dataset, *, expr: plan_pb2.Expr | None = None, output: Iterable[int] = (), limit: int = 0,
                  is_count: bool = False, segment_ids: Iterable[int] = (), mvcc: int = 0,
                  from_shard_leader: bool = True, plan: bytes | None = None,
                  channels: Iterable[str] | None = None) -> query_coord_pb2.QueryRequest:
    node = plan_pb2.QueryPlanNode(is_count=is_count, limit=limit)
    if expr is not None:
        node.predicates.CopyFrom(expr)
    plan = plan if plan is not None else plan_pb2.PlanNode(query=node, output_field_ids=list(output)).SerializeToString()
    inner = internal_pb2.RetrieveRequest(collectionID=ds.collection_id, serialized_expr_plan=plan,
                                         output_fields_id=list(output), mvcc_timestamp=mvcc, limit=limit,
                                         is_count=is_count)
    return query_coord_pb2.QueryRequest(
        req=inner,
        dml_channels=list(ds.channels if channels is None else channels),
        segmentIDs=list(segment_ids),
        from_shard_leader=from_shard_leader,
        scope=query_coord_pb2.Historical,
    )


# --- references -------------------------------------------------------------------------------------------------

def reference_search(ds: Dataset, queries: np.ndarray, k: int, mask: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Exact (scores, primary keys) in Milvus's order; keys padded with None past the allowed rows."""
    D, I = knn_ground_truth(queries, ds.vectors, k, ds.metric, mask=mask)
    keys = np.empty(I.shape, dtype=object)
    keys[:] = None
    keys[I >= 0] = ds.pks[I[I >= 0]]
    return D, keys


def dense(tk, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A decoded SearchResultData as nq × k (scores, keys), padded like :func:`reference_search`."""
    o = tk.offsets
    D = np.full((tk.nq, k), np.nan, dtype=np.float32)
    keys = np.empty((tk.nq, k), dtype=object)
    keys[:] = None
    for i in range(tk.nq):
        n = o[i + 1] - o[i]
        D[i, :n] = tk.scores[o[i]:o[i + 1]]
        keys[i, :n] = list(tk.ids[o[i]:o[i + 1]].tolist())
    return D, keys


def assert_same_knn(D_ref: np.ndarray, K_ref: np.ndarray, D: np.ndarray, K: np.ndarray, rtol: float = 1e-4) -> None:
    """Equal up to ties: scores agree, and keys agree wherever the score is not tied with a neighbour."""
    valid = np.array([[k is not None for k in row] for row in K_ref])
    got_valid = np.array([[k is not None for k in row] for row in K])
    np.testing.assert_array_equal(valid, got_valid)
    np.testing.assert_allclose(D[valid], D_ref[valid], rtol=rtol, atol=1e-4)
    for i in range(len(K_ref)):
        ref = [k for k in K_ref[i] if k is not None]
        got = [k for k in K[i] if k is not None]
        if ref == got:
            continue
        d = D_ref[i][valid[i]]
        tol = rtol * max(1.0, float(np.abs(d).max()))
        for j, (a, b) in enumerate(zip(ref, got)):
            if a != b:
                tied = np.abs(d - d[j]) <= tol
                assert tied.sum() > 1, f"query {i} rank {j}: {b!r} instead of {a!r} (score {d[j]})"


class RemoteNode:
    """A node of a cluster, addressed by id over gRPC (what the coordinator and proxies do)."""

    def __init__(self, node_id: int, address: str) -> None:
        self.node_id, self.address = node_id, address
        self.stub = query_coord_pb2_grpc.QueryNodeStub(grpc.aio.insecure_channel(address))

    async def call(self, method, request):
        return await getattr(self.stub, method)(request, metadata=(("serverid", str(self.node_id)),), timeout=60)

    async def stream(self, method, request):
        return [r async for r in getattr(self.stub, method)(request, metadata=(("serverid", str(self.node_id)),),
                                                           timeout=60)]

    async def load(self, ds, segment_ids, **kw):
        status = await self.call("LoadSegments", load_request(ds, segment_ids, **kw))
        assert status.code == 0, status
