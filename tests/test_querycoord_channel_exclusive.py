"""Channel-exclusive replicas end to end: ChannelLevelScoreBalancer on a 4-worker LocalCluster, a
2-channel collection and ``channel_exclusive_node_factor`` 1 — each channel gets two nodes of its own,
which hold its delegator and every one of its segments, and searches stay exact."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio

from vecgrid.cluster.querycoord.meta.replica_manager import channel_nodes
from vecgrid.cluster.querycoord.task.task import ChannelTask, SegmentTask
from vecgrid.deploy import EmbeddedCluster
from tests.querycoord_support import (BALANCE_CHECKER, CHANNEL_CHECKER, SEGMENT_CHECKER, Coord, assert_search_matches,
                                      checker_rounds, fast_settings)
from tests.querynode_support import import_collection

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("exclusive")
    ds = import_collection(root, "exclusive", metric="L2", index="FLAT", n=800, shards=2, segment_rows=100, seed=6)
    settings = fast_settings(ds.data_dir, workers=4)
    settings.set("querycoord.balancer", "ChannelLevelScoreBalancer")
    settings.set("querycoord.channel_exclusive_node_factor", 1)
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    yield cluster, Coord(cluster.addresses.grpc, cluster.coord), ds
    await asyncio.wait_for(cluster.stop(), 60)


async def test_each_channel_is_served_by_its_own_nodes(env):
    cluster, coord, ds = env
    cid = ds.collection_id
    await coord.load(cid)
    [replica] = cluster.coord.replicas.of_collection(cid)
    split = channel_nodes(replica)
    assert len(split) == 2 and sorted(map(len, split.values())) == [2, 2]
    assert sorted(n for nodes in split.values() for n in nodes) == sorted(replica.nodes)
    owner = {n: ch for ch, nodes in split.items() for n in nodes}

    def confined():
        dist = cluster.coord.dist
        segments = dist.segments(cid)
        return len({s.ID for _, s in segments}) == 8 and \
            all(owner.get(n) == s.channel for n, s in segments) and \
            sorted(owner.get(n) == c.channel for n, c in dist.channels(cid)) == [True, True]
    assert confined()     # placed there by the channel and segment checkers from the start
    await assert_search_matches(coord, ds)
    # a few balance rounds: the balancer moves nothing off them (a move under way would be a segment or
    # channel task; the index checker's saves of indexes built at load may run meanwhile, they move nothing)
    await checker_rounds(cluster.coord, 3, [BALANCE_CHECKER, SEGMENT_CHECKER, CHANNEL_CHECKER])
    moves = [t for t in cluster.coord.scheduler.tasks(cid) if isinstance(t, (SegmentTask, ChannelTask))]
    assert moves == [] and confined()
    await assert_search_matches(coord, ds)
