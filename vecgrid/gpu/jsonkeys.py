"""One key of a JSON column (a dynamic field's ``$meta``) as typed numpy arrays, for filters.

Milvus evaluates ``year > 2018`` on a dynamic field as a JSON path (``ColumnInfo.nested_path
== ["year"]`` on the ``$meta`` field) by reading the key from every row's JSON document.  Parsing
JSON on every query is the slow part, so :func:`extract` parses a column once into a
:class:`KeyColumn` — per row the value's kind (missing, bool, number, string, other) and its value
in a typed array — and :class:`KeyCache` keeps those per (field, key), bounded, extending an entry
when rows were appended since (growing segments only ever append).

Milvus's semantics, which :mod:`vecgrid.gpu.filter` applies on these arrays: a row whose key is
missing, ``null``, or of another kind than the compared value does not match (``!=`` and ``not in``
are the negations, so they do match it); numbers compare with numbers (integers exactly,
otherwise as doubles), strings with strings, booleans with booleans.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

__all__ = ["KeyColumn", "extract", "KeyCache", "MISSING", "BOOL", "NUMBER", "STRING", "OTHER"]

MISSING, BOOL, NUMBER, STRING, OTHER = 0, 1, 2, 3, 4
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass
class KeyColumn:
    """The values of one JSON key over ``n`` rows: ``kind[i]`` says which array holds row ``i``'s value.

    ``num`` holds every number as a double, ``ints``/``is_int`` the integers exactly (int64 range);
    ``strs`` the strings (``""`` elsewhere), ``bools`` the booleans."""

    kind: np.ndarray      # int8
    num: np.ndarray       # float64, NaN where not a number
    ints: np.ndarray      # int64, 0 where not an integer
    is_int: np.ndarray    # bool
    bools: np.ndarray     # bool
    strs: np.ndarray      # str

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.kind, self.num, self.ints, self.is_int, self.bools, self.strs))

    def head(self, n: int) -> "KeyColumn":
        if n == len(self):
            return self
        return KeyColumn(self.kind[:n], self.num[:n], self.ints[:n], self.is_int[:n], self.bools[:n], self.strs[:n])

    def values(self, rows: np.ndarray) -> list[Any]:
        """The Python values at ``rows`` (``None`` where missing or not a scalar)."""
        out: list[Any] = []
        kinds = self.kind[rows].tolist()
        for r, k in zip(np.asarray(rows).tolist(), kinds):
            if k == NUMBER:
                out.append(int(self.ints[r]) if self.is_int[r] else float(self.num[r]))
            elif k == STRING:
                out.append(str(self.strs[r]))
            elif k == BOOL:
                out.append(bool(self.bools[r]))
            else:
                out.append(None)
        return out


def _loads(doc: Any) -> Any:
    if doc is None:
        return None
    if isinstance(doc, dict):
        return doc
    if isinstance(doc, np.ndarray):
        doc = doc.tobytes()
    try:
        return orjson.loads(doc)
    except orjson.JSONDecodeError:
        return json.loads(doc)  # what orjson refuses (e.g. integers beyond 64 bits) the stdlib reads


def extract(docs: Any, key: str) -> KeyColumn:
    """``key`` of every JSON object in ``docs`` (bytes, str, dicts or ``None``; a row that is not an object,
    or lacks the key, is missing)."""
    n = len(docs)
    kind = np.zeros(n, np.int8)
    num = np.full(n, np.nan, np.float64)
    ints = np.zeros(n, np.int64)
    is_int = np.zeros(n, bool)
    bools = np.zeros(n, bool)
    strs: list[str] = [""] * n
    for i, doc in enumerate(docs):
        obj = _loads(doc)
        if not isinstance(obj, dict):
            continue
        v = obj.get(key)
        if v is None:
            continue
        if v is True or v is False:
            kind[i] = BOOL
            bools[i] = v
        elif isinstance(v, int):
            kind[i] = NUMBER
            num[i] = float(v)
            if _INT64_MIN <= v <= _INT64_MAX:
                ints[i] = v
                is_int[i] = True
        elif isinstance(v, float):
            kind[i] = NUMBER
            num[i] = v
        elif isinstance(v, str):
            kind[i] = STRING
            strs[i] = v
        else:
            kind[i] = OTHER
    return KeyColumn(kind, num, ints, is_int, bools, np.asarray(strs, dtype=str) if n else np.zeros(0, dtype=str))


def _concat(a: KeyColumn, b: KeyColumn) -> KeyColumn:
    return KeyColumn(*(np.concatenate([x, y]) for x, y in zip(
        (a.kind, a.num, a.ints, a.is_int, a.bools, a.strs), (b.kind, b.num, b.ints, b.is_int, b.bools, b.strs))))


class KeyCache:
    """Extracted keys of a segment's JSON columns, least recently used dropped beyond ``max_bytes``.

    An entry covers the first ``len(entry)`` rows; a request for more rows (a growing segment appended)
    extracts only the new ones.  Owned by its lock: queries on the segment's rows run in several threads."""

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[int, str], KeyColumn] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, field_id: int, key: str, docs: Any, n: int) -> KeyColumn:
        """``key`` over the first ``n`` rows of ``docs`` (the JSON column of ``field_id``)."""
        with self._lock:
            entry = self._entries.get((field_id, key))
            if entry is not None and len(entry) >= n:
                self._entries.move_to_end((field_id, key))
                return entry.head(n)
            start = 0 if entry is None else len(entry)
            more = extract(docs[start:n], key)
            fresh = more if entry is None else _concat(entry, more)
            if entry is not None:
                self._bytes -= entry.nbytes
            self._entries[(field_id, key)] = fresh
            self._entries.move_to_end((field_id, key))
            self._bytes += fresh.nbytes
            while self._bytes > self.max_bytes and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= dropped.nbytes
            return fresh

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
