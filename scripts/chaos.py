"""The fault suite: a cluster-mode cluster on loopback under writes and reads while its processes are
killed, stopped and restarted; every write is recorded, and the final read must match the record.

The cluster: a stock Dask scheduler, ``--workers`` ``vecgrid worker`` processes (each a nanny and its
worker) and a ``vecgrid coord``, each in its own process group, on 127.0.0.1.  One collection
(``chaos``: an Int64 key, an 8-dim vector, ``year``; 2 shards) loaded with 2 replicas.

The load, all the time:

* writers, each owning the keys it inserts (so that its own operations on a key are ordered):
  inserts of fresh keys (never reused, never retried with the same keys) through REST and through
  the coordinator's gRPC ``vecgrid.write.WriteService``, patches and deletes of keys it inserted;
* a reader: searches through REST, each retried once on failure after 1 s (a client's backoff).

Every write is recorded as *acknowledged* (2xx, or a gRPC Status 0), *failed* (a 4xx: refused,
nothing written), or *indeterminate* (a 5xx, a timeout, a broken connection: it may or may not
have happened).

The faults (``--short`` runs the first and the coordinator's, as CI does): kill -9 of a worker (its
nanny restarts it); kill -9 of a worker and its nanny, started again; SIGSTOP of a worker for 20 s; a
flush in flight during a worker kill; kill -9 of the coordinator, started again on the same data
dir; a compaction in flight during a worker kill.

Then, once the collection is fully loaded again, every key is read back (Strong):

* ``lost``: acknowledged inserts whose key is missing, less those with an indeterminate delete;
* ``resurrected``: keys of acknowledged deletes that are there;
* ``duplicates``: keys that come back more than once;
* ``phantoms``: keys there that no insert tried, or only refused inserts.

All four must be 0 (exit status 1 otherwise).  Measured too: the longest run of failed reads (first
try) after each worker fault, the reads' success rate with one retry, and how long after the
coordinator's restart writes succeed again.

Last (full run only), kill -9 of the scheduler for 10 s, started again on its address: the reads' and
writes' success while it is down (neither needs the scheduler: the query nodes outlive it), how long
until every worker is back on the new scheduler with the same process and node, then a worker kill
that the new scheduler must handle.  The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import psutil
import pyarrow as pa
import requests

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grpc  # noqa: E402

from vecgrid.cluster.proxy.rows import encode_table  # noqa: E402
from vecgrid.proto import write_service_pb2, write_service_pb2_grpc  # noqa: E402

HOST = "127.0.0.1"
DIM = 8
COLLECTION = "chaos"
REQUEST_TIMEOUT_S = 15.0
RETRY_AFTER_S = 1.0
ALL_FAULTS = ("kill_worker", "kill_worker_and_nanny", "sigstop_worker_20s", "flush_in_flight_kill_worker",
              "compaction_in_flight_kill_worker", "kill_coordinator", "kill_scheduler_10s")
SHORT_FAULTS = ("kill_worker", "kill_coordinator")
PY = sys.executable


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports, for servers restarted on the same address (otherwise pass port 0 and
    read the address back): every socket stays bound until all are picked, since the kernel may hand
    out a just-closed port again."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in socks]



class Cluster:
    """The processes, each in its own session (kill -9 of a group takes a nanny with its worker)."""

    def __init__(self, root: str, workers: int) -> None:
        self.root = root
        self.sched_port, self.coord_port, self.http_port = free_ports(3)
        self.scheduler_address = f"tcp://{HOST}:{self.sched_port}"
        self.workers = [f"w{i}" for i in range(workers)]
        self.procs: dict[str, subprocess.Popen] = {}
        self.log = open(os.path.join(root, "cluster.log"), "ab")  # noqa: SIM115 - open for the run
        self.env = dict(os.environ, VECGRID_HTTP_AUTH="off", PYTHONUNBUFFERED="1")

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.http_port}"

    def _start(self, name: str, argv: list[str]) -> None:
        self.procs[name] = subprocess.Popen(argv, env=self.env, stdout=self.log, stderr=self.log,
                                            start_new_session=True)

    def start_scheduler(self) -> None:
        self._start("scheduler", [PY, "-m", "distributed.cli.dask_scheduler", "--host", HOST, "--port",
                                  str(self.sched_port), "--no-dashboard"])

    def start_worker(self, name: str) -> None:
        self._start(name, [PY, "-m", "vecgrid.cli", "worker", "--scheduler", self.scheduler_address, "--name", name,
                           "--host", HOST, "--node-port", "0", "--nthreads", "2",
                           "--data-dir", os.path.join(self.root, name)])

    def start_coord(self) -> None:
        self._start("coord", [PY, "-m", "vecgrid.cli", "coord", "--scheduler", self.scheduler_address,
                              "--host", HOST, "--coord-port", str(self.coord_port), "--http-port",
                              str(self.http_port), "--milvus-port", "0", "--data-dir", os.path.join(self.root, "coord")])

    def start(self) -> None:
        self.start_scheduler()
        time.sleep(1.0)
        for w in self.workers:
            self.start_worker(w)
        self.start_coord()

    def kill_group(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        if sig == signal.SIGKILL:
            proc.wait(30)

    def kill_worker_process(self, name: str) -> int:
        """kill -9 of the worker process under a nanny (the nanny starts a new one); its pid."""
        deadline = time.monotonic() + 60
        while True:  # the nanny may still be starting it (after an earlier kill)
            for child in psutil.Process(self.procs[name].pid).children(recursive=True):
                try:
                    if child.status() != psutil.STATUS_ZOMBIE and "multiprocessing" in " ".join(child.cmdline()):
                        child.kill()
                        return child.pid
                except psutil.Error:  # gone meanwhile, or a zombie
                    continue
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name} has no live worker process to kill")
            time.sleep(0.5)

    def worker_pids(self) -> dict[str, list[int]]:
        """The live worker processes under each nanny."""
        pids: dict[str, list[int]] = {}
        for name in self.workers:
            try:
                children = psutil.Process(self.procs[name].pid).children(recursive=True)
            except psutil.Error:
                children = []
            pids[name] = sorted(c.pid for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE)
        return pids

    def stop(self) -> None:
        for name in list(self.procs):
            self.kill_group(name, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for name in list(self.procs):
            self.kill_group(name)
        self.log.close()


@dataclass
class History:
    """Every write and its outcome; every read attempt.  One lock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    writes: list[tuple[str, tuple[int, ...], str, float]] = field(default_factory=list)
    reads: list[tuple[float, bool, bool]] = field(default_factory=list)  # (t, first try ok, ok after retry)

    def write(self, op: str, keys: list[int], outcome: str) -> None:
        with self.lock:
            self.writes.append((op, tuple(keys), outcome, time.monotonic()))

    def read(self, t: float, first: bool, retried: bool) -> None:
        with self.lock:
            self.reads.append((t, first, retried))


