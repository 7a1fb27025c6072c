"""Milvus 2.4 boolean expressions (the ``expr`` / ``filter`` strings of pymilvus) compiled to ``plan.Expr``.

A query or search names its rows with text — ``id in [1, 2]``, ``year > 2000 and title like "The%"``,
``10 < price <= 20``, ``meta["a"] == 3``, ``color == {c}`` with template values — and Milvus's proxy
parses it against the collection schema into the ``plan.Expr`` the query nodes evaluate.
:func:`compile_expression` does the same for vecgrid, emitting the shapes Milvus's parser
(``internal/parser/planparserv2``) emits, so that :mod:`vecgrid.gpu.filter` evaluates them:

* literals: integers (decimal, ``0x`` hex, ``0`` octal, ``0b`` binary; Int64 range), floats,
  strings in double or single quotes with Go's escapes (``\\n``, ``\\"``, ``\\'``, ``\\x41``,
  ``\\u00e9``...), ``true``/``True``/``TRUE`` and the false ones, arrays ``[1, 2]``;
* names: a field; ``$meta["k"]`` or, on a collection with the dynamic field, any unknown name
  ``k``: a key of ``$meta``; ``meta["k"]`` a key of the JSON field ``meta`` (a ``ColumnInfo`` with
  ``nested_path == ["k"]``); ``{name}`` a template value taken from ``params``;
* ``== != < <= > >=`` between a field and a value (either side: ``5 < a`` is ``a > 5``) or two
  fields (``CompareExpr``); ranges ``1 < a <= 5`` and ``5 > a >= 1`` (``BinaryRangeExpr``);
  ``a + 1 == 3`` (``+ - * / %`` between one field and a constant, then compared:
  ``BinaryArithOpEvalRangeExpr``); arithmetic, comparisons, ``**`` and logic on constants alone
  are folded, as Milvus folds them;
* ``in`` / ``not in`` a list (``TermExpr``; ``not in`` is ``not`` over it), ``like`` (``abc%``
  PrefixMatch, no wildcard Equal, ``%abc`` PostfixMatch — as Milvus 2.5 sends it, 2.4 sends Match,
  the same rows — anything else Match; a backslash escapes a wildcard, written ``"50\\\\%"`` since
  the string literal unescapes once), ``and``/``&&``, ``or``/``||``, ``not``/``!``, parentheses —
  with Milvus's precedence (``not`` binds tighter than comparisons: write ``not (a == 1)``).
  Keywords are lower or upper case, as Milvus's lexer takes them (``and``, ``AND``; ``And`` is a
  name).  Template values are bound here: the ``Expr`` carries the values (as after Milvus's
  FillExpressionValue), without template variable names.

Type checks are Milvus's: a field must exist (unless the collection has the dynamic field),
strings compare with VarChar fields, numbers with numeric fields (an integer against a
Float/Double field is a float, a float against an integer field is refused), booleans with Bool
fields; ``like`` takes a VarChar field or a JSON key; a bare field or literal is not a predicate
(``flag == true`` is).

Refused with :class:`~vecgrid.errors.ParameterInvalid` (code 1100), worded as Milvus words a parse
failure (``failed to create query plan: cannot parse expression: <expr>, error: <why>``), because
Milvus refuses them or because the engine cannot evaluate them as Milvus does: syntax errors,
type mismatches, unknown fields, vector fields, Array fields, a JSON field without a key, JSON
paths of more than one key (``meta["a"]["b"]``) or with an array index (``meta[0]``), arithmetic
on or column comparisons with a JSON key, lists compared with a JSON key, ``exists``,
``json_contains``/``_all``/``_any``, ``array_contains``/``_all``/``_any``, ``array_length``,
bitwise operators and shifts, ``**`` on a field, nested arithmetic (``(a + 1) * 2 == 4``),
division by a constant zero, and a missing template value.

Compiling runs on every search: the lark LALR parser is built once, a parse is cached per text,
and a compiled expression per (text, schema) when there are no template values (with them, the
cached parse is bound to the values on each call).  ``and``/``or`` chains longer than eight
operands are compiled as balanced trees, so that thousands of ``or``-ed conditions stay within
protobuf's nesting limit.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Mapping, NoReturn

from google.protobuf import message as protobuf_message
from lark import Lark, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from vecgrid import errors
from vecgrid.cluster.proxy.filters import dynamic_field
from vecgrid.gpu import exprs
from vecgrid.proto import plan_pb2, schema_pb2

__all__ = ["compile_expression"]

_INTS = frozenset({schema_pb2.Int8, schema_pb2.Int16, schema_pb2.Int32, schema_pb2.Int64})
_FLOATS = frozenset({schema_pb2.Float, schema_pb2.Double})
_STRINGS = frozenset({schema_pb2.VarChar, schema_pb2.String})
_NUMERIC = _INTS | _FLOATS
_JSON, _ARRAY, _BOOL = schema_pb2.JSON, schema_pb2.Array, schema_pb2.Bool
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_CACHED_TEXT_MAX = 8192      # longer texts (huge ``in`` lists) are compiled without caching
_LEFT_DEEP_MAX = 8           # and/or chains up to this many operands keep Milvus's left-deep shape
_REVERSED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


# --- grammar -------------------------------------------------------------------------------------
# Plan.g4's alternatives, tightest first: literals/names/calls, like, **, unary + - ~ not, * / %,
# + -, << >>, in / not in, ranges, < <= > >=, == !=, &, ^, |, and, or.  Every level is a reduction
# per operand, so levels whose relative order cannot change a result are merged: ``like`` with
# ``**``, shifts with ``+ -``, the bitwise operators (all refused), and the comparisons, which
# _Compiler.chain splits by precedence (ranges first, as ANTLR picks them, then ``< <= > >=``,
# then ``== !=``).

_STR = r'"(?:[^"\\\r\n]|\\[^\r\n])*"|' + r"'(?:[^'\\\r\n]|\\[^\r\n])*'"
_DEC_FLOAT = r"(?:[0-9]*\.[0-9]+|[0-9]+\.)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+"
_HEX_FLOAT = r"0[xX](?:[0-9a-fA-F]*\.[0-9a-fA-F]+|[0-9a-fA-F]+\.?)[pP][+-]?[0-9]+"
_INT = r"0[xX][0-9a-fA-F]+|0[bB][01]+|[1-9][0-9]*|0[0-7]*"
_BOOL_WORDS = ("true", "True", "TRUE", "false", "False", "FALSE")
_WS = r"[ \t\r\n]*"
_ITEM = rf"[+-]?(?:{_INT}|{_DEC_FLOAT})|{_STR}|(?:{'|'.join(_BOOL_WORDS)})"  # integers first: the common case
# A list of plain literals is one token: a long ``id in [...]`` then costs a regex, not a parse per item.
_ARRAY_LITERAL = rf"\[{_WS}(?:(?:{_ITEM}){_WS}(?:,{_WS}(?:{_ITEM}){_WS})*,?{_WS})?\]"
_JSON_IDENT = rf"(?:\$meta|[A-Za-z_][A-Za-z0-9_]*)(?:\[(?:{_STR}|0|[1-9][0-9]*)\])+"

_GRAMMAR = r"""
?start: expr

