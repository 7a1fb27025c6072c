"""A collection schema as Arrow: the column types of segment files and DML batches, and row checks.

Mapping (:func:`arrow_type`)::

    Bool -> bool          Int8/16/32/64 -> int8/16/32/64     Float -> float32    Double -> float64
    VarChar -> string     JSON -> string (JSON text)         FloatVector -> fixed_size_list<float32>[dim]

Every field is non-nullable (Milvus 2.4 has no nullable fields) except the dynamic ``$meta`` field
and fields with a ``default_value`` (a missing value takes the default). Each Arrow field carries its
Milvus field id as ``PARQUET:field_id`` metadata, so a Parquet file written with this schema records
the ids too.
"""

from __future__ import annotations

import json
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from vecgrid import errors
from vecgrid.proto import schema_pb2

from .info import CollectionInfo
from .schema_rules import (
    DYNAMIC_FIELD_NAME,
    MAX_JSON_BYTES,
    field_dim,
    field_max_length,
    type_name,
)

D = schema_pb2.DataType
FIELD_ID_METADATA_KEY: Final = b"PARQUET:field_id"

_SCALARS: Final = {
    D.Bool: pa.bool_(),
    D.Int8: pa.int8(),
    D.Int16: pa.int16(),
    D.Int32: pa.int32(),
    D.Int64: pa.int64(),
    D.Float: pa.float32(),
    D.Double: pa.float64(),
    D.VarChar: pa.string(),
    D.JSON: pa.string(),
}
_INT_RANGES: Final = {
    D.Int8: (-(1 << 7), (1 << 7) - 1),
    D.Int16: (-(1 << 15), (1 << 15) - 1),
    D.Int32: (-(1 << 31), (1 << 31) - 1),
    D.Int64: (-(1 << 63), (1 << 63) - 1),
}


def _schema_of(collection: CollectionInfo | schema_pb2.CollectionSchema) -> schema_pb2.CollectionSchema:
    if isinstance(collection, CollectionInfo):
        return collection.schema
    if isinstance(collection, schema_pb2.CollectionSchema):
        return collection
    raise TypeError(f"expected a CollectionInfo or schema.CollectionSchema, got {type(collection).__name__}")


def arrow_type(field: schema_pb2.FieldSchema) -> pa.DataType:
    """The Arrow type of one (validated) field."""
    if field.data_type == D.FloatVector:
        return pa.list_(pa.float32(), field_dim(field))
    try:
        return _SCALARS[field.data_type]
    except KeyError:
        raise errors.CollectionIllegalSchema(
            f"field {field.name!r} has data type {type_name(field.data_type)}, which vecgrid does not support"
        ) from None


def _nullable(field: schema_pb2.FieldSchema) -> bool:
    return field.is_dynamic or (field.HasField("default_value") and not field.is_primary_key)


def arrow_field(field: schema_pb2.FieldSchema) -> pa.Field:
    return pa.field(
        field.name,
        arrow_type(field),
        nullable=_nullable(field),
        metadata={FIELD_ID_METADATA_KEY: str(field.fieldID).encode()},
    )


def arrow_schema(collection: CollectionInfo | schema_pb2.CollectionSchema) -> pa.Schema:
    """The Arrow schema of a collection's rows: every field in schema order (``$meta`` included)."""
    schema = _schema_of(collection)
    return pa.schema([arrow_field(f) for f in schema.fields])


# ---------------------------------------------------------------------------------------------
# row validation


def _bad(detail: str) -> errors.MilvusError:
    return errors.ParameterInvalid(detail)


