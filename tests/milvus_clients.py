"""The real Milvus clients, each in a venv of its own (they pin other grpcio/protobuf versions than
vecgrid, and their generated modules define the same protobuf names as vecgrid's, which one process
cannot load twice).

:func:`client_python` makes the venv once under ``.cache/clients/<name>`` (a file lock keeps parallel
test workers from building it twice) and gives its interpreter; a test runs its script there as a
subprocess.  When the packages cannot be installed (no network), the test skips and says why.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "clients"

#: name -> (packages installed without their dependencies, packages installed with theirs)
CLIENTS: dict[str, tuple[list[str], list[str]]] = {
    # the Milvus 2.4 SDK; it depends on milvus-lite, which it only needs for local files: left out
    "pymilvus-2.4": (["pymilvus==2.4.15"],
                     ["setuptools>69,<80", "grpcio>=1.49.1,<=1.67.1", "protobuf>=3.20", "python-dotenv>=1.0.1,<2",
                      "ujson>=2", "pandas>=1.2.4", "numpy"]),
    # the newest SDK (no milvus-lite dependency any more)
    "pymilvus-3": ([], ["pymilvus==3.0.2"]),
    # Milvus Lite, the embedded Milvus bench/milvus_api.py compares with: 2.5.1 (its C++ server) with the
    # pymilvus of its line, and 3.2.2 (pure Python on faiss and pyarrow) with pymilvus 3
    "lite-2.5": ([], ["pymilvus==2.5.18", "milvus-lite==2.5.1", "setuptools<80"]),
    "lite-3": ([], ["pymilvus==3.0.2", "milvus-lite==3.2.2"]),
}


class ClientUnavailable(RuntimeError):
    """A client's packages could not be installed (no network, no wheel for this platform)."""


def client_python(name: str) -> Path:
    """The interpreter of the ``name`` client's venv, made on first use."""
    packages, deps = CLIENTS[name]
    target = CACHE / name
    python = target / "bin" / "python"
    stamp = target / "installed.json"
    wanted = json.dumps([packages, deps])
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == wanted and python.exists():
            return python
        failures = []
        for installer in _installers():
            failure = _install(installer, target, python, packages, deps)
            if failure is None:
                stamp.write_text(wanted)
                return python
            failures.append(failure)
        raise ClientUnavailable(f"cannot install {name}: " + "; ".join(failures))


def _installers() -> list[str]:
    """How to make a client's venv, in the order tried: uv (the dev extra's) when this interpreter has it,
    which installs a client in seconds where pip took 30-60 s each (two of the suite's test modules
    waited for them on a fresh checkout); then pip, which also reads pip's own configuration (an index
    mirror uv would not know of)."""
    return (["uv"] if Path(sys.executable).with_name("uv").exists() else []) + ["pip"]


def _install(installer: str, target: Path, python: Path, packages: list[str], deps: list[str]) -> str | None:
    """A fresh venv at ``target`` with ``packages`` (without their dependencies) and ``deps``: None, or
    why it could not be made."""
    if installer == "uv":
        uv = str(Path(sys.executable).with_name("uv"))
        made = subprocess.run([uv, "venv", "--quiet", "--clear", "--python", sys.executable, str(target)],
                              capture_output=True, text=True, timeout=120)
        if made.returncode != 0:
            return f"uv venv: {made.stderr.strip()[-400:]}"
        install = [uv, "pip", "install", "--quiet", "--python", str(python)]
    else:
        venv.EnvBuilder(clear=True, with_pip=True).create(target)
        install = [str(python), "-m", "pip", "install", "-q"]
    for args in (["--no-deps", *packages] if packages else [], deps):
        if not args:
            continue
        done = subprocess.run([*install, *args], capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
        if done.returncode != 0:
            return f"{installer} ({' '.join(args)}): {done.stderr.strip()[-400:]}"
    return None


def run_client(name: str, script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``script`` (Python source) with the ``name`` client; fails the test with its output if it fails,
    skips it when the client cannot be installed."""
    try:
        python = client_python(name)
    except ClientUnavailable as e:
        pytest.skip(str(e))
    done = subprocess.run([str(python), "-c", script, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=str(CACHE), env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if done.returncode != 0:
        pytest.fail(f"{name} script failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    return done


if __name__ == "__main__":  # make the venvs ahead of a run: python tests/milvus_clients.py
    for client in sys.argv[1:] or CLIENTS:
        print(client_python(client))
