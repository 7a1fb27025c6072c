"""Tests for the hand-written Milvus-compatible protos in vecgrid/proto/.

a. Staleness: the committed ``*_pb2.py`` / ``*_pb2.pyi`` / ``*_pb2_grpc.py``
   are exactly what ``scripts/gen_protos.py`` produces from the sources.
b. Seed vs descriptors: every message, field, enum and method of the seed
   (``shared/seeds/query-coord-rpc.md``, vendored under ``tests/spec/``) is
   compared with the compiled ``vecgrid.proto.query_coord_pb2``.  The seed
   parser is strict: a bullet, statement or table row it cannot understand
   fails the test, so no spec item is silently skipped.
c. Imported types: the facts sheet ``shared/spec/imported-types.md`` (skipped
   when absent) is compared with the descriptors of the other modules.
d. Round trips of populated messages through the wire format.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import re
import subprocess
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pytest
from google.protobuf.descriptor import FieldDescriptor

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = REPO_ROOT / "vecgrid" / "proto"
GEN_SCRIPT = REPO_ROOT / "scripts" / "gen_protos.py"
SHARED_SEED = REPO_ROOT.parent / "shared" / "seeds" / "query-coord-rpc.md"
VENDORED_SEED = Path(__file__).resolve().parent / "spec" / "query-coord-rpc.md"
IMPORTED_SHEET = REPO_ROOT.parent / "shared" / "spec" / "imported-types.md"

GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")
QUERY_PKG = "milvus.proto.query"
# Short names of the proto packages (``milvus.proto.<short>``).
PACKAGES = {"common", "schema", "rg", "msg", "feder", "milvus", "internal", "data", "index", "plan", "query"}

SCALAR_TYPES = {
    "double": FieldDescriptor.TYPE_DOUBLE,
    "float": FieldDescriptor.TYPE_FLOAT,
    "int32": FieldDescriptor.TYPE_INT32,
    "int64": FieldDescriptor.TYPE_INT64,
    "uint32": FieldDescriptor.TYPE_UINT32,
    "uint64": FieldDescriptor.TYPE_UINT64,
    "sint32": FieldDescriptor.TYPE_SINT32,
    "sint64": FieldDescriptor.TYPE_SINT64,
    "fixed32": FieldDescriptor.TYPE_FIXED32,
    "fixed64": FieldDescriptor.TYPE_FIXED64,
    "sfixed32": FieldDescriptor.TYPE_SFIXED32,
    "sfixed64": FieldDescriptor.TYPE_SFIXED64,
    "bool": FieldDescriptor.TYPE_BOOL,
    "string": FieldDescriptor.TYPE_STRING,
    "bytes": FieldDescriptor.TYPE_BYTES,
}

# The seed does not say which package each imported type lives in.  This is
# the resolution given by the imported-types facts sheet (and the project
# brief): (seed qualifier, name) -> package short name.
IMPORTED_TYPE_PACKAGES = {
    (None, "MsgBase"): "common",
    (None, "Status"): "common",
    (None, "KeyValuePair"): "common",
    (None, "NodeInfo"): "common",
    (None, "SegmentState"): "common",
    (None, "CollectionSchema"): "schema",
    (None, "LongArray"): "schema",
    (None, "IDs"): "schema",
    (None, "MsgPosition"): "msg",
    (None, "VchannelInfo"): "data",
    ("data", "SegmentInfo"): "data",
    (None, "FieldBinlog"): "data",
    # query_coord.proto at the pinned version uses data.SegmentLevel, not
    # common.SegmentLevel (same values).
    (None, "SegmentLevel"): "data",
    (None, "IndexInfo"): "index",
    (None, "ResourceGroupConfig"): "rg",
}
# Request/response types the endpoint tables mark "(imported)" come from
# milvus.proto.milvus ("(internal)" ones from milvus.proto.internal).
ENDPOINT_QUALIFIER_PACKAGES = {"imported": "milvus", "internal": "internal"}
# Untyped shorthand fields whose type the seed's notation implies.
IMPLIED_FIELD_TYPES = {
    "base": (None, "MsgBase"),
    "status": (None, "Status"),
    "schema": (None, "CollectionSchema"),
    "load_meta": (None, "LoadMetaInfo"),
}
EXPECTED_METHOD_COUNTS = {"QueryCoord": 39, "QueryNode": 26}


class SpecParseError(AssertionError):
    """A spec item the parser does not understand (fails the test)."""


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def split_top(text: str, seps: str) -> list[str]:
    """Split on any char of ``seps`` outside (), <> and []."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
            if depth < 0:
                raise SpecParseError(f"unbalanced brackets in {text!r}")
        if ch in seps and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise SpecParseError(f"unbalanced brackets in {text!r}")
    parts.append("".join(cur))
    return parts


