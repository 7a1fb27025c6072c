"""Evaluate a Milvus ``plan.Expr`` filter to a row bitset.

:func:`evaluate` walks the expression tree over a segment's columns (a mapping of
field id → 1-D array, plus the primary keys) and returns a boolean array with one
entry per row, ``True`` where the row passes.  Numeric and boolean columns are
evaluated with ``xp`` — numpy on the host, cupy on a GPU (pass ``xp=cupy`` and cupy
or numpy columns); VarChar columns are always evaluated with numpy (cupy has no
strings) and the result moved to ``xp``.

Supported (everything Milvus 2.4's parser emits for scalar fields):

* ``TermExpr``: ``a in [...]`` (``is_in_field`` — array contains — is not);
* ``UnaryRangeExpr``: ``> >= < <= == !=``, ``PrefixMatch`` / ``PostfixMatch`` /
  ``Match`` (``like``: ``%`` any run, ``_`` one character) on VarChar;
* ``BinaryRangeExpr``: ``lo <(=) a <(=) hi``;
* ``BinaryExpr`` (``and`` / ``or``), ``UnaryExpr`` (``not``);
* ``CompareExpr`` (column vs column), ``BinaryArithOpEvalRangeExpr`` (``a + 1 == 3``;
  add, sub, mul, div, mod), ``AlwaysTrueExpr``, a Bool ``ColumnExpr`` / ``ValueExpr``;

on Bool, Int8/16/32/64, Float, Double, VarChar/String fields and the primary key.

A key of a JSON field — the dynamic field's ``$meta`` above all — is a ``ColumnInfo`` with a
``nested_path`` of one key, as Milvus's parser emits for ``year > 2018`` on a collection with
the dynamic field: ``TermExpr``, ``UnaryRangeExpr`` (comparisons, ``like`` / prefix /
postfix) and ``BinaryRangeExpr`` evaluate on it with Milvus's rules (:mod:`vecgrid.gpu.jsonkeys`:
a row lacking the key or holding another kind of value does not match; ``!=`` and ``not in``
are negations and do).  The key's values come from ``json_keys(field_id, key)`` (a cache of
extracted columns; without it the JSON column is parsed for this call only).  Longer paths,
arithmetic and column comparisons on JSON keys, Array fields, ``exists`` and
``json_contains`` raise :class:`vecgrid.errors.ParameterInvalid` with the reason, as does a
value whose type does not fit the column (e.g. a string compared with an Int64 field).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import numpy as np

from vecgrid import errors
from vecgrid.gpu import jsonkeys
from vecgrid.proto import plan_pb2, schema_pb2

__all__ = ["evaluate", "is_trivial", "ColumnLookup", "JsonKeys"]

ColumnLookup = Callable[[plan_pb2.ColumnInfo], Any]
JsonKeys = Callable[[int, str], jsonkeys.KeyColumn]

_CMP = {
    plan_pb2.GreaterThan: "gt", plan_pb2.GreaterEqual: "ge", plan_pb2.LessThan: "lt",
    plan_pb2.LessEqual: "le", plan_pb2.Equal: "eq", plan_pb2.NotEqual: "ne",
}
_UNSUPPORTED_TYPES = {schema_pb2.JSON: "JSON", schema_pb2.Array: "Array"}


def is_trivial(expr: plan_pb2.Expr | None) -> bool:
    """True when ``expr`` filters nothing (absent, empty or ``AlwaysTrueExpr``)."""
    if expr is None:
        return True
    which = expr.WhichOneof("expr")
    return which is None or which == "always_true_expr"


def evaluate(expr: plan_pb2.Expr, columns: Mapping[int, Any] | ColumnLookup, n: int, *,
             pks: Any = None, xp: Any = np, json_keys: JsonKeys | None = None) -> Any:
    """The boolean row mask of ``expr`` over ``n`` rows.

    ``columns``: field id → array (length ``n``), or a callable taking a
    ``plan.ColumnInfo``; ``pks``: the primary keys, used for a column marked
    ``is_primary_key`` that ``columns`` lacks; ``json_keys(field_id, key)``: one key of a
    JSON column over the ``n`` rows (a cache's), else the JSON column is parsed here."""
    if callable(columns):
        lookup = columns
    else:
        def lookup(info: plan_pb2.ColumnInfo) -> Any:
            col = columns.get(info.field_id)
            if col is None and info.is_primary_key and pks is not None:
                col = pks
            if col is None:
                raise errors.ParameterInvalid(f"field {info.field_id} is not loaded in this segment")
            return col
    return _Evaluator(lookup, n, xp, json_keys).eval(expr)


def _is_str(col: Any) -> bool:
    return getattr(col, "dtype", None) is not None and col.dtype.kind in "UOS"


def _like_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


class _Evaluator:
    def __init__(self, lookup: ColumnLookup, n: int, xp: Any, json_keys: JsonKeys | None = None) -> None:
        self.lookup = lookup
        self.n = n
        self.xp = xp
        self.json_keys = json_keys

    # -- helpers -------------------------------------------------------------------------------
    def column(self, info: plan_pb2.ColumnInfo) -> Any:
        if info.nested_path:
            raise errors.ParameterInvalid(
                f"this filter on JSON path {list(info.nested_path)} of field {info.field_id} is not supported "
                "(comparisons, ranges, in / not in and like are)")
        if info.data_type in _UNSUPPORTED_TYPES:
            raise errors.ParameterInvalid(
                f"filter on {_UNSUPPORTED_TYPES[info.data_type]} field {info.field_id} is not supported")
        col = self.lookup(info)
        if len(col) != self.n:
            raise errors.ParameterInvalid(
                f"column of field {info.field_id} has {len(col)} rows, segment has {self.n}")
        if _is_str(col):
            return np.asarray(col) if not isinstance(col, np.ndarray) else col
        if self.xp is not np and isinstance(col, np.ndarray):
            return self.xp.asarray(col)
        return col

    def json_key(self, info: plan_pb2.ColumnInfo) -> jsonkeys.KeyColumn | None:
        """The key column of a one-key JSON path; ``None`` when ``info`` is a plain column."""
        if not info.nested_path:
            return None
        if len(info.nested_path) != 1:
            raise errors.ParameterInvalid(f"JSON path {list(info.nested_path)} of field {info.field_id}: only "
                                          "paths of one key are supported")
        if info.data_type != schema_pb2.JSON:
            raise errors.ParameterInvalid(f"a nested path needs a JSON field; field {info.field_id} is "
                                          f"{schema_pb2.DataType.Name(info.data_type)}")
        key = info.nested_path[0]
        if self.json_keys is not None:
            kc = self.json_keys(info.field_id, key)
        else:
            kc = jsonkeys.extract(self.lookup(info), key)
        if len(kc) != self.n:
            raise errors.ParameterInvalid(f"JSON key {key!r} of field {info.field_id} has {len(kc)} rows, "
                                          f"segment has {self.n}")
        return kc

    @staticmethod
    def json_value(gv: plan_pb2.GenericValue, where: str) -> Any:
        which = gv.WhichOneof("val")
        if which in ("bool_val", "int64_val", "float_val", "string_val"):
            return getattr(gv, which)
        raise errors.ParameterInvalid(f"{which or 'an empty value'} cannot be compared with JSON key {where}")

    def json_cmp(self, kc: jsonkeys.KeyColumn, op: str, v: Any) -> np.ndarray:
        """Milvus's comparison of a JSON key with a constant (module doc of :mod:`.jsonkeys`)."""
        if op == "ne":
            return ~self.json_cmp(kc, "eq", v)
        if isinstance(v, bool):
            return (kc.kind == jsonkeys.BOOL) & self.cmp(kc.bools, op, v)
        if isinstance(v, int):
            exact = kc.is_int & self.cmp(kc.ints, op, v) if -(1 << 63) <= v < (1 << 63) else \
                kc.is_int & self.cmp(kc.num, op, float(v))
            as_double = (kc.kind == jsonkeys.NUMBER) & ~kc.is_int & self.cmp(kc.num, op, float(v))
            return exact | as_double
        if isinstance(v, float):
            return (kc.kind == jsonkeys.NUMBER) & self.cmp(kc.num, op, v)
        return (kc.kind == jsonkeys.STRING) & self.cmp(kc.strs, op, v)

    def json_term(self, kc: jsonkeys.KeyColumn, values: list[Any]) -> np.ndarray:
        out = np.zeros(len(kc), dtype=bool)
        bools = [v for v in values if isinstance(v, bool)]
        ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < (1 << 63)]
        floats = [float(v) for v in values if isinstance(v, float)
                  or (isinstance(v, int) and not isinstance(v, bool) and v not in ints)]
        strs = [v for v in values if isinstance(v, str)]
        if bools:
            out |= (kc.kind == jsonkeys.BOOL) & np.isin(kc.bools, np.asarray(bools, dtype=bool))
        if ints or floats:
            is_float = (kc.kind == jsonkeys.NUMBER) & ~kc.is_int
            if ints:
                out |= kc.is_int & np.isin(kc.ints, np.asarray(ints, dtype=np.int64))
            if floats:
                out |= kc.is_int & np.isin(kc.num, np.asarray(floats, dtype=np.float64))
            out |= is_float & np.isin(kc.num, np.asarray(floats + [float(v) for v in ints], dtype=np.float64))
        if strs:
            out |= (kc.kind == jsonkeys.STRING) & np.isin(kc.strs, np.asarray(strs, dtype=str))
        return out

    def to_xp(self, mask: Any) -> Any:
        if self.xp is not np and isinstance(mask, np.ndarray):
            return self.xp.asarray(mask)
        return mask

    def value(self, gv: plan_pb2.GenericValue, col: Any, field_id: int) -> Any:
        which = gv.WhichOneof("val")
        if which is None:
            raise errors.ParameterInvalid(f"empty value in filter on field {field_id}")
        if which == "array_val":
            raise errors.ParameterInvalid(f"array value in filter on field {field_id} is not supported")
        kind = col.dtype.kind
        v = getattr(gv, which)
        if kind == "b":
            if which != "bool_val":
                raise errors.ParameterInvalid(f"cannot compare Bool field {field_id} with {which}")
            return bool(v)
        if kind in "iuf":
            if which not in ("int64_val", "float_val"):
                raise errors.ParameterInvalid(f"cannot compare numeric field {field_id} with {which}")
            return v
        if kind in "UOS":
            if which != "string_val":
                raise errors.ParameterInvalid(f"cannot compare VarChar field {field_id} with {which}")
            return v
        raise errors.ParameterInvalid(f"field {field_id} has an unsupported column type {col.dtype}")

    def xmod(self, col: Any) -> Any:
        return np if _is_str(col) else self.xp

    @staticmethod
    def cmp(col: Any, op: str, v: Any) -> Any:
        if op == "gt":
            return col > v
        if op == "ge":
            return col >= v
        if op == "lt":
            return col < v
        if op == "le":
            return col <= v
        if op == "eq":
            return col == v
        return col != v

    # -- nodes -------------------------------------------------------------------------------------
    def eval(self, e: plan_pb2.Expr) -> Any:
        which = e.WhichOneof("expr")
        if which is None or which == "always_true_expr":
            return self.xp.ones(self.n, dtype=bool)
        fn = getattr(self, "_" + which, None)
        if fn is None:
            raise errors.ParameterInvalid(f"filter expression {which} is not supported")
        return fn(getattr(e, which))

    def _binary_expr(self, b: plan_pb2.BinaryExpr) -> Any:
        if b.op == plan_pb2.BinaryExpr.LogicalAnd:
            left = self.eval(b.left)
            if not bool(left.any()):
                return left
            return left & self.eval(b.right)
        if b.op == plan_pb2.BinaryExpr.LogicalOr:
            left = self.eval(b.left)
            if bool(left.all()):
                return left
            return left | self.eval(b.right)
        raise errors.ParameterInvalid(f"binary operator {b.op} is not supported")

    def _unary_expr(self, u: plan_pb2.UnaryExpr) -> Any:
        if u.op != plan_pb2.UnaryExpr.Not:
            raise errors.ParameterInvalid(f"unary operator {u.op} is not supported")
        return ~self.eval(u.child)

    def _term_expr(self, t: plan_pb2.TermExpr) -> Any:
        if t.is_in_field:
            raise errors.ParameterInvalid("'array contains' (is_in_field) filters are not supported")
        kc = self.json_key(t.column_info)
        if kc is not None:
            where = f"{t.column_info.nested_path[0]!r}"
            return self.to_xp(self.json_term(kc, [self.json_value(v, where) for v in t.values]))
        col = self.column(t.column_info)
        values = [self.value(v, col, t.column_info.field_id) for v in t.values]
        if not values:
            return self.xp.zeros(self.n, dtype=bool)
        xm = self.xmod(col)
        if _is_str(col):
            return self.to_xp(np.isin(col, np.asarray(values, dtype=str)))
        if col.dtype.kind in "iu" and all(isinstance(v, int) for v in values):
            return xm.isin(col, xm.asarray(np.asarray(values, dtype=np.int64)))
        return xm.isin(col, xm.asarray(np.asarray(values, dtype=np.float64 if col.dtype.kind != "b" else bool)))

    def _unary_range_expr(self, u: plan_pb2.UnaryRangeExpr) -> Any:
        kc = self.json_key(u.column_info)
        if kc is not None:
            return self.to_xp(self._json_unary(kc, u))
        col = self.column(u.column_info)
        if u.op in (plan_pb2.PrefixMatch, plan_pb2.PostfixMatch, plan_pb2.Match) and not _is_str(col):
            raise errors.ParameterInvalid(
                f"pattern match on non-VarChar field {u.column_info.field_id} is not supported")
        v = self.value(u.value, col, u.column_info.field_id)
        if u.op in _CMP:
            return self.to_xp(self.cmp(col, _CMP[u.op], v))
        if u.op in (plan_pb2.PrefixMatch, plan_pb2.PostfixMatch, plan_pb2.Match):
            col = col if col.dtype.kind == "U" else col.astype(str)
            if u.op == plan_pb2.PrefixMatch:
                return self.to_xp(np.strings.startswith(col, v))
            if u.op == plan_pb2.PostfixMatch:
                return self.to_xp(np.strings.endswith(col, v))
            rx = _like_regex(v)
            match = np.frompyfunc(lambda s: rx.fullmatch(s) is not None, 1, 1)
            return self.to_xp(match(col).astype(bool) if len(col) else np.zeros(0, dtype=bool))
        raise errors.ParameterInvalid(f"operator {plan_pb2.OpType.Name(u.op)} is not supported in a range filter")

    def _json_unary(self, kc: jsonkeys.KeyColumn, u: plan_pb2.UnaryRangeExpr) -> np.ndarray:
        v = self.json_value(u.value, repr(u.column_info.nested_path[0]))
        if u.op in _CMP:
            return self.json_cmp(kc, _CMP[u.op], v)
        if u.op in (plan_pb2.PrefixMatch, plan_pb2.PostfixMatch, plan_pb2.Match):
            if not isinstance(v, str):
                raise errors.ParameterInvalid("a pattern match takes a string pattern")
            is_str = kc.kind == jsonkeys.STRING
            if u.op == plan_pb2.PrefixMatch:
                return is_str & np.strings.startswith(kc.strs, v)
            if u.op == plan_pb2.PostfixMatch:
                return is_str & np.strings.endswith(kc.strs, v)
            rx = _like_regex(v)
            out = np.zeros(len(kc), dtype=bool)
            rows = np.flatnonzero(is_str)
            if len(rows):
                strs = kc.strs[rows].tolist()
                out[rows] = [rx.fullmatch(x) is not None for x in strs]
            return out
        raise errors.ParameterInvalid(f"operator {plan_pb2.OpType.Name(u.op)} is not supported on a JSON key")

    def _binary_range_expr(self, b: plan_pb2.BinaryRangeExpr) -> Any:
        kc = self.json_key(b.column_info)
        if kc is not None:
            where = repr(b.column_info.nested_path[0])
            lo = self.json_cmp(kc, "ge" if b.lower_inclusive else "gt", self.json_value(b.lower_value, where))
            return self.to_xp(lo & self.json_cmp(kc, "le" if b.upper_inclusive else "lt",
                                                 self.json_value(b.upper_value, where)))
        col = self.column(b.column_info)
        lo = self.value(b.lower_value, col, b.column_info.field_id)
        hi = self.value(b.upper_value, col, b.column_info.field_id)
        left = col >= lo if b.lower_inclusive else col > lo
        right = col <= hi if b.upper_inclusive else col < hi
        return self.to_xp(left & right)

    def _compare_expr(self, c: plan_pb2.CompareExpr) -> Any:
        if c.op not in _CMP:
            raise errors.ParameterInvalid(f"operator {plan_pb2.OpType.Name(c.op)} is not supported between columns")
        a = self.column(c.left_column_info)
        b = self.column(c.right_column_info)
        if _is_str(a) != _is_str(b):
            raise errors.ParameterInvalid("cannot compare a VarChar column with a non-VarChar column")
        if _is_str(a):
            return self.to_xp(self.cmp(a, _CMP[c.op], b))
        return self.cmp(a, _CMP[c.op], b)

    def _binary_arith_op_eval_range_expr(self, e: plan_pb2.BinaryArithOpEvalRangeExpr) -> Any:
        col = self.column(e.column_info)
        if _is_str(col) or col.dtype.kind == "b":
            raise errors.ParameterInvalid("arithmetic filters need a numeric field")
        operand = self.value(e.right_operand, col, e.column_info.field_id)
        target = self.value(e.value, col, e.column_info.field_id)
        xm = self.xp
        wide = col.astype(np.float64 if (col.dtype.kind == "f" or isinstance(operand, float)) else np.int64)
        op = e.arith_op
        if op == plan_pb2.Add:
            lhs = wide + operand
        elif op == plan_pb2.Sub:
            lhs = wide - operand
        elif op == plan_pb2.Mul:
            lhs = wide * operand
        elif op == plan_pb2.Div:
            if operand == 0:
                raise errors.ParameterInvalid("division by zero in filter")
            if wide.dtype.kind == "f":
                lhs = wide / operand
            else:  # C++ integer division truncates toward zero
                lhs = xm.floor_divide(wide, operand)
                lhs = lhs + ((xm.fmod(wide, operand) != 0) & ((wide < 0) != (operand < 0)))
        elif op == plan_pb2.Mod:
            if operand == 0:
                raise errors.ParameterInvalid("modulo by zero in filter")
            lhs = xm.fmod(wide, operand)  # C++ %: the sign of the dividend
        else:
            raise errors.ParameterInvalid(f"arithmetic operator {plan_pb2.ArithOpType.Name(op)} is not supported")
        if e.op not in _CMP:
            raise errors.ParameterInvalid(f"operator {plan_pb2.OpType.Name(e.op)} is not supported after arithmetic")
        return self.cmp(lhs, _CMP[e.op], target)

    def _column_expr(self, c: plan_pb2.ColumnExpr) -> Any:
        col = self.column(c.info)
        if col.dtype.kind != "b":
            raise errors.ParameterInvalid(f"field {c.info.field_id} is not Bool and cannot be a filter by itself")
        return self.xp.asarray(col, dtype=bool)

    def _value_expr(self, v: plan_pb2.ValueExpr) -> Any:
        if v.value.WhichOneof("val") != "bool_val":
            raise errors.ParameterInvalid("a constant filter must be a boolean")
        return self.xp.full(self.n, bool(v.value.bool_val), dtype=bool)