?expr: expr _or_op and_expr            -> logical
     | and_expr
?and_expr: and_expr _and_op bitwise    -> logical
     | bitwise
?bitwise: bitwise (AMP | PIPE | CARET) chain -> bitwise
     | chain
?chain: membership (_compare membership)*
?membership: membership IN sum         -> membership
     | membership _not_op IN sum       -> membership
     | sum
?sum: sum (PLUS | MINUS | SHL | SHR) product -> arith
     | product
?product: product (STAR | SLASH | PERCENT) unary -> arith
     | unary
?unary: (PLUS | MINUS | TILDE | _not_op) unary -> unary
     | postfix
?postfix: postfix LIKE (STRING | template) -> like
     | postfix POW atom                -> power
     | atom
?atom: INT                             -> integer
     | FLOAT                           -> floating
     | STRING                          -> string
     | BOOL                            -> boolean
     | NAME                            -> identifier
     | META                            -> identifier
     | JSON_IDENT                      -> json_identifier
     | template
     | "(" expr ")"                    -> parens
     | "[" expr ("," expr)* ","? "]"   -> array
     | ARRAY_LITERAL                   -> array_literal
     | CONTAINS "(" expr "," expr ")"  -> contains
     | ARRAY_LENGTH "(" (NAME | META | JSON_IDENT) ")" -> array_length
     | EXISTS atom                     -> exists
template: "{" NAME "}"

_or_op: OR | PIPEPIPE
_and_op: AND | AMPAMP
_not_op: NOT | BANG
_compare: LT | LE | GT | GE | EQ | NE