def outcome_of_http(resp: requests.Response | None) -> str:
    if resp is None or resp.status_code >= 500:
        return "indeterminate"
    return "acknowledged" if resp.status_code < 300 else "failed"


class Writer(threading.Thread):
    """Inserts fresh keys (REST, or gRPC when ``grpc_address`` is given), patches and deletes its own."""

    def __init__(self, index: int, cluster: Cluster, history: History, stop: threading.Event, use_grpc: bool,
                 seed: int) -> None:
        super().__init__(name=f"writer-{index}", daemon=True)
        self.index, self.cluster, self.history, self.stop_event = index, cluster, history, stop
        self.use_grpc = use_grpc
        self.rng = random.Random(seed)
        self.next_key = index * 10_000_000
        self.live: list[int] = []   # keys this writer inserted (acknowledged) and has not deleted
        self.session = requests.Session()
        # one channel for the writer's life: it reconnects by itself after the coordinator's restart
        self.channel = grpc.insecure_channel(f"{HOST}:{cluster.coord_port}")
        self.writes = write_service_pb2_grpc.WriteServiceStub(self.channel)

    def fresh(self, n: int) -> list[int]:
        keys = list(range(self.next_key, self.next_key + n))
        self.next_key += n
        return keys

    def rows(self, keys: list[int]) -> list[dict]:
        return [{"id": k, "vector": [self.rng.random() for _ in range(DIM)], "year": 2000 + k % 30} for k in keys]

    def http(self, method: str, path: str, **kw) -> requests.Response | None:
        try:
            return self.session.request(method, self.cluster.base + path, timeout=REQUEST_TIMEOUT_S, **kw)
        except requests.RequestException:
            return None

    def insert_grpc(self, keys: list[int]) -> str:
        table = pa.table({"id": pa.array(keys, pa.int64()),
                          "vector": pa.array([r["vector"] for r in self.rows(keys)], pa.list_(pa.float32())),
                          "year": pa.array([2000 + k % 30 for k in keys], pa.int64())})
        try:
            reply = self.writes.Insert(write_service_pb2.InsertRequest(collection_name=COLLECTION,
                                                                       rows=encode_table(table)),
                                       timeout=REQUEST_TIMEOUT_S)
        except grpc.RpcError:
            return "indeterminate"
        if reply.status.code == 0:
            return "acknowledged"
        # a refusal before the write (bad input, quota) is failed; anything else may have happened
        return "failed" if reply.status.code in (1100, 1101, 1102, 9, 100) else "indeterminate"

    def run(self) -> None:
        while not self.stop_event.is_set():
            roll = self.rng.random()
            if roll < 0.7 or len(self.live) < 10:
                keys = self.fresh(self.rng.choice([1, 5, 20]))
                if self.use_grpc and self.rng.random() < 0.5:
                    outcome, op = self.insert_grpc(keys), "insert-grpc"
                else:
                    outcome = outcome_of_http(self.http("POST", f"/collections/{COLLECTION}/entities",
                                                        json=self.rows(keys)))
                    op = "insert"
                self.history.write(op, keys, outcome)
                if outcome == "acknowledged":
                    self.live.extend(keys)
            elif roll < 0.85:
                key = self.live.pop(self.rng.randrange(len(self.live)))
                outcome = outcome_of_http(self.http("DELETE", f"/collections/{COLLECTION}/entities/{key}"))
                self.history.write("delete", [key], outcome)
                if outcome == "failed":  # refused: the row is still there and still this writer's
                    self.live.append(key)
            else:
                key = self.rng.choice(self.live)
                outcome = outcome_of_http(self.http("PATCH", f"/collections/{COLLECTION}/entities/{key}",
                                                    json={"year": self.rng.randrange(1900, 2100)}))
                self.history.write("patch", [key], outcome)
            time.sleep(0.02)
        self.channel.close()


