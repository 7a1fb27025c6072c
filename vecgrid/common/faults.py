"""Crash points for kill -9 tests.

Crash safety is a claim about every instant of the write path (after the WAL fsync but before the
reply, after the Parquet write but before the publish, ...). A test can only check it by killing a
real process at exactly such an instant, so the code names those instants with
``crash_point("name")`` and a test starts the process with ``VECGRID_CRASH_AT=name``. The kill is
SIGKILL — no finally blocks, no atexit, no flushing of buffers — because that is what a power cut
or the OOM killer does, and what the recovery has to survive.

The environment is read on every call (one dict lookup), so a test may also set it inside a running
process; without the variable a crash point costs nothing worth measuring.
"""

from __future__ import annotations

import os
import signal

CRASH_AT_ENV = "VECGRID_CRASH_AT"


def crash_point(name: str) -> None:
    """Kill this process with SIGKILL when ``VECGRID_CRASH_AT`` equals ``name``."""
    if os.environ.get(CRASH_AT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
