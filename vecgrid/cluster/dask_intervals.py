"""How often Dask's own periodic work runs in vecgrid's server processes.

Most of an idle cluster's CPU is Dask checking on itself: every Dask server (the scheduler, each
nanny, each worker) times its event loop every 20 ms, its system monitor reads psutil every 500 ms
and a worker wakes its statistical profiler every 10 ms.  An idle, loaded ``vecgrid serve --workers 2``
(a coordinator holding the scheduler and both nannies, two workers) used 261 ms of CPU a second with
Dask's intervals and 105-114 ms with these (2026-11-30, 2-core host, 30 s of each process's CPU time).
What they change for an operator: a blocked event loop is still reported once it has been blocked for
``distributed.admin.tick.limit`` (3 s); the Dask dashboard's system plots move every 2 s; the profile
page samples Dask's tasks (loads, index builds, compactions) ten times a second.  Dask's memory monitor,
which pauses or restarts a worker over its memory limit, keeps its 100 ms.

They are defaults: a value set in Dask's own configuration (a YAML file, ``DASK_*`` variables) wins.
Worker processes receive them with the rest of the configuration from their nanny.
"""

from __future__ import annotations

from typing import Any

import dask

INTERVALS = {
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.profile.interval": "100ms",
}


def stretch(config: dict[str, Any] | None = None, defaults: list[dict[str, Any]] | None = None) -> None:
    """Make :data:`INTERVALS` the defaults of Dask's configuration (by default the process's own).
    Distributed's defaults are registered first, so these replace them, and only where the current
    value is still Distributed's default."""
    import distributed  # noqa: F401 - registers its defaults, which ours must come after

    kw: dict[str, Any] = {}
    if config is not None:
        kw["config"] = config
    if defaults is not None:
        kw["defaults"] = defaults
    dask.config.update_defaults(_nested(INTERVALS), **kw)


def _nested(flat: dict[str, str]) -> dict[str, Any]:
    """``{"a.b.c": v}`` as ``{"a": {"b": {"c": v}}}``, the shape Dask's defaults take."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, leaf = key.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out
