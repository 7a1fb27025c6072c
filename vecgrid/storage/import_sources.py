"""Input files of a bulk import, read as Arrow record batches, and schema inference from them.

Two layouts are accepted:

* one or more **Parquet** files: each holds whole rows; files are read one after
  the other (their schemas must agree);
* **``.npy`` vectors plus optional scalars**: every ``.npy`` file is one float vector
  field named after the file (``embedding.npy`` → field ``embedding``), and every
  Parquet or CSV file next to them adds scalar columns; all files hold the same
  number of rows, matched by position.

Batches are produced with bounded memory (Parquet block iterator, ``.npy`` memory
map), so a file larger than RAM imports.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from vecgrid import errors
from vecgrid.proto import common_pb2, schema_pb2

BATCH_ROWS = 65_536
VARCHAR_MAX_LENGTH = 65_535
DataType = schema_pb2.DataType


@dataclass
class Sources:
    """The files of one import, with their combined Arrow schema and row count."""

    files: list[str]
    schema: pa.Schema
    num_rows: int
    layout: str  # "parquet" | "columns"

    def batches(self, batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        """Record batches of at most ``batch_rows`` rows; nested columns arrive as JSON text."""
        for batch in self._raw_batches(batch_rows):
            yield _nested_as_json(batch)

    def _raw_batches(self, batch_rows: int) -> Iterator[pa.RecordBatch]:
        if self.layout == "parquet":
            for path in self.files:
                for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
                    yield batch
            return
        columns = [_open_columns(path) for path in self.files]
        for start in range(0, self.num_rows, batch_rows):
            stop = min(start + batch_rows, self.num_rows)
            arrays, names = [], []
            for source in columns:
                for name, column in source.items():
                    names.append(name)
                    arrays.append(_slice(column, start, stop))
            yield pa.RecordBatch.from_arrays(arrays, names=names)


def _is_nested(t: pa.DataType) -> bool:
    return pa.types.is_nested(t) and not _is_float_list(t)


def _nested_as_json(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Structs, maps and non-vector lists become JSON text, the form a JSON field stores."""
    if not any(_is_nested(f.type) for f in batch.schema):
        return batch
    arrays = [
        pa.array([None if v is None else json.dumps(v, default=str) for v in col.to_pylist()], pa.string())
        if _is_nested(col.type) else col
        for col in batch.columns
    ]
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def open_sources(files: list[str]) -> Sources:
    """Inspect ``files`` (without reading their data) and check they form one import."""
    if not files:
        raise errors.ParameterInvalid("no input files given")
    for path in files:
        if not os.path.isfile(path):
            raise errors.ParameterInvalid(f"input file {path} does not exist")
        if _kind(path) is None:
            raise errors.ParameterInvalid(f"input file {path}: expected .parquet, .npy or .csv")
    kinds = {_kind(p) for p in files}
    if kinds == {"parquet"}:
        schemas = [pq.read_schema(p) for p in files]
        for path, schema in zip(files[1:], schemas[1:]):
            if not schema.equals(schemas[0]):
                raise errors.ParameterInvalid(f"input file {path} has columns {schema.names}, "
                                              f"unlike {files[0]} ({schemas[0].names})")
        rows = sum(pq.ParquetFile(p).metadata.num_rows for p in files)
        return Sources(files, schemas[0], rows, "parquet")
    if "npy" not in kinds:
        raise errors.ParameterInvalid("CSV input needs .npy vector files beside it")
    fields, counts = [], []
    for path in files:
        for name, column in _open_columns(path).items():
            if any(f.name == name for f in fields):
                raise errors.ParameterInvalid(f"column {name!r} appears in more than one input file")
            fields.append(pa.field(name, _slice(column, 0, 0).type))
            counts.append((path, len(column)))
    if len({n for _, n in counts}) != 1:
        raise errors.ParameterInvalid("input files hold different numbers of rows: "
                                      + ", ".join(f"{os.path.basename(p)}={n}" for p, n in counts))
    return Sources(files, pa.schema(fields), counts[0][1], "columns")


def _kind(path: str) -> str | None:
    lower = path.lower()
    for ext, kind in ((".parquet", "parquet"), (".pq", "parquet"), (".npy", "npy"), (".csv", "csv")):
        if lower.endswith(ext):
            return kind
    return None


