"""The test suite's own shape: test modules import helpers from ``*_support.py`` (or conftest), never from
another test module.

A helper imported from a test module runs that module's imports and fixtures wherever it is used, ties
the two files' edits together, and hides a shared helper among tests. The child-process scripts that
tests keep in strings count too: they import like any module.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# `import test_x`, `from test_x import`, `from tests.test_x import`, `import tests.test_x`, `from .test_x import`
_IMPORT_IN_TEXT = re.compile(r"^\s*(?:from|import)\s+(?:tests)?\.?(test_\w+)\b", re.M)


def _is_test_module(name: str | None) -> str | None:
    """The test module a dotted import names, if it names one."""
    if not name:
        return None
    parts = name.split(".")
    if parts[0] == "tests":
        parts = parts[1:]
    return parts[0] if parts and parts[0].startswith("test_") else None


# Every spelling above has a line with `import` and `test_`, or `from tests import` / `from . import`
# (a parenthesised list on the lines after): a file with neither is not parsed.
_MAY_IMPORT_A_TEST_MODULE = re.compile(r"^[^\n]*\bimport\b[^\n]*\btest_|^[^\n]*\btest_\w*[^\n]*\bimport\b"
                                       r"|\bfrom\s+(?:tests|\.)\s+import\b", re.M)


def imports_of_test_modules(path: Path) -> list[str]:
    """``module`` for each import of a test module in the file at ``path`` (code and string scripts)."""
    text = path.read_text()
    if not _MAY_IMPORT_A_TEST_MODULE.search(text):
        return []
    tree = ast.parse(text, str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [m for alias in node.names if (m := _is_test_module(alias.name))]
        elif isinstance(node, ast.ImportFrom):
            if (m := _is_test_module(node.module)) is not None:
                found.append(m)
            elif node.module in (None, "tests"):  # `from tests import test_x`, `from . import test_x`
                found += [alias.name for alias in node.names if alias.name.startswith("test_")]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += _IMPORT_IN_TEXT.findall(node.value)
    return found


def offenders(tests_dir: Path) -> dict[str, list[str]]:
    out = {}
    for path in sorted(tests_dir.glob("*.py")):
        if imported := imports_of_test_modules(path):
            out[path.name] = sorted(set(imported))
    return out


def test_no_module_of_the_suite_imports_a_test_module():
    found = offenders(TESTS)
    found.pop(Path(__file__).name)  # its own examples below, which it must see
    assert found == {}, "move the helpers into a tests/*_support.py module"


def test_the_check_sees_every_spelling(tmp_path):
    spellings = {
        "a.py": "from tests.test_x import helper\n",
        "b.py": "import tests.test_x\n",
        "c.py": "from tests import test_x\n",
        "d.py": "def f():\n    from test_x import helper\n",
        "e.py": 'SCRIPT = """\nimport sys\nfrom test_x import helper\n"""\n',
        "f.py": "from . import test_x\n",
        "ok.py": "from tests.querynode_support import helper\nimport testing_tools\nfrom tests.conftest import x\n",
    }
    for name, text in spellings.items():
        (tmp_path / name).write_text(text)
    assert offenders(tmp_path) == {name: ["test_x"] for name in spellings if name != "ok.py"}
