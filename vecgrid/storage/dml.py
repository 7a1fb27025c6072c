"""Encoding of DML channel payloads: InsertBatch, DeleteBatch and TimeTick.

These are the bodies of the records in a DML channel's WAL (:mod:`vecgrid.storage.wal`); the WAL
itself treats them as opaque bytes. They mirror Milvus's ``msgpb.InsertRequest``,
``msgpb.DeleteRequest`` and ``msgpb.TimeTickMsg`` closely enough to convert, but the row data travels
as Arrow instead of Milvus's ``FieldData`` protobufs: one Arrow IPC stream per batch is cheap to write
(a memcpy per column), zero-copy to read back, and already the format the growing segment and the
Parquet segment writer consume.

Wire format (all integers little-endian)::

    "VGDM" | version:u8 = 1 | kind:u8 (1 insert, 2 delete, 3 timetick) | reserved:u16 = 0 | body

* insert / delete body: an Arrow IPC *stream* holding one record batch whose first two columns are
  ``$pk`` (int64 or utf8) and ``$ts`` (uint64), followed, for inserts, by the row columns. The ids
  travel in the schema metadata (``vecgrid.dml.collection_id`` ...). Milvus field names cannot
  contain ``$``, so the two reserved names never clash with a user field.
* timetick body: ``timestamp:u64 | source_id:i64``.

:func:`decode_dml` returns the right dataclass for any payload.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

import numpy as np
import pyarrow as pa

__all__ = [
    "InsertBatch",
    "DeleteBatch",
    "TimeTick",
    "DmlDecodeError",
    "decode_dml",
    "PK_COLUMN",
    "TS_COLUMN",
]

MAGIC: Final = b"VGDM"
VERSION: Final = 1
_ENVELOPE = struct.Struct("<4sBBH")
_TIMETICK = struct.Struct("<Qq")
_KIND_INSERT, _KIND_DELETE, _KIND_TIMETICK = 1, 2, 3

PK_COLUMN: Final = "$pk"
TS_COLUMN: Final = "$ts"
_META_PREFIX = b"vecgrid.dml."
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class DmlDecodeError(ValueError):
    """A payload is not a valid DML message (wrong magic, version, kind or body)."""


def _as_int64(name: str, value: int) -> int:
    value = int(value)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{name} {value} is not an int64")
    return value


def _as_pk_array(pks: Any) -> pa.Array:
    """Normalise primary keys to a non-null int64 or utf8 Arrow array."""
    if isinstance(pks, pa.ChunkedArray):
        pks = pks.combine_chunks()
    if isinstance(pks, pa.Array):
        arr = pks
    elif isinstance(pks, np.ndarray):
        if pks.dtype.kind in "iu":
            arr = pa.array(pks.astype(np.int64, copy=False))
        elif pks.dtype.kind in "UO":
            arr = pa.array(pks.tolist(), type=pa.string())
        else:
            raise TypeError(f"primary keys must be int64 or str, got numpy dtype {pks.dtype}")
    else:
        values = list(pks)
        if values and isinstance(values[0], str):
            arr = pa.array(values, type=pa.string())
        else:
            arr = pa.array(values, type=pa.int64())
    if pa.types.is_integer(arr.type) and arr.type != pa.int64():
        arr = arr.cast(pa.int64())
    elif pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.string())
    if arr.type not in (pa.int64(), pa.string()):
        raise TypeError(f"primary keys must be int64 or str, got {arr.type}")
    if arr.null_count:
        raise ValueError("primary keys must not be null")
    return arr


def _as_timestamps(timestamps: Any, n: int) -> np.ndarray:
    """Normalise timestamps to a uint64 numpy array of length ``n`` (a scalar is broadcast)."""
    if isinstance(timestamps, (int, np.integer)):
        if not 0 <= int(timestamps) < 1 << 64:
            raise ValueError(f"timestamp {timestamps} is not a uint64")
        return np.full(n, int(timestamps), dtype=np.uint64)
    if isinstance(timestamps, (pa.Array, pa.ChunkedArray)):
        timestamps = timestamps.to_numpy()
    ts = np.asarray(timestamps)
    if ts.dtype.kind == "i" and ts.size and ts.min() < 0:
        raise ValueError("timestamps must be non-negative")
    ts = ts.astype(np.uint64, copy=False)
    if ts.ndim != 1 or len(ts) != n:
        raise ValueError(f"expected {n} timestamps, got shape {ts.shape}")
    return ts


def _envelope(kind: int) -> bytes:
    return _ENVELOPE.pack(MAGIC, VERSION, kind, 0)


def _write_ipc(kind: int, arrays: list[pa.Array], fields: list[pa.Field], metadata: dict[bytes, bytes]) -> bytes:
    schema = pa.schema(fields, metadata=metadata)
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
    sink = pa.BufferOutputStream()
    sink.write(_envelope(kind))
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _read_ipc(body: memoryview) -> pa.RecordBatch:
    try:
        reader = pa.ipc.open_stream(pa.py_buffer(body))
        batch = reader.read_next_batch()
    except (pa.ArrowInvalid, StopIteration) as exc:
        raise DmlDecodeError(f"invalid Arrow IPC body: {exc}") from exc
    if batch.num_columns < 2 or batch.schema.names[:2] != [PK_COLUMN, TS_COLUMN]:
        raise DmlDecodeError(f"DML batch must start with {PK_COLUMN!r}, {TS_COLUMN!r}; got {batch.schema.names[:2]}")
    return batch


def _ids_from_metadata(
    metadata: dict[bytes, bytes] | None, names: tuple[str, ...]
) -> tuple[list[int], dict[bytes, bytes]]:
    metadata = dict(metadata or {})
    ids = []
    for name in names:
        raw = metadata.pop(_META_PREFIX + name.encode(), None)
        if raw is None:
            raise DmlDecodeError(f"DML batch lacks {name}")
        ids.append(int(raw))
    return ids, {k: v for k, v in metadata.items() if not k.startswith(_META_PREFIX)}


class _Message:
    """What the three DML message kinds share: decoding a payload that must be of this kind."""

    @classmethod
    def decode(cls, payload: bytes | bytearray | memoryview):
        msg = decode_dml(payload)
        if not isinstance(msg, cls):
            article = "an" if cls.__name__[0] in "AEIOU" else "a"
            raise DmlDecodeError(f"payload is a {type(msg).__name__}, not {article} {cls.__name__}")
        return msg


@dataclass(frozen=True, eq=False)
class InsertBatch(_Message):
    """Rows inserted into one segment of one partition (Milvus ``InsertRequest``).

    ``primary_keys`` is an int64 or utf8 Arrow array, ``timestamps`` a uint64 numpy array (one hybrid
    timestamp per row, as Milvus assigns them), and ``columns`` the field data as a RecordBatch with
    one column per field (float vectors as ``fixed_size_list<float32>[dim]``). Inputs are normalised
    in ``__post_init__``: lists and numpy arrays are accepted, a scalar timestamp is broadcast, and a
    Table is combined into one batch.
    """

    KIND: ClassVar[int] = _KIND_INSERT

    collection_id: int
    partition_id: int
    segment_id: int
    primary_keys: pa.Array
    timestamps: np.ndarray
    columns: pa.RecordBatch = field(repr=False)

    def __post_init__(self) -> None:
        for name in ("collection_id", "partition_id", "segment_id"):
            object.__setattr__(self, name, _as_int64(name, getattr(self, name)))
        pks = _as_pk_array(self.primary_keys)
        cols = self.columns
        if isinstance(cols, pa.Table):
            cols = pa.RecordBatch.from_arrays([c.combine_chunks() for c in cols.columns], schema=cols.schema)
        if not isinstance(cols, pa.RecordBatch):
            raise TypeError(f"columns must be a pyarrow RecordBatch or Table, got {type(cols).__name__}")
        if cols.num_rows != len(pks):
            raise ValueError(f"{len(pks)} primary keys for {cols.num_rows} rows")
        reserved = {PK_COLUMN, TS_COLUMN} & set(cols.schema.names)
        if reserved:
            raise ValueError(f"column names {sorted(reserved)} are reserved")
        object.__setattr__(self, "primary_keys", pks)
        object.__setattr__(self, "timestamps", _as_timestamps(self.timestamps, len(pks)))
        object.__setattr__(self, "columns", cols)

    @property
    def num_rows(self) -> int:
        return len(self.primary_keys)

    def encode(self) -> bytes:
        """Serialise to the DML wire format (see the module docstring)."""
        metadata = dict(self.columns.schema.metadata or {})
        metadata[_META_PREFIX + b"collection_id"] = str(self.collection_id).encode()
        metadata[_META_PREFIX + b"partition_id"] = str(self.partition_id).encode()
        metadata[_META_PREFIX + b"segment_id"] = str(self.segment_id).encode()
        fields = [pa.field(PK_COLUMN, self.primary_keys.type, False), pa.field(TS_COLUMN, pa.uint64(), False)]
        fields.extend(self.columns.schema)
        arrays = [self.primary_keys, pa.array(self.timestamps, type=pa.uint64()), *self.columns.columns]
        return _write_ipc(self.KIND, arrays, fields, metadata)

    @classmethod
    def _from_batch(cls, batch: pa.RecordBatch) -> InsertBatch:
        (coll, part, seg), user_meta = _ids_from_metadata(
            batch.schema.metadata, ("collection_id", "partition_id", "segment_id")
        )
        row_schema = pa.schema(list(batch.schema)[2:], metadata=user_meta or None)
        columns = pa.RecordBatch.from_arrays(batch.columns[2:], schema=row_schema)
        return cls(coll, part, seg, batch.column(0), batch.column(1).to_numpy(), columns)


@dataclass(frozen=True, eq=False)
class DeleteBatch(_Message):
    """Primary keys deleted at given timestamps (Milvus ``DeleteRequest``).

    ``partition_id`` may be -1 for "every partition of the collection", as in Milvus.
    """

    KIND: ClassVar[int] = _KIND_DELETE

    collection_id: int
    partition_id: int
    primary_keys: pa.Array
    timestamps: np.ndarray

    def __post_init__(self) -> None:
        for name in ("collection_id", "partition_id"):
            object.__setattr__(self, name, _as_int64(name, getattr(self, name)))
        pks = _as_pk_array(self.primary_keys)
        object.__setattr__(self, "primary_keys", pks)
        object.__setattr__(self, "timestamps", _as_timestamps(self.timestamps, len(pks)))

    @property
    def num_rows(self) -> int:
        return len(self.primary_keys)

    def encode(self) -> bytes:
        """Serialise to the DML wire format (see the module docstring)."""
        metadata = {
            _META_PREFIX + b"collection_id": str(self.collection_id).encode(),
            _META_PREFIX + b"partition_id": str(self.partition_id).encode(),
        }
        fields = [pa.field(PK_COLUMN, self.primary_keys.type, False), pa.field(TS_COLUMN, pa.uint64(), False)]
        arrays = [self.primary_keys, pa.array(self.timestamps, type=pa.uint64())]
        return _write_ipc(self.KIND, arrays, fields, metadata)

    @classmethod
    def _from_batch(cls, batch: pa.RecordBatch) -> DeleteBatch:
        (coll, part), _ = _ids_from_metadata(batch.schema.metadata, ("collection_id", "partition_id"))
        return cls(coll, part, batch.column(0), batch.column(1).to_numpy())


@dataclass(frozen=True)
class TimeTick(_Message):
    """A channel time tick: every message with a smaller timestamp has been written before it.

    ``source_id`` is the producer's node id (Milvus ``MsgBase.sourceID``), 0 when unknown.
    """

    KIND: ClassVar[int] = _KIND_TIMETICK

    timestamp: int
    source_id: int = 0

    def __post_init__(self) -> None:
        if not 0 <= int(self.timestamp) < 1 << 64:
            raise ValueError(f"timestamp {self.timestamp} is not a uint64")
        object.__setattr__(self, "timestamp", int(self.timestamp))
        object.__setattr__(self, "source_id", _as_int64("source_id", self.source_id))

    def encode(self) -> bytes:
        return _envelope(self.KIND) + _TIMETICK.pack(self.timestamp, self.source_id)


def decode_dml(payload: bytes | bytearray | memoryview) -> InsertBatch | DeleteBatch | TimeTick:
    """Decode any DML payload produced by ``encode()``; raises :class:`DmlDecodeError` if invalid.

    Arrow columns of the result reference ``payload``'s memory (no copy), so keep the payload
    immutable while the batch is in use (``bytes`` always is).
    """
    view = memoryview(payload).cast("B")
    if len(view) < _ENVELOPE.size:
        raise DmlDecodeError(f"DML payload too short ({len(view)} bytes)")
    magic, version, kind, _ = _ENVELOPE.unpack_from(view)
    if magic != MAGIC:
        raise DmlDecodeError(f"not a DML payload (magic {bytes(magic)!r})")
    if version != VERSION:
        raise DmlDecodeError(f"unsupported DML payload version {version}")
    body = view[_ENVELOPE.size :]
    if kind == _KIND_TIMETICK:
        if len(body) != _TIMETICK.size:
            raise DmlDecodeError(f"time tick body must be {_TIMETICK.size} bytes, got {len(body)}")
        ts, source = _TIMETICK.unpack_from(body)
        return TimeTick(ts, source)
    if kind == _KIND_INSERT:
        return InsertBatch._from_batch(_read_ipc(body))
    if kind == _KIND_DELETE:
        return DeleteBatch._from_batch(_read_ipc(body))
    raise DmlDecodeError(f"unknown DML payload kind {kind}")
