"""The Feathers REST transport over a real Tornado server on loopback (facts file §1-§4, §8, §10)."""

from __future__ import annotations

import json
import logging

from tornado.testing import AsyncHTTPTestCase, ExpectLog

from vecgrid.http.feathers.application import Application
from vecgrid.common.feathers_errors import NotFound
from vecgrid.http.feathers.rest import make_tornado_app

JSON_CT = "application/json; charset=utf-8"


class People:
    """A tiny in-memory service (ids are ints; a string id matches its decimal form)."""

    def __init__(self) -> None:
        self.records = {0: {"id": 0, "name": "Doug", "age": 32}}
        self.next_id = 1
        self.calls: list[tuple] = []

    def _key(self, id):
        for key in self.records:
            if str(key) == str(id):
                return key
        raise NotFound(f"No record found for id '{id}'")

    async def find(self, params):
        self.calls.append(("find", params))
        return [r for r in self.records.values()
                if all(str(r.get(k)) == v for k, v in params["query"].items())]

    async def get(self, id, params):
        self.calls.append(("get", id, params))
        return self.records[self._key(id)]

    async def create(self, data, params):
        self.calls.append(("create", data, params))
        if isinstance(data, list):
            return [await self.create(d, params) for d in data]
        record = {"id": self.next_id, **data}
        self.next_id += 1
        self.records[record["id"]] = record
        return record

    async def update(self, id, data, params):
        key = self._key(id)
        self.records[key] = {**data, "id": key}
        return self.records[key]

    async def patch(self, id, data, params):
        if id is None:
            return [await self.patch(k, data, params) for k in list(self.records)]
        key = self._key(id)
        self.records[key].update({k: v for k, v in data.items() if k != "id"})
        return self.records[key]

    async def remove(self, id, params):
        if id is None:
            removed = list(self.records.values())
            self.records.clear()
            return removed
        return self.records.pop(self._key(id))


class Echo:
    """Custom methods only; ``nothing`` answers None (→ 204), ``crash`` raises."""

    async def echo(self, data, params):
        return {"data": data, "query": params["query"], "route": params["route"],
                "provider": params["provider"]}

    def shout(self, data, params):  # sync methods work too
        return {"shout": str(data["text"]).upper()}

    async def nothing(self, data, params):
        return None

    async def crash(self, data, params):
        raise RuntimeError("secret internal detail")

    async def hidden(self, data, params):  # not listed in methods: not exposed
        return {"hidden": True}


class ReadOnly:
    async def find(self, params):
        return []

    async def get(self, id, params):
        return {"id": id}


class Messages:
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    async def find(self, params):
        self.seen.append(("find", params["route"]))
        return [{"userId": params["route"]["userId"]}]

    async def get(self, id, params):
        self.seen.append(("get", id, params["route"]))
        return {"id": id, "userId": params["route"]["userId"]}

    async def create(self, data, params):
        self.seen.append(("create", params["route"]))
        return {**data, "userId": params["route"]["userId"]}


class Users(ReadOnly):
    pass


