"""Sealed-segment search on the host (CI): exactness, recall, filters, deletes, output, memory.

The 100,000 × 128 clustered data set (fixed seed) and its indexes are built once per module.
"""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.gpu import build, device
from vecgrid.gpu import exprs
from vecgrid.gpu.datasets import SCALAR_FIELDS, SyntheticDataset, scalar_columns
from vecgrid.gpu.evaluation import check_ref_knn_with_draws, knn_ground_truth, recall_at_k
from vecgrid.gpu.results import encode_placeholder_group
from vecgrid.gpu.loaded_segment import load_segment, search_request, search_segments
from vecgrid.proto import common_pb2, schema_pb2

pytest.importorskip("faiss")

NB, D, NQ, K = 30_000, 128, 300, 10
PK_FIELD, VEC_FIELD = 100, 200


def make_schema() -> schema_pb2.CollectionSchema:
    fields = [schema_pb2.FieldSchema(fieldID=PK_FIELD, name="pk", is_primary_key=True, data_type=schema_pb2.Int64),
              schema_pb2.FieldSchema(fieldID=VEC_FIELD, name="vec", data_type=schema_pb2.FloatVector)]
    fields[1].type_params.add(key="dim", value=str(D))
    for fid, (name, dt) in SCALAR_FIELDS.items():
        fields.append(schema_pb2.FieldSchema(fieldID=fid, name=name, data_type=dt))
    return schema_pb2.CollectionSchema(name="c", fields=fields)


SCHEMA = make_schema()


@pytest.fixture(scope="module")
def ds():
    return SyntheticDataset(d=D, nb=NB, nq=NQ, seed=1234)


@pytest.fixture(scope="module")
def cols():
    return scalar_columns(NB, seed=7)


@pytest.fixture(scope="module")
def pks():
    return np.arange(NB, dtype=np.int64) * 7 + 3  # keys differ from row offsets


@pytest.fixture(scope="module")
def mgr():
    return device.DeviceManager(0.8)


@pytest.fixture(scope="module")
def gt(ds):
    return knn_ground_truth(ds.xq, ds.xb, 100, "L2")


def load(data, pks, cols, mgr, **kw):
    return load_segment(data, pks, columns=cols, schema=SCHEMA, segment_id=kw.pop("segment_id", 1),
                        field_id=VEC_FIELD, pk_field_id=PK_FIELD, manager=mgr, **kw)


@pytest.fixture(scope="module")
def flat(ds, pks, cols, mgr):
    seg = load(build.build_index_file(ds.xb, "FLAT", "L2"), pks, cols, mgr)
    yield seg
    seg.release()


@pytest.fixture(scope="module")
def ivf(ds, pks, cols, mgr):
    seg = load(build.build_index_file(ds.xb, "IVF_FLAT", "L2"), pks, cols, mgr, segment_id=2)
    yield seg
    seg.release()


@pytest.fixture(scope="module")
def hnsw(ds, pks, cols, mgr):
    seg = load(build.build_index_file(ds.xb, "HNSW", "L2"), pks, cols, mgr, segment_id=3)
    yield seg
    seg.release()


@pytest.fixture(scope="module")
def small_hnsw(ds, pks, cols, mgr):
    """An HNSW segment of 2,000 rows, for the checks of its parameters (the full one takes 2 s to build)."""
    n = 2000
    seg = load(build.build_index_file(ds.xb[:n], "HNSW", "L2"), pks[:n], {f: c[:n] for f, c in cols.items()}, mgr,
               segment_id=4)
    yield seg
    seg.release()


