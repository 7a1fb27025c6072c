"""Descriptor-driven fuzzing of every gRPC method each server registers (listed by reflection):
random and boundary requests — huge and negative ids, NaN/Inf, oversized repeated fields, random
bytes where plans and vectors go, unknown enum values, nested messages — must get an answer (a
Milvus Status, or a gRPC error a client can act on), never UNKNOWN/INTERNAL and never a hang, and
the servers must still answer afterwards.  Bounded: a fixed seed, a few requests per method."""

from __future__ import annotations

import asyncio
import random

import grpc
import pytest
import pytest_asyncio
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from tests.conftest import embedded_settings
from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import catalog_service_pb2, query_coord_pb2, wal_stream_pb2, write_service_pb2  # noqa: F401
from vecgrid.proto import milvus_pb2, query_coord_pb2_grpc
from vecgrid.errors import UnexpectedError
from vecgrid.rpc.auth import OPEN_SERVICES

pytestmark = [pytest.mark.slow, pytest.mark.fuzz]

REQUESTS_PER_METHOD = 4
CALL_TIMEOUT_S = 20.0
#: answers a client cannot act on
BROKEN = (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.DEADLINE_EXCEEDED)
#: streams that tail a log until the client stops: their deadline is how a client stops them
TAILS = ("vecgrid.wal.ChannelStream/Read",)
TAIL_TIMEOUT_S = 3.0
#: methods that stop or move what the servers themselves rely on: fuzzed with one request, last
LAST = ("ReleaseCollection", "ReleasePartitions", "ReleaseSegments", "UnsubDmChannel", "SuspendNode",
        "TransferNode", "TransferChannel", "TransferSegment", "DropResourceGroup")

UNEXPECTED = UnexpectedError.code
INTS = [0, 1, -1, 2, 7, 2**31 - 1, -2**31, 2**63 - 1, -2**63, 10**12]
UINTS = [0, 1, 2**32 - 1, 2**64 - 1, 10**12]
FLOATS = [0.0, -0.0, 1.0, -1.0, float("nan"), float("inf"), float("-inf"), 3.4e38, 1e-45]
STRINGS = ["", "a", "x" * 70_000, "💥" * 100, "by-dev-rootcoord-dml_0_1v0", "../../etc/passwd", "\u0000"]


def _scalar(rng: random.Random, field: FieldDescriptor):
    t = field.type
    if t == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if t in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return rng.choice(FLOATS)
    if t == FieldDescriptor.TYPE_STRING:
        return rng.choice(STRINGS)
    if t == FieldDescriptor.TYPE_BYTES:
        return rng.choice([b"", bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 17, 512]))),
                           b"\xff" * 4096, b"\x00" * 64])
    if t == FieldDescriptor.TYPE_ENUM:
        values = [v.number for v in field.enum_type.values]
        return rng.choice(values + [max(values) + 1000])  # proto3 enums are open: an unknown value too
    if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return rng.choice([u for u in UINTS if u < 2**32])
    if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return rng.choice(UINTS)
    if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32):
        return rng.choice([i for i in INTS if -2**31 <= i < 2**31])
    return rng.choice(INTS)


def fill(rng: random.Random, msg, depth: int = 0) -> None:
    """Set a random subset of ``msg``'s fields to random or boundary values (nested up to depth 3)."""
    for field in msg.DESCRIPTOR.fields:
        if rng.random() < 0.4:
            continue
        is_message = field.type == FieldDescriptor.TYPE_MESSAGE
        if is_message and depth >= 3:
            continue
        if field.is_repeated:
            if is_message and field.message_type.GetOptions().map_entry:
                target = getattr(msg, field.name)
                key_f, value_f = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
                for _ in range(rng.choice([0, 1, 3])):
                    key = _scalar(rng, key_f)
                    if value_f.type == FieldDescriptor.TYPE_MESSAGE:
                        fill(rng, target[key], depth + 1)
                    else:
                        target[key] = _scalar(rng, value_f)
                continue
            target = getattr(msg, field.name)
            if is_message:
                for _ in range(rng.choice([0, 1, 3])):
                    fill(rng, target.add(), depth + 1)
            else:
                count = rng.choice([0, 1, 3, 20_000])  # the last: an oversized repeated field
                target.extend(_scalar(rng, field) for _ in range(count))
        elif is_message:
            fill(rng, getattr(msg, field.name), depth + 1)
        else:
            setattr(msg, field.name, _scalar(rng, field))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(tmp_path_factory):
    cluster = EmbeddedCluster(embedded_settings(tmp_path_factory.mktemp("data")))
    await asyncio.wait_for(cluster.start(), 120)
    try:
        yield cluster
    finally:
        await asyncio.wait_for(cluster.stop(), 60)


