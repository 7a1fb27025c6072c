"""Build faiss indexes under Milvus's index names and parameters; (de)serialise index files.

Milvus index type → faiss (``index_factory`` string, CPU form):

============== ===================================== =============================================
Milvus         faiss                                  build params (default)
============== ===================================== =============================================
FLAT           ``Flat``                               —
IVF_FLAT       ``IVF{nlist},Flat``                    nlist (128)
IVF_SQ8        ``IVF{nlist},SQ8``                     nlist (128)
IVF_PQ         ``IVF{nlist},PQ{m}x{nbits}``           nlist (128), m (largest divisor of dim ≤ dim/4), nbits (8)
HNSW           ``HNSW{M},Flat`` (CPU only)            M (16), efConstruction (64)
GPU_BRUTE_FORCE GpuIndexFlat / CPU: FLAT              —
GPU_IVF_FLAT   GpuIndexIVFFlat / CPU: IVF_FLAT        nlist (128)
GPU_IVF_PQ     GpuIndexIVFPQ / CPU: IVF_PQ            nlist (128), m, nbits (8)
GPU_CAGRA      GpuIndexCagra (stored as IndexHNSWCagra) intermediate_graph_degree (128), graph_degree (64)
               / CPU: HNSW with M = graph_degree/2, efConstruction = intermediate_graph_degree
============== ===================================== =============================================

Metrics: ``L2`` (squared Euclidean, smaller is better — as Milvus reports it), ``IP``
and ``COSINE`` (vectors L2-normalised at build and query time, then inner product;
larger is better).

Without a GPU (or with faiss-cpu) a ``GPU_*`` type is built as its CPU neighbour and
the header's ``fallback`` says so; IVF types on a segment too small to train
(fewer rows than nlist, or than 2**nbits for PQ) are built as FLAT, likewise noted.
The IVF and flat types are trained/added on the GPU when one is present (through
the device's owner thread) and always stored in their CPU form, so an index file
loads anywhere.

Index file layout: ``b"VGIX\\x01"``, a little-endian uint32 header length, a UTF-8
JSON header (index_type, built_type, metric, params, dim, num_rows, fallback, ...),
then the bytes of ``faiss.serialize_index``.  :func:`read_index_file` also accepts a
bare faiss file (no header) and infers what it can.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from vecgrid import errors
from vecgrid.gpu import require_faiss

__all__ = [
    "INDEX_TYPES", "METRICS", "GPU_TYPES", "CPU_FALLBACK", "IndexSpec", "BuiltIndex",
    "parse_index_params", "normalize_build_params", "factory_string", "build_index",
    "build_index_file", "serialize_index", "index_file_size", "read_index_file", "faiss_metric", "normalize_rows",
    "TRAINED_SHAREABLE", "quantizer_fingerprint",
]

MAGIC = b"VGIX\x01"
FORMAT_VERSION = 1

CPU_TYPES = ("FLAT", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "HNSW")
GPU_TYPES = ("GPU_CAGRA", "GPU_IVF_FLAT", "GPU_IVF_PQ", "GPU_BRUTE_FORCE")
INDEX_TYPES = CPU_TYPES + GPU_TYPES
# the nearest CPU type of each GPU type (used without a GPU)
CPU_FALLBACK = {"GPU_CAGRA": "HNSW", "GPU_IVF_FLAT": "IVF_FLAT", "GPU_IVF_PQ": "IVF_PQ",
                "GPU_BRUTE_FORCE": "FLAT"}
METRICS = ("L2", "IP", "COSINE")
# index types whose trained form can be moved to a GPU with index_cpu_to_gpu
GPU_MOVABLE = ("FLAT", "IVF_FLAT", "IVF_SQ8", "IVF_PQ")
# index types (as built) whose trained, empty form one build can lend later builds of the same index
TRAINED_SHAREABLE = ("IVF_FLAT", "IVF_SQ8", "IVF_PQ")

DEFAULT_NLIST = 128
DEFAULT_HNSW_M = 16
DEFAULT_EF_CONSTRUCTION = 64
DEFAULT_NBITS = 8
DEFAULT_CAGRA_INTERMEDIATE = 128
DEFAULT_CAGRA_GRAPH = 64

# Milvus/knowhere ranges of the integer build parameters
_RANGES = {
    "nlist": (1, 65536), "m": (1, 65536), "nbits": (1, 16), "M": (2, 2048),
    "efConstruction": (1, 2147483647), "intermediate_graph_degree": (1, 65536),
    "graph_degree": (1, 65536),
}


def faiss_metric(metric: str) -> int:
    faiss = require_faiss()
    return faiss.METRIC_L2 if metric == "L2" else faiss.METRIC_INNER_PRODUCT


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """A float32 copy of ``x`` with unit-length rows (zero rows stay zero), as COSINE needs."""
    x = np.array(x, dtype=np.float32, order="C", copy=True)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.divide(x, norms, out=x, where=norms > 0)
    return x


def _check_metric(metric: str) -> str:
    m = (metric or "L2").upper()
    if m not in METRICS:
        raise errors.ParameterInvalid(f"metric type {metric!r} not supported, supported: {list(METRICS)}")
    return m


def _check_type(index_type: str) -> str:
    t = (index_type or "FLAT").upper()
    if t == "AUTOINDEX":
        return "HNSW"
    if t not in INDEX_TYPES:
        raise errors.IndexNotSupported(f"index type {index_type!r} is not supported by vecgrid; "
                                       f"supported: {', '.join(INDEX_TYPES)}")
    return t


def _int_param(params: Mapping[str, Any], key: str, default: int | None) -> int | None:
    if key not in params or params[key] in (None, ""):
        return default
    try:
        v = int(str(params[key]).strip())
    except ValueError as e:
        raise errors.ParameterInvalid(f"param '{key}' ({params[key]!r}) should be an integer") from e
    lo, hi = _RANGES.get(key, (1, 2**31 - 1))
    if not lo <= v <= hi:
        raise errors.ParameterInvalid(f"param '{key}' ({v}) should be in range [{lo}, {hi}]")
    return v


def _default_m(dim: int) -> int:
    for m in range(max(1, dim // 4), 0, -1):
        if dim % m == 0:
            return m
    return 1


def normalize_build_params(index_type: str, params: Mapping[str, Any] | None, dim: int) -> dict[str, int]:
    """The build parameters of ``index_type`` with Milvus's names, checked, defaults filled in."""
    t = _check_type(index_type)
    p = dict(params or {})
    out: dict[str, int] = {}
    if t in ("IVF_FLAT", "IVF_SQ8", "IVF_PQ", "GPU_IVF_FLAT", "GPU_IVF_PQ"):
        out["nlist"] = _int_param(p, "nlist", DEFAULT_NLIST)
    if t in ("IVF_PQ", "GPU_IVF_PQ"):
        m = _int_param(p, "m", _default_m(dim))
        if dim % m:
            raise errors.ParameterInvalid(f"dimension {dim} must be divisible by m ({m})")
        out["m"] = m
        out["nbits"] = _int_param(p, "nbits", DEFAULT_NBITS)
    if t == "HNSW":
        out["M"] = _int_param(p, "M", DEFAULT_HNSW_M)
        out["efConstruction"] = _int_param(p, "efConstruction", DEFAULT_EF_CONSTRUCTION)
    if t == "GPU_CAGRA":
        out["intermediate_graph_degree"] = _int_param(p, "intermediate_graph_degree",
                                                      DEFAULT_CAGRA_INTERMEDIATE)
        out["graph_degree"] = _int_param(p, "graph_degree", DEFAULT_CAGRA_GRAPH)
        if out["graph_degree"] > out["intermediate_graph_degree"]:
            raise errors.ParameterInvalid(
                f"graph_degree ({out['graph_degree']}) should be <= intermediate_graph_degree "
                f"({out['intermediate_graph_degree']})")
    return out


