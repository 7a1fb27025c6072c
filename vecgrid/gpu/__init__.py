"""Search engine: device discovery and faiss indexes on GPU or CPU.

faiss comes from one of two extras that provide the same module: ``vecgrid[cpu]``
(faiss-cpu) or ``vecgrid[gpu]`` (faiss-gpu, cupy).  Nothing here imports faiss at
package import time, so the coordinator and the tooling run without it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

_INSTALL_HINT = (
    "faiss is not installed: install vecgrid with the 'cpu' extra (pip install 'vecgrid[cpu]') "
    "or, on a CUDA machine, the 'gpu' extra (pip install 'vecgrid[gpu]') — never both"
)


class FaissMissing(ImportError):
    """faiss is needed but neither faiss-cpu nor faiss-gpu is installed."""


def require_faiss() -> ModuleType:
    """Import faiss or raise :class:`FaissMissing` naming the extra to install."""
    try:
        return importlib.import_module("faiss")
    except ImportError as e:
        raise FaissMissing(_INSTALL_HINT) from e


def faiss_available() -> bool:
    try:
        require_faiss()
    except FaissMissing:
        return False
    return True
