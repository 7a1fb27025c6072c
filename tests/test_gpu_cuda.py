"""GPU placement and search with faiss-gpu (the faiss engine) on a CUDA device; skipped without one.
The cupy engine's GPU tests are tests/test_gpu_cupy.py."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from vecgrid.gpu import build, device
from vecgrid.gpu import exprs
from vecgrid.gpu.datasets import SyntheticDataset, scalar_columns
from vecgrid.gpu.evaluation import check_ref_knn_with_draws, knn_ground_truth, recall_at_k
from vecgrid.gpu.growing import GrowingSegment
from vecgrid.gpu.loaded_segment import load_segment
from vecgrid.proto import schema_pb2

faiss = pytest.importorskip("faiss")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(device.gpu_engine("faiss") is None,
                       reason=f"needs a GPU with faiss-gpu (faiss.get_num_gpus() == "
                              f"{getattr(faiss, 'get_num_gpus', lambda: 0)()}, GPU build: {device.faiss_has_gpu()})"),
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
    return device.DeviceManager(0.5)


@pytest.mark.parametrize("index_type", ["FLAT", "IVF_FLAT", "IVF_SQ8", "GPU_IVF_FLAT", "GPU_BRUTE_FORCE"])
def test_loads_on_gpu_and_matches_cpu(ds, mgr, index_type):
    data = build.build_index_file(ds.xb, index_type, "L2", manager=mgr)
    gpu = load_segment(data, np.arange(N), manager=mgr)
    cpu = load_segment(data, np.arange(N), manager=mgr, prefer_gpu=False)
    try:
        assert gpu.placement == "GPU" and gpu.device.name == "cuda:0", gpu.info
        assert cpu.placement == "CPU"
        a = gpu.search(ds.xq, 10)
        b = cpu.search(ds.xq, 10)
        Dref, Iref = knn_ground_truth(ds.xq, ds.xb, 10, "L2")
        if index_type in ("FLAT", "GPU_BRUTE_FORCE"):
            check_ref_knn_with_draws(Dref, Iref, a.dense()[0], a.dense()[1], rtol=1e-3, atol=1e-3)
        else:
            assert recall_at_k(a.dense()[1], Iref) >= 0.95
            assert recall_at_k(a.dense()[1], b.dense()[1]) >= 0.95
    finally:
        gpu.release()
        cpu.release()


def test_hnsw_stays_on_cpu_and_cagra_builds(ds, mgr):
    hn = load_segment(build.build_index_file(ds.xb[:20000], "HNSW", "L2", {"efConstruction": 40}),
                      np.arange(20000), manager=mgr)
    assert hn.placement == "CPU" and "CPU-only" in hn.info["placement_reason"]
    hn.release()
    built = build.build_index(ds.xb[:20000], "GPU_CAGRA", "L2", {"graph_degree": 32,
                                                                  "intermediate_graph_degree": 64}, manager=mgr)
    seg = load_segment(built.to_bytes(), np.arange(20000), manager=mgr)
    try:
        if hasattr(faiss, "GpuIndexCagra"):
            assert built.header["cagra"] and seg.placement == "GPU"
        else:
            assert "HNSW" in built.header["fallback"]
        Dref, Iref = knn_ground_truth(ds.xq, ds.xb[:20000], 10, "L2")
        assert recall_at_k(seg.search(ds.xq, 10).dense()[1], Iref) >= 0.9
    finally:
        seg.release()


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "GPU_CAGRA"])
def test_index_file_of_a_gpu_segment_is_its_host_form(ds, mgr, index_type):
    """A QueryNode saving an index it built at load: the GPU index is copied to the host and saved in its
    CPU form with the same header; it loads on the GPU again and searches the same."""
    n = 20000
    params = {"graph_degree": 32, "intermediate_graph_degree": 64} if index_type == "GPU_CAGRA" else {}
    seg = load_segment(build.build_index_file(ds.xb[:n], index_type, "L2", params, manager=mgr), np.arange(n),
                       manager=mgr)
    again = None
    try:
        saved = seg.index_file()
        index, header = build.read_index_file(saved)
        assert header == seg.header and index.ntotal == n and "Gpu" not in type(index).__name__
        again = load_segment(saved, np.arange(n), manager=mgr)
        assert again.placement == seg.placement
        a, b = seg.search(ds.xq, 10).dense()[1], again.search(ds.xq, 10).dense()[1]
        assert recall_at_k(b, a) >= 0.98
    finally:
        seg.release()
        if again is not None:
            again.release()


def test_release_frees_gpu_memory(ds, mgr):
    g = mgr.gpus[0]
    data = build.build_index_file(ds.xb, "FLAT", "L2", use_gpu=False)
    gc.collect()
    free0 = g.free_memory()
    seg = load_segment(data, np.arange(N), manager=mgr)
    assert seg.placement == "GPU"
    free1 = g.free_memory()
    assert g.used_bytes >= N * D * 4
    seg.search(ds.xq[:10], 10)
    seg.release()
    gc.collect()
    free2 = g.free_memory()
    assert g.used_bytes == 0
    assert free0 - free1 >= 0.9 * N * D * 4, (free0 - free1)
    assert free2 - free1 >= 0.9 * N * D * 4, (free2 - free1)


def test_gpu_budget_exhausted_goes_to_host(ds):
    m = device.DeviceManager(0.8, gpu_budget_bytes=1 << 20)
    seg = load_segment(build.build_index_file(ds.xb[:20000], "FLAT", "L2"), np.arange(20000), manager=m)
    assert seg.placement == "CPU" and "budget" in seg.info["placement_reason"]
    seg.release()


@pytest.mark.parametrize("index_type", ["FLAT", "IVF_FLAT"])
def test_filtered_search_on_gpu(ds, cols, mgr, index_type):
    seg = load_segment(build.build_index_file(ds.xb, index_type, "L2", manager=mgr), np.arange(N),
                       columns=cols, manager=mgr)
    assert seg.placement == "GPU"
    try:
        for p in (1, 10, 50, 100):
            expr = exprs.compare(exprs.column(109, schema_pb2.Int64), "<", p)
            mask = cols[109] < p
            res = seg.search(ds.xq[:50], 10, expr=expr)
            assert res.topks.tolist() == [10] * 50
            assert mask[res.ids].all()
            Dref, Iref = knn_ground_truth(ds.xq[:50], ds.xb, 10, "L2", mask=mask)
            assert recall_at_k(res.dense()[1], Iref) >= (0.99 if index_type == "FLAT" else 0.9)
        seg.delete(np.arange(0, N, 2), 5)
        res = seg.search(ds.xq[:50], 10, timestamp=6)
        assert (res.ids % 2 == 1).all() and res.topks.tolist() == [10] * 50
    finally:
        seg.release()


def test_growing_with_cupy(ds, cols):
    cp = device.cupy_module()
    if cp is None:
        pytest.skip("cupy is not installed")
    g = GrowingSegment(D, "IP", xp=cp)
    h = GrowingSegment(D, "IP")
    for s in (g, h):
        s.insert(np.arange(20000), ds.xb[:20000], timestamps=1, columns={109: cols[109][:20000]})
    expr = exprs.compare(exprs.column(109, schema_pb2.Int64), "<", 10)
    a = g.search(ds.xq[:20], 10, expr=expr)
    b = h.search(ds.xq[:20], 10, expr=expr)
    assert recall_at_k(a.dense()[1], b.dense()[1]) >= 0.99
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-3, atol=1e-3)


def test_filter_with_cupy(cols):
    cp = device.cupy_module()
    if cp is None:
        pytest.skip("cupy is not installed")
    from vecgrid.gpu.filter import evaluate

    expr = exprs.or_(
        exprs.compare(exprs.column(109), "<", 10), exprs.term(exprs.column(108, schema_pb2.VarChar), ["alpha1"])
    )
    got = evaluate(expr, cols, N, xp=cp)
    ref = (cols[109] < 10) | np.isin(cols[108], ["alpha1"])
    np.testing.assert_array_equal(cp.asnumpy(got), ref)
