"""Catalog additions the REST collections service needs: rename and alter a collection (Milvus's
RenameCollection / AlterCollection), and Milvus's ``num_entities`` (rows of flushed segments).
A refused call leaves the store byte-for-byte unchanged."""

from __future__ import annotations

import pytest

from vecgrid import errors
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.tso import IDAllocator, TimestampOracle
from tests.proxy_support import write_schema


@pytest.fixture
def cat(store):
    return Catalog(store, IDAllocator(store, "gid/id-allocator", block_size=100), TimestampOracle(store))


def snapshot(store) -> dict:
    return dict(store.scan(""))


def test_rename_keeps_the_id_and_partitions(cat):
    coll = cat.create_collection("default", "old", write_schema(4))
    cat.create_partition(coll.id, "p1")
    renamed = cat.rename_collection("default", "old", "new")
    assert (renamed.id, renamed.name, renamed.partition_names) == (coll.id, "new", ("_default", "p1"))
    assert cat.get_collection(coll.id).name == "new"
    assert not cat.has_collection("default", "old")
    assert cat.describe_collection("default", "new").id == coll.id


def test_rename_refusals_write_nothing(cat, store):
    cat.create_collection("default", "a", write_schema(4))
    cat.create_collection("default", "b", write_schema(4))
    before = snapshot(store)
    with pytest.raises(errors.CollectionNotFound):
        cat.rename_collection("default", "nope", "c")
    with pytest.raises(errors.ParameterInvalid, match="duplicated new collection name"):
        cat.rename_collection("default", "a", "b")
    with pytest.raises(errors.ParameterInvalid, match="collection name"):
        cat.rename_collection("default", "a", "1bad")
    assert snapshot(store) == before


def test_alter_merges_properties_and_sets_the_description(cat, store):
    cat.create_collection("default", "c", write_schema(4), properties={"collection.ttl.seconds": 10, "x": "1"})
    altered = cat.alter_collection("default", "c", properties={"collection.ttl.seconds": 20, "y": True},
                                   description="about c")
    assert altered.properties == {"collection.ttl.seconds": "20", "x": "1", "y": "true"}
    assert cat.describe_collection("default", "c").schema.description == "about c"
    before = snapshot(store)
    with pytest.raises(errors.ParameterInvalid, match="ttl"):
        cat.alter_collection("default", "c", properties={"collection.ttl.seconds": -1})
    with pytest.raises(errors.CollectionNotFound):
        cat.alter_collection("default", "nope", description="x")
    assert snapshot(store) == before


def test_flushed_rows_count_flushed_data_segments(cat):
    from vecgrid.proto import common_pb2, data_coord_pb2
    coll = cat.create_collection("default", "rows", write_schema(4))
    pid = coll.default_partition.partitionID
    channel = coll.vchannels[0]
    assert cat.flushed_rows(coll.id) == 0
    for rows, state, level in ((10, common_pb2.Flushed, data_coord_pb2.L1), (5, common_pb2.Growing, data_coord_pb2.L1),
                               (7, common_pb2.Flushed, data_coord_pb2.L0)):
        seg = cat.add_segment(coll.id, pid, channel, level=level)
        cat.update_segment(seg.ID, state=state, num_of_rows=rows)
    assert cat.flushed_rows(coll.id) == 10
    assert cat.flushed_rows(coll.id, pid) == 10
