"""Rows of a write, from what a user hands the proxy to the canonical Arrow table a DML batch carries.

Two steps, on the two sides of the wire:

* :func:`to_table` (the client's proxy, in any process): a list of row dicts, a dict of columns or an
  Arrow Table / RecordBatch becomes one Arrow table, guided by the schema only as far as conversion needs
  it (vector columns become ``fixed_size_list<float32>``, JSON values become JSON text, keys outside the
  schema go into the dynamic field ``$meta`` when the schema enables it).  Nothing is accepted here that
  the next step would not check again: the coordinator never trusts a client.
* :func:`prepare` (the coordinator's :class:`~vecgrid.cluster.proxy.writer.Writer`): the checks Milvus's
  proxy makes before it produces a message — :func:`~vecgrid.storage.catalog.validate_rows` (types,
  dims, NaN/Inf, ``max_length``, missing fields, duplicate primary keys in the batch), Milvus's own errors
  for a primary key given to an ``auto_id`` collection and for an unknown field without a dynamic field —
  then default values, the dynamic field and auto ids, so that the result has every field of the schema
  in schema order with its canonical type: what the growing segment and the flush read.

Everything is column-wise (numpy / Arrow); the only per-row Python work is JSON text for JSON and dynamic
values, which is per row by nature.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vecgrid import errors
from vecgrid.proto import schema_pb2
from vecgrid.storage.catalog import CollectionInfo, arrow_schema, arrow_type, validate_rows
from vecgrid.storage.catalog.schema_rules import DYNAMIC_FIELD_NAME

__all__ = ["Rows", "to_table", "prepare", "auto_id_error", "encode_table", "decode_table", "row_errors"]

D = schema_pb2.DataType
#: What a write accepts: row dicts, a dict of columns, or Arrow.
Rows = Sequence[Mapping[str, Any]] | Mapping[str, Any] | pa.Table | pa.RecordBatch
_ABSENT = object()   # a row without the key (unlike an explicit None)


# --- the client's side ------------------------------------------------------------------------------------

def to_table(rows: Any, schema: schema_pb2.CollectionSchema) -> pa.Table:
    """``rows`` as one Arrow table (see the module doc); raises ParameterInvalid for input it cannot read."""
    if isinstance(rows, pa.RecordBatch):
        return pa.Table.from_batches([rows])
    if isinstance(rows, pa.Table):
        return rows
    if isinstance(rows, Mapping):
        table = _from_columns(rows, schema)
    elif isinstance(rows, Sequence) and not isinstance(rows, (str, bytes)):
        table = _from_dicts(rows, schema)
    else:
        raise errors.ParameterInvalid(f"rows must be a list of dicts, a dict of columns or an Arrow table, "
                                      f"got {type(rows).__name__}")
    if table.num_rows == 0:
        raise errors.ParameterInvalid("num_rows should be greater than 0")
    return table


def _fields(schema: schema_pb2.CollectionSchema) -> dict[str, schema_pb2.FieldSchema]:
    return {f.name: f for f in schema.fields if not f.is_dynamic}


def _from_dicts(rows: Sequence[Any], schema: schema_pb2.CollectionSchema) -> pa.Table:
    if not len(rows):
        raise errors.ParameterInvalid("num_rows should be greater than 0")
    names: dict[str, None] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise errors.ParameterInvalid(f"row {i} is a {type(row).__name__}, not a dict of field values")
        names.update(dict.fromkeys(row))
    fields = _fields(schema)
    columns = {name: [row.get(name) for row in rows] for name in names if name in fields}
    extras = [name for name in names if name not in fields]
    if extras:
        columns[DYNAMIC_FIELD_NAME] = _dynamic_text(schema, extras, lambda name: [row.get(name, _ABSENT)
                                                                                   for row in rows], len(rows))
    return _table(columns, fields)


def _from_columns(columns: Mapping[str, Any], schema: schema_pb2.CollectionSchema) -> pa.Table:
    fields = _fields(schema)
    out = {name: values for name, values in columns.items() if name in fields}
    extras = [name for name in columns if name not in fields]
    if extras:
        lengths = {len(columns[name]) for name in columns}
        if len(lengths) != 1:
            raise errors.ParameterInvalid(f"the columns have different lengths: {sorted(lengths)}")
        out[DYNAMIC_FIELD_NAME] = _dynamic_text(schema, extras, lambda name: list(columns[name]), lengths.pop())
    return _table(out, fields)


def _dynamic_text(schema: schema_pb2.CollectionSchema, extras: list[str], values_of: Callable[[str], list],
                  n: int) -> list[str]:
    """The ``$meta`` JSON object of every row: its ``$meta`` value (dict or JSON text) plus its keys outside
    the schema, as Milvus's proxy builds it."""
    unknown = next((name for name in extras if name != DYNAMIC_FIELD_NAME), None)
    if not schema.enable_dynamic_field:
        name = unknown if unknown is not None else DYNAMIC_FIELD_NAME
        raise errors.ParameterInvalid(unexpected_field(name))
    objects: list[dict] = [{} for _ in range(n)]
    if DYNAMIC_FIELD_NAME in extras:
        for i, value in enumerate(values_of(DYNAMIC_FIELD_NAME)):
            if value is _ABSENT or value is None:
                continue
            if isinstance(value, (str, bytes)):
                try:
                    value = json.loads(value)
                except ValueError as e:
                    raise errors.ParameterInvalid(f"field '$meta': row {i} is not valid JSON ({e})") from None
            if not isinstance(value, Mapping):
                raise errors.ParameterInvalid(f"field '$meta': row {i} must be a JSON object, "
                                              f"got {type(value).__name__}")
            objects[i].update(value)
    for name in extras:
        if name == DYNAMIC_FIELD_NAME:
            continue
        for obj, value in zip(objects, values_of(name)):
            if value is not _ABSENT:
                obj[name] = value
    try:
        return [json.dumps(obj, default=_json_default) for obj in objects]
    except (TypeError, ValueError) as e:
        raise errors.ParameterInvalid(f"a dynamic field value is not JSON: {e}") from None


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def unexpected_field(name: str) -> str:
    """Milvus's words (pymilvus's check, the proxy's ``checkDynamicFieldData``) for a field outside the schema."""
    return f"Attempt to insert an unexpected field `{name}` to collection without enabling dynamic field"


