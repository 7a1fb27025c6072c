"""gRPC auth: with auth on, every method of every service each server registers (read back from the
server by reflection, not a hand-kept list) refuses a caller without credentials, and a reader gets
read methods only; the cluster itself still works (its processes authenticate with the cluster
secret), and the CLI logs in with ``--user``."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest
import pytest_asyncio
from google.protobuf import descriptor_pool, message_factory
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from tests.conftest import poll_until, secured_settings
from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import query_coord_pb2  # noqa: F401 - registers the Milvus services in the pool
from vecgrid.proto import catalog_service_pb2, milvus_pb2, wal_stream_pb2, write_service_pb2  # noqa: F401
from vecgrid.rpc.auth import OPEN_SERVICES, right_of

pytestmark = pytest.mark.slow

ADMIN, READER, PASSWORD = "admin@x.io", "reader@x.io", "correct horse battery"
REFUSED = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)


def test_rights_of_methods():
    assert right_of("milvus.proto.query.QueryCoord", "ShowCollections") == "read"
    assert right_of("milvus.proto.query.QueryCoord", "LoadCollection") == "write"
    assert right_of("milvus.proto.query.QueryCoord", "TransferNode") == "admin"
    assert right_of("vecgrid.write.WriteService", "Delete") == "write"
    assert right_of("vecgrid.write.WriteService", "GetFlushState") == "read"
    assert right_of("vecgrid.catalog.CatalogService", "DescribeCollection") == "read"
    assert right_of("milvus.proto.query.QueryNode", "Search") == "read"
    assert right_of("milvus.proto.query.QueryNode", "LoadSegments") == "cluster"
    assert right_of("milvus.proto.query.QueryNode", "DeleteBatch") == "cluster"
    assert right_of("vecgrid.wal.ChannelStream", "Read") == "cluster"
    assert right_of("milvus.proto.milvus.MilvusService", "Connect") == "read"
    assert right_of("milvus.proto.milvus.MilvusService", "Search") == "read"
    assert right_of("milvus.proto.milvus.MilvusService", "Insert") == "write"
    assert right_of("milvus.proto.milvus.MilvusService", "CreateCollection") == "write"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def secured(tmp_path_factory):
    cluster = EmbeddedCluster(secured_settings(tmp_path_factory.mktemp("data"), ADMIN, PASSWORD))
    await asyncio.wait_for(cluster.start(), 120)
    try:
        admin = await asyncio.to_thread(login, cluster, ADMIN)
        await asyncio.to_thread(rest, cluster, "POST", "/users", {"email": READER, "password": PASSWORD,
                                                                 "roles": ["reader"]}, admin)
        cluster.tokens = {"admin": admin, "reader": await asyncio.to_thread(login, cluster, READER)}
        yield cluster
    finally:
        await asyncio.wait_for(cluster.stop(), 60)


def rest(cluster, verb, path, body=None, token=None):
    req = urllib.request.Request(cluster.addresses.http + path, method=verb,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read() or b"null")


def login(cluster, email):
    return rest(cluster, "POST", "/authentication", {"strategy": "local", "email": email,
                                                     "password": PASSWORD})["accessToken"]


async def registered_methods(address: str) -> list[tuple[str, object]]:
    """(service, method descriptor) of every service the server lists by reflection, less the open ones."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        names = [s.name async for r in replies for s in r.list_services_response.service]
    pool = descriptor_pool.Default()
    out = []
    for name in names:
        if name in OPEN_SERVICES:
            continue
        for method in pool.FindServiceByName(name).methods:
            out.append((name, method))
    assert out, f"{address} registers no service"
    return out


async def call(address: str, service: str, method, metadata) -> grpc.StatusCode:
    request_cls = message_factory.GetMessageClass(method.input_type)
    reply_cls = message_factory.GetMessageClass(method.output_type)
    path = f"/{service}/{method.name}"
    async with grpc.aio.insecure_channel(address) as channel:
        kw = dict(request_serializer=request_cls.SerializeToString, response_deserializer=reply_cls.FromString)
        try:
            if method.server_streaming:
                async for _ in channel.unary_stream(path, **kw)(request_cls(), metadata=metadata, timeout=20):
                    pass
            else:
                await channel.unary_unary(path, **kw)(request_cls(), metadata=metadata, timeout=20)
        except grpc.aio.AioRpcError as e:
            return e.code()
    return grpc.StatusCode.OK


