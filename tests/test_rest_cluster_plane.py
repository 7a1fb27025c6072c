"""The cluster plane over real HTTP: nodes, resource groups, replicas, segments, channels, balance,
checkers and configurations against a QueryCoord with two query nodes in this process (an in-process
Dask cluster of thread workers).  Each change made over REST is checked in what the next find shows,
and each refusal (400, 404, 405, 409) in the coordinator's state staying as it was."""

from __future__ import annotations

import json

import pytest
import pytest_asyncio
import tornado.httpclient
import tornado.httpserver
import tornado.netutil

from vecgrid.config import REDACTED
from vecgrid.deploy import Coordinator
from vecgrid.http import services
from vecgrid.http.services import RestContext
from tests.conftest import poll_until
from tests.rest_support import rest_cluster
from tests.querycoord_support import DEFAULT_RG, Coord, left_as_found
from tests.querynode_support import import_collection

pytest.importorskip("faiss")
pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "s3cret-" + "x" * 32
NAME = "rest_cp"


class Rest:
    """HTTP against the app: ``(status, body)`` of one request, errors included."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.client = tornado.httpclient.AsyncHTTPClient()

    async def __call__(self, verb: str, path: str, body=None, method: str | None = None):
        headers = {"Content-Type": "application/json"}
        if method is not None:
            headers["X-Service-Method"] = method
        payload = None if body is None else json.dumps(body)
        if verb in ("POST", "PATCH", "PUT") and payload is None:
            payload = ""
        reply = await self.client.fetch(self.base + path, method=verb, headers=headers, body=payload,
                                        raise_error=False, request_timeout=120, allow_nonstandard_methods=True)
        text = reply.body.decode() if reply.body else ""
        return reply.code, (json.loads(text) if text else None)

    async def ok(self, verb: str, path: str, body=None, method: str | None = None, status: int = 200):
        code, answer = await self(verb, path, body, method)
        assert code == status, f"{verb} {path}: {code} {answer}"
        return answer


class Env:
    def __init__(self, coordinator: Coordinator, ds, rest: Rest) -> None:
        self.coordinator, self.ds, self.rest = coordinator, ds, rest
        self.qc = coordinator.coord
        self.coord = Coord(coordinator.addresses.grpc, coordinator.coord)

    def node_ids(self) -> list[int]:
        return [n.node_id for n in self.qc.nodes.all()]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("rest-cp")
    ds = import_collection(root, NAME, metric="L2", index="FLAT", n=600, shards=2, segment_rows=150, seed=3)
    async with rest_cluster(tmp_path_factory, "rest-cp", ["cluster_plane"], data_dir=ds.data_dir,
                            overrides={"http.jwt_secret": SECRET}) as (coordinator, server):
        yield Env(coordinator, ds, Rest(server.base))


@pytest_asyncio.fixture(loop_scope="module")
async def env(cluster_env):
    async with left_as_found(cluster_env.coord, cluster_env.qc):
        yield cluster_env


def segment_count(env) -> int:
    return len(env.ds.summary["segments"])


async def loaded(env, **kw) -> int:
    cid = env.ds.collection_id
    await env.coord.load(cid, **kw)
    return cid


# --- nodes ----------------------------------------------------------------------------------------

async def test_nodes_find_and_get_report_devices_memory_and_what_they_serve(env):
    rest, qc = env.rest, env.qc
    cid = await loaded(env)
    await poll_until(lambda: len(qc.dist.segments(cid)) == segment_count(env), 30, what="every segment served")
    nodes = await rest.ok("GET", "/nodes")
    assert [n["id"] for n in nodes] == env.node_ids()
    for node in nodes:
        info = qc.nodes.get(node["id"])
        channels, segments = qc.query_node_distribution(node["id"])
        assert node["address"] == info.address and node["state"] == "normal"
        assert node["resourceGroup"] == DEFAULT_RG
        assert node["device"] in ("GPU", "CPU") and node["metricsError"] is None
        assert node["segmentCount"] == len(segments) and node["channelCount"] == len(channels)
        assert 0 < node["memoryUsedBytes"] <= node["memoryCapacityBytes"]
        kinds = [d["kind"] for d in node["devices"]]
        assert "CPU" in kinds and (node["device"] == "GPU") == ("GPU" in kinds)
        if node["device"] == "CPU":
            assert node["gpuMemoryUsedBytes"] == node["gpuMemoryCapacityBytes"] == 0
        one = await rest.ok("GET", f"/nodes/{node['id']}")
        assert one["channels"] == channels and one["segments"] == segments
    assert sum(n["segmentCount"] for n in nodes) == segment_count(env) and sum(n["channelCount"] for n in nodes) == 2
    busy = max(nodes, key=lambda n: n["segmentCount"])
    found = await rest.ok("GET", f"/nodes?segmentCount[$gte]={busy['segmentCount']}&$select[]=id")
    assert {"id": busy["id"]} in found
    assert await rest.ok("GET", "/nodes?state=suspended") == []


async def test_nodes_refuse_bad_input(env):
    rest = env.rest
    code, body = await rest("GET", "/nodes/999999")
    assert code == 404 and body["name"] == "NotFound" and body["data"]["milvusCode"] == 901
    assert (await rest("GET", "/nodes/abc"))[0] == 400
    assert (await rest("GET", "/nodes?colour=red"))[0] == 400
    for verb, path in (("POST", "/nodes"), ("DELETE", "/nodes/1"), ("PUT", "/nodes/1")):
        code, body = await rest(verb, path, {})
        assert code == 405, (verb, path, body)
    assert (await rest("POST", "/nodes", {}, method="transfer"))[0] == 405


async def test_a_node_suspended_over_rest_leaves_its_group_until_resumed(env):
    rest, qc = env.rest, env.qc
    node_id = env.node_ids()[0]
    for bad in ({"state": "asleep"}, {}, {"state": "suspended", "colour": "red"}, [1]):
        code, body = await rest("PATCH", f"/nodes/{node_id}", bad)
        assert code == 400, (bad, body)
    assert qc.suspended == set()
    assert (await rest("PATCH", "/nodes", {"state": "suspended"}))[0] == 405
    assert (await rest("PATCH", "/nodes/999999", {"state": "suspended"}))[0] == 404
    patched = await rest.ok("PATCH", f"/nodes/{node_id}", {"state": "suspended"})
    assert patched["state"] == "suspended" and patched["resourceGroup"] is None
    listed = {n["id"]: n for n in await rest.ok("GET", "/nodes")}
    assert listed[node_id]["state"] == "suspended"
    assert [n["id"] for n in await rest.ok("GET", "/nodes?state=suspended")] == [node_id]
    group = await rest.ok("GET", f"/resource-groups/{DEFAULT_RG}")
    assert node_id not in [n["id"] for n in group["nodes"]]
    resumed = await rest.ok("PATCH", f"/nodes/{node_id}", {"state": "normal"})
    assert resumed["state"] == "normal" and resumed["resourceGroup"] == DEFAULT_RG
    assert qc.suspended == set()


# --- resource groups --------------------------------------------------------------------------------

async def test_resource_groups_create_patch_transfer_and_remove(env):
    rest, qc = env.rest, env.qc
    groups = await rest.ok("GET", "/resource-groups")
    assert [g["name"] for g in groups] == [DEFAULT_RG] and groups[0]["numAvailableNode"] == 2

    one = {"requests": {"nodeNum": 1}, "limits": {"nodeNum": 1}}
    created = await rest.ok("POST", "/resource-groups", {"name": "rg1", "config": one}, status=201)
    assert created["name"] == "rg1" and created["config"]["requests"] == {"nodeNum": 1}

    async def nodes_in(name: str) -> int:
        return (await rest.ok("GET", f"/resource-groups/{name}"))["numAvailableNode"]
    await poll_until(lambda: nodes_in("rg1"), 30, what="rg1 got its node")
    assert await nodes_in(DEFAULT_RG) == 1
    assert sorted(g["name"] for g in await rest.ok("GET", "/resource-groups?numAvailableNode=1")) == sorted(
        [DEFAULT_RG, "rg1"])

    labelled = {"requests": {"nodeNum": 0}, "limits": {"nodeNum": 0}, "nodeFilter": {"nodeLabels": {"zone": "a"}},
                "transferTo": [DEFAULT_RG]}
    created = await rest.ok("POST", "/resource-groups", {"name": "zone_a", "config": labelled}, status=201)
    assert created["config"] == {"requests": {"nodeNum": 0}, "limits": {"nodeNum": 0}, "transferFrom": [],
                                 "transferTo": [DEFAULT_RG], "nodeFilter": {"nodeLabels": {"zone": "a"}}}
    assert qc.describe_resource_group("zone_a").config.node_filter.node_labels[0].value == "a"
    await rest.ok("DELETE", "/resource-groups/zone_a")

    # duplicate, bad config, missing name: refused and nothing changes
    code, body = await rest("POST", "/resource-groups", {"name": "rg1", "config": one})
    assert code == 409 and body["name"] == "Conflict"
    for bad in ({"name": "rg2", "config": {"requests": {"nodeNum": "many"}}},
                {"name": "rg2", "config": {"colour": "red"}}, {"config": one}, {"name": 7},
                {"name": "rg2", "config": {"nodeFilter": {"nodeLabels": {"zone": 1}}}},
                {"name": "rg2", "config": {"transferTo": "rg1"}}):
        code, body = await rest("POST", "/resource-groups", bad)
        assert code == 400, (bad, body)
    assert qc.list_resource_groups() == sorted([DEFAULT_RG, "rg1"])
    assert (await rest("GET", "/resource-groups/nope"))[0] == 404
    assert (await rest("PATCH", "/resource-groups/nope", {"config": one}))[0] == 404

    # patch replaces the named parts only
    patched = await rest.ok("PATCH", "/resource-groups/rg1",
                            {"config": {"limits": {"nodeNum": 2}, "transferFrom": [DEFAULT_RG]}})
    assert patched["config"]["requests"] == {"nodeNum": 1} and patched["config"]["limits"] == {"nodeNum": 2}
    assert patched["config"]["transferFrom"] == [DEFAULT_RG]
    assert (await rest("PATCH", "/resource-groups/rg1", {"config": {"limits": {"nodeNum": -1}}}))[0] == 400
    assert qc.describe_resource_group("rg1").config.limits.node_num == 2

    # transferNode: the last default node moves to rg1
    for bad in ({"source": DEFAULT_RG, "target": "rg1"}, {"source": DEFAULT_RG, "target": "rg1", "numNode": "x"}):
        assert (await rest("POST", "/resource-groups", bad, method="transferNode"))[0] == 400
    moved = await rest.ok("POST", "/resource-groups", {"source": DEFAULT_RG, "target": "rg1", "numNode": 1},
                          method="transferNode")
    assert moved["target"]["config"]["requests"] == {"nodeNum": 2}
    await poll_until(lambda: nodes_in("rg1"), 30, what="rg1 has both nodes")
    await poll_until(lambda: qc.describe_resource_group("rg1").num_available_node == 2, 30, what="both nodes in rg1")
    assert await nodes_in(DEFAULT_RG) == 0

    # a group with a limit cannot be dropped (Milvus's rule): 400, still there; then emptied and removed
    assert (await rest("DELETE", "/resource-groups/rg1"))[0] == 400
    assert "rg1" in qc.list_resource_groups()
    await rest.ok("PATCH", "/resource-groups/rg1", {"config": {"requests": {"nodeNum": 0}, "limits": {"nodeNum": 0},
                                                               "transferFrom": []}})
    removed = await rest.ok("DELETE", "/resource-groups/rg1")
    assert removed["name"] == "rg1"
    assert [g["name"] for g in await rest.ok("GET", "/resource-groups")] == [DEFAULT_RG]
    assert (await rest("DELETE", "/resource-groups/rg1"))[0] == 404
    assert (await rest("DELETE", "/resource-groups"))[0] == 405


async def test_transfer_replica_moves_a_replica_to_another_group(env):
    rest, qc = env.rest, env.qc
    one = {"requests": {"nodeNum": 1}, "limits": {"nodeNum": 1}}
    await rest.ok("POST", "/resource-groups", {"name": "rg1", "config": one}, status=201)
    await poll_until(lambda: qc.describe_resource_group("rg1").num_available_node == 1, 30, what="rg1 has a node")
    cid = await loaded(env)
    [replica] = await rest.ok("GET", f"/replicas?collection={NAME}")
    assert replica["resourceGroup"] == DEFAULT_RG and replica["collectionId"] == cid
    bad = {"source": DEFAULT_RG, "target": "rg1", "collection": "no_such_collection", "numReplica": 1}
    assert (await rest("POST", "/resource-groups", bad, method="transferReplica"))[0] == 404
    bad = {"source": DEFAULT_RG, "target": "rg1", "collection": NAME, "numReplica": 2}
    assert (await rest("POST", "/resource-groups", bad, method="transferReplica"))[0] == 400
    assert (await rest("POST", "/resource-groups", {"source": DEFAULT_RG}, method="transferReplica"))[0] == 400
    await rest.ok("POST", "/resource-groups", {"source": DEFAULT_RG, "target": "rg1", "collection": NAME,
                                               "numReplica": 1}, method="transferReplica")

    async def in_rg1() -> bool:
        replicas = await rest.ok("GET", f"/replicas?collection={cid}")
        return [r["resourceGroup"] for r in replicas] == ["rg1"]
    await poll_until(in_rg1, 60, what="the replica in rg1")
    assert (await rest.ok("GET", "/resource-groups/rg1"))["numLoadedReplica"] == {str(cid): 1}


# --- replicas, channels ----------------------------------------------------------------------------

async def test_replicas_and_channels_of_a_loaded_collection(env):
    rest = env.rest
    assert await rest.ok("GET", f"/replicas?collection={NAME}") == []
    code, body = await rest("GET", f"/channels?collection={NAME}")
    assert code == 409 and body["data"]["milvusCode"] == 101
    assert (await rest("GET", "/replicas?collection=no_such_collection"))[0] == 404
    assert (await rest("GET", "/channels?collection=no_such_collection"))[0] == 404
    assert (await rest("GET", f"/replicas?collection={NAME}&colour=red"))[0] == 400
    cid = await loaded(env, replica_number=2)
    replicas = await rest.ok("GET", f"/replicas?collection={NAME}")
    assert len(replicas) == 2 and sorted(n for r in replicas for n in r["nodes"]) == env.node_ids()
    for r in replicas:
        assert r["collection"] == NAME and len(r["shards"]) == 2
        assert all(s["leader"] in r["nodes"] and s["leader"] in s["nodes"] for s in r["shards"])
    assert [r["id"] for r in await rest.ok("GET", "/replicas")] == [r["id"] for r in replicas]
    channels = await rest.ok("GET", f"/channels?collection={NAME}")
    assert len(channels) == 2
    for ch in channels:
        assert ch["collectionId"] == cid and sorted(leader["node"] for leader in ch["leaders"]) == env.node_ids()
    name = channels[0]["name"]
    assert [c["name"] for c in await rest.ok("GET", f"/channels?name={name}")] == [name]
    assert (await rest("GET", "/channels/x"))[0] == 405


async def test_a_channel_transferred_over_rest_is_led_from_its_new_node(env):
    rest = env.rest
    await loaded(env)
    await rest.ok("POST", "/balance", None, method="suspend")
    channel = (await rest.ok("GET", f"/channels?collection={NAME}"))[0]
    [source] = [leader["node"] for leader in channel["leaders"]]
    target = next(n for n in env.node_ids() if n != source)
    for bad in ({"source": source}, {"source": source, "channel": channel["name"]},
                {"source": source, "target": target, "channel": channel["name"], "all": True},
                {"source": "a", "target": target, "channel": channel["name"]}):
        assert (await rest("POST", "/channels", bad, method="transfer"))[0] == 400, bad
    code, body = await rest("POST", "/channels", {"source": source, "target": target, "channel": "nope"},
                            method="transfer")
    assert code == 404 and body["data"]["milvusCode"] == errors_code("ChannelNotFound")
    answer = await rest.ok("POST", "/channels", {"source": source, "target": target, "channel": channel["name"]},
                           method="transfer")
    assert answer == {"source": source, "target": target, "scheduled": 1}

    async def moved() -> bool:
        code, now = await rest("GET", f"/channels?collection={NAME}&name={channel['name']}")
        return code == 200 and [leader["node"] for leader in now[0]["leaders"]] == [target]
    await poll_until(moved, 60, what="the channel led from its new node")


def errors_code(name: str) -> int:
    from vecgrid import errors
    return getattr(errors, name).code


# --- segments ---------------------------------------------------------------------------------------

async def test_segments_find_filter_and_get(env):
    rest, qc = env.rest, env.qc
    cid = await loaded(env)
    segments = await rest.ok("GET", f"/segments?collection={NAME}")
    rows = {s["segment_id"]: s["num_rows"] for s in env.ds.summary["segments"]}
    count = segment_count(env)
    assert len(segments) == count
    for seg in segments:
        assert seg["collection"] == NAME and seg["collectionId"] == cid and seg["partition"] == "_default"
        assert seg["state"] in ("InGPU", "InMemory") and len(seg["nodes"]) == 1
        assert seg["placements"] == [{"node": seg["nodes"][0], "state": seg["state"]}]
        assert seg["numRows"] == rows[seg["id"]] and seg["segmentState"] == "Sealed"
        assert await rest.ok("GET", f"/segments/{seg['id']}") == seg
    for node_id in env.node_ids():
        on_node = await rest.ok("GET", f"/segments?collection={NAME}&node={node_id}")
        assert sorted(s["id"] for s in on_node) == sorted(s.ID for n, s in qc.dist.segments(cid) if n == node_id)
    state = segments[0]["state"]
    assert len(await rest.ok("GET", f"/segments?collection={NAME}&state={state}")) == count
    other = "InMemory" if state == "InGPU" else "InGPU"
    assert await rest.ok("GET", f"/segments?collection={NAME}&state={other}") == []
    assert len(await rest.ok("GET", f"/segments?collection={NAME}&partition=_default")) == count
    pid = segments[0]["partitionId"]
    assert len(await rest.ok("GET", f"/segments?collection={NAME}&partition={pid}")) == count
    assert await rest.ok("GET", f"/segments?collection={NAME}&partition=p9") == []
    assert len(await rest.ok("GET", "/segments")) == count
    smallest = await rest.ok("GET", f"/segments?collection={NAME}&$limit=2&$sort[numRows]=1&$select[]=numRows")
    assert [s["numRows"] for s in smallest] == sorted(rows.values())[:2] and set(smallest[0]) == {"id", "numRows"}
    assert (await rest("GET", f"/segments?collection={NAME}&node=x"))[0] == 400
    assert (await rest("GET", f"/segments?collection={NAME}&colour=red"))[0] == 400
    assert (await rest("GET", "/segments?collection=no_such_collection"))[0] == 404
    code, body = await rest("GET", "/segments/123456789")
    assert code == 404 and body["data"]["milvusCode"] == errors_code("SegmentNotLoaded")
    assert (await rest("GET", "/segments/abc"))[0] == 400
    assert (await rest("GET", f"/segments/{2 ** 64}"))[0] == 400
    code, body = await rest("POST", "/segments", {"source": 1, "target": 2, "segment": 2 ** 63}, method="transfer")
    assert code == 400 and body["errors"] == {"segment": "must be an integer"}
    assert (await rest("DELETE", f"/segments/{segments[0]['id']}"))[0] == 405


async def test_a_segment_transferred_over_rest_is_served_from_its_new_node(env):
    rest = env.rest
    await loaded(env)
    await rest.ok("POST", "/balance", {}, method="suspend")
    seg = (await rest.ok("GET", f"/segments?collection={NAME}"))[0]
    [source] = seg["nodes"]
    target = next(n for n in env.node_ids() if n != source)
    for bad in ({"target": target, "segment": seg["id"]}, {"source": source, "target": target},
                {"source": source, "segment": seg["id"]}, {"source": source, "target": target, "segment": "x"},
                {"source": source, "target": target, "segment": seg["id"], "colour": "red"}):
        assert (await rest("POST", "/segments", bad, method="transfer"))[0] == 400, bad
    assert (await rest("POST", "/segments", {"source": 999999, "target": target, "segment": seg["id"]},
                       method="transfer"))[0] == 404
    assert [s["nodes"] for s in await rest.ok("GET", f"/segments?collection={NAME}")
            if s["id"] == seg["id"]] == [[source]]
    answer = await rest.ok("POST", "/segments", {"source": source, "target": target, "segment": seg["id"]},
                           method="transfer")
    assert answer["scheduled"] == 1

    async def moved() -> bool:
        return (await rest.ok("GET", f"/segments/{seg['id']}"))["nodes"] == [target]
    await poll_until(moved, 60, what="the segment served from its new node")
    assert seg["id"] in [s["id"] for s in await rest.ok("GET", f"/segments?collection={NAME}&node={target}")]


# --- balance ----------------------------------------------------------------------------------------

async def test_balance_status_suspend_resume(env):
    rest, qc = env.rest, env.qc
    assert await rest.ok("GET", "/balance/status") == {"id": "status", "active": True}
    assert await rest.ok("POST", "/balance", None, method="suspend") == {"id": "status", "active": False}
    assert await rest.ok("GET", "/balance/status") == {"id": "status", "active": False}
    assert not qc.balance_active()
    assert (await rest("POST", "/balance", {"now": True}, method="resume"))[0] == 400
    assert not qc.balance_active()
    assert await rest.ok("POST", "/balance", None, method="resume") == {"id": "status", "active": True}
    assert qc.balance_active()
    assert (await rest("GET", "/balance/other"))[0] == 404
    assert (await rest("GET", "/balance"))[0] == 405
    assert (await rest("DELETE", "/balance/status"))[0] == 405


async def test_load_balance_and_distribution_check(env):
    rest, qc = env.rest, env.qc
    cid = await loaded(env)
    await rest.ok("POST", "/balance", None, method="suspend")
    a, b = env.node_ids()
    await poll_until(lambda: {n for n, _ in qc.dist.segments(cid)} == {a, b}, 30, what="segments on both nodes")
    check = await rest.ok("POST", "/balance", {"source": a, "target": b}, method="check")
    assert check["consistent"] is False and check["reason"]
    assert (await rest.ok("POST", "/balance", {"source": a, "target": a}, method="check"))["consistent"] is True
    assert (await rest("POST", "/balance", {"source": a}, method="check"))[0] == 400
    assert (await rest("POST", "/balance", {"source": a, "target": 999999}, method="check"))[0] == 404

    for bad in ({"source": a}, {"collection": NAME}, {"collection": NAME, "source": a, "targets": "b"},
                {"collection": NAME, "source": a, "segments": [1, "x"]}):
        assert (await rest("POST", "/balance", bad))[0] == 400, bad
    assert (await rest("POST", "/balance", {"collection": "no_such_collection", "source": a}))[0] == 404
    before = sorted((n, s.ID) for n, s in qc.dist.segments(cid))
    assert (await rest("POST", "/balance", {"collection": NAME, "source": a, "targets": [999999]}))[0] == 404
    assert sorted((n, s.ID) for n, s in qc.dist.segments(cid)) == before
    done = await rest.ok("POST", "/balance", {"collection": NAME, "source": a, "targets": [b]}, status=201)
    assert done["source"] == a and done["targets"] == [b]
    await poll_until(lambda: {n for n, _ in qc.dist.segments(cid)} == {b}, 30, what="every segment on b")
    assert await rest.ok("GET", f"/segments?collection={NAME}&node={a}") == []
    assert len(await rest.ok("GET", f"/segments?collection={NAME}&node={b}")) == segment_count(env)


# --- checkers, configurations ---------------------------------------------------------------------------

async def test_checkers_find_and_patch(env):
    rest, qc = env.rest, env.qc
    checkers = await rest.ok("GET", "/checkers")
    assert [c["id"] for c in checkers] == sorted(qc.checkers.checkers) and all(c["activated"] for c in checkers)
    first = checkers[0]["id"]
    for bad in ({"activated": "no"}, {}, {"activated": False, "colour": "red"}):
        assert (await rest("PATCH", f"/checkers/{first}", bad))[0] == 400, bad
    assert (await rest("PATCH", "/checkers/99", {"activated": False}))[0] == 404
    assert (await rest("PATCH", "/checkers/x", {"activated": False}))[0] == 400
    assert (await rest("PATCH", "/checkers", {"activated": False}))[0] == 405
    assert (await rest("GET", f"/checkers/{first}"))[0] == 405
    assert all(c.active for c in qc.checkers.checkers.values())
    patched = await rest.ok("PATCH", f"/checkers/{first}", {"activated": False})
    assert patched == {"id": first, "name": checkers[0]["name"], "activated": False}
    assert [c["id"] for c in await rest.ok("GET", "/checkers?activated=false")] == [first]
    await rest.ok("PATCH", f"/checkers/{first}", {"activated": True})
    assert await rest.ok("GET", "/checkers?activated=false") == []


async def test_configurations_of_every_component_with_secrets_redacted(env):
    rest, qc = env.rest, env.qc
    ports = await rest.ok("GET", "/configurations?pattern=port")
    by_component = {}
    for record in ports:
        by_component.setdefault(record["component"], {})[(record["nodeId"], record["key"])] = record["value"]
    assert by_component["querycoord"] == {(qc.lifecycle.node_id, "querycoord.port"): env.coordinator.addresses.grpc
                                          .rsplit(":", 1)[1]}
    assert by_component["querynode"] == {(n.node_id, "querynode.port"): n.address.rsplit(":", 1)[1]
                                         for n in qc.nodes.all()}
    secrets = await rest.ok("GET", "/configurations?pattern=JWT_SECRET")
    assert [(r["component"], r["key"], r["value"]) for r in secrets] == [("http", "http.jwt_secret", REDACTED)]
    everything = json.dumps(await rest.ok("GET", "/configurations"))
    assert SECRET not in everything and "datacoord.segment_max_rows" in everything
    only = await rest.ok("GET", "/configurations?pattern=port&component=querynode")
    assert {r["component"] for r in only} == {"querynode"}
    assert (await rest("GET", "/configurations?colour=red"))[0] == 400
    assert (await rest("GET", "/configurations/common.host"))[0] == 405


# --- rights ------------------------------------------------------------------------------------------

async def test_every_exposed_method_declares_its_right(monkeypatch):
    from vecgrid.http import app as rest_app
    monkeypatch.setattr(services, "SERVICE_MODULES", ("cluster_plane",))
    api = rest_app.build_api(RestContext(coord=None))   # as the coordinator's app mounts it
    for path, registered in api.services.items():
        rights = type(registered.service).RIGHTS
        assert set(rights) == set(registered.methods), path
        for method, right in rights.items():
            changes = method not in ("find", "get", "check")
            assert right == ("admin" if changes else "read"), (path, method)
    assert sorted(api.services) == sorted(["nodes", "resource-groups", "replicas", "segments", "channels", "balance",
                                           "checkers", "configurations"])
    assert {m for r in api.services.values() for m in r.custom_methods} == {
        "transferNode", "transferReplica", "transfer", "suspend", "resume", "check"}


async def test_a_node_that_cannot_report_its_metrics_is_listed_with_the_reason(env, monkeypatch):
    rest, qc = env.rest, env.qc
    silent = env.node_ids()[0]
    answer = qc._node_metrics

    async def metrics(node):
        if node.node_id == silent:
            return {"base_component_infos": {"has_error": True, "error_reason": "connection refused"}}
        return await answer(node)
    monkeypatch.setattr(qc, "_node_metrics", metrics)
    listed = {n["id"]: n for n in await rest.ok("GET", "/nodes")}
    assert listed[silent]["metricsError"] == "connection refused"
    assert listed[silent]["memoryUsedBytes"] is None and listed[silent]["devices"] == []
    other = next(n for n in listed if n != silent)
    assert listed[other]["metricsError"] is None and listed[other]["memoryUsedBytes"] > 0


# --- the coordinator's parts the services read ---------------------------------------------------------

async def test_resource_group_usage_counts_replicas_outgoing_and_incoming_nodes():
    from vecgrid.cluster.querycoord.reports import replica_usage
    from vecgrid.proto import common_pb2, query_coord_pb2

    groups = {1: "rg1", 2: "rg1", 3: "rg2", 4: "rg2"}
    mine = query_coord_pb2.Replica(ID=10, collectionID=7, resource_group="rg1", nodes=[1, 3])     # node 3 now in rg2
    theirs = query_coord_pb2.Replica(ID=11, collectionID=8, resource_group="rg2", nodes=[4], ro_nodes=[2])
    info = query_coord_pb2.ResourceGroupInfo(
        name="rg1", nodes=[common_pb2.NodeInfo(node_id=1), common_pb2.NodeInfo(node_id=2)]
    )
    replica_usage(info, [mine, theirs], groups.get)
    assert dict(info.num_loaded_replica) == {7: 1}
    assert dict(info.num_outgoing_node) == {7: 1}
    assert dict(info.num_incoming_node) == {8: 1}


async def test_secret_settings_are_redacted_in_every_report():
    from vecgrid.config import Settings

    settings = Settings.load(env={}, overrides={"http.jwt_secret": SECRET})
    assert dict(settings.config_items("http"))["http.jwt_secret"] == REDACTED
    assert dict(Settings.load(env={}).config_items("http"))["http.jwt_secret"] == ""
    assert settings.http.jwt_secret == SECRET  # the process itself still runs with it
