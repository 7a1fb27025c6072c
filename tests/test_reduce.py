"""merge_search: a single part already merged by its node is passed on as the answer, and says what a
merge of several parts says (channels, request id, metric, k, the key field's name, a success status)."""

from __future__ import annotations

from vecgrid.cluster.reduce import merge_search
from vecgrid.proto import common_pb2, internal_pb2, schema_pb2


def part(ids: list[int], scores: list[float], *, channels=("ch-node",), metric="L2",
         top_k=3) -> internal_pb2.SearchResults:
    srd = schema_pb2.SearchResultData(num_queries=1, top_k=top_k, scores=scores, topks=[len(ids)])
    srd.ids.int_id.data.extend(ids)
    return internal_pb2.SearchResults(status=common_pb2.Status(), reqID=5, metric_type=metric, num_queries=1,
                                      top_k=top_k, sealed_segmentIDs_searched=[11], channelIDs_searched=list(channels),
                                      sliced_blob=srd.SerializeToString(), sliced_num_count=1, all_search_count=40,
                                      costAggregation=internal_pb2.CostAggregation(serviceTime=3, totalNQ=1))


def request(**kw) -> internal_pb2.SearchRequest:
    return internal_pb2.SearchRequest(reqID=9, nq=1, topk=3, metricType="L2", is_topk_reduce=True, **kw)


def test_one_part_answers_as_a_merge_of_it_with_an_empty_part():
    req = request()
    empty = part([], [])   # a part that searched nothing
    empty.all_search_count = 0
    del empty.sealed_segmentIDs_searched[:]
    merged = merge_search([part([7, 8, 9], [0.1, 0.2, 0.3]), empty], req, ["ch-a"], "pk")
    one = merge_search([part([7, 8, 9], [0.1, 0.2, 0.3])], req, ["ch-a"], "pk")
    for field in ("reqID", "metric_type", "num_queries", "top_k", "sliced_num_count", "is_topk_reduce",
                  "all_search_count"):
        assert getattr(one, field) == getattr(merged, field), field
    assert list(one.channelIDs_searched) == ["ch-a"] and one.reqID == 9 and one.is_topk_reduce
    assert list(one.sealed_segmentIDs_searched) == [11] and one.costAggregation.serviceTime == 3
    assert one.status.code == 0 and not one.status.reason
    got = schema_pb2.SearchResultData.FromString(one.sliced_blob)
    want = schema_pb2.SearchResultData.FromString(merged.sliced_blob)
    assert list(got.ids.int_id.data) == list(want.ids.int_id.data) == [7, 8, 9]
    assert list(got.scores) == list(want.scores) and list(got.topks) == list(want.topks)
    assert got.primary_field_name == want.primary_field_name == "pk"


def test_one_part_without_a_metric_or_k_takes_the_request_s():
    one = merge_search([part([1], [0.5], metric="", top_k=0)], request(), ["ch-a"], "id")
    assert one.metric_type == "L2" and one.top_k == 3
