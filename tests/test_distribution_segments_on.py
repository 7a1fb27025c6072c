"""DistributionManager.segments_on: where a collection's segments are among one replica's nodes."""

from __future__ import annotations

from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.proto import query_coord_pb2


def test_segments_on_maps_each_segment_to_its_nodes_among_those_given():
    dist = DistributionManager()
    dist.update(
        3,
        query_coord_pb2.GetDataDistributionResponse(
            lastModifyTs=1,
            segments=[
                query_coord_pb2.SegmentVersionInfo(ID=5, collection=7, version=30),
                query_coord_pb2.SegmentVersionInfo(ID=9, collection=8, version=1),
            ],
        ),
    )
    dist.update(
        1,
        query_coord_pb2.GetDataDistributionResponse(
            lastModifyTs=1,
            segments=[
                query_coord_pb2.SegmentVersionInfo(ID=5, collection=7, version=10),
                query_coord_pb2.SegmentVersionInfo(ID=6, collection=7, version=11),
            ],
        ),
    )
    dist.update(2, query_coord_pb2.GetDataDistributionResponse(lastModifyTs=1, segments=[
        query_coord_pb2.SegmentVersionInfo(ID=6, collection=7, version=20)]))
    on = dist.segments_on(7, {1, 3})
    assert {sid: {n: s.version for n, s in nodes.items()} for sid, nodes in on.items()} == \
        {5: {1: 10, 3: 30}, 6: {1: 11}}
    assert list(on[5]) == [1, 3]   # nodes in id order
    assert dist.segments_on(7, set()) == {} and dist.segments_on(8, {1, 2}) == {}
