"""One log format per `vecgrid serve`: `--log-format json` makes every line on stderr one JSON object — the
coordinator's, Dask's scheduler and worker processes', bokeh's and Tornado's access lines — and the text format
is one shape for all of them too.  The line a loaded collection logged every minute while idle (a new target
after its checkpoint moved) is a DEBUG line."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from vecgrid.common.logs import JsonLogFormatter, dict_config
from tests.cli_support import VECGRID
from tests.conftest import poll_until

PROMOTED = "is current"   # "collection N: target version V is current"
TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) \S+: ")


# --- fast: the formatter ---------------------------------------------------------------------------------------

def test_a_json_line_keeps_a_traceback_and_newlines_inside_one_line():
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonLogFormatter())
    log = logging.getLogger("vecgrid.test.json")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning('two\nlines "quoted" %d', 7)
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert (first["level"], first["logger"], first["message"]) == ("WARNING", "vecgrid.test.json", 'two\nlines "quoted" 7')
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", first["time"]) and "exc" not in first
    assert second["message"] == "failed" and "ValueError: boom" in second["exc"]


def test_the_worker_processes_get_the_same_level_and_format():
    config = dict_config("info", "json")
    assert config["formatters"]["vecgrid"] == {"()": "vecgrid.common.logs.JsonLogFormatter"}
    assert config["root"] == {"level": "INFO", "handlers": ["stderr"]}
    assert config["loggers"]["distributed"] == {"level": "WARNING"}
    assert "format" in dict_config("debug", "text")["formatters"]["vecgrid"]
    assert dict_config("debug", "text")["loggers"]["tornado.access"] == {"level": "DEBUG"}


# --- slow: a real vecgrid serve -----------------------------------------------------------------------------------

def _serve(tmp_path, *flags: str) -> tuple[subprocess.Popen, str, object]:
    """``vecgrid serve`` with one worker; its stderr goes to a file (a debug log fills a pipe)."""
    err = open(tmp_path / "stderr.log", "w")
    proc = subprocess.Popen(
        VECGRID + ["serve", "--data-dir", str(tmp_path / "data"), "--workers", "1", "--coord-port", "0",
                   "--http-port", "0", "--milvus-port", "0", "--dashboard-port", "0", *flags],
        stdout=subprocess.PIPE, stderr=err, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True)
    banner = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        banner.append(line)
        if "Press Ctrl-C to stop." in line:
            return proc, "".join(banner), err
    proc.kill()
    pytest.fail("vecgrid serve did not come up:\n" + "".join(banner) + (tmp_path / "stderr.log").read_text())


def _stop(proc: subprocess.Popen, err) -> None:
    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()


def _exercise(banner: str) -> tuple[str, str]:
    """A 404 (Tornado's access log), a collection created loaded (a target promoted), the dashboard page."""
    rest = re.search(r"REST\s+: (\S+)", banner).group(1)
    page = re.search(r"vecgrid page\s+: (\S+)", banner).group(1)
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(f"{rest}/no-such-route", timeout=30)
    body = json.dumps({"name": "demo", "dimension": 4, "metric": "L2", "load": True}).encode()
    request = urllib.request.Request(f"{rest}/collections", data=body, headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=120).close()

    def loaded() -> bool:   # 100 % once a target is current: the promotion has been logged
        with urllib.request.urlopen(f"{rest}/collections/demo", timeout=30) as response:
            return json.loads(response.read())["loadState"] == "LoadStateLoaded"
    asyncio.run(poll_until(loaded, 90, interval=0.5, what="collection demo loaded"))
    with urllib.request.urlopen(page, timeout=60) as response:
        assert response.status == 200
    return rest, page


@pytest.mark.slow
def test_json_format_every_line_of_every_process_is_one_object(tmp_path):
    proc, banner, err = _serve(tmp_path, "--log-format", "json", "--log-level", "debug")
    log = tmp_path / "stderr.log"
    try:
        _exercise(banner)
        asyncio.run(poll_until(lambda: PROMOTED in log.read_text(), 60, what="the target promotion's line"))
    finally:
        _stop(proc, err)
    assert proc.returncode == 0
    lines = [json.loads(line) for line in log.read_text().splitlines()]   # every line parses
    assert all(set(line) >= {"time", "level", "logger", "message"} for line in lines)
    loggers = {line["logger"] for line in lines}
    assert {"distributed.scheduler", "distributed.worker", "tornado.access"} <= loggers, loggers  # worker: a child
    assert any(line["logger"] == "tornado.access" and "404" in line["message"] for line in lines)
    assert any(line["logger"].startswith("vecgrid.") for line in lines)
    promoted = [line for line in lines if PROMOTED in line["message"]]
    assert promoted and {line["level"] for line in promoted} == {"DEBUG"}


@pytest.mark.slow
def test_text_format_is_one_shape_and_the_idle_line_is_not_at_info(tmp_path):
    proc, banner, err = _serve(tmp_path)
    log = tmp_path / "stderr.log"
    try:
        assert re.search(r"vecgrid page\s+: http://127\.0\.0\.1:\d+/individual-vecgrid", banner)
        _exercise(banner)
        asyncio.run(poll_until(lambda: "404 GET /no-such-route" in log.read_text(), 30, what="the 404's access line"))
    finally:
        _stop(proc, err)
    lines = log.read_text().splitlines()
    assert lines and all(TEXT_LINE.match(line) for line in lines), [line for line in lines if not TEXT_LINE.match(line)]
    assert any(" WARNING bokeh." in line for line in lines)   # Dask's handler, our format
    assert not any(PROMOTED in line for line in lines)
