"""Worker-side search: ``internal.SearchRequest`` over local sealed segments → ``internal.SearchResults``.

What a shard leader sends a worker (``SearchSegments``): a serialized ``plan.PlanNode``
(``vector_anns`` arm: vector field, filter, topk, metric, search params, round_decimal),
a serialized ``common.PlaceholderGroup`` with the nq query vectors, output field ids
and the MVCC timestamp.  :func:`search_segments` checks it against the collection
(vector field, dimension, topk range), searches the segments with the engine
(:func:`vecgrid.gpu.search.search_segments`: filters, deletes and MVCC applied, one
top-k merge), fetches the output fields and encodes ``schema.SearchResultData`` into
``sliced_blob``.  A hybrid request (``is_advanced``) runs each sub-request and
answers one ``SubSearchResults`` per sub-request, as Milvus's workers do.

Blocking (faiss, numpy): :func:`run_search` runs it in a worker thread, or right on the event
loop when it is tiny (host segments, a few hundred microseconds of work at most), since a thread
hand-off costs more than such a search on a busy host.
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any, Sequence

import numpy as np
from google.protobuf.message import DecodeError

from vecgrid import errors
from vecgrid.cluster.querynode.collections import Collection, field_dim
from vecgrid.cluster.querynode.output_fields import fetch_columns, resolve_output_fields
from vecgrid.cluster.querynode.segments import SealedSegment
from vecgrid.gpu.merge import MAX_TOPK, TopK
from vecgrid.gpu.plan import SearchPlan, parse_search_plan
from vecgrid.gpu.results import decode_placeholder_group, to_search_result_data
from vecgrid.gpu.search import search_segments as engine_search
from vecgrid.proto import common_pb2, internal_pb2, schema_pb2


# Work (query floats x rows searched: a flat scan's multiply-adds) up to which a search runs on the
# event loop; about 0.5 ms of faiss on one core, less than a thread hand-off costs under load.
INLINE_SEARCH_WORK = 1 << 21


def decode_queries(placeholder_group: bytes, dim: int) -> np.ndarray:
    """The query vectors of a serialized ``common.PlaceholderGroup``; 1100 when malformed."""
    group = common_pb2.PlaceholderGroup()
    try:
        group.ParseFromString(bytes(placeholder_group))
    except DecodeError as e:
        raise errors.ParameterInvalid(f"cannot decode the placeholder group: {e}") from None
    return decode_placeholder_group(group, dim)


@functools.lru_cache(maxsize=256)
def search_plan(plan_bytes: bytes) -> SearchPlan:
    """``parse_search_plan``, once per distinct plan: a proxy sends the same bytes for every search
    of a kind, and the parsed plan is only read (filter, topk, metric, params)."""
    return parse_search_plan(plan_bytes)


def mvcc_timestamp(value: int) -> int | None:
    """The snapshot a request reads: its MVCC timestamp; 0 (a delegator fills it) = everything loaded."""
    return int(value) or None


def _search_one(coll: Collection, segments: Sequence[SealedSegment], plan_bytes: bytes, placeholder: bytes,
                metric_hint: str, output_ids: Sequence[int], timestamp: int | None
                ) -> tuple[schema_pb2.SearchResultData, str, int, int]:
    plan = search_plan(bytes(plan_bytes))
    f = coll.fields.get(plan.field_id)
    if f is None:
        raise errors.ParameterInvalid(f"the plan searches field {plan.field_id}, which collection {coll.id} "
                                      "does not have", field=plan.field_id)
    if f.data_type != schema_pb2.FloatVector:
        raise errors.ParameterInvalid(f"field {f.name!r} is not a FloatVector field", field=f.name)
    if not coll.loads_field(f.fieldID):
        raise errors.ParameterInvalid(f"vector field {f.name!r} is not loaded", field=f.name)
    if not 1 <= plan.topk <= MAX_TOPK:
        raise errors.ParameterInvalid(f"topk [{plan.topk}] is invalid, it should be in range [1, {MAX_TOPK}]")
    xq = decode_queries(placeholder, field_dim(f))
    if len(xq) > MAX_TOPK:
        raise errors.ParameterInvalid(f"nq [{len(xq)}] is invalid, it should be in range [1, {MAX_TOPK}]")
    metric = (plan.metric or metric_hint or "").upper()
    field_ids = resolve_output_fields(coll, output_ids or plan.output_field_ids)
    live = [s for s in segments if not s.is_l0]
    engines = [s.engine(f.fieldID) for s in live]
    if not metric and engines:
        metric = engines[0].metric
    if engines:
        topk = engine_search(engines, xq, plan.topk, expr=plan.expr, timestamp=timestamp,
                             params=plan.search_params, metric=metric or None,
                             round_decimal=plan.round_decimal)
    else:
        topk = TopK.empty(len(xq), plan.topk, np.dtype(str) if coll.pk_field.data_type == schema_pb2.VarChar
                          else np.int64)
        topk.sources = np.zeros(0, dtype=np.int32)
    if field_ids:
        topk.fields = fetch_columns(coll, live, topk.sources, topk.rows, field_ids)
    total = sum(s.num_rows for s in live)
    srd = to_search_result_data(topk, output_fields=[c.name for c in topk.fields or []], all_search_count=total)
    return srd, metric, len(xq), plan.topk


def search_segments(coll: Collection, segments: Sequence[SealedSegment], req: internal_pb2.SearchRequest,
                    channels: Sequence[str]) -> internal_pb2.SearchResults:
    """Search ``segments`` (all of ``coll``) for ``req``; see the module docstring."""
    started = time.perf_counter()
    timestamp = mvcc_timestamp(req.mvcc_timestamp)
    out = internal_pb2.SearchResults(
        status=common_pb2.Status(), reqID=req.reqID, channelIDs_searched=list(channels),
        sealed_segmentIDs_searched=[s.segment_id for s in segments if not s.is_l0],
        is_topk_reduce=req.is_topk_reduce, is_recall_evaluation=req.is_recall_evaluation)
    if req.is_advanced:
        out.is_advanced = True
        for i, sub in enumerate(req.sub_reqs):
            srd, metric, nq, topk = _search_one(coll, segments, sub.serialized_expr_plan, sub.placeholder_group,
                                                sub.metricType, req.output_fields_id, timestamp)
            out.sub_results.add(metric_type=metric, num_queries=nq, top_k=topk,
                                sliced_blob=srd.SerializeToString(), req_index=i)
            out.all_search_count += srd.all_search_count
        out.num_queries = req.nq or (out.sub_results[0].num_queries if out.sub_results else 0)
        out.top_k = req.topk
        total_nq = sum(s.num_queries for s in out.sub_results)
    else:
        srd, metric, nq, topk = _search_one(coll, segments, req.serialized_expr_plan, req.placeholder_group,
                                            req.metricType, req.output_fields_id, timestamp)
        out.metric_type, out.num_queries, out.top_k = metric, nq, topk
        out.sliced_blob = srd.SerializeToString()
        out.sliced_num_count, out.all_search_count = 1, srd.all_search_count
        total_nq = nq
    out.costAggregation.serviceTime = int((time.perf_counter() - started) * 1000)
    out.costAggregation.totalNQ = total_nq
    return out


def search_work(segments: Sequence[Any], req: internal_pb2.SearchRequest) -> int:
    """A cost estimate of ``req`` over ``segments``: query floats (read off the placeholder bytes,
    no decoding) times rows, the multiply-adds of a flat scan; an upper bound for other indexes."""
    floats = (len(req.placeholder_group) + sum(len(s.placeholder_group) for s in req.sub_reqs)) // 4
    return floats * sum(s.num_rows for s in segments)


async def run_search(coll: Collection, segments: Sequence[Any], req: internal_pb2.SearchRequest,
                     channels: Sequence[str]) -> internal_pb2.SearchResults:
    """:func:`search_segments` on the event loop when tiny and on host segments only (a GPU search
    may wait for its device), else in a worker thread."""
    if search_work(segments, req) <= INLINE_SEARCH_WORK and all(s.placement == "CPU" for s in segments):
        return search_segments(coll, segments, req, channels)
    return await asyncio.to_thread(search_segments, coll, segments, req, channels)