ARRAY_LITERAL.3: /@ARRAY_LITERAL@/
JSON_IDENT.2: /@JSON_IDENT@/
FLOAT.2: /@DEC_FLOAT@|@HEX_FLOAT@/
INT: /@INT@/
STRING: /@STR@/
NAME: /[A-Za-z_][A-Za-z0-9_]*/
META: "$meta"
EQ: "=="
NE: "!="
LE: "<="
GE: ">="
LT: "<"
GT: ">"
SHL: "<<"
SHR: ">>"
POW: "**"
PLUS: "+"
MINUS: "-"
STAR: "*"
SLASH: "/"
PERCENT: "%"
AMPAMP: "&&"
PIPEPIPE: "||"
BANG: "!"
AMP: "&"
PIPE: "|"
CARET: "^"
TILDE: "~"
// words are lexed as NAME and retyped by _keyword, as Milvus's lexer takes them: lower or upper case
%declare AND OR NOT IN LIKE EXISTS BOOL CONTAINS ARRAY_LENGTH
%ignore /[ \t\r\n]+/
"""
for _name, _pattern in (("ARRAY_LITERAL", _ARRAY_LITERAL), ("JSON_IDENT", _JSON_IDENT), ("DEC_FLOAT", _DEC_FLOAT),
                        ("HEX_FLOAT", _HEX_FLOAT), ("INT", _INT), ("STR", _STR)):
    _GRAMMAR = _GRAMMAR.replace(f"@{_name}@", _pattern)

_CONTAINS_FUNCTIONS = ("json_contains", "json_contains_all", "json_contains_any",
                       "array_contains", "array_contains_all", "array_contains_any")
_KEYWORDS = {
    **{w: "AND" for w in ("and", "AND")}, **{w: "OR" for w in ("or", "OR")},
    **{w: "NOT" for w in ("not", "NOT")}, **{w: "IN" for w in ("in", "IN")},
    **{w: "LIKE" for w in ("like", "LIKE")}, **{w: "EXISTS" for w in ("exists", "EXISTS")},
    **{w: "BOOL" for w in _BOOL_WORDS},
    **{w: "CONTAINS" for f in _CONTAINS_FUNCTIONS for w in (f, f.upper())},
    "array_length": "ARRAY_LENGTH", "ARRAY_LENGTH": "ARRAY_LENGTH",
}


def _keyword(token: Any) -> Any:
    kind = _KEYWORDS.get(token.value)
    return token if kind is None else token.update(type=kind)


# --- literals ------------------------------------------------------------------------------------

class _BadLiteral(Exception):
    """A token that lexes but has no value (an integer out of range, a bad escape)."""


_ESCAPE = re.compile(r"\\(?:([abfnrtv\\'\"])|([0-7]{3})|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.?))",
                     re.DOTALL)
_SIMPLE_ESCAPES = {"a": b"\a", "b": b"\b", "f": b"\f", "n": b"\n", "r": b"\r", "t": b"\t", "v": b"\v",
                   "\\": b"\\", "'": b"'", '"': b'"'}
_FLOAT_TEXT = re.compile(rf"(?:{_DEC_FLOAT}|{_HEX_FLOAT})")
_ARRAY_ITEMS = re.compile(rf"{_STR}|[^ \t\r\n,\[\]]+")
_NOT_DECIMAL = re.compile(r"[^0-9+\-, \t\r\n]|(?<![0-9])0[0-9]")  # anything but decimal integers


def _string_literal(quoted: str) -> str:
    """A quoted literal's text, with Go's escapes (Milvus unquotes with strconv.Unquote)."""
    body = quoted[1:-1]
    if "\\" not in body:
        return body
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(body):
        out += body[pos:m.start()].encode()
        simple, octal, hex2, u4, u8, other = m.groups()
        if other is not None:
            raise _BadLiteral(f"invalid escape \\{other} in string literal {quoted}")
        if simple is not None:
            out += _SIMPLE_ESCAPES[simple]
        elif octal is not None:
            if int(octal, 8) > 255:
                raise _BadLiteral(f"octal escape \\{octal} is out of range in {quoted}")
            out.append(int(octal, 8))
        elif hex2 is not None:
            out.append(int(hex2, 16))
        else:
            code = int(u4 or u8, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise _BadLiteral(f"invalid unicode escape in {quoted}")
            out += chr(code).encode()
        pos = m.end()
    out += body[pos:].encode()
    try:
        return out.decode()
    except UnicodeDecodeError:
        raise _BadLiteral(f"string literal {quoted} is not valid UTF-8") from None


def _int_literal(text: str) -> int:
    if len(text) > 1 and text[0] == "0" and text[1] not in "xXbB":
        value = int(text, 8)  # a leading 0 is octal, as in Go
    else:
        value = int(text, 0)
    if value > _INT64_MAX:
        raise _BadLiteral(f"integer {text} is out of the Int64 range")
    return value


def _float_literal(text: str) -> float:
    value = float.fromhex(text) if text[:2] in ("0x", "0X") else float(text)
    if not math.isfinite(value):
        raise _BadLiteral(f"floating-point number {text} is out of range")
    return value


def _number_literal(text: str) -> int | float:
    sign = -1 if text[0] == "-" else 1
    body = text.lstrip("+-")
    return sign * (_float_literal(body) if _FLOAT_TEXT.fullmatch(body) else _int_literal(body))


def _array_literal(text: str) -> tuple:
    if not _NOT_DECIMAL.search(text, 1, len(text) - 1):  # the common ``id in [1, 2, ...]``: int() per item
        values = tuple(int(x) for x in text[1:-1].split(",") if x and not x.isspace())
        if values and (max(values) > _INT64_MAX or min(values) < -_INT64_MAX):
            raise _BadLiteral("an integer in the list is out of the Int64 range")
        return values
    items = []
    for item in _ARRAY_ITEMS.findall(text, 1, len(text) - 1):
        if item[0] in "\"'":
            items.append(_string_literal(item))
        elif item in _BOOL_WORDS:
            items.append(item[0] in "tT")
        else:
            items.append(_number_literal(item))
    return tuple(items)


_JSON_KEY = re.compile(rf"\[({_STR}|[0-9]+)\]")


# --- parse: text → a small AST of tuples -----------------------------------------------------------
# ("value", v) literal (bool | int | float | str | tuple); ("array", items); ("ident", name);
# ("json", name, keys, text); ("template", name); ("parens", x); ("unary", op, x); ("exists", x);
# ("like", x, pattern); ("power", a, b); ("arith", op, a, b); ("shift", op, a, b);
# ("in", x, list, negated); ("contains", function, a, b); ("array_length", name);
# ("chain", operands, ops); ("bitwise", op, a, b); ("logical", op, [items]).

@v_args(inline=True)
class _Build(Transformer):
    def integer(self, tok):
        return ("value", _int_literal(tok.value))

    def floating(self, tok):
        return ("value", _float_literal(tok.value))

    def string(self, tok):
        return ("value", _string_literal(tok.value))

    def boolean(self, tok):
        return ("value", tok.value[0] in "tT")

    def identifier(self, tok):
        return ("ident", tok.value)

    def json_identifier(self, tok):
        text = tok.value
        name = text[:text.index("[")]
        keys = tuple(_string_literal(k) if k[0] in "\"'" else int(k) for k in _JSON_KEY.findall(text, len(name)))
        return ("json", name, keys, text)

    def template(self, tok):
        return ("template", tok.value)

    def parens(self, node):
        return ("parens", node)

    def array(self, *items):
        return ("array", items)

    def array_literal(self, tok):
        return ("value", _array_literal(tok.value))

    def contains(self, function, a, b):
        return ("contains", function.value.lower(), a, b)

    def array_length(self, _function, tok):
        return ("array_length", tok.value)

    def exists(self, _keyword, node):
        return ("exists", node)

    def like(self, node, _keyword, pattern):
        return ("like", node, ("value", _string_literal(pattern.value)) if hasattr(pattern, "type") else pattern)

    def power(self, a, _op, b):
        return ("power", a, b)

    def unary(self, op, node):
        return ("unary", "not" if op.type in ("NOT", "BANG") else op.value, node)

    def arith(self, a, op, b):
        return ("shift" if op.type in ("SHL", "SHR") else "arith", op.value, a, b)

    def membership(self, node, *rest):
        return ("in", node, rest[-1], len(rest) == 3)

    def chain(self, *items):
        return ("chain", items[0::2], tuple(op.value for op in items[1::2]))

    def bitwise(self, a, op, b):
        return ("bitwise", op.value, a, b)

    def logical(self, a, op, b):
        kind = "and" if op.type in ("AND", "AMPAMP") else "or"
        if a[0] == "logical" and a[1] == kind:  # a left-recursive chain: one n-ary node, built without recursion
            a[2].append(b)
            return a
        return ("logical", kind, [a, b])


_PARSER = Lark(_GRAMMAR, parser="lalr", lexer="basic", transformer=_Build(), maybe_placeholders=False,
               lexer_callbacks={"NAME": _keyword})


class _SyntaxError(Exception):
    pass


def _parse(text: str) -> tuple:
    if len(text) <= _CACHED_TEXT_MAX:
        return _parse_cached(text)
    return _parse_uncached(text)


@functools.lru_cache(maxsize=1024)
def _parse_cached(text: str) -> tuple:
    return _parse_uncached(text)


def _parse_uncached(text: str) -> tuple:
    try:
        return _PARSER.parse(text)
    except _BadLiteral as e:
        raise _SyntaxError(str(e)) from None
    except UnexpectedCharacters as e:
        char = text[e.pos_in_stream]
        raise _SyntaxError(f"syntax error at column {e.column}: unexpected character {char!r}") from None
    except UnexpectedToken as e:
        if e.token.type == "$END":
            raise _SyntaxError("syntax error: unexpected end of expression") from None
        raise _SyntaxError(f"syntax error at column {e.column}: unexpected {e.token.value!r}") from None
    except UnexpectedInput as e:
        raise _SyntaxError(f"syntax error: {e}") from None


def _show(node: Any) -> str:
    """A node as Milvus's messages quote it (close to what was written)."""
    kind = node[0]
    if kind == "value":
        return _show_value(node[1])
    if kind == "ident":
        return node[1]
    if kind == "json":
        return node[3]
    if kind == "template":
        return "{" + node[1] + "}"
    if kind == "parens":
        return f"({_show(node[1])})"
    if kind == "array":
        return "[" + ", ".join(_show(x) for x in node[1]) + "]"
    if kind == "unary":
        return f"{node[1]} {_show(node[2])}" if node[1] == "not" else node[1] + _show(node[2])
    if kind == "exists":
        return f"exists {_show(node[1])}"
    if kind == "like":
        return f"{_show(node[1])} like {_show(node[2])}"
    if kind == "power":
        return f"{_show(node[1])} ** {_show(node[2])}"
    if kind in ("arith", "shift", "bitwise"):
        return f"{_show(node[2])} {node[1]} {_show(node[3])}"
    if kind == "in":
        return f"{_show(node[1])} {'not in' if node[3] else 'in'} {_show(node[2])}"
    if kind == "contains":
        return f"{node[1]}({_show(node[2])}, {_show(node[3])})"
    if kind == "array_length":
        return f"array_length({node[1]})"
    if kind == "chain":
        parts = [_show(node[1][0])]
        for op, operand in zip(node[2], node[1][1:]):
            parts += [op, _show(operand)]
        return " ".join(parts)
    return f" {node[1]} ".join(_show(x) for x in node[2])  # logical


