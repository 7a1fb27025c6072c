"""Devices: GPU discovery, shared faiss GPU resources, memory budgets and accounting.

* **Discovery** happens at run time, and picks the *engine* GPU segments run on
  (:func:`gpu_engine`): ``"faiss"`` when the installed faiss is a GPU build (it has
  ``StandardGpuResources``) and ``faiss.get_num_gpus()`` is > 0; else ``"cupy"`` when cupy
  imports and sees a device (:mod:`vecgrid.gpu.cupy_engine`: FLAT and IVF_FLAT on the GPU
  with a CPU faiss); else none, and there is only the host device.  ``querynode.gpu_engine``
  (``VECGRID_QUERYNODE_GPU_ENGINE``: ``auto``, ``faiss``, ``cupy``) forces one.  cupy also gives the
  free-memory counter and the cupy kernels (filters, brute force); without it the free
  memory comes from NVML (``nvidia-ml-py``).
* **One owner thread per GPU.**  faiss GPU indexes and resources are not
  thread-safe (faiss wiki "Threads and asynchronous calls"), so every call that
  touches a GPU index goes through :meth:`Device.run`, which executes it on that
  device's single-thread executor.  There is exactly one ``StandardGpuResources``
  and one owner thread per device per process, shared by every
  :class:`DeviceManager`.  The host device runs calls inline (CPU faiss indexes
  are safe for concurrent searches).
* **Budget**: each device may hold at most ``memory_fraction`` × the free memory
  seen when the manager was created (``querynode.gpu_memory_fraction``, default
  0.8); host memory likewise with ``host_memory_fraction``.  :meth:`Device.reserve`
  records what each loaded segment uses under a key and refuses with
  :class:`vecgrid.errors.MemoryLimitExceeded` past the budget;
  :meth:`Device.release` gives it back.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterator, TypeVar

import psutil

from vecgrid import errors
from vecgrid.common.libc import c_library
from vecgrid.gpu import FaissMissing, require_faiss

log = logging.getLogger(__name__)

__all__ = [
    "CPU", "GPU", "ENGINES", "Device", "DeviceManager", "gpu_count", "gpu_engine", "faiss_has_gpu", "cupy_module",
    "gpu_resources", "default_manager", "process_rss", "trim_host_heap", "transient_heap", "serve_heap", "simd_level",
]

CPU = "CPU"
GPU = "GPU"

T = TypeVar("T")

_lock = threading.RLock()
_resources: dict[int, Any] = {}
_owners: dict[int, concurrent.futures.ThreadPoolExecutor] = {}
_owner_idents: dict[int, int] = {}
_cupy: Any = None
_cupy_checked = False


def faiss_has_gpu() -> bool:
    """The installed faiss is a GPU build."""
    try:
        faiss = require_faiss()
    except FaissMissing:
        return False
    return hasattr(faiss, "StandardGpuResources") and hasattr(faiss, "index_cpu_to_gpu")


#: values of ``querynode.gpu_engine`` (``VECGRID_QUERYNODE_GPU_ENGINE``)
ENGINES = ("auto", "faiss", "cupy")


def _faiss_gpus() -> int:
    if not faiss_has_gpu():
        return 0
    try:
        return int(require_faiss().get_num_gpus())
    except RuntimeError as e:   # a broken driver: served from the host, and said so
        log.warning("faiss could not count the GPUs (%s): serving from host memory", e)
        return 0


def _cupy_gpus() -> int:
    cp = cupy_module()
    return int(cp.cuda.runtime.getDeviceCount()) if cp is not None else 0


def gpu_engine(choice: str | None = None) -> str | None:
    """The engine GPU segments run on in this process: ``"faiss"`` (faiss-gpu), ``"cupy"``
    (:mod:`vecgrid.gpu.cupy_engine`), or ``None`` (no usable GPU: everything on the host).

    ``choice`` (default ``VECGRID_QUERYNODE_GPU_ENGINE``, else ``auto``): ``auto`` prefers faiss-gpu, then
    cupy; ``faiss`` or ``cupy`` uses only that one.  ``VECGRID_DISABLE_GPU=1`` hides every GPU
    (useful to compare CPU and GPU runs)."""
    if os.environ.get("VECGRID_DISABLE_GPU", "") not in ("", "0"):
        return None
    choice = (choice or os.environ.get("VECGRID_QUERYNODE_GPU_ENGINE", "") or "auto").strip().lower()
    if choice not in ENGINES:
        raise errors.ParameterInvalid(f"GPU engine {choice!r} is not one of {', '.join(ENGINES)}")
    if choice in ("auto", "faiss") and _faiss_gpus() > 0:
        return "faiss"
    if choice in ("auto", "cupy") and _cupy_gpus() > 0:
        return "cupy"
    return None


def gpu_count(choice: str | None = None) -> int:
    """GPUs the chosen engine (:func:`gpu_engine`) can use in this process; 0 without one."""
    engine = gpu_engine(choice)
    if engine == "faiss":
        return _faiss_gpus()
    if engine == "cupy":
        return _cupy_gpus()
    return 0


#: single-level builds name their level in ``get_compile_options()`` (faiss/utils/utils.cpp)
_COMPILED_LEVELS = ("AVX512_SPR", "AVX512", "AVX2", "SVE", "NEON", "GENERIC")


def simd_level() -> str | None:
    """The instruction set faiss's CPU kernels run with (``AVX2``, ``AVX512``, ``NEON``,
    ``GENERIC`` ...), or ``None`` when it cannot be known.

    faiss ≥ 1.12 dispatches at run time and says where (``SIMDConfig.get_level_name()``);
    before, the loader picked one build per level, whose compile options name it.  A
    dispatching build's compile options list every level it holds ("DD AVX2 AVX512 ..."), not
    the one it uses, so without ``SIMDConfig`` that is unknown, not guessed."""
    try:
        faiss = require_faiss()
    except FaissMissing:
        return None
    config = getattr(faiss, "SIMDConfig", None)
    if config is not None:
        return str(config.get_level_name())
    options = str(faiss.get_compile_options()).split()
    if "DD" in options:
        return None
    return next((level for level in _COMPILED_LEVELS if level in options), None)


def cupy_module() -> Any:
    """cupy when it is installed and sees at least one device, else ``None``."""
    global _cupy, _cupy_checked
    if _cupy_checked:
        return _cupy
    with _lock:
        if not _cupy_checked:
            try:
                cp = importlib.import_module("cupy")
            except ImportError:
                cp = None
            if cp is not None:
                try:
                    _cupy = cp if cp.cuda.runtime.getDeviceCount() > 0 else None
                except cp.cuda.runtime.CUDARuntimeError as e:   # no driver, or no device visible
                    log.info("cupy is installed but sees no GPU (%s)", e)
            _cupy_checked = True
    return _cupy


def _owner(device_id: int) -> concurrent.futures.ThreadPoolExecutor:
    with _lock:
        ex = _owners.get(device_id)
        if ex is None:
            ex = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"vecgrid-gpu{device_id}",
                initializer=_become_owner, initargs=(device_id,))
            _owners[device_id] = ex
        return ex


def _become_owner(device_id: int) -> None:
    _owner_idents[device_id] = threading.get_ident()
    cp = cupy_module()
    if cp is not None:  # cupy's current device is per thread: this thread's arrays live on its GPU
        cp.cuda.Device(device_id).use()


def gpu_resources(device_id: int) -> Any:
    """The process's one ``faiss.StandardGpuResources`` for ``device_id`` (created on first use).

    Call it on the device's owner thread (inside :meth:`Device.run`)."""
    with _lock:
        res = _resources.get(device_id)
        if res is None:
            faiss = require_faiss()
            res = faiss.StandardGpuResources()
            _resources[device_id] = res
        return res


