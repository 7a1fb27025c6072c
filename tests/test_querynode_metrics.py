"""GetMetrics reports the SIMD level faiss's CPU kernels really run with, or leaves the field out;
never a made-up value (it said "auto" whatever the machine)."""

from __future__ import annotations

import json
import types

import pytest

from vecgrid.cluster.querynode.node import QueryNode
from vecgrid.config import Settings
from vecgrid.gpu import device

REQUEST = json.dumps({"metric_type": "system_info"})


def node_metrics(tmp_path) -> dict:
    settings = Settings.load(env={}, overrides={"common.data_dir": str(tmp_path)})
    node = QueryNode(settings, "qn-metrics")
    node.assign_node_id(3)
    return json.loads(node.metrics(REQUEST))


def test_simd_type_is_the_level_faiss_runs_with(tmp_path):
    faiss = pytest.importorskip("faiss")
    doc = node_metrics(tmp_path)
    config = getattr(faiss, "SIMDConfig", None)
    if config is None:
        pytest.skip("this faiss does not say which SIMD level it dispatches to")
    assert doc["system_configurations"]["simd_type"] == config.get_level_name() != "auto"


class SingleLevelFaiss(types.SimpleNamespace):
    """A faiss before dynamic dispatch: one build per level, named by its compile options."""


@pytest.mark.parametrize("options, expected", [
    ("OPTIMIZE AVX512 ", "AVX512"),
    ("OPTIMIZE AVX2 GPU ", "AVX2"),
    ("OPTIMIZE SVE NEON ", "SVE"),
    ("OPTIMIZE GENERIC ", "GENERIC"),
    ("OPTIMIZE AVX2", "AVX2"),
    # a dynamic-dispatch build lists every level it holds, not the one it runs: unknown
    ("OPTIMIZE DD AVX2 AVX512 AVX512_VPOPCNT", None),
    ("", None),
])
def test_simd_level_of_a_faiss_without_simd_config(monkeypatch, options, expected):
    monkeypatch.setattr(device, "require_faiss", lambda: SingleLevelFaiss(get_compile_options=lambda: options))
    assert device.simd_level() == expected


def test_no_simd_type_when_it_is_not_known(tmp_path, monkeypatch):
    monkeypatch.setattr(device, "simd_level", lambda: None)
    doc = node_metrics(tmp_path)
    assert "simd_type" not in doc["system_configurations"]
