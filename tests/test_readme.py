"""The README's promises stay true: its two commands are Makefile targets, CI (.ci/run) runs its test
command, which runs the whole suite, and its quickstart prints what it says against a real server; the
status page (docs/status.md) lists exactly the gRPC methods still pending."""

from __future__ import annotations

import re
import shlex

from vecgrid.rpc.querycoord_servicer import QueryCoordServicer
from vecgrid.rpc.querynode_servicer import QueryNodeServicer
from vecgrid.rpc.service import pending_methods
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


def test_make_test_is_the_whole_suite_and_test_fast_leaves_out_slow():
    targets = _make_targets()
    full = _pytest_args(targets["test"])
    assert "-m" not in full and "-k" not in full, full   # CI runs every test
    fast = _pytest_args(targets["test-fast"])
    assert fast[fast.index("-m") + 1] == "not slow", fast
