"""The coordinator's Writer without a cluster: a catalog, the channels' appenders and the log read back.

Every rejected write leaves every channel's log as it was; an accepted one is one timestamp on every
channel it touches, with rows routed by primary key exactly as bulk import routes them, completed
(defaults, dynamic field, auto ids) in schema order; the growing-memory quota refuses with Milvus's code 9
before anything is logged and lets writes through again once a flush hands the rows off."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from vecgrid import errors
from vecgrid.cluster.proxy import writer as writer_module
from vecgrid.storage.dml import DeleteBatch, InsertBatch, TimeTick
from vecgrid.storage.sharding import shard_of
from vecgrid.storage.wal import MessageKind
from tests.proxy_support import rows_for
from tests.write_support import DIM, WriteSetup


@pytest.fixture
def setup(tmp_path):
    s = WriteSetup(tmp_path)
    yield s
    s.close()


def _bad_rows() -> list[tuple[str, dict | list, type, str]]:
    """(collection, rows, error, text) of writes that must be refused."""
    good = rows_for([1, 2, 3], DIM)
    cases = []

    def case(coll, change, error, text):
        rows = {k: (v.copy() if isinstance(v, np.ndarray) else list(v)) for k, v in good.items()}
        change(rows)
        cases.append((coll, rows, error, text))

    case("plain", lambda r: r.__setitem__("vec", np.ones((3, DIM + 1), np.float32)), errors.ParameterInvalid,
         f"is not equal to the schema's dim ({DIM})")
    case("plain", lambda r: r["vec"].__setitem__((2, 0), np.nan), errors.ParameterInvalid, "NaN or Inf")
    case("plain", lambda r: r["vec"].__setitem__((0, 1), np.inf), errors.ParameterInvalid, "NaN or Inf")
    case("plain", lambda r: r.__setitem__("tag", ["x" * 17, "a", "b"]), errors.ParameterInvalid,
         "exceeds max_length (16)")
    case("plain", lambda r: r.pop("age"), errors.ParameterInvalid, "field 'age' of collection 'plain' is missing")
    case("plain", lambda r: r.__setitem__("color", ["r", "g", "b"]), errors.ParameterInvalid,
         "Attempt to insert an unexpected field `color` to collection without enabling dynamic field")
    case("plain", lambda r: r.__setitem__("pk", [1, 2, 1]), errors.ParameterInvalid, "duplicate primary key 1")
    case("plain", lambda r: r.__setitem__("age", [1, 2, 1 << 40]), errors.ParameterInvalid, "out of range for Int32")
    case("plain", lambda r: r.__setitem__("age", ["a", "b", "c"]), errors.ParameterInvalid, "field 'age' is Int32")
    case("auto", lambda r: None, errors.ParameterInvalid, "can not assign primary field data when auto id enabled pk")
    case("keys", lambda r: r.__setitem__("pk", ["a", "b", "a"]), errors.ParameterInvalid, "duplicate primary key 'a'")
    cases.append(("plain", [{"pk": 1, "vec": [1.0] * DIM, "age": 1, "tag": "a"}, {"pk": 2, "vec": [1.0] * 3,
                                                                                   "age": 2, "tag": "b"}],
                  errors.ParameterInvalid, "the dim (3) of the vector in row 1"))
    cases.append(("plain", [{"pk": 1, "vec": [1.0] * DIM, "age": 1, "tag": "a"}, {"pk": 2, "vec": [1.0] * DIM}],
                  errors.ParameterInvalid, "null value"))
    cases.append(("plain", [], errors.ParameterInvalid, "num_rows should be greater than 0"))
    cases.append(("plain", "not rows", errors.ParameterInvalid, "rows must be a list of dicts"))
    return cases


@pytest.mark.parametrize("collection,rows,error,text", _bad_rows())
def test_a_rejected_write_writes_nothing(setup, collection, rows, error, text):
    setup.writer.insert_sync("plain", rows_for([100], DIM))   # the channel exists and has a record
    before = setup.logs()
    with pytest.raises(error) as info:
        setup.writer.insert_sync(collection, rows)
    assert text in str(info.value)
    assert setup.logs() == before


def test_other_refusals_write_nothing(setup, monkeypatch):
    setup.writer.insert_sync("plain", rows_for([100], DIM))
    before = setup.logs()
    monkeypatch.setattr(writer_module, "MAX_WRITE_BYTES", 4096)   # one record per channel and write
    with pytest.raises(errors.ParameterTooLarge, match="split the batch"):
        setup.writer.insert_sync("plain", rows_for(list(range(1000)), DIM))
    monkeypatch.undo()
    with pytest.raises(errors.CollectionNotFound):
        setup.writer.insert_sync("nope", rows_for([1], DIM))
    with pytest.raises(errors.PartitionNotFound, match=r"partition=p9"):
        setup.writer.insert_sync("plain", rows_for([1], DIM), partition="p9")
    with pytest.raises(errors.ParameterInvalid, match="upsert can not assign primary field data"):
        setup.writer.insert_sync("auto", {k: v for k, v in rows_for([1], DIM).items() if k != "pk"}, upsert=True)
    with pytest.raises(errors.ParameterInvalid, match="VarChar: cannot delete keys of type int64"):
        setup.writer.delete_sync("keys", [1, 2])
    with pytest.raises(errors.ParameterInvalid, match="no primary keys"):
        setup.writer.delete_sync("plain", [])
    assert setup.logs() == before


def test_one_timestamp_across_channels_rows_routed_as_bulk_import(setup):
    pks = list(range(200))
    done = setup.writer.insert_sync("plain", rows_for(pks, DIM, seed=1))
    assert (done.insert_cnt, done.ids, done.succ_index) == (200, pks, list(range(200)))
    channels = setup.colls["plain"].vchannels
    seen = []
    for index, channel in enumerate(channels):
        ((kind, ts, batch),) = setup.log(channel)
        assert kind == MessageKind.INSERT and ts == done.timestamp and isinstance(batch, InsertBatch)
        assert set(batch.timestamps.tolist()) == {done.timestamp}
        keys = batch.primary_keys.to_numpy()
        assert (shard_of(batch.primary_keys, len(channels)) == index).all()
        assert batch.partition_id == setup.colls["plain"].default_partition.partitionID
        # every field but the primary key, in schema order; the default filled in
        assert batch.columns.schema.names == ["vec", "age", "tag", "score"]
        assert batch.columns.column("score").to_pylist() == [0.5] * len(keys)
        assert batch.columns.column("age").to_pylist() == (keys % 100).tolist()
        seen.extend(keys.tolist())
    assert sorted(seen) == pks


def test_dynamic_fields_from_dicts_columns_and_arrow(setup):
    w = setup.writer
    w.insert_sync("dyn", [{"pk": 1, "vec": [0.0] * DIM, "age": 1, "tag": "a", "color": "red", "n": 2},
                          {"pk": 2, "vec": [0.0] * DIM, "age": 2, "tag": "b", "$meta": {"size": 3}}])
    cols = rows_for([3, 4], DIM)
    cols["color"] = ["x", "y"]
    w.insert_sync("dyn", cols)
    table = pa.table({"pk": [5], "vec": pa.FixedSizeListArray.from_arrays(pa.array([0.0] * DIM, pa.float32()), DIM),
                      "age": pa.array([5], pa.int32()), "tag": ["e"], "extra": [1.5]})
    w.insert_sync("dyn", table)
    w.insert_sync("dyn", rows_for([6], DIM))
    import json
    metas = [json.loads(v) for _, _, b in setup.log(setup.colls["dyn"].vchannels[0])
             for v in b.columns.column("$meta").to_pylist()]
    assert metas == [{"color": "red", "n": 2}, {"size": 3}, {"color": "x"}, {"color": "y"}, {"extra": 1.5}, {}]


def test_auto_ids_upsert_and_delete_records(setup):
    w = setup.writer
    rows = rows_for(list(range(10)), DIM)
    del rows["pk"]
    done = w.insert_sync("auto", rows)
    assert len(set(done.ids)) == 10
    logged = [k for ch in setup.colls["auto"].vchannels for _, _, b in setup.log(ch) for k in b.primary_keys.to_pylist()]
    assert sorted(logged) == sorted(done.ids)

    channel = setup.colls["keys"].vchannels
    up = w.insert_sync("keys", rows_for(["a", "b", "c"], DIM), upsert=True)
    assert (up.upsert_cnt, up.insert_cnt, up.ids) == (3, 0, ["a", "b", "c"])
    records = [r for ch in channel for r in setup.log(ch)]
    # on each channel: the delete of the keys (every partition), then their rows, one timestamp
    for ch in channel:
        log = setup.log(ch)
        if log:
            (k1, t1, d), (k2, t2, i) = log
            assert (k1, k2, t1, t2) == (MessageKind.DELETE, MessageKind.INSERT, up.timestamp, up.timestamp)
            assert d.partition_id == -1 and d.primary_keys.to_pylist() == i.primary_keys.to_pylist()
    assert len(records) == 2 * sum(1 for ch in channel if setup.log(ch))

    gone = w.delete_sync("keys", ["a", "b", "c", "zz"])
    assert (gone.delete_cnt, gone.ids) == (4, ["a", "b", "c", "zz"])
    deleted = []
    for ch in channel:
        tail = [r for r in setup.log(ch) if r[1] == gone.timestamp]
        if not tail:
            continue                               # no key of the delete hashes to this channel
        (k1, _, d), (k2, _, tick) = tail          # a delete ends with a tick of its timestamp
        assert (k1, k2) == (MessageKind.DELETE, MessageKind.TIMETICK) and isinstance(tick, TimeTick)
        assert isinstance(d, DeleteBatch)
        deleted += d.primary_keys.to_pylist()
    assert sorted(deleted) == ["a", "b", "c", "zz"]


def test_the_growing_quota_refuses_with_code_9_until_a_flush_hands_off(setup):
    w = setup.writer
    channels = setup.colls["plain"].vchannels
    setup.leaders = {channels[0]: [7], channels[1]: [7]}      # one node leads both channels
    big = 12_000                                                # ~0.7 MB of vectors and columns
    w.insert_sync("plain", rows_for(list(range(big)), DIM))
    before = setup.logs()
    with pytest.raises(errors.ServiceQuotaExceeded) as info:
        w.insert_sync("plain", rows_for(list(range(big, 2 * big)), DIM))
    assert info.value.code == 9 and "query node 7" in str(info.value) and "querynode.max_growing_mb" in str(info.value)
    assert setup.logs() == before
    w.delete_sync("plain", [1, 2])                              # deletes are never refused
    # one node per channel: each holds only its channel's half, and the same write passes
    setup.leaders = {channels[0]: [7], channels[1]: [8]}
    w.insert_sync("plain", rows_for(list(range(big, 2 * big)), DIM))
    more = rows_for(list(range(2 * big, 3 * big + big // 2)), DIM)
    with pytest.raises(errors.ServiceQuotaExceeded):
        w.insert_sync("plain", more)
    # a flush seals the channels and hands the rows off: writes pass again
    for channel in channels:
        appender = setup.appenders.require(channel)
        _, sealed = appender.seal()
        appender.handed_off(sealed)
    w.insert_sync("plain", more)


def test_strong_guarantees_are_the_newest_acknowledged_records(setup):
    channels = list(setup.colls["plain"].vchannels)
    # nothing logged yet: a tick is logged so that the channel's leader has a record to reach
    first = setup.writer.guarantees_sync(channels)
    for channel in channels:
        ((kind, ts, _),) = setup.log(channel)
        assert (kind, ts) == (MessageKind.TIMETICK, first[channel])
    done = setup.writer.insert_sync("plain", rows_for(list(range(50)), DIM))
    assert setup.writer.guarantees_sync(channels) == {c: done.timestamp for c in channels}
    assert setup.writer.guarantees_sync(channels) == {c: done.timestamp for c in channels}   # no new records
    assert all(len(setup.log(c)) == 2 for c in channels)


def test_a_strong_read_of_a_channel_no_collection_has_is_refused_and_logs_nothing(setup):
    """Found by tests/test_grpc_fuzz.py: GetGuaranteeTimestamps opened a write-ahead log for any channel
    name it was given (an unknown one got a log and a time tick; '' failed as an unexpected error)."""
    known = list(setup.colls["plain"].vchannels)
    before = sorted(p.name for p in Path(setup.wal.root).iterdir())
    for bogus in ("by-dev-rootcoord-dml_0_999v0", "", "../../x", known[0] + "x"):
        with pytest.raises(errors.ChannelNotFound):
            setup.writer.guarantees_sync([*known, bogus])
    assert sorted(p.name for p in Path(setup.wal.root).iterdir()) == before


def test_multi_channel_writes_and_single_appends_never_deadlock_and_stay_ordered(setup):
    """Writes spanning both channels race single-channel appends (ticks) from other threads: each channel's
    log stays in timestamp order, and every write is one timestamp on both channels."""
    channels = list(setup.colls["plain"].vchannels)
    stamps: list[int] = []
    failures: list[BaseException] = []

    def writer(first: int) -> None:
        try:
            for i in range(20):
                pks = list(range(first + i * 10, first + i * 10 + 10))
                stamps.append(setup.writer.insert_sync("plain", rows_for(pks, DIM)).timestamp)
        except BaseException as e:  # noqa: BLE001 - reported below
            failures.append(e)

    def ticker(channel: str) -> None:
        try:
            a = setup.appenders.require(channel)
            for _ in range(40):
                a.append(lambda ts: [(MessageKind.TIMETICK, TimeTick(ts).encode())])
        except BaseException as e:  # noqa: BLE001
            failures.append(e)

    threads = [threading.Thread(target=writer, args=(k * 100_000,)) for k in range(3)]
    threads += [threading.Thread(target=ticker, args=(c,)) for c in reversed(channels)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a write is stuck"
    assert failures == []
    for channel in channels:
        stamped = [ts for _, ts, _ in setup.log(channel)]
        assert stamped == sorted(stamped)
        inserts = {ts for kind, ts, _ in setup.log(channel) if kind == MessageKind.INSERT}
        assert inserts <= set(stamps)
    assert len(set(stamps)) == 60
