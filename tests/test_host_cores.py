"""Searches lease the host's free cores (vecgrid/cluster/cores.py): a lone search gets every
core it can use, concurrent ones share them, another process's lease counts, and a search of a node
configured with a fixed ``querynode.faiss_threads`` uses that number."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from vecgrid.cluster import cores as host_cores
from vecgrid.cluster.cores import HostCores

faiss = pytest.importorskip("faiss")


def test_a_lone_search_gets_the_cores_it_can_use_and_never_more_than_the_host_has(tmp_path):
    cores = HostCores(4, str(tmp_path))
    with cores.lease(100) as threads:
        assert threads == 4
    with cores.lease(2) as threads:
        assert threads == 2
    with cores.lease(1) as threads:
        assert threads == 1


def test_concurrent_searches_share_the_cores_and_a_search_finding_none_free_still_runs(tmp_path):
    cores = HostCores(4, str(tmp_path))
    seen: list[int] = []
    with cores.lease(3) as first:
        assert first == 3

        def other() -> None:   # another thread: its own descriptors, so it competes for the files
            with cores.lease(4) as n:
                seen.append(n)
                with HostCores(4, str(tmp_path)).lease(2) as m:   # all four held: none free, runs on one
                    seen.append(m)
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == [1, 1]
    with cores.lease(4) as threads:   # every lease was given back
        assert threads == 4


@pytest.mark.slow   # starts a process
def test_a_lease_held_by_another_process_counts_and_goes_with_it(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from vecgrid.cluster.cores import HostCores\n"
         f"c = HostCores(2, {str(tmp_path)!r})\n"
         "with c.lease(2) as n:\n"
         "    print(n, flush=True); sys.stdin.readline()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "2"
        cores = HostCores(2, str(tmp_path))
        with cores.lease(2) as threads:
            assert threads == 1
        holder.kill()   # a killed process's locks go with it
        holder.wait(10)
        with cores.lease(2) as threads:
            assert threads == 2
    finally:
        holder.kill()
        holder.communicate()


@pytest.fixture
def restore_faiss_threads():
    before = faiss.omp_get_max_threads()
    yield
    host_cores.configure_faiss_threads(0)
    host_cores._host_cores = None
    faiss.omp_set_num_threads(before)


def test_a_search_runs_with_the_cores_it_leased_or_the_fixed_setting(tmp_path, monkeypatch, restore_faiss_threads):
    used: list[int] = []
    host_cores.configure_faiss_threads(0)
    monkeypatch.setattr(host_cores, "_host_cores", HostCores(2, str(tmp_path)))
    with host_cores.faiss_threads(100):
        used.append(faiss.omp_get_max_threads())
    with host_cores.faiss_threads(1):
        used.append(faiss.omp_get_max_threads())
    host_cores.configure_faiss_threads(3)
    with host_cores.faiss_threads(1):
        used.append(faiss.omp_get_max_threads())
    assert used == [2, 1, 3]
