"""Tests for vecgrid.storage.kv: the SQLite metadata store and the backend factory."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import threading

import pytest

from vecgrid.storage.kv import (
    MetaStore,
    MetaStoreClosedError,
    MetaStoreUnavailableError,
    SQLiteMetaStore,
    open_meta_store,
    prefix_end,
    register_meta_store_backend,
)

pytestmark = pytest.mark.timeout(60)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_put_get_delete(store):
    assert store.get("querycoord-collection-loadinfo/1") is None
    store.put("querycoord-collection-loadinfo/1", b"\x00\x01binary")
    assert store.get("querycoord-collection-loadinfo/1") == b"\x00\x01binary"
    store.put("querycoord-collection-loadinfo/1", bytearray(b"v2"))
    assert store.get("querycoord-collection-loadinfo/1") == b"v2"
    store.delete("querycoord-collection-loadinfo/1")
    assert store.get("querycoord-collection-loadinfo/1") is None
    store.delete("querycoord-collection-loadinfo/1")  # absent: not an error
    store.put("empty", b"")
    assert store.get("empty") == b""


def test_type_checks(store):
    with pytest.raises(TypeError):
        store.put("k", "not bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        store.get(b"k")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        store.put("", b"x")


def test_scan_prefix_sorted_and_bounded(store):
    keys = [
        "querycoord-replica/1/7",
        "querycoord-replica/1/10",
        "querycoord-replica/2/1",
        "querycoord-replica0",  # shares the text prefix but not the '/' boundary
        "querycoord-collection-loadinfo/1",
        "querycoord-replica/1/\u00e9t\u00e9",
        "querycoord-replica/1/\U0001f600",
    ]
    for i, k in enumerate(keys):
        store.put(k, str(i).encode())
    got = store.scan("querycoord-replica/1/")
    assert [k for k, _ in got] == sorted(k for k in keys if k.startswith("querycoord-replica/1/"))
    assert dict(got)["querycoord-replica/1/7"] == b"0"
    assert [k for k, _ in store.scan("querycoord-replica/")] == sorted(
        k for k in keys if k.startswith("querycoord-replica/")
    )
    assert [k for k, _ in store.scan("")] == sorted(keys)
    assert store.scan("nothing-here/") == []


def test_prefix_end():
    assert prefix_end("a/") == "a0"
    assert prefix_end("") is None
    assert prefix_end("\U0010ffff") is None
    assert prefix_end("a\U0010ffff") == "b"
    assert prefix_end("\ud7ff") == "\ue000"


def test_txn_atomic(store):
    store.put("a", b"1")
    with store.txn() as t:
        t.put("b", b"2")
        t.delete("a")
        t.put("c", b"3")
        t.put("c", b"4")  # later op wins
    assert store.get("a") is None and store.get("b") == b"2" and store.get("c") == b"4"

    with pytest.raises(RuntimeError):
        with store.txn() as t:
            t.put("d", b"5")
            t.delete("b")
            raise RuntimeError("abort")
    assert store.get("d") is None and store.get("b") == b"2"


def test_compare_and_swap(store):
    assert store.compare_and_swap("k", None, b"1")  # create if absent
    assert not store.compare_and_swap("k", None, b"2")
    assert not store.compare_and_swap("k", b"0", b"2")
    assert store.compare_and_swap("k", b"1", b"2")
    assert store.get("k") == b"2"
    assert store.compare_and_swap("k", b"2", None)  # delete
    assert store.get("k") is None


def test_durable_settings_and_reopen(tmp_path):
    path = tmp_path / "sub" / "meta.db"
    with SQLiteMetaStore(path) as s:
        s.put("x", b"y")
        assert s._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    with SQLiteMetaStore(path) as s:
        assert s.get("x") == b"y"


def test_closed_store_raises(tmp_path):
    s = SQLiteMetaStore(tmp_path / "m.db")
    s.close()
    s.close()  # idempotent
    with pytest.raises(MetaStoreClosedError):
        s.get("x")


def test_threads_share_one_store(store):
    def worker(t: int) -> None:
        for i in range(100):
            store.put(f"t/{t}/{i:03d}", f"{t}:{i}".encode())
        for _ in range(50):
            while True:
                cur = store.get("counter")
                nxt = str(int(cur or b"0") + 1).encode()
                if store.compare_and_swap("counter", cur, nxt):
                    break

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.scan("t/")) == 600
    assert store.get("counter") == b"300"


@pytest.mark.slow
def test_processes_share_one_file(tmp_path):
    path = tmp_path / "shared.db"
    SQLiteMetaStore(path).close()
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {REPO!r})
        from vecgrid.storage.kv import SQLiteMetaStore
        s = SQLiteMetaStore({str(path)!r})
        for i in range(60):
            while True:
                cur = s.get("counter")
                if s.compare_and_swap("counter", cur, str(int(cur or b"0") + 1).encode()):
                    break
            s.put(f"p/{{sys.argv[1]}}/{{i}}", b"x")
        s.close()
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(n)]) for n in range(3)]
    assert [p.wait(timeout=50) for p in procs] == [0, 0, 0]
    with SQLiteMetaStore(path) as s:
        assert s.get("counter") == b"180"
        assert len(s.scan("p/")) == 180


def test_open_meta_store_factory(tmp_path):
    with open_meta_store(tmp_path / "a.db") as s:
        assert isinstance(s, SQLiteMetaStore)
        s.put("k", b"v")
    with open_meta_store(f"sqlite://{tmp_path}/a.db") as s:
        assert s.get("k") == b"v"
    with pytest.raises(MetaStoreUnavailableError, match="etcd.*not installed"):
        open_meta_store("etcd://127.0.0.1:2379/vecgrid")
    with pytest.raises(ValueError, match="unknown meta store URL scheme"):
        open_meta_store("redis://localhost")


def test_register_backend(tmp_path):
    opened = []

    def factory(url: str) -> MetaStore:
        opened.append(url)
        return SQLiteMetaStore(":memory:")

    register_meta_store_backend("fakekv", factory)
    with open_meta_store("fakekv://somewhere") as s:
        s.put("a", b"b")
        assert s.scan("a") == [("a", b"b")]
    assert opened == ["fakekv://somewhere"]
