"""Tests for vecgrid.storage.catalog: databases, collections, partitions, indexes, segments, Arrow rows."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sqlite3

import pyarrow as pa
import pytest

from vecgrid import errors
from vecgrid.proto import common_pb2 as cp
from vecgrid.proto import data_coord_pb2 as dc
from vecgrid.proto import index_coord_pb2 as ic
from vecgrid.proto import msg_pb2
from vecgrid.proto import schema_pb2 as sp
from vecgrid.storage.catalog import (
                                     Catalog,
                                     SegmentFile,
                                     SegmentIndex,
                                     arrow_schema,
                                     parse_vchannel,
                                     validate_rows,
                                     )
from vecgrid.storage.catalog import keys
from vecgrid.storage.catalog import collections as catalog_collections
from vecgrid.storage.catalog.schema_rules import MAX_PARTITIONS
from vecgrid.storage.kv import MetaStore, SQLiteMetaStore
from vecgrid.storage.tso import IDAllocator, TimestampOracle

S = cp.SegmentState


# ---------------------------------------------------------------------------------------------
# helpers


def kv(**params) -> list[cp.KeyValuePair]:
    return [cp.KeyValuePair(key=k, value=str(v)) for k, v in params.items()]


def fld(name, dt, *, pk=False, auto=False, **type_params) -> sp.FieldSchema:
    return sp.FieldSchema(name=name, data_type=dt, is_primary_key=pk, autoID=auto, type_params=kv(**type_params))


def basic_schema(dim=8, **kw) -> sp.CollectionSchema:
    return sp.CollectionSchema(fields=[fld("pk", sp.Int64, pk=True), fld("vec", sp.FloatVector, dim=dim)], **kw)


def all_types_schema() -> sp.CollectionSchema:
    return sp.CollectionSchema(
        description="every type",
        fields=[
            fld("pk", sp.Int64, pk=True, auto=True),
            fld("vec", sp.FloatVector, dim=4),
            fld("b", sp.Bool),
            fld("i8", sp.Int8),
            fld("i16", sp.Int16),
            fld("i32", sp.Int32),
            fld("i64", sp.Int64),
            fld("f", sp.Float),
            fld("d", sp.Double),
            fld("s", sp.VarChar, max_length=16),
            fld("j", sp.JSON),
            fld("vec2", sp.FloatVector, dim=2),
        ],
    )


def sf(path, size=100, kind=0, checksum="00ff") -> SegmentFile:
    return SegmentFile(path=path, size=size, checksum_algorithm="sha256", checksum=checksum, kind=kind)


def binlogs(field_id, *paths, rows=10, size=100) -> dc.FieldBinlog:
    return dc.FieldBinlog(
        fieldID=field_id, binlogs=[dc.Binlog(entries_num=rows, log_path=p, log_size=size) for p in paths]
    )


def pos(ts, channel="", msg_id=b"\x01") -> msg_pb2.MsgPosition:
    return msg_pb2.MsgPosition(channel_name=channel, msgID=msg_id, timestamp=ts)


def open_catalog(store: MetaStore, **kw) -> Catalog:
    return Catalog(store, IDAllocator(store, "gid/id-allocator", block_size=100), TimestampOracle(store), **kw)


@pytest.fixture
def store(tmp_path):
    s = SQLiteMetaStore(tmp_path / "meta.db")
    yield s
    s.close()


@pytest.fixture
def cat(store) -> Catalog:
    return open_catalog(store)


@pytest.fixture
def coll(cat):
    return cat.create_collection("default", "docs", basic_schema(), shards_num=2)


def sealed_segment(coll, *, rows=10, channel=0, segment_id=0, paths=("ins/1",)) -> dc.SegmentInfo:
    return dc.SegmentInfo(
        ID=segment_id,
        collectionID=coll.id,
        partitionID=coll.default_partition.partitionID,
        insert_channel=coll.vchannels[channel],
        num_of_rows=rows,
        binlogs=[binlogs(101, *paths, rows=rows)],
        start_position=pos(1, coll.vchannels[channel]),
        dml_position=pos(9, coll.vchannels[channel]),
    )


class RecordingStore(MetaStore):
    """A MetaStore delegating to SQLite that records direct writes and transactions.

    ``poison=True`` makes every transaction fail *inside* SQLite after its earlier operations ran
    (an extra put of a NULL value violates the table's NOT NULL constraint), like a crash in the
    middle of the commit.
    """

    def __init__(self, inner: SQLiteMetaStore) -> None:
        self.inner = inner
        self.direct: list[tuple[str, str]] = []
        self.commits: list[list[tuple[str, str, bytes | None]]] = []
        self.poison = False

    def get(self, key):
        return self.inner.get(key)

    def put(self, key, value):
        self.direct.append(("put", key))
        self.inner.put(key, value)

    def delete(self, key):
        self.direct.append(("delete", key))
        self.inner.delete(key)

    def scan(self, prefix):
        return self.inner.scan(prefix)

    def compare_and_swap(self, key, expected, value):
        self.direct.append(("cas", key))
        return self.inner.compare_and_swap(key, expected, value)

    def _commit(self, ops):
        self.commits.append(list(ops))
        if self.poison:
            ops = list(ops) + [("put", "~poison", None)]
        self.inner._commit(ops)

    def close(self):
        self.inner.close()


# ---------------------------------------------------------------------------------------------
# databases


def test_default_database_exists(cat, store):
    dbs = cat.list_databases()
    assert [(d.name, d.id) for d in dbs] == [("default", 1)]
    assert store.get("root-coord/database/db-info/1") is not None
    assert cat.describe_database("").name == "default"


def test_database_lifecycle(cat, store):
    db = cat.create_database("analytics", {"owner": "me"})
    assert db.id != 1 and db.name == "analytics"
    assert [d.name for d in cat.list_databases()] == ["default", "analytics"]
    assert {p.key: p.value for p in cat.describe_database("analytics").properties} == {"owner": "me"}
    with pytest.raises(errors.ParameterInvalid, match="already exist"):
        cat.create_database("analytics")
    c = cat.create_collection("analytics", "c", basic_schema())
    assert c.db_name == "analytics" and c.db_id == db.id
    assert [x.name for x in cat.list_collections("analytics")] == ["c"]
    assert cat.list_collections("default") == []
    with pytest.raises(errors.ParameterInvalid, match="not empty"):
        cat.drop_database("analytics")
    assert cat.drop_collection("analytics", "c")
    assert cat.drop_database("analytics") is True
    assert cat.drop_database("analytics") is False
    with pytest.raises(errors.DatabaseNotFound):
        cat.describe_database("analytics")
    with pytest.raises(errors.DatabaseNotFound):
        cat.create_collection("analytics", "c", basic_schema())
    with pytest.raises(errors.ParameterInvalid, match="default database"):
        cat.drop_database("default")


def test_database_errors_write_nothing(cat, store):
    before = store.scan("")
    for bad in ("1db", "", "a-b", "x" * 256):
        with pytest.raises(errors.ParameterInvalid):
            cat.create_database(bad)
    with pytest.raises(errors.DatabaseNotFound):
        cat.list_collections("nope")
    assert store.scan("") == before


# ---------------------------------------------------------------------------------------------
# collections


def test_create_describe_every_field_type(cat, store):
    info = cat.create_collection("default", "all_types", all_types_schema(), properties={"collection.ttl.seconds": 60})
    names = [f.name for f in info.fields]
    assert names == ["pk", "vec", "b", "i8", "i16", "i32", "i64", "f", "d", "s", "j", "vec2"]
    assert [f.fieldID for f in info.fields] == list(range(100, 112))
    assert info.primary_field.name == "pk" and info.primary_field.autoID
    assert [f.name for f in info.vector_fields] == ["vec", "vec2"]
    assert info.dim("vec") == 4 and info.dim("vec2") == 2
    assert info.schema.dbName == "default" and info.schema.name == "all_types"
    assert info.partition_names == ("_default",)
    assert info.properties == {"collection.ttl.seconds": "60"}
    assert info.consistency_level == cp.Bounded

    again = cat.describe_collection("default", "all_types")
    assert again.pb == info.pb and again.partitions == info.partitions
    assert cat.get_collection(info.id).pb == info.pb
    assert cat.has_collection("default", "all_types")

    key = f"root-coord/database/collections/1/{info.id}"
    assert store.get(key) == info.pb.SerializeToString(deterministic=True)
    assert store.get(f"root-coord/partitions/{info.id}/{info.default_partition.partitionID}") is not None

    t = arrow_schema(info)
    assert [(f.name, str(f.type), f.nullable) for f in t] == [
        ("pk", "int64", False),
        ("vec", "fixed_size_list<item: float>[4]", False),
        ("b", "bool", False),
        ("i8", "int8", False),
        ("i16", "int16", False),
        ("i32", "int32", False),
        ("i64", "int64", False),
        ("f", "float", False),
        ("d", "double", False),
        ("s", "string", False),
        ("j", "string", False),
        ("vec2", "fixed_size_list<item: float>[2]", False),
    ]
    assert t.field("vec").metadata == {b"PARQUET:field_id": b"101"}


def test_list_and_drop_collections(cat, store):
    a = cat.create_collection("default", "a", basic_schema())
    b = cat.create_collection("default", "b", basic_schema())
    assert [c.name for c in cat.list_collections()] == ["a", "b"]
    assert a.id < b.id
    assert cat.drop_collection("default", "a") is True
    assert cat.drop_collection("default", "a") is False
    assert [c.name for c in cat.list_collections()] == ["b"]
    with pytest.raises(errors.CollectionNotFound):
        cat.describe_collection("default", "a")
    with pytest.raises(errors.CollectionNotFound):
        cat.get_collection(a.id)
    assert store.scan(f"root-coord/partitions/{a.id}/") == []
    assert not cat.has_collection("default", "a")
    # the name is free again, with a new id
    a2 = cat.create_collection("default", "a", basic_schema())
    assert a2.id > b.id


def test_create_is_idempotent_for_identical_definition(cat, store):
    first = cat.create_collection("default", "c", basic_schema(), shards_num=2)
    before = store.scan("")
    again = cat.create_collection("default", "c", basic_schema(), shards_num=2)
    assert again.id == first.id and again.pb == first.pb
    assert store.scan("") == before
    with pytest.raises(errors.ParameterInvalid, match="duplicate collection with different parameters"):
        cat.create_collection("default", "c", basic_schema(dim=16), shards_num=2)
    with pytest.raises(errors.ParameterInvalid, match="duplicate collection"):
        cat.create_collection("default", "c", basic_schema(), shards_num=3)
    assert store.scan("") == before


def test_dynamic_field_appends_meta(cat):
    info = cat.create_collection("default", "dyn", basic_schema(enable_dynamic_field=True))
    meta = info.dynamic_field
    assert meta is not None and meta.name == "$meta" and meta.data_type == sp.JSON and meta.is_dynamic
    assert meta.fieldID == 102
    assert [f.name for f in arrow_schema(info)] == ["pk", "vec", "$meta"]
    assert arrow_schema(info).field("$meta").nullable


def test_schema_name_mismatch_and_deprecated_autoid(cat):
    s = basic_schema()
    s.name = "other"
    with pytest.raises(errors.ParameterInvalid, match="does not match"):
        cat.create_collection("default", "c", s)
    s = basic_schema()
    s.autoID = True  # deprecated collection-level flag: Milvus ignores it
    info = cat.create_collection("default", "c", s)
    assert not info.schema.autoID and not info.primary_field.autoID


def test_varchar_primary_key(cat):
    s = sp.CollectionSchema(fields=[fld("id", sp.VarChar, pk=True, max_length=64), fld("v", sp.FloatVector, dim=3)])
    info = cat.create_collection("default", "vpk", s)
    assert info.primary_field.data_type == sp.VarChar
    assert arrow_schema(info).field("id").type == pa.string()


# ---------------------------------------------------------------------------------------------
# channels


_VCH = re.compile(r"^by-dev-rootcoord-dml_(\d+)_(\d+)v(\d+)$")


def test_channel_naming_round_robin(cat, store):
    a = cat.create_collection("default", "a", basic_schema(), shards_num=3)
    assert a.shards_num == 3
    assert a.vchannels == tuple(f"by-dev-rootcoord-dml_{k}_{a.id}v{k}" for k in range(3))
    assert a.pchannels == tuple(f"by-dev-rootcoord-dml_{k}" for k in range(3))
    for k, ch in enumerate(a.vchannels):
        assert _VCH.match(ch)
        assert parse_vchannel(ch) == (a.pchannels[k], a.id, k)
    b = cat.create_collection("default", "b", basic_schema(), shards_num=14)
    assert [int(_VCH.match(ch)[1]) for ch in b.vchannels] == list(range(3, 16)) + [0]
    c = cat.create_collection("default", "c", basic_schema())
    assert c.vchannels == (f"by-dev-rootcoord-dml_1_{c.id}v0",)
    assert store.get("root-coord/dml-channel/cursor") == b"2"
    assert cat.collection_of_channel(b.vchannels[5]).id == b.id
    with pytest.raises(errors.ChannelNotFound):
        cat.collection_of_channel("by-dev-rootcoord-dml_0_999v0")
    with pytest.raises(errors.ChannelNotFound):
        cat.collection_of_channel("nonsense")


def test_shards_num_rules_and_prefix(store):
    cat = open_catalog(store, cluster_prefix="prod", dml_channel_num=4)
    one = cat.create_collection("default", "a", basic_schema(), shards_num=0)
    assert one.shards_num == 1 and one.vchannels == (f"prod-rootcoord-dml_0_{one.id}v0",)
    before = store.scan("")
    with pytest.raises(errors.ParameterInvalid, match="shards"):
        cat.create_collection("default", "b", basic_schema(), shards_num=17)
    assert store.scan("") == before
    sixteen = cat.create_collection("default", "c", basic_schema(), shards_num=16)
    assert len(set(sixteen.vchannels)) == 16 and len(set(sixteen.pchannels)) == 4


# ---------------------------------------------------------------------------------------------
# validation errors: the right class, nothing written


def _schema_with(*fields, **kw):
    return sp.CollectionSchema(fields=list(fields), **kw)


PK = fld("pk", sp.Int64, pk=True)
VEC = fld("vec", sp.FloatVector, dim=8)

BAD_SCHEMAS = {
    "dim 0": (_schema_with(PK, fld("vec", sp.FloatVector, dim=0)), errors.CollectionIllegalSchema),
    "dim 32769": (_schema_with(PK, fld("vec", sp.FloatVector, dim=32769)), errors.CollectionIllegalSchema),
    "dim missing": (_schema_with(PK, fld("vec", sp.FloatVector)), errors.CollectionIllegalSchema),
    "dim not int": (_schema_with(PK, fld("vec", sp.FloatVector, dim="eight")), errors.CollectionIllegalSchema),
    "two primary keys": (_schema_with(PK, fld("pk2", sp.Int64, pk=True), VEC), errors.CollectionIllegalSchema),
    "no primary key": (_schema_with(fld("a", sp.Int64), VEC), errors.CollectionIllegalSchema),
    "float primary key": (_schema_with(fld("a", sp.Float, pk=True), VEC), errors.CollectionIllegalSchema),
    "duplicate field names": (_schema_with(PK, VEC, fld("vec", sp.Int32)), errors.CollectionIllegalSchema),
    "varchar without max_length": (_schema_with(PK, VEC, fld("s", sp.VarChar)), errors.CollectionIllegalSchema),
    "varchar max_length 0": (_schema_with(PK, VEC, fld("s", sp.VarChar, max_length=0)), errors.CollectionIllegalSchema),
    "varchar max_length 65536": (
        _schema_with(PK, VEC, fld("s", sp.VarChar, max_length=65536)), errors.CollectionIllegalSchema),
    "auto_id on varchar pk": (
        _schema_with(fld("id", sp.VarChar, pk=True, auto=True, max_length=8), VEC), errors.CollectionIllegalSchema),
    "auto_id on non-pk": (_schema_with(PK, VEC, fld("x", sp.Int64, auto=True)), errors.CollectionIllegalSchema),
    "no vector field": (_schema_with(PK, fld("x", sp.Int64)), errors.CollectionIllegalSchema),
    "no fields": (_schema_with(), errors.CollectionIllegalSchema),
    "unsupported type": (_schema_with(PK, VEC, fld("bv", sp.BinaryVector, dim=8)), errors.CollectionIllegalSchema),
    "array type": (_schema_with(PK, VEC, fld("arr", sp.Array)), errors.CollectionIllegalSchema),
    "system field name": (_schema_with(PK, VEC, fld("Timestamp", sp.Int64)), errors.CollectionIllegalSchema),
    "explicit $meta": (_schema_with(PK, VEC, fld("$meta", sp.JSON)), errors.CollectionIllegalSchema),
    "explicit dynamic": (
        _schema_with(PK, VEC, sp.FieldSchema(name="dyn", data_type=sp.JSON, is_dynamic=True)),
        errors.CollectionIllegalSchema),
    "partition key": (
        _schema_with(PK, VEC, sp.FieldSchema(name="pkey", data_type=sp.Int64, is_partition_key=True)),
        errors.CollectionIllegalSchema),
    "too many vectors": (
        _schema_with(PK, *[fld(f"v{i}", sp.FloatVector, dim=2) for i in range(5)]), errors.CollectionIllegalSchema),
    "field name starts with digit": (_schema_with(PK, VEC, fld("1x", sp.Int64)), errors.ParameterInvalid),
    "field name bad char": (_schema_with(PK, VEC, fld("a-b", sp.Int64)), errors.ParameterInvalid),
    "field name too long": (_schema_with(PK, VEC, fld("f" * 256, sp.Int64)), errors.ParameterInvalid),
    "field name empty": (_schema_with(PK, VEC, fld("", sp.Int64)), errors.ParameterInvalid),
    "default value type mismatch": (
        _schema_with(PK, VEC, sp.FieldSchema(name="n", data_type=sp.Int64,
                                             default_value=sp.ValueField(string_data="x"))),
        errors.CollectionIllegalSchema),
}


@pytest.mark.parametrize("case", sorted(BAD_SCHEMAS))
def test_bad_schema_rejected_writes_nothing(cat, store, case):
    schema, exc = BAD_SCHEMAS[case]
    before = store.scan("")
    with pytest.raises(exc) as info:
        cat.create_collection("default", "c", schema)
    assert str(info.value)  # a message a person can read
    assert store.scan("") == before


@pytest.mark.parametrize("name", ["1abc", "9", "x" * 256, "a-b", "a b", "naïve", "", "$x"])
def test_bad_collection_name_rejected_writes_nothing(cat, store, name):
    before = store.scan("")
    with pytest.raises(errors.ParameterInvalid):
        cat.create_collection("default", name, basic_schema())
    assert store.scan("") == before


@pytest.mark.parametrize("name", ["_x", "A", "a1_b2", "x" * 255])
def test_good_names(cat, name):
    assert cat.create_collection("default", name, basic_schema()).name == name


def test_name_messages(cat):
    with pytest.raises(errors.ParameterInvalid, match="first character"):
        cat.create_collection("default", "1abc", basic_schema())
    with pytest.raises(errors.ParameterInvalid, match="255"):
        cat.create_collection("default", "x" * 256, basic_schema())
    with pytest.raises(errors.ParameterInvalid, match="numbers, letters and underscores"):
        cat.create_collection("default", "a-b", basic_schema())
    with pytest.raises(errors.CollectionIllegalSchema, match="invalid dimension"):
        cat.create_collection("default", "c", _schema_with(PK, fld("vec", sp.FloatVector, dim=0)))
    with pytest.raises(errors.CollectionIllegalSchema, match="more than one primary key"):
        cat.create_collection("default", "c", _schema_with(PK, fld("pk2", sp.Int64, pk=True), VEC))
    with pytest.raises(errors.CollectionIllegalSchema, match="primary key is not specified"):
        cat.create_collection("default", "c", _schema_with(VEC))
    with pytest.raises(errors.CollectionIllegalSchema, match="max_length"):
        cat.create_collection("default", "c", _schema_with(PK, VEC, fld("s", sp.VarChar)))


def test_dim_bounds_accepted(cat):
    assert cat.create_collection("default", "d1", basic_schema(dim=1)).dim("vec") == 1
    assert cat.create_collection("default", "dmax", basic_schema(dim=32768)).dim("vec") == 32768


def test_bad_properties(cat, store):
    before = store.scan("")
    with pytest.raises(errors.ParameterInvalid):
        cat.create_collection("default", "c", basic_schema(), properties={"collection.ttl.seconds": "-1"})
    with pytest.raises(errors.ParameterInvalid):
        cat.create_collection("default", "c", basic_schema(), properties={"": "x"})
    assert store.scan("") == before


# ---------------------------------------------------------------------------------------------
# partitions


def test_partitions(cat, store, coll):
    p = cat.create_partition(coll.id, "p2024")
    assert p.partitionName == "p2024" and p.collection_id == coll.id
    assert cat.create_partition(coll.id, "p2024") == p  # idempotent
    assert [x.partitionName for x in cat.list_partitions(coll.id)] == ["_default", "p2024"]
    assert cat.get_collection(coll.id).partition_names == ("_default", "p2024")
    assert cat.get_partition(coll.id, "p2024") == p
    assert store.get(f"root-coord/partitions/{coll.id}/{p.partitionID}") is not None
    with pytest.raises(errors.PartitionNotFound):
        cat.get_partition(coll.id, "nope")
    before = store.scan("")
    for bad in ("1p", "p-1", "", "p" * 256):
        with pytest.raises(errors.ParameterInvalid):
            cat.create_partition(coll.id, bad)
    with pytest.raises(errors.ParameterInvalid, match="default partition"):
        cat.drop_partition(coll.id, "_default")
    with pytest.raises(errors.CollectionNotFound):
        cat.create_partition(987654, "p")
    assert store.scan("") == before
    assert cat.drop_partition(coll.id, "p2024") is True
    assert cat.drop_partition(coll.id, "p2024") is False
    assert [x.partitionName for x in cat.list_partitions(coll.id)] == ["_default"]


def test_partition_limit(cat, store, coll, monkeypatch):
    assert MAX_PARTITIONS == 1024
    monkeypatch.setattr(catalog_collections, "MAX_PARTITIONS", 3)
    cat.create_partition(coll.id, "p1")
    cat.create_partition(coll.id, "p2")
    before = store.scan("")
    with pytest.raises(errors.ParameterInvalid, match="exceeds max"):
        cat.create_partition(coll.id, "p3")
    assert store.scan("") == before


def test_drop_partition_drops_its_segments(cat, coll):
    p = cat.create_partition(coll.id, "p")
    seg = cat.add_segment(coll.id, p.partitionID, coll.vchannels[0])
    other = cat.add_segment(coll.id, coll.default_partition.partitionID, coll.vchannels[0])
    cat.drop_partition(coll.id, "p")
    assert cat.get_segment(seg.ID).state == S.Dropped and cat.get_segment(seg.ID).dropped_at > 0
    assert cat.get_segment(other.ID).state == S.Growing


# ---------------------------------------------------------------------------------------------
# indexes


VALID_INDEXES = [
    ("FLAT", "L2", {}),
    ("IVF_FLAT", "IP", {"nlist": 128}),
    ("IVF_SQ8", "COSINE", {"nlist": "1"}),
    ("IVF_PQ", "L2", {"nlist": 65536, "m": 4, "nbits": 16}),
    ("HNSW", "L2", {"M": 2, "efConstruction": 1}),
    ("HNSW", "IP", {"M": 2048, "efConstruction": 500}),
    ("GPU_CAGRA", "L2", {"intermediate_graph_degree": 64, "graph_degree": 32, "build_algo": "nn_descent"}),
    ("GPU_IVF_FLAT", "L2", {"nlist": 16}),
    ("GPU_IVF_PQ", "IP", {"nlist": 16, "m": 8}),
    ("GPU_BRUTE_FORCE", "COSINE", {}),
    ("ivf_flat", "l2", {"params": json.dumps({"nlist": 8})}),
]


@pytest.mark.parametrize("index_type,metric,params", VALID_INDEXES)
def test_create_index_valid(cat, store, coll, index_type, metric, params):
    index_id = cat.create_index(coll.id, "vec", index_type, metric, params)
    [info] = cat.describe_index(coll.id)
    assert isinstance(info, ic.IndexInfo)
    assert info.indexID == index_id and info.fieldID == 101 and info.collectionID == coll.id
    assert info.index_name == "vec"
    ip = {p.key: p.value for p in info.index_params}
    assert ip["index_type"] == index_type.upper() and ip["metric_type"] == metric.upper()
    assert {p.key: p.value for p in info.type_params} == {"dim": "8"}
    assert store.get(f"field-index/{coll.id}/{index_id}") is not None
    assert info.state == cp.Finished  # no segments yet: nothing pending


def test_index_defaults_and_autoindex(cat, coll):
    cat.create_index(coll.id, "vec", "AUTOINDEX", None, {})
    [info] = cat.describe_index(coll.id)
    assert info.is_auto_index
    assert {p.key: p.value for p in info.index_params} == {
        "index_type": "HNSW", "metric_type": "COSINE", "M": "18", "efConstruction": "240"}
    assert {p.key: p.value for p in info.user_index_params} == {"index_type": "AUTOINDEX", "metric_type": "COSINE"}
    other = cat.create_collection("default", "o", basic_schema())
    cat.create_index(other.id, "vec", "IVF_FLAT", "L2", {})
    [info] = cat.describe_index(other.id)
    assert {p.key: p.value for p in info.index_params}["nlist"] == "128"


BAD_INDEXES = [
    ("DISKANN", "L2", {}, errors.IndexNotSupported),
    ("SCANN", "L2", {}, errors.IndexNotSupported),
    ("IVF_FLAT", "HAMMING", {"nlist": 8}, errors.ParameterInvalid),
    ("FLAT", "JACCARD", {}, errors.ParameterInvalid),
    ("IVF_FLAT", "L2", {"nlist": 0}, errors.ParameterInvalid),
    ("IVF_FLAT", "L2", {"nlist": 65537}, errors.ParameterInvalid),
    ("IVF_FLAT", "L2", {"nlist": "many"}, errors.ParameterInvalid),
    ("IVF_PQ", "L2", {"nlist": 8, "m": 3}, errors.ParameterInvalid),  # 8 % 3 != 0
    ("IVF_PQ", "L2", {"nlist": 8}, errors.ParameterInvalid),  # m required
    ("IVF_PQ", "L2", {"nlist": 8, "m": 4, "nbits": 17}, errors.ParameterInvalid),
    ("IVF_PQ", "L2", {"nlist": 8, "m": 4, "nbits": 0}, errors.ParameterInvalid),
    ("HNSW", "L2", {"M": 1, "efConstruction": 8}, errors.ParameterInvalid),
    ("HNSW", "L2", {"M": 2049, "efConstruction": 8}, errors.ParameterInvalid),
    ("HNSW", "L2", {"M": 16, "efConstruction": 0}, errors.ParameterInvalid),
    ("GPU_CAGRA", "L2", {"intermediate_graph_degree": 32, "graph_degree": 64}, errors.ParameterInvalid),
    ("GPU_CAGRA", "L2", {"build_algo": "magic"}, errors.ParameterInvalid),
    ("FLAT", "L2", {"index_type": "HNSW"}, errors.ParameterInvalid),
]


@pytest.mark.parametrize("index_type,metric,params,exc", BAD_INDEXES)
def test_create_index_invalid_writes_nothing(cat, store, coll, index_type, metric, params, exc):
    before = store.scan("")
    with pytest.raises(exc):
        cat.create_index(coll.id, "vec", index_type, metric, params)
    assert store.scan("") == before


def test_index_field_errors(cat, store):
    info = cat.create_collection("default", "c", all_types_schema())
    before = store.scan("")
    with pytest.raises(errors.FieldNotFound):
        cat.create_index(info.id, "nope", "FLAT", "L2")
    with pytest.raises(errors.IndexNotSupported):
        cat.create_index(info.id, "i64", "FLAT", "L2")
    with pytest.raises(errors.CollectionNotFound):
        cat.create_index(424242, "vec", "FLAT", "L2")
    with pytest.raises(errors.ParameterInvalid):
        cat.create_index(info.id, "vec", "FLAT", "L2", index_name="1bad")
    assert store.scan("") == before


def test_index_lifecycle(cat, store):
    info = cat.create_collection("default", "c", all_types_schema())
    a = cat.create_index(info.id, "vec", "HNSW", "L2", {"M": 16, "efConstruction": 64})
    assert cat.create_index(info.id, "vec", "HNSW", "L2", {"M": "16", "efConstruction": "64"}) == a  # same again
    before = store.scan("")
    with pytest.raises(errors.ParameterInvalid, match="one distinct index"):
        cat.create_index(info.id, "vec", "IVF_FLAT", "L2", {"nlist": 8})
    with pytest.raises(errors.ParameterInvalid, match="already used"):
        cat.create_index(info.id, "vec2", "FLAT", "L2", index_name="vec")
    assert store.scan("") == before
    b = cat.create_index(info.id, "vec2", "FLAT", "IP", index_name="small")
    assert [i.index_name for i in cat.describe_index(info.id)] == ["vec", "small"]
    assert [i.indexID for i in cat.describe_index(info.id, "vec2")] == [b]
    assert cat.drop_index(info.id, "vec") is True
    assert cat.drop_index(info.id, "vec") is False
    assert [i.indexID for i in cat.describe_index(info.id)] == [b]
    c = cat.create_index(info.id, "vec", "IVF_FLAT", "L2", {"nlist": 8})
    assert c not in (a, b)
    assert cat.purge_index(info.id, a) is True
    assert store.get(f"field-index/{info.id}/{a}") is None
    with pytest.raises(errors.ParameterInvalid):
        cat.purge_index(info.id, b)  # still live


# ---------------------------------------------------------------------------------------------
# segments and checkpoints


def test_segment_lifecycle(cat, store, coll):
    ch = coll.vchannels[0]
    part = coll.default_partition.partitionID
    seg = cat.add_segment(coll.id, part, ch, start_position=pos(3, ch))
    assert seg.state == S.Growing and seg.ID > 0 and seg.level == dc.L1
    assert store.get(f"datacoord-meta/s/{coll.id}/{part}/{seg.ID}") is not None

    # a sync of a growing segment: binlogs need checksums
    before = store.scan("")
    with pytest.raises(errors.ParameterInvalid, match="checksum"):
        cat.update_segment(seg.ID, num_of_rows=5, binlogs=[binlogs(101, "ins/a", rows=5)])
    with pytest.raises(errors.ParameterInvalid, match="log_size"):
        cat.update_segment(seg.ID, binlogs=[binlogs(101, "ins/a", rows=5, size=7)], files=[sf("ins/a", size=8)])
    with pytest.raises(errors.ParameterInvalid, match="not referenced"):
        cat.update_segment(seg.ID, files=[sf("stray")])
    assert store.scan("") == before
    seg = cat.update_segment(seg.ID, num_of_rows=5, binlogs=[binlogs(101, "ins/a", rows=5)], files=[sf("ins/a")])
    assert seg.num_of_rows == 5
    assert [(f.path, f.kind, f.fieldID) for f in cat.segment_files(seg.ID)] == [("ins/a", 1, 101)]

    seg = cat.update_segment(seg.ID, state=S.Sealed)
    with pytest.raises(errors.ParameterInvalid, match="cannot go from Sealed to Growing"):
        cat.update_segment(seg.ID, state=S.Growing)

    # publish = flushed + files + checkpoint
    full = sealed_segment(coll, rows=10, segment_id=seg.ID, paths=("ins/a", "ins/b"))
    full.ClearField("start_position")
    full.binlogs[0].binlogs[0].entries_num = 5
    full.binlogs[0].binlogs[1].entries_num = 5
    full.deltalogs.append(dc.FieldBinlog(fieldID=100, binlogs=[dc.Binlog(log_path="del/1")]))
    out = cat.publish_segment(full, [sf("ins/b"), sf("del/1", size=33)], checkpoint=pos(20))
    assert out.state == S.Flushed and out.ID == seg.ID
    assert out.start_position.timestamp == 3  # kept from the growing record
    assert out.deltalogs[0].binlogs[0].log_size == 33
    assert cat.get_segment(seg.ID) == out
    assert {f.path: f.kind for f in cat.segment_files(seg.ID)} == {"ins/a": 1, "ins/b": 1, "del/1": 3}
    assert cat.get_channel_checkpoint(ch).timestamp == 20
    assert cat.get_channel_checkpoint(ch).channel_name == ch

    assert cat.publish_segment(full, [sf("ins/b"), sf("del/1", size=33)]) == out  # idempotent
    with pytest.raises(errors.ParameterInvalid, match="already published"):
        cat.publish_segment(sealed_segment(coll, rows=3, segment_id=seg.ID, paths=("x",)), [sf("x")])

    # list filters
    g = cat.add_segment(coll.id, part, coll.vchannels[1])
    assert [s.ID for s in cat.list_segments(coll.id)] == [seg.ID, g.ID]
    assert [s.ID for s in cat.list_segments(coll.id, channel=coll.vchannels[1])] == [g.ID]
    assert [s.ID for s in cat.list_segments(coll.id, states=[S.Flushed])] == [seg.ID]
    assert [s.ID for s in cat.list_segments(coll.id, partition_id=part, states={S.Growing})] == [g.ID]
    assert cat.list_segments(coll.id, partition_id=part + 1000) == []

    # drop and purge
    with pytest.raises(errors.ParameterInvalid, match="drop it before purging"):
        cat.purge_segment(seg.ID)
    dropped = cat.drop_segment(seg.ID)
    assert dropped.state == S.Dropped and dropped.dropped_at > 0
    with pytest.raises(errors.ParameterInvalid, match="dropped"):
        cat.update_segment(seg.ID, num_of_rows=1)
    assert cat.purge_segment(seg.ID) is True
    assert cat.purge_segment(seg.ID) is False
    with pytest.raises(errors.SegmentNotFound):
        cat.get_segment(seg.ID)
    assert store.scan(f"datacoord-meta/file-checksum/{coll.id}/{part}/{seg.ID}") == []


def test_segment_reference_errors_write_nothing(cat, store, coll):
    part = coll.default_partition.partitionID
    before = store.scan("")
    with pytest.raises(errors.CollectionNotFound):
        cat.add_segment(99999, part, coll.vchannels[0])
    with pytest.raises(errors.PartitionNotFound):
        cat.add_segment(coll.id, part + 12345, coll.vchannels[0])
    with pytest.raises(errors.ChannelNotFound):
        cat.add_segment(coll.id, part, "by-dev-rootcoord-dml_0_1v9")
    with pytest.raises(errors.ParameterInvalid):
        cat.add_segment(coll.id, part, coll.vchannels[0], state=S.Flushed)
    with pytest.raises(errors.SegmentNotFound):
        cat.update_segment(123456, num_of_rows=3)
    with pytest.raises(errors.SegmentNotFound):
        cat.get_segment(123456)
    bad = sealed_segment(coll)
    with pytest.raises(errors.ParameterInvalid, match="checksum"):
        cat.publish_segment(bad, [])  # no checksum for ins/1
    with pytest.raises(errors.ParameterInvalid, match="checksum"):
        cat.publish_segment(bad, [SegmentFile(path="ins/1", size=100)])  # entry without checksum
    with pytest.raises(errors.ParameterInvalid, match="size"):
        cat.publish_segment(bad, [sf("ins/1", size=99)])
    wrong_rows = sealed_segment(coll)
    wrong_rows.num_of_rows = 11  # binlogs hold 10
    with pytest.raises(errors.ParameterInvalid, match="rows"):
        cat.publish_segment(wrong_rows, [sf("ins/1")])
    with pytest.raises(errors.ParameterInvalid, match="twice"):
        cat.publish_segment(bad, [sf("ins/1"), sf("ins/1", checksum="ee")])
    with pytest.raises(errors.ParameterInvalid, match="is a InsertLog"):
        cat.publish_segment(bad, [sf("ins/1", kind=3)])
    with pytest.raises(errors.IndexNotFound):
        cat.publish_segment(bad, [sf("ins/1")], indexes=[SegmentIndex(indexID=777, index_file_keys=["i"])])
    with pytest.raises(errors.ParameterInvalid, match="channel"):
        cat.publish_segment(bad, [sf("ins/1")], checkpoint=pos(5, channel=coll.vchannels[1]))
    with pytest.raises(errors.SegmentNotFound):
        s = sealed_segment(coll)
        s.compactionFrom.append(5555)
        cat.publish_segment(s, [sf("ins/1")])
    growing = cat.add_segment(coll.id, part, coll.vchannels[0])
    mid = store.scan("")
    with pytest.raises(errors.ParameterInvalid):
        cat.publish_segment(sealed_segment(coll, segment_id=growing.ID, channel=1), [sf("ins/1")])
    assert store.scan("") == mid
    assert before != mid


def test_publish_with_index_and_describe_progress(cat, store, coll):
    index_id = cat.create_index(coll.id, "vec", "IVF_FLAT", "L2", {"nlist": 4})
    s1 = cat.publish_segment(
        sealed_segment(coll, rows=10, paths=("a",)),
        [sf("a"), sf("idx/1", size=50)],
        indexes=[SegmentIndex(indexID=index_id, index_file_keys=["idx/1", "idx/2"],
                              files=[sf("idx/2", size=70)])],
    )
    [si] = cat.list_segment_indexes(coll.id)
    assert si.segmentID == s1.ID and si.indexID == index_id and si.buildID > 0 and si.num_rows == 10
    assert si.serialize_size == 120 and si.state == cp.Finished
    assert [(f.path, f.kind, f.indexID, f.fieldID) for f in si.files] == [
        ("idx/1", 4, index_id, 101), ("idx/2", 4, index_id, 101)]
    assert store.get(f"segment-index/{coll.id}/{s1.partitionID}/{s1.ID}/{si.buildID}") is not None
    assert [f.path for f in cat.segment_files(s1.ID)] == ["a", "idx/1", "idx/2"]

    s2 = cat.publish_segment(sealed_segment(coll, rows=6, paths=("b",)), [sf("b")])
    [info] = cat.describe_index(coll.id)
    assert (info.total_rows, info.indexed_rows, info.pending_index_rows) == (16, 10, 6)
    assert info.state == cp.InProgress

    with pytest.raises(errors.ParameterInvalid, match="checksum"):
        cat.add_segment_index(SegmentIndex(segmentID=s2.ID, indexID=index_id, index_file_keys=["idx/3"]))
    built = cat.add_segment_index(SegmentIndex(segmentID=s2.ID, indexID=index_id, index_file_keys=["idx/3"]),
                                  [sf("idx/3")])
    assert built.buildID > si.buildID and built.collectionID == coll.id
    [info] = cat.describe_index(coll.id)
    assert (info.indexed_rows, info.state) == (16, cp.Finished)

    # rebuilding replaces the previous build; dropping the index hides both
    again = cat.add_segment_index(SegmentIndex(segmentID=s2.ID, indexID=index_id, index_file_keys=["idx/4"]),
                                  [sf("idx/4")])
    assert [x.buildID for x in cat.list_segment_indexes(coll.id, segment_id=s2.ID)] == [again.buildID]
    assert len(cat.list_segment_indexes(coll.id, segment_id=s2.ID, include_deleted=True)) == 2
    cat.drop_index(coll.id, "vec")
    assert cat.list_segment_indexes(coll.id) == []
    assert [f.path for f in cat.segment_files(s1.ID)] == ["a"]


def test_compaction_publish_drops_sources(cat, coll):
    a = cat.publish_segment(sealed_segment(coll, rows=4, paths=("a",)), [sf("a")])
    b = cat.publish_segment(sealed_segment(coll, rows=6, paths=("b",)), [sf("b")])
    merged = sealed_segment(coll, rows=10, paths=("m",))
    merged.compactionFrom.extend([a.ID, b.ID])
    merged.createdByCompaction = True
    m = cat.publish_segment(merged, [sf("m")])
    assert cat.get_segment(a.ID).state == S.Dropped and cat.get_segment(b.ID).state == S.Dropped
    assert [s.ID for s in cat.list_segments(coll.id, states=[S.Flushed])] == [m.ID]


def test_l0_segment_all_partitions(cat, coll):
    seg = dc.SegmentInfo(collectionID=coll.id, partitionID=-1, insert_channel=coll.vchannels[0], level=dc.L0,
                         deltalogs=[dc.FieldBinlog(fieldID=100, binlogs=[dc.Binlog(entries_num=3, log_path="d")])])
    out = cat.publish_segment(seg, [sf("d")])
    assert out.level == dc.L0 and out.partitionID == -1
    with pytest.raises(errors.PartitionNotFound):
        cat.add_segment(coll.id, -1, coll.vchannels[0])  # only L0 may span partitions


def test_channel_checkpoints(cat, store, coll):
    ch = coll.vchannels[1]
    assert cat.get_channel_checkpoint(ch) is None
    assert cat.set_channel_checkpoint(ch, pos(10)) is True
    assert store.get(f"datacoord-meta/channel-cp/{ch}") is not None
    assert cat.set_channel_checkpoint(ch, pos(5)) is False  # never moves back
    assert cat.get_channel_checkpoint(ch).timestamp == 10
    assert cat.set_channel_checkpoint(ch, pos(11, channel=ch, msg_id=b"\x02")) is True
    assert cat.channel_checkpoints(coll.id) == {ch: pos(11, channel=ch, msg_id=b"\x02")}
    before = store.scan("")
    with pytest.raises(errors.ChannelNotFound):
        cat.set_channel_checkpoint("by-dev-rootcoord-dml_0_424242v0", pos(12))
    with pytest.raises(errors.ParameterInvalid, match="msgID"):
        cat.set_channel_checkpoint(ch, pos(12, msg_id=b""))
    with pytest.raises(errors.ParameterInvalid):
        cat.set_channel_checkpoint(ch, pos(12, channel=coll.vchannels[0]))
    assert store.scan("") == before


def test_drop_collection_marks_segments_and_indexes(cat, store, coll):
    index_id = cat.create_index(coll.id, "vec", "FLAT", "L2")
    s = cat.publish_segment(sealed_segment(coll, paths=("a",)), [sf("a"), sf("i")],
                            indexes=[SegmentIndex(indexID=index_id, index_file_keys=["i"])],
                            checkpoint=pos(4))
    g = cat.add_segment(coll.id, coll.default_partition.partitionID, coll.vchannels[1])
    assert cat.drop_collection("default", "docs")
    assert {x.ID: x.state for x in cat.list_segments(coll.id)} == {s.ID: S.Dropped, g.ID: S.Dropped}
    assert cat.get_channel_checkpoint(coll.vchannels[0]) is None
    assert cat.list_segment_indexes(coll.id) == []
    assert len(cat.list_segment_indexes(coll.id, include_deleted=True)) == 1
    # a garbage collector can still see the files, then purge
    assert [f.path for f in cat.segment_files(s.ID)] == ["a"]
    assert cat.purge_segment(s.ID) and cat.purge_segment(g.ID)
    assert cat.purge_index(coll.id, index_id)
    cid = coll.id
    for prefix in (f"root-coord/database/collections/1/{cid}", f"root-coord/partitions/{cid}/",
                   f"field-index/{cid}/", f"segment-index/{cid}/", f"datacoord-meta/s/{cid}/",
                   f"datacoord-meta/file-checksum/{cid}/", "datacoord-meta/channel-cp/"):
        assert store.scan(prefix) == [], prefix


# ---------------------------------------------------------------------------------------------
# atomicity and persistence


def test_publish_is_one_transaction(tmp_path):
    inner = SQLiteMetaStore(tmp_path / "m.db")
    store = RecordingStore(inner)
    cat = open_catalog(store)
    coll = cat.create_collection("default", "c", basic_schema())
    index_id = cat.create_index(coll.id, "vec", "FLAT", "L2")
    old = cat.publish_segment(sealed_segment(coll, rows=2, paths=("o",)), [sf("o")])
    cat.allocate_segment_id()  # the allocator's block is reserved already
    store.direct.clear()
    store.commits.clear()

    seg = sealed_segment(coll, rows=10, paths=("a",))
    seg.compactionFrom.append(old.ID)
    out = cat.publish_segment(seg, [sf("a"), sf("i")], checkpoint=pos(7),
                              indexes=[SegmentIndex(indexID=index_id, index_file_keys=["i"])])
    # no write outside the transaction (the TSO may extend its persisted window with a CAS)
    assert [d for d in store.direct if not d[1].startswith(("tso/", "gid/"))] == []
    assert len(store.commits) == 1
    written = {k for _, k, _ in store.commits[0]}
    part = coll.default_partition.partitionID
    assert f"datacoord-meta/s/{coll.id}/{part}/{out.ID}" in written
    assert f"datacoord-meta/file-checksum/{coll.id}/{part}/{out.ID}" in written
    assert f"datacoord-meta/s/{coll.id}/{part}/{old.ID}" in written  # compacted source dropped
    assert f"datacoord-meta/channel-cp/{coll.vchannels[0]}" in written
    assert any(k.startswith(f"segment-index/{coll.id}/{part}/{out.ID}/") for k in written)
    inner.close()


def test_publish_failure_inside_transaction_leaves_nothing(tmp_path):
    inner = SQLiteMetaStore(tmp_path / "m.db")
    store = RecordingStore(inner)
    cat = open_catalog(store)
    coll = cat.create_collection("default", "c", basic_schema())
    index_id = cat.create_index(coll.id, "vec", "FLAT", "L2")
    old = cat.publish_segment(sealed_segment(coll, rows=2, paths=("o",)), [sf("o")])
    growing = cat.add_segment(coll.id, coll.default_partition.partitionID, coll.vchannels[0])
    cat.set_channel_checkpoint(coll.vchannels[0], pos(3))
    ignore = ("gid/", "tso/")  # the id allocator and TSO may reserve ahead; they are not catalog state
    before = [kv for kv in inner.scan("") if not kv[0].startswith(ignore)]

    seg = sealed_segment(coll, rows=10, segment_id=growing.ID, paths=("a",))
    seg.compactionFrom.append(old.ID)
    store.poison = True
    with pytest.raises(sqlite3.IntegrityError):
        cat.publish_segment(seg, [sf("a"), sf("i")], checkpoint=pos(7),
                            indexes=[SegmentIndex(indexID=index_id, index_file_keys=["i"])])
    assert len(store.commits) >= 1 and len(store.commits[-1]) >= 4
    assert [kv for kv in inner.scan("") if not kv[0].startswith(ignore)] == before
    # the catalog is still consistent and usable afterwards
    store.poison = False
    assert cat.get_segment(growing.ID).state == S.Growing
    assert cat.get_segment(old.ID).state == S.Flushed
    assert cat.get_channel_checkpoint(coll.vchannels[0]).timestamp == 3
    out = cat.publish_segment(seg, [sf("a")], checkpoint=pos(7))
    assert out.state == S.Flushed and cat.get_segment(old.ID).state == S.Dropped
    inner.close()


def test_create_collection_failure_inside_transaction_leaves_nothing(tmp_path):
    inner = SQLiteMetaStore(tmp_path / "m.db")
    store = RecordingStore(inner)
    cat = open_catalog(store)
    store.poison = True
    with pytest.raises(sqlite3.IntegrityError):
        cat.create_collection("default", "c", basic_schema(), shards_num=2)
    assert [k for k, _ in inner.scan("root-coord/") if "db-info" not in k] == []
    store.poison = False
    c = cat.create_collection("default", "c", basic_schema(), shards_num=2)
    assert len(store.commits[-1]) == 3  # collection, _default partition, channel cursor
    assert c.partition_names == ("_default",)
    inner.close()


def test_persistence_across_reopen(tmp_path):
    path = tmp_path / "meta.db"
    store = SQLiteMetaStore(path)
    cat = open_catalog(store)
    cat.create_database("db2")
    coll = cat.create_collection("db2", "c", all_types_schema(), shards_num=2)
    p = cat.create_partition(coll.id, "p")
    index_id = cat.create_index(coll.id, "vec", "HNSW", "COSINE", {"M": 8, "efConstruction": 16})
    seg = cat.publish_segment(dc.SegmentInfo(
        collectionID=coll.id, partitionID=p.partitionID, insert_channel=coll.vchannels[1], num_of_rows=5,
        binlogs=[binlogs(101, "x", rows=5)]), [sf("x")], checkpoint=pos(42))
    snapshot = store.scan("")
    store.close()

    store2 = SQLiteMetaStore(path)
    cat2 = open_catalog(store2)
    again = cat2.describe_collection("db2", "c")
    assert again.pb == coll.pb and again.partition_names == ("_default", "p")
    assert [i.indexID for i in cat2.describe_index(coll.id)] == [index_id]
    assert cat2.get_segment(seg.ID) == seg
    assert [f.path for f in cat2.segment_files(seg.ID)] == ["x"]
    assert cat2.get_channel_checkpoint(coll.vchannels[1]).timestamp == 42
    assert [d.name for d in cat2.list_databases()] == ["default", "db2"]
    # nothing rewritten by opening (the TSO window and allocator aside)
    assert [kv for kv in store2.scan("") if not kv[0].startswith(("tso/", "gid/"))] == \
           [kv for kv in snapshot if not kv[0].startswith(("tso/", "gid/"))]
    # ids keep increasing after a restart
    other = cat2.create_collection("default", "d", basic_schema())
    assert other.id > max(coll.id, seg.ID, index_id, p.partitionID)
    assert other.vchannels[0] == f"by-dev-rootcoord-dml_2_{other.id}v0"  # channel cursor persisted
    store2.close()


def test_key_layout(cat, store, coll):
    part = coll.default_partition.partitionID
    s = cat.publish_segment(sealed_segment(coll, paths=("a",)), [sf("a")], checkpoint=pos(1))
    i = cat.create_index(coll.id, "vec", "FLAT", "L2")
    got = {k for k, _ in store.scan("") if not k.startswith(("tso/", "gid/"))}
    assert got == {
        "root-coord/database/db-info/1",
        f"root-coord/database/collections/1/{coll.id}",
        f"root-coord/partitions/{coll.id}/{part}",
        "root-coord/dml-channel/cursor",
        f"field-index/{coll.id}/{i}",
        f"datacoord-meta/s/{coll.id}/{part}/{s.ID}",
        f"datacoord-meta/file-checksum/{coll.id}/{part}/{s.ID}",
        f"datacoord-meta/channel-cp/{coll.vchannels[0]}",
    }
    assert keys.parse_vchannel(coll.vchannels[1])[1] == coll.id


# ---------------------------------------------------------------------------------------------
# arrow rows


@pytest.fixture
def typed(cat):
    return cat.create_collection("default", "typed", all_types_schema())


def good_rows(n=3, **override):
    cols = {
        "vec": [[float(i), 1.0, 2.0, 3.0] for i in range(n)],
        "b": [True] * n,
        "i8": [1] * n,
        "i16": [2] * n,
        "i32": [3] * n,
        "i64": list(range(n)),
        "f": [0.5] * n,
        "d": [1.5] * n,
        "s": ["abc"] * n,
        "j": ['{"a": 1}'] * n,
        "vec2": [[1.0, 2.0]] * n,
    }
    cols.update(override)
    return pa.table(cols)


def test_validate_rows_ok(typed):
    out = validate_rows(typed, good_rows())
    schema = arrow_schema(typed)
    assert out.column_names == [f.name for f in schema if f.name != "pk"]
    for f in out.schema:
        assert f.type == schema.field(f.name).type
    assert out.column("vec").type == pa.list_(pa.float32(), 4)
    assert out.column("i8").type == pa.int8()
    # a RecordBatch and fixed-size float32 vectors are fine too
    batch = good_rows().to_batches()[0]
    assert validate_rows(typed.schema, batch).num_rows == 3


BAD_ROWS = {
    "missing field": lambda: good_rows().drop_columns(["s"]),
    "auto-id pk given": lambda: good_rows().append_column("pk", pa.array([1, 2, 3])),
    "unknown column": lambda: good_rows().append_column("zzz", pa.array([1, 2, 3])),
    "wrong dim": lambda: good_rows(vec=[[1.0, 2.0]] * 3),
    "ragged dim": lambda: good_rows(vec=[[1.0, 2.0, 3.0, 4.0], [1.0], [1.0, 2.0, 3.0, 4.0]]),
    "fixed dim mismatch": lambda: good_rows(vec=pa.array([[1.0, 2.0]] * 3, pa.list_(pa.float32(), 2))),
    "nan vector": lambda: good_rows(vec=[[math.nan, 1.0, 2.0, 3.0]] * 3),
    "string vector": lambda: good_rows(vec=[["a"] * 4] * 3),
    "int for bool": lambda: good_rows(b=[1, 0, 1]),
    "string for int": lambda: good_rows(i32=["1", "2", "3"]),
    "int8 overflow": lambda: good_rows(i8=[1, 200, 3]),
    "varchar too long": lambda: good_rows(s=["x" * 17, "a", "b"]),
    "varchar multibyte too long": lambda: good_rows(s=["é" * 9, "a", "b"]),  # 18 bytes > 16
    "invalid json": lambda: good_rows(j=["{", "{}", "{}"]),
    "null scalar": lambda: good_rows(i64=[1, None, 3]),
    "null vector": lambda: good_rows(vec=[[1.0, 2.0, 3.0, 4.0], None, [1.0, 2.0, 3.0, 4.0]]),
    "int for varchar": lambda: good_rows(s=[1, 2, 3]),
}


@pytest.mark.parametrize("case", sorted(BAD_ROWS))
def test_validate_rows_errors(typed, case):
    with pytest.raises(errors.ParameterInvalid) as info:
        validate_rows(typed, BAD_ROWS[case]())
    assert str(info.value)


def test_validate_rows_primary_key_unique(cat):
    info = cat.create_collection("default", "pk", basic_schema(dim=2))
    ok = pa.table({"pk": [1, 2, 3], "vec": [[0.0, 1.0]] * 3})
    assert validate_rows(info, ok).column("pk").to_pylist() == [1, 2, 3]
    with pytest.raises(errors.ParameterInvalid, match="duplicate primary key 2"):
        validate_rows(info, pa.table({"pk": [1, 2, 2], "vec": [[0.0, 1.0]] * 3}))
    with pytest.raises(errors.ParameterInvalid, match="missing"):
        validate_rows(info, pa.table({"vec": [[0.0, 1.0]] * 3}))
    vinfo = cat.create_collection("default", "vpk", _schema_with(fld("id", sp.VarChar, pk=True, max_length=4),
                                                                 fld("v", sp.FloatVector, dim=2)))
    with pytest.raises(errors.ParameterInvalid, match="duplicate primary key 'a'"):
        validate_rows(vinfo, pa.table({"id": ["a", "b", "a"], "v": [[0.0, 1.0]] * 3}))


def test_validate_rows_dynamic_field(cat):
    info = cat.create_collection("default", "dyn", basic_schema(dim=2, enable_dynamic_field=True))
    t = pa.table({"pk": [1, 2], "vec": [[0.0, 1.0]] * 2, "color": ["red", "blue"], "$meta": ['{"x": 1}', "{}"]})
    out = validate_rows(info, t)
    assert out.column_names == ["pk", "vec", "color", "$meta"]
    with pytest.raises(errors.ParameterInvalid, match="JSON object"):
        validate_rows(info, t.set_column(3, "$meta", pa.array(["[1]", "{}"])))
    with pytest.raises(errors.ParameterInvalid, match="reserved"):
        validate_rows(info, t.append_column("$other", pa.array([1, 2])))


def test_validate_rows_empty_and_chunked(typed):
    empty = validate_rows(typed, good_rows().slice(0, 0))
    assert empty.num_rows == 0 and empty.column("vec").type == pa.list_(pa.float32(), 4)
    chunked = pa.concat_tables([good_rows(2), good_rows(3)])
    assert chunked.column("vec").num_chunks == 2
    out = validate_rows(typed, chunked)
    assert out.num_rows == 5 and out.column("vec").to_pylist()[2] == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(errors.ParameterInvalid, match="row 3"):
        validate_rows(typed, pa.concat_tables([good_rows(2), good_rows(2, vec=[[1.0] * 4, [1.0] * 3])]))


# ---------------------------------------------------------------------------------------------
# records of vecgrid.storage.segment_files


def test_publish_segment_files_round_trip(cat, store, tmp_path):
    segment_files = pytest.importorskip("vecgrid.storage.segment_files")
    info = cat.create_collection("default", "sf", basic_schema(dim=4), shards_num=1)
    index_id = cat.create_index(info.id, "vec", "FLAT", "L2")
    part = info.default_partition.partitionID
    sid = cat.allocate_segment_id()
    rows = validate_rows(info, pa.table({"pk": [1, 2, 3], "vec": [[0.0, 1.0, 2.0, 3.0]] * 3}))
    root = str(tmp_path / "data")
    record = segment_files.write_segment(root, info.id, part, sid, rows.cast(arrow_schema(info)),
                                         deltalog=([1], [5]), checksum="sha256")
    index_info = segment_files.put_file(root, record.index_path(101), b"index bytes")
    record = record.with_index(101, index_info)

    seg = cat.publish_segment_files(record, info.vchannels[0], checkpoint=pos(8))
    assert seg.ID == sid and seg.state == S.Flushed and seg.num_of_rows == 3 and seg.storage_version == 2
    assert [(fb.fieldID, [b.log_path for b in fb.binlogs]) for fb in seg.binlogs] == [(0, [record.data.path])]
    assert seg.binlogs[0].binlogs[0].log_size == record.data.size
    assert [b.log_path for fb in seg.deltalogs for b in fb.binlogs] == [record.deltalog.path]
    [build] = cat.list_segment_indexes(info.id, segment_id=sid)
    assert build.indexID == index_id and list(build.index_file_keys) == [index_info.path]
    assert cat.segment_root(sid) == root
    assert cat.get_channel_checkpoint(info.vchannels[0]).timestamp == 8

    back = cat.segment_files_record(sid)
    assert back == record
    for f in back.files():
        segment_files.verify_file(back.root, f)
    assert segment_files.read_segment(back).column("pk").to_pylist() == [1, 2, 3]

    # an index built later, through put_file
    sid2 = cat.allocate_segment_id()
    rec2 = segment_files.write_segment(root, info.id, part, sid2, rows.cast(arrow_schema(info)))
    cat.publish_segment_files(rec2, info.vchannels[0])
    assert cat.segment_files_record(sid2) == rec2
    idx2 = segment_files.put_file(root, rec2.index_path(101), b"more index bytes")
    cat.add_index_file(sid2, 101, idx2)
    assert cat.segment_files_record(sid2) == rec2.with_index(101, idx2)

    # a record naming an index that does not exist is refused, nothing written
    sid3 = cat.allocate_segment_id()
    rec3 = segment_files.write_segment(root, info.id, part, sid3, rows.cast(arrow_schema(info)))
    before = store.scan("")
    with pytest.raises(errors.IndexNotFound):
        cat.publish_segment_files(rec3.with_index(999, idx2), info.vchannels[0])
    with pytest.raises(errors.ParameterInvalid, match="checksum"):
        cat.publish_segment_files(
            dataclasses.replace(rec3, data=segment_files.FileInfo(rec3.data.path, 1, "nope")),
            info.vchannels[0])
    assert store.scan("") == before


def test_all_collections_spans_every_database(tmp_path):
    """DataCoord's sweeps read every collection of every database in one call."""
    from vecgrid.storage.layout import DataDir
    from vecgrid.proto import common_pb2, schema_pb2
    data = DataDir(tmp_path)
    store = data.open_store()
    try:
        cat = data.open_catalog(store, tso_key="tso/test")
        schema = schema_pb2.CollectionSchema(fields=[
            schema_pb2.FieldSchema(name="pk", data_type=schema_pb2.Int64, is_primary_key=True),
            schema_pb2.FieldSchema(name="v", data_type=schema_pb2.FloatVector,
                                   type_params=[common_pb2.KeyValuePair(key="dim", value="4")])])
        cat.create_database("other")
        a = cat.create_collection("default", "a", schema)
        b = cat.create_collection("other", "b", schema)
        assert [c.id for c in cat.all_collections()] == [a.id, b.id]
        assert [c.id for c in cat.list_collections("other")] == [b.id]
    finally:
        store.close()
