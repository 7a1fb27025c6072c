"""The REST search's hits read straight off a merged ``SearchResultData`` (no output fields): the shape
the general path gives (``{id, distance}`` per hit, one list per query, queries without hits empty),
keys beyond JavaScript's safe integers as strings, string keys as they are."""

from __future__ import annotations

import numpy as np

from vecgrid.gpu.merge import TopK
from vecgrid.gpu.results import to_search_result_data
from vecgrid.http.services.entities import MAX_SAFE_INTEGER, plain_hits
from vecgrid.proto import schema_pb2


def test_int_keys_one_list_per_query_with_unsafe_ones_as_strings():
    big = MAX_SAFE_INTEGER + 2
    tk = TopK(np.array([3, big, 5, -big], np.int64), np.array([0.5, 0.25, 1.0, 2.0], np.float32),
              np.array([2, 0, 2], np.int64), 2)
    srd = schema_pb2.SearchResultData()
    srd.ParseFromString(to_search_result_data(tk).SerializeToString())
    assert plain_hits(srd) == [[{"id": 3, "distance": 0.5}, {"id": str(big), "distance": 0.25}], [],
                               [{"id": 5, "distance": 1.0}, {"id": str(-big), "distance": 2.0}]]


def test_string_keys_and_queries_the_result_lists_no_topk_for():
    srd = schema_pb2.SearchResultData(num_queries=3, top_k=1, scores=[0.125], topks=[1])
    srd.ids.str_id.data.append("a")
    assert plain_hits(srd) == [[{"id": "a", "distance": 0.125}], [], []]
