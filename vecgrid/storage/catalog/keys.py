"""Key layout of the catalog in the meta store, and the DML channel names.

Keys follow Milvus's etcd layout (below Milvus's ``<rootPath>/meta/`` root, which the store's own
location plays the part of), so that a person who knows Milvus finds things where they expect::

    root-coord/database/db-info/<dbID>                                   catalog.DatabaseInfo
    root-coord/database/collections/<dbID>/<collectionID>                catalog.CollectionInfo
    root-coord/partitions/<collectionID>/<partitionID>                   catalog.PartitionInfo
    root-coord/dml-channel/cursor                                        decimal int: next physical channel
    field-index/<collectionID>/<indexID>                                 catalog.FieldIndex
    segment-index/<collectionID>/<partitionID>/<segmentID>/<buildID>     catalog.SegmentIndex
    datacoord-meta/s/<collectionID>/<partitionID>/<segmentID>            data.SegmentInfo
    datacoord-meta/file-checksum/<collectionID>/<partitionID>/<segmentID> catalog.SegmentFileChecksums
    datacoord-meta/channel-cp/<vchannel>                                 msg.MsgPosition
    datacoord-meta/import-lease/<leaseID>                                JSON: an import's reservations

Ids are written in decimal; a scan returns keys in string order, so callers sort numerically after
parsing. Every prefix below ends with ``/`` so that scanning collection ``1`` never returns ``12``.
"""

from __future__ import annotations

import re
from typing import Final

DB_INFO_PREFIX: Final = "root-coord/database/db-info/"
COLLECTION_PREFIX: Final = "root-coord/database/collections/"
ALIAS_PREFIX: Final = "root-coord/database/alias/"
PARTITION_PREFIX: Final = "root-coord/partitions/"
DML_CHANNEL_CURSOR_KEY: Final = "root-coord/dml-channel/cursor"
FIELD_INDEX_PREFIX: Final = "field-index/"
SEGMENT_INDEX_PREFIX: Final = "segment-index/"
SEGMENT_PREFIX: Final = "datacoord-meta/s/"
SEGMENT_FILES_PREFIX: Final = "datacoord-meta/file-checksum/"
CHANNEL_CP_PREFIX: Final = "datacoord-meta/channel-cp/"
IMPORT_LEASE_PREFIX: Final = "datacoord-meta/import-lease/"


def db_key(db_id: int) -> str:
    return f"{DB_INFO_PREFIX}{db_id}"


def collection_prefix(db_id: int | None = None) -> str:
    return COLLECTION_PREFIX if db_id is None else f"{COLLECTION_PREFIX}{db_id}/"


def collection_key(db_id: int, collection_id: int) -> str:
    return f"{COLLECTION_PREFIX}{db_id}/{collection_id}"


def alias_prefix(db_id: int) -> str:
    return f"{ALIAS_PREFIX}{db_id}/"


def alias_key(db_id: int, alias: str) -> str:
    return f"{ALIAS_PREFIX}{db_id}/{alias}"


def partition_prefix(collection_id: int) -> str:
    return f"{PARTITION_PREFIX}{collection_id}/"


def partition_key(collection_id: int, partition_id: int) -> str:
    return f"{PARTITION_PREFIX}{collection_id}/{partition_id}"


def field_index_prefix(collection_id: int) -> str:
    return f"{FIELD_INDEX_PREFIX}{collection_id}/"


def field_index_key(collection_id: int, index_id: int) -> str:
    return f"{FIELD_INDEX_PREFIX}{collection_id}/{index_id}"


def segment_index_prefix(collection_id: int | None = None, partition_id: int | None = None,
                         segment_id: int | None = None) -> str:
    parts = [p for p in (collection_id, partition_id, segment_id) if p is not None]
    return SEGMENT_INDEX_PREFIX + "".join(f"{p}/" for p in parts)


def segment_index_key(collection_id: int, partition_id: int, segment_id: int, build_id: int) -> str:
    return f"{SEGMENT_INDEX_PREFIX}{collection_id}/{partition_id}/{segment_id}/{build_id}"


def segment_prefix(collection_id: int | None = None, partition_id: int | None = None) -> str:
    parts = [p for p in (collection_id, partition_id) if p is not None]
    return SEGMENT_PREFIX + "".join(f"{p}/" for p in parts)


def segment_key(collection_id: int, partition_id: int, segment_id: int) -> str:
    return f"{SEGMENT_PREFIX}{collection_id}/{partition_id}/{segment_id}"


def segment_files_key(collection_id: int, partition_id: int, segment_id: int) -> str:
    return f"{SEGMENT_FILES_PREFIX}{collection_id}/{partition_id}/{segment_id}"


def channel_cp_key(vchannel: str) -> str:
    return f"{CHANNEL_CP_PREFIX}{vchannel}"


def import_lease_key(lease_id: str) -> str:
    return f"{IMPORT_LEASE_PREFIX}{lease_id}"


def last_id(key: str) -> int:
    """The id after the last ``/`` of a key."""
    return int(key.rsplit("/", 1)[1])


# ---------------------------------------------------------------------------------------------
# DML channel names (Milvus: ``<prefix>-rootcoord-dml_<p>`` physical, ``..._<collectionID>v<k>``
# virtual, one virtual channel per shard)

_VCHANNEL_RE: Final = re.compile(r"^(?P<pchannel>(?P<prefix>.+)-rootcoord-dml_(?P<p>\d+))_(?P<cid>\d+)v(?P<k>\d+)$")


def pchannel_name(cluster_prefix: str, index: int) -> str:
    """Physical DML channel ``<prefix>-rootcoord-dml_<index>``."""
    return f"{cluster_prefix}-rootcoord-dml_{index}"


def vchannel_name(cluster_prefix: str, pchannel_index: int, collection_id: int, shard: int) -> str:
    """Virtual DML channel ``<prefix>-rootcoord-dml_<p>_<collectionID>v<shard>``."""
    return f"{pchannel_name(cluster_prefix, pchannel_index)}_{collection_id}v{shard}"


def parse_vchannel(name: str) -> tuple[str, int, int]:
    """``(pchannel, collection_id, shard)`` of a virtual channel name; ``ValueError`` if it is not one."""
    m = _VCHANNEL_RE.match(name)
    if m is None:
        raise ValueError(f"{name!r} is not a virtual DML channel name")
    return m["pchannel"], int(m["cid"]), int(m["k"])