def _table(columns: Mapping[str, Any], fields: Mapping[str, schema_pb2.FieldSchema]) -> pa.Table:
    arrays, names = [], []
    for name, values in columns.items():
        field = fields.get(name)
        arrays.append(_column(name, values, field))
        names.append(name)
    lengths = {len(a) for a in arrays}
    if len(lengths) > 1:
        raise errors.ParameterInvalid(f"the columns have different lengths: {sorted(lengths)}")
    return pa.Table.from_arrays(arrays, names=names)


def _column(name: str, values: Any, field: schema_pb2.FieldSchema | None) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    try:
        if field is not None and field.data_type == D.FloatVector:
            return _vectors(values)
        if field is not None and field.data_type == D.JSON:
            return pa.array([None if v is None else v if isinstance(v, str) else json.dumps(v, default=_json_default)
                             for v in values], pa.string())
        if isinstance(values, np.ndarray) and values.dtype.kind == "U":
            return pa.array(values.tolist(), pa.string())
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
        raise errors.ParameterInvalid(f"field {name!r}: cannot read the values ({e})") from None


def _vectors(values: Any) -> pa.Array:
    """Float vectors as ``fixed_size_list<float32>`` when they form a matrix (one copy, no per-element
    Python), else as Arrow lists for :func:`validate_rows` to name the row whose dim is wrong."""
    if isinstance(values, np.ndarray) and values.ndim == 2 and values.dtype.kind in "fiu":
        matrix = values
    elif len(values) and isinstance(values[0], np.ndarray) and \
            all(isinstance(v, np.ndarray) and v.shape == values[0].shape for v in values):
        matrix = np.stack(values)
    else:
        try:
            matrix = np.asarray(values, dtype=np.float32)
        except (ValueError, TypeError):
            return pa.array(values)   # ragged or not numbers: validation names the row
    if matrix.ndim != 2:
        return pa.array(list(values))
    flat = np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1)
    return pa.FixedSizeListArray.from_arrays(pa.array(flat), matrix.shape[1])


def row_errors(rows: Sequence[Any], schema: schema_pb2.CollectionSchema, *,
               upsert: bool = False) -> list[tuple[int, str]]:
    """``[(row index, why)]`` for the rows of a refused batch that would be refused alone: the checks of
    :func:`prepare` that need only the schema, row by row.  Run on the failure path only (a batch is checked
    column-wise); a batch refused for a reason no single row has (a primary key twice) gives ``[]``."""
    pk = next(f for f in schema.fields if f.is_primary_key)
    known = {f.name for f in schema.fields}
    out = []
    for i, row in enumerate(rows):
        try:
            if not isinstance(row, Mapping):
                raise errors.ParameterInvalid(f"a row is a {type(row).__name__}, not an object of field values")
            table = to_table([row], schema)
            if pk.autoID and (upsert or pk.name in table.column_names):
                raise errors.ParameterInvalid(f"can not assign primary field data when auto id enabled {pk.name}")
            if not schema.enable_dynamic_field:
                unknown = next((n for n in table.column_names if n not in known or n == DYNAMIC_FIELD_NAME), None)
                if unknown is not None:
                    raise errors.ParameterInvalid(unexpected_field(unknown))
            validate_rows(schema, table)
        except errors.MilvusError as e:
            out.append((i, e.message))
    return out


