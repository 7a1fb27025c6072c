"""DataNode's role: the work DataCoord schedules — index builds and compactions — as Dask task
handlers run on a worker, as Milvus's ``datanode`` and ``indexnode``.  Handlers take and return plain
Python values (Dask pickles them), write files under the segment root and never touch the catalog:
the coordinator records what they wrote."""