class FeathersRestTest(AsyncHTTPTestCase):
    def get_app(self):
        self.people = People()
        self.messages = Messages()
        self.feathers = Application()
        self.feathers.use("people", self.people)
        self.feathers.use("echo", Echo(), {"methods": ["echo", "shout", "nothing", "crash"]})
        self.feathers.use("readonly", ReadOnly())
        self.feathers.use("users", Users())
        self.feathers.use("users/:userId/messages", self.messages)
        return make_tornado_app(self.feathers, max_body_bytes=1024)

    def call(self, method, path, body=None, headers=None, raw=None):
        headers = dict(headers or {})
        if raw is None and body is not None:
            raw = json.dumps(body)
            headers.setdefault("Content-Type", "application/json")
        if raw is None and method in ("POST", "PUT", "PATCH"):
            raw = ""
        response = self.fetch(path, method=method, body=raw, headers=headers,
                              allow_nonstandard_methods=True, raise_error=False)
        parsed = json.loads(response.body) if response.body else None
        return response, parsed

    def assert_error(self, response, body, code, name, class_name, message=None):
        assert response.code == code, (response.code, body)
        assert response.headers["Content-Type"] == JSON_CT
        assert body["name"] == name and body["code"] == code and body["className"] == class_name
        assert set(body) <= {"name", "message", "code", "className", "data", "errors"}
        if message is not None:
            assert body["message"] == message

    # §1 routing
    def test_s1_find_get_statuses_and_bodies(self):
        response, body = self.call("GET", "/people")
        assert response.code == 200 and body == [{"id": 0, "name": "Doug", "age": 32}]
        assert response.headers["Content-Type"] == JSON_CT
        response, body = self.call("GET", "/people/0")
        assert response.code == 200 and body["name"] == "Doug"
        assert self.people.calls[-1][1] == "0"  # §1: the id is the raw string segment

    def test_s1_create_is_201_and_array_body_is_multi(self):
        response, body = self.call("POST", "/people", {"name": "Eve"})
        assert response.code == 201 and body == {"id": 1, "name": "Eve"}
        response, body = self.call("POST", "/people", [{"name": "A"}, {"name": "B"}])
        assert response.code == 201 and [r["name"] for r in body] == ["A", "B"]
        assert self.people.calls[-3][1] == [{"name": "A"}, {"name": "B"}]  # one call, an array

    def test_s1_update_patch_remove_and_multi_forms(self):
        response, body = self.call("PUT", "/people/0", {"name": "Replaced", "id": 9})
        assert response.code == 200 and body == {"name": "Replaced", "id": 0}
        response, body = self.call("PATCH", "/people/0", {"age": 5})
        assert response.code == 200 and body == {"name": "Replaced", "id": 0, "age": 5}
        response, body = self.call("PATCH", "/people", {"age": 6})
        assert response.code == 200 and body == [{"name": "Replaced", "id": 0, "age": 6}]
        response, body = self.call("DELETE", "/people/0")
        assert response.code == 200 and body["id"] == 0
        response, body = self.call("DELETE", "/people")
        assert response.code == 200 and body == []

    def test_s1_params_query_route_provider_headers(self):
        response, body = self.call("POST", "/echo?a=1&b=x%20y", {"k": 1},
                                   headers={"X-Service-Method": "echo", "X-Custom": "v"})
        assert response.code == 200
        assert body == {"data": {"k": 1}, "query": {"a": "1", "b": "x y"}, "route": {},
                        "provider": "rest"}
        self.call("GET", "/people?name=Doug", headers={"X-Custom": "v"})
        params = self.people.calls[-1][1]
        assert params["query"] == {"name": "Doug"} and params["provider"] == "rest"
        assert params["headers"]["x-custom"] == "v"

    def test_s1_id_is_not_percent_decoded(self):
        response, body = self.call("GET", "/readonly/a%20b")
        assert response.code == 200 and body == {"id": "a%20b"}

    def test_s1_custom_method_is_200_and_ignores_path_id(self):
        response, body = self.call("POST", "/echo/5", {"text": "hi"}, headers={"X-Service-Method": "shout"})
        assert response.code == 200 and body == {"shout": "HI"}

    def test_s1_head_answers_headers_only(self):
        response, body = self.call("HEAD", "/people/0")
        assert response.code == 200 and response.body == b""
        assert response.headers["Content-Type"] == JSON_CT
        response, _ = self.call("HEAD", "/people/999")
        assert response.code == 404

    def test_s1_none_result_is_204_without_body_or_content_type(self):
        response, _ = self.call("POST", "/echo", {}, headers={"X-Service-Method": "nothing"})
        assert response.code == 204 and response.body == b""
        assert "Content-Type" not in response.headers

    def test_s1_trailing_slash_case_and_extra_segments(self):
        assert self.call("GET", "/people/")[0].code == 200
        assert self.call("GET", "/people/0/")[1]["id"] == 0
        response, body = self.call("GET", "/PEOPLE")
        self.assert_error(response, body, 404, "NotFound", "not-found", "Path /PEOPLE not found")
        response, body = self.call("GET", "/people/0/extra")
        self.assert_error(response, body, 404, "NotFound", "not-found", "Path /people/0/extra not found")

    # §2 error bodies
    def test_s2_service_not_found_error_body_exact(self):
        response, body = self.call("GET", "/people/999")
        assert body == {"name": "NotFound", "message": "No record found for id '999'",
                        "code": 404, "className": "not-found"}
        assert response.code == 404 and response.headers["Content-Type"] == JSON_CT

    def test_s2_crash_is_general_error_with_logged_request_id(self):
        with ExpectLog("vecgrid.http.base", "request POST /echo RuntimeError failed", level=logging.ERROR):
            response, body = self.call("POST", "/echo", {}, headers={"X-Service-Method": "crash"})
        self.assert_error(response, body, 500, "GeneralError", "general-error")
        assert "secret internal detail" not in response.body.decode()
        assert body["data"]["requestId"] in body["message"]

    def test_s2_errors_are_json_even_for_html_accept_and_unknown_verbs(self):
        response, body = self.call("GET", "/nope", headers={"Accept": "text/html"})
        self.assert_error(response, body, 404, "NotFound", "not-found", "Path /nope not found")
        response, body = self.call("TRACE", "/people")
        self.assert_error(response, body, 405, "MethodNotAllowed", "method-not-allowed")

    # §3 which error when
    def test_s3_verb_without_method_is_405(self):
        response, body = self.call("PUT", "/readonly/1", {"a": 1})
        self.assert_error(response, body, 405, "MethodNotAllowed", "method-not-allowed",
                          "Method `update` is not supported by this endpoint.")
        response, body = self.call("POST", "/readonly", {"a": 1})
        self.assert_error(response, body, 405, "MethodNotAllowed", "method-not-allowed",
                          "Method `create` is not supported by this endpoint.")
        response, body = self.call("GET", "/echo")
        self.assert_error(response, body, 405, "MethodNotAllowed", "method-not-allowed",
                          "Method `find` is not supported by this endpoint.")

    def test_s3_unknown_unlisted_or_standard_custom_method_is_405(self):
        for name in ("nosuch", "hidden", "find", "create"):
            response, body = self.call("POST", "/echo", {}, headers={"X-Service-Method": name})
            self.assert_error(response, body, 405, "MethodNotAllowed", "method-not-allowed",
                              f"Method `{name}` is not supported by this endpoint.")

    def test_s3_put_without_id_is_400_and_changes_nothing(self):
        before = json.dumps(self.people.records)
        response, body = self.call("PUT", "/people", {"name": "X"})
        self.assert_error(response, body, 400, "BadRequest", "bad-request",
                          "You can not replace multiple instances. Did you mean 'patch'?")
        assert json.dumps(self.people.records) == before

    # §4 body types
    def test_s4_malformed_json_is_400_bad_request(self):
        response, body = self.call("POST", "/people", raw="{not json", headers={"Content-Type": "application/json"})
        self.assert_error(response, body, 400, "BadRequest", "bad-request")
        assert self.people.records.keys() == {0}

    def test_s4_form_urlencoded_and_text_bodies(self):
        response, body = self.call("POST", "/people", raw="name=Zed&age=3",
                                   headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert response.code == 201 and body == {"id": 1, "name": "Zed", "age": "3"}
        response, body = self.call("POST", "/echo", raw="plain words",
                                   headers={"Content-Type": "text/plain", "X-Service-Method": "echo"})
        assert body["data"] == "plain words"

    def test_body_over_limit_is_413_feathers_error(self):
        response, body = self.call("POST", "/people", raw=json.dumps({"name": "x" * 2000}))
        self.assert_error(response, body, 413, "PayloadTooLarge", "payload-too-large")
        assert self.people.records.keys() == {0}

    # §8 route placeholders
    def test_s8_route_placeholders(self):
        response, body = self.call("POST", "/users/7/messages", {"text": "hi"})
        assert response.code == 201 and body == {"text": "hi", "userId": "7"}
        response, body = self.call("GET", "/users/7/messages/3")
        assert body == {"id": "3", "userId": "7"}
        response, body = self.call("GET", "/users/7/messages")
        assert body == [{"userId": "7"}]
        assert self.messages.seen == [("create", {"userId": "7"}), ("get", "3", {"userId": "7"}),
                                      ("find", {"userId": "7"})]
        response, body = self.call("GET", "/users/7")  # the users service, not messages
        assert body == {"id": "7"}
        response, body = self.call("GET", "/users/7/messages/3/x")
        assert response.code == 404

    # §10 headers, CORS
    def test_s10_cors_on_every_response_and_preflight(self):
        for path in ("/people", "/nope"):
            response, _ = self.call("GET", path, headers={"Origin": "http://example.com"})
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            assert "Origin" in response.headers["Vary"]
        response, _ = self.call("OPTIONS", "/people", headers={
            "Origin": "http://example.com", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,authorization"})
        assert response.code == 204 and response.body == b""
        assert response.headers["Access-Control-Allow-Methods"] == "GET,HEAD,PUT,POST,DELETE,PATCH"
        assert response.headers["Access-Control-Allow-Headers"] == "content-type,authorization"
        assert response.headers["Access-Control-Allow-Origin"] == "*"

    def test_chunked_body_over_limit_is_413(self):
        def chunks(write):
            write(b'{"name": "' + b"x" * 2000 + b'"}')

        response = self.fetch("/people", method="POST", body_producer=chunks,
                              headers={"Content-Type": "application/json"}, raise_error=False)
        body = json.loads(response.body)
        self.assert_error(response, body, 413, "PayloadTooLarge", "payload-too-large")
        assert self.people.records.keys() == {0}

    def test_hooks_run_for_rest_calls_and_their_errors_are_feathers_bodies(self):
        from vecgrid.common.feathers_errors import NotAuthenticated

        def require_header(ctx):
            assert ctx.params["provider"] == "rest"
            if ctx.params["headers"].get("authorization") != "Bearer ok":
                raise NotAuthenticated("Not authenticated")

        self.feathers.service("people").hooks({"before": {"create": require_header}})
        response, body = self.call("POST", "/people", {"name": "X"})
        assert body == {"name": "NotAuthenticated", "message": "Not authenticated", "code": 401,
                        "className": "not-authenticated"}
        assert self.people.records.keys() == {0}
        response, body = self.call("POST", "/people", {"name": "X"}, headers={"Authorization": "Bearer ok"})
        assert response.code == 201 and body["name"] == "X"


class KeepAliveTest(AsyncHTTPTestCase):
    """An error answer does not cost the client its connection: a keep-alive client (httpx, requests,
    the browser's fetch) sends its next request on the same socket."""

    def get_app(self):
        app = Application()
        app.use("people", People())
        return make_tornado_app(app, max_body_bytes=1000)

    def exchange(self, requests: list[bytes]) -> list[bytes]:
        import socket
        with socket.create_connection(("127.0.0.1", self.get_http_port()), timeout=10) as sock:
            answers = []
            for request in requests:
                sock.sendall(request)
                answers.append(self.io_loop.run_sync(lambda: self._read_answer(sock)))
            return answers

    async def _read_answer(self, sock) -> bytes:
        import asyncio
        loop = asyncio.get_running_loop()
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await loop.run_in_executor(None, sock.recv, 65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            chunk = await loop.run_in_executor(None, sock.recv, 65536)
            if not chunk:
                break
            body += chunk
        return head + b"\r\n\r\n" + body

    def test_an_unknown_path_keeps_the_connection(self):
        first, second = self.exchange([b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n",
                                       b"GET /people/0 HTTP/1.1\r\nHost: x\r\n\r\n"])
        assert first.startswith(b"HTTP/1.1 404") and b"Path /nope not found" in first
        assert second.startswith(b"HTTP/1.1 200"), second

    def test_an_unknown_path_with_a_body_keeps_the_connection(self):
        body = b'{"name": "x"}'
        first, second = self.exchange([
            b"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body,
            b"GET /people/0 HTTP/1.1\r\nHost: x\r\n\r\n"])
        assert first.startswith(b"HTTP/1.1 404")
        assert second.startswith(b"HTTP/1.1 200"), second

    def test_a_refused_oversized_body_says_the_connection_closes(self):
        (first,) = self.exchange([b"POST /people HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                  b"Content-Length: 5000\r\n\r\n"])
        assert first.startswith(b"HTTP/1.1 413") and b"connection: close" in first.lower()
