"""Where things live in a vecgrid data directory, and how every process opens them.

::

    <data_dir>/meta.db      metadata store (SQLite, WAL mode)
    <data_dir>/wal/         DML channel logs
    <data_dir>/segments/    sealed segment files (the segment storage root is <data_dir>)
    <data_dir>/dask/        Dask worker scratch space (embedded cluster)

unless ``storage.segment_root`` names another segment storage root, such as ``s3://bucket/prefix``:
then ``segments/`` lives there and every process that reads or writes segments (the coordinator,
``vecgrid import``, each query node, the compaction and index-build tasks on the workers) reaches it
through the same URL, with the S3 endpoint and credentials of ``storage.s3_*``.

Every process that opens a data directory — the coordinator, ``vecgrid import``,
tests — goes through :class:`DataDir`, so allocator keys and paths agree.  Ids come
from one shared :class:`IDAllocator` key (safe across processes).  The timestamp
oracle has exactly one owner per key: the coordinator owns :data:`TSO_KEY`; other
processes pass their own key (they never stamp DML that searches depend on).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vecgrid.storage.backend import set_filesystem_options
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.kv import MetaStore, open_meta_store
from vecgrid.storage.tso import IDAllocator, TimestampOracle

META_DB = "meta.db"
ID_KEY = "idalloc/global"
TSO_KEY = "tso/timestamp"
S3_SCHEMES = ("s3", "s3a")

if TYPE_CHECKING:
    from vecgrid.config import Settings, StorageSettings


class DataDir:
    def __init__(self, path: str | Path, segment_root: str = "") -> None:
        self.path = Path(path).absolute()
        self._segment_root = segment_root

    @classmethod
    def of(cls, settings: "Settings") -> "DataDir":
        """The data dir of ``settings``, its segment root included; an object-store root's endpoint and
        credentials become this process's (:func:`configure_object_store`), so reads and writes of the
        root's URLs anywhere in the process reach the same store."""
        configure_object_store(settings.storage)
        return cls(settings.common.data_dir, settings.storage.segment_root)

    @property
    def meta_db(self) -> Path:
        return self.path / META_DB

    @property
    def wal_root(self) -> Path:
        return self.path / "wal"

    @property
    def segment_root(self) -> str:
        return self._segment_root or str(self.path)

    def open_store(self) -> MetaStore:
        self.path.mkdir(parents=True, exist_ok=True)
        return open_meta_store(str(self.meta_db))

    def open_catalog(self, store: MetaStore, *, tso_key: str = TSO_KEY, cluster_prefix: str = "by-dev") -> Catalog:
        return Catalog(store, IDAllocator(store, ID_KEY), TimestampOracle(store, tso_key), cluster_prefix)


def configure_object_store(storage: "StorageSettings") -> None:
    """Give s3:// storage roots the endpoint, credentials and region of ``storage`` (values left empty
    stay with s3fs's own defaults).  Directory listings are not cached: another process (the coordinator,
    a worker's compaction) writes the objects this one reads, and a cached listing would hide them."""
    options: dict = {"use_listings_cache": False}
    if storage.s3_endpoint_url:
        options["endpoint_url"] = storage.s3_endpoint_url
    if storage.s3_access_key_id:
        options["key"] = storage.s3_access_key_id
    if storage.s3_secret_access_key:
        options["secret"] = storage.s3_secret_access_key
    if storage.s3_region:
        options["client_kwargs"] = {"region_name": storage.s3_region}
    for scheme in S3_SCHEMES:
        set_filesystem_options(scheme, options)
