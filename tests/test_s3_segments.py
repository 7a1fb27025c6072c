"""Segments on S3 for real: ``storage.segment_root = s3://bucket/prefix`` against moto's S3 server on
loopback (``ThreadedMotoServer``; s3fs talks HTTP to it exactly as to MinIO in the compose file, with the
same ``storage.s3_*`` settings keys).

* ``vecgrid import`` writes every segment file into the bucket and nothing under the data dir's
  ``segments/``; the catalog records the URL and no credential;
* a query node reads them back (the same loader every worker runs), and a flipped byte in one object
  is refused with the checksum error (604), as for a local file;
* end to end on a two-worker embedded cluster (``slow``): the collection loads on both workers from
  the bucket, searches equal a numpy reference, a flush and an explicit compaction write their new
  segments back into the bucket (the compaction from a worker process), and a corrupted object makes
  the load fail with the checksum error until it is repaired."""

from __future__ import annotations

import asyncio
import posixpath

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import pytest_asyncio

from vecgrid.config import Settings
from vecgrid.storage.backend import CorruptSegmentError, FileInfo, open_storage
from vecgrid.cluster.datanode.bulk_import import ImportOptions, bulk_import
from vecgrid.storage.layout import DataDir
from vecgrid.gpu.results import from_search_result_data
from tests.querynode_support import Dataset, assert_same_knn, dense, random_table, reference_search

from tests.s3_support import KEY, SECRET, Bucket, s3_endpoint  # noqa: F401 - s3_endpoint is a fixture


@pytest.fixture
def bucket(s3_endpoint) -> Bucket:
    return Bucket(s3_endpoint)


def s3_settings(data_dir, bucket: Bucket, **more) -> Settings:
    return Settings.load(env={}, overrides={"common.data_dir": str(data_dir), **bucket.settings_overrides(), **more})


def import_to_bucket(root, settings: Settings, name: str, *, n: int, shards: int, segment_rows: int,
                     seed: int) -> Dataset:
    """What ``vecgrid import`` does with these settings: the catalog in the data dir, segments in the bucket."""
    table, pks, vectors, cols = random_table(n, seed, "pk", False)
    src = root / f"{name}.parquet"
    pq.write_table(table, src)
    data = DataDir.of(settings)
    summary = bulk_import(settings.common.data_dir, [str(src)], ImportOptions(
        collection=name, primary_key="pk", metric="L2", index="FLAT", shards=shards, segment_rows=segment_rows),
        segment_root=data.segment_root)
    return Dataset(name, settings.common.data_dir, summary, "L2", "FLAT", pks, vectors, cols,
                   field_ids={f["name"]: f["field_id"] for f in summary["fields"]})


def data_key(bucket: Bucket, segment_id: int) -> str:
    (key,) = [k for k in bucket.segment_keys(segment_id) if k.endswith("/data.parquet")]
    return key


# --- in one process ------------------------------------------------------------------------------------------

def test_settings_keys_come_from_the_environment(bucket):
    env = {f"VECGRID_{k.replace('.', '_').upper()}": v for k, v in bucket.settings_overrides().items()}
    settings = Settings.load(env=env)
    assert settings.storage.segment_root == bucket.root
    assert settings.storage.s3_endpoint_url == bucket.endpoint
    assert (settings.storage.s3_access_key_id, settings.storage.s3_secret_access_key) == (KEY, SECRET)
    # without a segment root the data dir holds the segments, as before
    assert DataDir.of(Settings.load(env={"VECGRID_COMMON_DATA_DIR": "/srv/v"})).segment_root == "/srv/v"


def test_import_writes_the_segments_into_the_bucket_and_reads_verify(tmp_path, bucket):
    settings = s3_settings(tmp_path / "data", bucket)
    ds = import_to_bucket(tmp_path, settings, "imported", n=700, shards=2, segment_rows=200, seed=5)

    keys = bucket.keys()
    for sid in ds.segment_ids:
        assert data_key(bucket, sid) in keys
    assert not (tmp_path / "data" / "segments").exists()      # nothing of the segments stayed local

    data = DataDir(settings.common.data_dir)
    store = data.open_store()
    try:
        catalog = data.open_catalog(store, tso_key="tso/s3-tests")
        seg = catalog.get_segment(ds.segment_ids[0])
        dumped = b"".join(v if isinstance(v, bytes) else str(v).encode() for _, v in store.scan(""))
    finally:
        store.close()
    assert bucket.root.encode() in dumped                      # the catalog names the bucket's URL ...
    assert SECRET.encode() not in dumped and KEY.encode() not in dumped   # ... and no credential
    assert seg.num_of_rows > 0

    # every row of the import is in the bucket, once
    storage = open_storage(bucket.root)
    rows = []
    for sid in ds.segment_ids:
        key = data_key(bucket, sid)
        raw = bucket.get(key)
        rel = posixpath.relpath(key, "vecgrid")
        assert storage.size(rel) == len(raw)
        rows += pq.read_table(pa.BufferReader(raw), columns=["pk"]).column(0).to_pylist()
    assert sorted(rows) == sorted(ds.pks.tolist())