def _check_json(name: str, col: pa.ChunkedArray, require_object: bool) -> None:
    lengths = pc.binary_length(col)
    longest = pc.max(lengths).as_py()
    if longest is not None and longest > MAX_JSON_BYTES:
        raise _bad(f"field {name!r}: a JSON value is {longest} bytes, more than the limit of {MAX_JSON_BYTES}")
    for i, text in enumerate(col.to_pylist()):
        if text is None:
            continue
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise _bad(f"field {name!r}: row {i} is not valid JSON ({exc})") from None
        if require_object and not isinstance(value, dict):
            raise _bad(f"field {name!r}: row {i} must be a JSON object, got {type(value).__name__}")


def _check_vector(field: schema_pb2.FieldSchema, col: pa.ChunkedArray) -> pa.ChunkedArray:
    name, dim, t = field.name, field_dim(field), col.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
        raise _bad(f"field {name!r} is a FloatVector of dim {dim}: expected a list column, got {t}")
    vt = t.value_type
    if not (pa.types.is_floating(vt) or pa.types.is_integer(vt)):
        raise _bad(f"field {name!r} is a FloatVector: expected numeric list values, got {vt}")
    if pa.types.is_fixed_size_list(t) and t.list_size != dim:
        raise _bad(f"field {name!r}: the dim ({t.list_size}) of the vectors is not equal to the schema's dim ({dim})")
    chunks = []
    offset = 0
    for chunk in col.chunks:
        lengths = pc.list_value_length(chunk)
        wrong = pc.not_equal(lengths, dim)
        if pc.any(wrong).as_py():
            row = pc.index(wrong, True).as_py()
            raise _bad(f"field {name!r}: the dim ({lengths[row].as_py()}) of the vector in row {offset + row} is "
                       f"not equal to the schema's dim ({dim})")
        offset += len(chunk)
        values = chunk.flatten()
        if values.null_count:
            raise _bad(f"field {name!r}: vectors must not contain null elements")
        values = values.cast(pa.float32(), safe=False)
        if len(values) and not pc.all(pc.is_finite(values)).as_py():
            raise _bad(f"field {name!r}: float vector contains NaN or Inf")
        chunks.append(pa.FixedSizeListArray.from_arrays(values, dim))
    return pa.chunked_array(chunks, type=pa.list_(pa.float32(), dim))


def _check_column(field: schema_pb2.FieldSchema, col: pa.ChunkedArray) -> pa.ChunkedArray:
    name, t, dt = field.name, col.type, field.data_type
    if col.null_count and not _nullable(field):
        raise _bad(f"field {name!r} has {col.null_count} null value(s); {type_name(dt)} field {name!r} is not nullable")
    if dt == D.FloatVector:
        return _check_vector(field, col)
    if dt == D.Bool:
        if not pa.types.is_boolean(t):
            raise _bad(f"field {name!r} is Bool: expected a boolean column, got {t}")
        return col
    if dt in _INT_RANGES:
        if not pa.types.is_integer(t):
            raise _bad(f"field {name!r} is {type_name(dt)}: expected an integer column, got {t}")
        lo, hi = _INT_RANGES[dt]
        mm = pc.min_max(col).as_py() if len(col) else {"min": None, "max": None}
        if mm["min"] is not None and (mm["min"] < lo or mm["max"] > hi):
            bad = mm["min"] if mm["min"] < lo else mm["max"]
            raise _bad(f"field {name!r}: value {bad} is out of range for {type_name(dt)} [{lo}, {hi}]")
        return col.cast(_SCALARS[dt])
    if dt in (D.Float, D.Double):
        if not (pa.types.is_floating(t) or pa.types.is_integer(t)):
            raise _bad(f"field {name!r} is {type_name(dt)}: expected a numeric column, got {t}")
        out = col.cast(_SCALARS[dt], safe=False)
        if len(out) and not pc.all(pc.or_kleene(pc.is_finite(out), pc.is_null(out))).as_py():
            raise _bad(f"field {name!r}: value is NaN or Inf")
        return out
    if dt == D.VarChar:
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise _bad(f"field {name!r} is VarChar: expected a string column, got {t}")
        max_length = field_max_length(field)
        longest = pc.max(pc.binary_length(col)).as_py() if len(col) else None
        if longest is not None and longest > max_length:
            raise _bad(f"field {name!r}: the length ({longest} bytes) of a value exceeds max_length ({max_length})")
        return col.cast(pa.string())
    if dt == D.JSON:
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise _bad(f"field {name!r} is JSON: expected a string column of JSON text, got {t}")
        _check_json(name, col, require_object=field.is_dynamic)
        return col.cast(pa.string())
    raise _bad(f"field {name!r} has data type {type_name(dt)}, which vecgrid does not support")


