"""Vector index types, metrics and build parameters the catalog accepts.

Follows Milvus 2.4's ``indexparamcheck`` ranges for the index types vecgrid builds (with faiss, on GPU
or CPU). Unknown index type -> :class:`errors.IndexNotSupported` (701); unknown metric, a parameter
out of range or not an integer -> :class:`errors.ParameterInvalid` (1100). Parameters that are not
checked here are kept as given (strings), so the builder sees everything the user passed.

Defaults filled in when a parameter is missing (knowhere's defaults): ``nlist=128``, ``nbits=8``,
``M=30``, ``efConstruction=360``, ``intermediate_graph_degree=128``, ``graph_degree=64``.
``AUTOINDEX`` resolves, as Milvus's does, to ``HNSW`` with ``M=18, efConstruction=240``; the user's
own parameters are kept in ``IndexInfo.user_index_params`` and ``is_auto_index`` is set. A missing
metric means ``COSINE`` (Milvus 2.4's default for float vectors).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from vecgrid import errors

INDEX_TYPES: Final = (
    "FLAT", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "HNSW",
    "GPU_CAGRA", "GPU_IVF_FLAT", "GPU_IVF_PQ", "GPU_BRUTE_FORCE", "AUTOINDEX",
)
METRIC_TYPES: Final = ("L2", "IP", "COSINE")
DEFAULT_METRIC: Final = "COSINE"
AUTOINDEX_TYPE: Final = "HNSW"
AUTOINDEX_PARAMS: Final = {"M": "18", "efConstruction": "240"}

INDEX_TYPE_KEY: Final = "index_type"
METRIC_TYPE_KEY: Final = "metric_type"

_MAX_INT32: Final = (1 << 31) - 1
_IVF = ("IVF_FLAT", "IVF_SQ8", "IVF_PQ", "GPU_IVF_FLAT", "GPU_IVF_PQ")
_DEFAULTS: Final = {
    "IVF_FLAT": {"nlist": "128"},
    "IVF_SQ8": {"nlist": "128"},
    "IVF_PQ": {"nlist": "128", "nbits": "8"},
    "GPU_IVF_FLAT": {"nlist": "128"},
    "GPU_IVF_PQ": {"nlist": "128", "nbits": "8"},
    "HNSW": {"M": "30", "efConstruction": "360"},
    "GPU_CAGRA": {"intermediate_graph_degree": "128", "graph_degree": "64"},
}


@dataclass(frozen=True)
class IndexSpec:
    """A validated index definition: what to build, and what the user asked for."""

    index_type: str  # resolved (never AUTOINDEX)
    metric_type: str
    build_params: dict[str, str]  # without index_type / metric_type
    user_params: dict[str, str]  # as given, incl. index_type / metric_type
    is_auto_index: bool

    def index_params(self) -> dict[str, str]:
        """Flattened ``index_type``, ``metric_type`` then the build params (IndexInfo.index_params)."""
        return {INDEX_TYPE_KEY: self.index_type, METRIC_TYPE_KEY: self.metric_type, **self.build_params}


def _as_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def _flatten(params: Mapping[str, object] | None) -> dict[str, str]:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise errors.ParameterInvalid(f"index params must be a dict, got {type(params).__name__}")
    out: dict[str, str] = {}
    for key, value in params.items():
        if not isinstance(key, str) or not key:
            raise errors.ParameterInvalid(f"index param keys must be non-empty strings, got {key!r}")
        if key == "params":
            # pymilvus style: {"index_type": ..., "metric_type": ..., "params": {"nlist": 128}} or a JSON string
            nested = value
            if isinstance(nested, str):
                try:
                    nested = json.loads(nested) if nested.strip() else {}
                except ValueError:
                    raise errors.ParameterInvalid(f"index param 'params' is not valid JSON: {value!r}") from None
            if not isinstance(nested, Mapping):
                raise errors.ParameterInvalid(f"index param 'params' must be an object, got {value!r}")
            out.update(_flatten(nested))
            continue
        out[key] = _as_str(value)
    return out


def _int(params: dict[str, str], key: str, lo: int, hi: int) -> int | None:
    raw = params.get(key)
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise errors.ParameterInvalid(f"index param {key}={raw!r} is not an integer") from None
    if not lo <= value <= hi:
        raise errors.ParameterInvalid(f"param '{key}' ({value}) should be in range [{lo}, {hi}]")
    params[key] = str(value)
    return value


def _choice(value: object, choices: tuple[str, ...], what: str, exc: type[errors.MilvusError]) -> str:
    if not isinstance(value, str):
        raise errors.ParameterInvalid(f"{what} must be a string, got {value!r}")
    upper = value.strip().upper()
    if upper not in choices:
        if exc is errors.IndexNotSupported:
            raise errors.IndexNotSupported(f"supported: {list(choices)}", index_type=value)
        raise exc(f"{what} {value!r} not found or not supported, supported: {list(choices)}")
    return upper


def validate_index(index_type: object, metric_type: object, params: Mapping[str, object] | None, dim: int) -> IndexSpec:
    """Validate one vector index definition for a FloatVector field of dimension ``dim``."""
    flat = _flatten(params)
    given_type = flat.pop(INDEX_TYPE_KEY, None)
    given_metric = flat.pop(METRIC_TYPE_KEY, None)
    index_type = _choice(index_type, INDEX_TYPES, "index type", errors.IndexNotSupported)
    if given_type is not None and given_type.strip().upper() != index_type:
        raise errors.ParameterInvalid(f"index_type {given_type!r} in params conflicts with index type {index_type!r}")
    if metric_type in (None, ""):
        metric_type = given_metric if given_metric else DEFAULT_METRIC
    metric = _choice(metric_type, METRIC_TYPES, "metric type", errors.ParameterInvalid)
    if given_metric and given_metric.strip().upper() != metric:
        raise errors.ParameterInvalid(f"metric_type {given_metric!r} in params conflicts with metric type {metric!r}")

    user = {INDEX_TYPE_KEY: index_type, METRIC_TYPE_KEY: metric, **flat}
    is_auto = index_type == "AUTOINDEX"
    resolved = AUTOINDEX_TYPE if is_auto else index_type
    build = dict(flat)
    if is_auto:
        # Milvus ignores the user's build params for AUTOINDEX and uses its own.
        build = {k: v for k, v in build.items() if k not in ("M", "efConstruction")}
        build.update(AUTOINDEX_PARAMS)
    for key, value in _DEFAULTS.get(resolved, {}).items():
        build.setdefault(key, value)

    if resolved in _IVF:
        _int(build, "nlist", 1, 65536)
    if resolved in ("IVF_PQ", "GPU_IVF_PQ"):
        m = _int(build, "m", 1, dim)
        if m is None and resolved == "IVF_PQ":
            raise errors.ParameterInvalid("param 'm' is required for IVF_PQ (a divisor of the dimension)")
        if m is not None and dim % m != 0:
            raise errors.ParameterInvalid(f"dimension must be able to be divided by `m`, dimension: {dim}, m: {m}")
        _int(build, "nbits", 1, 16)
    if resolved == "HNSW":
        _int(build, "M", 2, 2048)
        _int(build, "efConstruction", 1, _MAX_INT32)
    if resolved == "GPU_CAGRA":
        inter = _int(build, "intermediate_graph_degree", 1, 65536)
        graph = _int(build, "graph_degree", 1, 65536)
        if inter is not None and graph is not None and graph > inter:
            raise errors.ParameterInvalid(
                f"graph_degree ({graph}) should be less than or equal to intermediate_graph_degree ({inter})"
            )
        algo = build.get("build_algo")
        if algo is not None:
            if algo.strip().upper() not in ("IVF_PQ", "NN_DESCENT"):
                raise errors.ParameterInvalid(f"build_algo {algo!r} should be IVF_PQ or NN_DESCENT")
            build["build_algo"] = algo.strip().upper()
    cache = build.get("cache_dataset_on_device")
    if cache is not None:
        if cache.strip().lower() not in ("true", "false"):
            raise errors.ParameterInvalid(f"cache_dataset_on_device should be true or false, got {cache!r}")
        build["cache_dataset_on_device"] = cache.strip().lower()
    return IndexSpec(resolved, metric, build, user, is_auto)