def _show_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, tuple):
        return "[" + ", ".join(_show_value(x) for x in v) + "]"
    return repr(v)


# --- the schema ----------------------------------------------------------------------------------

class _SchemaView:
    """What compiling needs of a schema: fields by name, the dynamic field, columns built once."""

    def __init__(self, schema: schema_pb2.CollectionSchema) -> None:
        self.fields = {f.name: f for f in schema.fields}
        self.dynamic = dynamic_field(schema)
        self.columns: dict[str, plan_pb2.ColumnInfo] = {}

    def column(self, f: schema_pb2.FieldSchema) -> plan_pb2.ColumnInfo:
        info = self.columns.get(f.name)
        if info is None:  # as Milvus's translateIdentifier fills it
            info = plan_pb2.ColumnInfo(field_id=f.fieldID, data_type=f.data_type, is_primary_key=f.is_primary_key,
                                       is_autoID=f.autoID, is_partition_key=f.is_partition_key,
                                       is_clustering_key=f.is_clustering_key, element_type=f.element_type)
            self.columns[f.name] = info
        return info


@functools.lru_cache(maxsize=64)
def _schema_view(key: bytes) -> _SchemaView:
    return _SchemaView(schema_pb2.CollectionSchema.FromString(key))


# --- compile: AST → plan.Expr --------------------------------------------------------------------

class _Value:
    """A constant; ``literal`` ones (written, or template values) are not predicates by themselves,
    folded ones (``1 < 2``) are — Milvus's ``nodeDependent``."""
    __slots__ = ("v", "literal")

    def __init__(self, v: Any, literal: bool = False) -> None:
        self.v, self.literal = v, literal


class _Column:
    __slots__ = ("info", "dtype", "label")

    def __init__(self, info: plan_pb2.ColumnInfo, dtype: int, label: str) -> None:
        self.info, self.dtype, self.label = info, dtype, label


class _Arith:
    """``left op right`` with a field on one side; compiled once compared with a constant."""
    __slots__ = ("op", "left", "right", "dtype")

    def __init__(self, op: str, left: Any, right: Any, dtype: int) -> None:
        self.op, self.left, self.right, self.dtype = op, left, right, dtype


class _Pred:
    __slots__ = ("expr",)

    def __init__(self, expr: plan_pb2.Expr) -> None:
        self.expr = expr


def _type_name(t: int) -> str:
    return schema_pb2.DataType.Name(t)


def _value_type(v: Any) -> int:
    if isinstance(v, bool):
        return _BOOL
    if isinstance(v, int):
        return schema_pb2.Int64
    if isinstance(v, float):
        return schema_pb2.Double
    if isinstance(v, str):
        return schema_pb2.VarChar
    return _ARRAY


def _type_of(x: Any) -> int:
    if isinstance(x, _Value):
        return _value_type(x.v)
    if isinstance(x, _Pred):
        return _BOOL
    return x.dtype


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _comparable(left: int, right: int) -> bool:
    """Milvus's canBeComparedDataType."""
    if left == _BOOL:
        return right in (_BOOL, _JSON)
    if left in _NUMERIC:
        return right in _NUMERIC or right == _JSON
    if left in _STRINGS:
        return right in _STRINGS or right == _JSON
    return left == _JSON


