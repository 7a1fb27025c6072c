"""Growing data: brute force over unsealed rows gives what FLAT gives."""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.gpu import build, device
from vecgrid.gpu import exprs
from vecgrid.gpu.datasets import SyntheticDataset, scalar_columns
from vecgrid.gpu.evaluation import knn_ground_truth
from vecgrid.gpu.growing import GrowingSegment, brute_force_knn
from vecgrid.gpu.loaded_segment import load_segment, search_segments
from vecgrid.proto import schema_pb2

pytest.importorskip("faiss")

N, D = 6000, 64


@pytest.fixture(scope="module")
def ds():
    return SyntheticDataset(d=D, nb=N, nq=60, seed=99, n_clusters=20, intrinsic_dim=16)


@pytest.fixture(scope="module")
def cols():
    return scalar_columns(N, seed=3)


def fill(ds, cols, metric="L2", batches=(1, 999, 2000, 3000), **kw):
    g = GrowingSegment(D, metric, segment_id=9, field_id=200, pk_field_id=100, **kw)
    start = 0
    for i, size in enumerate(batches):
        sl = slice(start, start + size)
        g.insert(np.arange(start, start + size, dtype=np.int64) + 1000, ds.xb[sl],
                 timestamps=np.full(size, 10 * (i + 1), dtype=np.uint64),
                 columns={f: c[sl] for f, c in cols.items()})
        start += size
    assert g.num_rows == sum(batches)
    return g


@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
def test_growing_equals_flat(ds, cols, metric):
    g = fill(ds, cols, metric)
    flat = load_segment(build.build_index_file(ds.xb, "FLAT", metric), np.arange(N) + 1000,
                        manager=device.DeviceManager())
    try:
        for nq in (1, 5, 60):
            a = g.search(ds.xq[:nq], 10)
            b = flat.search(ds.xq[:nq], 10)
            np.testing.assert_array_equal(a.ids, b.ids)
            np.testing.assert_array_equal(a.scores, b.scores)
    finally:
        flat.release()


def test_brute_force_kernel_matches_reference_and_pads(ds):
    Dr, Ir = knn_ground_truth(ds.xq, ds.xb, 5, "L2")
    Dn, In = brute_force_knn(ds.xq, ds.xb, 5, "L2")
    np.testing.assert_allclose(Dn, Dr, rtol=1e-4, atol=1e-3)
    D3, I3 = brute_force_knn(ds.xq[:2], ds.xb[:3], 5, "IP")
    assert I3.shape == (2, 5) and (I3[:, 3:] == -1).all() and (I3[:, :3] >= 0).all()
    from vecgrid.gpu.growing import _numpy_knn

    Dp, Ip = _numpy_knn(ds.xq[:4], ds.xb, 5, "IP")
    Df, If = brute_force_knn(ds.xq[:4], ds.xb, 5, "IP")
    np.testing.assert_allclose(Dp, Df, rtol=1e-4)


def test_growing_mvcc_filters_and_deletes(ds, cols):
    g = fill(ds, cols)
    q = ds.xb[[0, 500, 1500, 5000]]
    # at ts 10 only the first row exists
    early = g.search(q, 3, timestamp=10)
    assert early.topks.tolist() == [1, 1, 1, 1] and set(early.ids.tolist()) == {1000}
    at20 = g.search(q, 1, timestamp=20)
    assert (at20.ids < 2000).all()
    assert g.search(q, 1).ids.tolist() == [1000, 1500, 2500, 6000]
    # filters
    expr = exprs.and_(
        exprs.compare(exprs.column(109), "<", 30), exprs.compare(exprs.column(101, schema_pb2.Bool), "==", True)
    )
    mask = (cols[109] < 30) & cols[101]
    res = g.search(ds.xq[:20], 10, expr=expr)
    assert res.topks.tolist() == [10] * 20
    assert mask[res.ids - 1000].all()
    Dref, Iref = knn_ground_truth(ds.xq[:20], ds.xb, 10, "L2", mask=mask)
    np.testing.assert_array_equal(np.sort(res.dense()[1] - 1000, axis=1), np.sort(Iref, axis=1))
    # deletes at ts 100 hide rows inserted before; an upsert's new row (same ts) survives
    assert g.delete(np.array([1500, 2500]), 100) == 2
    assert g.search(q, 1, timestamp=99).ids.tolist() == [1000, 1500, 2500, 6000]
    after = g.search(q, 1, timestamp=100).ids.tolist()
    assert 1500 not in after and 2500 not in after
    g.insert(np.array([1500]), ds.xb[[500]], timestamps=[100], columns={f: c[[500]] for f, c in cols.items()})
    assert g.search(q[1:2], 1).ids.tolist() == [1500]
    assert g.search(q[1:2], 1).rows.tolist() == [N]  # the new row, not the deleted one


def test_growing_output_fields_and_merge_with_sealed(ds, cols):
    half = N // 2
    mgr = device.DeviceManager()
    sealed = load_segment(build.build_index_file(ds.xb[:half], "FLAT", "L2"), np.arange(half) + 1000,
                          columns={f: c[:half] for f, c in cols.items()}, pk_field_id=100, field_id=200,
                          manager=mgr)
    g = GrowingSegment(D, "L2", field_id=200, pk_field_id=100)
    g.insert(np.arange(half, N) + 1000, ds.xb[half:], timestamps=np.full(N - half, 5, np.uint64),
             columns={f: c[half:] for f, c in cols.items()})
    try:
        res = search_segments([sealed, g], ds.xq[:15], 10, output_fields=[108, 200, 100])
        Dref, Iref = knn_ground_truth(ds.xq[:15], ds.xb, 10, "L2")
        rows = res.ids - 1000
        assert res.topks.tolist() == [10] * 15
        overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(res.dense()[1] - 1000, Iref)])
        assert overlap >= 0.99
        s, v, p = res.fields
        assert s.values.tolist() == cols[108][rows].tolist()
        np.testing.assert_array_equal(v.values, ds.xb[rows])
        np.testing.assert_array_equal(p.values, res.ids)
    finally:
        sealed.release()


def test_growing_string_keys_and_errors(ds):
    g = GrowingSegment(D, "IP")
    assert g.search(ds.xq[:2], 3).topks.tolist() == [0, 0]
    g.insert(np.array(["a", "b", "c"]), ds.xb[:3], timestamps=1)
    res = g.search(ds.xb[:1], 2)
    assert res.ids.dtype.kind == "U" and res.ids[0] == "a"
    g.delete(np.array(["a"]), 2)
    assert "a" not in g.search(ds.xb[:1], 3).ids.tolist()
    with pytest.raises(errors.ParameterInvalid):
        g.insert(np.array(["d"]), ds.xb[:1, :10], timestamps=3)
    with pytest.raises(errors.ParameterInvalid):
        g.search(ds.xq[:1], 3, metric="L2")
    with pytest.raises(errors.ParameterInvalid):
        g.delete(np.array([1, 2]), 3)
