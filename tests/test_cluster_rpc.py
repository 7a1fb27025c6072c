"""The embedded cluster answers the component RPCs of both services through generated stubs."""

from __future__ import annotations

import json

import pytest

from vecgrid.proto import internal_pb2, milvus_pb2, query_coord_pb2, query_coord_pb2_grpc
from vecgrid.rpc.querycoord_servicer import QueryCoordServicer
from vecgrid.rpc.querynode_servicer import QueryNodeServicer
from vecgrid.rpc.service import pending_methods
from tests.conftest import aio_channel, poll_until

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

HEALTHY = 1
SYSTEM_INFO = json.dumps({"metric_type": "system_info"})


async def _stubs(embedded):
    coord = query_coord_pb2_grpc.QueryCoordStub(aio_channel(embedded.addresses.grpc))
    listed = await coord.ListQueryNode(query_coord_pb2.ListQueryNodeRequest(), timeout=10)
    nodes = {n.ID: query_coord_pb2_grpc.QueryNodeStub(aio_channel(n.address)) for n in listed.nodeInfos}
    return coord, listed, nodes


async def test_list_query_node_lists_every_worker_with_its_grpc_address(embedded):
    coord, listed, nodes = await _stubs(embedded)
    assert listed.status.code == 0
    assert len(listed.nodeInfos) == 2
    assert {n.state for n in listed.nodeInfos} == {"Normal"}
    ids = [n.ID for n in listed.nodeInfos]
    assert len(set(ids)) == 2 and all(i > 0 for i in ids)
    for node in listed.nodeInfos:
        host, port = node.address.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
        # The advertised address really is that node: it reports the same id.
        states = await nodes[node.ID].GetComponentStates(milvus_pb2.GetComponentStatesRequest(), timeout=10)
        assert states.state.nodeID == node.ID
        assert states.state.role == "querynode"
        assert states.state.state_code == HEALTHY


async def test_component_states_and_channels_on_every_component(embedded):
    coord, listed, nodes = await _stubs(embedded)
    states = await coord.GetComponentStates(milvus_pb2.GetComponentStatesRequest(), timeout=10)
    assert states.status.code == 0 and states.state.state_code == HEALTHY
    assert states.state.nodeID > 0 and states.state.nodeID not in nodes
    for stub in [coord, *nodes.values()]:
        tt = await stub.GetTimeTickChannel(internal_pb2.GetTimeTickChannelRequest(), timeout=10)
        assert tt.status.code == 0 and tt.value == "by-dev-queryTimeTick"
        stats = await stub.GetStatisticsChannel(internal_pb2.GetStatisticsChannelRequest(), timeout=10)
        assert stats.status.code == 0 and stats.value == ""


async def test_show_configurations_filters_the_real_settings(embedded):
    coord, listed, nodes = await _stubs(embedded)
    reply = await coord.ShowConfigurations(internal_pb2.ShowConfigurationsRequest(pattern="port"), timeout=10)
    assert reply.status.code == 0
    found = {kv.key: kv.value for kv in reply.configuations}
    assert found == {"querycoord.port": embedded.addresses.grpc.rsplit(":", 1)[1]}
    everything = await coord.ShowConfigurations(internal_pb2.ShowConfigurationsRequest(pattern=""), timeout=10)
    keys = {kv.key for kv in everything.configuations}
    assert "common.data_dir" in keys and all(k.split(".")[0] in ("common", "querycoord") for k in keys)
    for node_id, stub in nodes.items():
        reply = await stub.ShowConfigurations(internal_pb2.ShowConfigurationsRequest(pattern="PORT"), timeout=10)
        address = next(n.address for n in listed.nodeInfos if n.ID == node_id)
        assert {kv.key: kv.value for kv in reply.configuations} == {"querynode.port": address.rsplit(":", 1)[1]}
        none = await stub.ShowConfigurations(internal_pb2.ShowConfigurationsRequest(pattern="no-such-key"), timeout=10)
        assert none.status.code == 0 and len(none.configuations) == 0