def _arithmetic_allowed(left: int, right: int) -> bool:
    """Milvus's canArithmeticDataType."""
    if left in _NUMERIC:
        return right in _NUMERIC or right == _JSON
    return left == _JSON and right in _NUMERIC


def _arithmetic_type(left: int, right: int) -> int:
    """Milvus's getTargetType: the type an arithmetic result is compared in."""
    if left == _JSON:
        return _JSON if right == _JSON else schema_pb2.Double if right in _FLOATS else schema_pb2.Int64
    if left in _FLOATS or right in _FLOATS:
        return schema_pb2.Double
    return schema_pb2.Int64


def _wrap_int64(v: int) -> int:
    return (v + (1 << 63)) % (1 << 64) - (1 << 63)  # Go's int64 arithmetic wraps


def _range_bound_fits(t: int, v: Any) -> bool:
    """Milvus's castRangeValue: the bounds a range on a column of type ``t`` takes."""
    if t in _STRINGS:
        return isinstance(v, str)
    if t in _INTS:
        return isinstance(v, int) and not isinstance(v, bool)
    if t in _FLOATS:
        return _is_number(v)
    return _is_number(v) or isinstance(v, str)  # a JSON key


def _balanced(items: list[plan_pb2.Expr], join: Any) -> plan_pb2.Expr:
    if len(items) <= _LEFT_DEEP_MAX:
        out = items[0]
        for e in items[1:]:
            out = join(out, e)
        return out
    mid = (len(items) + 1) // 2
    return join(_balanced(items[:mid], join), _balanced(items[mid:], join))


