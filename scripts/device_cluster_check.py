"""The GPU cluster check of scripts/device-check.sh: a stock Dask scheduler, two ``vecgrid worker``
processes with ``GPU=1`` resources and a ``vecgrid coord``, all on loopback; a collection is
created with an IVF_FLAT index, filled, flushed and loaded through REST, and the check reads back
where it is served: ``GetPartitionStates`` through the QueryCoord gRPC stub, the collection's
``partitionStates`` and the ``/segments`` placements through REST.  A search through REST must
find an inserted vector.

Prints one JSON object last (``in_gpu`` true when both doors say ``InGPU``); exit status 0 only
then.  Run from the repository root: ``python scripts/device_cluster_check.py [--rows N]``."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vecgrid.proto import query_coord_pb2, query_coord_pb2_grpc  # noqa: E402

HOST = "127.0.0.1"
SCHEDULER_PORT, COORD_PORT, HTTP_PORT = 18786, 19531, 19121
BASE = f"http://{HOST}:{HTTP_PORT}"


def rest(method: str, path: str, body: object = None, service_method: str = "", timeout: float = 120.0) -> object:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if service_method:
        req.add_header("X-Service-Method", service_method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{method} {path} answered {e.code}: {e.read()[:500]!r}") from None


def poll(what: str, check, timeout: float) -> object:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (OSError, RuntimeError) as e:
            last = e
        time.sleep(0.5)
    raise TimeoutError(f"{what}: not after {timeout} s (last: {last!r})")


def records(answer: object) -> list:
    return answer["data"] if isinstance(answer, dict) and "data" in answer else list(answer)  # type: ignore[arg-type]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--dim", type=int, default=128)
    args = ap.parse_args()
    env = dict(os.environ, VECGRID_HTTP_AUTH="off", PYTHONUNBUFFERED="1")
    py = sys.executable
    procs: list[subprocess.Popen] = []
    result: dict[str, object] = {"rows": args.rows, "dim": args.dim}
    with tempfile.TemporaryDirectory(prefix="vecgrid-device-") as tmp:
        logs = open(os.path.join(tmp, "cluster.log"), "w")  # noqa: SIM115 - read back at the end
        try:
            t0 = time.monotonic()
            procs.append(subprocess.Popen([py, "-m", "distributed.cli.dask_scheduler", "--host", HOST, "--port",
                                           str(SCHEDULER_PORT), "--no-dashboard"], env=env, stdout=logs, stderr=logs))
            sched = f"tcp://{HOST}:{SCHEDULER_PORT}"
            for i in (1, 2):
                procs.append(subprocess.Popen(
                    [py, "-m", "vecgrid.cli", "worker", "--scheduler", sched, "--name", f"gpu-{i}", "--resources",
                     "GPU=1", "--host", HOST, "--node-port", "0", "--data-dir", os.path.join(tmp, f"w{i}")],
                    env=env, stdout=logs, stderr=logs))
            procs.append(subprocess.Popen(
                [py, "-m", "vecgrid.cli", "coord", "--scheduler", sched, "--host", HOST, "--coord-port",
                 str(COORD_PORT), "--http-port", str(HTTP_PORT), "--milvus-port", "0", "--data-dir", os.path.join(tmp, "coord")],
                env=env, stdout=logs, stderr=logs))
            nodes = poll("two query nodes", lambda: len(records(rest("GET", "/nodes"))) >= 2 and
                         records(rest("GET", "/nodes")), 180)
            result["nodes"] = nodes
            result["cluster_start_s"] = round(time.monotonic() - t0, 1)

            rest("POST", "/collections", {
                "name": "gpu", "schema": {"enableDynamicField": False, "fields": [
                    {"name": "id", "type": "Int64", "isPrimary": True},
                    {"name": "vector", "type": "FloatVector", "params": {"dim": args.dim}}]},
                "indexes": [{"field": "vector", "type": "IVF_FLAT", "metric": "L2", "params": {"nlist": 256}}]})
            rng = np.random.default_rng(5)
            xb = rng.standard_normal((args.rows, args.dim)).astype(np.float32)
            t1 = time.monotonic()
            for s in range(0, args.rows, 5000):
                rows = [{"id": int(i), "vector": xb[i].round(5).tolist()} for i in range(s, min(args.rows, s + 5000))]
                rest("POST", "/collections/gpu/entities", rows)
            rest("POST", "/collections", {"name": "gpu", "wait": True}, "flush", timeout=300)
            result["insert_flush_s"] = round(time.monotonic() - t1, 1)
            t2 = time.monotonic()
            poll("the index built", lambda: all(i.get("state") == "Finished" for i in
                                                records(rest("GET", "/collections/gpu/indexes"))), 300)
            rest("POST", "/collections", {"name": "gpu", "wait": True, "timeout": 300}, "load", timeout=330)
            result["index_load_s"] = round(time.monotonic() - t2, 1)
            coll = rest("GET", "/collections/gpu")
            result["rest_partition_states"] = coll.get("partitionStates")  # type: ignore[union-attr]
            result["rest_indexes"] = rest("GET", "/collections/gpu/indexes")
            result["segments"] = [{k: s.get(k) for k in ("id", "nodes", "placements", "placement", "numRows")
                                   if k in s} for s in records(rest("GET", "/segments?collection=gpu"))]
            with grpc.insecure_channel(f"{HOST}:{COORD_PORT}") as ch:
                stub = query_coord_pb2_grpc.QueryCoordStub(ch)
                states = stub.GetPartitionStates(query_coord_pb2.GetPartitionStatesRequest(
                    collectionID=int(coll["id"])), timeout=30)  # type: ignore[index]
            result["grpc_status_code"] = states.status.code
            result["grpc_partition_states"] = [query_coord_pb2.PartitionState.Name(p.state)
                                               for p in states.partition_descriptions]
            hits = rest("POST", "/collections/gpu/entities", {"vector": xb[123].tolist(), "limit": 3}, "search")
            result["search_top_hit"] = hits[0][0] if hits and hits[0] else None  # type: ignore[index]
            grpc_gpu = result["grpc_partition_states"] == ["InGPU"]
            rest_gpu = "InGPU" in json.dumps(result["rest_partition_states"])
            result["in_gpu"] = bool(grpc_gpu and rest_gpu)
            result["search_ok"] = bool(result["search_top_hit"] and int(result["search_top_hit"]["id"]) == 123)
        except Exception as e:  # noqa: BLE001 - reported in the JSON with the processes' log tail
            result["error"] = f"{type(e).__name__}: {e}"
        finally:
            for p in reversed(procs):
                p.terminate()
            for p in reversed(procs):
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
            logs.close()
            with open(os.path.join(tmp, "cluster.log")) as f:
                log_text = f.read()
            out = os.environ.get("OUT")
            if out:
                with open(os.path.join(out, "cluster.log"), "w") as f:
                    f.write(log_text)
            if "error" in result or not result.get("in_gpu"):
                print(log_text[-6000:])
    print(json.dumps(result, default=str))
    return 0 if result.get("in_gpu") and result.get("search_ok") else 1


if __name__ == "__main__":
    sys.exit(main())
