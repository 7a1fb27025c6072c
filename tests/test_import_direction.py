"""Imports point one way, and no module imports itself back through others.

The layers, lowest first (a module may import its own layer's package and the layers below it):

    common (with vecgrid.errors, vecgrid.config) ← proto ← storage ← gpu ← cluster (shared parts:
    streaming, ...) ← cluster.querynode | cluster.datanode ← cluster.querycoord | cluster.datacoord |
    cluster.proxy ← rpc | http | client ← node_plugin ← deploy | dashboard ← cli

Layers on one rank (``querynode`` and ``datanode``; ``querycoord``, ``datacoord`` and ``proxy``;
``rpc``, ``http`` and ``client``; ``deploy`` and ``dashboard``) do not import
each other.  Every import counts for the direction, a lazy one inside a
function too: a lazy import hides a dependency, it does not remove it.  For cycles, the imports
made when a module is loaded count (module level, ``TYPE_CHECKING`` blocks included: a type-only
cycle is still two modules that cannot be understood apart).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vecgrid"

# (rank, package prefix); the longest matching prefix decides a module's layer.
LAYERS = [
    (0, "vecgrid"),            # the package itself: __version__, pins
    (0, "vecgrid.common"),
    (0, "vecgrid.errors"),
    (0, "vecgrid.config"),
    (1, "vecgrid.proto"),
    (2, "vecgrid.storage"),
    (3, "vecgrid.gpu"),
    (4, "vecgrid.cluster"),
    (5, "vecgrid.cluster.querynode"),
    (5, "vecgrid.cluster.datanode"),
    (6, "vecgrid.cluster.querycoord"),
    (6, "vecgrid.cluster.datacoord"),
    (6, "vecgrid.cluster.proxy"),
    (7, "vecgrid.rpc"),
    (7, "vecgrid.http"),
    (7, "vecgrid.client"),
    # The query node's Dask worker plugin: workers import it (by reference, from its pickle) and what its
    # setup imports, not the coordinator's servers in vecgrid.deploy.
    (7.5, "vecgrid.node_plugin"),
    (8, "vecgrid.deploy"),
    # The Dask scheduler's preload (`--preload vecgrid.dashboard`, a public name): its JSON route is an
    # HTTP handler on the one base (vecgrid.http.base), so it sits above http; deploy loads it by name only.
    (8, "vecgrid.dashboard"),
    (9, "vecgrid.cli"),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> tuple[int, str]:
    best = max((prefix for _, prefix in LAYERS if module == prefix or module.startswith(prefix + ".")), key=len)
    return dict((p, r) for r, p in LAYERS)[best], best


def hand_written_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")
            if not p.name.endswith(("_pb2.py", "_pb2_grpc.py"))}


def _resolve(target: str, name: str, modules: set[str]) -> str:
    """``from target import name``: the submodule when ``name`` is one, else ``target``."""
    sub = f"{target}.{name}"
    return sub if sub in modules or _is_generated(sub) else target


def _is_generated(module: str) -> bool:
    return module.startswith("vecgrid.proto.") and module.endswith(("_pb2", "_pb2_grpc"))


def _statements(body: list[ast.stmt]):
    """Every statement in ``body`` and the blocks nested in it, expressions skipped: imports are statements,
    and walking only statements is a tenth of walking every node."""
    for stmt in body:
        yield stmt
        for block in (getattr(stmt, "body", None), getattr(stmt, "orelse", None), getattr(stmt, "finalbody", None),
                      *[h.body for h in getattr(stmt, "handlers", ())],
                      *[c.body for c in getattr(stmt, "cases", ())]):
            if isinstance(block, list):
                yield from _statements(block)


@functools.lru_cache(maxsize=None)
def _vecgrid_imports(path: Path, mtime_ns: int) -> tuple[tuple[str, str | None, int, bool], ...]:
    """``(module, imported name or None, line, at load time)`` of a file's vecgrid imports, read once for
    the tests of this module (parsing the package's ~250 files takes about a second)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    at_load: set[int] = set()

    def walk_load_time(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                at_load.add(id(stmt))
            elif isinstance(stmt, (ast.If, ast.Try)):   # `if TYPE_CHECKING:`, `try: import x`
                for block in (getattr(stmt, "body", []), getattr(stmt, "orelse", []),
                              getattr(stmt, "finalbody", []),
                              *[h.body for h in getattr(stmt, "handlers", [])]):
                    walk_load_time(block)

    walk_load_time(tree.body)
    package = module_name(path).split(".") if path.name == "__init__.py" else module_name(path).split(".")[:-1]
    out = []
    for node in _statements(tree.body):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:   # relative: counted from this module's package
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            if base == "vecgrid" or base.startswith("vecgrid."):
                out.extend((base, alias.name, node.lineno, id(node) in at_load) for alias in node.names)
        elif isinstance(node, ast.Import):
            out.extend((alias.name, None, node.lineno, id(node) in at_load) for alias in node.names
                       if alias.name == "vecgrid" or alias.name.startswith("vecgrid."))
    return tuple(out)


def imports_of(path: Path, modules: set[str]) -> list[tuple[str, int, bool]]:
    """``(imported module, line, at load time)`` for every vecgrid import of a file."""
    return [(base if name is None else _resolve(base, name, modules), line, at_load)
            for base, name, line, at_load in _vecgrid_imports(path, path.stat().st_mtime_ns)]


def test_imports_point_down_the_layers():
    modules = hand_written_modules()
    wrong = []
    for name, path in sorted(modules.items()):
        rank, layer = layer_of(name)
        for target, line, _ in imports_of(path, set(modules)):
            t_rank, t_layer = layer_of(target)
            if t_rank > rank or (t_rank == rank and t_layer != layer and not _inside(layer, t_layer)):
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {name} ({layer}) imports {target} ({t_layer})")
    assert not wrong, "imports that point the wrong way:\n" + "\n".join(wrong)


def _inside(layer: str, other: str) -> bool:
    """The package itself (rank 0 ``vecgrid``) may be imported from any rank-0 module."""
    return other == "vecgrid" or layer == "vecgrid"


# Cycles tolerated for now (sets of module names); none left.
KNOWN_CYCLES: list[set[str]] = []


def test_no_import_cycles():
    modules = hand_written_modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target, _, at_load in imports_of(path, set(modules)):
            if at_load and target in modules and target != name:
                graph[name].add(target)
    cycles = [c for c in _strongly_connected(graph) if len(c) > 1 and set(c) not in KNOWN_CYCLES]
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(sorted(c)) for c in cycles)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph has a few hundred nodes)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(component)
    return out


