"""The authorization sweep: with auth on, every (service, method, custom method) of the coordinator's
REST app refuses a missing or bad token (401) and a role without the method's right (403), before the
service does anything.  The list comes from the app's registry, so a service added later is covered
(and fails here if it does not declare the right of each method it exposes)."""

from __future__ import annotations

import json

import pytest
import tornado.httpclient
import tornado.httpserver
import tornado.netutil

from vecgrid.http.app import make_app
from vecgrid.http.feathers.application import STANDARD_METHODS
from vecgrid.http.services.accounts import RIGHTS_NAMES, add_user, rights_of
from tests.rest_support import auth_on_api

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

PASSWORD = "sweep-password"
# Who must be refused for each right (a role that lacks it); "self" is tried on someone else's id.
LACKING = {"read": "nobody", "write": "reader", "admin": "writer", "self": "reader"}


def http_form(path: str, method: str) -> tuple[str, str, dict]:
    """The request the Feathers client sends for ``method`` (placeholders filled with ``x``)."""
    base = "/" + "/".join("x" if s.startswith(":") else s for s in path.split("/"))
    if method not in STANDARD_METHODS:
        return "POST", base, {"X-Service-Method": method}
    verb = {"find": "GET", "get": "GET", "create": "POST", "update": "PUT", "patch": "PATCH",
            "remove": "DELETE"}[method]
    return verb, base if method in ("find", "create") else f"{base}/999", {}


async def test_every_method_refuses_before_doing_anything(embedded, tmp_path):
    ctx, api = auth_on_api(embedded, tmp_path)
    calls: list[tuple[str, str]] = []

    for path, registered in api.services.items():
        for method in registered.methods:
            original = getattr(registered.service, method)

            def spy(*args, _path=path, _method=method, _original=original):
                # Only the refused client's calls count: authentication reads users as server code.
                if isinstance(args[-1], dict) and args[-1].get("provider") is not None:
                    calls.append((_path, _method))
                return _original(*args)

            setattr(registered.service, method, spy)

    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    server = tornado.httpserver.HTTPServer(make_app(ctx, api))
    server.add_sockets(sockets)
    url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    client = tornado.httpclient.AsyncHTTPClient()
    try:
        await add_user(api, "reader@x.io", PASSWORD, ["reader"])
        await add_user(api, "writer@x.io", PASSWORD, ["writer"])
        # No role at all: only server code can store such a user (the service refuses empty roles).
        await api.service("users").service._create({"email": "nobody@x.io", "password": (
            await api.service("users").service._find({"query": {"email": "reader@x.io"}}))["data"][0]["password"],
            "roles": []})
        calls.clear()

        async def send(verb, target, headers, token=None):
            headers = {"Content-Type": "application/json", **headers}
            if token:
                headers["Authorization"] = f"Bearer {token}"
            body = "{}" if verb in ("POST", "PUT", "PATCH") else None
            response = await client.fetch(url + target, method=verb, headers=headers, body=body,
                                          allow_nonstandard_methods=True, raise_error=False)
            return response.code, json.loads(response.body) if response.body else None

        tokens = {}
        for role in ("reader", "writer", "nobody"):
            response = await client.fetch(url + "/authentication", method="POST", headers={
                "Content-Type": "application/json"}, body=json.dumps(
                {"strategy": "local", "email": f"{role}@x.io", "password": PASSWORD}), raise_error=False)
            assert response.code == 201, response.body
            tokens[role] = json.loads(response.body)["accessToken"]
        calls.clear()

        checked = []
        for path, registered in sorted(api.services.items()):
            for method in registered.methods:
                right = rights_of(registered.service, method)
                assert right in (*RIGHTS_NAMES, "public"), f"{path}.{method} declares no right in RIGHTS"
                if right == "public":
                    continue
                verb, target, headers = http_form(path, method)
                for token in (None, "garbage", tokens["reader"][:-4] + "AAAA"):
                    code, body = await send(verb, target, headers, token)
                    assert code == 401, (path, method, token, code, body)
                code, body = await send(verb, target, headers, tokens[LACKING[right]])
                assert code == 403, (path, method, right, code, body)
                checked.append((path, method))
        assert calls == [], f"services ran for refused calls: {calls}"
        assert ("users", "find") in checked and len(checked) >= 5
    finally:
        server.stop()
        ctx.store.close()
