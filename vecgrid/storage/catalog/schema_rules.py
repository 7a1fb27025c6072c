"""Milvus's naming and schema rules, applied before the catalog writes anything.

The checks follow Milvus 2.4's proxy (``createCollectionTask.PreExecute``: ``validateCollectionName``,
``validateFieldName``, ``validatePrimaryKey``, ``ValidateFieldAutoID``, ``validateDimension``,
``validateMaxLengthPerRow`` ...) restricted to the types vecgrid serves. Error classes:

* a bad *name* (database, collection, partition, field, index) or a bad argument that is not part of
  the schema (shards_num, properties) -> :class:`errors.ParameterInvalid` (1100), as Milvus;
* anything wrong with the field list (primary key, auto_id, types, ``dim``, ``max_length``, duplicate
  or reserved field names, no vector field) -> :class:`errors.CollectionIllegalSchema` (105). Milvus
  answers most of these with an un-coded error (65535); 105 is the code it has for them.

Every function here is pure: it reads its arguments and returns a new message or raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Final

from vecgrid import errors
from vecgrid.proto import common_pb2, schema_pb2

MAX_NAME_LENGTH: Final = 255
MAX_DIM: Final = 32768
MAX_VARCHAR_LENGTH: Final = 65535
MAX_FIELDS: Final = 64
MAX_VECTOR_FIELDS: Final = 4
MAX_SHARDS: Final = 16
MAX_PARTITIONS: Final = 1024
MAX_DATABASES: Final = 64
MAX_JSON_BYTES: Final = 65536

DEFAULT_DB_NAME: Final = "default"
DEFAULT_DB_ID: Final = 1
DEFAULT_PARTITION_NAME: Final = "_default"
DYNAMIC_FIELD_NAME: Final = "$meta"
START_FIELD_ID: Final = 100
#: Names Milvus keeps for its system fields (RowID=0, Timestamp=1) and the dynamic field.
RESERVED_FIELD_NAMES: Final = frozenset({"RowID", "Timestamp", DYNAMIC_FIELD_NAME})

DIM_KEY: Final = "dim"
MAX_LENGTH_KEY: Final = "max_length"

D = schema_pb2.DataType
SCALAR_TYPES: Final = frozenset({D.Bool, D.Int8, D.Int16, D.Int32, D.Int64, D.Float, D.Double, D.VarChar, D.JSON})
VECTOR_TYPES: Final = frozenset({D.FloatVector})
PRIMARY_KEY_TYPES: Final = frozenset({D.Int64, D.VarChar})

_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def type_name(data_type: int) -> str:
    try:
        return schema_pb2.DataType.Name(data_type)
    except ValueError:
        return str(data_type)


# ---------------------------------------------------------------------------------------------
# names


def validate_name(kind: str, name: object) -> str:
    """Check a database / collection / partition / field / index name; return it.

    Milvus's rule: 1..255 ASCII letters, digits and underscores, not starting with a digit.
    """
    if not isinstance(name, str):
        raise errors.ParameterInvalid(f"{kind} name must be a string, got {type(name).__name__}")
    if not name:
        raise errors.ParameterInvalid(f"{kind} name should not be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise errors.ParameterInvalid(
            f"invalid {kind} name {name[:32]!r}...: the length of a {kind} name must not exceed "
            f"{MAX_NAME_LENGTH} characters (got {len(name)})"
        )
    if not (name[0] == "_" or ("a" <= name[0].lower() <= "z")):
        raise errors.ParameterInvalid(
            f"invalid {kind} name {name!r}: the first character of a {kind} name must be an underscore or letter"
        )
    if not _NAME_RE.fullmatch(name):
        raise errors.ParameterInvalid(
            f"invalid {kind} name {name!r}: a {kind} name can only contain numbers, letters and underscores"
        )
    return name


# ---------------------------------------------------------------------------------------------
# key/value parameters


def kv_dict(pairs: Iterable[common_pb2.KeyValuePair]) -> dict[str, str]:
    return {p.key: p.value for p in pairs}


def kv_list(values: Mapping[str, object]) -> list[common_pb2.KeyValuePair]:
    return [common_pb2.KeyValuePair(key=k, value=str(v)) for k, v in values.items()]


def _param_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def normalize_properties(what: str, properties: object) -> list[common_pb2.KeyValuePair]:
    """``dict`` or ``KeyValuePair`` list -> a key-sorted ``KeyValuePair`` list (values as strings)."""
    if properties is None:
        return []
    items: list[tuple[object, object]]
    if isinstance(properties, Mapping):
        items = list(properties.items())
    else:
        try:
            items = [(p.key, p.value) for p in properties]  # type: ignore[attr-defined,union-attr]
        except (TypeError, AttributeError):
            raise errors.ParameterInvalid(f"{what} properties must be a dict or a list of KeyValuePair") from None
    out: dict[str, str] = {}
    for key, value in items:
        if not isinstance(key, str) or not key:
            raise errors.ParameterInvalid(f"{what} property keys must be non-empty strings, got {key!r}")
        if key in out:
            raise errors.ParameterInvalid(f"duplicate {what} property {key!r}")
        out[key] = _param_str(value)
    ttl = out.get("collection.ttl.seconds")
    if ttl is not None and not _is_int(ttl, minimum=0):
        raise errors.ParameterInvalid(f"collection.ttl.seconds must be a non-negative integer, got {ttl!r}")
    mmap = out.get("mmap.enabled")
    if mmap is not None and mmap.lower() not in ("true", "false"):
        raise errors.ParameterInvalid(f"mmap.enabled must be true or false, got {mmap!r}")
    return [common_pb2.KeyValuePair(key=k, value=out[k]) for k in sorted(out)]


def _is_int(text: str, minimum: int | None = None) -> bool:
    try:
        value = int(text.strip())
    except ValueError:
        return False
    return minimum is None or value >= minimum


def normalize_shards_num(shards_num: object) -> int:
    """Milvus: ``shards_num <= 0`` means the default (1); at most ``proxy.maxShardNum`` (16)."""
    if isinstance(shards_num, bool) or not isinstance(shards_num, int):
        raise errors.ParameterInvalid(f"shards_num must be an integer, got {shards_num!r}")
    if shards_num <= 0:
        return 1
    if shards_num > MAX_SHARDS:
        raise errors.ParameterInvalid(
            f"maximum shards's number should be limited to {MAX_SHARDS} (got shards_num={shards_num})"
        )
    return shards_num


# ---------------------------------------------------------------------------------------------
# collection schema


def _illegal(collection: str, detail: str) -> errors.MilvusError:
    return errors.CollectionIllegalSchema(detail, collection=collection)


def _type_params(collection: str, field: schema_pb2.FieldSchema) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in field.type_params:
        if p.key in out:
            raise _illegal(collection, f"field {field.name!r} has type param {p.key!r} more than once")
        out[p.key] = p.value
    return out


def _int_param(collection: str, field: schema_pb2.FieldSchema, params: dict[str, str], key: str,
               lo: int, hi: int, missing: str) -> int:
    if key not in params:
        raise _illegal(collection, missing)
    raw = params[key]
    try:
        value = int(raw.strip())
    except ValueError:
        raise _illegal(collection, f"type param {key}={raw!r} of field {field.name!r} is not an integer") from None
    if not lo <= value <= hi:
        if key == DIM_KEY:
            detail = (f"invalid dimension: {value} of field {field.name!r}. float vector dimension should be "
                      f"in range {lo} ~ {hi}")
        else:
            detail = (f"the maximum length specified for a VarChar field({field.name}) should be in "
                      f"[{lo}, {hi}], but got {value} instead")
        raise _illegal(collection, detail)
    return value


def field_dim(field: schema_pb2.FieldSchema) -> int:
    """The ``dim`` type param of a (validated) vector field."""
    for p in field.type_params:
        if p.key == DIM_KEY:
            return int(p.value)
    raise errors.CollectionIllegalSchema(f"field {field.name!r} has no dim type param")


#: bytes of a value in memory, by type; VarChar and JSON take an average (their sizes vary per row)
_VALUE_BYTES: Final = {D.Bool: 1, D.Int8: 1, D.Int16: 2, D.Int32: 4, D.Int64: 8, D.Float: 4, D.Double: 8,
                       D.VarChar: 32, D.JSON: 64}


def estimated_row_bytes(schema: schema_pb2.CollectionSchema) -> int:
    """About how many bytes one row of the schema takes loaded: each vector at 4 bytes a dimension,
    fixed-width scalars at their width, strings and JSON at an average, plus the row's timestamp.
    What placement weighs memory by; not a limit."""
    total = 8
    for f in schema.fields:
        total += 4 * field_dim(f) if f.data_type in VECTOR_TYPES else _VALUE_BYTES.get(f.data_type, 16)
    return total


def field_max_length(field: schema_pb2.FieldSchema) -> int:
    """The ``max_length`` type param of a (validated) VarChar field."""
    for p in field.type_params:
        if p.key == MAX_LENGTH_KEY:
            return int(p.value)
    raise errors.CollectionIllegalSchema(f"field {field.name!r} has no max_length type param")


def _check_default_value(collection: str, field: schema_pb2.FieldSchema, max_length: int | None) -> None:
    if not field.HasField("default_value"):
        return
    kind = field.default_value.WhichOneof("data")
    expected = {
        D.Bool: ("bool_data",), D.Int8: ("int_data",), D.Int16: ("int_data",), D.Int32: ("int_data",),
        D.Int64: ("long_data",), D.Float: ("float_data",), D.Double: ("double_data",),
        D.VarChar: ("string_data",),
    }.get(field.data_type)
    if field.is_primary_key or expected is None:
        raise _illegal(collection, f"field {field.name!r} ({type_name(field.data_type)}) cannot have a default value")
    if kind not in expected:
        raise _illegal(collection, f"type ({type_name(field.data_type)}) of field ({field.name}) is not equal to "
                                   f"the type ({kind}) of default_value")
    if field.data_type in (D.Int8, D.Int16):
        bits = 8 if field.data_type == D.Int8 else 16
        if not -(1 << (bits - 1)) <= field.default_value.int_data < (1 << (bits - 1)):
            raise _illegal(collection, f"default value of field {field.name!r} is out of range for "
                                       f"{type_name(field.data_type)}")
    if max_length is not None and len(field.default_value.string_data.encode()) > max_length:
        raise _illegal(collection, f"default value of field {field.name!r} is longer than max_length={max_length}")


def normalize_schema(
    collection_name: str, db_name: str, schema: schema_pb2.CollectionSchema
) -> schema_pb2.CollectionSchema:
    """Validate a user schema and return the stored form.

    The stored form is a copy with ``name``/``dbName`` set, field ids 100, 101, ... in the order given,
    canonical ``dim``/``max_length`` values, the deprecated collection-level ``autoID`` cleared (Milvus
    ignores it) and, when ``enable_dynamic_field`` is set, Milvus's ``$meta`` JSON field appended
    (``is_dynamic=True``, the next id). Nothing else is added (no RowID/Timestamp system fields).
    """
    validate_name("collection", collection_name)
    if not isinstance(schema, schema_pb2.CollectionSchema):
        raise errors.ParameterInvalid(f"schema must be a schema.CollectionSchema, got {type(schema).__name__}")
    if schema.name and schema.name != collection_name:
        raise errors.ParameterInvalid(
            f"the collection name in the schema ({schema.name!r}) does not match the requested name "
            f"({collection_name!r})"
        )
    c = collection_name
    out = schema_pb2.CollectionSchema()
    out.CopyFrom(schema)
    out.name = collection_name
    out.dbName = db_name
    out.autoID = False

    fields = list(out.fields)
    if not fields:
        raise _illegal(c, "the schema has no fields")
    if len(fields) > MAX_FIELDS:
        raise _illegal(c, f"maximum field's number should be limited to {MAX_FIELDS} (got {len(fields)})")

    seen: set[str] = set()
    for f in fields:
        if f.name in RESERVED_FIELD_NAMES:
            raise _illegal(c, f"field name {f.name!r} is reserved for a system field (RowID, Timestamp, $meta)")
        validate_name("field", f.name)
        if f.name in seen:
            raise _illegal(c, f"duplicated field name {f.name!r}")
        seen.add(f.name)
        if f.is_dynamic:
            raise _illegal(c, f"cannot explicitly set field {f.name!r} as a dynamic field; "
                              "set enable_dynamic_field on the schema instead")

    pks = [f for f in fields if f.is_primary_key]
    if not pks:
        raise _illegal(c, "primary key is not specified")
    if len(pks) > 1:
        raise _illegal(c, f"there are more than one primary key, field name = {pks[0].name}, {pks[1].name}")
    pk = pks[0]
    if pk.data_type not in PRIMARY_KEY_TYPES:
        raise _illegal(c, f"the data type of primary key {pk.name!r} should be Int64 or VarChar, "
                          f"got {type_name(pk.data_type)}")
    for f in fields:
        if f.autoID and not f.is_primary_key:
            raise _illegal(c, f"only primary field can specify AutoID with true, field name = {f.name}")
    if pk.autoID and pk.data_type != D.Int64:
        raise _illegal(c, f"auto_id is only supported on an Int64 primary key; primary key {pk.name!r} is "
                          f"{type_name(pk.data_type)}")

    vectors = 0
    for f in fields:
        if f.data_type in VECTOR_TYPES:
            vectors += 1
        elif f.data_type not in SCALAR_TYPES:
            raise _illegal(c, f"field {f.name!r} has data type {type_name(f.data_type)}, which vecgrid does not "
                              "support (supported: Bool, Int8, Int16, Int32, Int64, Float, Double, VarChar, JSON, "
                              "FloatVector)")
        if f.is_partition_key:
            raise _illegal(c, f"field {f.name!r}: partition key is not supported")
        if f.is_clustering_key:
            raise _illegal(c, f"field {f.name!r}: clustering key is not supported")
        if f.element_type != 0:  # DataType None
            raise _illegal(c, f"field {f.name!r}: element_type applies to Array fields only")
        params = _type_params(c, f)
        max_length = None
        if f.data_type in VECTOR_TYPES:
            dim = _int_param(c, f, params, DIM_KEY, 1, MAX_DIM,
                             f"dimension is not defined in field type params of {f.name!r}, "
                             "check type param `dim` for vector field")
            params[DIM_KEY] = str(dim)
        elif f.data_type == D.VarChar:
            max_length = _int_param(c, f, params, MAX_LENGTH_KEY, 1, MAX_VARCHAR_LENGTH,
                                    f"type param(max_length) should be specified for varChar field({f.name}) "
                                    f"of collection {c}")
            params[MAX_LENGTH_KEY] = str(max_length)
        _check_default_value(c, f, max_length)
        del f.type_params[:]
        f.type_params.extend(kv_list(params))
        f.state = schema_pb2.FieldCreated
    if vectors == 0:
        raise _illegal(c, "schema does not contain vector field")
    if vectors > MAX_VECTOR_FIELDS:
        raise _illegal(c, f"maximum vector field's number should be limited to {MAX_VECTOR_FIELDS} (got {vectors})")

    for i, f in enumerate(fields):
        f.fieldID = START_FIELD_ID + i
    if out.enable_dynamic_field:
        out.fields.add(
            fieldID=START_FIELD_ID + len(fields),
            name=DYNAMIC_FIELD_NAME,
            description="dynamic schema",
            data_type=D.JSON,
            is_dynamic=True,
        )
    return out


def schema_signature(schema: schema_pb2.CollectionSchema) -> bytes:
    """Deterministic bytes for comparing two normalized schemas (CreateCollection idempotency)."""
    return schema.SerializeToString(deterministic=True)
