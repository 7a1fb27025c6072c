"""Arrow's memory pool in vecgrid's server processes: the C library's allocator.

A query node reads each segment's Parquet file through Arrow (hundreds of MB a segment), keeps the
keys and timestamps it needs and drops the rest.  pyarrow's default pool on Linux, mimalloc, kept
pages after that: loading two 1M-row IVF_SQ8 segments (``bench/scale.py --quick --rows 2000000``),
the node had 67 MB resident in mimalloc's arenas for 15 MB of live Arrow buffers, although
:func:`vecgrid.gpu.device.trim_host_heap` calls ``release_unused`` after every load (from the loading
thread; the pages were most likely freed into the heaps of Arrow's reader threads).  The C library's
allocator maps a buffer that large on its own and unmaps it when it is freed, so a load's table goes
back to the OS when the load drops it.

Measured (``bench/scale.py``, IVF_SQ8, the loaded node once the memory settled; all with the segments'
timestamps held as one value, :mod:`vecgrid.gpu.rows`):

* 2M rows: mimalloc 511 MB (load 13.1 s, one run); jemalloc 464 MB (15.1-16.1 s); the C library's
  463-469 MB (17.1-18.1 s, two runs each);
* 10M rows: jemalloc 1.75 and 1.78 GB (load 141.9 and 132.6 s); the C library's 1.73 GB (138.5 s).

jemalloc settled as low but gives freed pages back as they decay: measured apart, a process that read
a 1M-row file twice in a row still held up to 1.3 GB of the freed tables a few seconds later.

Arrow reads ``ARROW_DEFAULT_MEMORY_POOL`` once, when pyarrow is imported, so :func:`use_system_allocator`
runs before that (the CLI's server commands call it first thing); the processes they spawn inherit
it.  A user's own setting is kept.
"""

from __future__ import annotations

import os
import sys
from typing import MutableMapping

POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"
POOL = "system"


def use_system_allocator(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Name the C library's allocator for Arrow unless the user named a pool.  True when the setting
    now names it; False when the user chose another pool or pyarrow is already imported (too late:
    it has picked its pool, and the setting is left alone)."""
    if POOL_VARIABLE in environ:
        return environ[POOL_VARIABLE] == POOL
    if "pyarrow" in sys.modules:
        return False
    environ[POOL_VARIABLE] = POOL
    return True