async def registered(channel) -> list[tuple[str, object]]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    names = [s.name async for r in replies for s in r.list_services_response.service]
    pool = descriptor_pool.Default()
    return [(n, m) for n in names if n not in OPEN_SERVICES for m in pool.FindServiceByName(n).methods]


async def send(channel, service: str, method, request) -> tuple[grpc.StatusCode, int]:
    """The gRPC code, and the Milvus Status code of the (last) reply (0 when it has none)."""
    reply_cls = message_factory.GetMessageClass(method.output_type)
    kw = dict(request_serializer=type(request).SerializeToString, response_deserializer=reply_cls.FromString)
    path = f"/{service}/{method.name}"
    tail = f"{service}/{method.name}" in TAILS
    reply = None
    try:
        if method.server_streaming:
            call = channel.unary_stream(path, **kw)(request, timeout=TAIL_TIMEOUT_S if tail else CALL_TIMEOUT_S)
            async for reply in call:
                pass
        else:
            reply = await channel.unary_unary(path, **kw)(request, timeout=CALL_TIMEOUT_S)
    except grpc.aio.AioRpcError as e:
        return (grpc.StatusCode.OK if tail and e.code() == grpc.StatusCode.DEADLINE_EXCEEDED else e.code()), 0
    status = reply if reply is not None and reply.DESCRIPTOR.full_name == "milvus.proto.common.Status" else \
        getattr(reply, "status", None) if reply is not None and "status" in reply.DESCRIPTOR.fields_by_name else None
    return grpc.StatusCode.OK, int(status.code) if status is not None else 0


@pytest.mark.asyncio(loop_scope="module")
async def test_random_and_boundary_requests_get_answers(cluster):
    rng = random.Random(20261127)
    nodes = [address for _, address in cluster.addresses.query_nodes]
    assert nodes, cluster.addresses
    addresses = [cluster.coord.address, nodes[0]]
    broken: list[str] = []
    unexpected: set[str] = set()  # answered, but with Milvus's "unexpected error" (reported, see below)
    calls = 0
    for address in addresses:
        async with grpc.aio.insecure_channel(address) as channel:
            methods = sorted(await registered(channel), key=lambda sm: sm[1].name in LAST)
            for service, method in methods:
                request_cls = message_factory.GetMessageClass(method.input_type)
                for i in range(1 if method.name in LAST else REQUESTS_PER_METHOD):
                    request = request_cls()
                    fill(rng, request)
                    code, status = await send(channel, service, method, request)
                    calls += 1
                    if code in BROKEN:
                        broken.append(f"{address} {service}.{method.name} #{i}: {code.name}")
                    if status == UNEXPECTED:
                        unexpected.add(f"{service}.{method.name}")
    assert calls > 200
    assert not broken, "\n".join(broken)
    # Milvus's plain error (65535) is GetMetrics's answer to a malformed request, as Milvus's; elsewhere
    # it means bad input reached code that did not name it as bad input
    assert unexpected <= {"milvus.proto.query.QueryCoord.GetMetrics", "milvus.proto.query.QueryNode.GetMetrics"}, \
        sorted(unexpected)
    # and the coordinator still answers
    async with grpc.aio.insecure_channel(cluster.coord.address) as channel:
        states = await query_coord_pb2_grpc.QueryCoordStub(channel).GetComponentStates(
            milvus_pb2.GetComponentStatesRequest(), timeout=10)
        assert states.status.code == 0
