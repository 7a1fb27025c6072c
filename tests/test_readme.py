"""The README's promises stay true: its two commands are Makefile targets, CI (.ci/run) runs its test
command, which runs the whole suite, and its quickstart prints what it says against a real server; the
status page (docs/status.md) lists exactly the gRPC methods still pending."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vecgrid.config import Settings
from vecgrid.rpc.querycoord_servicer import QueryCoordServicer
from vecgrid.rpc.querynode_servicer import QueryNodeServicer
from vecgrid.rpc.service import pending_methods
from tests.cli_support import VECGRID
from tests.milvus_clients import run_client
from tests.conftest import REPO


def test_status_table_matches_pending_methods():
    text = (REPO / "docs" / "status.md").read_text()
    table = text.split("<!-- pending-methods:start -->")[1].split("<!-- pending-methods:end -->")[0]
    rows = re.findall(r"^\| (QueryCoord|QueryNode) \| (\w+) \|", table, flags=re.M)
    listed = {(service, method) for service, method in rows}
    assert len(listed) == len(rows), "duplicate rows"
    expected = {("QueryCoord", m) for m in pending_methods(QueryCoordServicer)} | \
               {("QueryNode", m) for m in pending_methods(QueryNodeServicer)}
    assert listed == expected


def _readme_commands() -> dict[str, str]:
    """The README's "two commands" block: command -> its comment."""
    text = (REPO / "README.md").read_text()
    section = text.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    commands = {}
    for line in block.strip().splitlines():
        command, _, comment = line.partition("#")
        commands[command.strip()] = comment.strip()
    return commands


def _make_targets() -> dict[str, list[str]]:
    """Makefile target -> its recipe lines."""
    targets: dict[str, list[str]] = {}
    current = None
    for line in (REPO / "Makefile").read_text().splitlines():
        if line.startswith("\t") and current is not None:
            targets[current].append(line.strip())
        elif (rule := re.match(r"^([\w.-]+)\s*:(?!=)", line)):
            current = rule.group(1)
            targets[current] = []
        else:
            current = None
    return targets


def _ci_commands() -> list[list[str]]:
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    return [shlex.split(line, comments=True) for line in lines if shlex.split(line, comments=True)]


def test_the_readme_commands_are_make_targets():
    commands = _readme_commands()
    assert sorted(commands) == ["make serve", "make test"], commands
    targets = _make_targets()
    for command in commands:
        assert command.split()[1] in targets, f"{command}: no such Makefile target"


def test_ci_runs_the_readme_test_command():
    (test_command,) = [c for c, comment in _readme_commands().items() if "what CI runs" in comment]
    assert shlex.split(test_command) in _ci_commands(), f".ci/run does not run `{test_command}`"


def _pytest_args(recipe: list[str]) -> list[str]:
    (line,) = [shlex.split(line) for line in recipe if "pytest" in line]
    return line[line.index("pytest") + 1:]


def test_ci_runs_every_test_and_test_fast_leaves_out_slow():
    """``make test`` leaves out only the fuzzers and the kill tests, which ``make fuzz`` and ``make faults``
    run, and .ci/run runs all three."""
    targets = _make_targets()
    full = _pytest_args(targets["test"])
    assert "-k" not in full and full[full.index("-m") + 1] == "not fuzz and not fault", full
    for target, marker in (("fuzz", "fuzz"), ("faults", "fault")):
        args = _pytest_args(targets[target])
        assert "-k" not in args and args[args.index("-m") + 1] == marker, args
        assert ["make", target] in _ci_commands()
    fast = _pytest_args(targets["test-fast"])
    assert fast[fast.index("-m") + 1] == "not slow and not fuzz and not fault", fast


# --- the quickstart, against a real `vecgrid serve` ------------------------------------------------
# The README's transcripts are copied from a run; these tests run them again and compare, so that a
# change in what the system answers shows up as a README to correct. Only values that differ on
# every run by nature are compared by shape (RUN_SPECIFIC).

def _hybrid_timestamp_of_now(value: str) -> bool:
    """A Milvus hybrid timestamp (``physical_ms << 18 | logical``) whose clock part is about now."""
    return value.isdigit() and abs((int(value) >> 18) / 1000 - time.time()) < 600


# (a line of the README that the pattern matches, the check of the value the run printed there)
RUN_SPECIFIC = [(re.compile(r"^X-Vecgrid-Ts: (.+)$"), _hybrid_timestamp_of_now)]


