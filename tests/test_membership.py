"""Query nodes follow Dask membership: ids survive worker restarts, leaving workers are dropped."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
import pytest_asyncio

from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import query_coord_pb2, query_coord_pb2_grpc
from tests.conftest import aio_channel, embedded_settings, poll_until

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(tmp_path_factory):
    settings = embedded_settings(tmp_path_factory.mktemp("data"), workers=2)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    yield cluster
    await asyncio.wait_for(cluster.stop(), 60)


async def _listed(cluster) -> dict[int, str]:
    stub = query_coord_pb2_grpc.QueryCoordStub(aio_channel(cluster.addresses.grpc))
    reply = await stub.ListQueryNode(query_coord_pb2.ListQueryNodeRequest(), timeout=10)
    assert reply.status.code == 0
    return {n.ID: n.address for n in reply.nodeInfos}


async def test_killed_worker_comes_back_with_the_same_node_id(cluster):
    before = await _listed(cluster)
    node = cluster.coord.nodes.all()[0]
    pids = await cluster.client.run(os.getpid, workers=[node.worker])
    os.kill(pids[node.worker], signal.SIGKILL)
    # The nanny restarts the worker under the same name; it must re-register under the same id.
    after = await poll_until(
        lambda: _restarted(cluster, node.node_id, before[node.node_id]), timeout=60,
        what="the killed worker's node to come back")
    assert set(after) == set(before)
    assert after[node.node_id] != before[node.node_id]  # a new process on a new port


async def _restarted(cluster, node_id: int, old_address: str):
    listed = await _listed(cluster)
    return listed if listed.get(node_id, old_address) != old_address and len(listed) == 2 else None


async def test_coordinator_restart_keeps_node_ids(cluster):
    before = await _listed(cluster)
    # A second coordinator over the same data dir and scheduler (the first one's successor).
    from vecgrid.deploy import Coordinator
    settings = cluster.settings.with_env({})
    settings.querycoord.port = 0
    settings.http.port = 0
    settings.proxy.port = 0
    await cluster.coord.stop()  # the old coordinator stops watching; its workers keep running
    successor = Coordinator(settings, deploy_mode="EMBEDDED")
    await successor.start(cluster.cluster.scheduler_address)
    try:
        ids = {n.node_id: n.address for n in successor.coord.nodes.all()}
        assert ids == before
    finally:
        await successor.stop()
    await cluster.coord.start()  # give the fixture its coordinator back


async def test_retired_worker_is_dropped_within_10_s(cluster):
    before = await _listed(cluster)
    node = cluster.coord.nodes.all()[-1]
    start = time.monotonic()
    await cluster.client.retire_workers(workers=[node.worker], close_workers=True)
    await poll_until(lambda: _gone(cluster, node.node_id), timeout=10,
                     what="ListQueryNode to drop the retired worker")
    assert time.monotonic() - start < 10
    assert set(await _listed(cluster)) == set(before) - {node.node_id}


async def _gone(cluster, node_id: int) -> bool:
    return node_id not in await _listed(cluster)
