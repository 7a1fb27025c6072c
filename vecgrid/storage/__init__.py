"""Durable storage primitives of vecgrid; imports nothing else from vecgrid.

* :mod:`vecgrid.storage.kv` -- metadata key-value store (``MetaStore``; SQLite embedded, etcd later)
* :mod:`vecgrid.storage.tso` -- Milvus hybrid timestamps (``TimestampOracle``) and ``IDAllocator``
* :mod:`vecgrid.storage.wal` -- per-DML-channel write-ahead log (``Wal``, ``Position``, ``ChannelReader``)
* :mod:`vecgrid.storage.dml` -- InsertBatch / DeleteBatch / TimeTick payload encoding (Arrow IPC)
* :mod:`vecgrid.storage.segment_files` -- sealed segment Parquet files, delete logs, index files
* :mod:`vecgrid.storage.arrow_pool` -- Arrow's memory pool in the server processes (the C library's allocator)

Submodules are imported explicitly (``from vecgrid.storage.wal import Wal``) so that importing the
package stays cheap and optional dependencies stay optional.
"""
