"""The catalog: what Milvus's RootCoord and DataCoord hold, on a :class:`~vecgrid.storage.kv.MetaStore`.

* :class:`Catalog` (:mod:`.meta`): databases, collections (schema, shards / DML channels),
  partitions, vector index definitions, segments with their binlogs, index files and per-file
  checksums, and channel checkpoints. :meth:`Catalog.publish_segment` is the storage layer's atomic
  publish point. One class composed of one part per concern over :mod:`.base`: :mod:`.collections`,
  :mod:`.indexes`, :mod:`.segments`, :mod:`.publish`, :mod:`.checkpoints`.
* :class:`CollectionInfo` (:mod:`.info`): the read-only view of a collection the catalog returns.
* :mod:`.schema_rules` / :mod:`.index_rules`: Milvus's validation rules (pure functions).
* :func:`arrow_schema` / :func:`validate_rows` (:mod:`.arrow_rows`): a collection as Arrow, and the
  checks an insert batch must pass.
* :mod:`.keys`: the key layout and the DML channel naming.
* :mod:`.segment_bridge`: records of :mod:`vecgrid.storage.segment_files` <-> segment meta
  (:meth:`Catalog.publish_segment_files`, :meth:`Catalog.segment_files_record`).

Records are protobuf messages: Milvus's own where they exist (``schema.CollectionSchema``,
``data.SegmentInfo``, ``msg.MsgPosition``, ``index.IndexInfo``) and ``vecgrid.catalog.*``
(``vecgrid/proto/catalog.proto``) for what Milvus keeps in its internal etcd protos.
"""

from vecgrid.proto.catalog_pb2 import (
                                       DatabaseInfo,
                                       FieldIndex,
                                       FileKind,
                                       PartitionInfo,
                                       SegmentFile,
                                       SegmentFileChecksums,
                                       SegmentIndex,
                                       )

from .arrow_rows import arrow_field, arrow_schema, arrow_type, validate_rows
from .index_rules import INDEX_TYPES, METRIC_TYPES, IndexSpec, validate_index
from .info import CollectionInfo
from .keys import parse_vchannel, pchannel_name, vchannel_name
from .meta import ALL_PARTITIONS_ID, DEFAULT_DML_CHANNEL_NUM, Catalog
from .schema_rules import (
    DEFAULT_DB_ID,
    DEFAULT_DB_NAME,
    DEFAULT_PARTITION_NAME,
    DYNAMIC_FIELD_NAME,
    MAX_DIM,
    MAX_PARTITIONS,
    START_FIELD_ID,
    field_dim,
    field_max_length,
    normalize_schema,
    validate_name,
)

__all__ = [
    "ALL_PARTITIONS_ID",
    "Catalog",
    "CollectionInfo",
    "DEFAULT_DB_ID",
    "DEFAULT_DB_NAME",
    "DEFAULT_DML_CHANNEL_NUM",
    "DEFAULT_PARTITION_NAME",
    "DYNAMIC_FIELD_NAME",
    "DatabaseInfo",
    "FieldIndex",
    "FileKind",
    "INDEX_TYPES",
    "IndexSpec",
    "MAX_DIM",
    "MAX_PARTITIONS",
    "METRIC_TYPES",
    "PartitionInfo",
    "START_FIELD_ID",
    "SegmentFile",
    "SegmentFileChecksums",
    "SegmentIndex",
    "arrow_field",
    "arrow_schema",
    "arrow_type",
    "field_dim",
    "field_max_length",
    "normalize_schema",
    "parse_vchannel",
    "pchannel_name",
    "validate_index",
    "validate_name",
    "validate_rows",
    "vchannel_name",
]
