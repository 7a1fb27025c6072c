"""Where things live in a vecgrid data directory, and how every process opens them.

::

    <data_dir>/meta.db      metadata store (SQLite, WAL mode)
    <data_dir>/wal/         DML channel logs
    <data_dir>/segments/    sealed segment files (the segment storage root is <data_dir>)
    <data_dir>/dask/        Dask worker scratch space (embedded cluster)

Every process that opens a data directory — the coordinator, ``vecgrid import``,
tests — goes through :class:`DataDir`, so allocator keys and paths agree.  Ids come
from one shared :class:`IDAllocator` key (safe across processes).  The timestamp
oracle has exactly one owner per key: the coordinator owns :data:`TSO_KEY`; other
processes pass their own key (they never stamp DML that searches depend on).
"""

from __future__ import annotations

from pathlib import Path

from vecgrid.storage.catalog import Catalog
from vecgrid.storage.kv import MetaStore, open_meta_store
from vecgrid.storage.tso import IDAllocator, TimestampOracle

META_DB = "meta.db"
ID_KEY = "idalloc/global"
TSO_KEY = "tso/timestamp"


class DataDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).absolute()

    @property
    def meta_db(self) -> Path:
        return self.path / META_DB

    @property
    def wal_root(self) -> Path:
        return self.path / "wal"

    @property
    def segment_root(self) -> str:
        return str(self.path)

    def open_store(self) -> MetaStore:
        self.path.mkdir(parents=True, exist_ok=True)
        return open_meta_store(str(self.meta_db))

    def open_catalog(self, store: MetaStore, *, tso_key: str = TSO_KEY, cluster_prefix: str = "by-dev") -> Catalog:
        return Catalog(store, IDAllocator(store, ID_KEY), TimestampOracle(store, tso_key), cluster_prefix)
