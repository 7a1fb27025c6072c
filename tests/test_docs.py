"""The documentation stays usable from a clone.

- Every relative link of every Markdown file in the repository (``[text](path)``,
  ``[text](path#anchor)``, images and reference definitions too) leads to a file that exists, and an
  anchor to a heading of the file it names.
- No link, and no backticked path, leads outside the repository: a clone holds nothing beside itself
  (the README once pointed at ``../shared/...``). The package's sources (and scripts/, bench/) are
  checked for such paths too, and a ``docs/...`` path they name must exist.
- The README stays one screen of essentials: at most 250 lines; the rest belongs in docs/.
- docs/configuration.md's settings block is a settings file naming every setting with its default.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from pathlib import Path
from urllib.parse import unquote

from vecgrid.config import Settings
from tests.conftest import REPO

README_MAX_LINES = 250

# Folders that are not the project's own text (environments, caches, installed packages, build output).
SKIPPED_DIRS = {"node_modules", "build", "dist"}
SOURCE_DIRS = ("vecgrid", "scripts", "bench")

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); the text may hold one level of brackets.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
URL_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# `../x` at the start of a span or after a separator, not the ellipsis in `.../x`
PARENT_STEP = re.compile(r"(?:^|[\s(/\"'=])\.\./")


def _files(top: Path, suffix: str) -> list[Path]:
    """Files under ``top`` ending in ``suffix``, never walking into a skipped folder (.venv is large)."""
    out = []
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if not (d.startswith(".") or d in SKIPPED_DIRS or d.endswith(".egg-info"))]
        out.extend(Path(folder) / name for name in names if name.endswith(suffix))
    return sorted(out)


def markdown_files(root: Path) -> list[Path]:
    return _files(root, ".md")


def source_files(root: Path) -> list[Path]:
    """The code a user gets (the tests hold such paths as data for their own checks)."""
    return [p for folder in SOURCE_DIRS if (root / folder).is_dir() for p in _files(root / folder, ".py")]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of the lines outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: links become their text, code marks go, then lower case with
    everything but letters, digits, ``_``, ``-`` and spaces dropped and spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(path.read_text()):
        found.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if heading:
            base = slug(heading.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")   # GitHub numbers repeated headings
    return found


def _inside(path: Path, root: Path) -> bool:
    return Path(os.path.normpath(path)).is_relative_to(root)


# A backticked path from the repository root (``vecgrid/http/base.py``, ``bench/*.py``), or from the package
# (``cluster/proxy/lb_policy.py``, as the code map writes them): it must name what is there.
REPO_PATH = re.compile(r"(vecgrid|tests|bench|docs|docker|scripts)/[\w./*-]*")
PACKAGE_PATH = re.compile(r"(storage|cluster|http|gpu|rpc|common|client|proto)/[\w./*-]*")


def _names_a_file(span: str, root: Path) -> bool:
    if REPO_PATH.fullmatch(span):
        path = span
    elif PACKAGE_PATH.fullmatch(span):
        path = f"vecgrid/{span}"
    else:
        return True   # not a path
    return any(root.glob(path.rstrip("/"))) if "*" in path else (root / path).exists()


def link_problems(md: Path, root: Path) -> list[str]:
    """Dead or outward links and outward backticked paths of one Markdown file."""
    problems = []
    where = md.relative_to(root)
    for number, line in prose_lines(md.read_text()):
        spans = [m.group(2) for m in CODE_SPAN.finditer(line)]
        for span in spans:
            if PARENT_STEP.search(span) and not _inside(md.parent / span.split("#")[0], root):
                problems.append(f"{where}:{number}: `{span}` points outside the repository")
            elif not _names_a_file(span, root):
                problems.append(f"{where}:{number}: `{span}` names no file of the repository")
        prose = CODE_SPAN.sub("", line)   # a link written as code is not a link
        targets = INLINE_LINK.findall(prose) + REFERENCE_DEFINITION.findall(prose)
        for target in targets:
            if URL_SCHEME.match(target):
                continue   # http(s):, mailto:: not a file of this repository
            path_part, _, anchor = target.partition("#")
            path_part = unquote(path_part)
            if not path_part:
                resolved = md
            elif path_part.startswith("/"):
                resolved = root / path_part.lstrip("/")   # GitHub reads /x as the repository's x
            else:
                resolved = md.parent / path_part
            resolved = Path(os.path.normpath(resolved))
            if not _inside(resolved, root):
                problems.append(f"{where}:{number}: link {target} points outside the repository")
            elif not resolved.exists():
                problems.append(f"{where}:{number}: dead link {target}")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                problems.append(f"{where}:{number}: link {target}: no heading #{anchor} in {resolved.relative_to(root)}")
    return problems


def source_problems(source: Path, root: Path) -> list[str]:
    """Backticked paths in a Python file that leave the repository, or name a docs page that is not there.
    Its paths are written from the repository root (``docs/rest-api.md``)."""
    problems = []
    for number, line in enumerate(source.read_text().splitlines(), 1):
        for span in (m.group(2) for m in CODE_SPAN.finditer(line)):
            path = span.split("#")[0]
            if PARENT_STEP.search(span) and not _inside(root / path, root):
                problems.append(f"{source.relative_to(root)}:{number}: `{span}` points outside the repository")
            elif re.fullmatch(r"docs/[\w./-]+", path) and not (root / path).exists():
                problems.append(f"{source.relative_to(root)}:{number}: `{span}` does not exist")
    return problems


def repository_problems(root: Path) -> list[str]:
    return ([p for md in markdown_files(root) for p in link_problems(md, root)]
            + [p for src in source_files(root) for p in source_problems(src, root)])


def test_links_lead_to_files_inside_the_repository():
    problems = repository_problems(REPO)
    assert not problems, "\n".join(problems)


def test_the_checker_sees_dead_and_outward_links(tmp_path):
    """The check itself, on a small tree: each kind of fault is reported, and good links are not."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "vecgrid").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## Some `code` here\n")
    (tmp_path / "README.md").write_text(
        "[good](docs/a.md) [anchor](docs/a.md#some-code-here) [web](https://example.com) [self](#top)\n"
        "# Top\n"
        "[dead](docs/missing.md)\n"
        "[bad anchor](docs/a.md#nowhere)\n"
        "See `../shared/spec.md` and [up](../shared/ARCHITECTURE.md).\n"
        "```\n[in a code block](not/checked.md)\n```\n"
        "`[written as code](not/a/link.md)` and the ellipsis `.../partitions/NAME`\n"
        "`vecgrid/mod.py`, `vecgrid/*.py`, `cluster/gone.py` and `docs/*.txt`\n")
    (tmp_path / "vecgrid" / "mod.py").write_text(
        '"""Built to ``../shared/spec/x.md``; see ``docs/a.md`` and ``docs/gone.md``."""\n')
    problems = repository_problems(tmp_path)
    expected = ["README.md:3: dead link docs/missing.md",
                "README.md:4: link docs/a.md#nowhere: no heading #nowhere in docs/a.md",
                "README.md:5: `../shared/spec.md` points outside the repository",
                "README.md:5: link ../shared/ARCHITECTURE.md points outside the repository",
                "README.md:10: `cluster/gone.py` names no file of the repository",
                "README.md:10: `docs/*.txt` names no file of the repository",
                "vecgrid/mod.py:1: `../shared/spec/x.md` points outside the repository",
                "vecgrid/mod.py:1: `docs/gone.md` does not exist"]
    assert sorted(problems) == sorted(expected)


def test_the_readme_stays_short():
    lines = len((REPO / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move details into docs/"


def test_the_configuration_page_lists_every_setting_with_its_default():
    text = (REPO / "docs" / "configuration.md").read_text()
    (block,) = re.findall(r"```toml\n(.*?)```", text, flags=re.S)
    documented = tomllib.loads(block)
    defaults = Settings()
    actual = {section.name: {key.name: getattr(getattr(defaults, section.name), key.name)
                             for key in dataclasses.fields(getattr(defaults, section.name))}
              for section in dataclasses.fields(defaults)}
    assert documented == actual
    # TOML's 1.0 equals 1 in Python; the page should show a float setting as a float
    for section, values in actual.items():
        for key, value in values.items():
            assert type(documented[section][key]) is type(value), f"{section}.{key}"
