"""A GPU fault that sends a search to the exact (host) path logs a warning, once per segment and
kind of fault, instead of turning silently into a 10-100x slower search; and release() waits for
searches in flight without spinning.

No GPU is needed: the segment is placed on a GPU ``Device`` (whose calls run on its owner thread)
with an index that fails the way a faulting GPU index does; its host copy is the real index."""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest

from vecgrid.gpu import build
from vecgrid.gpu import exprs
from vecgrid.gpu.device import GPU, Device, DeviceManager
from vecgrid.gpu.rows import RowStore, fields_from_schema
from vecgrid.gpu.loaded_segment import LoadedSegment
from vecgrid.proto import schema_pb2

pytest.importorskip("faiss")

N, DIM, K = 3000, 16, 5
PK_FIELD, VEC_FIELD, AGE_FIELD = 100, 101, 102
LOGGER = "vecgrid.gpu.loaded_segment"
FIELDS = fields_from_schema([
    schema_pb2.FieldSchema(fieldID=PK_FIELD, name="pk", is_primary_key=True, data_type=schema_pb2.Int64),
    schema_pb2.FieldSchema(fieldID=VEC_FIELD, name="vec", data_type=schema_pb2.FloatVector,
                           type_params=[{"key": "dim", "value": str(DIM)}]),
    schema_pb2.FieldSchema(fieldID=AGE_FIELD, name="age", data_type=schema_pb2.Int64)])


class FaultyGpuIndexFlat:
    """Stands for a GPU flat index whose kernels fail (e.g. an illegal memory access)."""

    def __init__(self, real) -> None:
        self.d, self.ntotal, self.metric_type = real.d, real.ntotal, real.metric_type

    def search(self, *args, **kwargs):
        raise RuntimeError("CUDA error 700: an illegal memory access was encountered")

    def reconstruct_batch(self, rows):
        raise RuntimeError("CUDA error 700: an illegal memory access was encountered")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    xb = rng.standard_normal((N, DIM)).astype(np.float32)
    return xb, rng.standard_normal((4, DIM)).astype(np.float32), build.build_index_file(xb, "FLAT", "L2")


def faulty_segment(data, segment_id: int) -> LoadedSegment:
    xb, _, blob = data
    index, header = build.read_index_file(blob)
    rows = RowStore(np.arange(N, dtype=np.int64) * 2, columns={AGE_FIELD: np.arange(N) % 100}, fields=FIELDS)
    seg = LoadedSegment(index=FaultyGpuIndexFlat(index), header=header, rows=rows,
                        device=Device(GPU, 0, 1 << 40), manager=DeviceManager(use_gpu=False),
                        key=("fallback-test", segment_id), index_bytes=len(blob), segment_id=segment_id,
                        field_id=VEC_FIELD)
    seg._copy_to_host = lambda: index  # what index_gpu_to_cpu gives for a GPU index that still copies
    return seg


def exact(xb: np.ndarray, xq: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
    d = ((xq[:, None, :] - xb[None, :, :]) ** 2).sum(-1)
    if allowed is not None:
        d[:, ~allowed] = np.inf
    return np.argsort(d, axis=1)[:, :K] * 2  # primary keys are row * 2


def warnings_of(caplog, segment_id: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING
            and f"segment {segment_id}" in r.getMessage()]


def test_a_failed_gpu_search_falls_back_with_one_warning(data, caplog):
    xb, xq, _ = data
    seg = faulty_segment(data, 41)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    try:
        for _ in range(3):
            hits = seg.search(xq, K)
            np.testing.assert_array_equal(hits.ids.reshape(len(xq), K), exact(xb, xq))
        (warning,) = warnings_of(caplog, 41)
        assert "exact" in warning.getMessage() and "illegal memory access" in warning.getMessage()
        assert seg.info["fallbacks"] == {"gpu search": 3}
    finally:
        seg.release()


def test_a_failed_gpu_gather_falls_back_with_one_warning(data, caplog):
    xb, xq, _ = data
    seg = faulty_segment(data, 42)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    young = exprs.compare(exprs.column(AGE_FIELD), "<", 2)  # 2 % of the rows: rule 3's exact search
    allowed = (np.arange(N) % 100) < 2
    try:
        for _ in range(2):
            hits = seg.search(xq, K, expr=young)
            np.testing.assert_array_equal(hits.ids.reshape(len(xq), K), exact(xb, xq, allowed))
        (warning,) = warnings_of(caplog, 42)
        assert "reconstruct" in warning.getMessage()
    finally:
        seg.release()


def test_a_failed_gpu_vector_fetch_falls_back_with_one_warning(data, caplog):
    xb, _, _ = data
    seg = faulty_segment(data, 43)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    try:
        (col,) = seg.fetch(np.array([5, 7]), [VEC_FIELD])
        np.testing.assert_array_equal(col.values, xb[[5, 7]])
        (col,) = seg.fetch(np.array([1]), [VEC_FIELD])
        assert len(warnings_of(caplog, 43)) == 1
    finally:
        seg.release()


class BlockingIndexFlat:
    """A host flat index whose search waits for the test (a search in flight)."""

    def __init__(self, real, entered: threading.Event, go: threading.Event) -> None:
        self.real, self.entered, self.go = real, entered, go
        self.d, self.ntotal, self.metric_type = real.d, real.ntotal, real.metric_type

    def search(self, *args, **kwargs):
        self.entered.set()
        assert self.go.wait(30)
        return self.real.search(*args, **kwargs)

    def search_c(self, *args):  # what an unfiltered host search calls (faiss's wrapper skipped)
        self.entered.set()
        assert self.go.wait(30)
        return self.real.search_c(*args)


def test_release_waits_for_a_search_in_flight(data):
    _, xq, blob = data
    index, header = build.read_index_file(blob)
    entered, go = threading.Event(), threading.Event()
    mgr = DeviceManager(use_gpu=False)
    rows = RowStore(np.arange(N, dtype=np.int64))
    seg = LoadedSegment(index=BlockingIndexFlat(index, entered, go), header=header, rows=rows, device=mgr.host,
                        manager=mgr, key="in-flight", index_bytes=len(blob), field_id=VEC_FIELD)
    seg._xb = None  # no flat view of the wrapper: the unfiltered search goes through the index
    found = []
    searcher = threading.Thread(target=lambda: found.append(seg.search(xq, K)))
    searcher.start()
    assert entered.wait(30)
    releaser = threading.Thread(target=seg.release)
    releaser.start()
    deadline = time.monotonic() + 30
    while not seg.info["released"]:  # release() has closed the segment and now waits
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert releaser.is_alive() and seg.index is not None  # the search still holds it
    go.set()
    searcher.join(30)
    releaser.join(30)
    assert not releaser.is_alive() and seg.index is None
    assert found and found[0].ids.size == len(xq) * K
