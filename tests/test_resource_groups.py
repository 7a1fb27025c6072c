"""Resource groups: Milvus's rules (behaviour sheet §2), node placement and recovery, persistence."""

from __future__ import annotations

import pytest

from vecgrid import errors
from vecgrid.cluster.querycoord.meta.resource_manager import DEFAULT_RG, ResourceManager
from vecgrid.proto import common_pb2, rg_pb2


def cfg(requests: int, limits: int, transfer_from=(), transfer_to=(), labels=None) -> rg_pb2.ResourceGroupConfig:
    config = rg_pb2.ResourceGroupConfig(
        requests=rg_pb2.ResourceGroupLimit(node_num=requests), limits=rg_pb2.ResourceGroupLimit(node_num=limits),
        transfer_from=[rg_pb2.ResourceGroupTransfer(resource_group=r) for r in transfer_from],
        transfer_to=[rg_pb2.ResourceGroupTransfer(resource_group=r) for r in transfer_to])
    for k, v in (labels or {}).items():
        config.node_filter.node_labels.append(common_pb2.KeyValuePair(key=k, value=v))
    return config


@pytest.fixture
def rm(store):
    manager = ResourceManager(store)
    for node in (1, 2, 3):
        manager.assign_node(node)
    return manager


def members(rm, name):
    return sorted(rm.group(name).nodes)


def test_default_group_holds_new_nodes(rm):
    assert rm.names() == [DEFAULT_RG]
    assert members(rm, DEFAULT_RG) == [1, 2, 3]
    info = rm.describe(DEFAULT_RG, lambda n: common_pb2.NodeInfo(node_id=n))
    assert info.capacity == 1_000_000 and info.num_available_node == 3
    assert info.config.limits.node_num == 1_000_000 and info.config.requests.node_num == 0


def test_create_moves_requested_nodes_and_is_idempotent(rm, store):
    rm.create("rg1", cfg(2, 2))
    assert len(members(rm, "rg1")) == 2 and len(members(rm, DEFAULT_RG)) == 1
    rm.create("rg1", cfg(2, 2))  # same config: success, nothing changes
    with pytest.raises(errors.ResourceGroupAlreadyExist):
        rm.create("rg1", cfg(1, 2))
    rm.create("empty", None)
    assert rm.group("empty").config.requests.node_num == 0 and rm.group("empty").config.limits.node_num == 0
    # Persisted: a new manager over the same store sees the same groups and members.
    again = ResourceManager(store)
    assert again.names() == sorted([DEFAULT_RG, "rg1", "empty"])
    assert members(again, "rg1") == members(rm, "rg1")


@pytest.mark.parametrize("config, message", [
    (rg_pb2.ResourceGroupConfig(requests=rg_pb2.ResourceGroupLimit(node_num=1)), "both required"),
    (cfg(-1, 2), "negative"),
    (cfg(3, 2), ">= requests"),
    (cfg(0, 1, transfer_from=["bad"]), "itself"),
    (cfg(0, 1, transfer_to=["nope"]), "unknown"),
])
def test_illegal_configs_are_303_and_write_nothing(rm, store, config, message):
    before = store.scan("")
    with pytest.raises(errors.ResourceGroupIllegalConfig, match=message) as err:
        rm.create("bad", config)
    assert err.value.code == 303
    assert store.scan("") == before


def test_create_errors(rm):
    with pytest.raises(errors.ParameterMissing):
        rm.create("", cfg(0, 0))
    with pytest.raises(errors.ResourceGroupNotFound):
        rm.update({"missing": cfg(0, 0)})


def test_limits_push_surplus_out_and_transfer_from_is_preferred(rm):
    rm.create("a", cfg(2, 3))
    rm.create("b", cfg(0, 3))
    assert len(members(rm, "a")) == 2
    rm.update({"a": cfg(1, 1)})  # surplus above the limit leaves a
    assert len(members(rm, "a")) == 1 and len(members(rm, DEFAULT_RG)) + len(members(rm, "b")) == 2
    rm.update({"b": cfg(2, 3, transfer_from=["a"])})
    # b takes from the default group's spare nodes before a's protected ones
    assert len(members(rm, "b")) == 2 and len(members(rm, "a")) == 1


def test_transfer_node_rules(rm):
    rm.create("rg", cfg(0, 0))
    with pytest.raises(errors.ParameterInvalid):
        rm.transfer_node("rg", "rg", 1)
    with pytest.raises(errors.ParameterInvalid):
        rm.transfer_node(DEFAULT_RG, "rg", 0)
    with pytest.raises(errors.ResourceGroupNotFound):
        rm.transfer_node(DEFAULT_RG, "nope", 1)
    with pytest.raises(errors.ResourceGroupNodeNotEnough):
        rm.transfer_node(DEFAULT_RG, "rg", 4)
    rm.transfer_node(DEFAULT_RG, "rg", 2)
    assert len(members(rm, "rg")) == 2 and rm.group("rg").config.requests.node_num == 2
    assert rm.group(DEFAULT_RG).config.limits.node_num == 1_000_000  # the default RG keeps its limit


def test_drop_rules(rm):
    rm.drop("missing")  # dropping what does not exist succeeds
    with pytest.raises(errors.ParameterInvalid):
        rm.drop(DEFAULT_RG)
    rm.create("x", cfg(1, 1))
    with pytest.raises(errors.ParameterInvalid, match="limits.node_num to 0"):
        rm.drop("x")
    rm.create("y", cfg(0, 1, transfer_from=["x"]))
    rm.update({"x": cfg(0, 0)})
    with pytest.raises(errors.ParameterInvalid, match="referenced"):
        rm.drop("x")
    rm.update({"y": cfg(0, 1)})
    rm.replicas_in = lambda name: 1 if name == "x" else 0
    with pytest.raises(errors.ParameterInvalid, match="replicas still loaded"):
        rm.drop("x")
    rm.replicas_in = lambda name: 0
    rm.drop("x")
    assert "x" not in rm.names()
    assert sum(len(members(rm, g)) for g in rm.names()) == 3


def test_node_filter_accepts_only_labelled_nodes(store):
    labels = {1: {"zone": "a"}, 2: {}}
    rm = ResourceManager(store, node_labels=lambda n: labels.get(n, {}))
    rm.assign_node(1)
    rm.assign_node(2)
    rm.create("zone-a", cfg(2, 2, labels={"zone": "a"}))
    assert members(rm, "zone-a") == [1]  # node 2 carries no label and is never accepted
    rm.unassign_node(1)
    assert members(rm, "zone-a") == []