def rows_of(topk, pks):
    """Dense row offsets (-1 padded) of a TopK whose ids are pks = 7 * row + 3."""
    _, ids = topk.dense()
    ids = ids.astype(np.int64)
    return np.where(ids >= 0, (ids - 3) // 7, -1)


# -- exactness and recall -------------------------------------------------------------------------

@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
def test_flat_equals_numpy_brute_force(ds, pks, cols, mgr, metric):
    seg = load(build.build_index_file(ds.xb, "FLAT", metric), pks, cols, mgr, segment_id=10)
    try:
        assert seg.placement == "CPU" and seg.info["built_type"] == "FLAT"
        for nq in (1, 7, 100):  # faiss switches kernels at nq=20
            xq = ds.xq[:nq]
            res = seg.search(xq, K)
            Dref, Iref = knn_ground_truth(xq, ds.xb, K, metric)
            Dnew, _ = res.dense()
            assert res.topks.tolist() == [K] * nq
            check_ref_knn_with_draws(Dref, Iref, Dnew, rows_of(res, pks), rtol=1e-4, atol=1e-4)
    finally:
        seg.release()


@pytest.mark.slow  # trains an IVF index (1 s): make test runs it
def test_ivf_flat_recall_at_default_params(ivf, ds, gt):
    assert ivf.search_params(K) == {"nprobe": 16}
    res = ivf.search(ds.xq, K)
    assert res.topks.tolist() == [K] * NQ
    r = recall_at_k(rows_of(res, None), gt[1], K)
    assert r >= 0.95, r


@pytest.mark.slow  # builds an HNSW index (2 s): make test runs it
def test_hnsw_recall_at_default_params(hnsw, ds, gt):
    assert hnsw.search_params(K) == {"ef": 64}
    assert hnsw.header["params"] == {"M": 16, "efConstruction": 64}
    res = hnsw.search(ds.xq, K)
    r = recall_at_k(rows_of(res, None), gt[1], K)
    assert r >= 0.95, r


def test_search_params_validation(ivf, small_hnsw, ds):
    hnsw = small_hnsw
    assert ivf.search_params(K, {"nprobe": 100000 // 1000})["nprobe"] == 100
    assert ivf.search_params(K, {"nprobe": 4096})["nprobe"] == 128  # clamped to nlist
    with pytest.raises(errors.ParameterInvalid):
        ivf.search(ds.xq[:1], K, params={"nprobe": 0})
    with pytest.raises(errors.ParameterInvalid):
        hnsw.search(ds.xq[:1], K, params={"ef": 5})
    with pytest.raises(errors.ParameterInvalid):
        hnsw.search(ds.xq[:1], 0)
    with pytest.raises(errors.ParameterInvalid):
        hnsw.search(ds.xq[:1], 16385)
    with pytest.raises(errors.ParameterInvalid, match="metric type not match"):
        hnsw.search(ds.xq[:1], K, metric="IP")
    with pytest.raises(errors.ParameterInvalid, match="dimension"):
        hnsw.search(ds.xq[:1, :64], K)
    with pytest.raises(errors.ParameterInvalid, match="range search"):
        ivf.search(ds.xq[:1], K, params={"radius": 1.0})
    r8 = ivf.search(ds.xq[:20], K, params={"nprobe": 1})
    assert r8.topks.tolist() == [K] * 20
    # a request's params are checked once per segment and k; refused ones every time
    assert ivf.search_params(K, {"nprobe": 8}) is ivf.search_params(K, {"nprobe": 8}) == {"nprobe": 8}
    assert ivf.search_params(K + 1, {"nprobe": 8}) is not ivf.search_params(K, {"nprobe": 8})
    for _ in range(2):
        with pytest.raises(errors.ParameterInvalid):
            ivf.search(ds.xq[:1], K, params={"nprobe": 0})
    assert ivf.search_params(K, {"nprobe": 8, "extra": [1]}) == {"nprobe": 8}   # unhashable: checked each time


# -- filtered search ------------------------------------------------------------------------------

PCT = exprs.column(109, schema_pb2.Int64)


def filters(cols, pks):
    """(name, expr, numpy mask) for every kind of expression and a range of selectivities."""
    c = cols
    few_keys = pks[[5, 500, len(pks) // 2]]
    n = len(pks)
    return [
        ("pct<1", exprs.compare(PCT, "<", 1), c[109] < 1),
        ("pct<10", exprs.compare(PCT, "<", 10), c[109] < 10),
        ("pct<50", exprs.compare(PCT, "<", 50), c[109] < 50),
        ("none", exprs.compare(PCT, ">", 1000), np.zeros(n, bool)),
        ("all", exprs.compare(PCT, ">=", 0), np.ones(n, bool)),
        ("3 pks", exprs.term(exprs.column(PK_FIELD, schema_pb2.Int64, is_primary_key=True), few_keys.tolist()),
         np.isin(pks, few_keys)),
        ("varchar in", exprs.term(exprs.column(108, schema_pb2.VarChar), ["alpha1", "beta2", "zeta77"]),
         np.isin(c[108], ["alpha1", "beta2", "zeta77"])),
        ("range f64", exprs.between(exprs.column(107, schema_pb2.Double), -30.0, 40.0, True, False),
         (c[107] >= -30) & (c[107] < 40)),
        ("bool and i8", exprs.and_(exprs.compare(exprs.column(101, schema_pb2.Bool), "==", True),
                               exprs.compare(exprs.column(102, schema_pb2.Int8), ">", 100)),
         c[101] & (c[102] > 100)),
        ("or not", exprs.or_(exprs.not_(exprs.compare(exprs.column(104, schema_pb2.Int32), "<", 90_000)),
                         exprs.match(exprs.column(108, schema_pb2.VarChar), "prefix", "eta")),
         ~(c[104] < 90_000) | np.strings.startswith(c[108], "eta")),
        ("float32", exprs.compare(exprs.column(106, schema_pb2.Float), ">", 1.5), c[106] > 1.5),
    ]


def check_filtered(seg, ds, cols, pks, expr, mask, *, nq=40, k=K, exact=False, min_recall=0.9):
    xq = ds.xq[:nq]
    res = seg.search(xq, k, expr=expr)
    count = int(mask.sum())
    assert res.topks.tolist() == [min(k, count)] * nq, "a search returns min(k, matching rows) hits"
    rows = (res.ids - 3) // 7
    assert mask[rows].all(), "a hit violates the filter"
    _, ids = res.dense()
    for q in range(nq):
        got = ids[q][: res.topks[q]]
        assert len(set(got.tolist())) == len(got), "duplicate hits"
    if count:
        Dref, Iref = knn_ground_truth(xq, ds.xb, k, seg.metric, mask=mask)
        found = rows_of(res, pks)
        if exact:
            check_ref_knn_with_draws(Dref[:, :min(k, count)], Iref[:, :min(k, count)],
                                     res.dense()[0][:, :min(k, count)], found[:, :min(k, count)],
                                     rtol=1e-4, atol=1e-4)
        else:
            r = recall_at_k(found, Iref, k)
            assert r >= min_recall, r
    return res


def test_filtered_flat_is_exact(flat, ds, cols, pks):
    for name, expr, mask in filters(cols, pks):
        for nq in (1, 40):
            check_filtered(flat, ds, cols, pks, expr, mask, nq=nq, exact=True)


def test_filtered_ivf(ivf, ds, cols, pks):
    for name, expr, mask in filters(cols, pks):
        check_filtered(ivf, ds, cols, pks, expr, mask, min_recall=0.95)


@pytest.mark.slow  # builds an HNSW index (2 s): make test runs it
def test_filtered_hnsw(hnsw, ds, cols, pks):
    for name, expr, mask in filters(cols, pks):
        check_filtered(hnsw, ds, cols, pks, expr, mask, min_recall=0.93)


def test_ivf_short_results_fall_back_to_exact(ivf, ds, cols, pks):
    # nprobe=1 with a 60% filter reaches too few rows for k=1000: the exact fallback fills in
    expr = exprs.compare(PCT, "<", 60)
    res = ivf.search(ds.xq[:5], 1000, expr=expr, params={"nprobe": 1})
    assert res.topks.tolist() == [1000] * 5
    assert (cols[109][(res.ids - 3) // 7] < 60).all()


@pytest.mark.parametrize("index_type, params", [("IVF_SQ8", {"nlist": 64}), ("IVF_PQ", {"nlist": 64, "m": 16, "nbits": 4}),
                                                ("GPU_IVF_FLAT", {"nlist": 64}), ("GPU_CAGRA",
                                                {"graph_degree": 16, "intermediate_graph_degree": 32})])
def test_other_index_types_filtered_invariants(index_type, params, ds, cols, pks, mgr):
    n = 20_000
    seg = load(build.build_index_file(ds.xb[:n], index_type, "IP", params), pks[:n],
               {f: c[:n] for f, c in cols.items()}, mgr, segment_id=20)
    try:
        if index_type.startswith("GPU_") and not mgr.gpus:
            assert "needs a GPU" in seg.info["fallback"]
        for name, expr, mask in filters({f: c[:n] for f, c in cols.items()}, pks[:n])[:6]:
            res = seg.search(ds.xq[:10], K, expr=expr)
            assert res.topks.tolist() == [min(K, int(mask.sum()))] * 10
            assert mask[(res.ids - 3) // 7].all()
    finally:
        seg.release()


# -- deletes and timestamps --------------------------------------------------------------------------

def test_deletes_and_mvcc(ds, cols, pks, mgr):
    n = 5000
    ts = np.full(n, 100, dtype=np.uint64)
    ts[4000:] = 200  # rows inserted later
    seg = load(build.build_index_file(ds.xb[:n], "FLAT", "L2"), pks[:n], {f: c[:n] for f, c in cols.items()},
               mgr, timestamps=ts, segment_id=30)
    try:
        q = ds.xb[[10, 20, 4500]]
        first = seg.search(q, 1)
        assert ((first.ids - 3) // 7).tolist() == [10, 20, 4500]
        # at ts 150 rows inserted at 200 are invisible
        early = seg.search(q, 1, timestamp=150)
        assert ((early.ids - 3) // 7 < 4000).all()
        # delete row 10 at ts 300, row 20 at ts 50 (before its insert: an older delete does not hide it)
        assert seg.delete(pks[[10, 20]], np.array([300, 50], dtype=np.uint64)) == 1
        assert seg.rows.num_deleted == 1
        at_250 = seg.search(q, 1, timestamp=250)
        assert ((at_250.ids - 3) // 7).tolist() == [10, 20, 4500]
        at_300 = seg.search(q, 5, timestamp=300)
        r300 = (at_300.ids - 3) // 7
        assert 10 not in r300.tolist() and 20 in r300.tolist()
        latest = seg.search(q, 5)
        assert 10 not in ((latest.ids - 3) // 7).tolist()
        # an upsert's delete carries the new row's timestamp: rows inserted at 200 survive a delete at 200
        seg.delete(pks[[4500]], 200)
        assert 4500 in ((seg.search(q, 3).ids - 3) // 7).tolist()
        # deleting everything leaves nothing; deleting unknown keys is harmless
        assert seg.delete(np.array([10**12]), 10) == 0
        seg.delete(pks[:n], None)
        assert len(seg.search(q, 5)) == 0 and seg.search(q, 5).topks.tolist() == [0, 0, 0]
        # delete state is counted separately from the index
        assert seg.info["column_bytes"] > 0 and seg.info["index_bytes"] >= n * D * 4
    finally:
        seg.release()


def test_deletes_with_filter_on_ivf(ivf, ds, cols, pks):
    expr = exprs.compare(PCT, "<", 10)
    before = ivf.search(ds.xq[:20], K, expr=expr)
    victims = np.unique(before.ids)
    ivf.delete(victims, 10)
    try:
        after = ivf.search(ds.xq[:20], K, expr=expr, timestamp=10)
        assert not np.isin(after.ids, victims).any()
        assert after.topks.tolist() == [K] * 20
        assert (cols[109][(after.ids - 3) // 7] < 10).all()
        still = ivf.search(ds.xq[:20], K, expr=expr, timestamp=9)  # before the delete
        np.testing.assert_array_equal(still.ids, before.ids)
    finally:
        ivf.rows.clear_deletes()  # restore the shared fixture
    assert ivf.rows.num_deleted == 0


# -- the QueryNode path: plan bytes in, SearchResultData out -----------------------------------------

def test_search_request_with_output_fields(flat, ds, cols, pks):
    plan = exprs.search_plan(field_id=VEC_FIELD, topk=5, metric="L2", expr=exprs.compare(PCT, "<", 20),
                         round_decimal=3, output_field_ids=[108, 105, PK_FIELD, VEC_FIELD])
    srd = search_request([flat], plan, encode_placeholder_group(ds.xq[:4]), primary_field_name="pk")
    assert srd.num_queries == 4 and srd.top_k == 5 and list(srd.topks) == [5] * 4
    ids = np.asarray(srd.ids.int_id.data)
    rows = (ids - 3) // 7
    assert (cols[109][rows] < 20).all()
    assert list(srd.output_fields) == ["s", "i64", "pk", "vec"]
    by_name = {fd.field_name: fd for fd in srd.fields_data}
    assert list(by_name["s"].scalars.string_data.data) == cols[108][rows].tolist()
    assert list(by_name["i64"].scalars.long_data.data) == cols[105][rows].tolist()
    assert list(by_name["pk"].scalars.long_data.data) == ids.tolist()
    vec = np.asarray(by_name["vec"].vectors.float_vector.data, dtype=np.float32).reshape(-1, D)
    np.testing.assert_array_equal(vec, ds.xb[rows])
    sc = np.asarray(srd.scores, dtype=np.float64)
    np.testing.assert_allclose(sc, np.round(sc, 3), rtol=1e-6)  # round_decimal=3
    assert srd.all_search_count == NB


def test_search_segments_merges_two_segments(ds, cols, pks, mgr):
    half = NB // 10
    a = load(build.build_index_file(ds.xb[:half], "FLAT", "L2"), pks[:half],
             {f: c[:half] for f, c in cols.items()}, mgr, segment_id=40)
    b = load(build.build_index_file(ds.xb[half:2 * half], "IVF_FLAT", "L2", {"nlist": 32}), pks[half:2 * half],
             {f: c[half:2 * half] for f, c in cols.items()}, mgr, segment_id=41)
    try:
        res = search_segments([a, b], ds.xq[:30], K, output_fields=["pct", "vec"], params={"nprobe": 32})
        Dref, Iref = knn_ground_truth(ds.xq[:30], ds.xb[:2 * half], K, "L2")
        check_ref_knn_with_draws(Dref, Iref, res.dense()[0], rows_of(res, pks), rtol=1e-4, atol=1e-4)
        rows = (res.ids - 3) // 7
        assert (rows < half).any() and (rows >= half).any()  # both segments contribute
        np.testing.assert_array_equal(res.fields[0].values, cols[109][rows])
        np.testing.assert_array_equal(res.fields[1].values, ds.xb[rows])  # FLAT view, IVF_FLAT reconstruct
    finally:
        a.release()
        b.release()


# -- index files, memory, placement ------------------------------------------------------------------

MEMORY_PROBE = r"""
import gc, json, sys
import numpy as np
from vecgrid.gpu import device, require_faiss
from vecgrid.gpu.loaded_segment import load_segment
require_faiss()  # the library itself is not the segment's memory
path, n = sys.argv[1], int(sys.argv[2])
mgr = device.DeviceManager()
gc.collect(); device.trim_host_heap()
rss0, free0 = device.process_rss(), mgr.host.free_memory()
seg = load_segment(path, np.arange(n, dtype=np.int64), manager=mgr)
rss1, free1 = device.process_rss(), mgr.host.free_memory()
used = mgr.host.used_bytes
seg.release(); gc.collect()
rss2, free2 = device.process_rss(), mgr.host.free_memory()
print(json.dumps({"load": rss1 - rss0, "release": rss1 - rss2, "used": used, "after": mgr.host.used_bytes,
                  "index_bytes": seg.index_bytes, "free_load": free0 - free1, "free_release": free2 - free1}))
"""


@pytest.mark.slow
def test_flat_memory_and_release(ds, pks, mgr, tmp_path):
    """A loaded FLAT segment holds ~1x the raw vectors (no second copy); release gives it back (RSS, measured
    in a fresh process)."""
    import json
    import subprocess
    import sys

    n = NB
    path = tmp_path / "seg.idx"
    path.write_bytes(build.build_index_file(ds.xb[:n], "FLAT", "L2"))
    raw = n * D * 4
    out = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(path), str(n)], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    m = json.loads(out.strip().splitlines()[-1])
    assert m["index_bytes"] <= 1.2 * raw
    assert m["load"] <= 1.2 * raw, m["load"] / raw  # index + keys, no second copy of the vectors
    assert m["load"] >= 0.9 * raw
    assert m["used"] == m["index_bytes"] + n * 8  # index and keys are accounted
    assert m["after"] == 0
    assert m["release"] >= 0.9 * raw, m["release"] / raw  # the memory is back with the OS


def test_flat_accounting_and_release(ds, pks, mgr, tmp_path):
    """In process: accounting returns to where it was and a released segment refuses searches."""
    n = NB
    path = tmp_path / "seg.idx"
    path.write_bytes(build.build_index_file(ds.xb[:n], "FLAT", "L2"))
    host_before = mgr.host.used_bytes
    seg = load_segment(path, pks[:n], manager=mgr, segment_id=50)
    assert seg.placement == "CPU" and mgr.host.used_bytes - host_before == seg.memory_bytes()
    assert seg.search(ds.xq[:3], 3).topks.tolist() == [3, 3, 3]
    seg.release()
    assert mgr.host.used_bytes == host_before
    with pytest.raises(errors.SegmentNotLoaded):
        seg.search(ds.xq[:1], 1)
    seg.release()  # idempotent


def test_budget_exhausted_is_memory_limit_exceeded(ds, pks):
    small = device.DeviceManager(0.8, host_budget_bytes=1 << 20)
    with pytest.raises(errors.MemoryLimitExceeded):
        load_segment(build.build_index_file(ds.xb[:5000], "FLAT", "L2"), pks[:5000], manager=small)
    assert small.host.used_bytes == 0


def test_index_file_round_trip_and_header(ds):
    built = build.build_index(ds.xb[:3000], "IVF_FLAT", "COSINE", {"nlist": 16})
    data = built.to_bytes()
    index, header = build.read_index_file(data)
    assert header["index_type"] == "IVF_FLAT" and header["metric"] == "COSINE"
    assert header["params"] == {"nlist": 16} and header["num_rows"] == 3000 and header["factory"] == "IVF16,Flat"
    assert index.ntotal == 3000
    # a bare faiss file loads too (metric read back as IP)
    import faiss

    bare = faiss.serialize_index(built.index).tobytes()
    _, h2 = build.read_index_file(bare)
    assert h2["index_type"] == "IVF_FLAT" and h2["metric"] == "IP" and h2["params"]["nlist"] == 16
    with pytest.raises(errors.ParameterInvalid):
        build.read_index_file(b"garbage!" * 10)


@pytest.mark.parametrize("index_type", ["FLAT", "IVF_FLAT", "HNSW"])
def test_index_file_of_a_loaded_segment_loads_the_same(ds, pks, mgr, index_type):
    """What a QueryNode saves after building at load: the same header and index, searched the same."""
    n = 4000
    params = {"nlist": 32} if index_type == "IVF_FLAT" else {}
    seg = load_segment(build.build_index_file(ds.xb[:n], index_type, "COSINE", params), pks[:n], manager=mgr,
                       segment_id=60)
    try:
        if index_type == "IVF_FLAT":
            seg._reconstruct(np.arange(3))  # an exact search made the direct map: still saved whole
        saved = seg.index_file()
        assert build.read_index_file(saved)[1] == seg.header
        again = load_segment(saved, pks[:n], manager=mgr, segment_id=61)
        try:
            a, b = seg.search(ds.xq[:20], 10), again.search(ds.xq[:20], 10)
            np.testing.assert_array_equal(a.dense()[1], b.dense()[1])
        finally:
            again.release()
    finally:
        seg.release()
    with pytest.raises(errors.SegmentNotLoaded):
        seg.index_file()


def test_build_params_and_errors(ds):
    x = ds.xb[:2000]
    assert build.normalize_build_params("IVF_PQ", {}, 128) == {"nlist": 128, "m": 32, "nbits": 8}
    assert build.normalize_build_params("GPU_CAGRA", {}, 128) == {"intermediate_graph_degree": 128, "graph_degree": 64}
    with pytest.raises(errors.IndexNotSupported):
        build.build_index(x, "DISKANN", "L2")
    with pytest.raises(errors.ParameterInvalid):
        build.build_index(x, "FLAT", "HAMMING")
    with pytest.raises(errors.ParameterInvalid, match="divisible"):
        build.build_index(x, "IVF_PQ", "L2", {"m": 7})
    with pytest.raises(errors.ParameterInvalid, match="range"):
        build.build_index(x, "IVF_FLAT", "L2", {"nlist": 0})
    with pytest.raises(errors.ParameterInvalid):
        build.build_index(x, "HNSW", "L2", {"M": "many"})
    itype, metric, params = build.parse_index_params(
        [common_pb2.KeyValuePair(key="index_type", value="IVF_FLAT"),
         common_pb2.KeyValuePair(key="metric_type", value="ip"),
         common_pb2.KeyValuePair(key="params", value='{"nlist": 64}')])
    assert (itype, metric, params) == ("IVF_FLAT", "IP", {"nlist": 64})
    # too few rows to train: FLAT, and the header says so
    small = build.build_index(x[:100], "IVF_FLAT", "L2", {"nlist": 128})
    assert small.header["built_type"] == "FLAT" and "too few rows" in small.header["fallback"]
    empty = build.build_index(np.zeros((0, 128), np.float32), "HNSW", "L2")
    seg = load_segment(empty.to_bytes(), np.zeros(0, np.int64), manager=device.DeviceManager())
    assert seg.search(ds.xq[:2], 5).topks.tolist() == [0, 0]
    seg.release()
