"""A query node's worker process is started without Dask's ``MALLOC_TRIM_THRESHOLD_``.

Dask's nanny sets it (65,536) before it spawns a worker, which fixes glibc's mmap threshold: faiss's
16 MiB distance block, allocated by every batch of 32 or more queries through BLAS (a coarse
assignment, a brute-force scan), was then mapped and unmapped on every search, each time page-faulting
the part it touched (about 100 pages at nq = 100).  Under glibc's own thresholds the block stays in
the heap after the first searches.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow   # a Dask worker process


def _malloc_setting_and_faults_of_a_batch_search() -> tuple[str | None, int]:
    """In the worker: its MALLOC_TRIM_THRESHOLD_ and the minor page faults of a warm nq = 100 search."""
    import os
    import resource

    import numpy as np

    from vecgrid.gpu import require_faiss

    faiss = require_faiss()
    rng = np.random.default_rng(0)
    index = faiss.IndexFlatL2(64)
    index.add(rng.standard_normal((20_000, 64), dtype=np.float32))
    queries = rng.standard_normal((100, 64), dtype=np.float32)   # 6,400 query floats: the BLAS path
    for _ in range(3):
        index.search(queries, 10)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        index.search(queries, 10)
    return os.environ.get("MALLOC_TRIM_THRESHOLD_"), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


async def test_a_query_node_worker_keeps_faiss_scratch_memory_between_searches(monkeypatch):
    from distributed import Client, LocalCluster

    from vecgrid.cluster.querynode.dask_worker import QueryNodeNanny

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)   # as a user's shell has it: unset
    async with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, worker_class=QueryNodeNanny,
                            asynchronous=True, dashboard_address=":0", host="127.0.0.1") as cluster, \
            Client(cluster, asynchronous=True) as client:
        (setting, faults), = (await client.run(_malloc_setting_and_faults_of_a_batch_search)).values()
    # five searches: about 500 faults with the block mapped anew each time, none once it stays in the heap
    assert faults < 50, f"{faults} minor page faults in five warm nq=100 searches"
    assert setting is None
