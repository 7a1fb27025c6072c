"""glibc's heap thresholds in a process that serves searches (``vecgrid.gpu.device``).

Dask starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also fixes glibc's mmap threshold
at 128 KiB: faiss's 16 MiB distance block (every batch of 32 or more queries through BLAS) was then
mapped and page-faulted anew by every search.  A query node sets thresholds that keep it in the heap
(``serve_heap``), and a load or an index build runs with Dask's (``transient_heap``), so that its
transient buffers leave nothing behind.  Each case runs in a process of its own, started as Dask
starts a worker: the thresholds belong to the whole process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow   # a Python process per case

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PROGRAM = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    from vecgrid.gpu import require_faiss
    from vecgrid.gpu.device import serve_heap, transient_heap

    faiss = require_faiss()
    rng = np.random.default_rng(0)
    index = faiss.IndexFlatL2(64)
    index.add(rng.standard_normal((20_000, 64), dtype=np.float32))
    queries = rng.standard_normal((100, 64), dtype=np.float32)   # 6,400 query floats: the BLAS path

    def faults() -> int:
        "minor page faults of five searches, after three to settle"
        for _ in range(3):
            index.search(queries, 10)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(5):
            index.search(queries, 10)
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    out = {"as_started": faults()}
    with transient_heap():   # a process that does not serve: the thresholds stay as it started
        pass
    out["not_serving_after_a_load"] = faults()
    serve_heap()
    out["serving"] = faults()
    with transient_heap():
        out["one_load"] = faults()
        with transient_heap():
            out["two_loads"] = faults()
        out["one_of_two_loads_left"] = faults()
    out["after_the_loads"] = faults()
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def faults() -> dict[str, int]:
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536", "PYTHONPATH": ROOT}   # as Dask's nanny starts a worker
    done = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


MAPPED_ANEW = 5 * 50   # five searches, each faulting in the ~100 pages it touches of a block mapped anew


def test_a_search_process_started_as_dask_starts_workers_maps_faiss_scratch_anew_every_search(faults):
    assert faults["as_started"] >= MAPPED_ANEW


def test_a_load_in_a_process_that_does_not_serve_leaves_its_thresholds_alone(faults):
    assert faults["not_serving_after_a_load"] >= MAPPED_ANEW


def test_a_serving_process_keeps_faiss_scratch_between_searches(faults):
    assert faults["serving"] < 50


def test_a_load_maps_big_buffers_apart_until_the_last_load_ends(faults):
    assert faults["one_load"] >= MAPPED_ANEW
    assert faults["two_loads"] >= MAPPED_ANEW
    assert faults["one_of_two_loads_left"] >= MAPPED_ANEW
    assert faults["after_the_loads"] < 50
