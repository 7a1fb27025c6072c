"""Definition changes of the catalog have one owner: :class:`vecgrid.cluster.querycoord.ddl.Ddl`.

REST services, gRPC servicers and the CLI go through it, so a change is checked, ordered against loads
(release before drop, load a new partition of a loaded collection) and refused while the coordinator is
not serving, the same way from every door.  The check reads the code: any other module that reaches a
catalog's definition-writing method (called, or handed to a thread) is reported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import REPO

DEFINITION_WRITES = {"create_collection", "drop_collection", "alter_collection", "rename_collection",
                     "create_partition", "drop_partition", "create_index", "drop_index"}
OWNER = "vecgrid/cluster/querycoord/ddl.py"
# Bulk import creates the collection, partition and index it imports into, and its job undoes that when the
# import fails: the one other writer (an import runs on the coordinator's catalog, or offline on a data dir).
ALSO_ALLOWED = {"vecgrid/cluster/datanode/bulk_import.py", "vecgrid/cluster/datacoord/imports.py"}


def _reaches_a_catalog(node: ast.Attribute) -> bool:
    value = node.value
    name = value.attr if isinstance(value, ast.Attribute) else value.id if isinstance(value, ast.Name) else ""
    return name.endswith("catalog")


# A file that never names a writing method cannot call one: only the others are parsed (parsing the whole
# package took most of this module's three seconds).
_NAMES_A_WRITE = re.compile(r"\b(?:" + "|".join(sorted(DEFINITION_WRITES)) + r")\b")


def definition_writes(path: Path, root: Path = REPO) -> list[str]:
    text = path.read_text()
    if not _NAMES_A_WRITE.search(text):
        return []
    tree = ast.parse(text, str(path))
    found = [(node.lineno, node.attr) for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr in DEFINITION_WRITES and _reaches_a_catalog(node)]
    return [f"{path.relative_to(root)}:{line}: catalog.{attr}" for line, attr in sorted(found)]


def test_only_the_ddl_writes_definitions():
    found = []
    for path in sorted((REPO / "vecgrid").rglob("*.py")):
        rel = str(path.relative_to(REPO))
        if rel.startswith("vecgrid/storage/") or rel in ALSO_ALLOWED or rel == OWNER:
            continue
        found += definition_writes(path)
    assert found == [], "definition changes that bypass Ddl:\n" + "\n".join(found)


def test_the_owner_is_seen_writing(tmp_path):
    """The check itself: the owner's own writes are found, and so is a handler that writes directly."""
    assert any("create_index" in w for w in definition_writes(REPO / OWNER))
    handler = tmp_path / "handler.py"
    handler.write_text("async def patch(self):\n"
                       "    await asyncio.to_thread(self.catalog.rename_collection, 'db', 'a', 'b')\n"
                       "    self.coord.catalog.create_partition(1, 'p')\n"
                       "    self.catalog.describe_collection('db', 'a')\n")
    assert definition_writes(handler, tmp_path) == ["handler.py:2: catalog.rename_collection",
                                                    "handler.py:3: catalog.create_partition"]
