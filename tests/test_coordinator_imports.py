"""The coordinator process loads no query-node engine: no ``querynode`` engine module, no ``gpu/``
search, build or device module, no faiss.

The coordinator submits the node's Dask task entry points and registers its worker plugin, so it
imports those light modules; everything that searches runs on the workers.  An incidental import (an
``isinstance`` on ``QueryNode``, a constant taken from ``retrieve``) silently pulled the whole worker
stack into the coordinator before: this test lists ``sys.modules`` of a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

# What the coordinator may load from the node's package: the Dask task entry points and the
# worker session (how it reaches a node), and the index-save request it submits.
QUERYNODE_ENTRY_POINTS = {"vecgrid.cluster.querynode", "vecgrid.cluster.querynode.tasks",
                          "vecgrid.cluster.querynode.session", "vecgrid.cluster.querynode.index_saver",
                          "vecgrid.cluster.querynode.dask_worker"}  # the Dask worker class: distributed only
# The codecs the proxy needs from gpu/: result and plan encoding, the top-k merge, filter expressions.
GPU_CODECS = {"vecgrid.gpu", "vecgrid.gpu.columns", "vecgrid.gpu.exprs", "vecgrid.gpu.jsonkeys",
              "vecgrid.gpu.merge", "vecgrid.gpu.results", "vecgrid.gpu.plan"}


def _modules_after_importing(module: str) -> list[str]:
    script = (f"import json, sys, {module}\n"
              "print(json.dumps(sorted(k for k in sys.modules if k.startswith(('vecgrid', 'faiss', 'cupy')))))")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def _engine_modules(loaded: list[str]) -> list[str]:
    return [m for m in loaded
            if (m.startswith("vecgrid.cluster.querynode") and m not in QUERYNODE_ENTRY_POINTS)
            or (m.startswith("vecgrid.gpu") and m not in GPU_CODECS)
            or m.split(".")[0] in ("faiss", "cupy")]


@pytest.mark.slow
@pytest.mark.parametrize("module", [
    "vecgrid.cluster.querycoord.coordinator",
    "vecgrid.deploy",   # the whole coordinator process: QueryCoord, proxy, DataCoord, REST, gRPC servers
])
def test_the_coordinator_process_loads_no_engine(module):
    loaded = _modules_after_importing(module)
    assert module in loaded
    assert _engine_modules(loaded) == []


def test_the_check_names_engine_modules():
    loaded = ["vecgrid.cluster.querynode.tasks", "vecgrid.cluster.querynode.node", "vecgrid.gpu.results",
              "vecgrid.gpu.loaded_segment", "faiss", "vecgrid.cluster.querycoord.coordinator"]
    assert _engine_modules(loaded) == ["vecgrid.cluster.querynode.node", "vecgrid.gpu.loaded_segment", "faiss"]