async def node_address(cluster) -> str:
    answer = await asyncio.to_thread(rest, cluster, "GET", "/nodes", None, cluster.tokens["admin"])
    records = answer["data"] if isinstance(answer, dict) else answer
    return records[0]["address"]


@pytest.mark.asyncio(loop_scope="module")
async def test_every_registered_method_refuses_without_credentials_and_gives_readers_reads(secured):
    reader = [("authorization", f"Bearer {secured.tokens['reader']}")]
    basic = [("authorization", base64.b64encode(f"{READER}:{PASSWORD}".encode()).decode())]
    # a wrong password: another email, as failed logins count against the login limiter of the email
    wrong = [("authorization", base64.b64encode(b"mallory@x.io:nope").decode())]
    checked = 0
    milvus = f"127.0.0.1:{secured.milvus.port}"   # Milvus's public API: the users' door
    for address, is_node in ((secured.coord.address, False), (milvus, False), (await node_address(secured), True)):
        for service, method in await registered_methods(address):
            need = right_of(service, method.name)
            what = f"{address} {service}.{method.name}"
            assert await call(address, service, method, None) == grpc.StatusCode.UNAUTHENTICATED, what
            assert await call(address, service, method, wrong) == grpc.StatusCode.UNAUTHENTICATED, what
            got = await call(address, service, method, reader)
            if need == "read":
                assert got not in REFUSED, (what, got)
            else:
                assert got == grpc.StatusCode.PERMISSION_DENIED, (what, got)
            if not is_node and need == "read":  # Milvus's base64 user:password, on the coordinator
                assert await call(address, service, method, basic) not in REFUSED, what
            checked += 1
    assert checked > 100


@pytest.mark.asyncio(loop_scope="module")
async def test_the_cluster_works_and_the_cli_logs_in(secured):
    admin = secured.tokens["admin"]
    await asyncio.to_thread(rest, secured, "POST", "/collections", {"name": "books", "dimension": 4,
                                                                    "metric": "L2", "load": True}, admin)
    await asyncio.to_thread(rest, secured, "POST", "/collections/books/entities",
                            [{"id": i, "vector": [i, 0, 0, 1]} for i in range(20)], admin)
    vectors = secured_tmp(secured) / "q.npy"
    np.save(vectors, np.array([[3, 0, 0, 1]], dtype=np.float32))
    cli = [sys.executable, "-m", "vecgrid.cli", "search", "books", "--coord", secured.coord.address,
           "--vectors", str(vectors), "--limit", "1", "--http", secured.addresses.http]
    env = {k: v for k, v in os.environ.items() if not k.startswith("VECGRID_")}
    refused = await asyncio.to_thread(subprocess.run, cli, capture_output=True, text=True, timeout=120, env=env)
    assert refused.returncode != 0 and "UNAUTHENTICATED" in (refused.stdout + refused.stderr).upper(), refused

    attempts = []

    async def search_as_reader():
        done = await asyncio.to_thread(subprocess.run, [*cli, "--user", READER], capture_output=True, text=True,
                                       timeout=120, env={**env, "VECGRID_PASSWORD": PASSWORD})
        attempts.append(done)
        return done if done.returncode == 0 else None

    try:
        done = await poll_until(search_as_reader, 60, interval=1, what="a CLI search as the reader")
    except BaseException:
        print(attempts[-1].stdout[-2000:], attempts[-1].stderr[-3000:])  # what the CLI said, on failure
        raise
    hits = json.loads(done.stdout)
    assert hits[0][0]["id"] == 3, done.stdout


def secured_tmp(cluster) -> Path:
    return Path(cluster.settings.common.data_dir)


def token_doors(cluster) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """``(address, service, read method)`` a user's access token opens: the coordinator's two gRPC ports,
    and every query node."""
    doors = [(cluster.coord.address, "milvus.proto.query.QueryCoord", "ShowCollections"),
             (f"127.0.0.1:{cluster.milvus.port}", "milvus.proto.milvus.MilvusService", "ShowCollections")]
    nodes = [(address, "milvus.proto.query.QueryNode", "GetComponentStates")
             for _, address in cluster.addresses.query_nodes]
    assert nodes
    return doors, nodes


async def bearer_status(door: tuple[str, str, str], token: str) -> grpc.StatusCode:
    address, service, method = door
    return await call(address, service, descriptor_pool.Default().FindServiceByName(service).methods_by_name[method],
                      [("authorization", f"Bearer {token}")])


