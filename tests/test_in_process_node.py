"""The embedded cluster's query node in the coordinator's process (``dask.in_process``): searches,
queries and writes are served with no gRPC hop between the proxy and the node, with the answers of a
cluster of worker processes; and the in-process stub keeps a gRPC stub's contract (metadata, deadline,
error codes)."""

from __future__ import annotations

import asyncio

import grpc
import numpy as np
import psutil
import pytest
import pytest_asyncio

from vecgrid import errors
from vecgrid.cluster.proxy import lb_policy
from vecgrid.cluster.proxy.catalog_access import unary_call
from vecgrid.common import in_process
from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import common_pb2, query_coord_pb2
from tests.conftest import poll_until
from tests.proxy_support import create_collection, rows_for
from tests.querycoord_support import Coord, fast_settings

DIM = 16
NAME = "here"


# --- the stub, on a servicer of this test -------------------------------------------------------------

class Servicer:
    def __init__(self) -> None:
        self.seen_metadata = None

    async def Echo(self, request, context):
        self.seen_metadata = context.invocation_metadata()
        return request

    async def Refuse(self, request, context):
        context.set_code(grpc.StatusCode.UNKNOWN)
        context.set_details("node not match[expectedNodeID=9][actualNodeID=2]")
        return common_pb2.Status()

    async def Hang(self, request, context):
        await asyncio.sleep(30)

    async def Break(self, request, context):
        raise RuntimeError("boom")


@pytest.fixture
def stub():
    servicer = Servicer()
    in_process.register("127.0.0.1:1", servicer)
    yield in_process.stub_at("127.0.0.1:1"), servicer
    in_process.unregister("127.0.0.1:1")
    assert in_process.stub_at("127.0.0.1:1") is None


async def test_the_stub_passes_the_request_and_the_metadata(stub):
    s, servicer = stub
    request = common_pb2.Status(reason="x")
    assert await s.Echo(request, timeout=5, metadata=(("serverid", "2"),)) is request   # not a copy
    assert servicer.seen_metadata == (("serverid", "2"),)


@pytest.mark.parametrize("method, code", [("Refuse", grpc.StatusCode.UNKNOWN), ("Hang", grpc.StatusCode.DEADLINE_EXCEEDED),
                                          ("Break", grpc.StatusCode.UNKNOWN)])
async def test_the_stub_fails_as_a_grpc_call_does(stub, method, code):
    s, _ = stub
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await getattr(s, method)(common_pb2.Status(), timeout=0.2)
    assert err.value.code() == code
    # and the proxy's call wrapper turns it into what a failed remote node gives
    with pytest.raises(errors.ServiceUnavailable, match=code.name):
        await unary_call(getattr(s, method), common_pb2.Status(), timeout=0.2, what="x")


# --- a cluster serving in this process ----------------------------------------------------------------

@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(tmp_path_factory):
    settings = fast_settings(tmp_path_factory.mktemp("inproc"), workers=1)
    settings.set("dask.in_process", True)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    yield cluster
    await asyncio.wait_for(cluster.stop(), 60)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_searches_reach_the_node_in_this_process_without_grpc(cluster, monkeypatch):
    (node,) = cluster.coord.nodes.all()
    assert in_process.stub_at(node.address) is not None
    assert not [p for p in psutil.Process().children(recursive=True) if "python" in p.name().lower()
                and any("distributed" in part or "vecgrid" in part for part in p.cmdline())]  # no worker process

    def no_grpc(address, *args, **kwargs):
        raise AssertionError(f"a gRPC channel to {address}: the node is in this process")

    monkeypatch.setattr(lb_policy, "aio_channel", no_grpc)
    coll = create_collection(cluster.coord.catalog, NAME, dim=DIM, shards=1)
    await Coord(cluster.addresses.grpc, cluster.coord).load(coll.id)
    rows = rows_for(list(range(500)), DIM)
    await cluster.proxy.insert(NAME, rows)
    sealed = await cluster.proxy.flush(NAME)
    await poll_until(lambda: {s.ID for _, s in cluster.coord.dist.segments(coll.id)} >= set(sealed), 60, 0.2,
                     "the flushed segment served")
    more = rows_for(list(range(500, 600)), DIM, seed=1)
    await cluster.proxy.insert(NAME, more)                       # growing rows beside the sealed ones
    vectors = np.concatenate([rows["vec"], more["vec"]])
    queries = vectors[[3, 250, 555]]
    hits = await cluster.proxy.search(NAME, queries, limit=5)
    expected = np.argsort(((vectors[None, :, :] - queries[:, None, :]) ** 2).sum(-1), axis=1)[:, :5]
    assert [[h["id"] for h in q] for q in hits] == expected.tolist()
    assert await cluster.proxy.count(NAME) == 600
    await cluster.proxy.delete(NAME, [3])
    hits = await cluster.proxy.search(NAME, queries[:1], limit=1)
    assert hits[0][0]["id"] != 3


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_a_call_meant_for_another_node_is_refused_in_process_too(cluster):
    (node,) = cluster.coord.nodes.all()
    stub = in_process.stub_at(node.address)
    req = query_coord_pb2.GetDataDistributionRequest()
    with pytest.raises(errors.ServiceUnavailable, match="node not match"):
        await unary_call(stub.GetDataDistribution, req, timeout=5, what="x",
                         metadata=(("serverid", str(node.node_id + 100)),))


async def test_in_process_with_more_than_one_worker_is_refused_before_anything_starts(tmp_path):
    from vecgrid.config import ConfigError

    settings = fast_settings(tmp_path, workers=2)
    settings.set("dask.in_process", True)
    cluster = EmbeddedCluster(settings)
    with pytest.raises(ConfigError, match="dask.workers must be 1"):
        await cluster.start()
    assert cluster.cluster is None


@pytest.mark.parametrize("argv, workers, in_process", [
    (["serve"], 2, False),
    (["serve", "--in-process"], 1, True),          # one node: --in-process implies --workers 1
    (["serve", "--in-process", "--workers", "2"], 2, True),   # kept as asked: start() refuses it, exit 2
])
def test_serve_in_process_flag(argv, workers, in_process):
    from vecgrid.cli import _overrides, _parser
    from vecgrid.config import Settings

    settings = Settings.load(env={}, overrides=_overrides(_parser().parse_args(argv)))
    assert (settings.dask.workers, settings.dask.in_process) == (workers, in_process)
