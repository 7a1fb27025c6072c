"""IVF segments of one index train once: the first build writes a trained template, later builds add
their rows to it, and a search assigns its queries to lists once for every segment sharing the
quantizer — with the same hits as searching each segment on its own (vecgrid/cluster/index_templates.py,
vecgrid.gpu.loaded_segment.search_segments)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from vecgrid.cluster.index_templates import Templates, TemplateKey
from vecgrid.gpu import build
from vecgrid.gpu import loaded_segment as engine
from vecgrid.storage.backend import open_storage
from tests.querynode_support import NodeHarness, import_collection

faiss = pytest.importorskip("faiss")

DIM, NLIST = 32, 16


def rows(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)


def build_with(templates: Templates, key: TemplateKey, x: np.ndarray, index_type: str = "IVF_FLAT",
               metric: str = "L2") -> build.BuiltIndex:
    return templates.build(key, x, index_type, metric, {"nlist": NLIST},
                           lambda *a, **kw: build.build_index(*a, use_gpu=False, **kw))


def template_header(key: TemplateKey) -> dict:
    storage = open_storage(key.root)
    return build.read_index_file(memoryview(storage.read_all(key.path, storage.size(key.path))))[1]


@pytest.mark.parametrize("index_type,metric", [("IVF_FLAT", "L2"), ("IVF_SQ8", "COSINE"), ("IVF_PQ", "IP")])
def test_later_builds_start_from_the_first_ones_training_and_search_the_same(tmp_path, monkeypatch, index_type,
                                                                             metric):
    key = TemplateKey(str(tmp_path), 7, 101, 9001)
    templates = Templates()
    parts = [rows(1000, seed) for seed in range(4)]
    built = [build_with(templates, key, x, index_type, metric) for x in parts]
    assert [b.header["trained_by"] for b in built] == ["this build", "template", "template", "template"]
    assert template_header(key)["trained_rows"] == 1000 and template_header(key)["template"]
    segments = [engine.load_segment(b.to_bytes(), np.arange(i * 1000, (i + 1) * 1000), prefer_gpu=False,
                                    segment_id=i + 1) for i, b in enumerate(built)]
    assert len({s.quantizer_key for s in segments}) == 1 and segments[0].quantizer_key is not None

    queries = rows(30, 99)
    assigned = []
    original = engine.LoadedSegment.assign
    def counting(self, *a, **kw):
        assigned.append(self.segment_id)
        return original(self, *a, **kw)
    monkeypatch.setattr(engine.LoadedSegment, "assign", counting)
    shared = engine.search_segments(segments, queries, 10, params={"nprobe": 4}, metric=metric)
    assert len(assigned) == 1   # one assignment for the four segments
    alone = [s.search(queries, 10, params={"nprobe": 4}, metric=metric) for s in segments]
    merged = engine.merge_topk(alone, 10, metric, -1)
    assert np.array_equal(shared.ids, merged.ids) and np.allclose(shared.scores, merged.scores)


def test_too_few_rows_write_no_template_and_a_larger_sample_replaces_it(tmp_path):
    key = TemplateKey(str(tmp_path), 7, 101, 9001)
    templates = Templates()
    assert build_with(templates, key, rows(300, 1)).header["trained_by"] == "this build"   # < 39 x 16 rows
    assert open_storage(key.root).size(key.path) is None
    build_with(templates, key, rows(700, 2))
    assert template_header(key)["trained_rows"] == 700
    # 700 is within 2x of 1,000 rows: used; 4,096 (= 256 x nlist) offers more than twice: trains, replaces
    assert build_with(templates, key, rows(1000, 3)).header["trained_by"] == "template"
    assert build_with(templates, key, rows(5000, 4)).header["trained_by"] == "this build"
    assert template_header(key)["trained_rows"] == 256 * NLIST
    assert build_with(templates, key, rows(800, 5)).header["trained_by"] == "template"


def test_a_corrupt_template_costs_a_training_and_is_written_again(tmp_path):
    key = TemplateKey(str(tmp_path), 7, 101, 9001)
    templates = Templates()
    build_with(templates, key, rows(1000, 1))
    path = tmp_path / key.path
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))
    assert build_with(templates, key, rows(1000, 2)).header["trained_by"] == "this build"
    template_header(key)   # readable again: the checksum in its header matches
    assert build_with(templates, key, rows(1000, 3)).header["trained_by"] == "template"


def test_concurrent_builds_on_one_host_train_once(tmp_path):
    """Two nodes of one host (two Templates: two processes' worth of state) build segments of one index
    at once: one trains, the other waits for its template instead of training too."""
    key = TemplateKey(str(tmp_path / "root"), 7, 101, 9001)
    lock_dir = str(tmp_path / "locks")
    results: list[str] = []

    def slow_build(*a, **kw):
        if kw.get("trained") is None:
            time.sleep(0.5)   # a long training: the other build reads no template meanwhile
        return build.build_index(*a, use_gpu=False, **kw)

    def node(seed: int) -> None:
        built = Templates(lock_dir).build(key, rows(1000, seed), "IVF_FLAT", "L2", {"nlist": NLIST}, slow_build)
        results.append(built.header["trained_by"])

    threads = [threading.Thread(target=node, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == ["template", "this build"]


def test_another_index_of_the_field_never_uses_the_template(tmp_path):
    templates = Templates()
    build_with(templates, TemplateKey(str(tmp_path), 7, 101, 9001), rows(1000, 1))
    other = build_with(templates, TemplateKey(str(tmp_path), 7, 101, 9002), rows(1000, 2))
    assert other.header["trained_by"] == "this build"


@pytest.mark.asyncio(loop_scope="module")
async def test_a_node_loading_imported_segments_trains_once_and_shares_the_quantizer(tmp_path):
    ds = import_collection(tmp_path, "shared", n=2400, segment_rows=800, shards=1, seed=4, metric="L2",
                           index="IVF_FLAT", index_params={"nlist": NLIST})
    assert len(ds.segment_ids) == 3
    h = await NodeHarness(ds.data_dir).start()
    try:
        await h.load(ds)
        engines = [h.node.segments.get(sid).engine(ds.vec_fid) for sid in ds.segment_ids]
        trained = sorted(e.header["trained_by"] for e in engines)
        assert trained == ["template", "template", "this build"]
        assert len({e.quantizer_key for e in engines}) == 1
    finally:
        await h.stop()
