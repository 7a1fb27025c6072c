"""Worker-side search: ``internal.SearchRequest`` over local sealed segments → ``internal.SearchResults``.

What a shard leader sends a worker (``SearchSegments``): a serialized ``plan.PlanNode``
(``vector_anns`` arm: vector field, filter, topk, metric, search params, round_decimal),
a serialized ``common.PlaceholderGroup`` with the nq query vectors, output field ids
and the MVCC timestamp.  :func:`search_segments` checks it against the collection
(vector field, dimension, topk range), searches the segments with the engine
(:func:`vecgrid.gpu.loaded_segment.search_segments`: filters, deletes and MVCC applied, one
top-k merge), fetches the output fields and encodes ``schema.SearchResultData`` into
``sliced_blob``.  A hybrid request (``is_advanced``) runs each sub-request and
answers one ``SubSearchResults`` per sub-request, as Milvus's workers do.

Blocking (faiss, numpy): :func:`run_search` runs it in a worker thread, or right on the event
loop when it is tiny (host segments, a few hundred microseconds of work at most), since a thread
hand-off costs more than such a search on a busy host; a lone search (nothing else pending or
running on the node) stays on the loop up to a few milliseconds of work (:data:`LONE_SEARCH_WORK`).
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any, Sequence

import numpy as np
from google.protobuf.message import DecodeError

from vecgrid import errors
from vecgrid.cluster.cores import available_cores, faiss_threads
from vecgrid.cluster.querynode.collections import Collection, field_dim
from vecgrid.cluster.querynode.output_fields import fetch_columns, resolve_output_fields
from vecgrid.cluster.querynode.segments import SealedSegment
from vecgrid.common.scan_cost import scanned_rows
from vecgrid.gpu.merge import MAX_TOPK, TopK
from vecgrid.gpu.plan import SearchPlan, parse_search_plan
from vecgrid.gpu.results import decode_placeholder_group, to_search_result_data
from vecgrid.gpu.loaded_segment import fan_out_width, probing, search_segments as engine_search
from vecgrid.proto import common_pb2, internal_pb2, schema_pb2


# Work (query floats x rows searched: a flat scan's multiply-adds) up to which a search runs on the
# event loop; about 0.5 ms of faiss on one core, less than a thread hand-off costs under load.
INLINE_SEARCH_WORK = 1 << 21

# Work up to which a lone search (no other search pending or running on the node: a client waiting
# on one search, the latency-bound case) runs on the event loop: about 4 ms of faiss on one core,
# less once spread over the cores it leases.  The loop has nothing else to do meanwhile, and the
# thread hand-off it saves cost 0.5-0.7 ms per search on a busy 2-core host (3M rows in three
# segments, nq=1: the proxy's p50 went from 4.74 to 4.23 ms, the gRPC floor's 2.89-3.06 ms).
LONE_SEARCH_WORK = 1 << 24


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


def _vector_field(coll: Collection, plan: SearchPlan) -> schema_pb2.FieldSchema:
    """The plan's vector field, checked against the collection; the plan's topk checked."""
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
    return f


def _search_vectors(coll: Collection, segments: Sequence[SealedSegment], plan: SearchPlan,
                    f: schema_pb2.FieldSchema, xq: np.ndarray, metric_hint: str, output_ids: Sequence[int],
                    timestamp: int | None) -> tuple[str, list[SealedSegment], TopK, list[str]]:
    """The engine search of decoded queries of ``plan`` on its vector field ``f`` (see
    :func:`_vector_field`): (metric, segments searched, top-k, output field names)."""
    metric = (plan.metric or metric_hint or "").upper()
    field_ids = resolve_output_fields(coll, output_ids or plan.output_field_ids)
    live = [s for s in segments if not s.is_l0]
    engines = [s.engine(f.fieldID) for s in live]
    if not metric and engines:
        metric = engines[0].metric
    if engines:
        # one core per query, or one per segment for a few queries over large host segments
        wanted = len(xq)
        # growing rows counted as compared in full first: an upper bound of the work, which settles
        # a small search without working out the lists they would be probed through
        if wanted < available_cores() and \
                fan_out_width(engines, len(xq), plan.topk, expr=plan.expr, params=plan.search_params) > 1:
            probed = probing(engines, len(xq), xq.shape[1], plan.expr, timestamp)
            wanted = max(wanted, fan_out_width(engines, len(xq), plan.topk, expr=plan.expr, params=plan.search_params,
                                               probed=probed))
        with faiss_threads(wanted):
            topk = engine_search(engines, xq, plan.topk, expr=plan.expr, timestamp=timestamp,
                                 params=plan.search_params, metric=metric or None,
                                 round_decimal=plan.round_decimal)
    else:
        topk = TopK.empty(len(xq), plan.topk, np.dtype(str) if coll.pk_field.data_type == schema_pb2.VarChar
                          else np.int64)
        topk.sources = np.zeros(0, dtype=np.int32)
    if field_ids:
        topk.fields = fetch_columns(coll, live, topk.sources, topk.rows, field_ids)
    return metric, live, topk, [c.name for c in topk.fields or []]


def _search_one(coll: Collection, segments: Sequence[SealedSegment], plan_bytes: bytes, placeholder: bytes,
                metric_hint: str, output_ids: Sequence[int], timestamp: int | None
                ) -> tuple[schema_pb2.SearchResultData, str, int, int]:
    plan = search_plan(bytes(plan_bytes))
    f = _vector_field(coll, plan)
    xq = decode_queries(placeholder, field_dim(f))
    if len(xq) > MAX_TOPK:
        raise errors.ParameterInvalid(f"nq [{len(xq)}] is invalid, it should be in range [1, {MAX_TOPK}]")
    metric, live, topk, names = _search_vectors(coll, segments, plan, f, xq, metric_hint, output_ids, timestamp)
    total = sum(s.num_rows for s in live)
    srd = to_search_result_data(topk, output_fields=names, all_search_count=total)
    return srd, metric, len(xq), plan.topk


def _results_shell(req: internal_pb2.SearchRequest, segments: Sequence[SealedSegment],
                   channels: Sequence[str], sealed_ids: list[int] | None = None) -> internal_pb2.SearchResults:
    return internal_pb2.SearchResults(
        status=common_pb2.Status(), reqID=req.reqID, channelIDs_searched=channels,
        sealed_segmentIDs_searched=[s.segment_id for s in segments if not s.is_l0] if sealed_ids is None
        else sealed_ids,
        is_topk_reduce=req.is_topk_reduce, is_recall_evaluation=req.is_recall_evaluation)


def search_segments(coll: Collection, segments: Sequence[SealedSegment], req: internal_pb2.SearchRequest,
                    channels: Sequence[str]) -> internal_pb2.SearchResults:
    """Search ``segments`` (all of ``coll``) for ``req``; see the module docstring."""
    started = time.perf_counter()
    timestamp = mvcc_timestamp(req.mvcc_timestamp)
    out = _results_shell(req, segments, channels)
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


def _engine_of(seg: Any, field_id: int) -> Any:
    """The engine segment searching ``field_id`` in a sealed segment or a growing view (None: not loaded)."""
    engines = getattr(seg, "engines", None)
    if engines is not None:
        return engines.get(field_id)
    engine = getattr(seg, "engine", None)   # a growing view: its own field, or another column searched exactly
    return engine(field_id) if engine is not None else None


def _scan_rows(seg: Any, engine: Any, plan: SearchPlan, probed: bool = False) -> int:
    """Rows one query of ``plan`` compares in ``seg`` (:func:`~vecgrid.common.scan_cost.scanned_rows`;
    a filter makes any index scan every row); ``probed``: a growing segment searched through a sealed
    segment's lists, which compares only the rows it filed in the probed ones and those not filed yet."""
    nprobe = int(plan.search_params.get("nprobe") or 0)
    if probed:
        return int(engine.rows_probed(nprobe))
    family = getattr(engine, "family", "flat") if plan.expr is None else "flat"
    return scanned_rows(family, int(seg.num_rows), nlist=int(getattr(engine, "nlist", 0) or 1),
                        nprobe=nprobe, topk=plan.topk, ef=int(plan.search_params.get("ef") or 0))