def encode_table(table: pa.Table) -> bytes:
    """An Arrow IPC stream: rows on the wire between a proxy and the coordinator."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def decode_table(data: bytes) -> pa.Table:
    try:
        return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    except (pa.ArrowInvalid, OSError) as e:
        raise errors.ParameterInvalid(f"the rows are not an Arrow IPC stream: {e}") from None


# --- the coordinator's side -------------------------------------------------------------------------------

def auto_id_error(coll: CollectionInfo, upsert: bool) -> errors.MilvusError:
    """Milvus's errors (``checkPrimaryFieldData``) for a primary key given to an ``auto_id`` collection."""
    name = coll.primary_field.name
    if upsert:
        return errors.ParameterInvalid(f"upsert can not assign primary field data when auto id enabled {name}")
    return errors.ParameterInvalid(f"can not assign primary field data when auto id enabled {name}")


def prepare(coll: CollectionInfo, table: pa.Table, allocate_ids: Callable[[int], int], *,
            upsert: bool = False) -> pa.Table:
    """The rows checked and completed (see the module doc); ``allocate_ids(n)`` (the first of ``n`` fresh
    ids) is called only once every check has passed."""
    if table.num_rows == 0:
        raise errors.ParameterInvalid("num_rows should be greater than 0")
    pk = coll.primary_field
    if pk.autoID and (upsert or pk.name in table.column_names):
        raise auto_id_error(coll, upsert)
    known = {f.name for f in coll.schema.fields}
    if not coll.enable_dynamic_field:
        unknown = next((n for n in table.column_names if n not in known or n == DYNAMIC_FIELD_NAME), None)
        if unknown is not None:
            raise errors.ParameterInvalid(unexpected_field(unknown))
    table = validate_rows(coll, table)
    columns = {name: table.column(name) for name in table.column_names}
    n = table.num_rows
    for f in coll.schema.fields:
        if f.HasField("default_value") and not f.is_primary_key:
            columns[f.name] = _with_default(f, columns.get(f.name), n)
    if coll.enable_dynamic_field:
        columns[DYNAMIC_FIELD_NAME] = _dynamic_column(columns, known, n)
    if pk.autoID:
        first = allocate_ids(n)
        ids = np.arange(first, first + n, dtype=np.int64)
        columns[pk.name] = pa.chunked_array([pa.array(ids) if pk.data_type == D.Int64
                                             else pa.array(ids.astype(str).tolist(), pa.string())])
    schema = arrow_schema(coll)
    return pa.Table.from_arrays([columns[name] for name in schema.names], schema=schema)


def _default_scalar(field: schema_pb2.FieldSchema) -> Any:
    value = field.default_value
    kind = value.WhichOneof("data")
    return getattr(value, kind)


def _with_default(field: schema_pb2.FieldSchema, column: pa.ChunkedArray | None, n: int) -> pa.ChunkedArray:
    """A missing column, or the nulls of one, take the field's default value (Milvus's ``fillFieldsDataBySchema``)."""
    default = pa.scalar(_default_scalar(field), arrow_type(field))
    if column is None:
        return pa.chunked_array([pa.repeat(default, n)])
    return column.fill_null(default) if column.null_count else column


def _dynamic_column(columns: dict[str, pa.ChunkedArray], known: set[str], n: int) -> pa.ChunkedArray:
    """``$meta``: the rows' dynamic values as JSON objects ("{}" for a row without any).  Columns outside the
    schema (an Arrow table's) are merged into it, one JSON object per row; they leave ``columns``."""
    extras = [name for name in columns if name not in known]
    given = columns.get(DYNAMIC_FIELD_NAME)
    if not extras:
        if given is None:
            return pa.chunked_array([pa.repeat(pa.scalar("{}"), n)])
        return pc.fill_null(given, "{}") if given.null_count else given
    values = {name: columns.pop(name).to_pylist() for name in extras}
    base = given.to_pylist() if given is not None else [None] * n
    out = []
    for i in range(n):
        obj = json.loads(base[i]) if base[i] else {}
        for name, column in values.items():
            if column[i] is not None:
                obj[name] = column[i]
        out.append(json.dumps(obj, default=_json_default))
    return pa.chunked_array([pa.array(out, pa.string())])


def nbytes(table: pa.Table) -> int:
    """What the rows cost a shard leader's growing segment, roughly: their Arrow bytes."""
    return int(table.nbytes)