class Reader(threading.Thread):
    def __init__(self, cluster: Cluster, history: History, stop: threading.Event) -> None:
        super().__init__(name="reader", daemon=True)
        self.cluster, self.history, self.stop_event = cluster, history, stop
        self.session = requests.Session()

    def search(self) -> bool:
        try:
            resp = self.session.post(f"{self.cluster.base}/collections/{COLLECTION}/entities",
                                     headers={"X-Service-Method": "search"},
                                     json={"vector": [0.5] * DIM, "limit": 5}, timeout=5)
            return resp.status_code == 200
        except requests.RequestException:
            return False

    def run(self) -> None:
        while not self.stop_event.is_set():
            t = time.monotonic()
            first = self.search()
            if not first:
                time.sleep(RETRY_AFTER_S)  # a client's one retry, after a backoff
            retried = first or self.search()
            self.history.read(t, first, retried)
            time.sleep(0.05)


def wait_until(what: str, check, timeout: float, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (requests.RequestException, KeyError, ValueError, TypeError) as e:
            last = e
        time.sleep(interval)
    raise TimeoutError(f"{what}: not within {timeout} s (last: {last!r})")


def loaded(cluster: Cluster) -> bool:
    colls = requests.get(f"{cluster.base}/collections", timeout=10).json()
    return any(c["name"] == COLLECTION and c.get("loadPercent") == 100 for c in colls)


def nodes_up(cluster: Cluster, n: int) -> bool:
    resp = requests.get(f"{cluster.base}/nodes", timeout=10)
    if not resp.ok:
        return False
    answer = resp.json()
    records = answer["data"] if isinstance(answer, dict) else answer
    return len([r for r in records if r.get("state") == "normal"]) >= n


def replica_nodes(cluster: Cluster) -> list[list[int]] | str:
    """The query nodes of each replica of the collection, as the coordinator reports them."""
    try:
        answer = requests.get(f"{cluster.base}/replicas", timeout=10).json()
    except (requests.RequestException, ValueError) as e:
        return f"unknown: {e}"
    records = answer["data"] if isinstance(answer, dict) else answer
    return [sorted(r.get("nodes", [])) for r in records if r.get("collection") == COLLECTION]


def longest_read_gap(history: History, t0: float, t1: float) -> float:
    """The longest span of consecutive failed first tries between ``t0`` and ``t1`` (seconds)."""
    with history.lock:
        reads = [r for r in history.reads if t0 <= r[0] <= t1]
    longest, start = 0.0, None
    for t, first, _ in reads:
        if not first and start is None:
            start = t
        elif first and start is not None:
            longest, start = max(longest, t - start), None
    if start is not None:
        longest = max(longest, t1 - start)
    return round(longest, 2)


def first_write_after(history: History, t0: float) -> float | None:
    with history.lock:
        times = [t for _, _, outcome, t in history.writes if outcome == "acknowledged" and t > t0]
    return round(min(times) - t0, 2) if times else None


def read_all_keys(cluster: Cluster) -> list[int]:
    keys: list[int] = []
    last = -1
    while True:
        resp = requests.get(f"{cluster.base}/collections/{COLLECTION}/entities", timeout=60, params={
            "id[$gt]": last, "$sort[id]": 1, "$limit": 10_000, "$select[]": "id"})
        resp.raise_for_status()
        page = resp.json()
        rows = page["data"] if isinstance(page, dict) else page
        if not rows:
            return keys
        keys.extend(int(r["id"]) for r in rows)
        last = keys[-1]


def verify(history: History, present: list[int]) -> dict[str, object]:
    acked_insert, tried_insert, acked_delete, unsure_delete = set(), set(), set(), set()
    for op, keys, outcome, _ in history.writes:
        if op.startswith("insert"):
            if outcome != "failed":
                tried_insert.update(keys)
            if outcome == "acknowledged":
                acked_insert.update(keys)
        elif op == "delete":
            if outcome == "acknowledged":
                acked_delete.update(keys)
            elif outcome == "indeterminate":
                unsure_delete.update(keys)
    there = set(present)
    return {
        "acknowledged_inserts": len(acked_insert), "acknowledged_deletes": len(acked_delete),
        "indeterminate_writes": sum(1 for w in history.writes if w[2] == "indeterminate"),
        "failed_writes": sum(1 for w in history.writes if w[2] == "failed"),
        "rows_read": len(present),
        "lost": sorted(acked_insert - acked_delete - unsure_delete - there)[:20],
        "resurrected": sorted(acked_delete & there)[:20],
        "duplicates": len(present) - len(there),
        "phantoms": sorted(there - tried_insert)[:20],
    }


def on_new_scheduler(cluster: Cluster) -> int:
    """How many workers the (restarted) scheduler has that run a query node (a Dask client of its own)."""
    from distributed import Client

    with Client(cluster.scheduler_address, timeout=5) as client:
        answers = client.run(lambda dask_worker: "vecgrid-querynode" in dask_worker.plugins, on_error="ignore")
    return sum(1 for v in answers.values() if v is True)


def scheduler_fault(cluster: Cluster, history: History) -> dict[str, object]:
    """kill -9 of the scheduler for 10 s under the writes and reads, then started again on its address:
    the reads and writes while it is down; how long until every worker is back on it with its query node
    (the same worker processes: their nodes outlived the scheduler); then kill -9 of a worker, whose
    replacement must join the new scheduler, get the plugin the coordinator registers again, and be
    loaded (the final read waits for it)."""
    pids = cluster.worker_pids()
    t0 = time.monotonic()
    cluster.kill_group("scheduler")
    time.sleep(10)
    t_restart = time.monotonic()
    with history.lock:
        reads = [r for r in history.reads if t0 <= r[0] <= t_restart]
        writes = [w for w in history.writes if t0 <= w[3] <= t_restart]
    cluster.start_scheduler()
    try:
        wait_until("every worker on the restarted scheduler with its query node",
                   lambda: on_new_scheduler(cluster) == len(cluster.workers), 120, interval=1.0)
        rejoined_after_s = round(time.monotonic() - t_restart, 1)
    except TimeoutError:
        rejoined_after_s = None
    kept = cluster.worker_pids() == pids
    cluster.kill_worker_process(cluster.workers[0])
    return {"read_success_while_down": round(sum(r[2] for r in reads) / max(1, len(reads)), 4),
            "reads_while_down": len(reads),
            "write_success_while_down": round(sum(w[2] == "acknowledged" for w in writes) / max(1, len(writes)), 4),
            "writes_while_down": len(writes),
            "rejoined_after_s": rejoined_after_s, "worker_processes_kept": kept,
            "recovered": rejoined_after_s is not None and kept}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true", help="two faults, as CI runs it (a few minutes)")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the data dir and the cluster log")
    ap.add_argument("--faults", metavar="A,B", help=f"only these faults, in this order: {', '.join(ALL_FAULTS)}")
    args = ap.parse_args()
    chosen = args.faults.split(",") if args.faults else list(SHORT_FAULTS if args.short else ALL_FAULTS)
    unknown = sorted(set(chosen) - set(ALL_FAULTS))
    if unknown:
        ap.error(f"unknown faults {unknown}")
    root = tempfile.mkdtemp(prefix="vecgrid-chaos-")
    cluster = Cluster(root, args.workers)
    history = History()
    stop = threading.Event()
    result: dict[str, object] = {"short": args.short, "workers": args.workers, "seed": args.seed, "faults_run": chosen}
    faults: dict[str, object] = {}
    settle = 10 if args.short else 20
    t_start = time.monotonic()
    try:
        cluster.start()
        wait_until("the coordinator's REST port", lambda: requests.get(f"{cluster.base}/collections", timeout=5).ok,
                   120)
        wait_until(f"{args.workers} query nodes", lambda: nodes_up(cluster, args.workers), 120)
        resp = requests.post(f"{cluster.base}/collections", timeout=180, json={
            "name": COLLECTION, "dimension": DIM, "metric": "L2", "shards": 2, "load": True, "replicas": 2})
        resp.raise_for_status()
        wait_until("the collection loaded", lambda: loaded(cluster), 120)
        threads = [Writer(i, cluster, history, stop, use_grpc=(i == 0), seed=args.seed * 100 + i) for i in range(2)]
        threads.append(Reader(cluster, history, stop))
        for t in threads:
            t.start()
        time.sleep(settle)

        def worker_fault(name: str, action) -> None:
            before = replica_nodes(cluster)
            t0 = time.monotonic()
            action()
            time.sleep(settle)
            faults[name] = {"longest_failed_reads_s": longest_read_gap(history, t0, time.monotonic()),
                            "replica_nodes_before": before}

        def kill_and_restart_nanny() -> None:
            cluster.kill_group(cluster.workers[1])
            time.sleep(5)
            cluster.start_worker(cluster.workers[1])

        def stop_for_20s() -> None:
            cluster.kill_group(cluster.workers[2], signal.SIGSTOP)
            time.sleep(20)
            cluster.kill_group(cluster.workers[2], signal.SIGCONT)

        def in_flight_then_kill(method: str, worker: str) -> None:
            requests.post(f"{cluster.base}/collections", headers={"X-Service-Method": method},
                          json={"name": COLLECTION, "wait": False}, timeout=30)
            cluster.kill_worker_process(worker)

        def kill_coordinator() -> None:
            t0 = time.monotonic()
            cluster.kill_group("coord")
            cluster.start_coord()
            wait_until("the restarted coordinator's REST port",
                       lambda: requests.get(f"{cluster.base}/collections", timeout=5).ok, 120)
            time.sleep(settle)
            faults["kill_coordinator"] = {"writes_again_after_s": first_write_after(history, t0),
                                          "longest_failed_reads_s": longest_read_gap(history, t0, time.monotonic())}

        def kill_scheduler() -> None:
            faults["kill_scheduler_10s"] = scheduler_fault(cluster, history)
            time.sleep(settle)

        plan = {
            "kill_worker": lambda: worker_fault("kill_worker", lambda: cluster.kill_worker_process(cluster.workers[0])),
            "kill_worker_and_nanny": lambda: worker_fault("kill_worker_and_nanny", kill_and_restart_nanny),
            "sigstop_worker_20s": lambda: worker_fault("sigstop_worker_20s", stop_for_20s),
            "flush_in_flight_kill_worker": lambda: worker_fault(
                "flush_in_flight_kill_worker", lambda: in_flight_then_kill("flush", cluster.workers[0])),
            "compaction_in_flight_kill_worker": lambda: worker_fault(
                "compaction_in_flight_kill_worker", lambda: in_flight_then_kill("compact", cluster.workers[1])),
            "kill_coordinator": kill_coordinator,
            "kill_scheduler_10s": kill_scheduler,
        }
        for name in chosen:
            if name in plan:
                plan[name]()

        stop.set()
        for t in threads:
            t.join(60)
        wait_until(f"{args.workers} query nodes again", lambda: nodes_up(cluster, args.workers), 180)
        wait_until("the collection fully loaded again", lambda: loaded(cluster), 180)
        present = read_all_keys(cluster)
        result.update(verify(history, present))
        with history.lock:
            reads = list(history.reads)
        result["reads"] = len(reads)
        result["read_success_first_try"] = round(sum(r[1] for r in reads) / max(1, len(reads)), 4)
        result["read_success_with_one_retry"] = round(sum(r[2] for r in reads) / max(1, len(reads)), 4)
        result["faults"] = faults
    except Exception as e:  # noqa: BLE001 - reported in the JSON, with the log's tail
        result["error"] = f"{type(e).__name__}: {e}"
    finally:
        stop.set()
        cluster.stop()
        result["seconds"] = round(time.monotonic() - t_start, 1)
    ok = "error" not in result and not result["lost"] and not result["resurrected"] and not result["duplicates"] \
        and not result["phantoms"] and all(f.get("recovered", True) for f in faults.values())
    result["ok"] = ok
    if not ok or args.keep:
        with open(os.path.join(root, "cluster.log"), "rb") as f:
            print(f.read()[-8000:].decode("utf-8", "replace"))
        print(f"data dir and log kept: {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