@pytest.mark.parametrize("source, expect_wrong", [
    ("from vecgrid.rpc.server import GrpcServer\n", True),          # storage -> rpc
    ("from vecgrid.gpu.merge import TopK\n", True),                  # storage -> gpu
    ("def f():\n    from vecgrid.cluster.querynode import node\n", True),  # lazy, still wrong
    ("class C:\n    def f(self):\n        with x:\n            try:\n                pass\n"
     "            except E:\n                from vecgrid.rpc import server\n", True),   # nested blocks
    ("from vecgrid.proto import common_pb2\nfrom vecgrid import errors\n", False),
])
def test_the_checker_sees_a_wrong_import(tmp_path, monkeypatch, source, expect_wrong):
    """The direction check itself: a storage module that imports upwards is reported."""
    fake_root = tmp_path
    pkg = fake_root / "vecgrid" / "storage"
    pkg.mkdir(parents=True)
    (fake_root / "vecgrid" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.py").write_text(source)
    monkeypatch.setitem(globals(), "ROOT", fake_root)
    monkeypatch.setitem(globals(), "PACKAGE", fake_root / "vecgrid")
    if expect_wrong:
        with pytest.raises(AssertionError, match="storage/bad.py"):
            test_imports_point_down_the_layers()
    else:
        test_imports_point_down_the_layers()


def test_the_checker_sees_a_cycle(tmp_path, monkeypatch):
    pkg = tmp_path / "vecgrid" / "gpu"
    pkg.mkdir(parents=True)
    (tmp_path / "vecgrid" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from vecgrid.gpu import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from vecgrid.gpu.a import X\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path / "vecgrid")
    monkeypatch.setitem(globals(), "KNOWN_CYCLES", [])
    with pytest.raises(AssertionError, match="vecgrid.gpu.a -> vecgrid.gpu.b"):
        test_no_import_cycles()
