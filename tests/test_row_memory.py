"""What a segment's rows cost in memory: a constant timestamp column is held as one value (a bulk
import stamps every row alike), a column mapped from a file is not counted as memory, and vecgrid's
server processes give Arrow the C library's allocator, which gives freed tables back (vecgrid.storage.arrow_pool)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from vecgrid.gpu.rows import RowStore
from vecgrid.storage import arrow_pool
from vecgrid.storage.mapped import disk_backed


def test_a_constant_timestamp_column_costs_one_value_and_reads_as_the_whole_column():
    pks = np.arange(1000, dtype=np.int64)
    rows = RowStore(pks, timestamps=np.full(1000, 50, dtype=np.uint64))
    assert rows.nbytes() == pks.nbytes + 8                 # 8,008 on the old code
    assert rows.timestamps.shape == (1000,) and (rows.timestamps == 50).all()
    assert rows.visibility(49) is not None and not rows.visibility(49).any()   # inserted after the read
    assert rows.visibility(50) is None                      # every row visible
    # deletes compare each row's insert time: before the delete hides, at the delete's time survives
    assert rows.delete(np.array([3, 4]), np.array([60, 50], dtype=np.uint64)) == 1
    assert rows.count(None, 70) == 999


def test_varying_timestamps_stay_an_array_and_appends_after_a_constant_column_work():
    ts = np.arange(10, dtype=np.uint64)
    rows = RowStore(np.arange(10), timestamps=ts)
    assert rows.nbytes() == 10 * 8 + 10 * 8
    assert rows.count(None, 4) == 5
    grown = RowStore(np.arange(3), timestamps=np.full(3, 7, dtype=np.uint64))
    grown.append(np.arange(3, 5), timestamps=np.array([8, 9], dtype=np.uint64))
    assert grown.timestamps.tolist() == [7, 7, 7, 8, 9]
    assert grown.count(None, 8) == 4
    grown.append(np.arange(5, 5), timestamps=np.zeros(0, dtype=np.uint64))
    assert grown.n == 5


def test_a_column_mapped_from_a_file_is_not_counted_as_memory(tmp_path):
    vectors = np.random.default_rng(0).standard_normal((500, 16)).astype(np.float32)
    pks = np.arange(500, dtype=np.int64)
    mapped = RowStore(pks, columns={101: disk_backed(vectors, str(tmp_path))})
    held = RowStore(pks, columns={101: vectors})
    assert mapped.nbytes() == pks.nbytes                    # 32,000 more on the old code
    assert held.nbytes() == pks.nbytes + vectors.nbytes
    (column,) = mapped.fetch(np.array([0, 499]), [101])
    assert np.array_equal(column.values, vectors[[0, 499]])


def test_use_system_allocator_names_it_unless_the_user_named_a_pool(monkeypatch):
    monkeypatch.delitem(sys.modules, "pyarrow", raising=False)
    env: dict[str, str] = {}
    assert arrow_pool.use_system_allocator(env) and env == {arrow_pool.POOL_VARIABLE: "system"}
    user = {arrow_pool.POOL_VARIABLE: "jemalloc"}
    assert not arrow_pool.use_system_allocator(user) and user[arrow_pool.POOL_VARIABLE] == "jemalloc"


def test_use_system_allocator_leaves_the_setting_alone_once_pyarrow_is_loaded():
    import pyarrow  # noqa: F401  (loaded: it has picked its pool)

    env: dict[str, str] = {}
    assert not arrow_pool.use_system_allocator(env) and env == {}


@pytest.mark.slow
def test_server_commands_give_their_processes_the_system_allocator_and_clients_keep_arrows_default():
    """Run as the CLI runs them: the command's settings first, then pyarrow loads (in a fresh process)."""
    env = {k: v for k, v in os.environ.items() if k != arrow_pool.POOL_VARIABLE}
    backends = {}
    for command in ("serve", "coord", "worker", "import", "search"):
        probe = (f"from vecgrid import cli; cli._process_settings({command!r}); "
                 "import pyarrow; print(pyarrow.default_memory_pool().backend_name)")
        out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
        backends[command] = out.stdout.strip()
    assert backends["serve"] == backends["coord"] == backends["worker"] == "system"
    assert backends["import"] == backends["search"] != "system"   # Arrow's own default (mimalloc or jemalloc)
