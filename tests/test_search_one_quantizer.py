"""An unfiltered search over sealed IVF segments of one quantizer with every row visible: assigned once,
each segment scanned straight into one result array, one merge — the same hits, output fields and errors
as searching each segment on its own and merging (vecgrid.gpu.loaded_segment._search_one_quantizer)."""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.gpu import build
from vecgrid.gpu import loaded_segment as engine
from vecgrid.proto import schema_pb2

faiss = pytest.importorskip("faiss")

DIM, NLIST, ROWS, K = 16, 8, 600, 10
PARAMS = {"nprobe": 3}
SCHEMA = schema_pb2.CollectionSchema(name="c", fields=[
    schema_pb2.FieldSchema(fieldID=100, name="pk", data_type=schema_pb2.Int64, is_primary_key=True),
    schema_pb2.FieldSchema(fieldID=101, name="v", data_type=schema_pb2.FloatVector),
    schema_pb2.FieldSchema(fieldID=102, name="n", data_type=schema_pb2.Int64)])


def segments_of_one_training(index_type: str = "IVF_SQ8", metric: str = "L2", count: int = 4,
                             rows: tuple[int, ...] = ()) -> list:
    """``count`` segments of ROWS rows (``rows``: each one's own), the first one's training lent to the rest."""
    rng = np.random.default_rng(5)
    out, trained = [], None
    for i in range(count):
        x = rng.standard_normal((rows[i] if rows else ROWS, DIM), dtype=np.float32)
        built = build.build_index(x, index_type, metric, {"nlist": NLIST}, use_gpu=False, trained=trained)
        trained = trained if trained is not None else built.trained
        pks = np.arange(i * ROWS, i * ROWS + len(x), dtype=np.int64) * 3 + 1   # keys are not row offsets
        out.append(engine.load_segment(built, pks, columns={102: pks * 10}, schema=SCHEMA, segment_id=i + 1,
                                       field_id=101, pk_field_id=100, prefer_gpu=False))
    assert len({s.quantizer_key for s in out}) == 1
    return out


def each_alone(segments: list, xq: np.ndarray, metric: str, round_decimal: int = -1):
    return engine.merge_topk([s.search(xq, K, params=PARAMS, metric=metric) for s in segments], K, metric,
                             round_decimal)


def segments_calling(monkeypatch, method: str) -> list:
    """The ids of the segments whose ``LoadedSegment.<method>`` runs from now on, in call order."""
    calls = []
    original = getattr(engine.LoadedSegment, method)

    def counting(self, *a, **kw):
        calls.append(self.segment_id)
        return original(self, *a, **kw)

    monkeypatch.setattr(engine.LoadedSegment, method, counting)
    return calls


@pytest.fixture
def searches(monkeypatch):
    """The segments each searched through LoadedSegment.search: the general path's per-segment step."""
    return segments_calling(monkeypatch, "search")


@pytest.mark.parametrize("index_type,metric", [("IVF_SQ8", "L2"), ("IVF_FLAT", "IP"), ("IVF_FLAT", "COSINE")])
@pytest.mark.parametrize("nq", [1, 30])
def test_the_same_hits_as_each_segment_alone_without_searching_them_one_by_one(monkeypatch, searches, index_type,
                                                                                metric, nq):
    segments = segments_of_one_training(index_type, metric)
    monkeypatch.setattr(engine, "FAN_OUT_WORK", 0)   # these small segments spread over the cores too
    xq = np.random.default_rng(nq).standard_normal((nq, DIM), dtype=np.float32)
    for threads in (1, 2):
        faiss.omp_set_num_threads(threads)
        try:
            got = engine.search_segments(segments, xq, K, params=PARAMS, metric=metric, output_fields=["n"])
        finally:
            faiss.omp_set_num_threads(1)
        assert searches == []
        want = each_alone(segments, xq, metric)
        assert np.array_equal(got.ids, want.ids) and np.allclose(got.scores, want.scores)
        assert np.array_equal(got.fields[0].values, got.ids * 10)
        assert {int(s) for s in got.sources} == {int(s) for s in want.sources}   # hits from several segments
        searches.clear()
    rounded = engine.search_segments(segments, xq, K, params=PARAMS, metric=metric, round_decimal=2)
    want = each_alone(segments, xq, metric, 2)
    assert np.array_equal(rounded.ids, want.ids) and np.array_equal(rounded.scores, want.scores)


