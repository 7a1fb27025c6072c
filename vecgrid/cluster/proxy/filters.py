"""Query objects in the REST seed's syntax compiled to Milvus ``plan.Expr`` filters.

The REST API (``GET /entities?age[$gt]=20``) and ``vecgrid search --filter`` take the
same query object as Feathers' database adapters::

    {"age": {"$gt": 20, "$lte": 60},            # several operators on a field: all hold
     "$or": [{"name": "a"}, {"tag": {"$in": ["x", "y"]}}],
     "id": {"$nin": [1, 2]}, "score": {"$ne": 3}}  # keys side by side: all hold

:func:`compile_filter` turns it into the ``plan.Expr`` a QueryNode evaluates
(:mod:`vecgrid.gpu.filter`), checked against the collection's schema first, so a bad
query fails at the proxy with one :class:`~vecgrid.errors.ParameterInvalid` naming
the problem instead of deep inside a worker:

* operators: plain value (equality), ``$eq`` (the same, spelled out), ``$in``, ``$nin``,
  ``$lt``, ``$lte``, ``$gt``, ``$gte``, ``$ne``, and ``$like`` (Milvus's ``like`` on a
  VarChar field: ``%`` any run, ``_`` one character); logical ``$or`` and ``$and``
  (arrays of query objects).  Anything else is refused with Feathers' wording
  (``Invalid query parameter $regex``, ``Invalid filter value $foo``);
* ``max_in`` caps the values of one ``$in`` / ``$nin`` list (the REST API's
  ``[http] max_in_list``): a huge list is refused before anything is sent;
* ``$limit``, ``$skip``, ``$sort`` and ``$select`` shape a result, they do not select
  rows: :func:`split_query` takes them off before compiling;
* fields must exist and be scalar: Bool, Int8/16/32/64, Float, Double, VarChar (and the
  primary key).  Vector, JSON and Array fields are refused, as the engine cannot evaluate them;
* on a collection with the dynamic field, a name that is not a field is a key of it: the
  condition compiles, as Milvus's parser does, to a JSON path ``[key]`` on the ``$meta`` field
  (the engine's rules: a row lacking the key, or holding another kind of value, does not match;
  ``$ne`` and ``$nin`` are negations and do).  The value's JSON type is the comparison's:
  numbers, strings or booleans (``$lt``... take numbers or strings; ``$like`` a string);
* values must fit the field: a string against an Int64 field, a number against a
  VarChar field or anything but ``true``/``false`` against a Bool field is a type
  mismatch; integers compare with Float/Double fields and numbers with integer fields
  (both are numeric, as in Milvus's expressions); ``null`` has no meaning (Milvus 2.4
  fields are not nullable) and is refused.

Query strings carry every value as a string (see the seed: conversion is the query
schema's job).  ``coerce_strings=True`` is that schema: ``"32"`` becomes ``32`` for a
numeric field and ``"true"``/``"false"`` booleans for a Bool field, and values that do
not parse are refused.  A key of the dynamic field has no declared type, so there
:func:`coerce_dynamic` decides: a string that reads as a finite number is that number,
``"true"``/``"false"`` are booleans, anything else stays a string.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

from vecgrid import errors
from vecgrid.gpu import exprs
from vecgrid.proto import plan_pb2, schema_pb2

__all__ = ["compile_filter", "split_query", "coerce_dynamic", "dynamic_field", "RESULT_KEYS", "OPERATORS"]

RESULT_KEYS = ("$limit", "$skip", "$sort", "$select")
LOGICAL = ("$or", "$and")
_COMPARE = {"$lt": "<", "$lte": "<=", "$gt": ">", "$gte": ">=", "$ne": "!=", "$eq": "=="}
_SET = ("$in", "$nin")
LIKE = "$like"
OPERATORS = (*_COMPARE, *_SET, LIKE)

_INTS = {schema_pb2.Int8, schema_pb2.Int16, schema_pb2.Int32, schema_pb2.Int64}
_FLOATS = {schema_pb2.Float, schema_pb2.Double}
_STRINGS = {schema_pb2.VarChar, schema_pb2.String}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")


def dynamic_field(schema: schema_pb2.CollectionSchema) -> schema_pb2.FieldSchema | None:
    """The ``$meta`` field of a collection with the dynamic field on (``None`` without)."""
    if not schema.enable_dynamic_field:
        return None
    return next((f for f in schema.fields if f.is_dynamic), None)


def coerce_dynamic(value: Any) -> Any:
    """A query-string value for a key of the dynamic field: a finite number's text → the number (an
    integer when it is written as one), ``"true"``/``"false"`` → booleans, anything else unchanged."""
    if not isinstance(value, str):
        return value
    if value in ("true", "false"):
        return value == "true"
    if _INTEGER_TEXT.fullmatch(value):
        return int(value)
    try:
        number = float(value)
    except ValueError:
        return value
    return number if math.isfinite(number) and value == value.strip() else value


def split_query(query: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(conditions, result_options)``: the row conditions, and ``$limit``/``$skip``/``$sort``/``$select``."""
    _check_object(query, "the query")
    conditions = {k: v for k, v in query.items() if k not in RESULT_KEYS}
    options = {k: v for k, v in query.items() if k in RESULT_KEYS}
    return conditions, options


