"""Helpers for CLI tests: run ``vecgrid`` in this process (fast lane) or as a real process (``slow``), and
check the one-line error contract that both must keep."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from vecgrid.cli import main

VECGRID = [sys.executable, "-m", "vecgrid.cli"]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run_process(args: list[str], timeout: float = 60, **kw) -> Result:
    """``vecgrid ARGS`` as a child process (tests using it are ``slow``)."""
    done = subprocess.run(VECGRID + args, capture_output=True, text=True, timeout=timeout, **kw)
    return Result(done.returncode, done.stdout, done.stderr)


def run_in_process(args: list[str], capsys) -> Result:
    """``vecgrid.cli.main(ARGS)`` here, with what it printed: the paths that fail before anything starts."""
    capsys.readouterr()  # drop what the test printed before
    code = main(args)
    out, err = capsys.readouterr()
    return Result(code, out, err)


def assert_one_line_error(result: Result, *fragments: str) -> None:
    """A failure is one ``vecgrid: error: …`` line on stderr holding every fragment, and no traceback."""
    assert result.returncode != 0, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("vecgrid: error: "), lines[0]
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
