"""Input files of a bulk import, read as Arrow record batches, and schema inference from them.

A file is a local path or an ``s3://bucket/key`` URL, read through fsspec (s3fs) with the endpoint and
credentials of the ``[storage] s3_*`` settings — the segment store's, given to the process once by
:func:`vecgrid.storage.layout.configure_object_store`.  Three layouts are accepted:

* one or more **Parquet** files: each holds whole rows; files are read one after
  the other (their schemas must agree);
* **``.npy`` vectors plus optional scalars**: every ``.npy`` file is one float vector
  field named after the file (``embedding.npy`` → field ``embedding``), and every
  Parquet or CSV file next to them adds scalar columns; all files hold the same
  number of rows, matched by position;
* **JSON** (``.jsonl`` / ``.ndjson``: one row object per line; ``.json``: Milvus's bulk-insert forms,
  ``{"rows": [...]}`` or a top-level array of rows, or lines as well).  Arrow's JSON reader parses
  them (vectors arrive as lists of numbers in one Arrow buffer, never as Python floats); keys missing
  from a row are nulls, refused by the schema checks unless the field has a default, and keys of some
  rows only become columns (dynamic fields, with a dynamic collection).  Files may differ in their keys;
  their types are unified.

Batches are produced with bounded memory (Parquet block iterator, ``.npy`` memory
map), so a file larger than RAM imports.  A JSON file is parsed whole (once to check it when the import
is opened, again when its rows are read), and an ``.npy`` from S3 is downloaded whole, one file at a time.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from vecgrid import errors
from vecgrid.proto import common_pb2, schema_pb2
from vecgrid.storage.backend import filesystem_options

BATCH_ROWS = 65_536
VARCHAR_MAX_LENGTH = 65_535
DataType = schema_pb2.DataType
URL_SCHEMES = ("s3", "s3a")   # object stores an input file may name (the segment store's)
# Field metadata of a column _nested_as_json turned into JSON text: a dynamic field of it is stored as
# the value, not as a string holding it.
JSON_TEXT_KEY = b"vecgrid.json_text"
JSON_TEXT = {JSON_TEXT_KEY: b"1"}


@dataclass
class Sources:
    """The files of one import, with their combined Arrow schema and row count."""

    files: list[str]
    schema: pa.Schema
    num_rows: int
    layout: str  # "parquet" | "columns" | "json"

    def batches(self, batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        """Record batches of at most ``batch_rows`` rows; nested columns arrive as JSON text."""
        for batch in self._raw_batches(batch_rows):
            yield _nested_as_json(batch)

    def _raw_batches(self, batch_rows: int) -> Iterator[pa.RecordBatch]:
        if self.layout == "parquet":
            for path in self.files:
                with _opened(path) as source:
                    yield from pq.ParquetFile(source).iter_batches(batch_size=batch_rows)
            return
        if self.layout == "json":
            for path in self.files:
                yield from _conform(_read_json(path), self.schema).to_batches(max_chunksize=batch_rows)
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
    fields = [pa.field(f.name, pa.string(), metadata=JSON_TEXT) if _is_nested(f.type) else f for f in batch.schema]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def open_sources(files: list[str]) -> Sources:
    """Inspect ``files`` (reading no more of them than their layout needs) and check they form one import."""
    if not files:
        raise errors.ParameterInvalid("no input files given")
    for path in files:
        if _kind(path) is None:
            raise errors.ParameterInvalid(f"input file {path}: expected .parquet, .npy or .csv, "
                                          "or JSON rows (.jsonl, .json)")
    kinds = {_kind(p) for p in files}
    if "json" in kinds and kinds != {"json"}:  # said before any file is looked for
        raise errors.ParameterInvalid("JSON input files cannot be mixed with other formats in one import")
    for path in files:
        if not _is_file(path):
            raise errors.ParameterInvalid(f"input file {path} does not exist")
    if kinds == {"parquet"}:
        schemas = []
        rows = 0
        for path in files:
            with _opened(path) as source:
                meta = pq.ParquetFile(source)
                schemas.append(meta.schema_arrow)
                rows += meta.metadata.num_rows
        for path, schema in zip(files[1:], schemas[1:]):
            if not schema.equals(schemas[0]):
                raise errors.ParameterInvalid(f"input file {path} has columns {schema.names}, "
                                              f"unlike {files[0]} ({schemas[0].names})")
        return Sources(files, schemas[0], rows, "parquet")
    if "json" in kinds:
        tables = [_read_json(path) for path in files]
        try:
            schema = pa.unify_schemas([t.schema for t in tables], promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise errors.ParameterInvalid(f"the JSON input files disagree on a key's type: {e}") from None
        return Sources(files, schema, sum(t.num_rows for t in tables), "json")
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
    for ext, kind in ((".parquet", "parquet"), (".pq", "parquet"), (".npy", "npy"), (".csv", "csv"),
                      (".jsonl", "json"), (".ndjson", "json"), (".json", "json")):
        if lower.endswith(ext):
            return kind
    return None


# --- where the bytes come from -------------------------------------------------------------------

def url_scheme(path: str) -> str | None:
    """``s3`` for ``s3://bucket/key``; None for a local path."""
    return path.split("://", 1)[0].lower() if "://" in path else None


