"""Progress of long CLI work: a tqdm bar on a terminal, plain lines when stderr is a pipe or a file."""

from __future__ import annotations

import io

import numpy as np
import pytest

from vecgrid import cli
from vecgrid.cli import Progress


@pytest.fixture
def at_once(monkeypatch):
    """Plain lines from the first update (the CLI waits PLAIN_AFTER_S before its first one)."""
    monkeypatch.setattr(Progress, "PLAIN_AFTER_S", 0.0)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_at_every_tenth_and_at_the_end_not_per_update(at_once):
    out = io.StringIO()
    with Progress("import books", 1000, unit="rows", stream=out) as bar:
        for _ in range(100):
            bar.update(10)
    lines = [line.rsplit(" [", 1)[0] for line in out.getvalue().splitlines()]
    assert lines[0] == "import books: 10/1,000 rows (1 %)"
    assert lines[-1] == "import books: 1,000/1,000 rows (100 %)"
    assert len(lines) == 11   # 0 %, 10 %, ..., 100 %


def test_percentages_of_a_load_as_plain_lines(at_once):
    out = io.StringIO()
    with Progress("load books", 100, stream=out) as bar:
        for pct in (0, 0, 5, 35, 35, 100):
            bar.set(pct)
    assert [line.rsplit(" [", 1)[0] for line in out.getvalue().splitlines()] == [
        "load books: 0 %", "load books: 35 %", "load books: 100 %"]   # a line per 10 % step reached


def test_work_without_a_count_says_it_still_runs(at_once):
    out = io.StringIO()
    bar = Progress("flush books", None, stream=out)
    bar.tick()
    assert out.getvalue() == ""           # nothing before PLAIN_EVERY_S
    bar.started -= 30
    bar._last_line -= 30
    bar.tick()
    bar.close()
    assert out.getvalue().startswith("flush books: still running after 30 s")


def test_a_terminal_gets_a_tqdm_bar():
    out = Terminal()
    with Progress("load books", 100, stream=out) as bar:
        bar.set(40)
        bar.set(100)
    text = out.getvalue()
    assert "load books: 100%|" in text and "\r" in text and "load books: 40 %" not in text


def test_quick_work_prints_no_plain_line():
    out = io.StringIO()
    with Progress("insert books", 4, unit="rows", stream=out) as bar:
        bar.update(2)
        bar.update(2)
    assert out.getvalue() == ""


def test_vecgrid_import_into_a_pipe_prints_plain_progress_lines(tmp_path, capsys, at_once):
    np.save(tmp_path / "v.npy", np.random.default_rng(1).standard_normal((2500, 8)).astype(np.float32))
    assert cli.main(["import", "--data-dir", str(tmp_path / "d"), "--collection", "docs", str(tmp_path / "v.npy")]) == 0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("import docs: 2,500/2,500 rows (100 %)") and "\r" not in err
