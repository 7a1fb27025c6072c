"""Tests for vecgrid.storage.tso: hybrid timestamps, the TSO and the ID allocator."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import datetime, timezone

import pytest

from vecgrid.storage.kv import SQLiteMetaStore
from vecgrid.storage.tso import (
    MAX_LOGICAL,
    AllocatorConflictError,
    IDAllocator,
    TimestampOracle,
    compose_ts,
    parse_ts,
    physical_ms_now,
)

pytestmark = pytest.mark.timeout(60)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FakeClock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def test_compose_parse_roundtrip():
    now = physical_ms_now()
    ts = compose_ts(now, 12345)
    assert ts == (now << 18) | 12345
    assert parse_ts(ts) == (now, 12345)
    assert parse_ts(compose_ts(0, MAX_LOGICAL - 1)) == (0, MAX_LOGICAL - 1)
    # 2023-06-01T00:00:00Z, logical 7: the physical part reads back as that date.
    june = compose_ts(1_685_577_600_000, 7)
    assert june == 441_864_054_374_400_007
    utc = timezone.utc
    assert datetime.fromtimestamp(parse_ts(june)[0] / 1000, tz=utc) == datetime(2023, 6, 1, tzinfo=utc)
    with pytest.raises(ValueError):
        compose_ts(now, MAX_LOGICAL)
    with pytest.raises(ValueError):
        compose_ts(-1, 0)
    with pytest.raises(ValueError):
        parse_ts(-1)


def test_allocate_strictly_increasing_and_batches(store):
    tso = TimestampOracle(store)
    seen = [tso.allocate() for _ in range(2000)]
    assert all(b > a for a, b in zip(seen, seen[1:]))
    first = tso.allocate(100)
    nxt = tso.allocate()
    assert nxt >= first + 100  # the whole batch [first, first+100) was reserved
    assert parse_ts(first)[0] == parse_ts(first + 99)[0]  # a batch stays within one millisecond
    assert abs(parse_ts(nxt)[0] - physical_ms_now()) < 5000
    with pytest.raises(ValueError):
        tso.allocate(0)
    with pytest.raises(ValueError):
        tso.allocate(MAX_LOGICAL + 1)


def test_logical_overflow_and_clock_going_back(store):
    clock = FakeClock(1_700_000_000_000)
    tso = TimestampOracle(store, clock=clock)
    a = tso.allocate(MAX_LOGICAL - 10)
    b = tso.allocate(100)  # does not fit in this millisecond: moves on without waiting
    assert b > a + MAX_LOGICAL - 10 - 1
    assert parse_ts(b) == (clock.now + 1, 0)
    clock.now -= 60_000  # clock jumps back a minute
    c = tso.allocate()
    assert c > b
    clock.now += 120_000
    d = tso.allocate()
    assert parse_ts(d) == (clock.now, 0)


def test_window_is_persisted_before_use(store):
    clock = FakeClock(1_700_000_000_000)
    tso = TimestampOracle(store, key="tso/t", window_ms=3000, clock=clock)
    ts = tso.allocate()
    assert int(store.get("tso/t")) == parse_ts(ts)[0] + 3000
    clock.now += 2999
    tso.allocate()
    assert int(store.get("tso/t")) == 1_700_000_000_000 + 3000  # still inside the window: no write
    clock.now += 1
    ts = tso.allocate()
    assert int(store.get("tso/t")) == parse_ts(ts)[0] + 3000


def test_threads(store):
    tso = TimestampOracle(store)
    results: list[list[int]] = [[] for _ in range(4)]

    def run(i: int) -> None:
        for _ in range(3000):
            results[i].append(tso.allocate())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for per in results:
        assert all(b > a for a, b in zip(per, per[1:]))
    everything = [x for per in results for x in per]
    assert len(set(everything)) == len(everything)


def test_monotonic_across_reopen_even_if_clock_went_back(tmp_path):
    path = tmp_path / "meta.db"
    clock = FakeClock(1_700_000_000_000)
    with SQLiteMetaStore(path) as s:
        tso = TimestampOracle(s, clock=clock)
        last = max(tso.allocate() for _ in range(1000))
    clock.now -= 3_600_000  # an hour earlier after the restart
    with SQLiteMetaStore(path) as s:
        tso = TimestampOracle(s, clock=clock)
        assert tso.allocate() > last


def test_two_oracles_on_one_key_conflict(store):
    clock = FakeClock(1_700_000_000_000)
    a = TimestampOracle(store, clock=clock, window_ms=10)
    b = TimestampOracle(store, clock=clock, window_ms=10)
    clock.now += 1000
    b.allocate()
    with pytest.raises(AllocatorConflictError):
        a.allocate()  # its window ran out and the key is no longer what it wrote


_CHILD_TSO = """
import sys
sys.path.insert(0, {repo!r})
from vecgrid.storage.kv import SQLiteMetaStore
from vecgrid.storage.tso import TimestampOracle, IDAllocator
s = SQLiteMetaStore({db!r})
tso = TimestampOracle(s)
ids = IDAllocator(s, "id/segment", block_size=50)
while True:
    print(tso.allocate(), ids.allocate(), flush=True)