def milvus_rest_status(cluster, token) -> int:
    """The HTTP status of Milvus's REST v2 ``collections/list`` with ``Bearer <token>``."""
    req = urllib.request.Request(cluster.addresses.http + "/v2/vectordb/collections/list", method="POST",
                                 data=b"{}", headers={"Content-Type": "application/json",
                                                      "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.mark.asyncio(loop_scope="module")
async def test_a_logged_out_token_is_refused_at_every_door(secured):
    """After ``DELETE /authentication`` the token is refused by the coordinator's gRPC ports and Milvus's
    REST at once (not after their 30 s of kept rights), and by the query nodes as soon as the
    coordinator's list reaches them; another token of the same user still works everywhere."""
    doors, nodes = token_doors(secured)
    token, other = [await asyncio.to_thread(login, secured, READER) for _ in range(2)]
    for door in doors + nodes:   # each door has checked (and kept) the token before the logout
        assert await bearer_status(door, token) not in REFUSED, door
    assert await asyncio.to_thread(milvus_rest_status, secured, token) == 200

    await asyncio.to_thread(rest, secured, "DELETE", "/authentication", None, token)

    for door in doors:
        assert await bearer_status(door, token) == grpc.StatusCode.UNAUTHENTICATED, door
    assert await asyncio.to_thread(milvus_rest_status, secured, token) == 401
    for door in nodes:
        async def refused(door=door):
            return await bearer_status(door, token) == grpc.StatusCode.UNAUTHENTICATED
        await poll_until(refused, 30, interval=0.2, what=f"{door[0]} refusing the logged-out token")
    for door in doors + nodes:
        assert await bearer_status(door, other) not in REFUSED, door
    assert await asyncio.to_thread(milvus_rest_status, secured, other) == 200


@pytest.mark.asyncio(loop_scope="module")
async def test_a_removed_users_tokens_are_refused_at_every_door(secured):
    """``DELETE /users/<id>``: the user's tokens stop working on the coordinator's gRPC ports at once and on
    the query nodes as soon as the coordinator's list reaches them (a node checks only the token itself)."""
    doors, nodes = token_doors(secured)
    email = "leaving@x.io"
    user = await asyncio.to_thread(rest, secured, "POST", "/users", {"email": email, "password": PASSWORD,
                                                                    "roles": ["reader"]}, secured.tokens["admin"])
    token = await asyncio.to_thread(login, secured, email)
    for door in doors + nodes:
        assert await bearer_status(door, token) not in REFUSED, door

    await asyncio.to_thread(rest, secured, "DELETE", f"/users/{user['id']}", None, secured.tokens["admin"])

    for door in doors:
        assert await bearer_status(door, token) == grpc.StatusCode.UNAUTHENTICATED, door
    for door in nodes:
        async def refused(door=door):
            return await bearer_status(door, token) == grpc.StatusCode.UNAUTHENTICATED
        await poll_until(refused, 30, interval=0.2, what=f"{door[0]} refusing the removed user's token")
    for door in doors + nodes:   # the others' tokens still work
        assert await bearer_status(door, secured.tokens["reader"]) not in REFUSED, door


@pytest.mark.asyncio(loop_scope="module")
async def test_new_roles_count_at_once_on_the_coordinators_ports(secured):
    """A writer made a reader (``PATCH /users/<id>``) loses the write right on the gRPC ports at once, not
    after the 30 s they keep checked rights."""
    pool = descriptor_pool.Default()
    release = pool.FindServiceByName("milvus.proto.query.QueryCoord").methods_by_name["ReleaseCollection"]
    email = "demoted@x.io"
    user = await asyncio.to_thread(rest, secured, "POST", "/users", {"email": email, "password": PASSWORD,
                                                                    "roles": ["writer"]}, secured.tokens["admin"])
    bearer = [("authorization", f"Bearer {await asyncio.to_thread(login, secured, email)}")]
    assert await call(secured.coord.address, "milvus.proto.query.QueryCoord", release, bearer) not in REFUSED

    await asyncio.to_thread(rest, secured, "PATCH", f"/users/{user['id']}", {"roles": ["reader"]},
                            secured.tokens["admin"])
    assert await call(secured.coord.address, "milvus.proto.query.QueryCoord", release, bearer) == \
        grpc.StatusCode.PERMISSION_DENIED