def compile_filter(query: Mapping[str, Any] | None, schema: schema_pb2.CollectionSchema, *,
                   coerce_strings: bool = False, max_in: int | None = None) -> plan_pb2.Expr | None:
    """The ``plan.Expr`` of ``query`` over ``schema``; ``None`` when it selects every row (empty query)."""
    if query is None:
        return None
    return _Compiler(schema, coerce_strings, max_in).query(query, "the query")


def _check_object(value: Any, where: str) -> None:
    if not isinstance(value, Mapping):
        raise errors.ParameterInvalid(f"{where} must be an object of field conditions, got {_show(value)}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _all(parts: list[plan_pb2.Expr]) -> plan_pb2.Expr | None:
    out = None
    for e in parts:
        out = e if out is None else exprs.and_(out, e)
    return out


class _Compiler:
    def __init__(self, schema: schema_pb2.CollectionSchema, coerce: bool, max_in: int | None = None) -> None:
        self.schema = schema
        self.coerce = coerce
        self.max_in = max_in
        self.fields = {f.name: f for f in schema.fields}
        self.dynamic = dynamic_field(schema)

    # --- structure ------------------------------------------------------------------------------

    def query(self, query: Any, where: str) -> plan_pb2.Expr | None:
        _check_object(query, where)
        parts: list[plan_pb2.Expr] = []
        for key, cond in query.items():
            if not isinstance(key, str):
                raise errors.ParameterInvalid(f"field names are strings, got {_show(key)} in {where}")
            if key in LOGICAL:
                e = self.logical(key, cond)
            elif key in RESULT_KEYS:
                raise errors.ParameterInvalid(
                    f"{key} shapes the result and is not a row condition; take it off first (split_query)")
            elif key.startswith("$"):
                raise errors.ParameterInvalid(f"Invalid filter value {key}")
            else:
                e = self.field_condition(key, cond)
            if e is not None:
                parts.append(e)
        return _all(parts)

    def logical(self, key: str, branches: Any) -> plan_pb2.Expr | None:
        if not isinstance(branches, list) or not branches:
            raise errors.ParameterInvalid(f"{key} needs a non-empty array of query objects, got {_show(branches)}")
        compiled = [self.query(b, f"{key}[{i}]") for i, b in enumerate(branches)]
        if key == "$and":
            return _all([e for e in compiled if e is not None])
        if any(e is None for e in compiled):  # an empty branch matches every row
            return None
        out = compiled[0]
        for e in compiled[1:]:
            out = exprs.or_(out, e)
        return out

    def field_condition(self, name: str, cond: Any) -> plan_pb2.Expr:
        if self.dynamic is not None and name not in self.fields:
            return self.key_condition(name, cond)
        f = self.field(name)
        col = exprs.column(f.fieldID, f.data_type, is_primary_key=f.is_primary_key)
        col.is_autoID, col.is_partition_key = f.autoID, f.is_partition_key  # as Milvus's parser fills them

        def compared(op: str, operand: Any) -> Any:
            if f.data_type == schema_pb2.Bool and op not in ("$ne", "$eq"):
                raise errors.ParameterInvalid(f"{op} does not apply to Bool field {name!r}; use a value or $ne")
            return self.value(f, operand)

        def pattern(operand: Any) -> str:
            if f.data_type not in _STRINGS or not isinstance(operand, str):
                raise errors.ParameterInvalid(f"$like takes a pattern string on a VarChar field; field {name!r} "
                                              f"is {schema_pb2.DataType.Name(f.data_type)}, got {_show(operand)}",
                                              field=name)
            return operand

        return self._operators(col, cond, name, f"field {name!r}", lambda v: self.value(f, v), compared, pattern,
                               lambda op: f"field {name!r} is compared with an object; nested keys ({op!r}) would "
                                          "need a JSON field, which cannot be filtered")

    def key_condition(self, key: str, cond: Any) -> plan_pb2.Expr:
        """A condition on ``key`` of the dynamic field: a JSON path on ``$meta``."""
        meta = self.dynamic
        assert meta is not None
        if not key:
            raise errors.ParameterInvalid("an empty name is not a key of the dynamic field")
        col = plan_pb2.ColumnInfo(field_id=meta.fieldID, data_type=schema_pb2.JSON, nested_path=[key])

        def compared(op: str, operand: Any) -> Any:
            v = self.key_value(key, operand)
            if isinstance(v, bool) and op not in ("$ne", "$eq"):
                raise errors.ParameterInvalid(f"{op} on key {key!r} orders numbers or strings, got {_show(v)}",
                                              field=key)
            return v

        def pattern(operand: Any) -> str:
            if self.coerce and operand is not None and not isinstance(operand, str):
                operand = str(operand)
            if not isinstance(operand, str):
                raise errors.ParameterInvalid(f"$like takes a pattern string; got {_show(operand)} for key {key!r}",
                                              field=key)
            return operand

        return self._operators(col, cond, key, f"key {key!r}", lambda v: self.key_value(key, v), compared, pattern,
                               lambda op: f"key {key!r} of the dynamic field is compared with an object; nested "
                                          f"keys ({op!r}) cannot be filtered")

    def _operators(self, col: plan_pb2.ColumnInfo, cond: Any, name: str, what: str, value: Any, compared: Any,
                   pattern: Any, nested: Any) -> plan_pb2.Expr:
        """The Feathers operators on one column, for a schema field and a dynamic key alike: ``what`` names
        the column in messages; ``value``/``compared``/``pattern`` check an operand as that column takes it and
        ``nested(op)`` words the refusal of a nested object."""
        if isinstance(cond, list):
            raise errors.ParameterInvalid(f"{what} is compared with an array; use $in for several values")
        if not isinstance(cond, Mapping):
            return exprs.compare(col, "==", value(cond))
        if not cond:
            raise errors.ParameterInvalid(f"the condition on {what} is an empty object")
        parts = []
        for op, operand in cond.items():
            if op in _SET:
                if not isinstance(operand, list):
                    raise errors.ParameterInvalid(f"{op} on {what} expects an array, got {_show(operand)}")
                if self.max_in is not None and len(operand) > self.max_in:
                    raise errors.ParameterTooLarge(f"{op} on {what} has {len(operand)} values; at most "
                                                   f"{self.max_in} are allowed in one list", field=name)
                e = exprs.term(col, [value(v) for v in operand])
                parts.append(exprs.not_(e) if op == "$nin" else e)
            elif op in _COMPARE:
                parts.append(exprs.compare(col, _COMPARE[op], compared(op, operand)))
            elif op == LIKE:
                parts.append(exprs.match(col, "like", pattern(operand)))
            elif isinstance(op, str) and op.startswith("$"):
                raise errors.ParameterInvalid(f"Invalid query parameter {op}")
            else:
                raise errors.ParameterInvalid(nested(op))
        return _all(parts)

    def key_value(self, key: str, v: Any) -> Any:
        """``v`` for a comparison with ``key`` of the dynamic field: a number, a string or a boolean."""
        if self.coerce:
            v = coerce_dynamic(v)
        if v is None:
            raise errors.ParameterInvalid(f"null is not a value to compare key {key!r} with", field=key)
        if isinstance(v, float) and not math.isfinite(v):
            raise errors.ParameterInvalid(f"{v} compares with nothing (key {key!r})", field=key)
        if isinstance(v, int) and not isinstance(v, bool) and not _INT64_MIN <= v <= _INT64_MAX:
            raise errors.ParameterInvalid(f"{v} is out of the Int64 range (key {key!r})", field=key)
        if isinstance(v, (bool, int, float, str)):
            return v
        raise errors.ParameterInvalid(f"key {key!r} of the dynamic field compares with numbers, strings or "
                                      f"booleans, got {type(v).__name__} {_show(v)}", field=key)

    # --- schema ---------------------------------------------------------------------------------

    def field(self, name: str) -> schema_pb2.FieldSchema:
        f = self.fields.get(name)
        if f is None or f.is_dynamic:
            raise errors.ParameterInvalid(f"collection {self.schema.name!r} has no field {name!r}", field=name)
        t = f.data_type
        if t in _INTS or t in _FLOATS or t in _STRINGS or t == schema_pb2.Bool:
            return f
        kind = schema_pb2.DataType.Name(t)
        what = f"a vector field ({kind})" if t >= schema_pb2.BinaryVector else f"of type {kind}"
        raise errors.ParameterInvalid(f"field {name!r} is {what} and cannot be filtered", field=name)

    def value(self, f: schema_pb2.FieldSchema, v: Any) -> Any:
        """``v`` as the Python value :func:`vecgrid.gpu.exprs.value` encodes for field ``f``."""
        t = f.data_type
        if self.coerce and isinstance(v, str) and t not in _STRINGS:
            v = self._parse(f, v)
        if v is None:
            raise errors.ParameterInvalid(f"null is not a value of field {f.name!r} (fields are not nullable)",
                                          field=f.name)
        if t == schema_pb2.Bool:
            if isinstance(v, bool):
                return v
        elif t in _STRINGS:
            if isinstance(v, str):
                return v
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            if isinstance(v, float) and math.isnan(v):
                raise errors.ParameterInvalid(f"NaN compares with nothing (field {f.name!r})", field=f.name)
            if isinstance(v, int) and not _INT64_MIN <= v <= _INT64_MAX:
                raise errors.ParameterInvalid(f"{v} is out of the Int64 range (field {f.name!r})", field=f.name)
            return float(v) if t in _FLOATS else v
        raise errors.ParameterInvalid(
            f"type mismatch: field {f.name!r} is {schema_pb2.DataType.Name(t)}, "
            f"got {type(v).__name__} {_show(v)}", field=f.name)

    def _parse(self, f: schema_pb2.FieldSchema, text: str) -> Any:
        t = f.data_type
        if t == schema_pb2.Bool:
            if text in ("true", "false"):
                return text == "true"
        else:
            try:
                return int(text) if t in _INTS and text.strip().lstrip("+-").isdigit() else float(text)
            except ValueError:
                pass
        raise errors.ParameterInvalid(
            f"type mismatch: field {f.name!r} is {schema_pb2.DataType.Name(t)}, got {_show(text)}", field=f.name)
