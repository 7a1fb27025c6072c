"""Schemathesis against the real vecgrid REST app (a two-worker cluster, auth on), from its own
``GET /openapi.json``: every operation — the Feathers services, the plain routes (``/health``,
``/version``, ``/metrics``, ``/docs``) and every Milvus REST v2 action — gets a bounded run of generated
requests as an admin.  None may be answered with a 5xx, and every answer must fit the response the
document declares for its status (``response_schema_conformance``).  Then every operation whose
document constrains something gets a few negative cases (bodies, parameters and headers that break
it), which must be refused without a 5xx.

Custom methods share their service's ``POST``; each is also run on its own through
:func:`~vecgrid.http.feathers.openapi.method_document` (the header fixed to the method, its body
alone), so their bodies and results are checked method by method.

Left out: ``users`` and ``authentication`` (a generated logout or self-removal would end the run's
own session; the Feathers framework's fuzz run, tests/test_openapi_fuzz.py, covers them), and the
admin operations that move data between nodes or take a node out (``PATCH /nodes/{id}``, segment and
channel ``transfer``, ``transferNode``, LoadBalance): a request they accept leaves the cluster
rebalancing, and reads during a move are rightly answered 503 (retriable).  Seeded collections give
item operations something to reach."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import hypothesis
import pytest
import pytest_asyncio
import requests

from tests.conftest import secured_settings
from vecgrid.deploy import EmbeddedCluster

pytestmark = [pytest.mark.slow, pytest.mark.fuzz]

EXAMPLES = 6            # positive cases per operation (derandomized: the same every run)
NEGATIVE_EXAMPLES = 3   # cases that break the document, per operation that constrains something
ADMIN, PASSWORD = "admin@x.io", "correct horse battery"
LEFT_OUT = ("/users", "/authentication")
# (verb, path, custom method or None) not fuzzed: see the module doc
DISRUPTIVE = {("PATCH", "/nodes/{id}", None), ("POST", "/segments", "transfer"), ("POST", "/channels", "transfer"),
              ("POST", "/resource-groups", "transferNode"), ("POST", "/balance", None)}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(tmp_path_factory):
    cluster = EmbeddedCluster(secured_settings(tmp_path_factory.mktemp("data"), ADMIN, PASSWORD))
    await asyncio.wait_for(cluster.start(), 120)
    try:
        yield cluster
    finally:
        await asyncio.wait_for(cluster.stop(), 60)


def _login(base: str) -> str:
    req = urllib.request.Request(f"{base}/authentication", method="POST", headers={"Content-Type": "application/json"},
                                 data=json.dumps({"strategy": "local", "email": ADMIN, "password": PASSWORD}).encode())
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["accessToken"]


def _seed(session: requests.Session, base: str) -> None:
    for name in ("fuzz", "x"):
        session.post(f"{base}/collections", json={"name": name, "dimension": 4, "metric": "L2", "load": True},
                     timeout=120)
    session.post(f"{base}/collections/fuzz/entities", json=[{"id": i, "vector": [i, 1, 2, 3]} for i in range(20)],
                 timeout=60)


def fuzz_the_app(base: str) -> tuple[dict[str, str], dict[str, int]]:
    import schemathesis
    from schemathesis import GenerationMode, checks

    from vecgrid.http.feathers.openapi import method_document

    token = _login(base)
    headers = {"Authorization": f"Bearer {token}"}
    failures: dict[str, str] = {}
    counts: dict[str, int] = {}
    with requests.Session() as session:
        session.headers.update(headers)
        _seed(session, base)
        document = session.get(f"{base}/openapi.json", timeout=30).json()
        runs = []   # (label, operation)
        for operation in (r.ok() for r in schemathesis.openapi.from_dict(document).get_all_operations()):
            if operation.path.startswith(LEFT_OUT) or (operation.method.upper(), operation.path, None) in DISRUPTIVE:
                continue
            runs.append((f"{operation.method.upper()} {operation.path}", operation))
        for path, item in document["paths"].items():
            for name in item.get("post", {}).get("x-feathers-methods", {}):
                if path.startswith(LEFT_OUT) or ("POST", path, name) in DISRUPTIVE:
                    continue
                (operation,) = [r.ok() for r in schemathesis.openapi.from_dict(
                    method_document(document, path, name)).get_all_operations()]
                runs.append((f"POST {path} ({name})", operation))
        assert len(runs) >= 80, [label for label, _ in runs]
        plans = [(label, op, GenerationMode.POSITIVE) for label, op in runs]
        plans += [(f"negative {label}", op, GenerationMode.NEGATIVE) for label, op in runs if _negatable(op)]
        for label, operation, mode in plans:
            counts[label] = 0
            try:
                _run(operation, label, base, session, headers, counts, mode, checks)
            except Exception as error:  # noqa: BLE001 - every operation is reported
                failures[label] = repr(error)[:2000]
    return failures, counts


def _negatable(operation) -> bool:
    """Whether the document constrains something a negative case can break (not only a body of any
    JSON: Hypothesis would search in vain)."""
    body = operation.definition.raw.get("requestBody", {}).get("content", {}).get("application/json", {})
    return bool(list(operation.query) or body.get("schema") not in (None, {}))


def _run(operation, label, base, session, headers, counts, mode, checks) -> None:
    positive = mode.value == "positive"

    @hypothesis.settings(max_examples=EXAMPLES if positive else NEGATIVE_EXAMPLES, deadline=None, database=None,
                         derandomize=True, suppress_health_check=list(hypothesis.HealthCheck),
                         phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate])
    @hypothesis.given(case=operation.as_strategy(mode))
    def run(case):
        counts[label] += 1
        case.call_and_validate(base_url=base, session=session, headers=headers,
                               checks=[checks.not_a_server_error, checks.response_schema_conformance] if positive
                               else [checks.not_a_server_error])

    run()


@pytest.mark.asyncio(loop_scope="module")
async def test_schemathesis_finds_no_server_error_on_the_vecgrid_app(cluster):
    failures, counts = await asyncio.to_thread(fuzz_the_app, cluster.addresses.http)
    assert not failures, "\n\n".join(f"{label}:\n{error}" for label, error in failures.items())
    assert all(n > 0 for n in counts.values()), counts
