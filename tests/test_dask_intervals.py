"""The intervals of Dask's periodic work in vecgrid's server processes (vecgrid.cluster.dask_intervals):
ours replace Distributed's defaults, a value the user configured is kept, and the CLI's server
commands apply them while its client commands leave Dask alone."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import dask
import distributed  # noqa: F401 - its defaults are registered, as in a server process
import pytest

from vecgrid.cluster import dask_intervals

KEYS = list(dask_intervals.INTERVALS)


def distributed_defaults() -> tuple[dict, list[dict]]:
    """A configuration holding only Dask's and Distributed's defaults, and those defaults (without ours,
    which a server command run in this process earlier, as test_cli's do, has registered)."""
    ours = dask_intervals._nested(dask_intervals.INTERVALS)
    defaults = [copy.deepcopy(d) for d in dask.config.defaults if d != ours]
    return dask.config.merge(*defaults), defaults


def test_ours_replace_distributeds_defaults():
    config, defaults = distributed_defaults()
    assert dask.config.get("distributed.admin.tick.interval", config=config) == "20ms"   # Distributed's
    dask_intervals.stretch(config, defaults)
    assert {key: dask.config.get(key, config=config) for key in KEYS} == dask_intervals.INTERVALS


def test_a_configured_value_is_kept():
    config, defaults = distributed_defaults()
    dask.config.update(config, {"distributed": {"admin": {"tick": {"interval": "50ms"}}}})
    dask_intervals.stretch(config, defaults)
    assert dask.config.get("distributed.admin.tick.interval", config=config) == "50ms"
    assert dask.config.get("distributed.admin.system-monitor.interval", config=config) == "2s"


def _intervals_after(command: str, env: dict[str, str]) -> dict[str, str]:
    code = ("import json, sys\nimport dask\nfrom vecgrid.cli import _process_settings\n"
            "_process_settings(sys.argv[1])\nimport distributed\n"
            "print(json.dumps({k: dask.config.get(k) for k in sys.argv[2:]}))")
    done = subprocess.run([sys.executable, "-c", code, command, *KEYS], capture_output=True, text=True,
                          timeout=60, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_server_commands_apply_them_over_distributeds_defaults_only():
    # the suite exports its own quiet settings to its children: this child starts from Dask's own
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_DISTRIBUTED__")}
    env["DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL"] = "50ms"   # an operator's choice
    assert _intervals_after("serve", env) == {**dask_intervals.INTERVALS, "distributed.admin.tick.interval": "50ms"}
    assert _intervals_after("status", env) == {"distributed.admin.tick.interval": "50ms",
                                               "distributed.admin.system-monitor.interval": "500ms",
                                               "distributed.worker.profile.interval": "10ms"}
