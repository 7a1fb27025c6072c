"""Arrow's memory pool in vecgrid's server processes: jemalloc, whose freed pages go back to the OS.

A query node reads each segment's Parquet file through Arrow (hundreds of MB a segment), keeps the
keys and timestamps it needs and drops the rest.  pyarrow's default pool on Linux, mimalloc, kept
pages after that: loading two 1M-row IVF_SQ8 segments (``bench/scale.py --quick --rows 2000000``),
the node had 67 MB resident in mimalloc's arenas for 15 MB of live Arrow buffers, although
:func:`vecgrid.gpu.device.trim_host_heap` calls ``release_unused`` after every load (from the loading
thread; the pages were most likely freed into the heaps of Arrow's reader threads).  The loaded node
held 529-531 MB with mimalloc and 481 MB with the C library's allocator; with the segments'
timestamps then held as one value (:mod:`vecgrid.gpu.rows`), 463-469 MB with the C library's
allocator but loading in 17.1-18.1 s instead of 15.1-16.1 (it maps every large buffer afresh), and
464 MB with jemalloc, loading in 15.1-16.1 s (two runs each).  jemalloc gives freed pages back as they
decay, not at once: measured apart, a process that read a 1M-row file
twice in a row still held up to 1.3 GB of the freed tables a few seconds later, so a deployment short
of memory during loads may prefer ``ARROW_DEFAULT_MEMORY_POOL=system``.

Arrow reads ``ARROW_DEFAULT_MEMORY_POOL`` once, when pyarrow is imported, so :func:`use_jemalloc`
runs before that (the CLI's server commands call it first thing); the processes they spawn inherit
it.  A user's own setting is kept.  pyarrow's Linux wheels have jemalloc; elsewhere (where a wheel
may lack it and Arrow would warn about the setting) Arrow's default is left.
"""

from __future__ import annotations

import os
import sys
from typing import MutableMapping

POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"
POOL = "jemalloc"


def use_jemalloc(environ: MutableMapping[str, str] = os.environ, platform: str = sys.platform) -> bool:
    """Name jemalloc for Arrow unless the user named a pool.  True when the setting now names it;
    False when the user chose another pool, the platform is not Linux, or pyarrow is already
    imported (too late: it has picked its pool, and the setting is left alone)."""
    if POOL_VARIABLE in environ:
        return environ[POOL_VARIABLE] == POOL
    if not platform.startswith("linux") or "pyarrow" in sys.modules:
        return False
    environ[POOL_VARIABLE] = POOL
    return True
