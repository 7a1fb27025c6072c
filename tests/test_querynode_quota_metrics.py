"""GetMetrics' ``quota_metrics`` of a QueryNode: Milvus's ``QueryNodeQuotaMetrics`` (rates over the
last 3 s, flow graphs, growing bytes, served collections, delete buffers), measured, not constants
(it was an empty object)."""

from __future__ import annotations

import json

import numpy as np

from vecgrid.common import rates
from vecgrid.common.rates import RateWindow
from vecgrid.proto import milvus_pb2
from tests.conftest import poll_until
from tests.delegator_support import DIM, close, leader_search_request, make_cluster

SYSTEM_INFO = json.dumps({"metric_type": "system_info"})


def test_a_rate_window_averages_the_last_complete_seconds():
    now = [100.2]
    window = RateWindow(3, clock=lambda: now[0])
    window.add(6)
    window.add(3)
    assert window.rate() == 0.0           # the current second is not complete
    now[0] = 101.0
    assert window.rate() == 3.0           # 9 in second 100, over 3 s
    window.add(3)
    now[0] = 103.9
    assert window.rate() == 4.0           # seconds 100..102
    now[0] = 104.0
    assert window.rate() == 1.0           # second 100 left the window
    now[0] = 200.0
    assert window.rate() == 0.0


async def test_quota_metrics_report_what_the_node_did(tmp_path, monkeypatch):
    # a minute's window: the inserts, the delete and the searches all stay in it however slow the host
    monkeypatch.setattr(rates, "DEFAULT_WINDOW_S", 60)
    c = await make_cluster(tmp_path, "L2")
    try:
        delegator = c.leader.node.delegator_for(c.ds.channels[0])
        c.insert(50, seed=11)
        ts = c.delete([int(c.ds.pks[0]), int(c.ds.pks[1])])
        c.tick()
        await poll_until(lambda: delegator.tsafe >= ts, 30, 0.02, "tsafe past the delete")
        xq = np.random.default_rng(1).standard_normal((4, DIM)).astype(np.float32)
        for _ in range(3):
            reply = await c.leader.call("Search", leader_search_request(c, xq))
            assert reply.status.code == 0, reply.status

        async def quota() -> dict:
            reply = await c.leader.stub.GetMetrics(milvus_pb2.GetMetricsRequest(request=SYSTEM_INFO))
            assert reply.status.code == 0, reply.status
            return json.loads(reply.response)["quota_metrics"]

        async def rates_in_window() -> dict | None:
            q = await quota()
            by_label = {r["Label"]: r["Rate"] for r in q["Rms"]}
            # every search, insert and delete in the window (once their seconds are complete)
            return q if by_label["NQPerSecond"] == 12 / 60 and by_label["InsertConsumeThroughput"] > 0 \
                and by_label["DeleteConsumeThroughput"] > 0 else None

        q = await poll_until(rates_in_window, 10, 0.05, "the node's rates over its window")
        measured = {r["Label"]: r["Rate"] for r in q["Rms"]}
        assert measured["SearchThroughput"] >= 3 * xq.nbytes / 60
        assert q["Fgm"] == {"MinFlowGraphChannel": c.ds.channels[0], "MinFlowGraphTt": delegator.tsafe,
                            "NumFlowGraph": 1}
        growing = [g for _, _, g in delegator.pipeline.growing_segments()]
        assert q["GrowingSegmentsSize"] == sum(g.nbytes() for g in growing) >= 50 * (4 * DIM + 8)
        assert q["Effect"] == {"NodeID": c.leader.node.node_id, "CollectionIDs": [c.ds.collection_id]}
        assert q["DeleteBufferInfo"]["CollectionDeleteBufferNum"] == {str(c.ds.collection_id): 2}
        assert q["DeleteBufferInfo"]["CollectionDeleteBufferSize"][str(c.ds.collection_id)] >= 2 * 16
        # the worker serves sealed segments only: no flow graph, no growing rows, no searches of its own
        worker = json.loads(c.worker.node.metrics(SYSTEM_INFO))["quota_metrics"]
        assert worker["Fgm"]["NumFlowGraph"] == 0 and worker["GrowingSegmentsSize"] == 0
    finally:
        await close(c)
