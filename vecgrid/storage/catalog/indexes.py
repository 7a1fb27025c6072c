"""Vector index definitions and the index builds of segments: what Milvus's DataCoord index meta keeps.

Part of :class:`~.meta.Catalog` (see :mod:`.base` for the lock that owns every write). Uses
:mod:`.collections` (``_require_collection``, ``_view``) and :mod:`.segments` (``list_segments``, for
the row counts of ``describe_index``). A field has at most one live index; dropping it marks the
definition and its builds deleted, so a garbage collector still finds their files
(then :meth:`purge_index`). Builds are recorded with their segment by :mod:`.publish`.
"""

from __future__ import annotations

from collections.abc import Mapping

from vecgrid import errors
from vecgrid.proto import catalog_pb2, common_pb2, index_coord_pb2

from ..kv import MetaTxn
from . import keys
from .base import L, S, CatalogBase, copy_msg, decode, encode
from .index_rules import validate_index
from .schema_rules import VECTOR_TYPES, field_dim, kv_dict, kv_list, type_name, validate_name

#: how a create of a second, different index on a field is refused (Milvus's words); edges that can drop an
#: index recognise it to say how (``vecgrid create-index`` names ``vecgrid drop-index``)
ONE_INDEX_PER_FIELD = "at most one distinct index is allowed per field"