def test_a_segment_with_deletes_takes_the_general_path_and_hides_them(searches):
    segments = segments_of_one_training()
    xq = np.random.default_rng(1).standard_normal((1, DIM), dtype=np.float32)
    best = int(engine.search_segments(segments, xq, K, params=PARAMS).ids[0])
    owner = next(s for s in segments if best in set(s.pks.tolist()))
    owner.delete(np.array([best]), np.array([5], dtype=np.uint64))
    searches.clear()
    got = engine.search_segments(segments, xq, K, params=PARAMS)
    assert best not in got.ids.tolist() and len(got.ids) == K
    assert sorted(searches) == [1, 2, 3, 4]


def test_a_released_segment_fails_the_search_and_leaves_none_of_the_others_held():
    segments = segments_of_one_training()
    segments[2].release()
    xq = np.zeros((1, DIM), dtype=np.float32)
    with pytest.raises(errors.SegmentNotLoaded):
        engine.search_segments(segments, xq, K, params=PARAMS)
    assert [s._inflight for s in segments] == [0, 0, 0, 0]
    segments[0].release()   # would wait forever for a search still counted


def test_bad_requests_get_the_errors_of_a_segment_alone():
    segments = segments_of_one_training()
    xq = np.zeros((1, DIM), dtype=np.float32)
    for call in (lambda: engine.search_segments(segments, xq, K, params=PARAMS, metric="IP"),
                 lambda: engine.search_segments(segments, xq, 0, params=PARAMS),
                 lambda: engine.search_segments(segments, np.zeros((1, DIM + 1), np.float32), K, params=PARAMS),
                 lambda: engine.search_segments(segments, xq, K, params={"nprobe": 0})):
        with pytest.raises(errors.ParameterInvalid):
            call()
    # more lists than there are is not an error (Milvus allows nprobe up to 65536): every list is probed
    got = engine.search_segments(segments, xq, K, params={"nprobe": NLIST + 1})
    want = engine.merge_topk([s.search(xq, K, params={"nprobe": NLIST + 1}) for s in segments], K, "L2", -1)
    assert np.array_equal(got.ids, want.ids) and np.allclose(got.scores, want.scores)


@pytest.fixture
def per_segment_results(monkeypatch):
    """Segments whose hits were made into a result of their own before the merge."""
    return segments_calling(monkeypatch, "_plain_topk")


@pytest.mark.parametrize("nq", [1, 30])
def test_full_hits_merge_in_one_sort_and_a_short_segment_is_filled_exactly(per_segment_results, nq):
    # every segment with k hits per query: one sort over the arrays (merge_full), no result per segment
    xq = np.random.default_rng(nq).standard_normal((nq, DIM), dtype=np.float32)
    segments = segments_of_one_training()
    per_segment_results.clear()   # loading warms each segment up with a search of its own
    got = engine.search_segments(segments, xq, K, params=PARAMS, output_fields=["n"])
    assert per_segment_results == []
    want = each_alone(segments, xq, "L2")
    assert np.array_equal(got.ids, want.ids) and np.allclose(got.scores, want.scores)
    assert np.array_equal(got.fields[0].values, got.ids * 10)
    # a segment of 12 rows has fewer than k in the lists probed: it searches those queries exactly, as alone
    segments = segments_of_one_training(count=3, rows=(ROWS, ROWS, 12))
    per_segment_results.clear()
    got = engine.search_segments(segments, xq, K, params=PARAMS)
    assert sorted(per_segment_results) == [1, 2, 3]
    want = each_alone(segments, xq, "L2")
    assert np.array_equal(got.ids, want.ids) and np.allclose(got.scores, want.scores)