def search_work(segments: Sequence[Any], req: internal_pb2.SearchRequest, *, shared_lists: bool = True) -> int:
    """A cost estimate of ``req`` over ``segments``: query floats (read off the placeholder bytes,
    no decoding) times the rows each query compares (see :func:`_scan_rows`), growing rows counted as
    the engine will search them (:func:`~vecgrid.gpu.loaded_segment.sharing_groups`), or with
    ``shared_lists=False`` as compared in full: an upper bound that skips working out those groups."""
    subs = list(req.sub_reqs) if req.is_advanced else [req]
    work = 0
    for sub in subs:
        try:
            plan = search_plan(bytes(sub.serialized_expr_plan))
        except errors.MilvusError:
            return LONE_SEARCH_WORK + 1  # the search reports it, off the loop as any other
        floats = len(sub.placeholder_group) // 4
        engines = [_engine_of(s, plan.field_id) for s in segments]
        dim = next((int(e.dim) for e in engines if e is not None), 0)
        probed = probing(engines, floats // dim, dim, None, mvcc_timestamp(req.mvcc_timestamp)) \
            if shared_lists and dim and plan.expr is None else set()
        work += floats * sum(_scan_rows(s, e, plan, i in probed) for i, (s, e) in enumerate(zip(segments, engines)))
    return work


def _inline(segments: Sequence[Any], req: internal_pb2.SearchRequest, limit: int | None = None) -> bool:
    """Whether ``req`` runs on the event loop: host segments only and at most ``limit`` work
    (default :data:`INLINE_SEARCH_WORK`)."""
    if not all(s.placement == "CPU" for s in segments):
        return False
    limit = INLINE_SEARCH_WORK if limit is None else limit
    # the upper bound first: it settles a small search (a leader's nq=1) without the sharing groups
    return search_work(segments, req, shared_lists=False) <= limit or search_work(segments, req) <= limit


async def run_search(coll: Collection, segments: Sequence[Any], req: internal_pb2.SearchRequest,
                     channels: Sequence[str]) -> internal_pb2.SearchResults:
    """:func:`search_segments` on the event loop when tiny and on host segments only (a GPU search
    may wait for its device), else in a worker thread."""
    if _inline(segments, req):
        return search_segments(coll, segments, req, channels)
    return await asyncio.to_thread(search_segments, coll, segments, req, channels)


# --- micro-batching --------------------------------------------------------------------------------

def _batch_identity(segment: Any) -> Any:
    """What makes two reads' segments the same for a batch: the object of a sealed segment; for a
    read's view of a growing segment (a new object per read), its id and the rows it sees."""
    return getattr(segment, "batch_identity", None) or id(segment)


class _Batch:
    """Searches waiting to leave together: same segments (the first request's objects), plan,
    snapshot and outputs."""

    __slots__ = ("coll", "segments", "channels", "items", "nq", "timer")

    def __init__(self, coll: Collection, segments: Sequence[Any], channels: Sequence[str]) -> None:
        self.coll, self.segments, self.channels = coll, list(segments), list(channels)
        self.items: list[tuple[internal_pb2.SearchRequest, np.ndarray, asyncio.Future]] = []
        self.nq = 0
        self.timer: asyncio.TimerHandle | None = None


class SearchBatcher:
    """Micro-batching of a node's searches, the way GPU search gets its throughput (faiss's advice:
    batch the queries): concurrent small searches for the same segments, plan, MVCC timestamp and
    output fields become one engine search of all their queries (``GpuIndex*.search`` on a GPU
    node), whose top-k are split back per request — each the same as if searched alone, since
    every query's hits are found and merged on their own.

    A search that comes ``window_s`` or more after the previous one and is tiny (see
    :func:`run_search`), or up to :data:`LONE_SEARCH_WORK` when no search at all is pending or running,
    runs at once on the loop: a lone caller waits for nothing, not even a loop iteration or a thread.
    Otherwise a batch leaves on the next loop iteration when no search of its key is running, else
    when the running one ends, after ``window_s`` at the latest, or at once when it holds ``max_nq``
    queries.  Owned by the node's event loop: ``_pending`` and ``_running`` are read and written
    there only; searches run on the loop when tiny (or lone), else in worker threads.
    """

    def __init__(self, window_s: float, max_nq: int) -> None:
        self.window_s = window_s
        self.max_nq = max_nq
        self._pending: dict[tuple, _Batch] = {}
        self._running: dict[tuple, int] = {}
        self._tasks: set[asyncio.Task] = set()   # batches searching in worker threads
        self._last_arrival = float("-inf")       # loop time of the last batchable search

    def _batchable(self, req: internal_pb2.SearchRequest) -> bool:
        return self.window_s > 0 and not req.is_advanced and 0 < req.nq <= self.max_nq

    @staticmethod
    def _key(coll: Collection, segments: Sequence[Any], req: internal_pb2.SearchRequest,
             channels: Sequence[str]) -> tuple:
        return (coll.id, tuple(map(_batch_identity, segments)), bytes(req.serialized_expr_plan), req.mvcc_timestamp,
                tuple(req.output_fields_id), req.metricType, tuple(channels))

    async def search(self, coll: Collection, segments: Sequence[Any], req: internal_pb2.SearchRequest,
                     channels: Sequence[str]) -> internal_pb2.SearchResults:
        if not self._batchable(req):
            return await run_search(coll, segments, req, channels)
        loop = asyncio.get_running_loop()
        now = loop.time()
        quiet, self._last_arrival = now - self._last_arrival >= self.window_s, now
        # no batch pending or running: none of this search's key either, which then need not be built
        key = self._key(coll, segments, req, channels) if self._pending or self._running else None
        if quiet and (key is None or key not in self._pending and not self._running.get(key)) and \
                _inline(segments, req, LONE_SEARCH_WORK if key is None else INLINE_SEARCH_WORK):
            # nothing arrived within a window: a lone caller, searched at once on the loop
            return search_segments(coll, segments, req, channels)
        if key is None:
            key = self._key(coll, segments, req, channels)
        plan = search_plan(bytes(req.serialized_expr_plan))
        f = _vector_field(coll, plan)
        xq = decode_queries(req.placeholder_group, field_dim(f))  # a malformed request fails alone
        batch = self._pending.get(key)
        if batch is None:
            batch = self._pending[key] = _Batch(coll, segments, channels)
            if self._running.get(key):
                batch.timer = loop.call_later(self.window_s, self._flush, key, batch)
            else:
                batch.timer = loop.call_soon(self._flush, key, batch)  # type: ignore[assignment]
        done = loop.create_future()
        batch.items.append((req, xq, done))
        batch.nq += len(xq)
        if batch.nq >= self.max_nq:
            self._flush(key, batch)
        return await done

    def _flush(self, key: tuple, batch: _Batch) -> None:
        if self._pending.get(key) is not batch:
            return  # already left
        del self._pending[key]
        if batch.timer is not None:
            batch.timer.cancel()
        live = [item for item in batch.items if not item[2].done()]  # a cancelled caller needs nothing
        if not live:
            return
        if len(live) == 1:
            req = live[0][0]
            fn: Any = search_segments
            args: tuple = (batch.coll, batch.segments, req, batch.channels)
            inline = _inline(batch.segments, req)
        else:
            fn, args = search_batch, (batch.coll, batch.segments, [(r, x) for r, x, _ in live], batch.channels)
            inline = all(_inline(batch.segments, r) for r, _, _ in live) and \
                sum(search_work(batch.segments, r) for r, _, _ in live) <= INLINE_SEARCH_WORK
        if inline:
            try:
                _settle(live, fn(*args))
            except Exception as e:  # noqa: BLE001 - raised to every caller of the batch
                _fail(live, e)
            return
        self._running[key] = self._running.get(key, 0) + 1
        task = asyncio.ensure_future(self._run_off_loop(key, live, fn, args))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_off_loop(self, key: tuple, live: list, fn: Any, args: tuple) -> None:
        try:
            _settle(live, await asyncio.to_thread(fn, *args))
        except Exception as e:  # noqa: BLE001 - raised to every caller of the batch
            _fail(live, e)
        except asyncio.CancelledError:
            for _, _, done in live:
                done.cancel()
            raise
        finally:
            left = self._running[key] - 1
            if left:
                self._running[key] = left
            else:
                del self._running[key]
            waiting = self._pending.get(key)
            if waiting is not None and not left:
                self._flush(key, waiting)


def _settle(live: list, out: Any) -> None:
    """Hand each caller of a batch its result (``out``: one per caller, or the one of a lone caller)."""
    results = out if isinstance(out, list) else [out]
    for (_, _, done), result in zip(live, results):
        if not done.done():
            done.set_result(result)


def _fail(live: list, error: Exception) -> None:
    for _, _, done in live:
        if not done.done():
            done.set_exception(error)


def _split(topk: TopK, offsets: list[int], lo: int, hi: int, hit_lists: tuple[list, list] | None) -> TopK:
    """Queries ``lo:hi`` of ``topk`` (``offsets``: its hit offsets; ``hit_lists``: its scores and keys as
    lists, for one-query parts, whose encoder takes lists)."""
    a, b = offsets[lo], offsets[hi]
    lists = (hit_lists[0][a:b], hit_lists[1][a:b]) if hit_lists is not None and hi - lo == 1 else None
    return TopK(topk.ids[a:b], topk.scores[a:b], topk.topks[lo:hi], topk.k,
                rows=None if topk.rows is None else topk.rows[a:b],
                sources=None if topk.sources is None else topk.sources[a:b],
                fields=None if topk.fields is None else [c.take(np.arange(a, b)) for c in topk.fields],
                hit_lists=lists)


def search_batch(coll: Collection, segments: Sequence[SealedSegment],
                 items: Sequence[tuple[internal_pb2.SearchRequest, np.ndarray]],
                 channels: Sequence[str]) -> list[internal_pb2.SearchResults]:
    """Requests of one batch key (same plan, snapshot, outputs), their decoded queries alongside:
    one engine search of all their queries, one reply per request.  What every reply shares (hit
    offsets, hit lists, searched segment ids) is computed once: per request only slices remain."""
    started = time.perf_counter()
    first = items[0][0]
    xq = np.concatenate([x for _, x in items]) if len(items) > 1 else items[0][1]
    plan = search_plan(bytes(first.serialized_expr_plan))
    metric, live, topk, field_names = _search_vectors(
        coll, segments, plan, _vector_field(coll, plan), xq, first.metricType, first.output_fields_id,
        mvcc_timestamp(first.mvcc_timestamp))
    total = sum(s.num_rows for s in live)
    elapsed = int((time.perf_counter() - started) * 1000)
    offsets = topk.offsets.tolist()
    hit_lists = None if topk.fields else (topk.scores.tolist(), topk.ids.tolist())
    sealed_ids = [s.segment_id for s in segments if not s.is_l0]
    channels = list(channels)
    out = []
    lo = 0
    for req, x in items:
        part = _split(topk, offsets, lo, lo + len(x), hit_lists)
        lo += len(x)
        srd = to_search_result_data(part, output_fields=field_names, all_search_count=total)
        res = _results_shell(req, segments, channels, sealed_ids)
        res.metric_type, res.num_queries, res.top_k = metric, len(x), part.k
        res.sliced_blob = srd.SerializeToString()
        res.sliced_num_count, res.all_search_count = 1, total
        res.costAggregation.serviceTime = elapsed
        res.costAggregation.totalNQ = len(x)
        out.append(res)
    return out
