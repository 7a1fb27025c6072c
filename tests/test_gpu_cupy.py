"""The cupy engine on a real GPU: its CUDA kernels against the numpy reference on the same inputs,
and segments placed on the GPU by it (search, filters, memory, index files).  Skipped without a GPU
that cupy sees; tests/test_cupy_engine.py covers the engine's logic on the host."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from vecgrid.gpu import build, cupy_engine, device, exprs
from vecgrid.gpu.datasets import SyntheticDataset, scalar_columns
from vecgrid.gpu.evaluation import check_ref_knn_with_draws, knn_ground_truth, recall_at_k
from vecgrid.gpu.loaded_segment import load_segment
from vecgrid.proto import schema_pb2

faiss = pytest.importorskip("faiss")
cp = device.cupy_module()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cp is None, reason="needs a CUDA GPU that cupy sees (cupy not installed, or no device)"),
]

N, D = 100_000, 128


@pytest.fixture(scope="module")
def ds():
    return SyntheticDataset(d=D, nb=N, nq=200, seed=1234)


@pytest.fixture(scope="module")
def cols():
    return scalar_columns(N)


@pytest.fixture(scope="module")
def mgr():
    return device.DeviceManager(0.5, engine="cupy")


def _same(a, b):
    (va, ia), (vb, ib) = a, b
    va, ia = np.asarray(va), np.asarray(ia)
    np.testing.assert_array_equal(ia, ib)
    np.testing.assert_allclose(va, vb, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("k", [1, 10, 100, 1000])
def test_select_and_merge_kernels_match_numpy(k):
    rng = np.random.default_rng(k)
    nq, m = 7, 20_000
    S = rng.standard_normal((nq, m)).astype(np.float32)
    S[0, ::5] = np.nan  # NaN scores are never hits
    S[1, :100] = S[1, 100]  # ties: the smaller row first
    bias = rng.random(m).astype(np.float32)
    allowed = (rng.random(m) < 0.3).astype(np.uint8)
    cuda, ref = cupy_engine.kernels_for(cp), cupy_engine.kernels_for(np)
    for mask in (None, np.concatenate([np.zeros(5, np.uint8), allowed])):  # by row: col_offset + column
        got = cuda.merge(*cuda.select_tile(cp.asarray(S), k, alpha=-2.0, bias=cp.asarray(bias),
                                           allowed=None if mask is None else cp.asarray(mask), col_offset=5), k)
        want = ref.merge(*ref.select_tile(S, k, alpha=-2.0, bias=bias, allowed=mask, col_offset=5), k)
        _same((cp.asnumpy(got[0]), cp.asnumpy(got[1])), want)


@pytest.mark.parametrize("k", [1, 10, 64])
def test_ivf_scan_kernel_matches_numpy(ds, k):
    index = build.build_index(ds.xb[:20000], "IVF_FLAT", "L2", {"nlist": 64}, use_gpu=False).index
    cuda, ref = cupy_engine.kernels_for(cp), cupy_engine.kernels_for(np)
    g = cupy_engine.from_faiss(faiss, index, cuda)
    h = cupy_engine.from_faiss(faiss, index, ref)
    q = ds.xq[:16]
    probes = h.probes(q, 8)
    np.testing.assert_array_equal(np.sort(cp.asnumpy(g.probes(cp.asarray(q), 8)), 1), np.sort(probes, 1))
    allowed = (np.arange(20000) % 3 == 0).astype(np.uint8)
    for mask in (None, allowed):
        got = cuda.merge(*cuda.ivf_scan(cp.asarray(q), g.xb, g.list_start, cp.asarray(probes), g.row_of,
                                        None if mask is None else cp.asarray(mask), False, k), k)
        want = ref.merge(*ref.ivf_scan(q, h.xb, h.list_start, probes, h.row_of, mask, False, k), k)
        _same((cp.asnumpy(got[0]), cp.asnumpy(got[1])), want)


@pytest.mark.parametrize("index_type,metric", [("FLAT", "L2"), ("FLAT", "IP"), ("FLAT", "COSINE"),
                                               ("IVF_FLAT", "L2"), ("IVF_FLAT", "COSINE")])
def test_loads_on_gpu_and_matches_cpu(ds, mgr, index_type, metric):
    data = build.build_index_file(ds.xb, index_type, metric, manager=mgr)
    gpu = load_segment(data, np.arange(N), manager=mgr)
    cpu = load_segment(data, np.arange(N), manager=mgr, prefer_gpu=False)
    try:
        assert gpu.placement == "GPU" and gpu.info["engine"] == "cupy", gpu.info
        assert cpu.placement == "CPU"
        a, b = gpu.search(ds.xq, 10).dense(), cpu.search(ds.xq, 10).dense()
        if index_type == "FLAT":
            Dref, Iref = knn_ground_truth(ds.xq, ds.xb, 10, metric)
            check_ref_knn_with_draws(Dref, Iref, a[0], a[1], rtol=1e-3, atol=1e-3)
        else:  # the same centroids and nprobe: the same hits as faiss on the host
            assert recall_at_k(a[1], b[1]) >= 0.99
    finally:
        gpu.release()
        cpu.release()


@pytest.mark.parametrize("index_type", ["FLAT", "IVF_FLAT"])
def test_filtered_search_on_gpu(ds, cols, mgr, index_type):
    seg = load_segment(build.build_index_file(ds.xb, index_type, "L2", manager=mgr), np.arange(N),
                       columns=cols, manager=mgr)
    assert seg.placement == "GPU"
    try:
        for p in (1, 10, 50, 100):
            expr = exprs.compare(exprs.column(109, schema_pb2.Int64), "<", p)
            mask = cols[109] < p
            _, I = seg.search(ds.xq, 10, expr=expr).dense()
            assert mask[I[I >= 0]].all() and (I >= 0).all()
            _, Iref = knn_ground_truth(ds.xq, ds.xb, 10, "L2", mask=mask)
            assert recall_at_k(I, Iref) >= (0.999 if index_type == "FLAT" else 0.9), p
        assert seg.info["fallbacks"] == {}
    finally:
        seg.release()


def test_index_file_of_a_gpu_segment_is_its_host_form(ds, mgr):
    seg = load_segment(build.build_index_file(ds.xb, "IVF_FLAT", "L2", manager=mgr), np.arange(N), manager=mgr)
    again = None
    try:
        index, header = build.read_index_file(seg.index_file())
        assert header == seg.header and index.ntotal == N
        again = load_segment(build.serialize_index(index, header), np.arange(N), manager=mgr)
        np.testing.assert_array_equal(seg.search(ds.xq, 10).dense()[1], again.search(ds.xq, 10).dense()[1])
    finally:
        seg.release()
        if again is not None:
            again.release()


def test_release_frees_gpu_memory_and_the_budget_sends_loads_to_the_host(ds, mgr):
    g = mgr.gpus[0]
    data = build.build_index_file(ds.xb, "FLAT", "L2", use_gpu=False)
    gc.collect()
    free0 = g.free_memory()
    seg = load_segment(data, np.arange(N), manager=mgr)
    free1 = g.free_memory()
    assert seg.placement == "GPU" and g.used_bytes >= N * D * 4
    seg.search(ds.xq[:10], 10)
    seg.release()
    gc.collect()
    assert g.used_bytes == 0
    assert free0 - free1 >= 0.9 * N * D * 4, (free0 - free1)
    assert g.free_memory() - free1 >= 0.9 * N * D * 4
    small = device.DeviceManager(0.8, gpu_budget_bytes=1 << 20, engine="cupy")
    seg = load_segment(data, np.arange(N), manager=small)
    assert seg.placement == "CPU" and "budget" in seg.info["placement_reason"]
    seg.release()