def _readme_section(title: str) -> str:
    return (REPO / "README.md").read_text().split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of each fenced code block."""
    return re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.M | re.S)


def _only_block(section: str, language: str) -> str:
    (body,) = [body for lang, body in _fenced_blocks(_readme_section(section)) if lang == language]
    return body


def _default_rest_url() -> str:
    defaults = Settings()
    return f"http://{defaults.common.host}:{defaults.http.port}"


def _transcript(body: str) -> list[tuple[str, list[str]]]:
    """``$ command`` lines of a console block, each with the output lines that follow it."""
    steps: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before any command: {line!r}"
            steps[-1][1].append(line)
    return steps


def _same_output(expected: list[str], actual: list[str]) -> bool:
    if len(expected) != len(actual):
        return False
    for want, got in zip(expected, actual):
        rule = next(((pattern, check) for pattern, check in RUN_SPECIFIC if pattern.match(want)), None)
        if rule is None:
            if want != got:
                return False
        else:
            pattern, check = rule
            match = pattern.match(got)
            if not (match and check(match.group(1))):
                return False
    return True


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``vecgrid serve`` as ``make serve`` runs it (two workers, the default settings: no ``VECGRID_*``
    variables), on free ports and a fresh data dir: yields ``(REST URL, banner)``."""
    work = tmp_path_factory.mktemp("quickstart")
    log_path = work / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("VECGRID_")}
    with open(log_path, "w") as log:   # a file, not a pipe: nobody has to keep reading the server's logs
        proc = subprocess.Popen(VECGRID + ["serve", "--data-dir", str(work / "data"), "--coord-port", "0",
                                           "--http-port", "0", "--milvus-port", "0", "--dashboard-port", "0"],
                                stdout=log, stderr=subprocess.STDOUT, env={**env, "PYTHONUNBUFFERED": "1"},
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while "Press Ctrl-C to stop." not in log_path.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("vecgrid serve did not come up:\n" + log_path.read_text())
            time.sleep(0.1)
        text = log_path.read_text()
        banner = text[text.index("vecgrid embedded cluster"):text.index("Press Ctrl-C to stop.")] + "Press Ctrl-C to stop."
        yield re.search(r"REST\s+: (\S+)", banner).group(1), banner
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)   # Ctrl-C, as a user stops it
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _banner_shape(banner: str) -> list[str]:
    """The banner's lines with every address and path replaced: what does not change between runs."""
    return [re.sub(r" : .*", " : …", line.rstrip()) for line in banner.strip().splitlines()]


@pytest.mark.slow
def test_make_serve_prints_the_banner_the_readme_shows(served):
    _, banner = served
    shown = [body for lang, body in _fenced_blocks(_readme_section("The two commands"))
             if lang == "" and body.startswith("vecgrid embedded cluster")]
    assert len(shown) == 1
    assert _banner_shape(shown[0]) == _banner_shape(banner)
    assert f"REST            : {_default_rest_url()}" in shown[0]


@pytest.mark.slow
def test_the_quickstart_prints_what_the_readme_says(served, tmp_path):
    """The curl session, then the Python block, in the README's order against one server (the session's
    last answer lists the collections, so the Python block's must not exist yet)."""
    url, _ = served
    if shutil.which("curl") is None:
        pytest.skip("no curl on PATH")
    (first, first_output), *steps = _transcript(_only_block("Quickstart", "console"))
    assert first == f"B={_default_rest_url()}" and not first_output, "the session starts by naming make serve's REST URL"
    # `python3` in the session is this interpreter, as .venv/bin comes first on a user's PATH
    env = {**os.environ, "B": url, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    for command, expected in steps:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, f"$ {command}\n{done.stderr}"
        actual = [line.rstrip("\r") for line in done.stdout.splitlines()]
        assert _same_output(expected, actual), f"$ {command}\nREADME: {expected}\nprinted: {actual}"

    code = _only_block("Quickstart", "python")
    assert f'"{_default_rest_url()}"' in code, "the Python block connects to make serve's REST URL"
    script = tmp_path / "quickstart.py"
    script.write_text(code.replace(f'"{_default_rest_url()}"', f'"{url}"'))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # every full-line `# ...` comment is what the print before it printed
    expected = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    printed = done.stdout.splitlines()
    assert len(printed) == len(expected), f"README shows {len(expected)} output lines, the block printed {printed}"
    for want, got in zip(expected, printed):
        assert _same_output([want], [got]), f"README: {want}\nprinted: {got}"


@pytest.mark.slow
def test_the_pymilvus_block_prints_what_the_readme_says(served):
    """The pymilvus block, run by pymilvus 2.4 in its own venv against make serve's Milvus port (after the
    quickstart: it makes and drops a collection of its own)."""
    _, banner = served
    milvus = re.search(r"Milvus gRPC\s+: (\S+)", banner).group(1)
    code = _only_block("With pymilvus and the Milvus SDKs", "python")
    default = '"http://127.0.0.1:19530"'
    assert default in code, "the block connects to make serve's Milvus port"
    done = run_client("pymilvus-2.4", code.replace(default, f'"http://{milvus}"'))
    expected = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    printed = done.stdout.splitlines()
    assert printed == expected
