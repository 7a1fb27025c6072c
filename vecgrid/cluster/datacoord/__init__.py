"""DataCoord's role: when growing data is sealed and flushed, which segments are compacted, which
get their indexes built, and which files are garbage — as Milvus's ``datacoord``.  It decides and
records; the work itself runs as Dask tasks on the workers (:mod:`vecgrid.cluster.datanode`)."""