def test_vecgrid_import_reads_the_storage_keys_from_the_environment(tmp_path, bucket, monkeypatch, capsys):
    """`vecgrid import` as the compose file's containers would run it: VECGRID_STORAGE_* variables only."""
    import json

    from vecgrid.cli import main

    for key, value in bucket.settings_overrides().items():
        monkeypatch.setenv(f"VECGRID_{key.replace('.', '_').upper()}", value)
    table, pks, _, _ = random_table(300, 3, "pk", False)
    pq.write_table(table, tmp_path / "rows.parquet")
    code = main(["import", str(tmp_path / "rows.parquet"), "--collection", "cli", "--primary-key", "pk",
                 "--segment-rows", "100", "--data-dir", str(tmp_path / "data")])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(summary["segments"]) == 3 and summary["num_rows"] == 300
    for seg in summary["segments"]:
        assert data_key(bucket, seg["segment_id"]).startswith("vecgrid/segments/")
    assert not (tmp_path / "data" / "segments").exists()


def test_a_corrupted_object_is_refused_with_the_checksum_error(tmp_path, bucket):
    from vecgrid.storage.segment_files import put_file

    DataDir.of(s3_settings(tmp_path, bucket))   # this process reaches the bucket's store
    payload = np.arange(4096, dtype=np.int64).tobytes()
    info = put_file(bucket.root, "segments/1/2/3/data.parquet", payload)
    storage = open_storage(bucket.root)
    assert bytes(storage.read_verified(info)) == payload
    with bucket.corrupted(f"vecgrid/{info.path}"):
        with pytest.raises(CorruptSegmentError, match="checksum mismatch"):
            storage.read_verified(info)
        with pytest.raises(CorruptSegmentError, match="checksum mismatch"):
            storage.verify(info)
    bucket.put(f"vecgrid/{info.path}", payload[:-8])
    with pytest.raises(CorruptSegmentError, match="truncated"):
        storage.read_verified(info)
    bucket.client.delete_object(Bucket=bucket.name, Key=f"vecgrid/{info.path}")
    with pytest.raises(CorruptSegmentError, match="missing"):
        storage.read_verified(FileInfo(info.path, info.size, info.checksum))


async def test_a_query_node_loads_from_the_bucket_and_refuses_a_corrupted_object(tmp_path, bucket):
    from vecgrid.cluster.querynode.node import QueryNode
    from vecgrid.rpc.querynode_servicer import serve_querynode
    from tests.querynode_support import NODE_ID, load_request, search_request

    settings = s3_settings(tmp_path / "data", bucket, **{"querynode.port": 0, "querynode.grace_s": 0.1})
    ds = import_to_bucket(tmp_path, settings, "nodeload", n=600, shards=1, segment_rows=200, seed=9)
    node = QueryNode(settings, "qn-s3")
    server = await serve_querynode(node, "127.0.0.1", 0)
    node.assign_node_id(NODE_ID)
    md = (("serverid", str(NODE_ID)),)
    try:
        with bucket.corrupted(data_key(bucket, ds.segment_ids[1])):
            status = await node_call(node, "LoadSegments", load_request(ds), md)
            assert status.code == 604 and "data.parquet: checksum mismatch" in status.reason, status
            assert not node.collections.get(ds.collection_id)
        status = await node_call(node, "LoadSegments", load_request(ds), md)
        assert status.code == 0, status
        # exact search over every imported row, read back from the bucket
        xq = np.random.default_rng(2).standard_normal((5, ds.vectors.shape[1])).astype(np.float32)
        reply = await node_call(node, "SearchSegments", search_request(ds, xq, 10), md)
        assert reply.status.code == 0, reply.status
        assert_same_knn(*reference_search(ds, xq, 10), *dense(from_search_result_data(reply.sliced_blob), 10))
    finally:
        await server.stop(0)
        await node.close()


async def node_call(node, method: str, request, md):
    import grpc
    from vecgrid.proto import query_coord_pb2_grpc

    async with grpc.aio.insecure_channel(node.address) as channel:
        return await getattr(query_coord_pb2_grpc.QueryNodeStub(channel), method)(request, metadata=md, timeout=60)


# --- a two-worker embedded cluster ------------------------------------------------------------------------

def flushed_segments(qc, cid: int) -> set[int]:
    from vecgrid.proto import common_pb2

    return {s.ID for s in qc.catalog.list_segments(cid, states=[common_pb2.Flushed])}