def _gpu_mem_info(device_id: int) -> tuple[int, int]:
    """(free, total) bytes of a GPU: cupy, then NVML."""
    cp = cupy_module()
    if cp is not None:
        with cp.cuda.Device(device_id):
            free, total = cp.cuda.runtime.memGetInfo()
        return int(free), int(total)
    try:
        pynvml = importlib.import_module("pynvml")
    except ImportError:
        return 0, 0   # no counter at all (the caller's documented case)
    try:
        pynvml.nvmlInit()
        info = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(device_id))
    except pynvml.NVMLError as e:
        log.warning("NVML could not read the memory of GPU %d (%s): it has no free-memory counter", device_id, e)
        return 0, 0
    return int(info.free), int(info.total)


def _host_mem_info() -> tuple[int, int]:
    vm = psutil.virtual_memory()
    return int(vm.available), int(vm.total)


def trim_host_heap() -> None:
    """Give freed heap pages back to the OS, so a released segment or a load's transient buffers
    show in the host's free-memory counter: glibc's (``malloc_trim``; a no-op elsewhere) and Arrow's
    memory pool's (mimalloc or jemalloc keep what was freed for reuse: a segment's table read at
    load stayed resident)."""
    arrow = sys.modules.get("pyarrow")   # never imported for this: a process without Arrow has no pool
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def _glibc() -> Any:
    """The process's C library when it is glibc (it has ``malloc_trim`` and ``mallopt``), else None: no
    glibc here (musl, macOS), nothing to trim or set."""
    lib = c_library()
    return lib if lib is not None and hasattr(lib, "malloc_trim") and hasattr(lib, "mallopt") else None


# --- glibc's heap thresholds: a load gives its buffers back, a search keeps faiss's scratch ------------