def _check_unique(name: str, col: pa.ChunkedArray) -> None:
    if len(col) < 2:
        return
    if pc.count_distinct(col).as_py() == len(col):
        return
    counts = pc.value_counts(col)
    dup = counts.filter(pc.greater(counts.field("counts"), 1))[0]["values"].as_py()
    raise _bad(f"duplicate primary key {dup!r} in field {name!r}: primary keys must be unique within a batch")


def validate_rows(
    collection: CollectionInfo | schema_pb2.CollectionSchema, table: pa.Table | pa.RecordBatch
) -> pa.Table:
    """Check ``table`` against the collection schema; return it with canonical column types.

    Checks: every field is present (except an auto-id primary key, which must be absent, and fields
    with a default value), with a compatible type (any integer type for an integer field if the values
    fit, integers or floats for Float/Double, string for VarChar/JSON, a list of numbers of exactly
    ``dim`` for a FloatVector), no nulls, no NaN/Inf in floats and vectors, VarChar values at most
    ``max_length`` bytes, JSON text that parses, primary keys unique within the table, and no column
    outside the schema unless the dynamic field is enabled (then other columns are dynamic fields;
    names starting with ``$`` stay reserved, except ``$meta`` itself, which must hold JSON objects).

    The result has the schema's fields first, in schema order, cast to :func:`arrow_type` (absent
    auto-id / default-value fields are left out), followed by any dynamic columns unchanged.
    Raises :class:`errors.ParameterInvalid` naming the field and the problem.
    """
    schema = _schema_of(collection)
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise _bad(f"rows must be a pyarrow Table or RecordBatch, got {type(table).__name__}")
    names = table.column_names
    if len(set(names)) != len(names):
        dups = sorted({n for n in names if names.count(n) > 1})
        raise _bad(f"duplicate column name(s) {dups} in the rows")

    out_fields: list[pa.Field] = []
    out_cols: list[pa.ChunkedArray] = []
    known: set[str] = set()
    for f in schema.fields:
        known.add(f.name)
        if f.is_dynamic:
            continue
        if f.name not in names:
            if f.autoID or f.HasField("default_value"):
                continue
            raise _bad(f"field {f.name!r} of collection {schema.name!r} is missing from the rows")
        if f.autoID:
            raise _bad(f"the primary key field {f.name!r} is auto-generated (auto_id); do not provide it")
        col = _check_column(f, table.column(f.name))
        if f.is_primary_key:
            _check_unique(f.name, col)
        out_fields.append(arrow_field(f))
        out_cols.append(col)

    extras = [n for n in names if n not in known or n == DYNAMIC_FIELD_NAME]
    for n in extras:
        if not schema.enable_dynamic_field:
            raise _bad(f"column {n!r} is not a field of collection {schema.name!r} (dynamic field is disabled)")
        if n == DYNAMIC_FIELD_NAME:
            meta = next(f for f in schema.fields if f.is_dynamic)
            col = _check_column(meta, table.column(n))
            out_fields.append(arrow_field(meta))
            out_cols.append(col)
            continue
        if n.startswith("$"):
            raise _bad(f"column name {n!r} is reserved (names starting with '$')")
        out_fields.append(table.schema.field(n))
        out_cols.append(table.column(n))
    return pa.Table.from_arrays(out_cols, schema=pa.schema(out_fields))
