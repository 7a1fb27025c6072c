"""Reducers of partial results, shared by the shard leader and the proxy (Milvus's ``internal/util/reduce``).

A leader reduces the answers of its workers for one channel; a node reduces its channels; the
proxy reduces the channels of a collection.  All three call the same two functions.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable, Sequence

import numpy as np

from vecgrid.gpu.columns import concat_columns
from vecgrid.gpu.results import COUNT_FIELD, column_to_field_data, field_data_to_column, merge_search_results, primary_keys
from vecgrid.proto import common_pb2, internal_pb2, schema_pb2

# Merges of at most this many hits run on the event loop: a thread hop costs more than the merge.
INLINE_MERGE_HITS = 4096


async def off_loop(fn: Callable[[], Any], hits: int) -> Any:
    """Run a merge of ``hits`` hits on the loop when it is small (a thread hop costs more), else in a
    thread: the loops of the REST app and of a node must only await."""
    return fn() if hits <= INLINE_MERGE_HITS else await asyncio.to_thread(fn)


# --- merging ---------------------------------------------------------------------------------------

def merge_search(parts: Sequence[internal_pb2.SearchResults], req: internal_pb2.SearchRequest,
                 channels: Sequence[str], pk_name: str = "") -> internal_pb2.SearchResults:
    """Reduce SearchResults of the same request (workers of a channel, or channels of a node); the
    parts are answers that succeeded, the caller's to change (one part becomes the answer)."""
    parts = list(parts)
    if len(parts) == 1 and parts[0].sliced_num_count <= 1 and not req.is_advanced:
        return _passed_on(parts[0], req, channels, pk_name)
    out = internal_pb2.SearchResults(status=common_pb2.Status(), reqID=req.reqID, channelIDs_searched=list(channels),
                                     is_topk_reduce=req.is_topk_reduce, is_recall_evaluation=req.is_recall_evaluation)
    for p in parts:
        out.sealed_segmentIDs_searched.extend(p.sealed_segmentIDs_searched)
        out.all_search_count += p.all_search_count
        out.costAggregation.serviceTime = max(out.costAggregation.serviceTime, p.costAggregation.serviceTime)
        out.costAggregation.totalNQ = max(out.costAggregation.totalNQ, p.costAggregation.totalNQ)
    if req.is_advanced:
        out.is_advanced = True
        out.num_queries, out.top_k = req.nq, req.topk
        n_sub = max((len(p.sub_results) for p in parts), default=0)
        for i in range(n_sub):
            subs = [p.sub_results[i] for p in parts if len(p.sub_results) > i]
            metric = next((s.metric_type for s in subs if s.metric_type), "")
            k = max(s.top_k for s in subs)
            srd = merge_search_results([s.sliced_blob for s in subs], k, metric or "L2", primary_field_name=pk_name)
            out.sub_results.add(metric_type=metric, num_queries=subs[0].num_queries, top_k=k,
                                sliced_blob=srd.SerializeToString(), req_index=i)
        return out
    metric = next((p.metric_type for p in parts if p.metric_type), "") or req.metricType
    k = max([p.top_k for p in parts] + [0]) or req.topk
    srd = merge_search_results([p.sliced_blob for p in parts], k, metric or "L2", primary_field_name=pk_name)
    out.metric_type, out.num_queries, out.top_k = metric, srd.num_queries, k
    out.sliced_blob, out.sliced_num_count = srd.SerializeToString(), 1
    return out


def _passed_on(part: internal_pb2.SearchResults, req: internal_pb2.SearchRequest, channels: Sequence[str],
               pk_name: str) -> internal_pb2.SearchResults:
    """One part already merged (its node merged its segments the same way) is the answer: passed on
    without decoding it or copying it into a new message, with what a merge sets set on it and the key
    field's name appended to its blob (a later field of a serialized message wins)."""
    part.status.Clear()
    part.reqID, part.is_topk_reduce, part.is_recall_evaluation = req.reqID, req.is_topk_reduce, req.is_recall_evaluation
    if list(part.channelIDs_searched) != list(channels):
        del part.channelIDs_searched[:]
        part.channelIDs_searched.extend(channels)
    part.metric_type = part.metric_type or req.metricType
    part.top_k = part.top_k or req.topk
    part.sliced_blob += _key_field_tail(pk_name)
    part.sliced_num_count = 1
    return part


@functools.lru_cache(maxsize=64)
def _key_field_tail(pk_name: str) -> bytes:
    """The serialized ``SearchResultData`` field naming the primary key field."""
    return schema_pb2.SearchResultData(primary_field_name=pk_name).SerializeToString()


def merge_retrieve(parts: Sequence[internal_pb2.RetrieveResults], req: internal_pb2.RetrieveRequest,
                   channels: Sequence[str], limit: int = -1) -> internal_pb2.RetrieveResults:
    """Reduce RetrieveResults: counts add up; rows are ordered by primary key, a key kept once
    (from the last part that has it: parts are passed oldest data first, growing last), then cut
    at ``limit``."""
    out = internal_pb2.RetrieveResults(status=common_pb2.Status(), reqID=req.reqID,
                                       channelIDs_retrieved=list(channels))
    for p in parts:
        out.sealed_segmentIDs_retrieved.extend(p.sealed_segmentIDs_retrieved)
    if req.is_count or any(len(p.fields_data) == 1 and p.fields_data[0].field_name == COUNT_FIELD
                           and not p.ids.WhichOneof("id_field") for p in parts):
        total = sum(int(p.fields_data[0].scalars.long_data.data[0]) for p in parts if len(p.fields_data))
        fd = schema_pb2.FieldData(type=schema_pb2.Int64, field_name=COUNT_FIELD)
        fd.scalars.long_data.data.append(total)
        out.fields_data.append(fd)
        out.all_retrieve_count = total
        return out
    keyed = [(i, primary_keys(p.ids)) for i, p in enumerate(parts) if p.ids.WhichOneof("id_field")]
    if not keyed:
        return parts[0] if len(parts) == 1 else out
    kinds = {k.dtype.kind for _, k in keyed}
    all_ids = np.concatenate([k.astype(str) if "U" in kinds else k for _, k in keyed])
    prio = np.concatenate([np.full(len(k), i, np.int64) for i, k in keyed])
    order = np.lexsort((-prio, all_ids))
    sorted_ids = all_ids[order]
    first = np.ones(len(order), bool)
    first[1:] = sorted_ids[1:] != sorted_ids[:-1]
    order = order[first]
    if limit is not None and limit >= 0:
        order = order[:limit]
    ids = schema_pb2.IDs()
    chosen = all_ids[order]
    if chosen.dtype.kind in "UO":
        ids.str_id.data.extend([str(v) for v in chosen.tolist()])
    else:
        ids.int_id.data.extend(chosen.tolist())
    out.ids.CopyFrom(ids)
    with_fields = [parts[i] for i, _ in keyed]
    if with_fields and len(with_fields[0].fields_data):
        cols = concat_columns([[field_data_to_column(fd) for fd in p.fields_data] for p in with_fields])
        out.fields_data.extend(column_to_field_data(c.take(order)) for c in cols)
    out.all_retrieve_count = len(order)
    return out