#: While a load, an index build or save, or a compaction runs (Dask's own setting for its workers,
#: ``MALLOC_TRIM_THRESHOLD_``): every buffer from 128 KiB is mapped apart and unmapped when freed, so the
#: transient buffers (a segment's table, training samples, the index file's bytes) leave nothing behind.
LOAD_MMAP_FROM, LOAD_TRIM_FROM = 128 << 10, 64 << 10
#: Otherwise (searches): faiss's 16 MiB distance block (``exhaustive_L2sqr_blas``, every batch of 32 or
#: more queries through BLAS) stays in the heap between searches instead of being mapped and
#: page-faulted anew by each (about 100 faults at nq = 100); only the pages a search touches are resident.
SEARCH_MMAP_FROM, SEARCH_TRIM_FROM = 32 << 20, 64 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # glibc's mallopt parameters
#: Whether this process serves searches (:func:`serve_heap`) and the transient jobs in flight in it: under
#: ``_heap_lock``, which also orders the threshold changes.
_heap_lock = threading.Lock()
_serving = False
_transient_in_flight = 0


def _set_heap_thresholds(mmap_from: int, trim_from: int) -> None:
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, mmap_from)
        libc.mallopt(_M_TRIM_THRESHOLD, trim_from)


def serve_heap() -> None:
    """Mark this process as one that serves searches (a query node's) and set the search thresholds
    (see above), unless a transient job runs: then the last one to end sets them."""
    global _serving
    with _heap_lock:
        _serving = True
        if not _transient_in_flight:
            _set_heap_thresholds(SEARCH_MMAP_FROM, SEARCH_TRIM_FROM)


@contextlib.contextmanager
def transient_heap() -> Iterator[None]:
    """Run a load, an index build or save, or a compaction, then give its freed memory back
    (:func:`trim_host_heap`).  In a process that serves searches it runs with the load thresholds (see
    above) and the last one in flight sets the search thresholds again; a search meanwhile maps its
    scratch anew.  Elsewhere the thresholds stay as the process started."""
    global _transient_in_flight
    with _heap_lock:
        _transient_in_flight += 1
        if _transient_in_flight == 1 and _serving:
            _set_heap_thresholds(LOAD_MMAP_FROM, LOAD_TRIM_FROM)
    try:
        yield
    finally:
        try:
            trim_host_heap()
        finally:   # a failed trim (Arrow's pool) must not leave the node on the load thresholds for good
            with _heap_lock:
                _transient_in_flight -= 1
                if not _transient_in_flight and _serving:
                    _set_heap_thresholds(SEARCH_MMAP_FROM, SEARCH_TRIM_FROM)


#: ``(pid, psutil.Process)`` of this process, made once: building one reads /proc/<pid>/stat and cost
#: 0.2-0.4 ms of every heartbeat's snapshot on a node's event loop.  Keyed by pid so a forked child
#: makes its own.  Replaced whole (one assignment), so threads may race to make it harmlessly.
_this_process: tuple[int, Any] | None = None


def process_rss() -> int:
    """Resident memory of this process in bytes (for host-memory checks)."""
    global _this_process
    pid = os.getpid()
    cached = _this_process
    if cached is None or cached[0] != pid:
        cached = _this_process = (pid, psutil.Process(pid))
    return int(cached[1].memory_info().rss)


