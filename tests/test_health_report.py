"""``/health``'s component report from a coordinator's state (fakes: no cluster), the cases a live cluster
cannot show without breaking it: a failing node, a stopping one, another role's problem, a dead scheduler."""

from __future__ import annotations

import json
from types import SimpleNamespace

from vecgrid.http.health import cluster_health


class Lifecycle:
    def __init__(self, state: str) -> None:
        self.state = SimpleNamespace(name=state)
        self.healthy = state == "Healthy"
        self.node_id = 1


class Scheduler:
    address = "tcp://127.0.0.1:8786"

    def __init__(self, fail: bool) -> None:
        self.fail = fail

    async def identity(self):
        if self.fail:
            raise OSError("Connection refused")
        return {}


class Nodes:
    def __init__(self, nodes):
        self._nodes = nodes

    def all(self):
        return list(self._nodes)

    def __len__(self):
        return len(self._nodes)


def fake_coord(tmp_path, *, state="Healthy", reasons=(), node_states=("Normal", "Normal"), scheduler_fails=False):
    wal = tmp_path / "wal"
    wal.mkdir(exist_ok=True)
    return SimpleNamespace(
        settings=SimpleNamespace(common=SimpleNamespace(healthcheck_timeout_s=5.0)),
        lifecycle=Lifecycle(state), address="127.0.0.1:19531",
        health=SimpleNamespace(reasons=list(reasons)),
        nodes=Nodes([SimpleNamespace(node_id=i + 2, state=s, address=f"h:{i}", worker=f"tcp://w{i}")
                     for i, s in enumerate(node_states)]),
        client=SimpleNamespace(status="running", scheduler=Scheduler(scheduler_fails)),
        store=SimpleNamespace(get=lambda key: None),
        appenders=SimpleNamespace(wal=SimpleNamespace(root=str(wal))))


def unhealthy(report) -> dict[str, str]:
    return {c["name"]: c["reason"] for c in report["components"] if not c["healthy"]}


async def test_all_serving(tmp_path):
    report = await cluster_health(fake_coord(tmp_path))
    assert report["status"] == "ok" and unhealthy(report) == {}


async def test_a_node_failing_its_health_check_and_a_stopping_one(tmp_path):
    reason = json.dumps({"unhealthy_cluster_msgs": [
        {"role": "querynode", "node_id": 2, "reason": {"unhealthy_msg": "tsafe lag 400 s", "unhealthy_level": 3}},
        {"role": "datacoord", "node_id": 1, "reason": {"unhealthy_msg": "flush keeps failing", "unhealthy_level": 3}},
    ], "unhealthy_collection_msgs": []})
    report = await cluster_health(fake_coord(tmp_path, reasons=[reason], node_states=("Normal", "Stopping")))
    assert report["status"] == "unavailable"
    assert unhealthy(report) == {"querynode-2": "tsafe lag 400 s", "querynode-3": "node state is Stopping",
                                 "coordinator": "datacoord: flush keeps failing"}


async def test_a_coordinator_not_serving_and_a_scheduler_gone(tmp_path):
    report = await cluster_health(fake_coord(tmp_path, state="Initializing", scheduler_fails=True))
    bad = unhealthy(report)
    assert bad["coordinator"] == "querycoord is Initializing"
    assert bad["scheduler"] == "OSError: Connection refused" and set(bad) == {"coordinator", "scheduler"}