class _Compiler:
    def __init__(self, text: str, view: _SchemaView, params: Mapping[str, Any] | None) -> None:
        self.text = text
        self.view = view
        self.params = params

    def fail(self, detail: str) -> NoReturn:
        shown = self.text if len(self.text) <= 1000 else self.text[:997] + "..."
        raise errors.ParameterInvalid(f"failed to create query plan: cannot parse expression: {shown}, error: {detail}")

    def predicate(self, tree: tuple) -> plan_pb2.Expr:
        out = self.visit(tree)
        if isinstance(out, _Pred):
            return out.expr
        if isinstance(out, _Value) and isinstance(out.v, bool) and not out.literal:
            return plan_pb2.Expr(value_expr=plan_pb2.ValueExpr(value=exprs.value(out.v)))
        hint = f" (a Bool field is a predicate once compared: {self.text.strip()} == true)" \
            if isinstance(out, _Column) and out.dtype == _BOOL else ""
        raise errors.ParameterInvalid(f"failed to create query plan: predicate is not a boolean expression: "
                                      f"{self.text}, data type: {_type_name(_type_of(out))}{hint}")

    def visit(self, node: tuple) -> Any:
        return getattr(self, "_" + node[0])(node)

    # -- leaves ------------------------------------------------------------------------------------
    def _value(self, node: tuple) -> _Value:
        return _Value(node[1], literal=True)

    def _array(self, node: tuple) -> _Value:
        items = []
        for element in node[1]:
            x = self.visit(element)
            if not isinstance(x, _Value):
                self.fail(f"array element type must be generic value, but got: {_show(element)}")
            items.append(x.v)
        return _Value(tuple(items), literal=True)

    def _template(self, node: tuple) -> _Value:
        name = node[1]
        if self.params is None or name not in self.params:
            self.fail(f"the value of expression template variable name {{{name}}} is not found")
        return _Value(self.param_value(name, self.params[name]), literal=True)

    def param_value(self, name: str, v: Any) -> Any:
        if hasattr(v, "tolist"):  # a numpy scalar or array
            v = v.tolist()
        if isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            if not _INT64_MIN <= v <= _INT64_MAX:
                self.fail(f"template variable {{{name}}}: {v} is out of the Int64 range")
            return v
        if isinstance(v, float):
            if not math.isfinite(v):
                self.fail(f"template variable {{{name}}}: {v} compares with nothing")
            return v
        if isinstance(v, (list, tuple)):
            return tuple(self.param_value(name, x) for x in v)
        self.fail(f"template variable {{{name}}} has a value of type {type(v).__name__}; numbers, strings, "
                  "booleans and lists of them are supported")

    def _ident(self, node: tuple) -> _Column:
        name = node[1]
        view = self.view
        if name == "$meta" and view.dynamic is not None:
            return self.field_column(view.dynamic, name)
        f = view.fields.get(name)
        if f is not None:
            return self.field_column(f, name)
        if view.dynamic is not None:  # an unknown name is a key of the dynamic field
            info = plan_pb2.ColumnInfo(field_id=view.dynamic.fieldID, data_type=_JSON, nested_path=[name])
            return _Column(info, _JSON, name)
        self.fail(f"field {name} not exist")

    def field_column(self, f: schema_pb2.FieldSchema, label: str) -> _Column:
        t = f.data_type
        if t >= schema_pb2.BinaryVector:
            self.fail(f"field {f.name} is a vector field ({_type_name(t)}) and cannot be used in a filter")
        if t == _ARRAY:
            self.fail(f"Array field {f.name} is not supported in filters")
        if t not in _NUMERIC and t not in _STRINGS and t not in (_BOOL, _JSON):
            self.fail(f"field {f.name} of type {_type_name(t)} cannot be used in a filter")
        return _Column(self.view.column(f), t, label)

    def _json(self, node: tuple) -> _Column:
        _, name, keys, text = node
        view = self.view
        f = view.dynamic if name == "$meta" and view.dynamic is not None else view.fields.get(name)
        path = list(keys)
        if f is None:
            if view.dynamic is None:
                self.fail(f"field {name} not exist")
            f, path = view.dynamic, [name, *keys]
        elif f.data_type == _ARRAY:
            self.fail(f"Array field {f.name} is not supported in filters ({text})")
        elif f.data_type != _JSON:
            self.fail(f"{_type_name(f.data_type)} data type not supported accessed with []: {text}")
        if any(isinstance(k, int) for k in path):
            self.fail(f"an array index in JSON path {text} is not supported")
        if any(k == "" for k in path):
            self.fail(f"invalid identifier: {text}")
        if len(path) != 1:
            self.fail(f"JSON path {text} ({len(path)} keys) is not supported: only one key of a JSON field "
                      "can be filtered")
        info = plan_pb2.ColumnInfo(field_id=f.fieldID, data_type=_JSON, nested_path=path)
        return _Column(info, _JSON, text)

    def _parens(self, node: tuple) -> Any:
        return self.visit(node[1])

    # -- refused constructs ------------------------------------------------------------------------
    def _exists(self, node: tuple) -> None:
        self.fail(f"exists is not supported: {_show(node)}")

    def _contains(self, node: tuple) -> None:
        self.fail(f"{node[1]} is not supported: {_show(node)}")

    def _array_length(self, node: tuple) -> None:
        self.fail(f"array_length is not supported: {_show(node)}")

    def _shift(self, node: tuple) -> None:
        self.fail(f"shift ({node[1]}) is not supported: {_show(node)}")

    def _bitwise(self, node: tuple) -> None:
        name = {"&": "bitwise and", "|": "bitwise or", "^": "bitwise xor"}[node[1]]
        self.fail(f"{name} ({node[1]}) is not supported: {_show(node)}")

    # -- arithmetic ---------------------------------------------------------------------------------
    def _unary(self, node: tuple) -> Any:
        op = node[1]
        if op == "~":
            self.fail(f"bitwise not (~) is not supported: {_show(node)}")
        x = self.visit(node[2])
        if isinstance(x, _Value):
            v = x.v
            if op == "+":
                return x
            if op == "-":
                if not _is_number(v):
                    self.fail(f"cannot negate {_show(node[2])}")
                return _Value(_wrap_int64(-v) if isinstance(v, int) else -v)
            if not isinstance(v, bool):
                self.fail(f"not op can only be applied on boolean expression: {_show(node)}")
            return _Value(not v)
        if op == "+":
            return x
        if op == "-":
            self.fail(f"unary minus on a field is not supported: {_show(node)}")
        if not isinstance(x, _Pred):
            self.fail(f"not op can only be applied on boolean expression: {_show(node)} ('not' binds tighter "
                      "than comparisons and 'in': put the condition in parentheses, not (...))")
        return _Pred(exprs.not_(x.expr))

    def _power(self, node: tuple) -> _Value:
        a, b = self.visit(node[1]), self.visit(node[2])
        if not (isinstance(a, _Value) and isinstance(b, _Value)):
            self.fail(f"power can only apply on constants: {_show(node)}")
        if not (_is_number(a.v) and _is_number(b.v)):
            self.fail(f"power can only apply on numbers: {_show(node)}")
        try:
            result = math.pow(a.v, b.v)  # Milvus folds ** to a double
        except (OverflowError, ValueError):
            self.fail(f"{_show(node)} has no finite value")
        return _Value(result)

    def _arith(self, node: tuple) -> Any:
        op = node[1]
        a, b = self.visit(node[2]), self.visit(node[3])
        if isinstance(a, _Value) and isinstance(b, _Value):
            return _Value(self.fold_arith(op, a.v, b.v, node))
        left, right = _type_of(a), _type_of(b)
        if isinstance(a, _Pred) or isinstance(b, _Pred) or not _arithmetic_allowed(left, right):
            self.fail(f"'{op}' can only be used between integer or floating or json field expressions: {_show(node)}")
        if op == "%" and not (left in _INTS | {_JSON} and right in _INTS | {_JSON}):
            self.fail(f"modulo can only apply on integer types: {_show(node)}")
        if isinstance(a, _Value):
            return _Arith(op, a, b, _arithmetic_type(right, left))
        return _Arith(op, a, b, _arithmetic_type(left, right))

    def fold_arith(self, op: str, a: Any, b: Any, node: tuple) -> Any:
        if not (_is_number(a) and _is_number(b)):
            self.fail(f"'{op}' can only be used between numbers: {_show(node)}")
        both_int = isinstance(a, int) and isinstance(b, int)
        if op in "/%" and b == 0:
            self.fail(f"cannot {'divide' if op == '/' else 'modulo'} by zero: {_show(node)}")
        if op == "+":
            return _wrap_int64(a + b) if both_int else float(a + b)
        if op == "-":
            return _wrap_int64(a - b) if both_int else float(a - b)
        if op == "*":
            return _wrap_int64(a * b) if both_int else float(a * b)
        if op == "/":
            if both_int:  # Go's integer division truncates toward zero
                q = abs(a) // abs(b)
                return _wrap_int64(q if (a < 0) == (b < 0) else -q)
            return a / b
        if not both_int:
            self.fail(f"modulo can only apply on integers: {_show(node)}")
        r = abs(a) % abs(b)  # Go's %: the sign of the dividend
        return -r if a < 0 else r

    # -- comparisons --------------------------------------------------------------------------------
    def _chain(self, node: tuple) -> Any:
        """``a < b == c ...``: runs of ``< <= > >=`` split by ``== !=`` (which bind looser), each run
        compiled by :meth:`relational`, then the ``==``/``!=`` between runs, left to right."""
        operands, ops = node[1], node[2]
        result = equality = None
        start = 0
        for end in range(len(ops) + 1):
            if end < len(ops) and ops[end] not in ("==", "!="):
                continue
            run = self.relational(operands[start:end + 1], ops[start:end], node)
            result = run if equality is None else self.compare(equality, result, run, node)
            if end < len(ops):
                equality = ops[end]
            start = end + 1
        return result

    def relational(self, operands: tuple, ops: tuple, node: tuple) -> Any:
        """A range wherever two same-direction operators surround a bare name (``1 < a <= 5``,
        ``5 > a >= 1``), as ANTLR picks Plan.g4's Range alternative first; otherwise
        left-associative comparisons."""
        acc = self.visit(operands[0])
        i = 0
        while i < len(ops):
            op = ops[i]
            if i + 1 < len(ops) and operands[i + 1][0] in ("ident", "json") and op[0] == ops[i + 1][0]:
                acc = self.range(acc, operands[i + 1], op, ops[i + 1], self.visit(operands[i + 2]), node)
                i += 2
            else:
                acc = self.compare(op, acc, self.visit(operands[i + 1]), node)
                i += 1
        return acc

    def compare(self, op: str, left: Any, right: Any, node: tuple) -> Any:
        if isinstance(left, _Value) and isinstance(right, _Value):
            return _Value(self.fold_compare(op, left.v, right.v, node))
        lt, rt = _type_of(left), _type_of(right)
        if lt != _ARRAY and rt != _ARRAY and not _comparable(lt, rt):
            self.fail(f"comparisons between {_type_name(lt)} and {_type_name(rt)} are not supported: {_show(node)}")
        if isinstance(left, _Value):
            op, left, right = _REVERSED[op], right, left
        if isinstance(right, _Value):
            return self.compare_value(op, left, right.v, node)
        if not (isinstance(left, _Column) and isinstance(right, _Column)):
            self.fail(f"only comparison between two fields is supported: {_show(node)}")
        for c in (left, right):
            if c.dtype == _JSON:
                self.fail(f"comparing JSON {self.json_what(c)} with another field is not supported: {_show(node)}")
        return _Pred(exprs.compare_columns(left.info, op, right.info))

    def fold_compare(self, op: str, a: Any, b: Any, node: tuple) -> bool:
        if (_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str)) \
                or (isinstance(a, bool) and isinstance(b, bool) and op in ("==", "!=")):
            return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[op]
        self.fail(f"comparison operations cannot be applied to two incompatible operands: {_show(node)}")

    def compare_value(self, op: str, target: Any, v: Any, node: tuple) -> _Pred:
        if isinstance(target, _Pred):
            self.fail(f"a boolean expression cannot be compared with a value: {_show(node)}")
        v = self.cast(target.dtype, v, f"{_show(node)}")
        if isinstance(target, _Arith):
            return self.arith_compare(op, target, v, node)
        self.require_key(target, node)
        if target.dtype == _JSON and isinstance(v, tuple):
            self.fail(f"comparing JSON key {target.label} with a list is not supported: {_show(node)}")
        return _Pred(exprs.compare(target.info, op, v))

    def arith_compare(self, op: str, arith: _Arith, v: Any, node: tuple) -> _Pred:
        left, right = arith.left, arith.right
        if isinstance(left, _Column) and isinstance(right, _Column):
            self.fail(f"not supported to do arithmetic operations between multiple fields: {_show(node)}")
        if isinstance(left, _Column) and isinstance(right, _Value):
            column, operand = left, right
        elif isinstance(right, _Column) and isinstance(left, _Value):
            if arith.op not in "+*":
                self.fail(f"a field on the right of '{arith.op}' is not supported (write the field first): "
                          f"{_show(node)}")
            column, operand = right, left
        else:
            self.fail(f"complicated arithmetic operations are not supported: {_show(node)}")
        if column.dtype == _JSON:
            self.fail(f"arithmetic on JSON {self.json_what(column)} is not supported: {_show(node)}")
        operand_value = self.cast(arith.dtype, operand.v, _show(node))
        if arith.op in "/%" and operand_value == 0:
            self.fail(f"{'division' if arith.op == '/' else 'modulo'} by zero: {_show(node)}")
        return _Pred(exprs.arith(column.info, arith.op, operand_value, op, v))

    def range(self, first: Any, name_node: tuple, op1: str, op2: str, last: Any, node: tuple) -> _Pred:
        """``first < name <= last`` (op1, op2 both ``<``-like) or ``first > name >= last``."""
        column = self.visit(name_node)
        if op1[0] == "<":
            lower, upper, lower_inclusive, upper_inclusive = first, last, op1 == "<=", op2 == "<="
        else:
            lower, upper, lower_inclusive, upper_inclusive = last, first, op2 == ">=", op1 == ">="
        if not isinstance(lower, _Value):
            self.fail(f"lowerbound cannot be a non-const expression: {_show(node)}")
        if not isinstance(upper, _Value):
            self.fail(f"upperbound cannot be a non-const expression: {_show(node)}")
        self.require_key(column, node)
        t = column.dtype
        if t == _BOOL:
            self.fail(f"invalid range operations on boolean expr: {_show(node)}")
        lo, hi = lower.v, upper.v
        if not (_range_bound_fits(t, lo) and _range_bound_fits(t, hi)):
            what = f"a range on JSON key {column.label} takes numbers or strings" if t == _JSON \
                else f"invalid range operations on {_type_name(t)} field {column.label}"
            self.fail(f"{what}: {_show(node)}")
        if t == _JSON and isinstance(lo, str) != isinstance(hi, str):
            self.fail(f"a range on JSON key {column.label} needs two numbers or two strings: {_show(node)}")
        if t in _FLOATS:
            lo, hi = float(lo), float(hi)
        if lo > hi or (lo == hi and not (lower_inclusive and upper_inclusive)):
            self.fail(f"invalid range: lowerbound is greater than upperbound: {_show(node)}")
        return _Pred(exprs.between(column.info, lo, hi, lower_inclusive, upper_inclusive))

    def cast(self, dtype: int, v: Any, what: str) -> Any:
        """Milvus's castValue: ``v`` as a value of a column of type ``dtype``."""
        if dtype == _JSON:
            return v
        if dtype in _STRINGS:
            ok = isinstance(v, str)
        elif dtype == _BOOL:
            ok = isinstance(v, bool)
        elif dtype in _FLOATS:
            if _is_number(v):
                return float(v)
            ok = False
        else:
            ok = isinstance(v, int) and not isinstance(v, bool)
        if not ok:
            self.fail(f"cannot cast value to {_type_name(dtype)}, value: {_show_value(v)}: {what}")
        return v

    def require_key(self, column: Any, node: tuple) -> None:
        """The engine filters a JSON field only by one of its keys."""
        if not isinstance(column, _Column):
            self.fail(f"only a field can be used here: {_show(node)}")
        if column.dtype == _JSON and not column.info.nested_path:
            self.fail(f"JSON field {column.label} must be filtered by a key, e.g. {column.label}[\"key\"]: "
                      f"{_show(node)}")

    @staticmethod
    def json_what(column: _Column) -> str:
        return f"key {column.label}" if column.info.nested_path else f"field {column.label}"

    # -- in, like ------------------------------------------------------------------------------------
    def _in(self, node: tuple) -> _Pred:
        x = self.visit(node[1])
        if isinstance(x, _Value):
            self.fail(f"'term' can only be used on non-const expression, but got: {_show(node[1])}")
        if not isinstance(x, _Column):
            self.fail(f"'term' can only be used on single field, but got: {_show(node[1])}")
        self.require_key(x, node)
        values = self.visit(node[2])
        if not (isinstance(values, _Value) and isinstance(values.v, tuple)):
            self.fail(f"the right-hand side of 'in' must be a list, but got: {_show(node[2])}")
        cast = self.cast
        items = values.v
        if x.dtype == _JSON:
            if any(isinstance(v, tuple) for v in items):
                self.fail(f"a list inside the values of 'in' on JSON key {x.label} is not supported: {_show(node)}")
        elif x.dtype in _FLOATS:
            items = [cast(x.dtype, v, _show(node)) for v in items]
        else:
            want = str if x.dtype in _STRINGS else bool if x.dtype == _BOOL else int
            for v in items:
                if not isinstance(v, want) or (want is int and isinstance(v, bool)):
                    self.fail(f"value '{_show_value(v)}' in list cannot be casted to {_type_name(x.dtype)}")
        e = exprs.term(x.info, items)
        return _Pred(exprs.not_(e) if node[3] else e)

    def _like(self, node: tuple) -> _Pred:
        x = self.visit(node[1])
        pattern = self.visit(node[2])
        if not (isinstance(pattern, _Value) and isinstance(pattern.v, str)):
            self.fail(f"the pattern of like must be a string: {_show(node)}")
        if not isinstance(x, _Column):
            self.fail(f"like operation on complicated expr is unsupported: {_show(node)}")
        if x.dtype not in _STRINGS and x.dtype != _JSON:
            self.fail(f"like operation on non-string or no-json field is unsupported: {x.label} is "
                      f"{_type_name(x.dtype)}")
        self.require_key(x, node)
        kind, operand = _like_operation(pattern.v)
        if kind == "equal":
            return _Pred(exprs.compare(x.info, "==", operand))
        return _Pred(exprs.match(x.info, kind, operand))

    # -- logic --------------------------------------------------------------------------------------
    def _logical(self, node: tuple) -> Any:
        kind, items = node[1], node[2]
        parts = [self.visit(item) for item in items]
        if all(isinstance(p, _Value) for p in parts):
            if not all(isinstance(p.v, bool) for p in parts):
                self.fail(f"'{kind}' can only be used between boolean expressions: {_show(node)}")
            values = [p.v for p in parts]
            return _Value(all(values) if kind == "and" else any(values))
        for item, p in zip(items, parts):
            if not isinstance(p, _Pred):
                hint = f" ({_show(item)} is a Bool field: compare it, {_show(item)} == true)" \
                    if isinstance(p, _Column) and p.dtype == _BOOL else ""
                self.fail(f"'{kind}' can only be used between boolean expressions: {_show(node)}{hint}")
        return _Pred(_balanced([p.expr for p in parts], exprs.and_ if kind == "and" else exprs.or_))


