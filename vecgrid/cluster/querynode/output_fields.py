"""Output-field values of hits or rows spread over several segments.

Search and query both end with "give me fields F of row r of segment s" for a list of
(segment, row) pairs.  :func:`fetch_columns` answers it for every field the schema
knows — scalars and the primary key from the segment's rows, a vector field from the
engine segment of that field (so a collection with several vector fields can return
any of them) — and keeps the order of the pairs.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from vecgrid import errors
from vecgrid.cluster.querynode.collections import Collection, field_dim
from vecgrid.cluster.querynode.segments import SealedSegment
from vecgrid.gpu.columns import FieldColumn
from vecgrid.proto import schema_pb2

_EMPTY_DTYPE = {
    schema_pb2.Bool: np.bool_, schema_pb2.Int8: np.int8, schema_pb2.Int16: np.int16,
    schema_pb2.Int32: np.int32, schema_pb2.Int64: np.int64, schema_pb2.Float: np.float32,
    schema_pb2.Double: np.float64, schema_pb2.VarChar: str, schema_pb2.String: str, schema_pb2.JSON: object,
}


def resolve_output_fields(coll: Collection, field_ids: Sequence[int], *, with_pk: bool = False) -> list[int]:
    """Checked, de-duplicated output field ids (the primary key first when ``with_pk``)."""
    out: list[int] = []
    pk = coll.pk_field.fieldID
    if with_pk:
        out.append(pk)
    for fid in field_ids:
        fid = int(fid)
        if fid in out:
            continue
        f = coll.field(fid)  # FieldNotFound (1700) for an unknown id
        if not coll.loads_field(fid):
            raise errors.ParameterInvalid(f"field {f.name!r} is not loaded (partial load)", field=f.name)
        out.append(fid)
    return out


def empty_column(coll: Collection, field_id: int) -> FieldColumn:
    f = coll.field(field_id)
    if f.data_type == schema_pb2.FloatVector:
        dim = field_dim(f)
        return FieldColumn(f.name, field_id, f.data_type, np.zeros((0, dim), np.float32), dim, f.is_dynamic)
    return FieldColumn(f.name, field_id, f.data_type, np.zeros(0, dtype=_EMPTY_DTYPE.get(f.data_type, object)),
                       0, f.is_dynamic)


def _fetch_one(coll: Collection, seg: SealedSegment, rows: np.ndarray, field_id: int) -> FieldColumn:
    f = coll.field(field_id)
    if f.data_type == schema_pb2.FloatVector:
        col = seg.vectors(field_id, rows)
    else:
        (col,) = seg.rows.fetch(rows, [field_id])
    col.name, col.is_dynamic = f.name, f.is_dynamic
    return col


def fetch_columns(coll: Collection, segments: Sequence[SealedSegment], which: np.ndarray, rows: np.ndarray,
                  field_ids: Sequence[int]) -> list[FieldColumn]:
    """Values of ``field_ids`` at ``rows[j]`` of ``segments[which[j]]``, in the order of ``j``."""
    which = np.asarray(which, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    out: list[FieldColumn] = []
    for fid in field_ids:
        template = empty_column(coll, fid)
        if not len(rows):
            out.append(template)
            continue
        values = None
        for src in np.unique(which):
            where = np.flatnonzero(which == src)
            col = _fetch_one(coll, segments[int(src)], rows[where], fid)
            if values is None:
                shape = (len(rows),) + col.values.shape[1:]
                dtype = object if col.values.dtype.kind in "UO" else col.values.dtype
                values = np.empty(shape, dtype=dtype)
                template.dim = col.dim
            values[where] = col.values
        if template.values.dtype.kind == "U":
            values = values.astype(str)
        template.values = values
        out.append(template)
    return out
