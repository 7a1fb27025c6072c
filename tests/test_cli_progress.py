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


class FakeWrites:
    """A coordinator whose flush reaches 50 % then 100 %, and whose compaction fails."""

    def __init__(self) -> None:
        self.flushes = [{"flush_id": 3, "state": "Executing", "progress": 50, "segment_ids": [1]},
                        {"flush_id": 3, "state": "Completed", "progress": 100, "segment_ids": [1, 2]}]

    async def start_flush(self, db, name):
        return {"flush_id": 3, "state": "Executing", "progress": 0, "segment_ids": []}

    async def flush_state(self, flush_id):
        return self.flushes.pop(0)

    async def start_compaction(self, db, name):
        return {"compaction_id": 4, "state": "Executing", "progress": 0, "completed_plans": 0, "error": ""}

    async def compaction_state(self, compaction_id):
        return {"compaction_id": 4, "state": "Failed", "progress": 50, "completed_plans": 1,
                "error": "compaction plan 9 failed: disk full"}


class FakeProxy:
    db_name = ""

    def __init__(self) -> None:
        self.writes = FakeWrites()


def _args(no_wait: bool = False):
    import argparse

    return argparse.Namespace(name="books", no_wait=no_wait)


def test_a_flush_follows_the_coordinators_percentages(at_once, capsys, monkeypatch):
    import asyncio
    import json

    monkeypatch.setattr(cli, "POLL_S", 0.0)
    asyncio.run(cli._flush(FakeProxy(), _args()))
    out = capsys.readouterr()
    assert [line.rsplit(" [", 1)[0] for line in out.err.splitlines()] == [
        "flush books: 0 %", "flush books: 50 %", "flush books: 100 %"]
    assert json.loads(out.out) == {"collection": "books", "flush_id": 3, "state": "Completed", "progress": 100,
                                   "segment_ids": [1, 2]}


def test_no_wait_prints_the_started_job(capsys):
    import asyncio
    import json

    proxy = FakeProxy()
    asyncio.run(cli._flush(proxy, _args(no_wait=True)))
    out = capsys.readouterr()
    assert out.err == "" and json.loads(out.out)["state"] == "Executing"
    assert len(proxy.writes.flushes) == 2      # never polled


def test_a_failed_compaction_is_an_error_naming_why(at_once, capsys, monkeypatch):
    import asyncio

    from vecgrid import errors

    monkeypatch.setattr(cli, "POLL_S", 0.0)
    with pytest.raises(errors.ServiceInternal, match="compaction 4 of books failed: .*disk full"):
        asyncio.run(cli._compact(FakeProxy(), _args()))
    assert "compact books: 50 %" in capsys.readouterr().err