class IndexMeta(CatalogBase):
    """Field index definitions (``field-index/``) and segment index builds (``segment-index/``)."""

    def _field_indexes(self, collection_id: int, *,
                       include_deleted: bool = False) -> list[tuple[str, catalog_pb2.FieldIndex]]:
        rows = self._store.scan(keys.field_index_prefix(collection_id))
        out = [(k, decode(catalog_pb2.FieldIndex, k, v)) for k, v in rows]
        return [(k, fi) for k, fi in out if include_deleted or not fi.deleted]

    def _live_index(self, collection_id: int, index_id: int) -> catalog_pb2.FieldIndex:
        raw = self._store.get(keys.field_index_key(collection_id, index_id))
        key = keys.field_index_key(collection_id, index_id)
        fi = None if raw is None else decode(catalog_pb2.FieldIndex, key, raw)
        if fi is None or fi.deleted:
            raise errors.IndexNotFound(collection=collection_id, indexID=index_id)
        return fi

    def create_index(
        self,
        collection_id: int,
        field_name: str,
        index_type: str,
        metric_type: str | None = None,
        params: Mapping[str, object] | None = None,
        *,
        index_name: str = "",
    ) -> int:
        """Define the index of a vector field; returns its index id.

        See :mod:`.index_rules` for the accepted types, metrics and parameters. The index name
        defaults to the field name. Creating the same index again returns the same id; a different
        index on a field that has one is refused (Milvus allows one index per field).
        """
        with self._lock:
            coll = self._view(self._require_collection(collection_id))
            field = coll.field(field_name)
            if field.data_type not in VECTOR_TYPES:
                raise errors.IndexNotSupported(
                    f"field {field_name!r} is {type_name(field.data_type)}; vecgrid builds indexes on FloatVector "
                    "fields only",
                    index_type=index_type,
                )
            spec = validate_index(index_type, metric_type, params, field_dim(field))
            name = index_name or field_name
            validate_name("index", name)
            for _, fi in self._field_indexes(coll.id):
                info = fi.index_info
                if info.fieldID == field.fieldID:
                    if info.index_name == name and kv_dict(info.user_index_params) == spec.user_params:
                        return info.indexID
                    raise errors.ParameterInvalid(
                        f"{ONE_INDEX_PER_FIELD}: field {field_name!r} already has index "
                        f"{info.index_name!r} ({kv_dict(info.user_index_params)}); drop it first"
                    )
                if info.index_name == name:
                    raise errors.ParameterInvalid(
                        f"index name {name!r} is already used by field {coll.field_by_id(info.fieldID).name!r}"
                    )
            index_id = self._ids.allocate()
            info = index_coord_pb2.IndexInfo(
                collectionID=coll.id,
                fieldID=field.fieldID,
                index_name=name,
                indexID=index_id,
                type_params=list(field.type_params),
                index_params=kv_list(spec.index_params()),
                state=common_pb2.Finished,
                is_auto_index=spec.is_auto_index,
                user_index_params=kv_list(spec.user_params),
            )
            fi = catalog_pb2.FieldIndex(index_info=info, deleted=False, create_time=self._tso.allocate())
            self._store.put(keys.field_index_key(coll.id, index_id), encode(fi))
            return index_id

    def index_definitions(self, collection_id: int) -> list[index_coord_pb2.IndexInfo]:
        """The collection's live index definitions, without :meth:`describe_index`'s row counts."""
        return [fi.index_info for _, fi in self._field_indexes(collection_id)]

    def describe_index(self, collection_id: int, field_name: str | None = None) -> list[index_coord_pb2.IndexInfo]:
        """The collection's live indexes (one field's if named), by field id; ``[]`` if none.

        ``total_rows`` / ``indexed_rows`` / ``pending_index_rows`` count the rows of the collection's
        Flushed, non-L0 segments and of those with a built index; ``state`` is ``Finished`` when every
        such row is indexed (trivially so with no segments), else ``InProgress``.
        """
        coll = self._view(self._require_collection(collection_id))
        field_id = coll.field(field_name).fieldID if field_name is not None else None
        indexes = [fi.index_info for _, fi in self._field_indexes(coll.id)
                   if field_id is None or fi.index_info.fieldID == field_id]
        if not indexes:
            return []
        segments = [s for s in self.list_segments(coll.id, states=[S.Flushed]) if s.level != L.L0]
        rows = {s.ID: s.num_of_rows for s in segments}
        built: dict[int, set[int]] = {}
        for _, si in self._segment_index_records(coll.id):
            if not si.deleted and si.state == common_pb2.Finished:
                built.setdefault(si.indexID, set()).add(si.segmentID)
        total = sum(rows.values())
        out = []
        for info in sorted(indexes, key=lambda i: i.fieldID):
            info = copy_msg(info)
            indexed = sum(rows[s] for s in built.get(info.indexID, ()) if s in rows)
            info.total_rows = total
            info.indexed_rows = indexed
            info.pending_index_rows = total - indexed
            info.state = common_pb2.Finished if indexed == total else common_pb2.InProgress
            out.append(info)
        return out

    def drop_index(self, collection_id: int, field_name: str) -> bool:
        """Mark the field's index and its segment indexes deleted; ``False`` if it has none."""
        with self._lock:
            coll = self._view(self._require_collection(collection_id))
            field = coll.field(field_name)
            target = next(
                (fi for _, fi in self._field_indexes(coll.id) if fi.index_info.fieldID == field.fieldID), None
            )
            if target is None:
                return False
            with self._store.txn() as t:
                self._mark_indexes_deleted(t, coll.id, index_id=target.index_info.indexID)
            return True

    def _mark_indexes_deleted(self, t: MetaTxn, collection_id: int, index_id: int | None) -> None:
        for k, fi in self._field_indexes(collection_id):
            if index_id is None or fi.index_info.indexID == index_id:
                fi.deleted = True
                t.put(k, encode(fi))
        for k, si in self._segment_index_records(collection_id):
            if not si.deleted and (index_id is None or si.indexID == index_id):
                si.deleted = True
                t.put(k, encode(si))

    def purge_index(self, collection_id: int, index_id: int) -> bool:
        """Forget a *deleted* index and its segment indexes (after their files were removed)."""
        with self._lock:
            key = keys.field_index_key(collection_id, index_id)
            raw = self._store.get(key)
            if raw is None:
                return False
            if not decode(catalog_pb2.FieldIndex, key, raw).deleted:
                raise errors.ParameterInvalid(f"index {index_id} of collection {collection_id} is live; drop it first")
            with self._store.txn() as t:
                t.delete(key)
                for k, si in self._segment_index_records(collection_id):
                    if si.indexID == index_id:
                        t.delete(k)
            return True

    def _segment_index_records(self, collection_id: int | None = None, partition_id: int | None = None,
                               segment_id: int | None = None) -> list[tuple[str, catalog_pb2.SegmentIndex]]:
        prefix = keys.segment_index_prefix(collection_id, partition_id, segment_id)
        return [(k, decode(catalog_pb2.SegmentIndex, k, v)) for k, v in self._store.scan(prefix)]

    def list_segment_indexes(
        self,
        collection_id: int,
        *,
        segment_id: int | None = None,
        index_id: int | None = None,
        include_deleted: bool = False,
    ) -> list[catalog_pb2.SegmentIndex]:
        """Built segment indexes of a collection (optionally one segment / index), by segment then build."""
        out = [si for _, si in self._segment_index_records(collection_id)
               if (segment_id is None or si.segmentID == segment_id)
               and (index_id is None or si.indexID == index_id)
               and (include_deleted or not si.deleted)]
        return sorted(out, key=lambda si: (si.segmentID, si.buildID))
