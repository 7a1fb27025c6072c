"""Device layer: discovery, owner threads, budgets and accounting (runs without a GPU)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from vecgrid import errors
from vecgrid.gpu import FaissMissing, faiss_available, require_faiss
from vecgrid.gpu import device as dev


def test_package_api_unchanged():
    assert issubclass(FaissMissing, ImportError)
    assert faiss_available() is True
    assert require_faiss().__name__ == "faiss"


def test_discovery_matches_faiss():
    faiss = require_faiss()
    expected = faiss.get_num_gpus() if hasattr(faiss, "StandardGpuResources") else 0
    assert dev.gpu_count() == expected
    m = dev.DeviceManager(0.5)
    assert len(m.gpus) == expected
    assert m.host.kind == dev.CPU and m.host.name == "cpu" and m.devices[-1] is m.host
    free, total = m.host.memory_info()
    assert 0 < free <= total
    assert 0 < m.host.budget_bytes <= 0.5 * total
    stats = m.stats()
    assert stats[-1]["device"] == "cpu" and stats[-1]["used_bytes"] == 0


def test_disable_gpu_env(monkeypatch):
    monkeypatch.setenv("VECGRID_DISABLE_GPU", "1")
    assert dev.gpu_count() == 0
    assert dev.DeviceManager().gpus == []
    assert dev.DeviceManager(use_gpu=False).gpus == []


def test_budget_accounting_and_placement():
    m = dev.DeviceManager(0.8, host_budget_bytes=1000)
    assert m.place("a", 600) is m.host  # no GPU here (or it would have been preferred)
    assert m.host.used_bytes == 600 and m.host.available_bytes == 400
    with pytest.raises(errors.MemoryLimitExceeded) as ei:
        m.place("b", 500)
    assert ei.value.code == 3 and "cpu" in str(ei.value)
    m.host.reserve("a", 900)  # re-reserving a key replaces its figure
    assert m.host.used_bytes == 900
    assert m.host.release("a") == 900 and m.host.release("a") == 0
    assert m.host.used_bytes == 0 and m.host.usage() == {}
    with pytest.raises(errors.ParameterInvalid):
        dev.DeviceManager(0)


def test_gpu_budget_falls_back_to_host():
    m = dev.DeviceManager(0.8, host_budget_bytes=10_000)
    fake = dev.Device(dev.GPU, 0, 100)
    m.gpus = [fake]
    assert m.place("big", 500) is m.host  # does not fit on the GPU
    assert m.place("small", 50) is fake
    assert m.place("cpu-only", 10, gpu_capable=False) is m.host
    assert m.place("host-asked", 10, prefer_gpu=False) is m.host
    assert fake.used_bytes == 50


def test_owner_thread_serialises_device_calls():
    """All calls for a GPU run on its one owner thread, nested calls inline (no deadlock)."""
    g = dev.Device(dev.GPU, 7, 0)  # no CUDA needed: only the executor is exercised
    seen = set()
    active = []
    overlap = []

    def work(i):
        seen.add(threading.get_ident())
        active.append(i)
        if len(active) > 1:
            overlap.append(i)
        x = float(np.sum(np.arange(10000)))
        active.remove(i)
        return g.run(lambda: (threading.get_ident(), x))  # nested: inline

    threads = [threading.Thread(target=lambda i=i: g.run(work, i)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 1 and threading.get_ident() not in seen
    assert not overlap
    fut = g.submit(work, 99)
    ident, _ = fut.result(timeout=10)
    assert ident in seen
    host = dev.Device(dev.CPU, -1, 0)
    assert host.run(threading.get_ident) == threading.get_ident()
    assert host.submit(lambda: 5).result() == 5
    with pytest.raises(ZeroDivisionError):
        host.submit(lambda: 1 / 0).result()


def test_cupy_absent_or_present_is_clean():
    cp = dev.cupy_module()
    assert cp is None or hasattr(cp, "asarray")
    if not dev.faiss_has_gpu():
        assert dev.DeviceManager().has_gpu is False


def test_an_nvml_failure_is_logged_not_read_silently_as_no_memory(monkeypatch, caplog):
    """NVML installed but failing (a driver mismatch) leaves the GPU without a memory counter, and says so;
    NVML not installed at all is the quiet, documented case."""
    import sys
    import types

    class NVMLError(Exception):
        pass

    def refuse(*_args):
        raise NVMLError("Driver/library version mismatch")

    fake = types.SimpleNamespace(NVMLError=NVMLError, nvmlInit=refuse, nvmlDeviceGetHandleByIndex=refuse,
                                 nvmlDeviceGetMemoryInfo=refuse)
    monkeypatch.setattr(dev, "cupy_module", lambda: None)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    with caplog.at_level("WARNING", logger="vecgrid.gpu.device"):
        assert dev._gpu_mem_info(0) == (0, 0)
    assert "NVML could not read the memory of GPU 0" in caplog.text and "version mismatch" in caplog.text
    caplog.clear()
    monkeypatch.setitem(sys.modules, "pynvml", None)   # `import pynvml` raises ImportError
    with caplog.at_level("WARNING", logger="vecgrid.gpu.device"):
        assert dev._gpu_mem_info(0) == (0, 0)
    assert caplog.text == ""


def test_trimming_the_host_heap_gives_back_what_arrows_pool_kept():
    """A segment load reads its table through Arrow, whose allocator (mimalloc/jemalloc) keeps freed
    memory for reuse: a 1M-row segment's node stayed at 1.8 GB resident for a 0.5 GB index."""
    pa = pytest.importorskip("pyarrow")
    import psutil

    rss = psutil.Process().memory_info
    big = pa.concat_arrays([pa.array(np.ones(32 << 20, dtype=np.float32))] * 2)   # 256 MB from Arrow's pool
    del big
    kept = rss().rss
    dev.trim_host_heap()
    assert kept - rss().rss > 150 << 20


def test_a_transient_job_whose_trim_fails_still_gives_the_search_thresholds_back(monkeypatch):
    set_to = []
    monkeypatch.setattr(dev, "_serving", True)
    monkeypatch.setattr(dev, "_set_heap_thresholds", lambda mmap_from, trim_from: set_to.append(mmap_from))

    def failing_trim():
        raise OSError("Arrow's pool")
    monkeypatch.setattr(dev, "trim_host_heap", failing_trim)
    with pytest.raises(OSError):
        with dev.transient_heap():
            pass
    assert set_to == [dev.LOAD_MMAP_FROM, dev.SEARCH_MMAP_FROM]
    assert dev._transient_in_flight == 0
