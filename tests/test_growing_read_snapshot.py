"""Issue 23: a read of growing rows uses one row count, though the pipeline thread keeps inserting.

The interleaving is made deterministic: the growing segment's RowStore runs an insert right after a
reader's first read of its row count, as the pipeline thread's insert would land between two reads.
"""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid.cluster.querynode import retrieve
from vecgrid.cluster.querynode.collections import Collection
from vecgrid.cluster.querynode.delegator.distribution import GrowingView
from vecgrid.gpu import exprs
from vecgrid.gpu.growing import GrowingSegment
from vecgrid.gpu.rows import RowStore
from vecgrid.proto import internal_pb2, plan_pb2, schema_pb2

DIM, PK, VEC, AGE = 4, 100, 101, 102
N = 20


class InsertAfterFirstCountRead(RowStore):
    """A RowStore whose next read of the row count is followed at once by ``on_read()`` (once)."""

    on_read = None

    @property
    def n(self) -> int:
        n = RowStore.n.fget(self)
        hook, self.on_read = self.on_read, None
        if hook is not None:
            hook()
        return n


def _schema() -> schema_pb2.CollectionSchema:
    return schema_pb2.CollectionSchema(name="race", fields=[
        schema_pb2.FieldSchema(fieldID=PK, name="pk", data_type=schema_pb2.Int64, is_primary_key=True),
        schema_pb2.FieldSchema(fieldID=VEC, name="vec", data_type=schema_pb2.FloatVector,
                               type_params=[{"key": "dim", "value": str(DIM)}]),
        schema_pb2.FieldSchema(fieldID=AGE, name="age", data_type=schema_pb2.Int64),
    ])


def _insert(g: GrowingSegment, first: int, count: int, ts: int) -> None:
    keys = np.arange(first, first + count, dtype=np.int64)
    g.insert(keys, np.ones((count, DIM), np.float32) * keys[:, None],
             timestamps=np.full(count, ts, np.uint64), columns={AGE: keys})


def _growing_racing_an_insert() -> GrowingSegment:
    """N rows at ts 10..; the next row-count read is followed by one more row (key N, ts 1000)."""
    g = GrowingSegment(DIM, "L2", segment_id=7, field_id=VEC, schema=_schema(), pk_field_id=PK)
    for i in range(N):
        _insert(g, i, 1, 10 + i)
    g.rows.__class__ = InsertAfterFirstCountRead
    g.rows.on_read = lambda: _insert(g, N, 1, 1000)
    return g


def _request(expr: plan_pb2.Expr | None = None, *, is_count: bool = False,
             mvcc: int = 0) -> internal_pb2.RetrieveRequest:
    node = plan_pb2.QueryPlanNode(is_count=is_count)
    if expr is not None:
        node.predicates.CopyFrom(expr)
    plan = plan_pb2.PlanNode(query=node).SerializeToString()
    return internal_pb2.RetrieveRequest(collectionID=1, serialized_expr_plan=plan, mvcc_timestamp=mvcc,
                                        is_count=is_count)


def _coll() -> Collection:
    return Collection(id=1, schema=_schema())


AGE_AT_LEAST_5 = exprs.compare(exprs.column(AGE), ">=", 5)


# --- RowStore -----------------------------------------------------------------------------------

def test_mask_reads_the_row_count_once():
    g = _growing_racing_an_insert()
    # a filter and a timestamp below the newest row: both the filter and the visibility mask are built
    mask = g.rows.mask(AGE_AT_LEAST_5, ts=500)
    assert g.num_rows == N + 1, "the insert ran between the reader's reads"
    assert len(mask) == N
    assert np.flatnonzero(mask).tolist() == list(range(5, N))


def test_count_at_a_snapshot_leaves_out_rows_appended_after_it():
    g = _growing_racing_an_insert()
    assert g.rows.count() == N
    assert g.num_rows == N + 1
    assert g.rows.count() == N + 1
    assert g.rows.count(AGE_AT_LEAST_5, ts=500, n=N) == N - 5


# --- the query node's readers of growing rows ------------------------------------------------------

def test_query_with_filter_while_the_pipeline_inserts():
    g = _growing_racing_an_insert()
    found = retrieve.retrieve(_coll(), [GrowingView(7, 0, g)], _request(AGE_AT_LEAST_5, mvcc=500))
    assert sorted(found.ids.tolist()) == list(range(5, N))


def test_count_does_not_include_a_row_inserted_after_its_snapshot():
    g = _growing_racing_an_insert()
    found = retrieve.retrieve(_coll(), [GrowingView(7, 0, g)], _request(is_count=True))
    assert g.num_rows == N + 1
    assert found.count == N


def test_visible_rows_of_a_growing_view_use_its_snapshot():
    g = _growing_racing_an_insert()
    view = GrowingView(7, 0, g)
    assert view.visible_rows(None) == N
    assert g.num_rows == N + 1


def test_search_reports_the_rows_it_searched():
    g = _growing_racing_an_insert()
    view = GrowingView(7, 0, g)
    hits = view.engine(VEC).search(np.full((1, DIM), N, np.float32), 3)
    assert view.num_rows == N, "all_search_count (the view's num_rows) counts the rows searched"
    assert g.num_rows == N + 1
    assert N not in hits.ids.tolist(), "the row inserted after the view's snapshot is not searched"
