"""Two :class:`Catalog` objects on one meta store: what one process sees of another's writes.

A bulk import (or a flush) may run in its own process beside a live server, each with its own
``Catalog`` over the same SQLite file. The catalog's in-process lock does not reach across them,
so these tests open two stores on one file and make the other process's write land exactly
between a read and the write that follows it (``InterleavingStore``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from vecgrid import errors
from vecgrid.proto import common_pb2
from vecgrid.proto import data_coord_pb2 as dc
from vecgrid.proto import msg_pb2
from vecgrid.proto import schema_pb2 as sp
from vecgrid.storage.catalog import Catalog, SegmentFile, keys
from vecgrid.storage.kv import MetaStore, SQLiteMetaStore
from vecgrid.storage.tso import IDAllocator, TimestampOracle


def pos(ts: int, msg_id: bytes = b"\x01") -> msg_pb2.MsgPosition:
    return msg_pb2.MsgPosition(msgID=msg_id, timestamp=ts)


def schema() -> sp.CollectionSchema:
    return sp.CollectionSchema(fields=[
        sp.FieldSchema(name="pk", data_type=sp.Int64, is_primary_key=True),
        sp.FieldSchema(name="vec", data_type=sp.FloatVector, type_params=[common_pb2.KeyValuePair(key="dim", value="4")]),
    ])


def open_catalog(store: MetaStore) -> Catalog:
    return Catalog(store, IDAllocator(store, "gid/id-allocator", block_size=100), TimestampOracle(store))


class InterleavingStore(MetaStore):
    """A SQLite store that runs ``between`` (once) right after the first read of ``key``.

    ``between`` stands for another process writing the same store at the worst moment: after this
    catalog read a value and before it writes what it decided from it. ``scans`` counts prefix scans.
    """

    def __init__(self, inner: SQLiteMetaStore) -> None:
        self.inner = inner
        self.key: str | None = None
        self.between: Callable[[], None] | None = None
        self.scans: list[str] = []

    def arm(self, key: str, between: Callable[[], None]) -> None:
        self.key, self.between = key, between

    def _fire(self, key: str) -> None:
        if key == self.key and self.between is not None:
            between, self.between = self.between, None
            between()

    def get(self, key):
        value = self.inner.get(key)
        self._fire(key)
        return value

    def put(self, key, value):
        self.inner.put(key, value)

    def delete(self, key):
        self.inner.delete(key)

    def scan(self, prefix):
        self.scans.append(prefix)
        return self.inner.scan(prefix)

    def compare_and_swap(self, key, expected, value):
        return self.inner.compare_and_swap(key, expected, value)

    def _commit(self, ops):
        self.inner._commit(ops)

    def close(self):
        self.inner.close()


@pytest.fixture
def two(tmp_path):
    """(catalog A over an InterleavingStore, catalog B, A's store): two processes' catalogs on one file."""
    path = tmp_path / "meta.db"
    a_store = InterleavingStore(SQLiteMetaStore(path))
    b_store = SQLiteMetaStore(path)
    a, b = open_catalog(a_store), open_catalog(b_store)
    yield a, b, a_store
    a_store.close()
    b_store.close()


# ---------------------------------------------------------------------------------------------
# checkpoints: compare-and-swap, never backwards


def test_set_checkpoint_never_moves_back_when_another_catalog_writes_between(two):
    a, b, a_store = two
    coll = a.create_collection("default", "docs", schema())
    ch = coll.vchannels[0]
    assert a.set_channel_checkpoint(ch, pos(5))
    # A reads 5 and decides 7 advances it; B moves it to 10 before A writes.
    a_store.arm(keys.channel_cp_key(ch), lambda: b.set_channel_checkpoint(ch, pos(10)))
    assert a.set_channel_checkpoint(ch, pos(7)) is False
    assert a_store.between is None  # the interleaving did happen
    assert a.get_channel_checkpoint(ch).timestamp == 10
    assert b.get_channel_checkpoint(ch).timestamp == 10
    assert a.set_channel_checkpoint(ch, pos(11)) is True


def test_set_checkpoint_advances_past_a_concurrent_smaller_write(two):
    a, b, a_store = two
    coll = a.create_collection("default", "docs", schema())
    ch = coll.vchannels[0]
    a_store.arm(keys.channel_cp_key(ch), lambda: b.set_channel_checkpoint(ch, pos(6)))
    assert a.set_channel_checkpoint(ch, pos(9)) is True  # A read "none", B wrote 6: 9 still advances
    assert a_store.between is None
    assert b.get_channel_checkpoint(ch).timestamp == 9


def test_publish_checkpoint_never_moves_back_when_another_catalog_writes_between(two):
    a, b, a_store = two
    coll = a.create_collection("default", "docs", schema())
    ch = coll.vchannels[0]
    a.set_channel_checkpoint(ch, pos(5))
    seg = dc.SegmentInfo(collectionID=coll.id, partitionID=coll.default_partition.partitionID, insert_channel=ch,
                         num_of_rows=3, binlogs=[dc.FieldBinlog(fieldID=101, binlogs=[
                             dc.Binlog(entries_num=3, log_path="ins/1", log_size=10)])])
    files = [SegmentFile(path="ins/1", size=10, checksum_algorithm="sha256", checksum="00")]
    a_store.arm(keys.channel_cp_key(ch), lambda: b.set_channel_checkpoint(ch, pos(10)))
    out = a.publish_segment(seg, files, checkpoint=pos(7))
    assert a_store.between is None
    assert b.get_segment(out.ID).state == common_pb2.Flushed  # the segment is published all the same
    assert b.get_channel_checkpoint(ch).timestamp == 10


def test_publish_checkpoint_advances_over_a_concurrent_smaller_write(two):
    a, b, a_store = two
    coll = a.create_collection("default", "docs", schema())
    ch = coll.vchannels[0]
    seg = dc.SegmentInfo(collectionID=coll.id, partitionID=coll.default_partition.partitionID, insert_channel=ch,
                         num_of_rows=3, binlogs=[dc.FieldBinlog(fieldID=101, binlogs=[
                             dc.Binlog(entries_num=3, log_path="ins/1", log_size=10)])])
    files = [SegmentFile(path="ins/1", size=10, checksum_algorithm="sha256", checksum="00")]
    a_store.arm(keys.channel_cp_key(ch), lambda: b.set_channel_checkpoint(ch, pos(4)))
    a.publish_segment(seg, files, checkpoint=pos(7))
    assert a_store.between is None
    assert b.get_channel_checkpoint(ch).timestamp == 7


def test_checkpoint_race_on_real_threads_never_goes_backwards(tmp_path):
    """Two catalogs (each its own SQLite connection) race ascending and random checkpoints; a reader
    watching the stored value never sees it decrease, and the last value is the largest offered."""
    path = tmp_path / "meta.db"
    stores = [SQLiteMetaStore(path) for _ in range(3)]
    try:
        cats = [open_catalog(s) for s in stores[:2]]
        ch = cats[0].create_collection("default", "docs", schema()).vchannels[0]
        offered: list[list[int]] = [[], []]
        done = threading.Event()
        seen: list[int] = []
        failures: list[BaseException] = []

        def writer(i: int) -> None:
            try:
                for k in range(150):
                    ts = 1000 + 7 * k + (k * 37 + i * 11) % 23  # mostly rising, often behind the other writer
                    offered[i].append(ts)
                    cats[i].set_channel_checkpoint(ch, pos(ts))
            except BaseException as e:  # noqa: BLE001 - surfaced by the assertion below
                failures.append(e)

        def watcher() -> None:
            reader = open_catalog(stores[2])
            while not done.is_set():
                cp = reader.get_channel_checkpoint(ch)
                if cp is not None:
                    seen.append(cp.timestamp)

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
        watch = threading.Thread(target=watcher)
        watch.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done.set()
        watch.join()
        assert failures == []
        assert all(x <= y for x, y in zip(seen, seen[1:])), "a checkpoint moved backwards"
        assert cats[0].get_channel_checkpoint(ch).timestamp == max(offered[0] + offered[1])
    finally:
        for s in stores:
            s.close()


def test_checkpoint_of_an_unknown_channel_is_refused(two):
    a, _, _ = two
    with pytest.raises(errors.ChannelNotFound):
        a.set_channel_checkpoint("by-dev-rootcoord-dml_0_424242v0", pos(1))


# ---------------------------------------------------------------------------------------------
# the store's guarded transaction (what a publish's checkpoint rides on)


def test_txn_expect_guards_the_whole_transaction(tmp_path):
    from vecgrid.storage.kv import MetaTxnConflictError

    with SQLiteMetaStore(tmp_path / "m.db") as store, SQLiteMetaStore(tmp_path / "m.db") as other:
        store.put("cp", b"5")
        with store.txn() as t:
            t.put("seg", b"a")
            t.expect("cp", b"5")
            t.put("cp", b"7")
        assert (store.get("seg"), store.get("cp")) == (b"a", b"7")
        with pytest.raises(MetaTxnConflictError):
            with store.txn() as t:
                t.put("seg", b"b")  # a write before the guard is not applied either
                t.expect("cp", b"5")
                t.put("cp", b"6")
        assert (other.get("seg"), other.get("cp")) == (b"a", b"7")
        with pytest.raises(MetaTxnConflictError):
            with store.txn() as t:
                t.expect("absent", None)
                t.expect("cp", None)
                t.put("seg", b"c")
        assert other.get("seg") == b"a"
        with store.txn() as t:
            t.expect("absent", None)
            t.put("absent", b"1")
        assert other.get("absent") == b"1"


# ---------------------------------------------------------------------------------------------
# get_collection by id: cached, and right when another catalog changes the collections


def _collection_scans(store: InterleavingStore) -> int:
    return sum(1 for p in store.scans if p == keys.COLLECTION_PREFIX)


def test_get_collection_by_id_does_not_rescan_every_collection(two):
    a, _, a_store = two
    ids = [a.create_collection("default", f"c{i}", schema()).id for i in range(5)]
    a.get_collection(ids[0])
    a.collection_of_channel(a.get_collection(ids[1]).vchannels[0])
    a_store.scans.clear()
    for cid in ids * 3:
        assert a.get_collection(cid).id == cid
    a.collection_of_channel(a.get_collection(ids[2]).vchannels[0])
    assert _collection_scans(a_store) == 0


def test_get_collection_sees_what_another_catalog_creates_changes_and_drops(two):
    a, b, a_store = two
    first = a.create_collection("default", "docs", schema())
    assert a.get_collection(first.id).name == "docs"

    made_by_b = b.create_collection("default", "imported", schema())  # a bulk import beside the server
    assert a.get_collection(made_by_b.id).name == "imported"          # a miss rescans
    assert a.collection_of_channel(made_by_b.vchannels[0]).id == made_by_b.id

    # another process rewrites the record in place (an alter or a rename keeps the key)
    key = keys.collection_key(first.db_id, first.id)
    changed = first.pb.__class__()
    changed.CopyFrom(first.pb)
    changed.schema.name = "renamed"
    changed.properties.add(key="collection.ttl.seconds", value="60")
    b.store.put(key, changed.SerializeToString(deterministic=True))
    seen = a.get_collection(first.id)
    assert seen.name == "renamed" and seen.properties == {"collection.ttl.seconds": "60"}

    # ... or moves it to another database (the key changes)
    db = b.create_database("other")
    moved = changed.__class__()
    moved.CopyFrom(changed)
    moved.db_id = db.id
    with b.store.txn() as t:
        t.delete(key)
        t.put(keys.collection_key(db.id, first.id), moved.SerializeToString(deterministic=True))
    assert a.get_collection(first.id).db_id == db.id

    assert b.drop_collection("default", "imported")
    with pytest.raises(errors.CollectionNotFound):
        a.get_collection(made_by_b.id)
    with pytest.raises(errors.ChannelNotFound):
        a.collection_of_channel(made_by_b.vchannels[0])
    again = b.create_collection("default", "imported", schema())
    assert again.id != made_by_b.id and a.get_collection(again.id).name == "imported"
    with pytest.raises(errors.CollectionNotFound):
        a.get_collection(made_by_b.id)


def test_get_collection_after_own_drop_and_recreate(two):
    a, _, _ = two
    c = a.create_collection("default", "docs", schema())
    assert a.get_collection(c.id).id == c.id
    assert a.drop_collection("default", "docs")
    with pytest.raises(errors.CollectionNotFound):
        a.get_collection(c.id)
    d = a.create_collection("default", "docs", schema())
    assert a.get_collection(d.id).id == d.id != c.id


def _sealed(coll, path: str, rows: int = 3) -> dc.SegmentInfo:
    return dc.SegmentInfo(collectionID=coll.id, partitionID=coll.default_partition.partitionID,
                          insert_channel=coll.vchannels[0], num_of_rows=rows, binlogs=[dc.FieldBinlog(
                              fieldID=101, binlogs=[dc.Binlog(entries_num=rows, log_path=path, log_size=10)])])


def _file(path: str) -> SegmentFile:
    return SegmentFile(path=path, size=10, checksum_algorithm="sha256", checksum="00")


def test_publish_retried_after_a_checkpoint_race_still_drops_its_compaction_sources(two):
    a, b, a_store = two
    coll = a.create_collection("default", "docs", schema())
    ch = coll.vchannels[0]
    source = a.publish_segment(_sealed(coll, "old"), [_file("old")], checkpoint=pos(2))
    compacted = _sealed(coll, "new")
    compacted.compactionFrom.append(source.ID)
    a_store.arm(keys.channel_cp_key(ch), lambda: b.set_channel_checkpoint(ch, pos(3)))
    out = a.publish_segment(compacted, [_file("new")], checkpoint=pos(8))
    assert a_store.between is None
    assert b.get_segment(source.ID).state == common_pb2.Dropped
    assert b.get_segment(out.ID).state == common_pb2.Flushed
    assert b.get_channel_checkpoint(ch).timestamp == 8


def test_publish_of_several_segments_keeps_the_latest_checkpoint_of_a_channel(two):
    a, _, _ = two
    coll = a.create_collection("default", "docs", schema())
    a.publish_segments([(_sealed(coll, "x"), [_file("x")], {"checkpoint": pos(9)}),
                        (_sealed(coll, "y"), [_file("y")], {"checkpoint": pos(4)})])
    assert a.get_channel_checkpoint(coll.vchannels[0]).timestamp == 9