def split_sentences(text: str) -> list[str]:
    """Split on '.' followed by whitespace/end, outside brackets."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        elif ch == "." and depth == 0 and (i + 1 == len(text) or text[i + 1].isspace()):
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def is_repeated(fd: FieldDescriptor) -> bool:
    if hasattr(fd, "is_repeated"):
        return bool(fd.is_repeated)
    return fd.label == FieldDescriptor.LABEL_REPEATED  # older protobuf


def is_map(fd: FieldDescriptor) -> bool:
    return (
        fd.type == FieldDescriptor.TYPE_MESSAGE
        and fd.message_type is not None
        and fd.message_type.GetOptions().map_entry
    )


def field_kind(fd: FieldDescriptor) -> str:
    if is_map(fd):
        return "map"
    return "repeated" if is_repeated(fd) else "singular"


def describe_type(fd: FieldDescriptor) -> str:
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        return fd.message_type.full_name
    if fd.type == FieldDescriptor.TYPE_ENUM:
        return fd.enum_type.full_name
    for name, t in SCALAR_TYPES.items():
        if t == fd.type:
            return name
    return f"<type {fd.type}>"


def seed_path() -> Path:
    return SHARED_SEED if SHARED_SEED.is_file() else VENDORED_SEED


def section(text: str, heading: str, level: int) -> str:
    """Body of the markdown section whose heading line is ``heading``."""
    lines = text.splitlines()
    marker = "#" * level + " "
    for i, line in enumerate(lines):
        if line.strip() == heading:
            body = []
            for nxt in lines[i + 1 :]:
                m = re.match(r"^(#+) ", nxt)
                if m and len(m.group(1)) <= level:
                    break
                body.append(nxt)
            return "\n".join(body)
    raise SpecParseError(f"section {heading!r} not found (level {level}, marker {marker!r})")


def subsections(body: str, level: int, allow_preamble: bool = False) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    cur = None
    pre = []
    for line in body.splitlines():
        m = re.match(r"^(#+) (.*)$", line)
        if m and len(m.group(1)) == level:
            cur = m.group(2).strip()
            out[cur] = []
        elif cur is None:
            pre.append(line)
        else:
            out[cur].append(line)
    if any(line.strip() for line in pre) and not allow_preamble:
        raise SpecParseError(f"text before the first subsection: {pre!r}")
    return {k: "\n".join(v) for k, v in out.items()}


def table_rows(body: str, header: list[str]) -> list[list[str]]:
    """Rows of the single markdown table in ``body`` (header checked)."""
    rows = [line.strip() for line in body.splitlines() if line.strip().startswith("|")]
    if len(rows) < 2:
        raise SpecParseError(f"no table in {body[:80]!r}")
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    if cells[0] != header:
        raise SpecParseError(f"table header {cells[0]} != {header}")
    if not all(re.fullmatch(r":?-+:?", c) for c in cells[1]):
        raise SpecParseError(f"bad table separator {rows[1]!r}")
    for r, c in zip(rows[2:], cells[2:]):
        if len(c) != len(header):
            raise SpecParseError(f"table row has {len(c)} cells: {r!r}")
    return cells[2:]


# ---------------------------------------------------------------------------
# seed model and parser
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TypeRef:
    name: str  # scalar type, or short message/enum name
    qualifier: str | None = None  # "data", "internal", "imported" or None

    @property
    def is_scalar(self) -> bool:
        return self.qualifier is None and self.name in SCALAR_TYPES


@dataclass
class SeedField:
    name: str
    number: int
    kind: str  # "singular" | "repeated" | "map"
    type: TypeRef | None  # value type for maps; None = not given (yet)
    key_type: TypeRef | None = None
    explicit: bool = False  # the seed spelled the type out
    deprecated: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass
class SeedMessage:
    name: str
    fields: dict[str, SeedField] = field(default_factory=dict)
    unused: set[int] = field(default_factory=set)
    description: str | None = None


@dataclass
class SeedMethod:
    name: str
    request: TypeRef
    response: TypeRef
    client_streaming: bool
    server_streaming: bool


@dataclass
class Seed:
    messages: dict[str, SeedMessage]
    enums: dict[str, dict[str, int]]
    services: dict[str, list[SeedMethod]]
    imported: dict[tuple[str | None, str], str | None]  # (qualifier, name) -> package hint
    deprecated_list: set[tuple[str, str]]


_REF_RE = re.compile(r"(?:(?P<q>[a-z]+)\s+)?(?P<name>[A-Za-z_]\w*)(?P<imp>\s*\(imported\))?")
_FIELD_RE = re.compile(
    r"(?P<name>[A-Za-z_]\w*)\s*(?::\s*(?P<type>[^=]+?))?\s*=\s*(?P<num>\d+)\s*(?:\((?P<note>.*)\))?"
)
_UNUSED_RE = re.compile(r"[Ff]ield numbers? (?P<nums>\d+(?:(?:,\s*|\s+and\s+)\d+)*) (?:is|are) unused")
_GROUP_TYPE_RE = re.compile(r"(?:all\s+)?(?P<t>" + "|".join(SCALAR_TYPES) + r")")


def parse_ref(text: str) -> TypeRef:
    m = _REF_RE.fullmatch(text.strip())
    if not m:
        raise SpecParseError(f"cannot parse type {text!r}")
    q = m["q"]
    if q is not None and q not in PACKAGES:
        raise SpecParseError(f"unknown type qualifier {q!r} in {text!r}")
    if m["imp"]:
        if q is not None:
            raise SpecParseError(f"both a qualifier and (imported) in {text!r}")
        q = "imported"
    return TypeRef(m["name"], q)


def parse_field_type(text: str) -> tuple[str, TypeRef | None, TypeRef]:
    """-> (kind, key type, value type)"""
    text = text.strip()
    kind = "singular"
    if text.startswith("rep "):
        kind, text = "repeated", text[4:].strip()
    m = re.fullmatch(r"map<(?P<k>[^,<>]+),(?P<v>[^,<>]+)>", text)
    if m:
        if kind == "repeated":
            raise SpecParseError(f"repeated map {text!r}")
        return "map", parse_ref(m["k"]), parse_ref(m["v"])
    return kind, None, parse_ref(text)


def parse_field_list(body: str, msg: SeedMessage) -> None:
    items = [s.strip() for s in split_top(body, ",;")]
    group_start = 0  # fields since the last "(all int64)" group note
    order: list[SeedField] = []
    for item in items:
        if not item:
            raise SpecParseError(f"empty field item in {body!r}")
        m = _FIELD_RE.fullmatch(item)
        if not m:
            raise SpecParseError(f"cannot parse field {item!r} of {msg.name}")
        name, number = m["name"], int(m["num"])
        if m["type"]:
            kind, key, val = parse_field_type(m["type"])
            f = SeedField(name, number, kind, val, key, explicit=True)
        elif name in IMPLIED_FIELD_TYPES:
            q, t = IMPLIED_FIELD_TYPES[name]
            f = SeedField(name, number, "singular", TypeRef(t, q))
        else:
            f = SeedField(name, number, "singular", None)
        if name in msg.fields:
            raise SpecParseError(f"duplicate field {name} in {msg.name}")
        if number in {x.number for x in msg.fields.values()}:
            raise SpecParseError(f"duplicate field number {number} in {msg.name}")
        msg.fields[name] = f
        order.append(f)
        note = m["note"]
        if note is None:
            continue
        note = note.strip()
        f.notes.append(note)
        g = _GROUP_TYPE_RE.fullmatch(note)
        if g:
            for prev in order[group_start:]:
                if prev.type is None:
                    prev.type = TypeRef(g["t"])
                    prev.explicit = True
            group_start = len(order)
            continue
        if note.lower().startswith("deprecated"):
            f.deprecated = True
        u = _UNUSED_RE.search(note)
        if u:
            msg.unused |= {int(n) for n in re.findall(r"\d+", u["nums"])}


def parse_resource_bullet(bullet: str, messages: dict[str, SeedMessage]) -> None:
    last: SeedMessage | None = None
    for stmt in split_sentences(bullet):
        if re.fullmatch(r"\(.*\)", stmt):  # an aside, e.g. "(No operation uses these two.)"
            continue
        u = _UNUSED_RE.fullmatch(stmt)
        if u:
            if last is None:
                raise SpecParseError(f"'unused' sentence before any message: {bullet!r}")
            last.unused |= {int(n) for n in re.findall(r"\d+", u["nums"])}
            continue
        parts = split_top(stmt, ":")
        if len(parts) < 2:
            raise SpecParseError(f"cannot parse statement {stmt!r} in bullet {bullet!r}")
        header, body = parts[0], ":".join(parts[1:]).strip()
        names = []
        for h in split_top(header, ","):
            hm = re.fullmatch(r"(?P<n>[A-Z]\w*)(?:\s*\((?P<d>[^()]*)\))?", h.strip())
            if not hm:
                raise SpecParseError(f"cannot parse message name {h!r} in {bullet!r}")
            names.append((hm["n"], hm["d"]))
        if body == "same fields":
            if last is None:
                raise SpecParseError(f"'same fields' without a previous message: {bullet!r}")
            template = last
        else:
            only = re.fullmatch(r"(?P<b>.*?)\s+only", body)
            template = SeedMessage("<template>")
            parse_field_list(only["b"] if only else body, template)
        for n, d in names:
            if n in messages:
                raise SpecParseError(f"message {n} defined twice")
            msg = SeedMessage(n, copy.deepcopy(template.fields), set(template.unused), d)
            messages[n] = msg
            last = msg


def parse_imported_list(body: str) -> dict[tuple[str | None, str], str | None]:
    text = " ".join(body.split())
    m = re.search(r"These are used but defined elsewhere: (?P<list>.*?)\. Their fields", text)
    if not m:
        raise SpecParseError("imported-types sentence not found")
    out: dict[tuple[str | None, str], str | None] = {}
    for item in split_top(m["list"], ","):
        item = item.strip()
        if item == "and the internal request and response types":
            continue
        im = re.fullmatch(r"(?:(?P<q>[a-z]+)\s+)?(?P<n>[A-Z]\w*)(?:\s*\((?P<pkg>[a-z]+)\))?", item)
        if not im:
            raise SpecParseError(f"cannot parse imported type {item!r}")
        out[(im["q"], im["n"])] = im["pkg"] or im["q"]
    return out


def parse_endpoint_cell(cell: str, where: str) -> tuple[TypeRef, bool]:
    m = re.fullmatch(r"(?P<s>stream of\s+)?(?P<n>[A-Z]\w*)(?:\s*\((?P<q>imported|internal)\))?", cell)
    if not m:
        raise SpecParseError(f"cannot parse endpoint cell {cell!r} ({where})")
    return TypeRef(m["n"], m["q"]), bool(m["s"])


@lru_cache(maxsize=None)
def load_seed() -> Seed:
    text = seed_path().read_text(encoding="utf-8")

    # Resources and their fields ------------------------------------------------
    resources = subsections(section(text, "## Resources and their fields", 2), 3)
    messages: dict[str, SeedMessage] = {}
    enums: dict[str, dict[str, int]] = {}
    imported = None
    for title, body in resources.items():
        if title.startswith("Enumerations"):
            for name, values in table_rows(body, ["Enum", "Values"]):
                if not re.fullmatch(r"[A-Z]\w*", name) or name in enums:
                    raise SpecParseError(f"bad enum row name {name!r}")
                vals: dict[str, int] = {}
                for v in values.split(","):
                    vm = re.fullmatch(r"\s*([A-Za-z_]\w*)=(\d+)\s*", v)
                    if not vm or vm[1] in vals:
                        raise SpecParseError(f"cannot parse enum value {v!r} of {name}")
                    vals[vm[1]] = int(vm[2])
                enums[name] = vals
            continue
        if title == "Imported types":
            imported = parse_imported_list(body)
            continue
        if not title.endswith("messages"):
            raise SpecParseError(f"unexpected Resources subsection {title!r}")
        for line in body.splitlines():
            s = line.strip()
            if not s:
                continue
            if not s.startswith("- "):
                raise SpecParseError(f"unexpected non-bullet line in {title!r}: {s!r}")
            parse_resource_bullet(s[2:], messages)
    if not messages or not enums or imported is None:
        raise SpecParseError("Resources section incomplete")

    # Resolve implied types of untyped fields ("dbID=2"): the type the same
    # field name has wherever the seed spells it out (must be unambiguous).
    explicit: dict[str, set[TypeRef]] = {}
    for msg in messages.values():
        for f in msg.fields.values():
            if f.explicit and f.kind == "singular":
                explicit.setdefault(f.name, set()).add(f.type)
    for msg in messages.values():
        for f in msg.fields.values():
            if f.type is None:
                cands = explicit.get(f.name, set())
                if len(cands) != 1:
                    raise SpecParseError(f"cannot infer the type of {msg.name}.{f.name} (candidates {cands})")
                f.type = next(iter(cands))

    # Endpoints ----------------------------------------------------------------
    endpoints = subsections(section(text, "## Endpoints", 2), 3, allow_preamble=True)
    services: dict[str, list[SeedMethod]] = {}
    for title, body in endpoints.items():
        sm = re.fullmatch(r".*\((?P<svc>\w+)\)", title)
        if not sm:
            raise SpecParseError(f"unexpected Endpoints subsection {title!r}")
        methods = []
        for op, req, resp in table_rows(body, ["Operation", "Request", "Response"]):
            if not re.fullmatch(r"[A-Z]\w*", op):
                raise SpecParseError(f"bad operation name {op!r}")
            rq, cs = parse_endpoint_cell(req, f"{sm['svc']}.{op} request")
            rs, ss = parse_endpoint_cell(resp, f"{sm['svc']}.{op} response")
            methods.append(SeedMethod(op, rq, rs, cs, ss))
        services[sm["svc"]] = methods

    # Versioning: the list of deprecated fields ----------------------------------
    versioning = " ".join(section(text, "## Versioning", 2).split())
    dm = re.search(r"Fields marked deprecated remain in the messages: (?P<l>.*?)\.(?:\s|$)", versioning)
    if not dm:
        raise SpecParseError("deprecated-fields list not found in Versioning")
    deprecated_list = set()
    for item in dm["l"].split(","):
        im = re.fullmatch(r"\s*([A-Z]\w*)\.(\w+)\s*", item)
        if not im:
            raise SpecParseError(f"cannot parse deprecated item {item!r}")
        deprecated_list.add((im[1], im[2]))

    return Seed(messages, enums, services, imported, deprecated_list)


# ---------------------------------------------------------------------------
# resolution of seed types to full proto names
# ---------------------------------------------------------------------------


def resolve_field_type(ref: TypeRef, seed: Seed) -> str:
    """Full proto name (or scalar type name) a seed field type must compile to."""
    if ref.is_scalar:
        return ref.name
    if ref.qualifier == "imported":
        keys = [k for k in seed.imported if k[1] == ref.name]
        if len(keys) != 1:
            raise SpecParseError(f"(imported) type {ref.name} not in the seed's imported list")
        return f"milvus.proto.{IMPORTED_TYPE_PACKAGES[keys[0]]}.{ref.name}"
    if ref.qualifier is not None:
        return f"milvus.proto.{ref.qualifier}.{ref.name}"
    if ref.name in seed.messages or ref.name in seed.enums:
        return f"{QUERY_PKG}.{ref.name}"
    if (None, ref.name) in seed.imported:
        return f"milvus.proto.{IMPORTED_TYPE_PACKAGES[(None, ref.name)]}.{ref.name}"
    raise SpecParseError(f"type {ref.name} is neither defined in the seed nor listed as imported")


def resolve_endpoint_types(seed: Seed) -> dict[str, list[tuple[str, str, str, bool, bool]]]:
    """service -> [(method, request full name, response full name, client_streaming, server_streaming)]"""
    qualifiers: dict[str, str] = {}
    for methods in seed.services.values():
        for m in methods:
            for ref in (m.request, m.response):
                if ref.qualifier is not None:
                    if qualifiers.setdefault(ref.name, ref.qualifier) != ref.qualifier:
                        raise SpecParseError(f"{ref.name} is qualified both ways")

    def full(ref: TypeRef) -> str:
        # Unqualified names of types defined in the seed are query's own; an
        # imported type keeps the qualifier of its first qualified mention.
        q = ref.qualifier
        if q is None and ref.name not in seed.messages:
            q = qualifiers.get(ref.name)
        if q is not None:
            return f"milvus.proto.{ENDPOINT_QUALIFIER_PACKAGES[q]}.{ref.name}"
        if ref.name in seed.messages:
            return f"{QUERY_PKG}.{ref.name}"
        if (None, ref.name) in seed.imported:  # e.g. Status
            return f"milvus.proto.{IMPORTED_TYPE_PACKAGES[(None, ref.name)]}.{ref.name}"
        raise SpecParseError(f"endpoint type {ref.name} cannot be resolved")

    return {
        svc: [(m.name, full(m.request), full(m.response), m.client_streaming, m.server_streaming) for m in methods]
        for svc, methods in seed.services.items()
    }


@pytest.fixture(scope="module")
def seed() -> Seed:
    return load_seed()


@pytest.fixture(scope="module")
def qc():
    from vecgrid.proto import query_coord_pb2

    return query_coord_pb2


# ---------------------------------------------------------------------------
# a. staleness
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_generated_files_are_fresh(tmp_path):
    pytest.importorskip("grpc_tools", reason="grpcio-tools (dev extra) is needed to regenerate the stubs")
    out = tmp_path / "gen"
    proc = subprocess.run(
        [sys.executable, str(GEN_SCRIPT), "--out", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, f"gen_protos.py failed:\n{proc.stdout}\n{proc.stderr}"

    fresh = sorted(p.name for p in out.iterdir())
    committed = sorted(p.name for p in PROTO_DIR.iterdir() if p.is_file() and p.name.endswith(GENERATED_SUFFIXES))
    sources = sorted(p.stem for p in PROTO_DIR.glob("*.proto"))
    assert fresh == sorted(s + suf for s in sources for suf in GENERATED_SUFFIXES)
    assert set(fresh) - set(committed) == set(), "generated files missing from vecgrid/proto (run make protos)"
    assert set(committed) - set(fresh) == set(), "stale generated files without a .proto source"
    stale = [n for n in fresh if (out / n).read_bytes() != (PROTO_DIR / n).read_bytes()]
    assert stale == [], f"out of date (run `make protos` / scripts/gen_protos.py): {stale}"


def test_generation_is_deterministic(tmp_path):
    pytest.importorskip("grpc_tools")
    spec = importlib.util.spec_from_file_location("_gen_protos_under_test", GEN_SCRIPT)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    srcs = gen.proto_sources()
    assert srcs == sorted(srcs) and srcs, "sources must be passed in sorted order"
    a, b = tmp_path / "a", tmp_path / "b"
    gen.generate(a)
    gen.generate(b)
    assert {p.name: p.read_bytes() for p in a.iterdir()} == {p.name: p.read_bytes() for p in b.iterdir()}


# ---------------------------------------------------------------------------
# b. seed vs descriptors
# ---------------------------------------------------------------------------


def test_vendored_seed_matches_shared():
    assert VENDORED_SEED.is_file(), "tests/spec/query-coord-rpc.md (vendored seed) is missing"
    if not SHARED_SEED.is_file():
        pytest.skip("shared seed not present; using the vendored copy")
    assert VENDORED_SEED.read_bytes() == SHARED_SEED.read_bytes(), "re-copy the seed into tests/spec/"


def test_seed_parser_sanity(seed):
    # Guards against the parser silently dropping chunks of the seed.
    text = seed_path().read_text(encoding="utf-8")
    resources = section(text, "## Resources and their fields", 2)
    header_names = set()
    for line in resources.splitlines():
        if line.startswith("- "):
            for stmt in split_sentences(line[2:]):
                header = split_top(stmt, ":")[0]
                for h in split_top(header, ","):
                    m = re.fullmatch(r"([A-Z]\w*)(?:\s*\(.*\))?", h.strip())
                    if m and len(split_top(stmt, ":")) > 1:
                        header_names.add(m[1])
    assert header_names == set(seed.messages)
    assert len(seed.messages) == 86
    assert len(seed.enums) == 7
    assert {s: len(m) for s, m in seed.services.items()} == EXPECTED_METHOD_COUNTS
    # Every deprecated field of the Versioning list is also marked in its bullet, and vice versa.
    marked = {(m.name, f.name) for m in seed.messages.values() for f in m.fields.values() if f.deprecated}
    assert marked == seed.deprecated_list
    # A few shorthand forms, spot-checked.
    sli = seed.messages["SegmentLoadInfo"].fields
    assert all(sli[n].type == TypeRef("int64") for n in ("segmentID", "partitionID", "collectionID", "dbID", "flush_time"))
    assert seed.messages["DeactivateCheckerRequest"].fields.keys() == {"base", "checkerID"}
    assert seed.messages["CheckBalanceStatusRequest"].fields.keys() == {"base"}
    assert seed.messages["ReleaseSegmentsRequest"].unused == {9, 10}
    assert seed.messages["NodeInfo"].unused == {1}
    assert seed.messages["WatchDmChannelsRequest"].fields["segment_infos"].type == TypeRef("SegmentInfo", "data")
    assert seed.messages["ResourceGroupInfo"].fields["nodes"].type == TypeRef("NodeInfo", "imported")
    assert seed.messages["SearchRequest"].fields["req"].type == TypeRef("SearchRequest", "internal")
    assert seed.messages["CollectionLoadInfo"].fields["status"].type == TypeRef("LoadStatus")


def test_seed_imported_types_are_all_resolved(seed):
    for key, hint in seed.imported.items():
        assert key in IMPORTED_TYPE_PACKAGES, f"no package known for imported type {key}"
        if hint is not None:
            assert IMPORTED_TYPE_PACKAGES[key] == hint, key


def test_seed_messages_match_descriptors(seed, qc):
    fdesc = qc.DESCRIPTOR
    assert fdesc.package == QUERY_PKG
    assert set(fdesc.message_types_by_name) == set(seed.messages), "messages in query_coord.proto != seed"
    problems = []
    for name, sm in seed.messages.items():
        md = fdesc.message_types_by_name[name]
        nested = [n.name for n in md.nested_types if not n.GetOptions().map_entry]
        if nested or md.enum_types or md.oneofs:
            problems.append(f"{name}: unexpected nested types/enums/oneofs")
        got = {f.name: f for f in md.fields}
        if set(got) != set(sm.fields):
            problems.append(f"{name}: fields {sorted(got)} != seed {sorted(sm.fields)}")
            continue
        for unused in sm.unused:
            if md.fields_by_number.get(unused) is not None:
                problems.append(f"{name}: field number {unused} must stay unused")
        for fname, sf in sm.fields.items():
            fd = got[fname]
            where = f"{name}.{fname}"
            if fd.number != sf.number:
                problems.append(f"{where}: number {fd.number} != {sf.number}")
            if field_kind(fd) != sf.kind:
                problems.append(f"{where}: {field_kind(fd)} != {sf.kind}")
            if fd.containing_oneof is not None:
                problems.append(f"{where}: unexpectedly in oneof {fd.containing_oneof.name}")
            if bool(fd.GetOptions().deprecated) != sf.deprecated:
                problems.append(f"{where}: deprecated={fd.GetOptions().deprecated}, seed says {sf.deprecated}")
            if sf.kind == "map":
                entry = fd.message_type
                checks = [(entry.fields_by_name["key"], sf.key_type), (entry.fields_by_name["value"], sf.type)]
            else:
                checks = [(fd, sf.type)]
            for d, ref in checks:
                want = resolve_field_type(ref, seed)
                if describe_type(d) != want:
                    problems.append(f"{where}: type {describe_type(d)} != {want}")
    assert problems == []


def test_seed_enums_match_descriptors(seed, qc):
    fdesc = qc.DESCRIPTOR
    assert set(fdesc.enum_types_by_name) == set(seed.enums)
    for name, values in seed.enums.items():
        ed = fdesc.enum_types_by_name[name]
        assert [(v.name, v.number) for v in ed.values] == list(values.items()), name


def test_seed_services_match_descriptors(seed, qc):
    from vecgrid.proto import query_coord_pb2_grpc

    fdesc = qc.DESCRIPTOR
    assert set(fdesc.services_by_name) == set(EXPECTED_METHOD_COUNTS)
    for svc, methods in resolve_endpoint_types(seed).items():
        sd = fdesc.services_by_name[svc]
        assert sd.full_name == f"{QUERY_PKG}.{svc}"
        assert len(sd.methods) == EXPECTED_METHOD_COUNTS[svc] == len(methods)
        assert [m.name for m in sd.methods] == [m[0] for m in methods]
        for name, req, resp, cs, ss in methods:
            md = sd.methods_by_name[name]
            assert md.input_type.full_name == req, f"{svc}.{name} request"
            assert md.output_type.full_name == resp, f"{svc}.{name} response"
            assert (md.client_streaming, md.server_streaming) == (cs, ss), f"{svc}.{name} streaming"
        # The generated stubs expose every method under Milvus's gRPC path.
        assert hasattr(query_coord_pb2_grpc, f"{svc}Stub")
        assert hasattr(query_coord_pb2_grpc, f"{svc}Servicer")
        src = (PROTO_DIR / "query_coord_pb2_grpc.py").read_text()
        for name, *_ in methods:
            assert f"'/{QUERY_PKG}.{svc}/{name}'" in src, f"{svc}.{name} path"
    streaming = {
        (svc, m.name) for svc, ms in seed.services.items() for m in ms if m.server_streaming or m.client_streaming
    }
    assert streaming == {("QueryNode", "QueryStream"), ("QueryNode", "QueryStreamSegments")}


# ---------------------------------------------------------------------------
# c. imported-types facts sheet vs descriptors
# ---------------------------------------------------------------------------


@dataclass
class SheetItem:
    package: str
    file: str
    name: str
    is_enum: bool
    subset: bool
    body: str
    description: str
    line: str


_SHEET_HEADING = re.compile(r"## \d+\. `milvus\.proto\.(?P<pkg>\w+)` \((?P<file>\w+)\.proto\)")
_SHEET_BULLET = re.compile(r"(?P<enum>enum\s+)?`(?P<name>[\w.]+)`(?P<subset>\s*\(subset\))?:\s*(?P<rest>.*)")
_SHEET_FIELD = re.compile(
    r"(?P<name>\w+):(?P<type>.+?)=(?P<num>\d+)(?P<dep>\s*\[deprecated\])?(?:\s*\(oneof (?P<oneof>\w+)\))?"
)


def load_sheet() -> list[SheetItem]:
    items = []
    pkg = file = None
    for line in IMPORTED_SHEET.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            m = _SHEET_HEADING.match(line)
            pkg, file = (m["pkg"], m["file"]) if m else (None, None)
            continue
        if pkg is None or not line.startswith("- "):
            continue
        body = line[2:].strip()
        m = _SHEET_BULLET.fullmatch(body)
        if not m:
            if body.startswith("`") or body.startswith("enum "):
                raise SpecParseError(f"cannot parse sheet bullet {line!r}")
            continue  # prose bullet ("Omitted from ...", "Name clashes ...")
        rest, _, desc = m["rest"].partition(" — ")
        items.append(SheetItem(pkg, file, m["name"], bool(m["enum"]), bool(m["subset"]), rest.strip(), desc, line))
    return items


def sheet_type_name(text: str, pkg: str) -> str:
    text = text.strip()
    if text in SCALAR_TYPES:
        return text
    first, _, rest = text.partition(".")
    if rest and first in PACKAGES:
        return f"milvus.proto.{first}.{rest}"
    return f"milvus.proto.{pkg}.{text}"


@pytest.fixture(scope="module")
def sheet() -> list[SheetItem]:
    if not IMPORTED_SHEET.is_file():
        pytest.skip("shared/spec/imported-types.md not present")
    return load_sheet()


def _module_for(file: str):
    return importlib.import_module(f"vecgrid.proto.{file}_pb2")


def test_sheet_parsed(sheet):
    pkgs = {i.package for i in sheet}
    assert pkgs == {"common", "schema", "rg", "msg", "milvus", "internal", "data", "index", "plan"}
    assert len(sheet) > 100


def test_sheet_messages_match_descriptors(sheet):
    problems = []
    checked = 0
    for item in (i for i in sheet if not i.is_enum):
        mod = _module_for(item.file)
        full = f"milvus.proto.{item.package}.{item.name}"
        try:
            md = mod.DESCRIPTOR.pool.FindMessageTypeByName(full)
        except KeyError:
            md = None
        if md is None or md.file.name != mod.DESCRIPTOR.name:
            if "for comparison only" in item.description or "proxy-facing" in item.description:
                continue
            problems.append(f"{full} not defined in {item.file}.proto")
            continue
        checked += 1
        if item.body == "(no fields)":
            want = []
        else:
            want = []
            for part in split_top(item.body, ","):
                fm = _SHEET_FIELD.fullmatch(part.strip())
                if not fm:
                    raise SpecParseError(f"cannot parse field {part!r} in {item.line!r}")
                want.append(fm)
        got = {f.name: f for f in md.fields}
        if set(got) != {w["name"] for w in want}:
            problems.append(f"{full}: fields {sorted(got)} != sheet {sorted(w['name'] for w in want)}")
            continue
        for w in want:
            fd = got[w["name"]]
            where = f"{full}.{w['name']}"
            if fd.number != int(w["num"]):
                problems.append(f"{where}: number {fd.number} != {w['num']}")
            t = w["type"].strip()
            kind = "singular"
            if t.startswith("rep "):
                kind, t = "repeated", t[4:]
            mm = re.fullmatch(r"map<(?P<k>[\w.]+),\s*(?P<v>[\w.]+)>", t)
            if mm:
                kind = "map"
            if field_kind(fd) != kind:
                problems.append(f"{where}: {field_kind(fd)} != {kind}")
                continue
            if mm:
                e = fd.message_type
                pairs = [(e.fields_by_name["key"], mm["k"]), (e.fields_by_name["value"], mm["v"])]
            else:
                pairs = [(fd, t)]
            for d, tt in pairs:
                if describe_type(d) != sheet_type_name(tt, item.package):
                    problems.append(f"{where}: type {describe_type(d)} != {sheet_type_name(tt, item.package)}")
            oneof = fd.containing_oneof.name if fd.containing_oneof is not None else None
            if oneof != w["oneof"]:
                problems.append(f"{where}: oneof {oneof} != {w['oneof']}")
            if bool(fd.GetOptions().deprecated) != bool(w["dep"]):
                problems.append(f"{where}: deprecated {fd.GetOptions().deprecated} != {bool(w['dep'])}")
    assert problems == []
    assert checked > 80


def test_sheet_enums_match_descriptors(sheet):
    problems = []
    for item in (i for i in sheet if i.is_enum):
        mod = _module_for(item.file)
        full = f"milvus.proto.{item.package}.{item.name}"
        try:
            ed = mod.DESCRIPTOR.pool.FindEnumTypeByName(full)
        except KeyError:
            problems.append(f"enum {full} not defined")
            continue
        if ed.file.name != mod.DESCRIPTOR.name:
            problems.append(f"enum {full} defined in {ed.file.name}")
        want = []
        for part in item.body.split(","):
            vm = re.fullmatch(r"\s*(\w+)=(\d+)\s*", part)
            if not vm:
                raise SpecParseError(f"cannot parse enum value {part!r} in {item.line!r}")
            want.append((vm[1], int(vm[2])))
        got = [(v.name, v.number) for v in ed.values]
        if item.subset:
            missing = set(want) - set(got)
            if missing:
                problems.append(f"{full}: missing {sorted(missing)}")
        elif sorted(got, key=lambda x: x[1]) != sorted(want, key=lambda x: x[1]):
            problems.append(f"{full}: {got} != {want}")
    assert problems == []


def test_sheet_field_counts(sheet):
    """§12's table of field counts of the services' imported request/response types."""
    text = IMPORTED_SHEET.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\w+) \| (\w+) \| (\d+) \| §\d+ \|", text, flags=re.M)
    assert len(rows) >= 20
    for name, pkg, count in rows:
        mod = _module_for({"milvus": "milvus", "internal": "internal"}[pkg])
        md = mod.DESCRIPTOR.message_types_by_name[name]
        assert len(md.fields) == int(count), f"{pkg}.{name}"


# ---------------------------------------------------------------------------
# d. wire round trips
# ---------------------------------------------------------------------------


def test_roundtrip_load_segments_request(qc):
    from vecgrid.proto import common_pb2, data_coord_pb2, index_coord_pb2, msg_pb2, schema_pb2

    req = qc.LoadSegmentsRequest(
        base=common_pb2.MsgBase(msg_type=common_pb2.LoadSegments, msgID=7, timestamp=2**63 + 5, sourceID=1, targetID=2),
        dst_nodeID=2,
        schema=schema_pb2.CollectionSchema(
            name="c",
            fields=[
                schema_pb2.FieldSchema(fieldID=100, name="pk", is_primary_key=True, data_type=schema_pb2.Int64),
                schema_pb2.FieldSchema(
                    fieldID=101,
                    name="vec",
                    data_type=schema_pb2.FloatVector,
                    type_params=[common_pb2.KeyValuePair(key="dim", value="4")],
                ),
            ],
            dbName="default",
        ),
        source_nodeID=1,
        collectionID=42,
        load_meta=qc.LoadMetaInfo(load_type=qc.LoadCollection, collectionID=42, partitionIDs=[1, 2], load_fields=[100]),
        replicaID=3,
        delta_positions=[msg_pb2.MsgPosition(channel_name="dml_0", msgID=b"\x00\x01", timestamp=9)],
        version=11,
        need_transfer=True,
        load_scope=qc.Delta,
        index_info_list=[
            index_coord_pb2.IndexInfo(
                collectionID=42,
                fieldID=101,
                index_name="ivf",
                index_params=[common_pb2.KeyValuePair(key="index_type", value="IVF_FLAT")],
                state=common_pb2.Finished,
            )
        ],
        lazy_load=True,
    )
    req.infos.add(
        segmentID=5,
        partitionID=1,
        collectionID=42,
        num_of_rows=1000,
        binlog_paths=[
            data_coord_pb2.FieldBinlog(
                fieldID=101, binlogs=[data_coord_pb2.Binlog(entries_num=1000, log_path="a/b", log_size=16000)]
            )
        ],
        index_infos=[qc.FieldIndexInfo(fieldID=101, indexID=9, index_file_paths=["x"], current_index_version=4)],
        insert_channel="dml_0",
        start_position=msg_pb2.MsgPosition(channel_name="dml_0", timestamp=1),
        level=data_coord_pb2.L1,
        storageVersion=2,
    )
    wire = req.SerializeToString()
    back = qc.LoadSegmentsRequest.FromString(wire)
    assert back == req
    assert back.infos[0].level == data_coord_pb2.L1
    assert back.infos[0].binlog_paths[0].binlogs[0].log_size == 16000
    assert back.schema.fields[1].type_params[0].value == "4"
    assert back.base.timestamp == 2**63 + 5
    assert back.load_scope == qc.Delta and back.lazy_load
    assert back.SerializeToString(deterministic=True) == req.SerializeToString(deterministic=True)


def test_roundtrip_search_request(qc):
    from vecgrid.proto import common_pb2, internal_pb2, plan_pb2, schema_pb2

    phg = common_pb2.PlaceholderGroup(
        placeholders=[common_pb2.PlaceholderValue(tag="$0", type=common_pb2.FloatVector, values=[b"\x00" * 16])]
    )
    plan = plan_pb2.PlanNode(
        vector_anns=plan_pb2.VectorANNS(
            vector_type=plan_pb2.FloatVector,
            field_id=101,
            predicates=plan_pb2.Expr(
                unary_range_expr=plan_pb2.UnaryRangeExpr(
                    column_info=plan_pb2.ColumnInfo(field_id=100, data_type=schema_pb2.Int64, is_primary_key=True),
                    op=plan_pb2.GreaterThan,
                    value=plan_pb2.GenericValue(int64_val=3),
                )
            ),
            query_info=plan_pb2.QueryInfo(topk=10, metric_type="L2", search_params='{"nprobe":8}'),
            placeholder_tag="$0",
        ),
        output_field_ids=[100],
    )
    req = qc.SearchRequest(
        req=internal_pb2.SearchRequest(
            base=common_pb2.MsgBase(msg_type=common_pb2.Search),
            reqID=1,
            collectionID=42,
            partitionIDs=[1],
            placeholder_group=phg.SerializeToString(),
            dsl_type=common_pb2.BoolExprV1,
            serialized_expr_plan=plan.SerializeToString(),
            nq=1,
            topk=10,
            metricType="L2",
            consistency_level=common_pb2.Bounded,
            is_topk_reduce=True,
        ),
        dml_channels=["dml_0"],
        segmentIDs=[5, 6],
        from_shard_leader=True,
        scope=qc.Historical,
        total_channel_num=2,
    )
    back = qc.SearchRequest.FromString(req.SerializeToString())
    assert back == req
    assert common_pb2.PlaceholderGroup.FromString(back.req.placeholder_group) == phg
    got_plan = plan_pb2.PlanNode.FromString(back.req.serialized_expr_plan)
    assert got_plan.WhichOneof("node") == "vector_anns"
    assert got_plan.vector_anns.predicates.WhichOneof("expr") == "unary_range_expr"
    assert back.scope == qc.Historical and back.total_channel_num == 2


def test_roundtrip_get_data_distribution_response(qc):
    from vecgrid.proto import common_pb2, data_coord_pb2, msg_pb2

    resp = qc.GetDataDistributionResponse(
        status=common_pb2.Status(code=0, reason="", extra_info={"k": "v"}),
        nodeID=2,
        segments=[
            qc.SegmentVersionInfo(
                ID=5,
                collection=42,
                partition=1,
                channel="dml_0",
                version=3,
                last_delta_timestamp=2**64 - 1,
                index_info={101: qc.FieldIndexInfo(fieldID=101, indexID=9, num_rows=1000)},
                level=data_coord_pb2.L0,
            )
        ],
        channels=[qc.ChannelVersionInfo(channel="dml_0", collection=42, version=3)],
        leader_views=[
            qc.LeaderView(
                collection=42,
                channel="dml_0",
                segment_dist={5: qc.SegmentDist(nodeID=2, version=3)},
                growing_segmentIDs=[7],
                growing_segments={7: msg_pb2.MsgPosition(channel_name="dml_0", msgID=b"\x07", timestamp=8)},
                TargetVersion=4,
                num_of_growing_rows=12,
                partition_stats_versions={1: 2},
            )
        ],
        lastModifyTs=123,
        memCapacityInMB=1024.5,
    )
    back = qc.GetDataDistributionResponse.FromString(resp.SerializeToString())
    assert back == resp
    assert back.leader_views[0].segment_dist[5].nodeID == 2
    assert back.leader_views[0].growing_segments[7].msgID == b"\x07"
    assert back.segments[0].index_info[101].num_rows == 1000
    assert back.segments[0].last_delta_timestamp == 2**64 - 1
    assert back.memCapacityInMB == 1024.5


def test_known_wire_bytes():
    """Hand-encoded bytes: field numbers and wire types as Milvus puts them on the wire."""
    from vecgrid.proto import common_pb2, query_coord_pb2 as qc

    # Status{reason="x"(2, LEN), code=5(3, VARINT)}
    assert common_pb2.Status(reason="x", code=5).SerializeToString() == b"\x12\x01x\x18\x05"
    # ReleaseSegmentsRequest{need_transfer=true(11), shard="s"(8)} -> fields in number order
    msg = qc.ReleaseSegmentsRequest(shard="s", need_transfer=True)
    assert msg.SerializeToString() == b"\x42\x01s\x58\x01"
    # query.NodeInfo starts at 2 (number 1 unused)
    assert qc.NodeInfo(ID=1).SerializeToString() == b"\x10\x01"
