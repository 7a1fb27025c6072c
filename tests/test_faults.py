"""crash_point kills its own process only at the named point."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from vecgrid.common.faults import CRASH_AT_ENV, crash_point

SCRIPT = (
    "from vecgrid.common.faults import crash_point\n"
    "crash_point('before')\n"
    "print('passed before', flush=True)\n"
    "crash_point('here')\n"
    "print('passed here', flush=True)\n"
)


def test_other_names_and_no_env_do_nothing(monkeypatch):
    monkeypatch.delenv(CRASH_AT_ENV, raising=False)
    crash_point("here")
    monkeypatch.setenv(CRASH_AT_ENV, "elsewhere")
    crash_point("here")


@pytest.mark.slow
def test_named_point_kills_with_sigkill():
    env = {**os.environ, CRASH_AT_ENV: "here"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert proc.stdout == "passed before\n"
