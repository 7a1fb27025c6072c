"""Worker-side query (retrieve): ``internal.RetrieveRequest`` over local sealed segments.

The plan's ``query`` arm carries a filter ``Expr``, ``is_count`` and ``limit``.  Each
segment's allowed rows are those passing the filter, inserted at or before the
request's MVCC timestamp and not deleted by then (the engine's
:meth:`~vecgrid.gpu.rows.RowStore.mask`).  Rows of all segments are merged as Milvus
merges retrieve results: ordered by primary key, a key present in several segments
kept once (the row with the newest insert timestamp), then cut at ``limit``.

* :func:`retrieve` → :class:`Retrieved` (keys, segment and row of every result);
* :func:`to_retrieve_results` → one ``internal.RetrieveResults`` (``ids`` as
  ``schema.IDs``; ``fields_data`` for the output fields, the primary key always
  included); a count answers Milvus's single Int64 field ``count(*)``;
* :func:`retrieve_chunks` → the same rows as a sequence of ``RetrieveResults`` each
  at most ``chunk_bytes`` serialized (a single row larger than that goes alone).

Blocking (numpy): the node runs it in a worker thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from vecgrid.cluster.querynode.collections import Collection
from vecgrid.cluster.querynode.output_fields import fetch_columns, resolve_output_fields
from vecgrid.cluster.querynode.search import mvcc_timestamp
from vecgrid.cluster.querynode.segments import SealedSegment
from vecgrid.gpu.columns import FieldColumn
from vecgrid.gpu.plan import parse_query_plan
from vecgrid.gpu.results import COUNT_FIELD, column_to_field_data
from vecgrid.proto import common_pb2, internal_pb2, schema_pb2

DEFAULT_CHUNK_BYTES = 4 * 1024 * 1024


@dataclass
class Retrieved:
    """The result rows: ``ids[j]`` is row ``rows[j]`` of ``segments[which[j]]``."""

    coll: Collection
    segments: list[SealedSegment]
    ids: np.ndarray
    which: np.ndarray
    rows: np.ndarray
    field_ids: list[int]
    count: int | None = None        # set for count(*) requests
    started: float = 0.0

    def __len__(self) -> int:
        return len(self.ids)

    def columns(self, lo: int = 0, hi: int | None = None) -> list[FieldColumn]:
        sl = slice(lo, hi)
        return fetch_columns(self.coll, self.segments, self.which[sl], self.rows[sl], self.field_ids)


def retrieve(coll: Collection, segments: Sequence[SealedSegment], req: internal_pb2.RetrieveRequest) -> Retrieved:
    started = time.perf_counter()
    plan = parse_query_plan(req.serialized_expr_plan)
    ts = mvcc_timestamp(req.mvcc_timestamp)
    live = [s for s in segments if not s.is_l0]
    pk_kind = np.dtype(str) if coll.pk_field.data_type == schema_pb2.VarChar else np.dtype(np.int64)
    # every mask and count of a segment stops at its num_rows (a growing view's snapshot)
    if plan.is_count or req.is_count:
        total = sum(s.rows.count(plan.expr, ts, s.num_rows) for s in live)
        return Retrieved(coll, live, np.zeros(0, pk_kind), np.zeros(0, np.int64), np.zeros(0, np.int64), [],
                         count=total, started=started)
    field_ids = resolve_output_fields(coll, list(req.output_fields_id) or plan.output_field_ids, with_pk=True)
    ids, which, rows, row_ts = [], [], [], []
    for i, s in enumerate(live):
        r = s.rows.matching_rows(plan.expr, ts, s.num_rows)
        ids.append(s.rows.pks[r])
        which.append(np.full(len(r), i, dtype=np.int64))
        rows.append(r)
        t = s.rows.timestamps
        row_ts.append(t[r] if t is not None else np.zeros(len(r), np.uint64))
    if not ids:
        return Retrieved(coll, live, np.zeros(0, pk_kind), np.zeros(0, np.int64), np.zeros(0, np.int64), field_ids,
                         started=started)
    all_ids = np.concatenate([a.astype(str) if pk_kind.kind == "U" else a.astype(np.int64) for a in ids])
    all_which, all_rows = np.concatenate(which), np.concatenate(rows)
    all_ts = np.concatenate(row_ts).astype(np.uint64)
    # order by key, newest insert first among equal keys; keep the first of each key
    order = np.lexsort((np.iinfo(np.uint64).max - all_ts, all_ids))
    keys = all_ids[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    order = order[first]
    limit = plan.limit if plan.limit and plan.limit > 0 else (req.limit if req.limit > 0 else -1)
    if limit >= 0:
        order = order[:limit]
    return Retrieved(coll, live, all_ids[order], all_which[order], all_rows[order], field_ids, started=started)


def _ids(values: np.ndarray) -> schema_pb2.IDs:
    out = schema_pb2.IDs()
    if values.dtype.kind in "UOS":
        out.str_id.data.extend([str(v) for v in values.tolist()])
        out.str_id.SetInParent()
    else:
        out.int_id.data.extend(values.tolist())
        out.int_id.SetInParent()
    return out


def _message(r: Retrieved, req: internal_pb2.RetrieveRequest, channels: Sequence[str], lo: int = 0,
             hi: int | None = None) -> internal_pb2.RetrieveResults:
    out = internal_pb2.RetrieveResults(status=common_pb2.Status(), reqID=req.reqID,
                                       sealed_segmentIDs_retrieved=[s.segment_id for s in r.segments],
                                       channelIDs_retrieved=list(channels))
    if r.count is not None:
        fd = schema_pb2.FieldData(type=schema_pb2.Int64, field_name=COUNT_FIELD)
        fd.scalars.long_data.data.append(r.count)
        out.fields_data.append(fd)
        out.all_retrieve_count = r.count
    else:
        hi = len(r) if hi is None else hi
        out.ids.CopyFrom(_ids(r.ids[lo:hi]))
        out.fields_data.extend(column_to_field_data(c) for c in r.columns(lo, hi))
        out.all_retrieve_count = hi - lo
    out.costAggregation.serviceTime = int((time.perf_counter() - r.started) * 1000)
    return out


def to_retrieve_results(r: Retrieved, req: internal_pb2.RetrieveRequest,
                        channels: Sequence[str]) -> internal_pb2.RetrieveResults:
    return _message(r, req, channels)


def retrieve_chunks(r: Retrieved, req: internal_pb2.RetrieveRequest, channels: Sequence[str],
                    chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> Iterator[internal_pb2.RetrieveResults]:
    """The result as messages of at most ``chunk_bytes`` each (always at least one message)."""
    n = len(r)
    if r.count is not None or n == 0:
        yield _message(r, req, channels)
        return
    probe = min(n, 64)
    per_row = max(1, _message(r, req, channels, 0, probe).ByteSize() // probe)
    step = max(1, int(chunk_bytes * 0.9) // per_row)
    lo = 0
    while lo < n:
        hi = min(n, lo + step)
        msg = _message(r, req, channels, lo, hi)
        while msg.ByteSize() > chunk_bytes and hi - lo > 1:
            hi = lo + max(1, (hi - lo) // 2)
            msg = _message(r, req, channels, lo, hi)
        yield msg
        lo = hi
