#!/usr/bin/env python3
"""Regenerate the Python gRPC stubs from vecgrid/proto/*.proto.

Writes ``<name>_pb2.py``, ``<name>_pb2.pyi`` and ``<name>_pb2_grpc.py`` for
every ``.proto`` file in ``vecgrid/proto/``.  protoc runs with the
repository root as its only project include path, so the sources import each
other as ``import "vecgrid/proto/common.proto";`` and the generated code
imports ``from vecgrid.proto import common_pb2`` (no sys.path tricks).

Usage::

    python scripts/gen_protos.py            # regenerate in place
    python scripts/gen_protos.py --out DIR  # generate into DIR instead

With ``--out DIR`` the files are written flat into ``DIR`` (the same file
names as in place, no ``vecgrid/proto`` sub-folders); the staleness test
uses this to compare a fresh run with the committed files.

The output depends only on the .proto sources and the grpcio-tools version
(its bundled protoc stamps the protobuf version into every ``_pb2.py``); the
inputs are passed in sorted order so that runs are reproducible.
"""

from __future__ import annotations

import argparse
import keyword
import os
import re
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO_PKG = Path("vecgrid") / "proto"
PROTO_DIR = REPO_ROOT / PROTO_PKG
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def proto_sources() -> list[Path]:
    """The .proto sources, as repo-root-relative paths, sorted."""
    return sorted(p.relative_to(REPO_ROOT) for p in PROTO_DIR.glob("*.proto"))


def generated_names(sources: list[Path] | None = None) -> list[str]:
    """File names (no directory) that a generation run produces, sorted."""
    if sources is None:
        sources = proto_sources()
    return sorted(src.stem + suffix for src in sources for suffix in GENERATED_SUFFIXES)


def is_generated_name(name: str) -> bool:
    return name.endswith(GENERATED_SUFFIXES)


_KEYWORD_ANNOTATION = re.compile(
    r"^(?P<indent>[ \t]*)(?P<name>" + "|".join(sorted(keyword.kwlist)) + r"):(?P<rest>.*)$"
)


def _fix_pyi(text: str) -> str:
    """Comment out stub annotations whose target is a Python keyword.

    Milvus's enums have values named ``None`` (common.PlaceholderType,
    schema.DataType); protoc's pyi generator emits ``None: _ClassVar[...]``,
    which is a SyntaxError that makes type checkers reject the whole stub.
    The runtime module is unaffected (the value stays reachable as
    ``PlaceholderType.Value("None")`` / ``DataType.Name(0)``).
    """
    out = []
    for line in text.splitlines(keepends=True):
        m = _KEYWORD_ANNOTATION.match(line)
        if m:
            line = f"{m['indent']}# {m['name']}:{m['rest']}  # keyword; not expressible in a stub\n"
        out.append(line)
    return "".join(out)


def _run_protoc(sources: list[Path], out_root: Path) -> None:
    from grpc_tools import protoc  # imported lazily: only needed here

    from importlib.resources import files

    # grpc_tools' bundled include dir (google/protobuf/*.proto well-known types).
    wkt_include = str(files("grpc_tools") / "_proto")

    args = [
        "grpc_tools.protoc",
        f"-I{REPO_ROOT}",
        f"-I{wkt_include}",
        f"--python_out={out_root}",
        f"--pyi_out={out_root}",
        f"--grpc_python_out={out_root}",
        *[str(s) for s in sources],
    ]
    # protoc resolves the relative source paths against the include path, so
    # run from the repository root.
    cwd = os.getcwd()
    os.chdir(REPO_ROOT)
    try:
        rc = protoc.main(args)
    finally:
        os.chdir(cwd)
    if rc != 0:
        raise SystemExit(f"protoc failed with exit status {rc}")


def generate(out_dir: Path | None = None) -> list[Path]:
    """Generate the stubs into ``out_dir`` (default: in place). Returns the files written."""
    sources = proto_sources()
    if not sources:
        raise SystemExit(f"no .proto files under {PROTO_DIR}")
    target = PROTO_DIR if out_dir is None else Path(out_dir).resolve()
    target.mkdir(parents=True, exist_ok=True)

    # protoc mirrors the source tree under --*_out; generate into a scratch
    # root and copy the flat result, so the target only ever receives
    # complete files.
    with tempfile.TemporaryDirectory(prefix="gen_protos_") as tmp:
        tmp_root = Path(tmp)
        _run_protoc(sources, tmp_root)
        produced = tmp_root / PROTO_PKG
        expected = generated_names(sources)
        got = sorted(p.name for p in produced.iterdir() if p.is_file())
        if got != expected:
            raise SystemExit(f"unexpected protoc output: {got} (expected {expected})")

        if out_dir is None:
            # Drop stale outputs of .proto files that no longer exist.
            for old in sorted(target.iterdir()):
                if old.is_file() and is_generated_name(old.name) and old.name not in expected:
                    old.unlink()

        written = []
        for name in expected:
            dst = target / name
            data = (produced / name).read_bytes()
            if name.endswith(".pyi"):
                data = _fix_pyi(data.decode("utf-8")).encode("utf-8")
            if not dst.exists() or dst.read_bytes() != data:
                dst.write_bytes(data)
            written.append(dst)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the generated files flat into this directory instead of vecgrid/proto/",
    )
    args = parser.parse_args(argv)
    written = generate(args.out)
    where = PROTO_DIR if args.out is None else args.out
    print(f"generated {len(written)} files from {len(proto_sources())} .proto sources into {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
