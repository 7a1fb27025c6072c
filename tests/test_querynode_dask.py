"""A segment load issued as a Dask task pinned to a worker runs the same QueryNode handler as the gRPC method."""

from __future__ import annotations

import asyncio
import contextlib
from typing import AsyncIterator

import grpc
import pytest
from distributed import Client, LocalCluster

from vecgrid.cluster.querynode import tasks
from vecgrid.cluster.querynode.session import assign_node_id, describe_querynode
from vecgrid.config import Settings
from vecgrid.node_plugin import QueryNodePlugin
from vecgrid.proto import query_coord_pb2, query_coord_pb2_grpc
from tests.querynode_support import import_collection, load_request

pytest.importorskip("faiss")


@contextlib.asynccontextmanager
async def one_node_cluster(data_dir: str, *, processes: bool) -> AsyncIterator[Client]:
    """A one-worker Dask cluster with the QueryNode plugin registered, and a client of it."""
    settings = Settings.load(env={}, overrides={"common.data_dir": data_dir, "querynode.port": 0,
                                                "querynode.grace_s": 0.1})
    async with LocalCluster(n_workers=1, threads_per_worker=1, processes=processes, asynchronous=True,
                            dashboard_address=":0") as cluster, \
            Client(cluster, asynchronous=True) as client:
        await asyncio.wait_for(client.register_plugin(QueryNodePlugin(settings)), 60)
        await client.wait_for_workers(1)
        yield client


async def test_load_segments_as_a_pinned_dask_task(tmp_path):
    ds = import_collection(tmp_path, "tasks", metric="L2", index="FLAT", n=600, segment_rows=300, shards=1)
    async with one_node_cluster(ds.data_dir, processes=False) as client:
        await client.run(assign_node_id, 21)
        ((worker, described),) = (await client.run(describe_querynode)).items()
        assert described["node_id"] == 21 and described["state"] == "Healthy"

        req = load_request(ds, dst_node_id=21)
        status = await client.submit(tasks.call, "load_segments", req, workers=[worker],
                                     allow_other_workers=False, pure=False)
        assert status.code == 0
        dist = await client.submit(tasks.call, "get_data_distribution", query_coord_pb2.GetDataDistributionRequest(),
                                   workers=[worker], pure=False)
        assert {s.ID for s in dist.segments} == set(ds.segment_ids)

        # what the task loaded is what the node serves over gRPC
        async with grpc.aio.insecure_channel(described["address"]) as channel:
            stub = query_coord_pb2_grpc.QueryNodeStub(channel)
            reply = await stub.GetDataDistribution(
                query_coord_pb2.GetDataDistributionRequest(), metadata=(("serverid", "21"),), timeout=30
            )
        assert reply.nodeID == 21 and {s.ID for s in reply.segments} == set(ds.segment_ids)

        with pytest.raises(Exception, match="not a QueryNode task handler"):
            await client.submit(tasks.call, "close", None, workers=[worker], pure=False)


def _vecgrid_modules_loaded() -> list[str]:
    import sys

    return sorted(m for m in sys.modules if m.startswith("vecgrid."))


@pytest.mark.slow
async def test_a_worker_process_loads_the_node_not_the_coordinators_servers(tmp_path):
    """The plugin reaches a worker pickled by reference to its module: that module, not vecgrid.deploy
    (the REST app, the Milvus and QueryCoord servers), is what the worker imports."""
    async with one_node_cluster(str(tmp_path), processes=True) as client:
        ((_, described),) = (await client.run(describe_querynode)).items()
        assert described is not None and described["address"]   # the plugin's setup ran: the node serves
        ((_, loaded),) = (await client.run(_vecgrid_modules_loaded)).items()
        assert not [m for m in loaded if m == "vecgrid.deploy" or m.startswith(("vecgrid.http", "vecgrid.cli"))]
        assert "vecgrid.node_plugin" in loaded and "vecgrid.cluster.querynode.node" in loaded