def _like_operation(pattern: str) -> tuple[str, str]:
    """How Milvus runs ``like pattern``: ("equal" | "prefix" | "postfix", the literal text) when the
    pattern's only wildcards are ``%`` at one end, else ("like", pattern).  ``\\`` escapes a character."""
    chars: list[tuple[str, bool]] = []  # (character, is a wildcard)
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            chars.append((pattern[i + 1], False))
            i += 2
            continue
        chars.append((c, c in "%_"))
        i += 1
    start = 0
    while start < len(chars) and chars[start] == ("%", True):
        start += 1
    if start == len(chars):
        return ("prefix", "") if chars else ("equal", "")  # all % matches everything
    end = len(chars)
    while chars[end - 1] == ("%", True):
        end -= 1
    core = chars[start:end]
    if any(wild for _, wild in core) or (start and end < len(chars)):
        return "like", pattern
    text = "".join(c for c, _ in core)
    if start:
        return "postfix", text
    if end < len(chars):
        return "prefix", text
    return "equal", text


# --- entry ---------------------------------------------------------------------------------------

def _compile(text: str, key: bytes, params: Mapping[str, Any] | None) -> plan_pb2.Expr:
    compiler = _Compiler(text, _schema_view(key), params)
    try:
        tree = _parse(text)
    except _SyntaxError as e:
        compiler.fail(str(e))
    try:
        return compiler.predicate(tree)
    except (RecursionError, protobuf_message.DecodeError):
        compiler.fail("the expression is nested too deeply")


@functools.lru_cache(maxsize=1024)
def _compiled(text: str, key: bytes) -> bytes:
    return _compile(text, key, None).SerializeToString()


def compile_expression(text: str | None, schema: schema_pb2.CollectionSchema, *,
                       params: Mapping[str, Any] | None = None) -> plan_pb2.Expr | None:
    """None for an empty/blank expression (every row)."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise errors.ParameterInvalid(f"a filter expression is a string, got {type(text).__name__}")
    if not text.strip():
        return None
    key = schema.SerializeToString(deterministic=True)
    if params or len(text) > _CACHED_TEXT_MAX:
        return _compile(text, key, params)
    return plan_pb2.Expr.FromString(_compiled(text, key))
