"""What the Feathers REST framework adds to Tornado: latency and requests/s over loopback.

One server process serves, on two ports, the same 10,000 records two ways:

* **framework**: a Feathers app (``vecgrid.http.feathers``) with a memory-adapter service at
  ``people`` (query schema ``group``/``age``/``score``/``name``/``id``, pagination
  ``{default: 10, max: 100}``) behind ``make_tornado_app``: routing, ``qs`` parsing, hooks (one
  app-wide before hook, as every vecgrid service has its authorization hook), schema coercion,
  the adapter's generic matching, JSON through ``encode_json``;
* **bare**: one plain ``tornado.web.RequestHandler`` per case doing the same work by hand (a dict
  lookup; a list comprehension with the three conditions written out, the page counted and cut)
  and answering the same JSON bytes (orjson, as the framework).

Cases, each from one client with a keep-alive ``http.client.HTTPConnection``, requests one after
the other, the two servers alternating in rounds (so load on the machine hits both alike):

* ``get``: ``GET /people/<id>`` of a random existing id;
* ``find``: ``GET /people?group=<g>&age[$gte]=<a>&score[$lt]=0.5`` (three clauses; a page of 10
  and the total of about 300 matches over the 10,000 records).  The memory adapter answers the
  ``group`` clause from its equality index and scans only that group's records;
* ``scan`` (reported, not part of the targets): ``GET /people?age[$gte]=<a>&score[$lt]=0.5``, no
  clause an index can answer, so both servers scan all 10,000 records: what the framework's
  generic matching costs over a hand-written comprehension.

Reported per case: p50 latency of each server (ms), their difference ``p50_ms_over_bare`` and the
ratio of requests/s ``rps_ratio_vs_bare``; at the top level the worse of ``get`` and ``find`` of
each (targets: ≤ 0.3 ms and ≥ 0.7).

    .venv/bin/python bench/http_framework.py [--quick]

The last line is one JSON object.  Run from the repository root.  (Issue 13 calls it
``bench/http.py``; a script of that name in ``bench/`` would shadow the standard library's ``http``
package for every other script there, since a script's own directory comes first on ``sys.path``.)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import asyncio
import http.client
import json
import multiprocessing
import random
import time

RECORDS = 10_000
GROUPS = 10
PAGE = {"default": 10, "max": 100}
FIELDS = {"id": "number", "group": "number", "age": "number", "score": "number", "name": "string"}


def records() -> list[dict]:
    rng = random.Random(7)
    return [{"id": i, "group": rng.randrange(GROUPS), "age": rng.randrange(18, 80),
             "score": round(rng.random(), 4), "name": f"person-{i}"} for i in range(RECORDS)]


def find_queries(n: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(GROUPS), rng.randrange(30, 50)) for _ in range(n)]


def get_ids(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(RECORDS) for _ in range(n)]


# -- the servers (child process) -----------------------------------------------------------------

def framework_app():
    from vecgrid.http.feathers.adapters.memory import MemoryService
    from vecgrid.http.feathers.application import Application
    from vecgrid.http.feathers.rest import make_tornado_app

    app = Application()

    def authorize(ctx):  # stands for the authorization hook of vecgrid's services: one before hook
        return None

    app.hooks({"before": {"all": [authorize]}})
    app.use("people", MemoryService(paginate=PAGE, query_schema=FIELDS,
                                    store={r["id"]: r for r in records()}))
    return make_tornado_app(app)


def bare_app():
    import orjson
    import tornado.web

    by_id = {str(r["id"]): r for r in records()}
    rows = list(by_id.values())
    content_type = "application/json; charset=utf-8"

    class Get(tornado.web.RequestHandler):
        def get(self, record_id: str) -> None:
            self.set_header("Content-Type", content_type)
            self.finish(orjson.dumps(by_id[record_id]))

    class Find(tornado.web.RequestHandler):
        def get(self) -> None:
            age = int(self.get_query_argument("age[$gte]"))
            score = float(self.get_query_argument("score[$lt]"))
            group = self.get_query_argument("group", None)
            if group is None:
                found = [r for r in rows if r["age"] >= age and r["score"] < score]
            else:
                group = int(group)
                found = [r for r in rows if r["group"] == group and r["age"] >= age and r["score"] < score]
            limit = PAGE["default"]
            self.set_header("Content-Type", content_type)
            self.finish(orjson.dumps({"total": len(found), "limit": limit, "skip": 0,
                                      "data": [dict(r) for r in found[:limit]]}))

    return tornado.web.Application([(r"/people/([0-9]+)", Get), (r"/people", Find)])


def serve(ports) -> None:
    import tornado.httpserver
    import tornado.netutil

    async def main() -> None:
        bound = []
        for make in (framework_app, bare_app):
            sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
            tornado.httpserver.HTTPServer(make()).add_sockets(sockets)
            bound.append(sockets[0].getsockname()[1])
        ports.put(bound)
        await asyncio.Event().wait()

    asyncio.run(main())


# -- the client ------------------------------------------------------------------------------------

def timed_requests(port: int, paths: list[str]) -> tuple[list[float], float, list[bytes]]:
    """Latencies (s) of GETs of ``paths`` one after the other on one keep-alive connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port)
    latencies, bodies = [], []
    started = time.perf_counter()
    for path in paths:
        t = time.perf_counter()
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        latencies.append(time.perf_counter() - t)
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status} {body[:200]!r}")
        bodies.append(body)
    elapsed = time.perf_counter() - started
    connection.close()
    return latencies, elapsed, bodies


