"""What the coordinator sends a QueryNode to load segments, built from the catalog.

Milvus's QueryCoord builds ``query.SegmentLoadInfo`` from DataCoord's segment meta
(binlogs, deltalogs, index builds) and passes the collection's ``index.IndexInfo`` list
with every ``LoadSegments``.  vecgrid's catalog (:class:`vecgrid.storage.catalog.Catalog`)
holds the same facts, plus a size and checksum for every file; those checksums travel
in the request's ``base.properties`` as ``vecgrid.checksum.<relative path>`` =
``"<algo>:<hex>"`` so the node verifies what it reads
(:func:`vecgrid.common.keys.checksums_from_properties`).

* :func:`segment_load_info` — one segment's ``SegmentLoadInfo`` and its checksum map;
  a field whose live index has a build lists its file; a segment the index builder will index
  (:func:`~vecgrid.cluster.index_builds.built_by_index_builder`: flushed or compacted) lists a
  field not built yet with ``enable_index=False`` and no file, which the node serves with exact
  search (an interim FLAT index) until the index checker reloads it with the built file (Milvus
  serves an unindexed segment by brute force or an interim index the same way); any other
  segment (bulk-imported) lists nothing for it and the node builds the index at load;
* :func:`index_info_list` — the collection's live ``IndexInfo``\\ s;
* :func:`load_segments_request` — a complete ``LoadSegmentsRequest`` for some segments.

Paths are relative to the storage root (the node's ``common.data_dir``).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from vecgrid import errors
from vecgrid.cluster.index_builds import built_by_index_builder
from vecgrid.common.keys import checksum_properties
from vecgrid.proto import common_pb2, data_coord_pb2, index_coord_pb2, query_coord_pb2
from vecgrid.storage.catalog import Catalog

__all__ = ["compacted_from", "segment_load_info", "index_info_list", "load_segments_request"]


def index_info_list(catalog: Catalog, collection_id: int) -> list[index_coord_pb2.IndexInfo]:
    """The collection's live index definitions (one per indexed vector field)."""
    return list(catalog.describe_index(collection_id))


def compacted_from(catalog: Catalog, seg: data_coord_pb2.SegmentInfo) -> list[int]:
    """Every segment ``seg`` replaces: its ``compactionFrom`` and theirs, as far as the catalog still knows
    them (a Dropped segment's record stays until garbage collection purges it).

    A shard leader stops reading the segments a compaction result replaces once the result is in its
    view.  Compactions can follow each other faster than targets are promoted (an L0 compaction
    rewrites S as S', a merge turns S' into M before S' ever loaded), so the leader must learn that M
    replaces S too: SegmentLoadInfo.compactionFrom carries the whole ancestry, nearest first."""
    out: list[int] = []
    seen = {seg.ID}
    frontier = list(seg.compactionFrom)
    while frontier:
        sid = frontier.pop(0)
        if sid in seen:
            continue
        seen.add(sid)
        out.append(sid)
        try:
            frontier.extend(catalog.get_segment(sid).compactionFrom)
        except errors.SegmentNotFound:  # purged: long released everywhere
            continue
    return out


def segment_load_info(catalog: Catalog, segment_id: int, *,
                      indexes: Iterable[index_coord_pb2.IndexInfo] | None = None
                      ) -> tuple[query_coord_pb2.SegmentLoadInfo, dict[str, str]]:
    """``(SegmentLoadInfo, {relative path: "<algo>:<hex>"})`` of a stored segment.

    ``indexes``: the collection's IndexInfos when the caller has them already."""
    seg = catalog.get_segment(segment_id)
    coll = catalog.get_collection(seg.collectionID)
    info = query_coord_pb2.SegmentLoadInfo(
        segmentID=seg.ID, partitionID=seg.partitionID, collectionID=seg.collectionID, dbID=coll.db_id,
        binlog_paths=list(seg.binlogs), num_of_rows=seg.num_of_rows, statslogs=list(seg.statslogs),
        deltalogs=list(seg.deltalogs), compactionFrom=compacted_from(catalog, seg), insert_channel=seg.insert_channel,
        level=seg.level, storageVersion=seg.storage_version)
    if seg.HasField("start_position"):
        info.start_position.CopyFrom(seg.start_position)
    if seg.HasField("dml_position"):
        info.delta_position.CopyFrom(seg.dml_position)
        info.flush_time = seg.dml_position.timestamp
    by_index = {i.indexID: i for i in (indexes if indexes is not None else index_info_list(catalog, coll.id))}
    built = set()
    for build in catalog.list_segment_indexes(seg.collectionID, segment_id=seg.ID):
        index = by_index.get(build.indexID)
        if index is None:  # a build of an index that is no longer live
            continue
        built.add(index.indexID)
        info.index_infos.append(query_coord_pb2.FieldIndexInfo(
            fieldID=index.fieldID, enable_index=True, index_name=index.index_name, indexID=index.indexID,
            buildID=build.buildID, index_params=list(index.index_params), index_file_paths=list(build.index_file_keys),
            index_size=sum(f.size for f in build.files) or int(build.serialize_size),
            index_version=build.index_version, num_rows=build.num_rows or seg.num_of_rows,
            current_index_version=build.current_index_version, index_store_version=build.index_store_version))
    if built_by_index_builder(seg):
        for index in by_index.values():
            if index.indexID not in built:  # the builder has not built it yet: served exactly until then
                info.index_infos.append(query_coord_pb2.FieldIndexInfo(
                    fieldID=index.fieldID, enable_index=False, index_name=index.index_name, indexID=index.indexID,
                    index_params=list(index.index_params), num_rows=seg.num_of_rows))
    checksums = {f.path: f"{f.checksum_algorithm}:{f.checksum}" for f in catalog.segment_files(seg.ID)
                 if f.checksum_algorithm and f.checksum}
    return info, checksums


def load_segments_request(catalog: Catalog, collection_id: int, segment_ids: Iterable[int], *,
                          dst_node_id: int = 0, version: int = 0, replica_id: int = 0,
                          load_type: int = query_coord_pb2.LoadCollection,
                          partition_ids: Iterable[int] | None = None, load_fields: Iterable[int] = (),
                          need_transfer: bool = False, load_scope: int = query_coord_pb2.Full,
                          extra_properties: Mapping[str, str] | None = None) -> query_coord_pb2.LoadSegmentsRequest:
    """A ``LoadSegmentsRequest`` for ``segment_ids`` of a collection, with schema, load meta,
    index list and the checksums of every file.  ``partition_ids`` defaults to all partitions."""
    coll = catalog.get_collection(collection_id)
    indexes = index_info_list(catalog, collection_id)
    infos, checksums = [], {}
    for sid in segment_ids:
        info, sums = segment_load_info(catalog, sid, indexes=indexes)
        infos.append(info)
        checksums.update(sums)
    meta = query_coord_pb2.LoadMetaInfo(
        load_type=load_type, collectionID=collection_id,
        partitionIDs=list(coll.partition_ids if partition_ids is None else partition_ids),
        db_name=coll.db_name, load_fields=list(load_fields))
    base = common_pb2.MsgBase(msg_type=common_pb2.LoadSegments, targetID=dst_node_id)
    for key, value in {**checksum_properties(checksums), **(extra_properties or {})}.items():
        base.properties[key] = value
    return query_coord_pb2.LoadSegmentsRequest(
        base=base, dst_nodeID=dst_node_id, infos=infos, schema=coll.schema, collectionID=collection_id,
        load_meta=meta, replicaID=replica_id, version=version, need_transfer=need_transfer,
        load_scope=load_scope, index_info_list=indexes)
