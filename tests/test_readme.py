"""The README's promises stay true: its status table lists exactly the methods still pending."""

from __future__ import annotations

import re

from vecgrid.rpc.querycoord_servicer import QueryCoordServicer
from vecgrid.rpc.querynode_servicer import QueryNodeServicer
from vecgrid.rpc.service import pending_methods
from tests.conftest import REPO


def test_status_table_matches_pending_methods():
    text = (REPO / "README.md").read_text()
    table = text.split("<!-- pending-methods:start -->")[1].split("<!-- pending-methods:end -->")[0]
    rows = re.findall(r"^\| (QueryCoord|QueryNode) \| (\w+) \|", table, flags=re.M)
    listed = {(service, method) for service, method in rows}
    assert len(listed) == len(rows), "duplicate rows"
    expected = {("QueryCoord", m) for m in pending_methods(QueryCoordServicer)} | \
               {("QueryNode", m) for m in pending_methods(QueryNodeServicer)}
    assert listed == expected


def test_ci_runs_the_readme_test_command():
    assert "make test" in (REPO / ".ci" / "run").read_text()
    assert "make test" in (REPO / "README.md").read_text()