def measure(ports: dict[str, int], paths: list[str], rounds: int) -> dict:
    latencies: dict[str, list[float]] = {"framework": [], "bare": []}
    elapsed = {"framework": 0.0, "bare": 0.0}
    for name in ("framework", "bare"):   # warm both, and check they answer the same JSON
        timed_requests(ports[name], paths[:50])
    same = [json.loads(a) == json.loads(b) for a, b in zip(timed_requests(ports["framework"], paths[:20])[2],
                                                          timed_requests(ports["bare"], paths[:20])[2])]
    if not all(same):
        raise RuntimeError("the framework and the bare handler answer different JSON")
    chunk = len(paths) // rounds
    for r in range(rounds):
        part = paths[r * chunk:(r + 1) * chunk]
        order = ("framework", "bare") if r % 2 == 0 else ("bare", "framework")
        for name in order:
            lat, took, _ = timed_requests(ports[name], part)
            latencies[name] += lat
            elapsed[name] += took
    p50 = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in latencies.items()}
    rps = {k: len(latencies[k]) / elapsed[k] for k in elapsed}
    return {"p50_ms": round(p50["framework"], 4), "bare_p50_ms": round(p50["bare"], 4),
            "p50_ms_over_bare": round(p50["framework"] - p50["bare"], 4),
            "rps": round(rps["framework"], 1), "bare_rps": round(rps["bare"], 1),
            "rps_ratio_vs_bare": round(rps["framework"] / rps["bare"], 3), "requests": len(latencies["framework"])}


def run(quick: bool) -> dict:
    n_get, n_find, rounds = (4000, 600, 10) if quick else (20000, 3000, 20)
    ports_queue = multiprocessing.get_context("spawn").Queue()
    server = multiprocessing.get_context("spawn").Process(target=serve, args=(ports_queue,), daemon=True)
    server.start()
    try:
        framework_port, bare_port = ports_queue.get(timeout=60)
        ports = {"framework": framework_port, "bare": bare_port}
        get_paths = [f"/people/{i}" for i in get_ids(n_get, 1)]
        find_paths = [f"/people?group={g}&age[$gte]={a}&score[$lt]=0.5" for g, a in find_queries(n_find, 2)]
        scan_paths = [f"/people?age[$gte]={a}&score[$lt]=0.5" for _, a in find_queries(n_find, 3)]
        cases = {"get": measure(ports, get_paths, rounds), "find": measure(ports, find_paths, rounds)}
        scan = measure(ports, scan_paths, rounds)
    finally:
        server.terminate()
        server.join(10)
    return {
        "p50_ms_over_bare": max(c["p50_ms_over_bare"] for c in cases.values()),
        "rps_ratio_vs_bare": min(c["rps_ratio_vs_bare"] for c in cases.values()),
        **{f"{name}_{key}": value for name, case in {**cases, "scan": scan}.items() for key, value in case.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer requests (under 2 minutes)")
    args = ap.parse_args()
    print(json.dumps(run(args.quick)))


if __name__ == "__main__":
    main()
