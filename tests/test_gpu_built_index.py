"""An index built at load goes to the engine as it is: no serialization, the same search, the file size
it would have (vecgrid.gpu.build.index_file_size, vecgrid.gpu.loaded_segment.load_segment)."""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid.gpu import build
from vecgrid.gpu.datasets import SyntheticDataset
from vecgrid.gpu.loaded_segment import load_segment

pytest.importorskip("faiss")

CASES = [("FLAT", {}), ("IVF_FLAT", {"nlist": 16}), ("IVF_SQ8", {"nlist": 16}), ("IVF_PQ", {"nlist": 16, "m": 8}),
         ("HNSW", {"M": 8, "efConstruction": 16})]


@pytest.fixture(scope="module")
def ds():
    return SyntheticDataset(d=32, nb=2_000, nq=20, seed=5)


@pytest.mark.parametrize("index_type,params", CASES)
def test_index_file_size_is_the_serialized_size(ds, index_type, params):
    built = build.build_index(ds.xb, index_type, "L2", params, use_gpu=False)
    assert build.index_file_size(built.index, built.header) == len(built.to_bytes())


@pytest.mark.parametrize("index_type,params", CASES[:3])
def test_a_built_index_loads_without_serializing_and_searches_as_its_file(ds, index_type, params, monkeypatch):
    pks = np.arange(len(ds.xb), dtype=np.int64) * 3 + 1
    built = build.build_index(ds.xb, index_type, "L2", params, use_gpu=False)
    from_file = load_segment(built.to_bytes(), pks, segment_id=1)

    def refuse(*_a, **_k):
        raise AssertionError("the built index was serialized")

    faiss = build.require_faiss()
    monkeypatch.setattr(faiss, "serialize_index", refuse)
    monkeypatch.setattr(faiss, "deserialize_index", refuse)
    direct = load_segment(built, pks, segment_id=2)
    monkeypatch.undo()
    try:
        assert direct.index_bytes == from_file.index_bytes
        a, b = direct.search(ds.xq, 10), from_file.search(ds.xq, 10)
        assert a.ids.tolist() == b.ids.tolist() and a.scores.tolist() == b.scores.tolist()
        assert direct.index_file() == from_file.index_file()   # what the index saver writes
    finally:
        direct.release()
        from_file.release()
