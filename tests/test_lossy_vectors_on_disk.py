"""The raw vectors of a lossy index (IVF_SQ8, IVF_PQ) are kept on local disk, mapped, not in the node's
memory: only output fields read them (vecgrid.storage.mapped, the query node's loader)."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from vecgrid.storage.mapped import disk_backed, is_mapped
from tests.querynode_support import NodeHarness, import_collection

pytest.importorskip("faiss")


def file_backed(array: np.ndarray) -> bool:
    """Whether ``array``'s memory is a mapping (the chain of views ends at an ``mmap``)."""
    base = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            return True
        base = getattr(base, "base", None)
    return False


def test_a_disk_backed_array_reads_back_and_leaves_no_file(tmp_path):
    values = np.random.default_rng(1).standard_normal((100, 8)).astype(np.float32)
    mapped = disk_backed(values, str(tmp_path))
    assert file_backed(mapped) and not mapped.flags.writeable
    assert is_mapped(mapped) and is_mapped(np.asarray(mapped)[10:]) and not is_mapped(values)
    assert np.array_equal(mapped, values)
    assert list(tmp_path.iterdir()) == []   # unlinked at once: nothing left behind, even after a crash


@pytest.mark.asyncio(loop_scope="module")
async def test_a_lossy_segment_keeps_its_raw_vectors_mapped_and_returns_them(tmp_path):
    ds = import_collection(tmp_path, "sq8", n=600, segment_rows=600, shards=1, seed=3, metric="L2",
                           index="IVF_SQ8", index_params={"nlist": 8})
    h = await NodeHarness(ds.data_dir).start()
    try:
        await h.load(ds)
        engine = h.node.segments.get(ds.segment_ids[0]).engine(ds.vec_fid)
        rows = np.asarray([0, 7, 599])
        (column,) = engine.rows.fetch(rows, [ds.vec_fid])
        assert np.array_equal(column.values, ds.vectors[rows])   # exact: not decoded from the SQ8 codes
        assert file_backed(engine.rows._cols[ds.vec_fid].buf)    # fails while they sit in the heap
        # nor are they counted as the node's memory (its budget, the balancer's view): keys and timestamps only
        assert engine.rows.nbytes() < ds.vectors[:600].nbytes
    finally:
        await h.stop()