def _open_columns(path: str) -> dict[str, object]:
    """name → column (numpy memmap for .npy, Arrow array otherwise) of one column-layout file."""
    kind = _kind(path)
    if kind == "npy":
        array = np.load(path, mmap_mode="r")
        if array.ndim != 2 or array.dtype.kind != "f":
            raise errors.ParameterInvalid(f"{path}: expected a 2-D float array of vectors, "
                                          f"got shape {array.shape} dtype {array.dtype}")
        return {os.path.splitext(os.path.basename(path))[0]: array}
    table = pq.read_table(path) if kind == "parquet" else pacsv.read_csv(path)
    return {name: table.column(name).combine_chunks() for name in table.column_names}


def _slice(column: object, start: int, stop: int) -> pa.Array:
    if isinstance(column, np.ndarray):
        block = np.ascontiguousarray(column[start:stop], dtype=np.float32)
        return pa.FixedSizeListArray.from_arrays(pa.array(block.reshape(-1)), column.shape[1])
    return column.slice(start, stop - start)


# --- schema inference ----------------------------------------------------------------------

_SCALARS = {
    pa.bool_(): DataType.Bool, pa.int8(): DataType.Int8, pa.int16(): DataType.Int16,
    pa.int32(): DataType.Int32, pa.int64(): DataType.Int64, pa.uint8(): DataType.Int16,
    pa.uint16(): DataType.Int32, pa.uint32(): DataType.Int64, pa.float32(): DataType.Float,
    pa.float64(): DataType.Double, pa.string(): DataType.VarChar, pa.large_string(): DataType.VarChar,
}


def infer_schema(name: str, schema: pa.Schema, primary_key: str | None, first: pa.RecordBatch | None,
                 auto_id_field: str = "id") -> schema_pb2.CollectionSchema:
    """A CollectionSchema for ``schema``'s columns.

    A fixed-size float list becomes a FloatVector with its dim (a variable list of floats takes
    the dim of the first row); ints, floats, bools and strings map to the matching scalar types;
    anything else (structs, maps, other lists) becomes JSON.  The primary key is ``primary_key``
    (Int64 or VarChar), else an auto_id Int64 field ``auto_id_field`` is added.
    """
    out = schema_pb2.CollectionSchema(name=name)
    if primary_key is None:
        if auto_id_field in schema.names:
            raise errors.ParameterInvalid(
                f"column {auto_id_field!r} exists: pass --primary-key {auto_id_field} to use it as the primary key")
        out.fields.append(schema_pb2.FieldSchema(name=auto_id_field, data_type=DataType.Int64,
                                                 is_primary_key=True, autoID=True))
    elif primary_key not in schema.names:
        raise errors.ParameterInvalid(f"primary key column {primary_key!r} is not among {schema.names}")
    for f in schema:
        field = schema_pb2.FieldSchema(name=f.name, data_type=_data_type(f, first))
        if field.data_type == DataType.FloatVector:
            field.type_params.append(common_pb2.KeyValuePair(key="dim", value=str(_dim(f, first))))
        elif field.data_type == DataType.VarChar:
            field.type_params.append(common_pb2.KeyValuePair(key="max_length", value=str(VARCHAR_MAX_LENGTH)))
        if f.name == primary_key:
            if field.data_type not in (DataType.Int64, DataType.VarChar):
                raise errors.ParameterInvalid(f"primary key {primary_key!r} must be an int64 or string column, "
                                              f"not {f.type}")
            field.is_primary_key = True
        out.fields.append(field)
    if not any(f.data_type == DataType.FloatVector for f in out.fields):
        raise errors.ParameterInvalid("no vector column found: expected a fixed-size list of floats or a .npy file")
    return out


def _is_float_list(t: pa.DataType) -> bool:
    return (pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t)) \
        and pa.types.is_floating(t.value_type)


def _data_type(f: pa.Field, first: pa.RecordBatch | None) -> int:
    if _is_float_list(f.type):
        return DataType.FloatVector
    return _SCALARS.get(f.type, DataType.JSON)


def _dim(f: pa.Field, first: pa.RecordBatch | None) -> int:
    if pa.types.is_fixed_size_list(f.type):
        return f.type.list_size
    column = first.column(f.name) if first is not None and first.num_rows else None
    if column is None or column[0].as_py() is None:
        raise errors.ParameterInvalid(f"cannot tell the dimension of vector column {f.name!r} (no rows)")
    return len(column[0].as_py())
