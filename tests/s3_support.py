"""An S3 store for tests: moto's S3 server on loopback (``ThreadedMotoServer``, one per test module) and
fresh buckets on it.  s3fs talks HTTP to it exactly as to MinIO in the compose file, with the same
``storage.s3_*`` settings keys.  A module that imports this is skipped where s3fs, moto or boto3 is
missing."""

from __future__ import annotations

import contextlib
import importlib.util
import uuid

import pytest

# Looked up, not imported: importing moto and boto3 takes most of a second, which every pytest worker paid
# while collecting the suite; they are imported where a test first needs them.
for _package in ("s3fs", "moto", "boto3"):
    if importlib.util.find_spec(_package) is None:
        pytest.skip(f"{_package} is not installed", allow_module_level=True)

KEY, SECRET, REGION = "vecgrid-test-key", "vecgrid-test-secret", "us-east-1"


class Bucket:
    """One fresh bucket on the module's moto server, and what the tests need of it (through boto3, not
    through vecgrid: what is really stored)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.name = f"vg-{uuid.uuid4().hex[:12]}"
        boto3 = pytest.importorskip("boto3")
        self.client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY,
                                   aws_secret_access_key=SECRET, region_name=REGION)
        self.client.create_bucket(Bucket=self.name)

    @property
    def root(self) -> str:
        return f"s3://{self.name}/vecgrid"

    def credentials(self) -> dict[str, str]:
        """The ``storage.s3_*`` settings that reach this bucket."""
        return {"storage.s3_endpoint_url": self.endpoint, "storage.s3_access_key_id": KEY,
                "storage.s3_secret_access_key": SECRET, "storage.s3_region": REGION}

    def settings_overrides(self) -> dict[str, str]:
        """Segments in this bucket."""
        return {"storage.segment_root": self.root, **self.credentials()}

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


@contextlib.contextmanager
def moto_endpoint():
    """A moto S3 server on a free loopback port, for as long as the block runs: its endpoint URL."""
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def s3_endpoint():
    with moto_endpoint() as endpoint:
        yield endpoint