@dataclass(eq=False)
class Device:
    """One place an index can live: a GPU (``kind == "GPU"``) or host memory (``"CPU"``)."""

    kind: str
    device_id: int  # -1 for the host
    budget_bytes: int
    engine: str | None = None  # a GPU's: "faiss" or "cupy" (gpu_engine); None for the host
    _used: dict[Hashable, int] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        return f"cuda:{self.device_id}" if self.kind == GPU else "cpu"

    @property
    def is_gpu(self) -> bool:
        return self.kind == GPU

    # -- execution --------------------------------------------------------------------------
    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` where this device's indexes may be touched and return its result.

        GPU: on the device's owner thread (inline if already there).  Host: inline."""
        if self.kind != GPU or _owner_idents.get(self.device_id) == threading.get_ident():
            return fn(*args, **kwargs)
        return _owner(self.device_id).submit(fn, *args, **kwargs).result()

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> "concurrent.futures.Future[T]":
        """Like :meth:`run` but returns a future (wrap with ``asyncio.wrap_future`` in a loop)."""
        if self.kind == GPU:
            return _owner(self.device_id).submit(self.run, fn, *args, **kwargs)
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - delivered through the future
            fut.set_exception(e)
        return fut

    @property
    def resources(self) -> Any:
        """The shared ``StandardGpuResources`` of this GPU (``None`` for the host)."""
        if self.kind != GPU:
            return None
        return self.run(gpu_resources, self.device_id)

    # -- memory -----------------------------------------------------------------------------
    def memory_info(self) -> tuple[int, int]:
        """(free, total) physical bytes of the device right now (the free-memory counter)."""
        return _gpu_mem_info(self.device_id) if self.kind == GPU else _host_mem_info()

    def free_memory(self) -> int:
        return self.memory_info()[0]

    @property
    def used_bytes(self) -> int:
        with self._lock:
            return sum(self._used.values())

    @property
    def available_bytes(self) -> int:
        return max(0, self.budget_bytes - self.used_bytes)

    def fits(self, nbytes: int) -> bool:
        return nbytes <= self.available_bytes

    def reserve(self, key: Hashable, nbytes: int) -> None:
        """Account ``nbytes`` to ``key``; :class:`errors.MemoryLimitExceeded` if over budget."""
        nbytes = int(nbytes)
        with self._lock:
            used = sum(v for k, v in self._used.items() if k != key)
            if used + nbytes > self.budget_bytes:
                raise errors.MemoryLimitExceeded(
                    f"{self.name} needs {nbytes} bytes for {key!r}, {self.budget_bytes - used} of "
                    f"{self.budget_bytes} budgeted bytes left")
            self._used[key] = nbytes

    def release(self, key: Hashable) -> int:
        """Forget what ``key`` used; returns the bytes given back (0 if unknown)."""
        with self._lock:
            return self._used.pop(key, 0)

    def usage(self) -> dict[Hashable, int]:
        with self._lock:
            return dict(self._used)

    def stats(self) -> dict[str, Any]:
        free, total = self.memory_info()
        return {"device": self.name, "kind": self.kind, "budget_bytes": self.budget_bytes,
                "used_bytes": self.used_bytes, "free_bytes": free, "total_bytes": total,
                "segments": len(self._used)}


class DeviceManager:
    """The devices of this process and where segments go.

    ``use_gpu``: ``None`` (auto: GPUs when present), ``False`` (host only) or ``True``
    (same as auto; there is no way to conjure a GPU).  ``engine``: see :func:`gpu_engine`.
    ``gpu_budget_bytes`` / ``host_budget_bytes`` override the fraction-of-free-memory budgets (tests).
    """

    def __init__(self, memory_fraction: float = 0.8, *, host_memory_fraction: float | None = None,
                 use_gpu: bool | None = None, gpu_budget_bytes: int | None = None,
                 host_budget_bytes: int | None = None, engine: str | None = None) -> None:
        if not 0 < memory_fraction <= 1:
            raise errors.ParameterInvalid(f"memory fraction {memory_fraction} not in (0, 1]")
        self.memory_fraction = memory_fraction
        hf = memory_fraction if host_memory_fraction is None else host_memory_fraction
        free, _ = _host_mem_info()
        self.host = Device(CPU, -1, host_budget_bytes if host_budget_bytes is not None else int(free * hf))
        self.gpus: list[Device] = []
        self.engine = gpu_engine(engine) if use_gpu is not False else None
        if self.engine is not None:
            for i in range(gpu_count(self.engine)):
                gfree, gtotal = _gpu_mem_info(i)
                if gpu_budget_bytes is not None:
                    budget = gpu_budget_bytes
                elif gtotal == 0:  # neither cupy nor NVML: no counter; a failed cudaMalloc sends loads to the host
                    budget = 1 << 62
                else:
                    budget = int(gfree * memory_fraction)
                self.gpus.append(Device(GPU, i, budget, engine=self.engine))

    @property
    def devices(self) -> list[Device]:
        return [*self.gpus, self.host]

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus)

    def place(self, key: Hashable, nbytes: int, *, prefer_gpu: bool = True,
              gpu_capable: bool = True) -> Device:
        """Reserve ``nbytes`` for ``key`` on the GPU with most room left when it fits
        (and ``prefer_gpu`` and ``gpu_capable``), else in host memory.

        Raises :class:`errors.MemoryLimitExceeded` when the host budget is exhausted too."""
        if prefer_gpu and gpu_capable:
            for dev in sorted(self.gpus, key=lambda d: -d.available_bytes):
                if dev.fits(nbytes):
                    try:
                        dev.reserve(key, nbytes)
                        return dev
                    except errors.MemoryLimitExceeded:
                        continue
        self.host.reserve(key, nbytes)
        return self.host

    def device(self, name: str) -> Device:
        for d in self.devices:
            if d.name == name:
                return d
        raise errors.ParameterInvalid(f"no device {name!r}")

    def stats(self) -> list[dict[str, Any]]:
        return [d.stats() for d in self.devices]


_default: DeviceManager | None = None


def default_manager() -> DeviceManager:
    """The process-wide manager (created on first use with the default fraction)."""
    global _default
    with _lock:
        if _default is None:
            frac = float(os.environ.get("VECGRID_QUERYNODE_GPU_MEMORY_FRACTION", "0.8") or 0.8)
            _default = DeviceManager(frac)
        return _default