def settled(qc, cid: int) -> bool:
    """The current target is the catalog's flushed segments, every leader view holds exactly them and no
    task is pending: a flush's or a compaction's hand-off is over."""
    current = qc.targets.current(cid)
    if current is None or qc.targets.next(cid) is not None or qc.scheduler.tasks(cid):
        return False
    wanted = {s.ID: ch.channelName for ch in current.Channel_targets for pt in ch.partition_targets
              for s in pt.segments}
    if set(wanted) != flushed_segments(qc, cid):
        return False
    views = qc.dist.leader_views(cid)
    return len(views) == len(current.Channel_targets) and all(
        view.TargetVersion == current.version
        and set(view.segment_dist) == {sid for sid, ch in wanted.items() if ch == view.channel}
        for _, view in views)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def s3_cluster(tmp_path_factory, s3_endpoint):
    from vecgrid.deploy import EmbeddedCluster
    from tests.querycoord_support import Coord, fast_settings

    root = tmp_path_factory.mktemp("s3cluster")
    bucket = Bucket(s3_endpoint)
    settings = fast_settings(root / "data", workers=2)
    for key, value in bucket.settings_overrides().items():
        settings.set(key, value)
    settings.set("querycoord.next_target_interval_s", 1.0)
    ds = import_to_bucket(root, settings, "ons3", n=1000, shards=2, segment_rows=125, seed=11)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    yield cluster, Coord(cluster.addresses.grpc, cluster.coord), bucket, ds
    await asyncio.wait_for(cluster.stop(), 120)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_load_search_flush_compact_and_a_corrupted_object_on_two_workers(s3_cluster):
    from dataclasses import replace

    from vecgrid.proto import query_coord_pb2
    from tests.conftest import poll_until
    from tests.querycoord_support import assert_search_matches

    cluster, coord, bucket, ds = s3_cluster
    qc, cid = cluster.coord, ds.collection_id
    assert not (ds.data_dir and (DataDir(ds.data_dir).path / "segments").exists())

    # loaded on both workers from the bucket; searches are exact
    await coord.load(cid)
    await poll_until(lambda: len({node for node, _ in qc.dist.segments(cid)}) == 2, 60, 0.1,
                     "segments on both query nodes")
    await poll_until(lambda: settled(qc, cid), 60, 0.1, "the load settled")
    await assert_search_matches(coord, ds)

    # a flush writes its segments into the bucket, and the flushed rows are searched with the rest
    n_new = 300
    rng = np.random.default_rng(4)
    pks = np.arange(n_new, dtype=np.int64) + 50_000_000
    vectors = rng.standard_normal((n_new, ds.vectors.shape[1])).astype(np.float32)
    await cluster.proxy.insert(ds.name, {"pk": pks, "vec": vectors, "age": (pks % 97).astype(np.int32),
                                         "tag": ["new"] * n_new, "score": rng.uniform(0, 1, n_new)})
    before = flushed_segments(qc, cid)
    sealed = await cluster.proxy.flush(ds.name)
    assert sealed and not set(sealed) & before
    for sid in sealed:
        assert {k.rsplit("/", 1)[1] for k in bucket.segment_keys(sid)} >= {"data.parquet"}, sid
    ds = replace(ds, pks=np.concatenate([ds.pks, pks]), vectors=np.concatenate([ds.vectors, vectors]))
    await poll_until(lambda: settled(qc, cid), 60, 0.1, "the flushed segments served")
    await assert_search_matches(coord, ds)

    # a compaction (a Dask task on a worker process) writes the merged segment into the bucket
    before = flushed_segments(qc, cid)
    await cluster.proxy.compact(ds.name)
    await poll_until(lambda: flushed_segments(qc, cid) - before and settled(qc, cid), 120, 0.2,
                     "the compaction published and handed off")
    compacted = flushed_segments(qc, cid) - before
    for sid in compacted:
        assert data_key(bucket, sid) in bucket.keys()
        files = qc.catalog.get_segment(sid)
        assert files.num_of_rows > 0
    await assert_search_matches(coord, ds)

    # released, one object corrupted: the load fails on the workers with the checksum error, and succeeds
    # once the object is repaired
    await coord.ok("ReleaseCollection", query_coord_pb2.ReleaseCollectionRequest(collectionID=cid))
    victim = sorted(flushed_segments(qc, cid))[0]
    with bucket.corrupted(data_key(bucket, victim)):
        await coord.ok("LoadCollection", query_coord_pb2.LoadCollectionRequest(collectionID=cid))
        await poll_until(lambda: any("checksum mismatch" in f and str(victim) in f
                                     for f in qc.scheduler.failures.values()), 60, 0.1,
                         "the corrupted object refused")
        assert await coord.percentage(cid) < 100
    await coord.wait_loaded(cid, 120)
    await assert_search_matches(coord, ds)
