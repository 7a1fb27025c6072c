"""Search output as Milvus protobufs: ``schema.SearchResultData`` and ``schema.FieldData``.

* :class:`FieldColumn` — one output field's values as a numpy array (1-D for
  scalars, ``n × dim`` for float vectors, bytes objects for JSON/binary vectors)
  with its Milvus name, id and ``DataType``.
* :func:`to_search_result_data` / :func:`from_search_result_data` — a
  :class:`~vecgrid.gpu.merge.TopK` to and from ``SearchResultData`` (``ids`` as
  ``int_id`` or ``str_id``, ``scores``, ``topks``, ``fields_data`` aligned with the
  ids, ``output_fields``).
* :func:`merge_search_results` — merge serialized/decoded partial results (shard
  leader across nodes, proxy across shards) with :func:`~vecgrid.gpu.merge.merge_topk`.
* :func:`decode_placeholder_group` / :func:`encode_placeholder_group` — query vectors
  from/to ``common.PlaceholderGroup`` bytes.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from vecgrid import errors
from vecgrid.gpu.columns import FieldColumn
from vecgrid.gpu.merge import SMALL_MERGE, TopK, larger_is_better, merge_topk
from vecgrid.proto import common_pb2, schema_pb2

#: The one output field of a ``count(*)`` query (Milvus's name for it).
COUNT_FIELD = "count(*)"

__all__ = [
    "COUNT_FIELD", "column_to_field_data", "field_data_to_column",
    "to_search_result_data", "from_search_result_data", "primary_keys", "merge_search_results",
    "decode_placeholder_group", "encode_placeholder_group", "datatype_of",
]

_SCALAR_SLOT = {
    schema_pb2.Bool: ("bool_data", np.bool_),
    schema_pb2.Int8: ("int_data", np.int32),
    schema_pb2.Int16: ("int_data", np.int32),
    schema_pb2.Int32: ("int_data", np.int32),
    schema_pb2.Int64: ("long_data", np.int64),
    schema_pb2.Float: ("float_data", np.float32),
    schema_pb2.Double: ("double_data", np.float64),
    schema_pb2.String: ("string_data", str),
    schema_pb2.VarChar: ("string_data", str),
    schema_pb2.JSON: ("json_data", object),
}
_NUMPY_OF = {
    schema_pb2.Bool: np.bool_, schema_pb2.Int8: np.int8, schema_pb2.Int16: np.int16,
    schema_pb2.Int32: np.int32, schema_pb2.Int64: np.int64, schema_pb2.Float: np.float32,
    schema_pb2.Double: np.float64,
}


def datatype_of(values: np.ndarray) -> int:
    """The Milvus ``DataType`` a numpy column maps to."""
    if values.ndim == 2:
        return schema_pb2.FloatVector
    return {
        "b": schema_pb2.Bool, "U": schema_pb2.VarChar, "S": schema_pb2.VarChar, "O": schema_pb2.VarChar,
    }.get(values.dtype.kind) or {
        np.dtype(np.int8): schema_pb2.Int8, np.dtype(np.int16): schema_pb2.Int16,
        np.dtype(np.int32): schema_pb2.Int32, np.dtype(np.float32): schema_pb2.Float,
        np.dtype(np.float64): schema_pb2.Double,
    }.get(values.dtype, schema_pb2.Int64)


def column_to_field_data(col: FieldColumn) -> schema_pb2.FieldData:
    fd = schema_pb2.FieldData(type=col.data_type, field_name=col.name, field_id=col.field_id,
                              is_dynamic=col.is_dynamic)
    t = col.data_type
    if t in _SCALAR_SLOT:
        slot, _ = _SCALAR_SLOT[t]
        target = getattr(fd.scalars, slot).data
        vals = col.values
        if slot == "string_data":
            target.extend([str(v) for v in vals.tolist()])
        elif slot == "json_data":
            target.extend([v if isinstance(v, bytes) else str(v).encode() for v in vals.tolist()])
        else:
            target.extend(vals.tolist())
        if not len(vals):  # make the oneof visible even when empty
            getattr(fd.scalars, slot).SetInParent()
        return fd
    if t == schema_pb2.FloatVector:
        v = np.asarray(col.values, dtype=np.float32)
        dim = col.dim or (v.shape[1] if v.ndim == 2 else 0)
        fd.vectors.dim = dim
        fd.vectors.float_vector.data.extend(v.reshape(-1).tolist())
        fd.vectors.float_vector.SetInParent()
        return fd
    if t in (schema_pb2.BinaryVector, schema_pb2.Float16Vector, schema_pb2.BFloat16Vector):
        fd.vectors.dim = col.dim
        blob = b"".join(bytes(x) for x in col.values.tolist()) if col.values.dtype == object \
            else np.ascontiguousarray(col.values).tobytes()
        setattr(fd.vectors, {schema_pb2.BinaryVector: "binary_vector",
                             schema_pb2.Float16Vector: "float16_vector",
                             schema_pb2.BFloat16Vector: "bfloat16_vector"}[t], blob)
        return fd
    raise errors.ParameterInvalid(f"output of {schema_pb2.DataType.Name(t)} fields is not supported")


def field_data_to_column(fd: schema_pb2.FieldData) -> FieldColumn:
    t = fd.type
    if fd.WhichOneof("field") == "scalars":
        which = fd.scalars.WhichOneof("data")
        data = list(getattr(fd.scalars, which).data) if which else []
        if t in _NUMPY_OF:
            vals = np.asarray(data, dtype=_NUMPY_OF[t])
        elif which == "string_data":
            vals = np.asarray(data, dtype=str)
        else:
            vals = np.empty(len(data), dtype=object)
            vals[:] = data
        return FieldColumn(fd.field_name, fd.field_id, t, vals, 0, fd.is_dynamic)
    if fd.WhichOneof("field") == "vectors":
        dim = int(fd.vectors.dim)
        which = fd.vectors.WhichOneof("data")
        if which == "float_vector":
            vals = np.asarray(fd.vectors.float_vector.data, dtype=np.float32).reshape(-1, max(dim, 1))
            return FieldColumn(fd.field_name, fd.field_id, t, vals, dim, fd.is_dynamic)
        if which in ("binary_vector", "float16_vector", "bfloat16_vector"):
            width = dim // 8 if which == "binary_vector" else dim * 2
            blob = getattr(fd.vectors, which)
            vals = np.frombuffer(blob, dtype=np.uint8).reshape(-1, max(width, 1)).copy()
            return FieldColumn(fd.field_name, fd.field_id, t, vals, dim, fd.is_dynamic)
    raise errors.ParameterInvalid(f"cannot decode field data {fd.field_name!r}")


_LIST_SCORES_MAX = 64  # above, the scores go in as packed bytes (a parse) rather than as a list of floats


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def to_search_result_data(topk: TopK, *, output_fields: Iterable[str] | None = None,
                          primary_field_name: str = "", all_search_count: int = 0) -> schema_pb2.SearchResultData:
    """``SearchResultData`` of ``topk`` with its ``fields`` as ``fields_data``.

    Written for the nq=1 search, where this costs as much as the engine's own work around faiss:
    the fewest protobuf and numpy calls (each costs microseconds right after a search has evicted
    their code from the CPU caches), the hit lists of the result when it carries them."""
    lists = topk.hit_lists
    if lists is not None:
        scores, ids = lists
        topks = [len(ids)]
        text_ids = bool(ids) and type(ids[0]) is not int
    else:
        scores, ids, topks = None, topk.ids.tolist(), topk.topks.tolist()
        text_ids = topk.ids.dtype.kind in "UOS"
    if scores is None and len(ids) > _LIST_SCORES_MAX:  # many scores: their bytes, packed, not 1000 floats
        out = schema_pb2.SearchResultData.FromString(
            b"\x22" + _varint(4 * len(ids)) + np.ascontiguousarray(topk.scores, dtype="<f4").tobytes())
        out.num_queries, out.top_k = len(topks), topk.k
        out.topks.extend(topks)
    else:
        out = schema_pb2.SearchResultData(num_queries=len(topks), top_k=topk.k,
                                          scores=topk.scores.tolist() if scores is None else scores, topks=topks)
    if all_search_count:
        out.all_search_count = all_search_count
    if primary_field_name:
        out.primary_field_name = primary_field_name
    if text_ids:
        out.ids.str_id.data.extend([str(x) for x in ids])
        out.ids.str_id.SetInParent()
    elif ids:
        out.ids.int_id.data.extend(ids)
    else:
        out.ids.int_id.SetInParent()
    fields = topk.fields
    if fields:
        out.fields_data.extend([column_to_field_data(col) for col in fields])
    if output_fields is not None:
        out.output_fields.extend(output_fields)
    elif fields:
        out.output_fields.extend([c.name for c in fields])
    return out


def primary_keys(ids: schema_pb2.IDs) -> np.ndarray:
    """The keys of a ``schema.IDs`` as an int64 or str array."""
    if ids.WhichOneof("id_field") == "str_id":
        return np.asarray(list(ids.str_id.data), dtype=str)
    return np.asarray(ids.int_id.data, dtype=np.int64)


def from_search_result_data(srd: schema_pb2.SearchResultData | bytes) -> TopK:
    if isinstance(srd, (bytes, bytearray, memoryview)):
        msg = schema_pb2.SearchResultData()
        msg.ParseFromString(bytes(srd))
        srd = msg
    ids = primary_keys(srd.ids)
    topks = np.asarray(srd.topks, dtype=np.int64)
    if len(topks) < srd.num_queries:
        topks = np.concatenate([topks, np.zeros(srd.num_queries - len(topks), dtype=np.int64)])
    scores = np.asarray(srd.scores, dtype=np.float32)
    fields = [field_data_to_column(fd) for fd in srd.fields_data] if len(srd.fields_data) else None
    return TopK(ids, scores, topks, int(srd.top_k), fields=fields)


def _parsed(r: schema_pb2.SearchResultData | bytes | TopK) -> schema_pb2.SearchResultData | TopK:
    if isinstance(r, (bytes, bytearray, memoryview)):
        return schema_pb2.SearchResultData.FromString(bytes(r))
    return r


def _merge_one_query(parts: Sequence[schema_pb2.SearchResultData], k: int, metric: str,
                     primary_field_name: str) -> schema_pb2.SearchResultData | None:
    """:func:`merge_search_results` of one query's hits without output fields (an nq=1 search over
    several nodes or shards) read straight off the messages into Python lists: no array is built.
    ``None`` (the general path) for anything else: fields, more than one query, keys of both kinds,
    many hits, a NaN score (Python's sort does not order it as numpy does)."""
    if not any(p.num_queries == 1 for p in parts):
        return None
    hits = []   # (sign * score, key, part, position in it, score)
    sign = -1.0 if larger_is_better(metric) else 1.0
    kinds = set()
    for i, p in enumerate(parts):
        if len(p.fields_data) or p.num_queries > 1:
            return None
        kind = p.ids.WhichOneof("id_field")
        keys = p.ids.str_id.data if kind == "str_id" else p.ids.int_id.data
        if not len(keys):
            continue
        kinds.add(kind)
        hits.extend((sign * s, key, i, j, s) for j, (s, key) in enumerate(zip(p.scores, keys)))
    if len(kinds) > 1 or len(hits) > SMALL_MERGE or any(h[0] != h[0] for h in hits):
        return None
    hits.sort()   # score, then key (Milvus's order), then where it came from, as merge_topk's stable sort
    seen: set = set()
    hits = [h for h in hits if not (h[1] in seen or seen.add(h[1]))][:k]
    out = schema_pb2.SearchResultData(num_queries=1, top_k=k, scores=[h[4] for h in hits], topks=[len(hits)])
    if primary_field_name:
        out.primary_field_name = primary_field_name
    if kinds == {"str_id"}:
        out.ids.str_id.data.extend([h[1] for h in hits])
        out.ids.str_id.SetInParent()
    else:
        out.ids.int_id.data.extend([h[1] for h in hits])
        out.ids.int_id.SetInParent()
    return out


def merge_search_results(results: Sequence[schema_pb2.SearchResultData | bytes | TopK], k: int,
                         metric: str = "L2", round_decimal: int = -1, *,
                         primary_field_name: str = "") -> schema_pb2.SearchResultData:
    """Merge partial ``SearchResultData`` (nodes of a shard, shards of a collection)."""
    results = [_parsed(r) for r in results]
    if (round_decimal is None or round_decimal < 0) and k > 0 and len(results) > 1 \
            and not any(isinstance(r, TopK) for r in results):
        fast = _merge_one_query(results, k, metric, primary_field_name)  # type: ignore[arg-type]
        if fast is not None:
            return fast
    parts = [r if isinstance(r, TopK) else from_search_result_data(r) for r in results]
    parts = [p for p in parts if p.nq] or parts
    if not parts:
        raise errors.ParameterInvalid("nothing to merge")
    with_fields = [p for p in parts if p.fields]
    if with_fields and len(with_fields) != len(parts):
        # a part with no hits carries no fields_data; give it empty columns of the same shape
        template = with_fields[0].fields
        for p in parts:
            if not p.fields:
                if len(p):
                    raise errors.ParameterInvalid("a partial result lacks its output fields")
                p.fields = [c.take(np.zeros(0, dtype=np.int64)) for c in template]
    merged = merge_topk(parts, k, metric, round_decimal)
    merged.rows = None
    names = [c.name for c in merged.fields] if merged.fields else []
    return to_search_result_data(merged, output_fields=names, primary_field_name=primary_field_name)


def _bf16_to_f32(raw: np.ndarray) -> np.ndarray:
    u = raw.view(np.uint16).astype(np.uint32) << 16
    return u.view(np.float32)


def decode_placeholder_group(data: bytes | common_pb2.PlaceholderGroup, dim: int | None = None) -> np.ndarray:
    """The ``nq × dim`` float32 query vectors of a serialized ``common.PlaceholderGroup``.

    Float, Float16 and BFloat16 vectors are accepted (the last two widened to float32)."""
    if isinstance(data, common_pb2.PlaceholderGroup):
        group = data
    else:
        group = common_pb2.PlaceholderGroup()
        group.ParseFromString(bytes(data))
    if len(group.placeholders) != 1:
        raise errors.ParameterInvalid(f"expected one placeholder, got {len(group.placeholders)}")
    ph = group.placeholders[0]
    values = list(ph.values)
    if not values:
        raise errors.ParameterInvalid("no query vectors in the placeholder group")
    raw = b"".join(values)
    if ph.type == common_pb2.FloatVector:
        width = len(values[0]) // 4
        x = np.frombuffer(raw, dtype="<f4")
    elif ph.type == common_pb2.Float16Vector:
        width = len(values[0]) // 2
        x = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif ph.type == common_pb2.BFloat16Vector:
        width = len(values[0]) // 2
        x = _bf16_to_f32(np.frombuffer(raw, dtype="<u2"))
    else:
        raise errors.ParameterInvalid(
            f"placeholder type {common_pb2.PlaceholderType.Name(ph.type)} is not supported by vecgrid")
    if len(set(map(len, values))) != 1:
        raise errors.ParameterInvalid("query vectors have different dimensions")
    if dim is not None and width != dim:
        raise errors.ParameterInvalid(f"the dimension of query vectors ({width}) does not match the field's ({dim})")
    return np.ascontiguousarray(x.reshape(len(values), width), dtype=np.float32)


def encode_placeholder_group(vectors: np.ndarray, tag: str = "$0") -> bytes:
    """Serialized ``common.PlaceholderGroup`` of float32 query vectors (one value per query).

    Written as bytes rather than built as messages: every search of a proxy encodes one, and the
    wire form is fixed (field 1 ``placeholders`` holding tag, type ``FloatVector`` and one ``values``
    entry per row); ``tests/test_gpu_merge.py`` checks it against protobuf's own encoding."""
    x = np.ascontiguousarray(vectors, dtype="<f4")
    if x.ndim != 2:
        raise ValueError(f"query vectors must be nq × dim, got shape {x.shape}")
    name = tag.encode()
    row_key = _tagged_length(3, x.shape[1] * 4)   # values = 3, one per row
    value = (_tagged_length(1, len(name)) + name + b"\x10" + _varint(common_pb2.FloatVector)   # tag = 1, type = 2
             + b"".join(row_key + r.tobytes() for r in x))
    return _tagged_length(1, len(value)) + value   # placeholders = 1


def _tagged_length(field: int, length: int) -> bytes:
    """The key (wire type 2, length-delimited) and length of a field of ``length`` bytes."""
    return _varint(field << 3 | 2) + _varint(length)


