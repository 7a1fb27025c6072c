"""Schemathesis against the conformance app over loopback: no 5xx, no response outside its schema.

The document is fetched from the server's own ``GET /openapi.json`` (so the endpoint is under test
too) and every operation gets a bounded Hypothesis run of positive cases (``EXAMPLES`` each), checked
with ``not_a_server_error``, ``status_code_conformance``, ``content_type_conformance`` and
``response_schema_conformance``, then of negative cases (``NEGATIVE_EXAMPLES``: values, bodies and
parameters that break the document), which must be answered without a 5xx.  Protected operations are called with a valid token (a user
signed up and logged in first), so they are fuzzed past the 401.

The server runs on its own thread and loop (the app's state belongs to that loop); Schemathesis
calls it with ``requests`` from the test's thread.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

import hypothesis
import hypothesis.strategies as st
import pytest
import requests
import tornado.httpserver
import tornado.netutil

from vecgrid.http.feathers.conformance import build_app

if TYPE_CHECKING:
    from schemathesis import GenerationMode
from vecgrid.http.feathers.rest import make_tornado_app

EXAMPLES = 15           # positive cases per operation (derandomized: the same cases every run)
NEGATIVE_EXAMPLES = 6   # cases that break the schema on purpose, per operation: 4xx, never 5xx
SEEDED = 20


def _checks(positive: bool) -> list:
    # schemathesis is imported by the one (slow) test that uses it: its import costs seconds, and
    # every pytest process of the fast lane would pay them at collection
    from schemathesis import checks

    if positive:
        return [checks.not_a_server_error, checks.status_code_conformance, checks.content_type_conformance,
                checks.response_schema_conformance]
    return [checks.not_a_server_error, checks.content_type_conformance]


class LoopbackServer:
    """A Tornado server for ``tornado_app`` on 127.0.0.1, port 0, on a thread of its own."""

    def __init__(self, tornado_app) -> None:
        self._app = tornado_app
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._run, name="loopback-server", daemon=True)

    def __enter__(self) -> "LoopbackServer":
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("loopback server did not start in 30 s")
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # noqa: BLE001 - handed to __enter__ if it failed starting
            self._error = error
            self._ready.set()
            raise

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        server = tornado.httpserver.HTTPServer(self._app)
        server.add_sockets(sockets)
        self.port = sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            server.stop()
            await server.close_all_connections()


def _token(session: requests.Session, base: str, email: str, token: str | None) -> str:
    """``token`` while it still works, else a fresh user's (an earlier operation may have removed
    the user or logged out); Argon2 makes a login cost tens of milliseconds, so only when needed."""
    if token is not None and session.get(f"{base}/secure-echo", headers={"Authorization": f"Bearer {token}"},
                                         timeout=10).status_code == 200:
        return token
    session.post(f"{base}/users", json={"email": email, "password": "fuzz-secret"},
                 timeout=10).raise_for_status()
    login = session.post(f"{base}/authentication",
                         json={"strategy": "local", "email": email, "password": "fuzz-secret"}, timeout=10)
    login.raise_for_status()
    return login.json()["accessToken"]


def _seed(session: requests.Session, base: str) -> None:
    """Records with ids 0..SEEDED-1 in both people groups and messages of user 0, so that item
    operations reach records rather than answering 404 to every random id (again before every
    operation: an earlier one may have removed them)."""
    for path, id_field in (("people-paginated", "id"), ("people-customid-paginated", "customid")):
        rows = [{id_field: i, "name": f"p{i}", "age": i, "created": i % 2 == 0} for i in range(SEEDED)]
        session.post(f"{base}/{path}", json=rows, timeout=10).raise_for_status()
    for i in range(SEEDED):
        session.put(f"{base}/users/0/messages/{i}", json={"text": f"m{i}"}, timeout=10)
        session.post(f"{base}/users/0/messages", json={"id": i, "text": f"m{i}"}, timeout=10).raise_for_status()


def _strategy(operation, mode: GenerationMode):
    """Schemathesis' cases, half of them aimed at a seeded id."""
    generated = operation.as_strategy(mode)
    if not any(p.name == "id" for p in operation.path_parameters):
        return generated
    seeded = st.sampled_from([str(i) for i in range(SEEDED)]).flatmap(
        lambda i: operation.as_strategy(mode, path_parameters={"id": i}))
    return st.one_of(generated, seeded)


def _negatable(operation) -> bool:
    """Whether the document constrains something a negative case can break (not only an id or a
    body of any JSON; Hypothesis would search in vain for hundreds of tries)."""
    body = operation.definition.raw.get("requestBody", {}).get("content", {}).get("application/json", {})
    return bool(list(operation.query) or list(operation.headers) or body.get("schema") not in (None, {}))


def _fuzz(operation, mode: GenerationMode, base_url: str, session, headers: dict, counts: dict,
          label: str) -> None:
    from schemathesis import GenerationMode

    positive = mode is GenerationMode.POSITIVE
    checks = _checks(positive)

    @hypothesis.settings(max_examples=EXAMPLES if positive else NEGATIVE_EXAMPLES, deadline=None, database=None, derandomize=True,
                         suppress_health_check=list(hypothesis.HealthCheck),
                         phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate, hypothesis.Phase.shrink])
    @hypothesis.given(case=_strategy(operation, mode))
    def run(case):
        counts[label] += 1
        case.call_and_validate(base_url=base_url, session=session, headers=headers,
                               checks=checks)

    run()


@pytest.mark.slow  # about a minute on two cores
@pytest.mark.fuzz
def test_schemathesis_finds_no_server_error_and_no_schema_violation():
    import schemathesis
    from schemathesis import GenerationMode

    failures: dict[str, BaseException] = {}
    counts: dict[str, int] = {}
    token = None
    # The document gives login's real body, so generated logins fail by the dozen from this one address;
    # a limiter at its default would then refuse the run's own logins (429; tests/test_feathers_auth.py
    # covers the limiter).
    app = build_app(login_max_failures=1_000_000)
    with LoopbackServer(make_tornado_app(app)) as server, requests.Session() as session:
        schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 30

        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            for operation in operations if mode is GenerationMode.POSITIVE else filter(_negatable, operations):
                label = f"{mode.value} {operation.method.upper()} {operation.path}"
                counts[label] = 0
                _seed(session, server.url)
                token = _token(session, server.url, f"fuzz{len(counts)}@example.com", token)
                headers = {"Authorization": f"Bearer {token}"}
                try:
                    _fuzz(operation, mode, server.url, session, headers, counts, label)
                except Exception as error:  # noqa: BLE001 - collected: every operation is reported
                    failures[label] = error
    assert not failures, "\n\n".join(f"{label}:\n{error!r}" for label, error in failures.items())
    assert all(n > 0 for n in counts.values()), counts
