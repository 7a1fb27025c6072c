"""Growing rows probed through a sealed segment's lists (vecgrid.gpu.growing, "Probed through a
sealed segment's lists"): an unfiltered search over a host IVF segment and a growing segment assigns
the queries to lists once, and the growing rows are found there as they will be once sealed into an
index of those lists; rows not yet filed are compared exactly, then filed after nlist queries; a
read sees only its snapshot, no deleted or later row; small searches and filtered ones stay exact."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from vecgrid.gpu import exprs
from vecgrid.gpu import loaded_segment as engine
from vecgrid.gpu.build import build_index
from vecgrid.gpu.growing import SHARED_LISTS_FROM_WORK, GrowingSegment, InterimIndex, brute_force_knn

faiss = pytest.importorskip("faiss")

DIM, SEALED, GROWING, NLIST, NPROBE, K = 32, 20_000, 3_000, 64, 4, 10
PARAMS = {"nprobe": NPROBE}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(23)
    centers = rng.standard_normal((50, DIM)).astype(np.float32) * 3

    def clustered(n: int) -> np.ndarray:
        return (centers[rng.integers(0, len(centers), n)] + 0.5 * rng.standard_normal((n, DIM))).astype(np.float32)
    return clustered(SEALED), clustered(GROWING), clustered(200)


def sealed_segment(xb: np.ndarray, metric: str = "L2") -> engine.LoadedSegment:
    built = build_index(xb, "IVF_FLAT", metric, {"nlist": NLIST}, use_gpu=False)
    return engine.load_segment(built.to_bytes(), np.arange(len(xb)), prefer_gpu=False, segment_id=1,
                               timestamps=np.full(len(xb), 1, np.uint64))


def growing_segment(xg: np.ndarray, metric: str = "L2", interim: InterimIndex | None = InterimIndex()
                    ) -> GrowingSegment:
    g = GrowingSegment(DIM, metric, interim=interim)
    g.insert(np.arange(len(xg)) + 10**6, xg, timestamps=np.full(len(xg), 10, np.uint64),
             columns={101: np.arange(len(xg), dtype=np.int64) % 7})
    return g


def reference(seg: engine.LoadedSegment, xs: np.ndarray, xg: np.ndarray, q: np.ndarray, metric: str):
    """One faiss IVF index over both segments' rows in the sealed lists: (keys, distances)."""
    quantizer = seg.quantizer_copy()
    both = faiss.IndexIVFFlat(quantizer, DIM, NLIST, quantizer.metric_type)
    base = np.vstack([xs, xg])
    both.add(base / np.linalg.norm(base, axis=1, keepdims=True) if metric == "COSINE" else base)
    qq = q / np.linalg.norm(q, axis=1, keepdims=True) if metric == "COSINE" else q
    D, I = both.search(qq, K, params=faiss.SearchParametersIVF(nprobe=NPROBE))
    return np.where(I < len(xs), I, I - len(xs) + 10**6), D


