"""The Makefile keeps Python's bytecode cache on for what it starts, whatever the shell sets: with
``PYTHONDONTWRITEBYTECODE`` passed down, every test process and every cluster a test starts compiled
vecgrid and the test modules again (make test 8.5-9 min instead of 6.5)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_make_does_not_pass_on_pythondontwritebytecode():
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    probe = 'probe: ; @echo "[$$PYTHONDONTWRITEBYTECODE]"'
    out = subprocess.run(["make", "-s", "-f", "Makefile", "--eval", probe, "probe"], cwd=ROOT, check=True,
                         capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert out.stdout.strip() == "[]"
