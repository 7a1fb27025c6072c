"""A search through the proxy (Milvus's proxy ``task_search.go``): check the request, build one
``SearchRequest`` per channel, send each to a shard leader, merge the channels' top-k and decode the
hits into plain Python — per query ``[{"id": pk, "distance": float, "entity": {field: value}}]``.

The channels' answers are merged with the shard leader's own reducer
(:func:`~vecgrid.cluster.reduce.merge_search`: top-k by score in the metric's direction).  Range and
grouping searches run as top-k searches of growing depth over one pinned snapshot.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from vecgrid import errors
from vecgrid.cluster.proxy.catalog_access import CollectionMeta
from vecgrid.cluster.proxy.consistency import Guarantee
from vecgrid.cluster.proxy.read_parts import (Filter, ReadContext, check_group_field, compile_expr, entities,
                                              next_request_id, output_ids)
from vecgrid.cluster.reduce import merge_search, off_loop
from vecgrid.gpu import exprs
from vecgrid.gpu.merge import MAX_TOPK
from vecgrid.gpu.results import encode_placeholder_group, from_search_result_data, merge_search_results
from vecgrid.proto import common_pb2, plan_pb2, query_coord_pb2, schema_pb2


async def search(
    ctx: ReadContext,
    collection: "str | CollectionMeta",
    vectors: Any,
    *,
    limit: int = 10,
    offset: int = 0,
    filter: Filter = None,
    output_fields: Sequence[str] = (),
    anns_field: str | None = None,
    search_params: Mapping[str, Any] | None = None,
    partition_names: Sequence[str] = (),
    round_decimal: int = -1,
    consistency: str | int | None = "Strong",
    guarantee_timestamp: int | None = None,
    group_by: str | None = None,
    group_size: int = 1,
    raw: bool = False,
) -> list[list[dict[str, Any]]] | schema_pb2.SearchResultData:
    """The ``limit`` nearest rows (after skipping ``offset``) of every query vector, best first.

    ``raw``: the merged ``SearchResultData`` as the leaders answered it, not decoded into dicts (what
    Milvus's own API sends on): for a plain top-k search from the first hit (no offset, no range, no
    grouping, no dynamic keys picked out of ``$meta``).

    ``vectors``: ``nq × dim`` (or one ``dim``) floats.  ``distance`` is the metric's value:
    squared L2 (smaller is closer) or IP / COSINE similarity (larger is closer).

    ``search_params`` ``radius`` / ``range_filter`` make it a range search (Milvus's bounds: L2
    ``range_filter <= distance < radius``, IP / COSINE ``radius < distance <= range_filter``) and
    ``group_by`` (a scalar field) a grouping search: the best ``group_size`` hits of each of the
    ``limit`` best groups (after ``offset`` groups), a group ranked by its best hit.  The engine
    answers plain top-k only, so both run here over top-k searches of growing depth (×4, up to
    :data:`MAX_TOPK`) until every query has its answer or the depth is exhausted; every round reads
    the same snapshot (the first round's, as its leaders report it, pinned as the MVCC timestamps)."""
    meta = await ctx.describe(collection)
    field = meta.vector_field(anns_field)
    xq = _query_vectors(vectors, meta.dim(field), field.name)
    topk = _topk(limit, offset)
    metric = meta.metric(field)
    params = dict(search_params or {})
    asked = str(params.pop("metric_type", metric)).upper()
    if asked != metric:
        raise errors.ParameterInvalid(f"metric type {asked} does not match the index of {field.name!r} ({metric})")
    radius, range_filter = (params.pop(name, None) for name in RANGE_PARAMS)
    bounds = _RangeBounds.of(radius, range_filter, metric)
    names = list(output_fields)
    if group_by is not None:
        check_group_field(meta, group_by)
        if not isinstance(group_size, int) or isinstance(group_size, bool) or not 1 <= group_size <= MAX_TOPK:
            raise errors.ParameterInvalid(f"group_size ({group_size!r}) should be in range [1, {MAX_TOPK}]")
        if group_by not in names and "*" not in names:
            names.append(group_by)
    expr = compile_expr(filter, meta)
    out_ids, keys = output_ids(meta, names)
    partition_ids = meta.partition_ids(partition_names)
    guarantee, level = await ctx.guarantees.guarantee(consistency, guarantee_timestamp, meta)
    plain = bounds is None and group_by is None
    if raw and not (plain and offset == 0 and keys is None):
        raise ValueError("a raw search is a plain top-k search from the first hit, with whole fields")

    # rounds of a range or grouping search read one snapshot: the first round's, as each channel's leader
    # reports it (its tsafe when the round arrived), not the guarantee timestamp, which at Bounded lies
    # 5 s back and would hide the newest rows a plain search sees
    snapshot: dict[str, int] | None = None if plain else {}

    async def run(queries: np.ndarray, k: int) -> list[list[dict[str, Any]]]:
        return await _search_round(ctx, meta, field, queries, k, metric, params, expr, out_ids, partition_ids,
                                   round_decimal, guarantee, level, snapshot=snapshot,
                                   offset=offset if plain else 0, limit=limit if plain else k, keys=keys, raw=raw)

    if plain:
        return await run(xq, topk)
    answers: list[list[dict[str, Any]] | None] = [None] * len(xq)
    pending = list(range(len(xq)))
    k = topk
    while pending:
        rounds = await run(xq[pending], k)
        still = []
        for q, hits in zip(pending, rounds):
            chosen, settled = _select_hits(hits, k, offset, limit, bounds, group_by, group_size)
            if settled:
                answers[q] = chosen
            else:
                still.append(q)
        pending = still
        k = min(k * 4, MAX_TOPK)
    return answers  # type: ignore[return-value]


#: The search params that make a search a range search (Milvus's names).
RANGE_PARAMS = ("radius", "range_filter")


def plain_top_k(search_params: Mapping[str, Any] | None, *, offset: int = 0, group_by: str | None = None) -> bool:
    """Whether a search with these options is a plain top-k search from its first hit (no range
    bounds, no grouping, no offset): one that ``raw`` (``Proxy.search_result``) answers."""
    params = search_params or {}
    return offset == 0 and group_by is None and all(params.get(name) is None for name in RANGE_PARAMS)


async def _search_round(
    ctx: ReadContext,
    meta: CollectionMeta,
    field: schema_pb2.FieldSchema,
    xq: np.ndarray,
    topk: int,
    metric: str,
    params: Mapping[str, Any],
    expr: plan_pb2.Expr | None,
    out_ids: list[int],
    partition_ids: list[int],
    round_decimal: int,
    guarantee: Guarantee,
    level: int,
    *,
    snapshot: dict[str, int] | None,
    offset: int,
    limit: int,
    keys: frozenset[str] | None = None,
    raw: bool = False,
) -> Any:
    req_id = next_request_id()
    placeholder = encode_placeholder_group(xq)
    plan = _search_plan(field.fieldID, topk, metric, expr, params, round_decimal, out_ids)
    template = _search_template(meta, plan, topk, metric, partition_ids, out_ids, level, kept=expr is None)

    def request(channel: str, channels: int) -> query_coord_pb2.SearchRequest:
        req = query_coord_pb2.SearchRequest()
        req.CopyFrom(template)
        req.dml_channels.append(channel)
        req.total_channel_num = channels
        r = req.req
        r.base.msgID = r.reqID = req_id
        r.placeholder_group, r.nq = placeholder, len(xq)
        r.guarantee_timestamp = guarantee.of(channel)
        if snapshot:
            r.mvcc_timestamp = snapshot.get(channel, 0)
        return req

    shards, parts = await ctx.router.fan_out(meta.id, "Search", request)
    if snapshot is not None and not snapshot:   # the first round: pin what its leaders read
        for part in parts:
            snapshot.update(part.channels_mvcc)

    def reduce() -> Any:
        if len(parts) == 1 and parts[0].sliced_num_count <= 1:   # merged by its leader already
            srd = schema_pb2.SearchResultData.FromString(parts[0].sliced_blob)
        elif not out_ids and all(p.sliced_num_count <= 1 for p in parts):
            # no fields: the channels' top-k merged straight off their messages, not encoded again
            k = max([p.top_k for p in parts] + [0]) or topk
            srd = merge_search_results([p.sliced_blob for p in parts], k, metric)
        else:
            inner = request(shards[0].channel, len(shards)).req   # what the channels were asked
            merged = merge_search(parts, inner, [s.channel for s in shards], meta.pk_field.name)
            srd = schema_pb2.SearchResultData.FromString(merged.sliced_blob)
        return srd if raw else _hits_of(srd, offset, limit, keys)
    return await off_loop(reduce, len(xq) * topk * len(parts))


def _search_plan(field_id: int, topk: int, metric: str, expr: plan_pb2.Expr | None, params: Mapping[str, Any],
                 round_decimal: int, out_ids: list[int]) -> bytes:
    """The serialized plan of a search; without a filter, once per distinct shape (a client repeats its
    searches: same field, k, metric, params and outputs)."""
    if expr is None:
        try:
            shape = tuple(sorted((k, type(v), v) for k, v in params.items()))   # 1, 1.0 and True differ in JSON
            return _plain_search_plan(field_id, topk, metric, shape, round_decimal, tuple(out_ids))
        except TypeError:   # a parameter value that is not hashable: built every time
            pass
    return exprs.search_plan(field_id=field_id, topk=topk, metric=metric, expr=expr, search_params=params,
                         round_decimal=round_decimal, output_field_ids=out_ids)


_TEMPLATES_KEPT = 64   # request templates kept per collection description


def _search_template(meta: CollectionMeta, plan: bytes, topk: int, metric: str, partition_ids: list[int],
                     out_ids: list[int], level: int, *, kept: bool) -> query_coord_pb2.SearchRequest:
    """A ``SearchRequest`` with everything but the per-call fields (channel, ids, queries, timestamps):
    a search copies it, which costs less than filling a dozen fields.  ``kept`` (a plan without a
    filter: clients repeat those) keeps it on the description, so a changed collection starts anew;
    the dict belongs to the proxy's event loop, like the description cache."""
    key = (plan, tuple(partition_ids), tuple(out_ids), level)
    templates = meta.memo.setdefault("search_templates", {}) if kept else {}
    template = templates.get(key)
    if template is None:
        template = query_coord_pb2.SearchRequest(from_shard_leader=False, scope=query_coord_pb2.All)
        r = template.req
        r.base.msg_type = common_pb2.Search
        r.dbID, r.collectionID = meta.db_id, meta.id
        r.partitionIDs.extend(partition_ids)
        r.output_fields_id.extend(out_ids)
        r.serialized_expr_plan, r.dsl_type = plan, common_pb2.BoolExprV1
        r.topk, r.metricType, r.consistency_level = topk, metric, level
        if kept:
            if len(templates) >= _TEMPLATES_KEPT:
                templates.clear()
            templates[key] = template
    return template


@functools.lru_cache(maxsize=1024)
def _plain_search_plan(field_id: int, topk: int, metric: str, params: tuple, round_decimal: int,
                       out_ids: tuple[int, ...]) -> bytes:
    return exprs.search_plan(field_id=field_id, topk=topk, metric=metric, search_params={k: v for k, _, v in params},
                         round_decimal=round_decimal, output_field_ids=list(out_ids))


def _topk(limit: int, offset: int) -> int:
    if not isinstance(limit, int) or not isinstance(offset, int) or limit < 1 or offset < 0 \
            or limit + offset > MAX_TOPK:
        raise errors.ParameterInvalid(f"limit ({limit}) + offset ({offset}) should be in range [1, {MAX_TOPK}], "
                                      "with limit >= 1 and offset >= 0")
    return limit + offset


def _query_vectors(vectors: Any, dim: int, field: str) -> np.ndarray:
    try:
        xq = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise errors.ParameterInvalid(f"query vectors must be numbers: {e}") from None
    if xq.ndim == 1:
        xq = xq[None, :]
    if xq.ndim != 2 or not len(xq):
        raise errors.ParameterInvalid(f"query vectors must be an nq × dim array, got shape {xq.shape}")
    if xq.shape[1] != dim:
        raise errors.ParameterInvalid(f"the query vectors have dimension {xq.shape[1]}, "
                                      f"field {field!r} has dimension {dim}")
    if len(xq) > MAX_TOPK:
        raise errors.ParameterInvalid(f"nq [{len(xq)}] is invalid, it should be in range [1, {MAX_TOPK}]")
    return xq


def _hits_of(srd: schema_pb2.SearchResultData, offset: int, limit: int,
             keys: frozenset[str] | None) -> list[list[dict[str, Any]]]:
    """:func:`_hits` of a ``SearchResultData``; without output fields read into plain lists (a small
    answer's numpy conversions cost more than they save)."""
    if len(srd.fields_data):
        return _hits(from_search_result_data(srd), offset, limit, keys)
    ids = list(srd.ids.str_id.data if srd.ids.WhichOneof("id_field") == "str_id" else srd.ids.int_id.data)
    scores = list(srd.scores)
    topks = list(srd.topks)
    topks += [0] * (srd.num_queries - len(topks))
    out = []
    first = 0
    for n in topks:
        lo = first + offset
        hi = min(first + n, lo + limit)
        out.append([{"id": ids[j], "distance": scores[j], "entity": {}} for j in range(lo, hi)])
        first += n
    return out


def _hits(tk: Any, offset: int, limit: int, keys: frozenset[str] | None = None) -> list[list[dict[str, Any]]]:
    rows = entities(tk.fields or [], len(tk), keys)
    ids = tk.ids.tolist()
    scores = tk.scores.tolist()
    o = tk.offsets
    out = []
    for q in range(tk.nq):
        lo = int(o[q]) + offset
        hi = min(int(o[q + 1]), lo + limit)
        out.append([{"id": ids[j], "distance": scores[j], "entity": rows[j]} for j in range(lo, hi)])
    return out


_SMALLER_IS_CLOSER = ("L2", "HAMMING", "JACCARD")


@dataclass(frozen=True)
class _RangeBounds:
    """Milvus's range search bounds in the metric's direction (see :func:`search`)."""

    radius: float | None
    range_filter: float | None
    smaller_is_closer: bool

    @staticmethod
    def of(radius: Any, range_filter: Any, metric: str) -> "_RangeBounds | None":
        if radius is None and range_filter is None:
            return None
        values = []
        for name, v in (("radius", radius), ("range_filter", range_filter)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v)):
                raise errors.ParameterInvalid(f"search param {name!r} must be a finite number, got {v!r}")
            values.append(None if v is None else float(v))
        radius, range_filter = values
        smaller = metric in _SMALLER_IS_CLOSER
        if radius is not None and range_filter is not None:
            if smaller and not range_filter < radius:
                raise errors.ParameterInvalid(f"range_filter ({range_filter}) must be less than radius ({radius}) "
                                              f"for metric {metric}")
            if not smaller and not range_filter > radius:
                raise errors.ParameterInvalid(f"range_filter ({range_filter}) must be greater than radius ({radius}) "
                                              f"for metric {metric}")
        return _RangeBounds(radius, range_filter, smaller)

    def holds(self, d: float) -> bool:
        if self.smaller_is_closer:
            return (self.radius is None or d < self.radius) and (self.range_filter is None or d >= self.range_filter)
        return (self.radius is None or d > self.radius) and (self.range_filter is None or d <= self.range_filter)

    def beyond(self, d: float) -> bool:
        """Past the outer bound: no farther hit can be in range."""
        if self.radius is None:
            return False
        return d >= self.radius if self.smaller_is_closer else d <= self.radius


def _select_hits(hits: list[dict[str, Any]], k: int, offset: int, limit: int, bounds: _RangeBounds | None,
                 group_by: str | None, group_size: int) -> tuple[list[dict[str, Any]], bool]:
    """``(answer, settled)`` of one query from its top ``k`` hits: settled when a deeper search could not
    change the answer (enough hits, the range's outer bound passed, fewer than ``k`` rows, or depth exhausted)."""
    exhausted = (
        len(hits) < k or k >= MAX_TOPK or bool(hits and bounds is not None and bounds.beyond(hits[-1]["distance"]))
    )
    kept = [h for h in hits if bounds.holds(h["distance"])] if bounds is not None else hits
    want = offset + limit
    if group_by is None:
        return kept[offset:want], exhausted or len(kept) >= want
    groups: dict[Any, list[dict[str, Any]]] = {}
    for h in kept:
        members = groups.setdefault(h["entity"].get(group_by), [])
        if len(members) < group_size:
            members.append(h)
    ranked = list(groups.values())
    full = len(ranked) >= want and all(len(m) >= group_size for m in ranked[:want])
    return [h for members in ranked[offset:want] for h in members], exhausted or full
