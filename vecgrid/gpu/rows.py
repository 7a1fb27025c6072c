"""Per-row state shared by sealed and growing segments: keys, timestamps, columns, deletes.

A :class:`RowStore` holds, for the rows of one segment, the primary keys, the
insert timestamps (optional), the scalar columns (field id → 1-D numpy array) and
the delete log, and answers two questions:

* :meth:`RowStore.mask` — which rows a request at timestamp ``ts`` may return: the
  filter expression's rows, minus rows inserted after ``ts``, minus rows deleted
  at or before ``ts``.  Milvus's rule for a delete ``(pk, d)``: it hides the rows
  with that key whose insert timestamp is *before* ``d`` (an upsert's new row,
  stamped ``d`` itself, survives), and only for requests with ``ts >= d``.
* :meth:`RowStore.fetch` — output-field values of given rows.

Deletes are folded into one array, ``deleted_at[row]`` = the earliest delete
timestamp that hides the row, so the per-request cost is one comparison per row.
Rows can be appended (growing segments); arrays grow by doubling.

**Concurrency.**  One writer: a growing segment's channel pipeline thread appends rows and
applies deletes (a sealed segment's rows never grow; the node applies its deletes).  Readers
(search, query, count threads) take no lock.  What a reader may rely on is a *snapshot
length*: read :attr:`RowStore.n` once, and the first ``n`` rows of every array (keys,
timestamps, columns, delete state) are there and never change, except that a delete may hide
some of them (by timestamp, so a request below the delete's timestamp still sees them).  The
row count is published last by :meth:`RowStore.append`, after every column has the new rows.
A read that takes ``n`` twice may see two lengths: every mask, count and fetch of one read is
given the same ``n`` (:meth:`RowStore.mask`, :meth:`RowStore.count` and
:meth:`RowStore.matching_rows` take it once when not given).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from vecgrid import errors
from vecgrid.gpu import filter as vfilter
from vecgrid.gpu.columns import FieldColumn
from vecgrid.gpu.jsonkeys import KeyCache, KeyColumn
from vecgrid.gpu.results import datatype_of
from vecgrid.proto import plan_pb2, schema_pb2
from vecgrid.storage.mapped import is_mapped

__all__ = ["RowStore", "FieldMeta", "fields_from_schema"]

NEVER = np.iinfo(np.uint64).max


class FieldMeta:
    __slots__ = ("field_id", "name", "data_type", "dim", "is_primary_key", "is_dynamic")

    def __init__(self, field_id: int, name: str, data_type: int, dim: int = 0,
                 is_primary_key: bool = False, is_dynamic: bool = False) -> None:
        self.field_id, self.name, self.data_type, self.dim = field_id, name, data_type, dim
        self.is_primary_key, self.is_dynamic = is_primary_key, is_dynamic


def bitmap_selector(faiss: Any, allowed: np.ndarray | None) -> tuple[Any, Any]:
    """faiss's ``IDSelectorBitmap`` of the rows ``allowed`` (a bool mask over row offsets) and the
    packed bits it reads, which the caller keeps alive while the search runs; ``(None, None)`` for
    every row.  The selector is sized in bytes: an id beyond the mask is outside it."""
    if allowed is None:
        return None, None
    bits = np.packbits(allowed, bitorder="little")
    return faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits)), bits


def fields_from_schema(schema: schema_pb2.CollectionSchema | Sequence[schema_pb2.FieldSchema] | None
                       ) -> dict[int, FieldMeta]:
    if schema is None:
        return {}
    fields = schema.fields if isinstance(schema, schema_pb2.CollectionSchema) else schema
    out = {}
    for f in fields:
        dim = 0
        for kv in f.type_params:
            if kv.key == "dim":
                try:
                    dim = int(kv.value)
                except ValueError:
                    dim = 0
        out[f.fieldID] = FieldMeta(f.fieldID, f.name, f.data_type, dim, f.is_primary_key, f.is_dynamic)
    return out


def _as_pk_array(pks: Any) -> np.ndarray:
    a = np.asarray(pks)
    if a.dtype.kind in "iu":
        return a.astype(np.int64, copy=False)
    if a.dtype.kind in "UOS" or a.size == 0:
        return a.astype(str) if a.size else np.zeros(0, dtype=np.int64)
    raise errors.ParameterInvalid(f"primary keys must be Int64 or VarChar, got {a.dtype}")


def _as_column(values: Any, meta: FieldMeta | None) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype.kind in "OS" and (meta is None or meta.data_type in (schema_pb2.VarChar, schema_pb2.String)):
        a = a.astype(str)
    if meta is not None and meta.data_type in (schema_pb2.Int8, schema_pb2.Int16, schema_pb2.Int32,
                                                schema_pb2.Int64, schema_pb2.Float, schema_pb2.Double,
                                                schema_pb2.Bool):
        from vecgrid.gpu.results import _NUMPY_OF

        a = a.astype(_NUMPY_OF[meta.data_type], copy=False)
    return a


class _Grow:
    """An append-only array with doubling capacity; ``view()`` is the filled part."""

    __slots__ = ("buf", "n")

    def __init__(self, arr: np.ndarray) -> None:
        self.buf = arr
        self.n = len(arr)

    def view(self) -> np.ndarray:
        return self.buf[: self.n]

    def append(self, more: np.ndarray) -> None:
        need = self.n + len(more)
        dtype = np.result_type(self.buf, more) if self.buf.dtype != more.dtype else self.buf.dtype
        if need > len(self.buf) or dtype != self.buf.dtype or not self.buf.flags.writeable:
            cap = max(need, 2 * len(self.buf), 16)
            buf = np.empty((cap,) + self.buf.shape[1:], dtype=dtype)
            buf[: self.n] = self.buf[: self.n]
            self.buf = buf
        self.buf[self.n:need] = more
        self.n = need


def _one_if_constant(timestamps: np.ndarray) -> np.ndarray:
    """The timestamps as one value repeated when they are all equal (every row of a bulk import has
    the import's timestamp): 8 bytes instead of 8 a row, read as the array (an append copies it out)."""
    if len(timestamps) > 1 and timestamps.strides[0] and timestamps.min() == timestamps.max():
        return np.broadcast_to(timestamps[:1].copy(), timestamps.shape)   # a copy: not a view of the column
    return timestamps


def _memory_bytes(a: np.ndarray) -> int:
    """The bytes ``a`` holds in memory: none for a file mapping, one row for a value repeated."""
    if is_mapped(a):
        return 0
    if a.ndim and len(a) > 1 and a.strides[0] == 0:
        return a.itemsize * int(np.prod(a.shape[1:], dtype=np.int64))
    return a.nbytes


class RowStore:
    """Keys, timestamps, scalar columns and deletes of a segment's rows.

    Written by one thread (a growing segment's pipeline thread), read lock-free by many: a reader
    reads :attr:`n` once and passes it to every mask/count of its read (see the module docstring)."""

    def __init__(self, pks: Any, *, columns: Mapping[int, Any] | None = None,
                 timestamps: Any = None, fields: Mapping[int, FieldMeta] | None = None,
                 pk_field_id: int | None = None) -> None:
        self.fields: dict[int, FieldMeta] = dict(fields or {})
        pk_arr = _as_pk_array(pks)
        self._pks = _Grow(pk_arr)
        n = len(pk_arr)
        self._ts = None if timestamps is None else _Grow(_one_if_constant(self._check_len(
            np.asarray(timestamps, dtype=np.uint64), n, "timestamps")))
        self._cols: dict[int, _Grow] = {}
        for fid, values in (columns or {}).items():
            self._cols[int(fid)] = _Grow(self._check_len(_as_column(values, self.fields.get(int(fid))),
                                                          n, f"column {fid}"))
        if pk_field_id is None:
            pk_field_id = next((f.field_id for f in self.fields.values() if f.is_primary_key), None)
        self.pk_field_id = pk_field_id
        self._deleted_at: _Grow | None = None
        self._min_deleted = NEVER
        self._max_ts = int(self._ts.view().max()) if self._ts is not None and n else 0
        self._order: np.ndarray | None = None
        # (row count, no key twice): see keys_unique(); replaced whole by any search thread
        self._unique: tuple[int, bool] = (-1, False)
        self._xp_cache: dict[int, Any] = {}
        self._json_keys = KeyCache()  # keys of JSON columns that filters read, extracted once
        self._lock = threading.Lock()
        self.vector_getter: Callable[[int, np.ndarray], np.ndarray | None] | None = None
        self.vector_fields: dict[int, int] = {}  # field id -> dim of vectors vector_getter serves

    @staticmethod
    def _check_len(a: np.ndarray, n: int, what: str) -> np.ndarray:
        if len(a) != n:
            raise errors.ParameterInvalid(f"{what} has {len(a)} rows, expected {n}")
        return a

    # -- shape ---------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """The row count now: a reader's snapshot length (append publishes it last)."""
        return self._pks.n

    @property
    def pks(self) -> np.ndarray:
        return self._pks.view()

    @property
    def timestamps(self) -> np.ndarray | None:
        return None if self._ts is None else self._ts.view()

    def column(self, field_id: int) -> np.ndarray | None:
        g = self._cols.get(field_id)
        return None if g is None else g.view()

    @property
    def columns(self) -> dict[int, np.ndarray]:
        return {fid: g.view() for fid, g in self._cols.items()}

    def nbytes(self) -> int:
        """Host memory of keys, timestamps, columns and delete state (a column mapped from a file is
        on disk, not counted; a constant timestamp column counts one value)."""
        total = _memory_bytes(self._pks.buf) + sum(_memory_bytes(g.buf) for g in self._cols.values())
        if self._ts is not None:
            total += _memory_bytes(self._ts.buf)
        if self._deleted_at is not None:
            total += self._deleted_at.buf.nbytes
        if self._order is not None:
            total += self._order.nbytes * 2
        return total + self._json_keys.nbytes

    # -- growing -------------------------------------------------------------------------------
    def append(self, pks: Any, *, timestamps: Any = None, columns: Mapping[int, Any] | None = None) -> None:
        p = _as_pk_array(pks)
        m = len(p)
        with self._lock:
            if self._ts is not None:
                if timestamps is None:
                    raise errors.ParameterInvalid("this segment needs insert timestamps")
                ts = np.broadcast_to(np.asarray(timestamps, dtype=np.uint64), (m,))
                self._ts.append(ts)
                if m:
                    self._max_ts = max(self._max_ts, int(ts.max()))
            cols = dict(columns or {})
            for fid, g in self._cols.items():
                if fid not in cols:
                    raise errors.ParameterInvalid(f"insert lacks column {fid}")
                g.append(self._check_len(_as_column(cols.pop(fid), self.fields.get(fid)), m, f"column {fid}"))
            if cols and self.n:
                raise errors.ParameterInvalid(f"unknown columns {sorted(cols)}")
            for fid, values in cols.items():
                self._cols[int(fid)] = _Grow(self._check_len(_as_column(values, self.fields.get(int(fid))),
                                                              m, f"column {fid}"))
            if self._deleted_at is not None:
                self._deleted_at.append(np.full(m, NEVER, dtype=np.uint64))
            self._pks.append(p)
            self._order = None

    # -- deletes -------------------------------------------------------------------------------
    def _sorted_keys(self) -> tuple[np.ndarray, np.ndarray]:
        if self._order is None or len(self._order) != self.n:
            self._order = np.argsort(self.pks, kind="stable")
        return self._order, self.pks[self._order]

    def keys_unique(self) -> bool:
        """Whether no primary key appears twice among the rows (Milvus lets a collection without auto
        ids insert one twice); computed once per row count, keeping no sorted copy."""
        n, unique = self._unique
        pks = self.pks  # one snapshot: its length is the row count the answer is for
        if n != len(pks):
            n = len(pks)
            unique = len(np.unique(pks)) == n
            self._unique = (n, unique)
        return unique

    def delete(self, pks: Any, timestamps: Any = None) -> int:
        """Apply deletes ``(pk, ts)``; returns how many rows they hide (at the latest time).

        ``timestamps`` may be one value for all or ``None`` (hide at any time)."""
        dp = _as_pk_array(pks)
        if not len(dp):
            return 0
        if self.pks.dtype.kind in "iu" and dp.dtype.kind not in "iu" or \
                self.pks.dtype.kind == "U" and dp.dtype.kind != "U" and len(self.pks):
            raise errors.ParameterInvalid("delete keys do not match the primary key type")
        # no timestamp: hidden from every request, whatever the row's insert time
        dts = np.broadcast_to(np.asarray(0 if timestamps is None else timestamps, dtype=np.uint64),
                              (len(dp),))
        check_row_ts = timestamps is not None
        with self._lock:
            if self.n == 0:
                return 0
            order, skeys = self._sorted_keys()
            if self._deleted_at is None:
                self._deleted_at = _Grow(np.full(self.n, NEVER, dtype=np.uint64))
            deleted_at = self._deleted_at.view()
            row_ts = self.timestamps
            # process in layers so that each layer has distinct keys
            o = np.lexsort((dts, dp))
            dp, dts = dp[o], dts[o]
            first = np.ones(len(dp), dtype=bool)
            first[1:] = dp[1:] != dp[:-1]
            group_start = np.maximum.accumulate(np.where(first, np.arange(len(dp)), 0))
            layer = np.arange(len(dp)) - group_start
            hidden = 0
            for li in range(int(layer.max()) + 1):
                sel = layer == li
                lp, lt = dp[sel], dts[sel]
                lo = np.searchsorted(skeys, lp, "left")
                hi = np.searchsorted(skeys, lp, "right")
                counts = hi - lo
                if not counts.any():
                    continue
                base = np.repeat(lo, counts)
                within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
                rows = order[base + within]
                ts_rep = np.repeat(lt, counts)
                if row_ts is not None and check_row_ts:
                    ok = row_ts[rows] < ts_rep
                    rows, ts_rep = rows[ok], ts_rep[ok]
                before = deleted_at[rows]
                np.minimum.at(deleted_at, rows, ts_rep)
                hidden += int(np.count_nonzero(before == NEVER))
            live = deleted_at[deleted_at != NEVER]
            self._min_deleted = int(live.min()) if len(live) else NEVER
            return hidden

    def clear_deletes(self) -> None:
        """Forget every delete (e.g. before re-applying a segment's delete log)."""
        with self._lock:
            self._deleted_at = None
            self._min_deleted = NEVER

    @property
    def num_deleted(self) -> int:
        if self._deleted_at is None:
            return 0
        return int(np.count_nonzero(self._deleted_at.view() != NEVER))

    # -- masks ---------------------------------------------------------------------------------
    def visibility(self, ts: int | None = None, n: int | None = None) -> np.ndarray | None:
        """Rows a request at ``ts`` may see (``None`` = all of the first ``n`` rows)."""
        n = self.n if n is None else n
        mask = None
        # _max_ts is raised before a row is published: ts >= it means every row below n is visible
        if ts is not None and self._ts is not None and ts < self._max_ts:
            mask = self._ts.view()[:n] <= np.uint64(ts)
        deleted_at = self._deleted_at  # read once: clear_deletes may drop it meanwhile
        if deleted_at is not None and self._min_deleted != NEVER and \
                (ts is None or ts >= self._min_deleted):
            limit = np.uint64(NEVER - 1 if ts is None else ts)
            alive = deleted_at.view()[:n] > limit
            mask = alive if mask is None else mask & alive
        return mask

    def filter_mask(self, expr: plan_pb2.Expr | None, n: int | None = None, xp: Any = np) -> Any:
        """The filter's rows (``None`` when ``expr`` filters nothing)."""
        if vfilter.is_trivial(expr):
            return None
        n = self.n if n is None else n
        # list(): a first insert may add columns meanwhile; vector columns are not filtered on
        cols = {fid: g.view()[:n] for fid, g in list(self._cols.items()) if g.buf.ndim == 1}
        if xp is not np:  # keep device copies of the numeric columns (strings stay on the host)
            cache = self._xp_cache
            for fid, col in cols.items():
                if col.dtype.kind in "biuf":
                    dev = cache.get(fid)
                    if dev is None or len(dev) != n:
                        dev = cache[fid] = xp.asarray(col)
                    cols[fid] = dev
        pks = self.pks[:n]
        if self.pk_field_id is not None:
            cols.setdefault(self.pk_field_id, pks)
        return vfilter.evaluate(expr, cols, n, pks=pks, xp=xp, json_keys=lambda fid, key: self.json_key(fid, key, n))

    def json_key(self, field_id: int, key: str, n: int | None = None) -> KeyColumn:
        """``key`` of the JSON column ``field_id`` over the first ``n`` rows, from the segment's cache."""
        g = self._cols.get(field_id)
        if g is None:
            raise errors.ParameterInvalid(f"field {field_id} is not loaded in this segment")
        n = self.n if n is None else n
        return self._json_keys.get(field_id, key, g.view(), n)

    def mask(self, expr: plan_pb2.Expr | None = None, ts: int | None = None, n: int | None = None,
             xp: Any = np) -> np.ndarray | None:
        """Rows that pass ``expr`` and are visible at ``ts`` among the first ``n`` (host bool array;
        ``None`` = all ``n``).  ``n`` defaults to the row count now, read once for both masks."""
        n = self.n if n is None else n
        f = self.filter_mask(expr, n, xp)
        if f is not None and xp is not np:
            f = xp.asnumpy(f)
        v = self.visibility(ts, n)
        if f is None:
            return v
        return f if v is None else f & v

    def count(self, expr: plan_pb2.Expr | None = None, ts: int | None = None, n: int | None = None) -> int:
        """How many of the first ``n`` rows (default: the row count now) pass ``expr`` at ``ts``."""
        n = self.n if n is None else n
        mask = self.mask(expr, ts, n)
        return n if mask is None else int(np.count_nonzero(mask))

    def matching_rows(self, expr: plan_pb2.Expr | None = None, ts: int | None = None,
                      n: int | None = None) -> np.ndarray:
        """Offsets (int64) of the first ``n`` rows (default: the row count now) passing ``expr`` at ``ts``."""
        n = self.n if n is None else n
        mask = self.mask(expr, ts, n)
        return np.arange(n, dtype=np.int64) if mask is None else np.flatnonzero(mask).astype(np.int64)

    # -- output --------------------------------------------------------------------------------
    def resolve_field(self, name_or_id: int | str) -> FieldMeta:
        if isinstance(name_or_id, (int, np.integer)):
            fid = int(name_or_id)
            meta = self.fields.get(fid)
            if meta is None and fid in self.vector_fields:
                meta = FieldMeta(fid, str(fid), schema_pb2.FloatVector, self.vector_fields[fid])
            if meta is None:
                col = self._cols.get(fid)
                if col is None and fid != self.pk_field_id:
                    raise errors.FieldNotFound(f"field {fid} is not in this segment")
                vals = self.pks if col is None else col.view()
                meta = FieldMeta(fid, str(fid), datatype_of(vals), vals.shape[1] if vals.ndim == 2 else 0,
                                 fid == self.pk_field_id)
            return meta
        for meta in self.fields.values():
            if meta.name == name_or_id:
                return meta
        raise errors.FieldNotFound(f"field {name_or_id!r} is not in this segment")

    def fetch(self, rows: np.ndarray, fields: Iterable[int | str]) -> list[FieldColumn]:
        """Values of ``fields`` (names or ids) at ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        out = []
        for f in fields:
            meta = self.resolve_field(f)
            fid = meta.field_id
            if fid in self._cols:
                vals = self._cols[fid].view()[rows]
            elif fid == self.pk_field_id or meta.is_primary_key:
                vals = self.pks[rows]
            else:
                vals = self.vector_getter(fid, rows) if self.vector_getter is not None else None
                if vals is None:
                    raise errors.FieldNotFound(f"field {meta.name!r} has no data loaded in this segment")
            out.append(FieldColumn(meta.name, fid, meta.data_type, vals,
                                   meta.dim or (vals.shape[1] if vals.ndim == 2 else 0), meta.is_dynamic))
        return out