async def test_get_metrics_system_info(embedded):
    coord, listed, nodes = await _stubs(embedded)
    reply = await coord.GetMetrics(milvus_pb2.GetMetricsRequest(request=SYSTEM_INFO), timeout=30)
    assert reply.status.code == 0
    coord_id = (await coord.GetComponentStates(milvus_pb2.GetComponentStatesRequest())).state.nodeID
    assert reply.component_name == f"querycoord{coord_id}"
    doc = json.loads(reply.response)
    me = doc["cluster"]["self"]["base_component_infos"]
    assert me["type"] == "querycoord" and me["id"] == coord_id
    assert me["hardware_infos"]["cpu_core_count"] >= 1 and me["hardware_infos"]["memory"] > 0
    connected = {n["base_component_infos"]["id"] for n in doc["cluster"]["connected_nodes"]}
    assert connected == set(nodes)
    assert not any(n["base_component_infos"]["has_error"] for n in doc["cluster"]["connected_nodes"])
    assert {c["connected_identifier"] for c in doc["connections"]["connected_components"]} == set(nodes)
    for node_id, stub in nodes.items():
        reply = await stub.GetMetrics(milvus_pb2.GetMetricsRequest(request=SYSTEM_INFO), timeout=10)
        assert reply.status.code == 0 and reply.component_name == f"querynode{node_id}"
        info = json.loads(reply.response)["base_component_infos"]
        assert info["id"] == node_id and info["type"] == "querynode"


async def test_get_metrics_rejects_other_metric_types(embedded):
    coord, listed, nodes = await _stubs(embedded)
    for stub in [coord, *nodes.values()]:
        for bad in ['{"metric_type":"system_configurations"}', "not json", "{}"]:
            reply = await stub.GetMetrics(milvus_pb2.GetMetricsRequest(request=bad), timeout=10)
            assert reply.status.code == 65535 and reply.response == ""
        reply = await stub.GetMetrics(milvus_pb2.GetMetricsRequest(request='{"metric_type":"x"}'), timeout=10)
        assert "sorry, but this metric type is not implemented" in reply.status.reason


async def test_check_health_on_coordinator_and_nodes(embedded):
    coord, listed, nodes = await _stubs(embedded)
    for stub in [coord, *nodes.values()]:
        reply = await stub.CheckHealth(milvus_pb2.CheckHealthRequest(), timeout=10)
        assert reply.status.code == 0 and reply.isHealthy and list(reply.reasons) == []


async def test_every_method_is_registered_and_pending_ones_answer_a_status(embedded):
    coord, listed, nodes = await _stubs(embedded)
    node = next(iter(nodes.values()))
    for stub, servicer in ((coord, QueryCoordServicer), (node, QueryNodeServicer)):
        service = servicer.SERVICE
        for method in service.methods:
            assert hasattr(stub, method.name), method.name
        for name in pending_methods(servicer):
            method = service.methods_by_name[name]
            request_cls = getattr(_module_of(method.input_type), method.input_type.name)
            call = getattr(stub, name)
            if method.server_streaming:
                replies = [r async for r in call(request_cls(), timeout=10)]
                assert len(replies) == 1
                reply = replies[0]
            else:
                reply = await call(request_cls(), timeout=10)
            status = reply if method.output_type.full_name == "milvus.proto.common.Status" else reply.status
            assert status.code == 10, name
            assert name in status.reason and "not implemented yet" in status.reason


def _module_of(descriptor):
    from vecgrid.proto import internal_pb2, milvus_pb2, query_coord_pb2
    return {"milvus.proto.query": query_coord_pb2, "milvus.proto.milvus": milvus_pb2,
            "milvus.proto.internal": internal_pb2}[descriptor.file.package]


async def test_rest_health_and_version(embedded):
    from tornado.httpclient import AsyncHTTPClient, HTTPClientError

    http = AsyncHTTPClient()
    health = json.loads((await http.fetch(embedded.addresses.http + "/health")).body)
    components = health.pop("components")
    assert health == {"status": "ok", "querycoord": "Healthy", "query_nodes": 2}
    assert [c["name"] for c in components if not c["name"].startswith("querynode-")] == [
        "coordinator", "scheduler", "metadata-store", "wal"]
    assert len([c for c in components if c["name"].startswith("querynode-")]) == 2
    assert all(c["healthy"] and c["reason"] == "" for c in components)
    version = json.loads((await http.fetch(embedded.addresses.http + "/version")).body)
    import vecgrid
    assert version["version"] == vecgrid.__version__
    with pytest.raises(HTTPClientError) as err:
        await http.fetch(embedded.addresses.http + "/no/such/path")
    assert err.value.code == 404
    assert json.loads(err.value.response.body) == {
        "name": "NotFound", "message": "Path /no/such/path not found", "code": 404, "className": "not-found"}


