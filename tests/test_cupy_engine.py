"""The cupy engine's logic on the host: the engine (tiling, the coarse step, merging, masks,
distances, padding, index conversion) run on its numpy kernels against faiss on the same inputs,
and a LoadedSegment served by it through the GPU placement path.  tests/test_gpu_cupy.py runs the
CUDA kernels against these numpy ones on a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid.gpu import build, cupy_engine, device, exprs, loaded_segment
from vecgrid.gpu.evaluation import check_ref_knn_with_draws, knn_ground_truth, recall_at_k
from vecgrid.proto import schema_pb2

faiss = pytest.importorskip("faiss")

N, D, NQ, K = 3000, 24, 40, 10
NLIST = 32


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    centres = rng.standard_normal((NLIST, D)).astype(np.float32) * 4
    xb = (centres[rng.integers(0, NLIST, N)] + rng.standard_normal((N, D))).astype(np.float32)
    xq = (centres[rng.integers(0, NLIST, NQ)] + rng.standard_normal((NQ, D))).astype(np.float32)
    return xb, xq


@pytest.fixture
def kernels():
    return cupy_engine.kernels_for(np)


def _faiss_index(xb: np.ndarray, index_type: str, metric: str):
    built = build.build_index(xb, index_type, metric, {"nlist": NLIST} if index_type == "IVF_FLAT" else {},
                              use_gpu=False)
    return built.index


@pytest.mark.parametrize("metric", ["L2", "IP"])
def test_flat_matches_faiss_exact_search(data, kernels, metric):
    xb, xq = data
    index = _faiss_index(xb, "FLAT", metric)
    engine = cupy_engine.from_faiss(faiss, index, kernels)
    assert isinstance(engine, cupy_engine.FlatIndex) and engine.metric == metric
    De, Ie = engine.search(xq, K)
    Df, If = index.search(xq, K)
    check_ref_knn_with_draws(Df, If, De, Ie, rtol=1e-4, atol=1e-3)


def test_flat_tiles_give_the_same_answer_as_one_tile(data, kernels, monkeypatch):
    xb, xq = data
    engine = cupy_engine.from_faiss(faiss, _faiss_index(xb, "FLAT", "L2"), kernels)
    whole = engine.search(xq, K)
    # tiles of 512 columns (6 tiles, the last one short): the merge across tiles must agree
    monkeypatch.setattr(cupy_engine, "CHUNK", 512)
    monkeypatch.setattr(cupy_engine, "SCRATCH_BYTES", 4 * NQ * 512)
    tiled = engine.search(xq, K)
    # A GEMM of 512 columns may sum each dot product in another order than one of 3,000 (OpenBLAS picks
    # its kernel and blocking per CPU and shape: on an AMD EPYC 13 of these 400 distances moved by up to
    # 1.2e-4, 4e-6 of their value), so the tiles agree up to float32 rounding and ties, not bit for bit.
    check_ref_knn_with_draws(*whole, *tiled, rtol=1e-5, atol=1e-3)


def test_flat_under_a_mask_returns_only_allowed_rows_and_pads(data, kernels):
    xb, xq = data
    engine = cupy_engine.from_faiss(faiss, _faiss_index(xb, "FLAT", "L2"), kernels)
    allowed = np.zeros(N, dtype=bool)
    allowed[np.arange(0, N, 7)] = True
    D, I = engine.search(xq, K, allowed=allowed)
    Dref, Iref = knn_ground_truth(xq, xb, K, "L2", mask=allowed)
    assert allowed[I].all()
    check_ref_knn_with_draws(Dref, Iref, D, I, rtol=1e-4, atol=1e-3)
    few = np.zeros(N, dtype=bool)
    few[[5, 17, 2999]] = True
    D, I = engine.search(xq[:2], K, allowed=few)
    assert sorted(I[0, :3].tolist()) == [5, 17, 2999] and (I[:, 3:] == -1).all()
    assert np.isinf(D[:, 3:]).all() and (D[:, 3:] > 0).all()


def test_the_budgeted_bytes_are_what_the_engine_holds(data, kernels):
    """The load reserves device_bytes(faiss, index) before the copy; FLAT IP had been counted with the
    norms only L2 keeps."""
    xb, _ = data
    for index_type, metric in (("FLAT", "L2"), ("FLAT", "IP"), ("IVF_FLAT", "L2"), ("IVF_FLAT", "IP")):
        index = _faiss_index(xb, index_type, metric)
        engine = cupy_engine.from_faiss(faiss, index, kernels)
        held = sum(a.nbytes for a in vars(engine).values() if isinstance(a, np.ndarray))
        assert engine.device_bytes() == cupy_engine.device_bytes(faiss, index) == held, (index_type, metric)


def test_ip_padding_is_minus_infinity(data, kernels):
    xb, xq = data
    engine = cupy_engine.from_faiss(faiss, _faiss_index(xb, "FLAT", "IP"), kernels)
    D, I = engine.search(xq[:3], K, allowed=np.arange(N) < 4)
    assert (I[:, 4:] == -1).all() and (D[:, 4:] == -np.inf).all()
    assert (np.diff(D[:, :4], axis=1) <= 0).all()  # best (largest) first


@pytest.mark.parametrize("metric", ["L2", "IP"])
@pytest.mark.parametrize("nprobe", [1, 4, NLIST])
def test_ivf_flat_matches_faiss_at_the_same_nprobe(data, kernels, metric, nprobe):
    xb, xq = data
    index = _faiss_index(xb, "IVF_FLAT", metric)
    engine = cupy_engine.from_faiss(faiss, index, kernels)
    assert isinstance(engine, cupy_engine.IVFFlatIndex) and engine.nlist == NLIST
    De, Ie = engine.search(xq, K, nprobe=nprobe)
    Df, If = index.search(xq, K, params=faiss.SearchParametersIVF(nprobe=nprobe))
    # same centroids, same lists, exact distances: the same hits (up to ties)
    check_ref_knn_with_draws(Df, If, De, Ie, rtol=1e-4, atol=1e-3)
    if nprobe == NLIST:
        Dref, Iref = knn_ground_truth(xq, xb, K, metric)
        assert recall_at_k(Ie, Iref) == 1.0


def test_ivf_flat_recall_rises_with_nprobe_and_masks_apply(data, kernels):
    xb, xq = data
    engine = cupy_engine.from_faiss(faiss, _faiss_index(xb, "IVF_FLAT", "L2"), kernels)
    _, Iref = knn_ground_truth(xq, xb, K, "L2")
    recalls = [recall_at_k(engine.search(xq, K, nprobe=p)[1], Iref) for p in (1, 4, 16)]
    assert recalls == sorted(recalls) and recalls[-1] >= 0.95
    allowed = (np.arange(N) % 3) == 0
    D, I = engine.search(xq, K, nprobe=NLIST, allowed=allowed)
    Dref, Iref = knn_ground_truth(xq, xb, K, "L2", mask=allowed)
    assert allowed[I[I >= 0]].all()
    check_ref_knn_with_draws(Dref, Iref, D, I, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("index_type", ["FLAT", "IVF_FLAT"])
def test_to_host_round_trips_the_index_file(data, kernels, index_type):
    xb, xq = data
    index = _faiss_index(xb, index_type, "L2")
    engine = cupy_engine.from_faiss(faiss, index, kernels)
    back = engine.to_host(faiss)
    assert back.ntotal == N and back.d == D
    params = faiss.SearchParametersIVF(nprobe=4) if index_type == "IVF_FLAT" else None
    np.testing.assert_array_equal(back.search(xq, K, params=params)[1], index.search(xq, K, params=params)[1])
    rows = np.array([0, 7, 2999, 1500])
    np.testing.assert_array_equal(engine.reconstruct_batch(rows), xb[rows])
    assert engine.device_bytes() == cupy_engine.device_bytes(faiss, index)


def test_k_beyond_the_engine_limit_is_refused(data, kernels):
    xb, xq = data
    engine = cupy_engine.from_faiss(faiss, _faiss_index(xb, "FLAT", "L2"), kernels)
    with pytest.raises(ValueError, match="outside"):
        engine.search(xq, cupy_engine.MAX_K + 1)


def test_other_index_types_have_no_engine(data, kernels):
    xb, _ = data
    hnsw = _faiss_index(xb, "HNSW", "L2")
    with pytest.raises(ValueError, match="no cupy engine"):
        cupy_engine.from_faiss(faiss, hnsw, kernels)


# -- a LoadedSegment served by the engine ------------------------------------------------------------

@pytest.fixture
def cupy_manager(monkeypatch):
    """A manager with one GPU whose engine is cupy, the array module being numpy (the CPU stand-in)."""
    monkeypatch.setattr(loaded_segment, "cupy_module", lambda: np)
    # and no real cupy (the GPU owner thread makes cupy's device current when cupy sees one)
    monkeypatch.setattr(device, "cupy_module", lambda: None)
    mgr = device.DeviceManager(use_gpu=False, host_budget_bytes=1 << 34)
    mgr.engine = "cupy"
    mgr.gpus = [device.Device(device.GPU, 0, 1 << 30, engine="cupy")]
    return mgr


def _columns(n: int) -> dict[int, np.ndarray]:
    return {109: np.arange(n) % 100}


def test_a_segment_is_placed_on_the_gpu_and_searched_by_the_engine(data, cupy_manager):
    xb, xq = data
    blob = build.build_index_file(xb, "IVF_FLAT", "L2", {"nlist": NLIST}, use_gpu=False)
    seg = loaded_segment.load_segment(blob, np.arange(N) + 1000, columns=_columns(N), manager=cupy_manager)
    host = loaded_segment.load_segment(blob, np.arange(N) + 1000, columns=_columns(N), manager=cupy_manager,
                                       prefer_gpu=False)
    try:
        assert seg.placement == "GPU" and seg.info["engine"] == "cupy", seg.info
        assert "cupy" in seg.info["placement_reason"]
        assert cupy_manager.gpus[0].used_bytes >= seg.index.device_bytes()
        a, b = seg.search(xq, K), host.search(xq, K)
        np.testing.assert_array_equal(a.dense()[1], b.dense()[1])  # same nprobe, same lists: same keys
        # a filter: only allowed rows, exactly min(k, count) hits per query
        expr = exprs.compare(exprs.column(109, schema_pb2.Int64), "<", 3)
        res = seg.search(xq, K, expr=expr)
        _, ids = res.dense()
        assert ((ids[ids >= 0] - 1000) % 100 < 3).all() and (ids >= 0).all()
        mask = (np.arange(N) % 100) < 3
        _, Iref = knn_ground_truth(xq, xb, K, "L2", mask=mask)
        assert recall_at_k(ids - 1000, Iref) >= 0.9
        # deletes hide rows on the device path too
        first = int(a.dense()[1][0, 0])
        seg.delete(np.array([first]))
        assert first not in seg.search(xq[:1], K).dense()[1][0]
        # output vectors come back from the device copy
        np.testing.assert_array_equal(seg._vectors_of(seg.field_id, np.array([3, 4])), xb[[3, 4]])
        # the index file made from the GPU copy is the same index
        again, _ = build.read_index_file(seg.index_file())
        np.testing.assert_array_equal(again.search(xq, K, params=faiss.SearchParametersIVF(nprobe=4))[1],
                                      host.index.search(xq, K, params=faiss.SearchParametersIVF(nprobe=4))[1])
    finally:
        seg.release()
        host.release()
    assert cupy_manager.gpus[0].used_bytes == 0 and seg.index is None


def test_types_without_an_engine_stay_on_the_host_and_say_why(data, cupy_manager):
    xb, _ = data
    blob = build.build_index_file(xb, "HNSW", "L2", use_gpu=False)
    seg = loaded_segment.load_segment(blob, np.arange(N), manager=cupy_manager)
    try:
        assert seg.placement == "CPU" and "no cupy engine" in seg.info["placement_reason"], seg.info
    finally:
        seg.release()


def test_a_k_beyond_the_engine_is_served_exactly_from_the_host_copy(data, cupy_manager):
    xb, xq = data
    blob = build.build_index_file(xb, "FLAT", "L2", use_gpu=False)
    seg = loaded_segment.load_segment(blob, np.arange(N), manager=cupy_manager)
    try:
        k = cupy_engine.MAX_K + 8
        D, I = seg.search(xq[:2], k).dense()
        Dref, Iref = knn_ground_truth(xq[:2], xb, k, "L2")
        check_ref_knn_with_draws(Dref, Iref, D, I.astype(np.int64), rtol=1e-4, atol=1e-3)
        assert seg.info["fallbacks"] == {}  # a host path by design, not a fault
    finally:
        seg.release()


@pytest.mark.parametrize("choice,faiss_gpus,cupy_gpus,engine", [
    ("auto", 1, 1, "faiss"),   # faiss-gpu preferred when installed
    ("auto", 0, 1, "cupy"),
    ("auto", 0, 0, None),
    ("cupy", 1, 1, "cupy"),
    ("faiss", 0, 1, None),     # forced: never the other one
    ("CUPY", 0, 1, "cupy"),
])
def test_engine_choice(monkeypatch, choice, faiss_gpus, cupy_gpus, engine):
    monkeypatch.setattr(device, "_faiss_gpus", lambda: faiss_gpus)
    monkeypatch.setattr(device, "_cupy_gpus", lambda: cupy_gpus)
    monkeypatch.delenv("VECGRID_DISABLE_GPU", raising=False)
    monkeypatch.setenv("VECGRID_QUERYNODE_GPU_ENGINE", choice)
    assert device.gpu_engine() == engine
    assert device.gpu_count() == (faiss_gpus if engine == "faiss" else cupy_gpus if engine else 0)
    monkeypatch.setenv("VECGRID_DISABLE_GPU", "1")
    assert device.gpu_engine() is None and device.gpu_count() == 0


def test_an_unknown_engine_is_refused(monkeypatch):
    from vecgrid import errors

    monkeypatch.setenv("VECGRID_QUERYNODE_GPU_ENGINE", "tpu")
    with pytest.raises(errors.ParameterInvalid, match="tpu"):
        device.gpu_engine()