def factory_string(index_type: str, params: Mapping[str, int]) -> str:
    """The faiss ``index_factory`` string of a CPU index type with normalised params."""
    t = CPU_FALLBACK.get(index_type, index_type)
    if t == "FLAT":
        return "Flat"
    if t == "IVF_FLAT":
        return f"IVF{params['nlist']},Flat"
    if t == "IVF_SQ8":
        return f"IVF{params['nlist']},SQ8"
    if t == "IVF_PQ":
        return f"IVF{params['nlist']},PQ{params['m']}x{params['nbits']}"
    if t == "HNSW":
        return f"HNSW{params['M']},Flat"
    raise errors.IndexNotSupported(f"no faiss factory for {index_type}")


def parse_index_params(index_params: Mapping[str, Any] | Iterable[Any]) -> tuple[str, str, dict[str, Any]]:
    """(index_type, metric, params) from Milvus index params.

    Accepts a mapping or ``common.KeyValuePair``\\ s as carried in ``index.IndexInfo``:
    ``index_type``, ``metric_type`` and the build params either flat or JSON-encoded
    under ``params``."""
    if isinstance(index_params, Mapping):
        kv = {str(k): v for k, v in index_params.items()}
    else:
        kv = {p.key: p.value for p in index_params}
    params: dict[str, Any] = {}
    if "params" in kv:
        raw = kv.pop("params")
        if isinstance(raw, str) and raw.strip():
            try:
                params.update(json.loads(raw))
            except json.JSONDecodeError as e:
                raise errors.ParameterInvalid(f"index params {raw!r} are not JSON") from e
        elif isinstance(raw, Mapping):
            params.update(raw)
    index_type = str(kv.pop("index_type", "FLAT"))
    metric = str(kv.pop("metric_type", "L2"))
    for k, v in kv.items():
        params.setdefault(k, v)
    return _check_type(index_type), _check_metric(metric), params


