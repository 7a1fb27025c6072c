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
import contextlib
import posixpath
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import pytest_asyncio

from vecgrid.config import Settings
from vecgrid.storage.backend import CorruptSegmentError, FileInfo, open_storage
from vecgrid.storage.bulk_import import ImportOptions, bulk_import
from vecgrid.storage.layout import DataDir
from tests.querynode_support import Dataset, random_table

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")

KEY, SECRET, REGION = "vecgrid-test-key", "vecgrid-test-secret", "us-east-1"


class Bucket:
    """One fresh bucket on the module's moto server, and what the tests need of it (through boto3, not
    through vecgrid: what is really stored)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.name = f"vg-{uuid.uuid4().hex[:12]}"
        self.client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY,
                                   aws_secret_access_key=SECRET, region_name=REGION)
        self.client.create_bucket(Bucket=self.name)

    @property
    def root(self) -> str:
        return f"s3://{self.name}/vecgrid"

    def settings_overrides(self) -> dict[str, str]:
        return {"storage.segment_root": self.root, "storage.s3_endpoint_url": self.endpoint,
                "storage.s3_access_key_id": KEY, "storage.s3_secret_access_key": SECRET,
                "storage.s3_region": REGION}

    def keys(self, prefix: str = "vecgrid/") -> set[str]:
        keys: set[str] = set()
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name, Prefix=prefix):
            keys |= {o["Key"] for o in page.get("Contents", [])}
        return keys

    def segment_keys(self, segment_id: int) -> set[str]:
        return {k for k in self.keys() if f"/{segment_id}/" in k}

    def get(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.name, Key=key)["Body"].read()

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.name, Key=key, Body=data)

    @contextlib.contextmanager
    def corrupted(self, key: str):
        """One flipped byte in the middle of an object, the same size: only the checksum can tell."""
        raw = self.get(key)
        bad = bytearray(raw)
        bad[len(bad) // 2] ^= 0xFF
        self.put(key, bytes(bad))
        try:
            yield
        finally:
            self.put(key, raw)


@pytest.fixture(scope="module")
def s3_endpoint():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


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
