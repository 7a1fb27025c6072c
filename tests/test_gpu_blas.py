"""OpenBLAS kernels named for the CPU before faiss loads, and faiss's BLAS threshold (vecgrid.gpu.blas)."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from vecgrid.gpu import blas

AVX512 = ["fpu", "sse2", "avx", "avx2", "fma", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"]


def test_core_type_from_the_cpu_flags():
    assert blas.core_type(AVX512) == "SKYLAKEX"
    assert blas.core_type(["sse2", "avx", "avx2", "fma"]) == "HASWELL"
    assert blas.core_type(["avx2", "avx512f"]) is None   # AVX-512F alone is not SkylakeX's set, nor is AVX2 w/o FMA
    assert blas.core_type(["sse2", "sse4_2", "avx"]) is None
    assert blas.core_type([]) is None


def test_cpu_flags_read_the_first_processor(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert blas.cpu_flags(str(info)) == ["fpu", "avx2", "fma"]
    assert blas.cpu_flags(str(tmp_path / "missing")) == []


def test_before_import_names_the_kernels_unless_the_user_did_or_faiss_is_loaded(monkeypatch):
    env: dict[str, str] = {}
    monkeypatch.delitem(sys.modules, "faiss", raising=False)
    assert blas.before_import(env, AVX512) and env == {"OPENBLAS_CORETYPE": "SKYLAKEX"}
    env = {"OPENBLAS_CORETYPE": "ZEN"}
    assert blas.before_import(env, AVX512) and env == {"OPENBLAS_CORETYPE": "ZEN"}   # the user's choice stays
    env = {}
    assert not blas.before_import(env, ["sse2"]) and env == {}   # unknown: left to OpenBLAS
    monkeypatch.setitem(sys.modules, "faiss", SimpleNamespace())
    assert not blas.before_import(env, AVX512) and env == {}   # too late: OpenBLAS has read its setting


def test_after_import_lowers_the_threshold_only_with_known_kernels():
    def fake(threshold):
        return SimpleNamespace(cvar=SimpleNamespace(distance_compute_blas_threshold=threshold))

    f = fake(128_000)
    blas.after_import(f, kernels_known=False)
    assert f.cvar.distance_compute_blas_threshold == 128_000
    blas.after_import(f, kernels_known=True)
    assert f.cvar.distance_compute_blas_threshold == blas.BLAS_FROM_QUERY_FLOATS
    f = fake(20)   # an older faiss counting queries: never raised
    blas.after_import(f, kernels_known=True)
    assert f.cvar.distance_compute_blas_threshold == 20


@pytest.mark.slow   # a fresh interpreter: OpenBLAS reads its setting once, when it loads
def test_faiss_loads_its_openblas_with_the_named_kernels():
    """In a fresh process, require_faiss names the kernels before faiss's OpenBLAS loads: OpenBLAS reports
    the named core, not what it would detect itself (faiss-cpu 1.15's OpenBLAS 0.3.15 takes a Sapphire
    Rapids CPU for a Prescott)."""
    pytest.importorskip("faiss")
    expected = blas.core_type(blas.cpu_flags())
    if expected is None:
        pytest.skip("this CPU has neither AVX2 with FMA nor AVX-512: nothing is named")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env["OPENBLAS_VERBOSE"] = "2"
    code = ("import os, numpy as np\n"
            "from vecgrid.gpu import require_faiss\n"
            "faiss = require_faiss()\n"
            "x = np.ones((64, 16), 'float32')\n"
            "faiss.pairwise_distances(x, x)\n"   # a BLAS call, so faiss's OpenBLAS is surely initialised
            "print(os.environ['OPENBLAS_CORETYPE'], faiss.cvar.distance_compute_blas_threshold)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [expected, str(blas.BLAS_FROM_QUERY_FLOATS)]
    cores = [line.split(":", 1)[1].strip().upper() for line in out.stderr.splitlines() if line.startswith("Core:")]
    # the last OpenBLAS to load is faiss's (numpy's, loaded before the setting, may name its own)
    assert cores and cores[-1] == expected, out.stderr
