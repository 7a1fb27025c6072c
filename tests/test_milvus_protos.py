"""vecgrid's MilvusService and its messages against Milvus's own: the descriptors pymilvus 2.4 ships
(generated from milvus-proto's 2.4 branch), read in pymilvus's venv.

* every message of ``milvus.proto.milvus`` vecgrid defines has the same fields — names, numbers,
  types, repetition, message and enum types — as upstream's, nested types included;
* every message of ``common`` and ``schema`` those reference agrees with upstream on every field it
  has (vecgrid may lack fields newer than its pin; none the service uses);
* an enum has upstream's numbers for every value vecgrid defines;
* every method MilvusService declares is upstream's, with the same request and response types.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FileDescriptor

from tests.milvus_clients import run_client
from vecgrid.proto import common_pb2, milvus_pb2, schema_pb2

pytestmark = pytest.mark.slow   # a subprocess in the client's venv

DUMP = r"""
import json
from pymilvus.grpc_gen import common_pb2, milvus_pb2, schema_pb2

def repeated(f):  # protobuf 7 dropped FieldDescriptor.label
    return f.is_repeated if hasattr(f, "is_repeated") else f.label == 3

def message(d):
    return {"fields": {f.name: [f.number, f.type, repeated(f), f.message_type.full_name if f.message_type else
                                (f.enum_type.full_name if f.enum_type else "")] for f in d.fields},
            "nested": {n.name: message(n) for n in d.nested_types},
            "enums": {e.name: {v.name: v.number for v in e.values} for e in d.enum_types}}

out = {"messages": {}, "enums": {}, "methods": {}}
for module in (common_pb2, milvus_pb2, schema_pb2):
    f = module.DESCRIPTOR
    for name, d in f.message_types_by_name.items():
        out["messages"][d.full_name] = message(d)
    for name, e in f.enum_types_by_name.items():
        out["enums"][e.full_name] = {v.name: v.number for v in e.values}
for m in milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"].methods:
    out["methods"][m.name] = [m.input_type.full_name, m.output_type.full_name]
print(json.dumps(out))
"""


def _repeated(f) -> bool:
    return f.is_repeated if hasattr(f, "is_repeated") else f.label == 3


def _message(d: Descriptor) -> dict:
    return {"fields": {f.name: [f.number, f.type, _repeated(f), f.message_type.full_name if f.message_type else
                                (f.enum_type.full_name if f.enum_type else "")] for f in d.fields},
            "nested": {n.name: _message(n) for n in d.nested_types},
            "enums": {e.name: {v.name: v.number for v in e.values} for e in d.enum_types}}


def _enum(e: EnumDescriptor) -> dict:
    return {v.name: v.number for v in e.values}


@pytest.fixture(scope="module")
def upstream() -> dict:
    return json.loads(run_client("pymilvus-2.4", DUMP).stdout)


def _ours(f: FileDescriptor) -> tuple[dict, dict]:
    return ({d.full_name: _message(d) for d in f.message_types_by_name.values()},
            {e.full_name: _enum(e) for e in f.enum_types_by_name.values()})


def _subset_problems(name: str, ours: dict, theirs: dict, exact: bool) -> list[str]:
    problems = []
    for field, spec in ours["fields"].items():
        if theirs["fields"].get(field) != spec:
            problems.append(f"{name}.{field}: ours {spec}, upstream {theirs['fields'].get(field)}")
    if exact:
        problems += [f"{name}.{f}: upstream only" for f in theirs["fields"] if f not in ours["fields"]]
    for nested, spec in ours["nested"].items():
        if nested not in theirs["nested"]:
            problems.append(f"{name}.{nested}: not upstream")
        else:
            problems += _subset_problems(f"{name}.{nested}", spec, theirs["nested"][nested], exact)
    for enum, values in ours["enums"].items():
        problems += [f"{name}.{enum}.{v}" for v, n in values.items() if theirs["enums"].get(enum, {}).get(v) != n]
    return problems


def test_milvus_messages_match_upstream(upstream):
    messages, enums = _ours(milvus_pb2.DESCRIPTOR)
    service = milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"]
    used = {m.input_type.full_name for m in service.methods} | {m.output_type.full_name for m in service.methods}
    problems = []
    for name, spec in messages.items():
        theirs = upstream["messages"].get(name)
        if theirs is None:
            problems.append(f"{name}: not upstream")
            continue
        # what the service carries must be upstream's exactly; the QueryCoord-facing types pinned by the
        # imported-types sheet may predate fields added on the 2.4 branch since
        problems += _subset_problems(name, spec, theirs, exact=name in used)
    for name, values in enums.items():
        problems += [f"{name}.{v}" for v, n in values.items() if upstream["enums"].get(name, {}).get(v) != n]
    assert problems == []
    assert len(messages) > 80


def test_common_and_schema_types_agree_with_upstream(upstream):
    problems = []
    for module in (common_pb2, schema_pb2):
        messages, enums = _ours(module.DESCRIPTOR)
        for name, spec in messages.items():
            if name in upstream["messages"]:
                problems += _subset_problems(name, spec, upstream["messages"][name], exact=False)
        for name, values in enums.items():
            if name in upstream["enums"]:
                problems += [f"{name}.{v}" for v, n in values.items() if upstream["enums"][name].get(v) != n]
    assert problems == []


def test_the_service_declares_upstream_methods_only(upstream):
    service = milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"]
    ours = {m.name: [m.input_type.full_name, m.output_type.full_name] for m in service.methods}
    assert {name: upstream["methods"].get(name) for name in ours} == ours
    assert {"Connect", "Search", "Query", "Insert", "CreateCollection"} <= set(ours)


def test_the_docs_list_every_upstream_method_as_implemented_or_not(upstream):
    text = (Path(__file__).resolve().parent.parent / "docs" / "milvus-api.md").read_text()
    table = text.split("<!-- milvus-methods:start -->")[1].split("<!-- milvus-methods:end -->")[0]
    rows = re.findall(r"^\| (\w+) \| (implemented|UNIMPLEMENTED) \|$", table, flags=re.M)
    assert len(rows) == len({m for m, _ in rows}), "a method listed twice"
    ours = {m.name for m in milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"].methods}
    # upstream as pymilvus 2.4.15 ships it; the table lists every method of the 2.4 branch
    assert {m for m, _ in rows} >= set(upstream["methods"])
    assert {m for m, state in rows if state == "implemented"} == ours