async def test_rest_metrics_in_prometheus_text(embedded):
    from prometheus_client.parser import text_string_to_metric_families
    from tornado.httpclient import AsyncHTTPClient

    http = AsyncHTTPClient()
    await http.fetch(embedded.addresses.http + "/users?$limit=0")
    await http.fetch(embedded.addresses.http + "/nope", raise_error=False)
    response = await http.fetch(embedded.addresses.http + "/metrics")
    assert response.headers["Content-Type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(response.body.decode())}
    assert families["vecgrid_querycoord_querynodes"].samples[0].value == 2
    counts = {(s.labels["service"], s.labels["method"], s.labels["code"]): s.value
              for s in families["vecgrid_http_request_duration_seconds"].samples if s.name.endswith("_count")}
    assert counts[("users", "find", "200")] >= 1 and counts[("(unmatched)", "(unmatched)", "404")] >= 1


async def test_health_service_and_reflection(embedded):
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    coord, listed, nodes = await _stubs(embedded)
    for address, service in [(embedded.addresses.grpc, "milvus.proto.query.QueryCoord"),
                             *[(n.address, "milvus.proto.query.QueryNode") for n in listed.nodeInfos]]:
        channel = aio_channel(address)
        health = health_pb2_grpc.HealthStub(channel)
        reply = await health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        responses = [r async for r in reflection.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)]
        names = {s.name for s in responses[0].list_services_response.service}
        assert service in names and "grpc.health.v1.Health" in names


async def test_bulk_import_into_a_live_clusters_data_dir(embedded, tmp_path):
    """`vecgrid import` shares meta.db with the running coordinator without disturbing it."""
    import asyncio
    import sys

    import numpy as np

    np.save(tmp_path / "vec.npy", np.random.default_rng(1).random((500, 8), dtype=np.float32))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "vecgrid.cli", "import", "--data-dir", embedded.addresses.data_dir,
        "--collection", "live", str(tmp_path / "vec.npy"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    assert json.loads(out.decode().strip().splitlines()[-1])["num_rows"] == 500
    coord, listed, nodes = await _stubs(embedded)
    assert len(listed.nodeInfos) == 2
    # The coordinator's own metadata (node ids) is still readable and unchanged.
    assert embedded.coord.registry.id_for("querynode", "0") in {n.ID for n in listed.nodeInfos}


async def test_channel_stream_serves_the_wal_to_remote_readers(embedded):
    """A node on another host reads a DML channel through the coordinator (vecgrid.wal.ChannelStream)."""
    import asyncio
    import time

    from vecgrid.cluster.streaming.remote_reader import RemoteChannelReader
    from vecgrid.storage.wal import MessageKind, WalError

    channel = "by-dev-rootcoord-dml_0_77v0"
    writer = embedded.wal.open_writer(channel)
    first = writer.append(MessageKind.TIMETICK, 10, b"a")
    writer.append(MessageKind.TIMETICK, 20, b"b")

    def consume():
        reader = RemoteChannelReader(embedded.addresses.grpc, channel)
        got = [reader.read(timeout=10), reader.read(timeout=10)]
        # Tailing: a record appended now arrives within 50 ms (allow slack for a loaded CI box).
        t0 = time.monotonic()
        writer.append(MessageKind.TIMETICK, 30, b"c")
        got.append(reader.read(timeout=10))
        latency = time.monotonic() - t0
        reader.seek(first)  # exclusive: continue after the first record
        again = reader.read(timeout=10)
        reader.close()
        missing = RemoteChannelReader(embedded.addresses.grpc, "by-dev-rootcoord-dml_0_78v0/../x")
        try:
            missing.read(timeout=10)
            error = None
        except WalError as e:
            error = e
        missing.close()
        return got, latency, again, error

    got, latency, again, error = await asyncio.to_thread(consume)
    writer.close()
    assert [r.payload for r in got] == [b"a", b"b", b"c"]
    assert [r.timestamp for r in got] == [10, 20, 30]
    assert got[0].position == first
    assert latency < 0.5
    assert again.payload == b"b"
    assert error is not None and "NOT_FOUND" in str(error)


async def test_a_failing_datacoord_part_makes_the_coordinator_unhealthy(embedded):
    """DataCoord's failures (a flush or compaction that keeps failing) reach CheckHealth: a failure that
    only shows in a Python attribute is one nobody reads."""
    coord, _, _ = await _stubs(embedded)
    compaction = embedded.datacoord._compaction
    compaction._failing[999] = (0.0, "injected: the segment store is read-only")
    try:
        async def unhealthy():
            await embedded.coord.health.refresh()
            reply = await coord.CheckHealth(milvus_pb2.CheckHealthRequest(), timeout=10)
            return not reply.isHealthy and any("injected" in r for r in reply.reasons)
        await poll_until(unhealthy, 10, 0.1, "CheckHealth to report the DataCoord failure")
    finally:
        del compaction._failing[999]
    await embedded.coord.health.refresh()
    reply = await coord.CheckHealth(milvus_pb2.CheckHealthRequest(), timeout=10)
    assert reply.isHealthy and list(reply.reasons) == []