def _filesystem(url: str) -> tuple[Any, str]:
    scheme = url_scheme(url)
    if scheme not in URL_SCHEMES:
        raise errors.ParameterInvalid(f"input file {url}: only local paths and s3:// URLs can be imported")
    import fsspec.core   # fsspec ships with dask; s3fs is the s3 extra

    try:
        return fsspec.core.url_to_fs(url, **filesystem_options(scheme))
    except ImportError as e:
        raise errors.ParameterInvalid(f"input file {url}: reading {scheme}:// needs s3fs "
                                      f"(pip install 'vecgrid[s3]'): {e}") from None


def _is_file(path: str) -> bool:
    if url_scheme(path) is None:
        return os.path.isfile(path)
    fs, key = _filesystem(path)
    try:
        return bool(fs.isfile(key))
    except OSError as e:   # no such bucket, access denied: the user can act on it
        raise errors.ParameterInvalid(f"input file {path} cannot be read: {e}") from None


@contextlib.contextmanager
def _opened(path: str) -> Iterator[Any]:
    """What pyarrow and numpy read from: the path itself for a local file, an open file for a URL."""
    if url_scheme(path) is None:
        yield path
        return
    fs, key = _filesystem(path)
    with fs.open(key, "rb") as f:
        yield f


def _read_json(path: str) -> pa.Table:
    """One JSON input file as a table (see the module doc for the forms)."""
    with _opened(path) as source:
        if isinstance(source, str):
            with open(source, "rb") as f:
                raw = f.read()
        else:
            raw = source.read()
    start = raw.lstrip()[:1]
    try:
        if start == b"[":
            rows = orjson.loads(raw)
            if not all(isinstance(row, dict) for row in rows):
                raise errors.ParameterInvalid(f"input file {path}: a JSON array of rows must hold only objects")
            table = pa.Table.from_struct_array(pa.array(rows)) if rows else pa.table({})
        elif start:
            # newlines_in_values: a pretty-printed {"rows": [...]} document spans many lines
            table = pajson.read_json(pa.BufferReader(raw), parse_options=pajson.ParseOptions(
                newlines_in_values=not path.lower().endswith((".jsonl", ".ndjson"))))
            if table.column_names == ["rows"] and table.num_rows == 1 and pa.types.is_list(table.schema[0].type) \
                    and pa.types.is_struct(table.schema[0].type.value_type):
                table = pa.Table.from_struct_array(table.column("rows").combine_chunks().flatten())
        else:
            table = pa.table({})
    except (orjson.JSONDecodeError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise errors.ParameterInvalid(f"input file {path} is not valid JSON rows: {e}") from None
    if not table.num_rows:
        raise errors.ParameterInvalid(f"input file {path} holds no rows")
    return table


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s columns: keys this file lacks are nulls, types unified across files."""
    n = table.num_rows
    columns = [table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(n, f.type)
               for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _open_columns(path: str) -> dict[str, object]:
    """name → column (numpy memmap for a local .npy, the array for one from S3, Arrow array otherwise) of
    one column-layout file."""
    kind = _kind(path)
    with _opened(path) as source:
        if kind == "npy":
            array = np.load(source, mmap_mode="r") if isinstance(source, str) else np.load(source)
            if array.ndim != 2 or array.dtype.kind != "f":
                raise errors.ParameterInvalid(f"{path}: expected a 2-D float array of vectors, "
                                              f"got shape {array.shape} dtype {array.dtype}")
            return {os.path.splitext(os.path.basename(path))[0]: array}
        table = pq.read_table(source) if kind == "parquet" else pacsv.read_csv(source)
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