FILED_AFTER = -(-NLIST // 100)   # searches of 100 queries until the rows met nlist queries


@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
def test_growing_rows_are_found_as_if_sealed_into_the_same_lists(data, metric):
    xs, xg, xq = data
    seg, g = sealed_segment(xs, metric), growing_segment(xg, metric)
    q = xq[:100]
    for _ in range(FILED_AFTER):
        got = engine.search_segments([seg, g], q, K, params=PARAMS)
    assert g._interim_rows == GROWING and g._interim_key == seg.quantizer_key
    keys, D = reference(seg, xs, xg, q, metric)
    assert got.ids.reshape(-1, K).tolist() == keys.tolist()
    np.testing.assert_allclose(got.scores.reshape(-1, K), D, rtol=1e-5, atol=1e-4)
    assert (got.ids >= 10**6).any()   # growing rows are among the hits


def test_rows_not_yet_filed_are_compared_exactly_then_filed_after_nlist_queries(data):
    xs, xg, xq = data
    seg, g = sealed_segment(xs), growing_segment(xg[:2_000])
    q = xq[:NLIST // 2]
    engine.search_segments([seg, g], q, K, params=PARAMS)
    assert g._interim_index is not None and g._interim_rows == 0   # the index exists, nothing filed yet
    # the rows are compared exactly: the growing part equals brute force over the growing rows
    part = g.search(q[:1], K, assign=seg.assign(q[:1], K, PARAMS))
    _, I = brute_force_knn(q[:1], xg[:2_000], K, "L2")
    assert part.ids.tolist() == (I[0] + 10**6).tolist() and g._interim_rows == 0
    engine.search_segments([seg, g], q, K, params=PARAMS)   # nlist queries met: filed
    assert g._interim_rows == 2_000
    # more rows: filed rows through the lists, the new ones exactly, one answer
    g.insert(np.arange(2_000, GROWING) + 10**6, xg[2_000:], timestamps=np.full(GROWING - 2_000, 20, np.uint64),
             columns={101: np.arange(2_000, GROWING, dtype=np.int64) % 7})
    part = g.search(q, K, assign=seg.assign(q, K, PARAMS))
    assert g._interim_rows == 2_000
    quantizer = seg.quantizer_copy()
    filed = faiss.IndexIVFFlat(quantizer, DIM, NLIST, quantizer.metric_type)
    filed.add(xg[:2_000])
    Df, If = filed.search(q, K, params=faiss.SearchParametersIVF(nprobe=NPROBE))
    Dn, In = brute_force_knn(q, xg[2_000:], K, "L2")
    D, rows = np.hstack([Df, Dn]), np.hstack([If, np.where(In >= 0, In + 2_000, -1)])
    D[rows < 0] = np.inf
    best = np.take_along_axis(rows, np.argsort(D, axis=1, kind="stable")[:, :K], axis=1)
    want = [[r + 10**6 for r in row if r >= 0] for row in best.tolist()]
    got = [part.query(i)[0].tolist() for i in range(len(q))]
    assert got == want and any(r >= 10**6 + 2_000 for row in got for r in row)
    assert g.nbytes() > growing_segment(xg, interim=None).nbytes()      # the filed copy and quantizer are counted


def snapshot_then_more_rows(xs: np.ndarray, xg: np.ndarray):
    """A sealed segment, a growing one, a read's snapshot of its first 2,000 rows, then the others
    inserted (at ts 20): (sealed, growing, snapshot)."""
    seg, g = sealed_segment(xs), growing_segment(xg[:2_000])
    early = g.snapshot()
    g.insert(np.arange(2_000, GROWING) + 10**6, xg[2_000:], timestamps=np.full(GROWING - 2_000, 20, np.uint64),
             columns={101: np.arange(2_000, GROWING, dtype=np.int64) % 7})
    return seg, g, early


def test_a_read_sees_only_its_snapshot_and_never_deleted_or_later_rows(data):
    xs, xg, xq = data
    seg, g, early = snapshot_then_more_rows(xs, xg)
    q = xq[:100]
    for _ in range(FILED_AFTER):
        engine.search_segments([seg, g.snapshot()], q, K, params=PARAMS)
    assert g._interim_rows == GROWING
    lists = seg.assign(q, K, PARAMS)
    # the earlier read goes through the same index, which holds rows it must not see
    assert early.search(q, K, assign=lists).ids.max() < 10**6 + 2_000
    # MVCC: a read at ts 15 does not see the rows inserted at 20
    assert g.search(q, K, timestamp=15, assign=lists).ids.max() < 10**6 + 2_000
    best = np.unique(g.search(q, 1, assign=lists).ids)
    assert g.delete(best, 30) == len(best)
    assert not set(g.search(q, K, timestamp=30, assign=lists).ids.tolist()) & set(best.tolist())
    assert set(g.search(q, K, timestamp=29, assign=lists).ids.tolist()) & set(best.tolist())


def test_small_and_filtered_searches_stay_exact_and_without_an_interim_setting_too(data):
    xs, xg, xq = data
    seg = sealed_segment(xs)
    few = growing_segment(xg[:100])
    assert 1 * 100 * DIM < SHARED_LISTS_FROM_WORK   # one query over 100 rows: comparing them costs less
    engine.search_segments([seg, few], xq[:1], K, params=PARAMS)
    assert few._interim_index is None
    g = growing_segment(xg)
    expr = exprs.compare(exprs.column(101), "==", 3)
    got = g.search(xq[:100], K, expr=expr, assign=seg.assign(xq[:100], K, PARAMS))
    allowed = np.flatnonzero(np.arange(GROWING) % 7 == 3)
    _, I = brute_force_knn(xq[:100], xg[allowed], K, "L2")
    assert got.ids.reshape(-1, K).tolist() == (allowed[I] + 10**6).tolist()
    assert g._interim_index is None
    exact = growing_segment(xg, interim=None)   # interim_index_rows = 0, or an exact collection
    got = engine.search_segments([seg, exact], xq[:100], K, params=PARAMS)
    assert exact._interim_index is None
    alone = engine.merge_topk([seg.search(xq[:100], K, params=PARAMS), exact.search(xq[:100], K)], K, "L2")
    assert got.ids.tolist() == alone.ids.tolist()


def test_another_quantizer_starts_a_new_index_and_release_drops_it(data):
    xs, xg, xq = data
    first, g = sealed_segment(xs), growing_segment(xg)
    q = xq[:100]
    for _ in range(FILED_AFTER):
        engine.search_segments([first, g], q, K, params=PARAMS)
    assert g._interim_key == first.quantizer_key and g._interim_rows == GROWING
    second = sealed_segment(xs[::-1].copy())   # trained anew (a compaction's output, say)
    assert second.quantizer_key != first.quantizer_key
    engine.search_segments([second, g], q[:NLIST // 2], K, params=PARAMS)   # too few queries to file the rows yet
    assert g._interim_key == second.quantizer_key and g._interim_rows == 0
    g.release()
    assert g._interim_index is None and g._interim_key is None


def test_reads_while_the_pipeline_inserts(data):
    """Reader threads search fresh snapshots through the lists while a writer inserts: the index grows
    under its lock and no read sees a row past its snapshot."""
    xs, xg, xq = data
    seg, g = sealed_segment(xs), growing_segment(xg[:500])
    failures: list[BaseException] = []
    done = threading.Event()

    def write() -> None:
        for lo in range(500, GROWING, 250):
            g.insert(np.arange(lo, lo + 250) + 10**6, xg[lo:lo + 250], timestamps=np.full(250, 10, np.uint64),
                     columns={101: np.arange(lo, lo + 250, dtype=np.int64) % 7})
        done.set()

    def read() -> None:
        try:
            while True:   # at least one read, however soon the writer is done
                finished = done.is_set()
                snap = g.snapshot()
                hits = engine.search_segments([seg, snap], xq[:100], K, params=PARAMS)
                grown = hits.ids[hits.ids >= 10**6] - 10**6
                assert grown.size == 0 or grown.max() < snap.num_rows
                if finished:
                    return
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            failures.append(e)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    write()
    for t in readers:
        t.join()
    assert not failures, failures[0]
    assert g._interim_rows > 0


def test_a_search_without_the_lists_goes_through_the_same_index(data):
    """Past interim_index_rows, a search that covers no sealed segment (one partition, say) uses the
    index filed in the sealed lists, assigning its queries itself, instead of training another."""
    xs, xg, xq = data
    seg, g = sealed_segment(xs), growing_segment(xg, interim=InterimIndex(rows=1_000, nlist=16, nprobe=NPROBE))
    for _ in range(FILED_AFTER):
        engine.search_segments([seg, g], xq[:100], K, params=PARAMS)
    index = g._interim_index
    assert g._interim_key == seg.quantizer_key and g._interim_rows == GROWING
    alone = g.search(xq[:100], K)
    assert g._interim_index is index and g._interim_key == seg.quantizer_key
    D, I = index.search(xq[:100], K, params=faiss.SearchParametersIVF(nprobe=NPROBE))
    assert alone.ids.reshape(-1, K).tolist() == (I + 10**6).tolist()


def test_a_one_query_search_counts_only_the_growing_rows_it_probes(data):
    """The fan-out of a search over few queries counts the rows each segment compares: a growing
    segment probed through the sealed lists compares its filed rows in those lists only, so one
    query over a sealed segment and 40,000 filed growing rows stays on one thread (compared one by
    one, those rows alone would have spread it over two)."""
    xs, _, xq = data
    rows = 40_000
    assert rows * DIM >= max(SHARED_LISTS_FROM_WORK, engine.FAN_OUT_WORK)
    xg = np.random.default_rng(3).standard_normal((rows, DIM), dtype=np.float32)
    seg, g = sealed_segment(xs), growing_segment(xg)
    engine.search_segments([seg, g], xq[:100], K, params=PARAMS)   # nlist queries: the rows are filed
    assert g._interim_rows == rows
    q = xq[:1]
    shared = engine._shared_assignments([seg, g], q, K, None, None, PARAMS)
    assert set(shared) == {0, 1}
    assert g.rows_probed(NPROBE) < rows // 10
    assert engine.fan_out_width([seg, g], 1, K, params=PARAMS) == 2                  # every row compared
    assert engine.fan_out_width([seg, g], 1, K, params=PARAMS, probed=shared.keys()) == 1   # the probed lists only


def test_a_node_counts_the_growing_rows_as_the_engine_will_search_them(data):
    """A node runs a search on its event loop when its cost estimate is small: the estimate counts a
    growing view probed through the sealed lists by the rows it compares there, and every row when
    the sealed segment cannot lend its lists (a delete hides some of its rows)."""
    from types import SimpleNamespace

    from vecgrid.cluster.querynode import search as node_search
    from vecgrid.cluster.querynode.delegator.distribution import GrowingView
    from vecgrid.gpu.results import encode_placeholder_group
    from vecgrid.proto import internal_pb2

    xs, _, xq = data
    rows = 80_000
    xg = np.random.default_rng(4).standard_normal((rows, DIM), dtype=np.float32)
    seg, g = sealed_segment(xs), growing_segment(xg)
    engine.search_segments([seg, g], xq[:100], K, params=PARAMS)   # nlist queries: the rows are filed
    sealed = SimpleNamespace(engines={0: seg}, num_rows=seg.num_rows, placement="CPU")
    view = GrowingView(7, 1, g)
    plan = exprs.search_plan(field_id=0, topk=K, metric="L2", search_params=PARAMS)
    req = internal_pb2.SearchRequest(serialized_expr_plan=plan, placeholder_group=encode_placeholder_group(xq[:1]),
                                     nq=1, topk=K)
    assert DIM * rows > node_search.INLINE_SEARCH_WORK   # every growing row compared: off the loop
    assert node_search.search_work([sealed, view], req) <= node_search.INLINE_SEARCH_WORK
    assert node_search.search_work([view], req) >= DIM * rows   # no sealed lists to probe through
    seg.delete(np.array([0]), np.array([5], np.uint64))
    assert node_search.search_work([sealed, view], req) >= DIM * rows


def _filed(seg: engine.LoadedSegment, g, q: np.ndarray) -> None:
    """Search until the growing rows are filed in ``seg``'s lists."""
    for _ in range(-(-NLIST // len(q))):
        engine.search_segments([seg, g], q, K, params=PARAMS)
    assert g.filed_in(seg)


def _no_second_part(monkeypatch, g: GrowingSegment) -> None:
    def refuse(*a, **kw):
        raise AssertionError("the growing rows were searched as a second part")
    monkeypatch.setattr(g, "search", refuse)


def _check_sources(segments, got) -> None:
    """Every hit's source and row name the segment row it came from."""
    for key, source, row in zip(got.ids.tolist(), got.sources.tolist(), got.rows.tolist()):
        assert segments[source].rows.pks[row] == key


@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
@pytest.mark.parametrize("nq", [1, 100])
def test_filed_growing_rows_go_into_the_sealed_segments_result_heaps(data, metric, nq, monkeypatch):
    """Once the growing rows are all filed in the sealed lists, one search takes both segments in the
    same result heaps: the hits are those of one IVF index over both, in merge order, with their
    sources, and no second part is searched and merged."""
    xs, xg, xq = data
    if nq == 1:   # one query probes them through the lists when there are many
        rng = np.random.default_rng(5)
        xg = (xs[rng.integers(0, SEALED, 40_000)] + 0.5 * rng.standard_normal((40_000, DIM))).astype(np.float32)
        assert len(xg) * DIM >= SHARED_LISTS_FROM_WORK
    seg, g = sealed_segment(xs, metric), growing_segment(xg, metric)
    _filed(seg, g, xq[:100])
    _no_second_part(monkeypatch, g)
    found = set()
    keys, D = reference(seg, xs, xg, xq[100:200], metric)
    for lo in range(0, 100, nq):   # one search of 100 queries, or 100 of one
        got = engine.search_segments([seg, g], xq[100 + lo:100 + lo + nq], K, params=PARAMS)
        assert got.in_order and got.ids.reshape(-1, K).tolist() == keys[lo:lo + nq].tolist()
        np.testing.assert_allclose(got.scores.reshape(-1, K), D[lo:lo + nq], rtol=1e-5, atol=1e-4)
        _check_sources([seg, g], got)
        found.update(key >= 10**6 for key in got.ids.tolist())
    assert found == {True, False}   # hits of both segments


def test_one_heap_leaves_ties_and_a_key_in_both_segments_to_the_merge(data):
    """A tie (the primary key orders it) or a key found in both segments (kept once, at its best)
    is settled as the merge of the two parts settles it."""
    xs, xg, xq = data
    seg = sealed_segment(xs)
    q = xq[:100]
    twins = xs[:GROWING]   # every growing row equals a sealed row: each hit has a tie
    for keys in (np.arange(GROWING) + 10**6, np.arange(GROWING)):   # other keys; the same keys
        g = GrowingSegment(DIM, "L2", interim=InterimIndex())
        g.insert(keys, twins, timestamps=np.full(GROWING, 10, np.uint64))
        _filed(seg, g, q)
        got = engine.search_segments([seg, g], q, K, params=PARAMS)
        want = engine.merge_topk([seg.search(q, K, params=PARAMS), g.search(q, K, assign=seg.assign(q, K, PARAMS))],
                                 K, "L2")
        assert got.ids.tolist() == want.ids.tolist() and got.topks.tolist() == want.topks.tolist()
        _check_sources([seg, g], got)


def test_one_heap_merges_with_the_other_segments_and_keeps_their_sources(data, monkeypatch):
    xs, xg, xq = data
    seg, g = sealed_segment(xs[:15_000]), growing_segment(xg)
    other = engine.load_segment(build_index(xs[15_000:], "IVF_FLAT", "L2", {"nlist": 16}, use_gpu=False).to_bytes(),
                                np.arange(15_000, SEALED), prefer_gpu=False, segment_id=2,
                                timestamps=np.full(SEALED - 15_000, 1, np.uint64))
    q = xq[:100]
    _filed(seg, g, q)
    want = engine.merge_topk([seg.search(q, K, params=PARAMS), g.search(q, K, assign=seg.assign(q, K, PARAMS)),
                              other.search(q, K, params=PARAMS)], K, "L2")
    _no_second_part(monkeypatch, g)
    for segments in ([seg, g, other], [other, g, seg]):
        got = engine.search_segments(segments, q, K, params=PARAMS)
        assert got.ids.tolist() == want.ids.tolist()
        assert {10**6 <= key for key in got.ids.tolist()} == {True, False}
        _check_sources(segments, got)


def test_one_heap_reads_only_its_snapshot_and_no_deleted_row(data):
    xs, xg, xq = data
    seg, g, early = snapshot_then_more_rows(xs, xg)
    q = xq[:100]
    _filed(seg, g, q)
    assert early.filed_in(seg) and g._interim_rows > early.num_rows   # the index holds rows it must not see
    got = engine.search_segments([seg, early], q, K, params=PARAMS)
    keys, _ = reference(seg, xs, xg[:2_000], q, "L2")
    assert got.ids.reshape(-1, K).tolist() == keys.tolist()
    best = np.unique(got.ids[got.ids >= 10**6])
    g.delete(best, 30)
    after = engine.search_segments([seg, g.snapshot()], q, K, timestamp=40, params=PARAMS)
    assert not set(after.ids.tolist()) & set(best.tolist())
    _check_sources([seg, g], after)


def test_a_node_leases_the_cores_the_engine_will_use(data, monkeypatch):
    """The cores a node leases for a search follow the same count: one query over a sealed segment and
    80,000 filed growing rows leases one core (every growing row counted, it leased two and left one
    idle while another search waited for it)."""
    import contextlib
    from types import SimpleNamespace

    from vecgrid.cluster.querynode import search as node_search
    from vecgrid.cluster.querynode.collections import Collection
    from vecgrid.cluster.querynode.delegator.distribution import GrowingView
    from vecgrid.proto import common_pb2, schema_pb2

    xs, _, xq = data
    rows = 80_000
    xg = np.random.default_rng(4).standard_normal((rows, DIM), dtype=np.float32)
    seg, g = sealed_segment(xs), growing_segment(xg)
    engine.search_segments([seg, g], xq[:100], K, params=PARAMS)   # nlist queries: the rows are filed
    schema = schema_pb2.CollectionSchema(name="c", fields=[
        schema_pb2.FieldSchema(fieldID=100, name="id", data_type=schema_pb2.Int64, is_primary_key=True),
        schema_pb2.FieldSchema(fieldID=0, name="v", data_type=schema_pb2.FloatVector,
                               type_params=[common_pb2.KeyValuePair(key="dim", value=str(DIM))])])
    sealed = SimpleNamespace(engines={0: seg}, engine=lambda field_id: seg, num_rows=seg.num_rows, placement="CPU",
                             is_l0=False, segment_id=1)
    leased: list[int] = []

    @contextlib.contextmanager
    def lease(wanted: int):
        leased.append(wanted)
        yield

    monkeypatch.setattr(node_search, "available_cores", lambda: 4)
    monkeypatch.setattr(node_search, "faiss_threads", lease)
    plan = exprs.search_plan(field_id=0, topk=K, metric="L2", search_params=PARAMS)
    coll, parsed = Collection(1, schema), node_search.search_plan(plan)
    _, _, topk, _ = node_search._search_vectors(coll, [sealed, GrowingView(7, 1, g)], parsed,
                                                node_search._vector_field(coll, parsed), xq[:1], "L2", [], None)
    assert len(topk) == K and leased == [1]
    assert engine.fan_out_width([seg, g], 1, K, params=PARAMS) == 2   # what counting every growing row gives


def test_one_query_over_few_filed_rows_still_compares_them(data):
    """Filed or not, a few growing rows are compared one by one with a single query (it costs less than
    assigning the query to lists first): no sharing group, the growing segment searched exactly."""
    xs, xg, xq = data
    seg, g = sealed_segment(xs), growing_segment(xg)
    _filed(seg, g, xq[:100])
    assert 1 * GROWING * DIM < SHARED_LISTS_FROM_WORK and not g.probes_lists_of(seg, 1)
    assert engine.sharing_groups([seg, g], 1, DIM, None, None) == []
    got = engine.search_segments([seg, g], xq[100:101], K, params=PARAMS)
    want = engine.merge_topk([seg.search(xq[100:101], K, params=PARAMS), g.search(xq[100:101], K)], K, "L2")
    assert got.ids.tolist() == want.ids.tolist()