@dataclass
class IndexSpec:
    index_type: str  # the Milvus type asked for
    metric: str
    dim: int
    params: dict[str, int] = field(default_factory=dict)


@dataclass
class BuiltIndex:
    """A built index in its CPU form plus the header that goes into the index file; ``trained``: the
    index as trained, before any row was added, when this build trained a shareable type (see
    :func:`build_index`'s ``trained``)."""

    index: Any
    header: dict[str, Any]
    trained: Any = None

    def to_bytes(self) -> bytes:
        return serialize_index(self.index, self.header)

    @functools.cached_property
    def file_size(self) -> int:
        """:func:`index_file_size` of this index, counted once (the loader reports it, the engine budgets it)."""
        return index_file_size(self.index, self.header)

    @property
    def info(self) -> dict[str, Any]:
        return dict(self.header)


def _gpu_device(manager: Any) -> Any:
    if manager is None:
        from vecgrid.gpu.device import default_manager

        manager = default_manager()
    # builds run on a GPU with faiss-gpu only; the cupy engine searches what faiss built on the host
    return manager.gpus[0] if manager.gpus and manager.gpus[0].engine == "faiss" else None


def build_index(vectors: np.ndarray, index_type: str = "FLAT", metric: str = "L2",
                params: Mapping[str, Any] | None = None, *, manager: Any = None,
                use_gpu: bool | None = None, trained: Any = None) -> BuiltIndex:
    """Build an index of ``index_type`` over ``vectors`` (row i gets faiss id i).

    ``use_gpu``: ``None`` = on a GPU when one is present, ``False`` = host only.  ``trained``: a
    trained, empty index of the same type, dimension, metric and parameters (an earlier build's
    ``BuiltIndex.trained``): the build adds the rows to a copy of it instead of training; one that
    does not match is not used (the build trains)."""
    faiss = require_faiss()
    t = _check_type(index_type)
    metric = _check_metric(metric)
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    if x.ndim != 2:
        raise errors.ParameterInvalid(f"vectors must be 2-D, got shape {x.shape}")
    n, dim = x.shape
    if dim <= 0:
        raise errors.ParameterInvalid("vector dimension must be positive")
    p = normalize_build_params(t, params, dim)
    if metric == "COSINE":
        x = normalize_rows(x)
    fm = faiss_metric(metric)
    gpu = _gpu_device(manager) if use_gpu is not False else None
    fallback: str | None = None

    built = CPU_FALLBACK.get(t, t)
    if t in GPU_TYPES and gpu is None:
        fallback = f"{t} needs a GPU: built as {built}"
    if built == "IVF_PQ" and n < max(p["nlist"], 2 ** p["nbits"]) or \
            built in ("IVF_FLAT", "IVF_SQ8") and n < p["nlist"]:
        fallback = f"too few rows ({n}) to train {t}: built as FLAT"
        built = "FLAT"
    header: dict[str, Any] = {
        "format": FORMAT_VERSION, "index_type": t, "built_type": built, "metric": metric,
        "params": p, "dim": dim, "num_rows": n, "fallback": fallback, "cagra": False,
        "faiss_version": getattr(faiss, "__version__", ""),
    }

    cagra_error = ""
    if t == "GPU_CAGRA" and gpu is not None and n > 0 and hasattr(faiss, "GpuIndexCagra"):
        try:
            index = gpu.run(_build_cagra_on_gpu, faiss, gpu, x, fm, p)
        except Exception as e:  # e.g. a metric this CAGRA build lacks
            cagra_error = f"GPU_CAGRA build failed ({e}): built as HNSW"
        else:
            header.update(built_type="GPU_CAGRA", cagra=True, built_on=gpu.name)
            return BuiltIndex(index, header)
    if t == "GPU_CAGRA" and built == "HNSW":
        if gpu is not None and fallback is None:
            header["fallback"] = cagra_error or "this faiss has no GpuIndexCagra: built as HNSW"
        hp = {"M": max(2, p["graph_degree"] // 2), "efConstruction": p["intermediate_graph_degree"]}
        header["hnsw_params"] = hp
    else:
        hp = p

    fac = factory_string(built, hp if built == "HNSW" else p)
    header["factory"] = fac
    index = faiss.index_factory(dim, fac, fm)
    if trained is not None and built in TRAINED_SHAREABLE and n > 0 and _same_untrained_layout(trained, index):
        index = faiss.clone_index(trained)
        header["trained_by"] = "template"
    if built == "HNSW":
        index.hnsw.efConstruction = hp["efConstruction"]
    if built == "IVF_PQ":
        index.do_polysemous_training = False  # knowhere does not; it costs minutes
    on_gpu = None
    share = built in TRAINED_SHAREABLE and not index.is_trained
    if gpu is not None and built in GPU_MOVABLE and n > 0:
        try:
            on_gpu = gpu.run(_train_add_on_gpu, faiss, gpu, index, x, share)
        except Exception as e:  # a layout the GPU cannot hold (e.g. PQ with nbits != 8)
            header["gpu_build_error"] = str(e)
    trained_copy = None
    if on_gpu is not None:
        index, trained_copy = on_gpu
        header["built_on"] = gpu.name
    else:
        if not index.is_trained:
            index.train(x)
            trained_copy = faiss.clone_index(index) if share else None   # empty: the quantizer's size
        if n:
            index.add(x)
        header["built_on"] = "cpu"
    if trained_copy is not None:
        header["trained_by"] = "this build"
    return BuiltIndex(index, header, trained_copy)


def _same_untrained_layout(trained: Any, fresh: Any) -> bool:
    """Whether ``trained`` is a trained, empty index of the layout ``fresh`` (from the factory) has."""
    faiss = require_faiss()
    try:
        a, b = faiss.extract_index_ivf(trained), faiss.extract_index_ivf(fresh)
    except RuntimeError:   # not an IVF index
        return False
    return (type(trained) is type(fresh) and a.is_trained and a.ntotal == 0 and a.d == b.d and a.nlist == b.nlist
            and a.metric_type == b.metric_type and a.code_size == b.code_size)


def quantizer_fingerprint(index: Any) -> str | None:
    """What identifies an IVF index's coarse quantizer (its centroids, metric and shape): indexes with
    the same fingerprint assign a query to the same lists; None for other indexes."""
    faiss = require_faiss()
    try:
        ivf = faiss.extract_index_ivf(index)
    except RuntimeError:
        return None
    quantizer = faiss.downcast_index(ivf.quantizer)
    if not isinstance(quantizer, faiss.IndexFlat) or quantizer.ntotal != ivf.nlist:
        return None
    h = hashlib.blake2b(struct.pack("<qqq", ivf.nlist, ivf.d, ivf.metric_type), digest_size=16)
    h.update(memoryview(faiss.vector_to_array(quantizer.codes)))
    return h.hexdigest()


def _train_add_on_gpu(faiss: Any, gpu: Any, index: Any, x: np.ndarray, share: bool) -> tuple[Any, Any]:
    """The index trained and filled on the GPU, in CPU form; and its trained, empty CPU form when
    ``share`` and this call trained it."""
    from vecgrid.gpu.device import gpu_resources

    res = gpu_resources(gpu.device_id)
    g = faiss.index_cpu_to_gpu(res, gpu.device_id, index)
    trained = None
    if not g.is_trained:
        g.train(x)
        trained = faiss.index_gpu_to_cpu(g) if share else None
    g.add(x)
    return faiss.index_gpu_to_cpu(g), trained


def _build_cagra_on_gpu(faiss: Any, gpu: Any, x: np.ndarray, fm: int, p: Mapping[str, int]) -> Any:
    from vecgrid.gpu.device import gpu_resources

    res = gpu_resources(gpu.device_id)
    cfg = faiss.GpuIndexCagraConfig()
    cfg.device = gpu.device_id
    cfg.intermediate_graph_degree = p["intermediate_graph_degree"]
    cfg.graph_degree = p["graph_degree"]
    g = faiss.GpuIndexCagra(res, x.shape[1], fm, cfg)
    g.train(x)
    cpu = faiss.IndexHNSWCagra()
    g.copyTo(cpu)
    return cpu


def build_index_file(vectors: np.ndarray, index_type: str = "FLAT", metric: str = "L2",
                     params: Mapping[str, Any] | None = None, **kw: Any) -> bytes:
    """Build and serialise in one go: the bytes of the segment's index file."""
    return build_index(vectors, index_type, metric, params, **kw).to_bytes()


def serialize_index(index: Any, header: Mapping[str, Any], *, checksum: bool = False) -> bytes:
    """An index file of ``index``; ``checksum``: the header carries the body's BLAKE2b, which
    :func:`read_index_file` verifies (for files read without a recorded checksum)."""
    faiss = require_faiss()
    body = faiss.serialize_index(index)
    header = dict(header)
    if checksum:
        header["body_blake2b"] = hashlib.blake2b(memoryview(body).cast("B")).hexdigest()
    head = _file_head(header)
    out = bytearray(len(head) + body.nbytes)
    out[:len(head)] = head
    out[len(head):] = memoryview(body).cast("B")
    return bytes(out)


def _file_head(header: Mapping[str, Any]) -> bytes:
    """What an index file holds before faiss's bytes: the magic, the JSON header's length and the header."""
    head = json.dumps(dict(header), sort_keys=True).encode()
    return MAGIC + struct.pack("<I", len(head)) + head


def index_file_size(index: Any, header: Mapping[str, Any]) -> int:
    """The size of :func:`serialize_index`'s file of ``index`` (no checksum), without writing it: faiss's
    writer walks the index into a byte counter (0.05 s for a 1M-row IVF_FLAT, against 2.4 s to
    serialize it)."""
    faiss = require_faiss()
    written = 0

    def count(data: bytes) -> int:
        nonlocal written
        written += len(data)
        return len(data)

    writer = faiss.PyCallbackIOWriter(count, 1 << 22)
    faiss.write_index(index, writer)
    del writer   # flushes its last buffer
    return len(_file_head(header)) + written


def _infer_header(index: Any) -> dict[str, Any]:
    faiss = require_faiss()
    name = type(index).__name__
    if "HNSW" in name:
        t = "HNSW"
    elif "IVFPQ" in name:
        t = "IVF_PQ"
    elif "IVFScalarQuantizer" in name:
        t = "IVF_SQ8"
    elif "IVF" in name:
        t = "IVF_FLAT"
    else:
        t = "FLAT"
    params: dict[str, int] = {}
    if t.startswith("IVF"):
        ivf = faiss.extract_index_ivf(index)
        params["nlist"] = int(ivf.nlist)
    metric = "L2" if index.metric_type == faiss.METRIC_L2 else "IP"
    return {"format": 0, "index_type": t, "built_type": t, "metric": metric, "params": params,
            "dim": int(index.d), "num_rows": int(index.ntotal), "fallback": None,
            "cagra": "Cagra" in name}


def read_index_file(data: bytes | bytearray | memoryview | str | os.PathLike[str]) -> tuple[Any, dict[str, Any]]:
    """Read an index file (bytes or a path) into ``(CPU faiss index, header)``."""
    faiss = require_faiss()
    if isinstance(data, (str, os.PathLike)):
        with open(data, "rb") as f:
            head = _read_header(f.read(len(MAGIC)), f)
            if head is None:
                f.seek(0)
            index = faiss.read_index(faiss.PyCallbackIOReader(f.read, 1 << 20))
    else:
        mv = memoryview(data).cast("B")
        head = None
        offset = 0
        if bytes(mv[:len(MAGIC)]) == MAGIC:
            (hlen,) = struct.unpack_from("<I", mv, len(MAGIC))
            offset = len(MAGIC) + 4 + hlen
            head = json.loads(bytes(mv[len(MAGIC) + 4:offset]).decode())
        body = np.frombuffer(mv, dtype=np.uint8, offset=offset)
        if head is not None and "body_blake2b" in head and \
                hashlib.blake2b(memoryview(body)).hexdigest() != head["body_blake2b"]:
            raise errors.ParameterInvalid("the index file's body does not match the checksum in its header")
        try:
            index = faiss.deserialize_index(body)
        except RuntimeError as e:
            raise errors.ParameterInvalid(f"not a faiss index file: {e}") from e
    if head is None:
        head = _infer_header(index)
    return index, head


def _read_header(magic: bytes, f: Any) -> dict[str, Any] | None:
    if magic != MAGIC:
        return None
    (hlen,) = struct.unpack("<I", f.read(4))
    return json.loads(f.read(hlen).decode())
