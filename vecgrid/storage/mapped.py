"""Arrays kept on local disk and mapped into memory, for data a node needs now and then, not per search.

:func:`disk_backed` writes an array to a file in the temp dir, maps it read-only and unlinks the file
at once: the kernel pages it in when it is read and drops those pages under memory pressure, so it is
not the process's anonymous memory, and it disappears with the last mapping, a crashed process's
included (nothing to clean up).  A query node keeps the raw vectors of a lossy index (IVF_SQ8, IVF_PQ)
this way: only output fields read them (Milvus reads them from storage when asked).
"""

from __future__ import annotations

import mmap
import os
import tempfile

import numpy as np


def disk_backed(array: np.ndarray, directory: str | None = None) -> np.ndarray:
    """A read-only copy of ``array`` in an unlinked, memory-mapped file of ``directory`` (the temp dir)."""
    fd, path = tempfile.mkstemp(prefix="vecgrid-mapped-", suffix=".npy", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, np.ascontiguousarray(array), allow_pickle=False)
        return np.load(path, mmap_mode="r")
    finally:
        os.unlink(path)


def is_mapped(array: np.ndarray) -> bool:
    """Whether ``array`` (or the array it is a view of) lives in a file mapping, as :func:`disk_backed`'s
    arrays do: memory the kernel may drop, not the process's own."""
    base: object = array
    while isinstance(base, np.ndarray):
        if isinstance(base, np.memmap):
            return True
        base = base.base
    return isinstance(base, mmap.mmap)