"""


def _run_and_kill(tmp_path, min_lines: int) -> list[tuple[int, int]]:
    db = str(tmp_path / "meta.db")
    script = _CHILD_TSO.format(repo=REPO, db=db)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    lines = []
    deadline = time.monotonic() + 30
    while len(lines) < min_lines and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
    os.kill(proc.pid, signal.SIGKILL)
    rest, _ = proc.communicate(timeout=10)
    lines.extend(rest.splitlines())
    assert proc.returncode == -signal.SIGKILL
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) == 2:  # the last line may be cut off by the kill
            out.append((int(parts[0]), int(parts[1])))
    assert len(out) >= min_lines - 1
    return out


@pytest.mark.slow
def test_monotonic_across_kill_9(tmp_path):
    handed_out = _run_and_kill(tmp_path, min_lines=3000)
    max_ts = max(ts for ts, _ in handed_out)
    max_id = max(i for _, i in handed_out)
    ids = [i for _, i in handed_out]
    assert all(b > a for a, b in zip(ids, ids[1:]))
    # Restart with a clock stuck far in the past: only the persisted window keeps us ahead.
    with SQLiteMetaStore(tmp_path / "meta.db") as s:
        tso = TimestampOracle(s, clock=lambda: 0)
        assert tso.allocate() > max_ts
        alloc = IDAllocator(s, "id/segment", block_size=50)
        assert alloc.allocate() > max_id


def test_id_allocator(store):
    alloc = IDAllocator(store, "id/collection", block_size=10, start=100)
    got = [alloc.allocate() for _ in range(25)]
    assert got == list(range(100, 125))
    first = alloc.allocate(30)  # larger than a block
    assert first >= 125
    assert alloc.allocate() >= first + 30
    again = IDAllocator(store, "id/collection", block_size=10)
    assert again.allocate() > max(got + [first + 29])
    with pytest.raises(ValueError):
        alloc.allocate(0)


def test_id_allocator_tells_ids_it_handed_out(store):
    alloc = IDAllocator(store, "id/segment", block_size=10, start=100)
    assert not alloc.handed_out(100)                      # nothing reserved yet
    first = alloc.allocate()
    assert alloc.handed_out(first) and not alloc.handed_out(first + 1)   # the rest of the block waits
    assert not alloc.handed_out(99) and not alloc.handed_out(10_000)
    other = IDAllocator(store, "id/segment", block_size=10)  # another process's allocator of the key
    theirs = other.allocate()
    assert alloc.handed_out(theirs) and other.handed_out(first) and not other.handed_out(theirs + 1)


def test_id_allocators_sharing_a_key_never_collide(store):
    allocs = [IDAllocator(store, "id/shared", block_size=7) for _ in range(3)]
    results: list[list[int]] = [[] for _ in allocs]

    def run(i: int) -> None:
        for _ in range(300):
            results[i].append(allocs[i].allocate())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for per in results:
        assert all(b > a for a, b in zip(per, per[1:]))
    everything = [x for per in results for x in per]
    assert len(set(everything)) == len(everything) == 900


@pytest.mark.slow
def test_id_allocator_across_processes(tmp_path):
    db = tmp_path / "ids.db"
    SQLiteMetaStore(db).close()
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {REPO!r})
        from vecgrid.storage.kv import SQLiteMetaStore
        from vecgrid.storage.tso import IDAllocator
        s = SQLiteMetaStore({str(db)!r})
        a = IDAllocator(s, "id/p", block_size=5)
        print(" ".join(str(a.allocate()) for _ in range(100)))
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=50)[0] for p in procs]
    ids = [int(x) for out in outs for x in out.split()]
    assert len(ids) == 300 and len(set(ids)) == 300
