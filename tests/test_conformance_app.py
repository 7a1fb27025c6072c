"""The Feathers conformance app over real HTTP: the framework's proof, one test class per section of
``/work/shared/spec/feathers-rest-facts.md`` plus the rules of ``feathers-conformance-app.md``.

Every message and status below is copied from the facts file; where it marks a Koa quirk the test
asserts the better answer it names.  The fast tests serve ``build_app()`` through
``make_tornado_app`` on a loopback port; the ``slow`` ones start the real ``vecgrid conformance-app``
command, and drive it with the official Feathers JavaScript client.
"""

from __future__ import annotations

import datetime
import http.client
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import jwt
import pytest
from argon2 import PasswordHasher
from tornado.testing import AsyncHTTPTestCase, ExpectLog

from vecgrid.common import feathers_errors
from vecgrid.http.feathers.conformance import build_app
from vecgrid.http.feathers.rest import make_tornado_app

JSON_CT = "application/json; charset=utf-8"
SECRET = "conformance-test-secret-" + "x" * 24
# Argon2id with cheap parameters: the wire behaviour does not depend on them, and every test starts an app
# (the service hashes a dummy password when it starts). The real command runs with the defaults.
FAST_HASHER = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
AUDIENCE = "https://yourdomain.com"
ERROR_KEYS = {"name", "message", "code", "className"}
PEOPLE_GROUPS = (("people", "id"), ("people-customid", "customid"))


class ConformanceCase(AsyncHTTPTestCase):
    """A fresh conformance app per test, on a loopback port; helpers speak JSON to it."""

    login_max_failures = 10

    def get_app(self):
        self.feathers = build_app(secret=SECRET, login_max_failures=self.login_max_failures, hasher=FAST_HASHER)
        return make_tornado_app(self.feathers)

    def call(self, method: str, path: str, body=None, *, headers: dict | None = None,
             raw: bytes | str | None = None, content_type: str = "application/json"):
        """``(status, headers, parsed JSON or None)`` of one request."""
        send_headers = dict(headers or {})
        payload = None
        if raw is not None:
            payload = raw.encode() if isinstance(raw, str) else raw
            send_headers.setdefault("Content-Type", content_type)
        elif body is not None:
            payload = json.dumps(body).encode()
            send_headers.setdefault("Content-Type", "application/json")
        elif method in ("POST", "PUT", "PATCH"):
            payload = b""
        response = self.fetch(path, method=method, body=payload, headers=send_headers,
                              allow_nonstandard_methods=True, raise_error=False)
        parsed = json.loads(response.body) if response.body else None
        return response.code, response.headers, parsed

    def ok(self, method: str, path: str, body=None, *, status: int = 200, **kw):
        code, _, parsed = self.call(method, path, body, **kw)
        assert code == status, (method, path, code, parsed)
        return parsed

    def error(self, method: str, path: str, body=None, *, status: int, name: str, message: str,
              data=..., **kw) -> dict:
        """Asserts a Feathers error body exactly: status = code, name, className, message, data."""
        code, headers, parsed = self.call(method, path, body, **kw)
        assert code == status, (method, path, code, parsed)
        assert headers["Content-Type"] == JSON_CT
        cls = feathers_errors.ERROR_CLASSES[name]
        assert parsed["name"] == name and parsed["code"] == status == cls.code
        assert parsed["className"] == cls.class_name
        assert parsed["message"] == message, parsed
        if data is ...:
            assert set(parsed) == ERROR_KEYS, parsed
        else:
            assert set(parsed) == ERROR_KEYS | {"data"} and parsed["data"] == data, parsed
        return parsed

    def seed(self, path: str = "people", records=None) -> list[dict]:
        records = records if records is not None else [
            {"name": "Doug", "age": 32, "created": True},
            {"name": "Alice", "age": 25, "created": False},
            {"name": "Bob", "age": 40, "created": True},
        ]
        return [self.ok("POST", f"/{path}", r, status=201) for r in records]

    def everyone(self, path: str = "people") -> list[dict]:
        return self.ok("GET", f"/{path}")

    # -- authentication helpers -------------------------------------------------------------
    def sign_up(self, email: str = "dev@example.com", password: str = "s3cret-pass") -> dict:
        return self.ok("POST", "/users", {"email": email, "password": password}, status=201)

    def login(self, email: str = "dev@example.com", password: str = "s3cret-pass") -> dict:
        return self.ok("POST", "/authentication", {"strategy": "local", "email": email,
                                                   "password": password}, status=201)

    def token(self) -> str:
        self.sign_up()
        return self.login()["accessToken"]


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


# =============================================================================================
# §1 Routing
# =============================================================================================


class TestRouting(ConformanceCase):
    def test_find_answers_an_array_on_a_plain_service_and_a_page_on_a_paginated_one(self):
        assert self.ok("GET", "/people") == []
        doug = self.ok("POST", "/people", {"name": "Doug", "age": 32}, status=201)
        assert doug == {"name": "Doug", "age": 32, "id": 0}
        assert self.ok("GET", "/people") == [doug]
        assert self.ok("GET", "/people-paginated") == {"total": 1, "limit": 10, "skip": 0, "data": [doug]}

    def test_get_by_string_id_finds_the_numeric_id(self):
        doug, alice, _ = self.seed()
        assert self.ok("GET", "/people/0") == doug
        assert self.ok("GET", "/people/1") == alice

    def test_create_is_201_with_the_record_and_an_array_body_creates_in_order(self):
        code, headers, body = self.call("POST", "/people", {"name": "Doug", "age": 32})
        assert code == 201 and headers["Content-Type"] == JSON_CT and body == {"name": "Doug", "age": 32, "id": 0}
        made = self.ok("POST", "/people-paginated", [{"name": "A"}, {"name": "B"}, {"name": "C"}], status=201)
        assert made == [{"name": "A", "id": 1}, {"name": "B", "id": 2}, {"name": "C", "id": 3}]
        assert self.ok("POST", "/people-paginated", [], status=201) == []

    def test_update_patch_remove_by_id(self):
        self.seed()
        assert self.ok("PUT", "/people/0", {"name": "Douglas"}) == {"name": "Douglas", "id": 0}
        assert self.ok("PATCH", "/people/1", {"age": 26}) == {"name": "Alice", "age": 26, "created": False, "id": 1}
        assert self.ok("DELETE", "/people/2") == {"name": "Bob", "age": 40, "created": True, "id": 2}
        assert [r["id"] for r in self.everyone()] == [0, 1]

    def test_patch_and_remove_without_id_act_on_every_record(self):
        self.seed()
        patched = self.ok("PATCH", "/people-paginated", {"team": "x"})
        assert sorted(r["id"] for r in patched) == [0, 1, 2] and all(r["team"] == "x" for r in patched)
        removed = self.ok("DELETE", "/people-paginated")
        assert sorted(r["id"] for r in removed) == [0, 1, 2] and all(r["team"] == "x" for r in removed)
        assert self.ok("DELETE", "/people-paginated") == []

    def test_put_without_id_is_always_an_error(self):
        self.error("PUT", "/people", {"name": "x"}, status=400, name="BadRequest",
                   message="You can not replace multiple instances. Did you mean 'patch'?")

    def test_custom_method_is_200_with_its_result(self):
        code, _, body = self.call("POST", "/echo?x=1", {"hello": "world"}, headers={"X-Service-Method": "echo"})
        assert code == 200
        assert body == {"method": "echo", "data": {"hello": "world"}, "query": {"x": "1"}, "route": {},
                        "provider": "rest"}

    def test_head_is_get_without_a_body(self):
        self.seed()
        for path in ("/people", "/people/0", "/people-paginated"):
            response = self.fetch(path, method="HEAD", raise_error=False)
            assert response.code == 200 and response.body == b""
            assert response.headers["Content-Type"] == JSON_CT
        assert self.fetch("/people/999", method="HEAD", raise_error=False).code == 404

    def test_no_result_is_204_without_body_or_content_type(self):
        response = self.fetch("/echo", method="POST", body=b"{}", raise_error=False,
                              headers={"X-Service-Method": "nothing", "Content-Type": "application/json"})
        assert response.code == 204 and response.body == b""
        assert "Content-Type" not in response.headers

    def test_params_query_route_provider(self):
        assert self.ok("GET", "/echo?a=1") == {"method": "find", "query": {"a": "1"}, "route": {},
                                               "provider": "rest"}
        assert self.ok("GET", "/echo") == {"method": "find", "query": {}, "route": {}, "provider": "rest"}
        assert self.ok("GET", "/echo/7?b=2") == {"method": "get", "id": "7", "query": {"b": "2"}}
        assert self.ok("POST", "/echo?c=3", {"d": 4}, status=201) == {"method": "create", "data": {"d": 4},
                                                                     "query": {"c": "3"}}

    def test_id_is_the_raw_path_segment(self):
        assert self.ok("GET", "/echo/a%20b")["id"] == "a%20b"
        assert self.ok("GET", "/echo/0")["id"] == "0"

    def test_custom_method_ignores_an_id_in_the_path(self):
        with_id = self.ok("POST", "/echo/5", {"v": 1}, headers={"X-Service-Method": "echo"})
        without = self.ok("POST", "/echo", {"v": 1}, headers={"X-Service-Method": "echo"})
        assert with_id == without == {"method": "echo", "data": {"v": 1}, "query": {}, "route": {},
                                      "provider": "rest"}

    def test_trailing_slash_case_and_extra_segments(self):
        doug = self.seed()[0]
        assert self.ok("GET", "/people/") == self.ok("GET", "/people")
        assert self.ok("GET", "/people/0/") == doug
        assert self.ok("POST", "/people/", {"name": "Eve"}, status=201)["id"] == 3
        self.error("GET", "/PEOPLE", status=404, name="NotFound", message="Path /PEOPLE not found")
        self.error("GET", "/people/0/extra", status=404, name="NotFound", message="Path /people/0/extra not found")


# =============================================================================================
# §2 Error responses
# =============================================================================================


class TestErrorBodies(ConformanceCase):
    def test_error_body_has_exactly_name_message_code_class_name(self):
        code, headers, body = self.call("GET", "/people/999")
        assert code == 404 and headers["Content-Type"] == JSON_CT
        assert body == {"name": "NotFound", "message": "No record found for id '999'", "code": 404,
                        "className": "not-found"}

    def test_data_only_when_the_error_carries_it(self):
        body = self.error("GET", "/people?name[$like]=x", status=400, name="BadRequest",
                          message="Invalid query parameter $like", data={"$like": "x"})
        assert "errors" not in body and "stack" not in body

    def test_the_error_classes_are_the_table(self):
        table = {
            "BadRequest": (400, "bad-request"), "NotAuthenticated": (401, "not-authenticated"),
            "PaymentError": (402, "payment-error"), "Forbidden": (403, "forbidden"),
            "NotFound": (404, "not-found"), "MethodNotAllowed": (405, "method-not-allowed"),
            "NotAcceptable": (406, "not-acceptable"), "Timeout": (408, "timeout"),
            "Conflict": (409, "conflict"), "Gone": (410, "gone"), "LengthRequired": (411, "length-required"),
            "Unprocessable": (422, "unprocessable"), "TooManyRequests": (429, "too-many-requests"),
            "GeneralError": (500, "general-error"), "NotImplemented": (501, "not-implemented"),
            "BadGateway": (502, "bad-gateway"), "Unavailable": (503, "unavailable"),
        }
        for name, (code, class_name) in table.items():
            cls = feathers_errors.ERROR_CLASSES[name]
            assert (cls.code, cls.class_name) == (code, class_name)
            assert cls("m").to_dict() == {"name": name, "message": "m", "code": code, "className": class_name}

    def test_every_error_the_app_answers_has_the_feathers_shape(self):
        token = self.token()
        cases = [
            ("POST", "/people", None, {"raw": "{broken"}),  # 400
            ("GET", "/users", None, {}),  # 401
            ("GET", "/nope", None, {}),  # 404
            ("PATCH", "/echo", {}, {}),  # 405
            ("GET", "/users/0", None, {"headers": bearer(token + "x")}),  # 401 with data
        ]
        for method, path, body, kw in cases:
            code, headers, parsed = self.call(method, path, body, **kw)
            assert headers["Content-Type"] == JSON_CT
            assert set(parsed) - {"data"} == ERROR_KEYS, parsed
            assert parsed["code"] == code and feathers_errors.ERROR_CLASSES[parsed["name"]].code == code

    def test_a_crash_is_a_full_general_error_with_a_request_id(self):
        # The conformance app plus one failing hook: the crash path is the transport's, not the app's.
        def crash(ctx):
            raise RuntimeError("boom: secret internals")

        self.feathers.service("echo").hooks({"before": {"get": [crash]}})
        with ExpectLog("vecgrid.http.base", "request GET /echo/1 RuntimeError failed"):
            code, headers, body = self.call("GET", "/echo/1")
        assert code == 500 and headers["Content-Type"] == JSON_CT
        assert set(body) == ERROR_KEYS | {"data"}
        assert body["name"] == "GeneralError" and body["className"] == "general-error" and body["code"] == 500
        assert "boom" not in json.dumps(body)
        assert re.fullmatch(r"[0-9a-f]{32}", body["data"]["requestId"])
        assert body["data"]["requestId"] in body["message"]


# =============================================================================================
# §3 Which error when
# =============================================================================================


class TestWhichErrorWhen(ConformanceCase):
    def test_missing_id_is_not_found_for_every_method(self):
        self.seed()
        message = "No record found for id '999'"
        for method, body in (("GET", None), ("PUT", {"name": "x"}), ("PATCH", {"name": "x"}), ("DELETE", None)):
            self.error(method, "/people/999", body, status=404, name="NotFound", message=message)
        assert len(self.everyone()) == 3

    def test_existing_id_not_matching_the_query_is_not_found(self):
        self.seed()
        message = "No record found for id '0'"
        for method, body in (("GET", None), ("PUT", {"name": "x"}), ("PATCH", {"name": "x"}), ("DELETE", None)):
            self.error(method, "/people/0?name=Other", body, status=404, name="NotFound", message=message)
            self.error(method, "/people/0?id=1", body, status=404, name="NotFound", message=message)
        assert self.ok("GET", "/people/0?name=Doug")["name"] == "Doug"
        assert self.ok("GET", "/people/0?id=0")["id"] == 0
        assert self.everyone()[0] == {"name": "Doug", "age": 32, "created": True, "id": 0}

    def test_unknown_path(self):
        self.error("GET", "/nope", status=404, name="NotFound", message="Path /nope not found")
        self.error("POST", "/nope", {}, status=404, name="NotFound", message="Path /nope not found")

    def test_verb_of_a_method_the_service_does_not_provide(self):
        for method, name, body in (("PUT", "update", {"a": 1}), ("PATCH", "patch", {"a": 1}),
                                   ("DELETE", "remove", None)):
            message = f"Method `{name}` is not supported by this endpoint."
            self.error(method, "/echo/1", body, status=405, name="MethodNotAllowed", message=message)
        self.error("PUT", "/echo", {"a": 1}, status=405, name="MethodNotAllowed",
                   message="Method `update` is not supported by this endpoint.")
        self.error("GET", "/secure-echo/1", status=405, name="MethodNotAllowed",
                   message="Method `get` is not supported by this endpoint.")

    def test_x_service_method_naming_an_unexposed_or_standard_method(self):
        for name in ("nosuch", "find", "create", "get", "update", "patch", "remove", "_find", "setup"):
            self.error("POST", "/echo", {}, headers={"X-Service-Method": name}, status=405,
                       name="MethodNotAllowed", message=f"Method `{name}` is not supported by this endpoint.")
        # a custom method of echo that secure-echo does not list
        self.error("POST", "/secure-echo", {}, headers={"X-Service-Method": "nothing"}, status=405,
                   name="MethodNotAllowed", message="Method `nothing` is not supported by this endpoint.")

    def test_refused_multi_calls_change_nothing(self):
        before = self.seed()
        self.error("POST", "/people", [{"name": "x"}], status=405, name="MethodNotAllowed",
                   message="Can not create multiple entries")
        self.error("PATCH", "/people", {"name": "x"}, status=405, name="MethodNotAllowed",
                   message="Can not patch multiple entries")
        self.error("DELETE", "/people", status=405, name="MethodNotAllowed",
                   message="Can not remove multiple entries")
        assert self.everyone() == before
        # the id sequence did not move either
        assert self.ok("POST", "/people", {"name": "next"}, status=201)["id"] == 3

    def test_put_without_id_is_400_whatever_the_multi_setting(self):
        before = self.seed()
        for path in ("/people", "/people-paginated", "/people-customid-paginated"):
            for body in ({"name": "x"}, [{"name": "x"}]):
                self.error("PUT", path, body, status=400, name="BadRequest",
                           message="You can not replace multiple instances. Did you mean 'patch'?")
        assert self.everyone() == before

    def test_unknown_filter_and_operator(self):
        self.seed()
        self.error("GET", "/people?$foo=1", status=400, name="BadRequest", message="Invalid filter value $foo")
        self.error("GET", "/people?name[$like]=x", status=400, name="BadRequest",
                   message="Invalid query parameter $like", data={"$like": "x"})
        self.error("GET", "/people?age[$le]=3", status=400, name="BadRequest",
                   message="Invalid query parameter $le", data={"$le": "3"})

    def test_query_schema_rejection(self):
        body = self.error("GET", "/people?age=abc", status=400, name="BadRequest", message="validation failed",
                          data=[{"instancePath": "/age", "keyword": "type", "params": {"type": "number"},
                                 "message": "must be number"}])
        assert isinstance(body["data"], list)

    def test_authentication_problems_are_401(self):
        self.error("GET", "/users", status=401, name="NotAuthenticated", message="Not authenticated")


# =============================================================================================
# §4 Update, patch, create details
# =============================================================================================


class TestUpdatePatchCreate(ConformanceCase):
    def test_put_replaces_the_record_and_takes_the_id_from_the_url(self):
        self.seed()
        replaced = self.ok("PUT", "/people/0", {"id": 77, "name": "Only"})
        assert replaced == {"id": 0, "name": "Only"}
        assert self.ok("GET", "/people/0") == {"id": 0, "name": "Only"}
        self.error("GET", "/people/77", status=404, name="NotFound", message="No record found for id '77'")

    def test_patch_merges_and_cannot_change_the_id(self):
        self.seed()
        patched = self.ok("PATCH", "/people/0", {"id": 77, "age": 33, "team": "a"})
        assert patched == {"id": 0, "name": "Doug", "age": 33, "created": True, "team": "a"}
        assert self.ok("GET", "/people/0") == patched

    def test_create_uses_an_id_given_in_the_body(self):
        assert self.ok("POST", "/people", {"id": 42, "name": "Given"}, status=201) == {"id": 42, "name": "Given"}
        assert self.ok("GET", "/people/42")["name"] == "Given"
        assert self.ok("POST", "/people", {"name": "Generated"}, status=201)["id"] == 0

    def test_create_with_a_query_string_filters_nothing_only_select_shapes(self):
        made = self.ok("POST", "/people?name=Other&age=1", {"name": "Doug", "age": 32}, status=201)
        assert made == {"name": "Doug", "age": 32, "id": 0}
        made = self.ok("POST", "/people?$select[0]=name", {"name": "Ann", "age": 20}, status=201)
        assert made == {"name": "Ann", "id": 1}
        assert self.ok("GET", "/people/1") == {"name": "Ann", "age": 20, "id": 1}

    def test_select_shapes_every_method_and_keeps_the_id(self):
        self.seed()
        sel = "$select[0]=name"
        assert self.ok("GET", f"/people/0?{sel}") == {"id": 0, "name": "Doug"}
        assert self.ok("GET", f"/people?{sel}") == [{"id": 0, "name": "Doug"}, {"id": 1, "name": "Alice"},
                                                   {"id": 2, "name": "Bob"}]
        assert self.ok("PUT", f"/people/0?{sel}", {"name": "D", "age": 1}) == {"id": 0, "name": "D"}
        assert self.ok("PATCH", f"/people/1?{sel}", {"age": 2}) == {"id": 1, "name": "Alice"}
        assert self.ok("PATCH", f"/people-paginated?{sel}&id=2", {"age": 3}) == [{"id": 2, "name": "Bob"}]
        assert self.ok("POST", f"/people-paginated?{sel}", [{"name": "E", "age": 9}], status=201) == [
            {"id": 3, "name": "E"}]
        assert self.ok("DELETE", f"/people/3?{sel}") == {"id": 3, "name": "E"}
        assert self.ok("DELETE", f"/people-paginated?{sel}&id=2") == [{"id": 2, "name": "Bob"}]
        # selecting only a field that is not the id still keeps the id; the store is untouched by it
        assert self.ok("GET", "/people/0?$select[0]=age") == {"id": 0, "age": 1}
        assert self.ok("GET", "/people/0") == {"id": 0, "name": "D", "age": 1}

    def test_multi_patch_and_remove_act_on_every_match_ignoring_limit_and_pagination(self):
        self.seed(records=[{"name": f"p{i}", "age": 10 if i % 2 else 20} for i in range(25)])
        patched = self.ok("PATCH", "/people-paginated?age=10&$limit=1", {"team": "odd"})
        assert isinstance(patched, list) and sorted(r["id"] for r in patched) == list(range(1, 25, 2))
        assert len([r for r in self.everyone() if r.get("team") == "odd"]) == 12
        removed = self.ok("DELETE", "/people-paginated?age=20&$limit=2")
        assert isinstance(removed, list) and sorted(r["id"] for r in removed) == list(range(0, 25, 2))
        assert len(self.everyone()) == 12

    def test_multi_patch_changing_the_queried_field_returns_the_matched_records_patched(self):
        self.seed(records=[{"name": "a", "age": 10}, {"name": "b", "age": 10}, {"name": "c", "age": 11}])
        patched = self.ok("PATCH", "/people-paginated?age=10", {"age": 2})
        assert patched == [{"name": "a", "age": 2, "id": 0}, {"name": "b", "age": 2, "id": 1}]
        assert self.ok("GET", "/people?age=10") == []

    def test_form_urlencoded_body_is_parsed_with_string_values(self):
        made = self.ok("POST", "/people", raw="name=Form&age=32&tags[0]=a", status=201,
                       content_type="application/x-www-form-urlencoded")
        assert made == {"name": "Form", "age": "32", "tags": ["a"], "id": 0}
        echoed = self.ok("POST", "/echo", raw="a=1&b[c]=2", status=201,
                         content_type="application/x-www-form-urlencoded; charset=utf-8")
        assert echoed["data"] == {"a": "1", "b": {"c": "2"}}

    def test_text_plain_body_is_a_string_and_a_missing_body_no_data(self):
        echoed = self.ok("POST", "/echo", raw="hello", content_type="text/plain", status=201)
        assert echoed["data"] == "hello"
        echoed = self.ok("POST", "/echo", status=201)
        assert echoed.get("data") is None


# =============================================================================================
# §5 Query strings
# =============================================================================================

QS_ROWS = [
    ("a=1&b[c]=2", {"a": "1", "b": {"c": "2"}}),
    ("arr[0]=x&arr[1]=y", {"arr": ["x", "y"]}),
    ("a=1&a=2", {"a": ["1", "2"]}),
    ("a[]=1&a[]=2", {"a": ["1", "2"]}),
    ("x[2]=b", {"x": ["b"]}),
    ("t=true&n=null&z=1.5", {"t": "true", "n": "null", "z": "1.5"}),
    ("e=&f", {"e": "", "f": ""}),
    ("%24limit=3&name%5B%24in%5D%5B0%5D=A%20B", {"$limit": "3", "name": {"$in": ["A B"]}}),
    ("q=a+b&r%20s=c%2Bd", {"q": "a b", "r s": "c+d"}),
    ("$or[0][name]=A&$or[1][age][$gt]=3", {"$or": [{"name": "A"}, {"age": {"$gt": "3"}}]}),
    ("a.b=1", {"a.b": "1"}),
    ("a[0]=x&a[19]=y", {"a": ["x", "y"]}),
    ("&".join(f"a[{i}]={i}" for i in range(20)), {"a": [str(i) for i in range(20)]}),
    ("a[20]=x", {"a": {"20": "x"}}),
    ("a[0]=x&a[20]=y", {"a": {"0": "x", "20": "y"}}),
    ("&".join(f"a[{i}]={i}" for i in range(21)), {"a": {str(i): str(i) for i in range(21)}}),
    ("&".join(f"a={i}" for i in range(21)), {"a": {str(i): str(i) for i in range(21)}}),
    ("a[b][c][d][e][f][g]=1", {"a": {"b": {"c": {"d": {"e": {"f": {"[g]": "1"}}}}}}}),
    ("__proto__[x]=1", {}),
    ("__proto__[x]=1&ok=1", {"ok": "1"}),
]


class TestQueryStrings(ConformanceCase):
    def test_every_row_of_the_parsing_table(self):
        for raw, expected in QS_ROWS:
            got = self.ok("GET", "/echo?" + raw)["query"]
            assert got == expected, (raw, got)

    def test_the_client_index_notation_round_trips(self):
        # what qs.stringify({name: {$in: ["Alice", "Bob"]}, $limit: 2, $sort: {age: -1}}) sends
        raw = "name%5B%24in%5D%5B0%5D=Alice&name%5B%24in%5D%5B1%5D=Bob&%24limit=2&%24sort%5Bage%5D=-1"
        assert self.ok("GET", "/echo?" + raw)["query"] == {"name": {"$in": ["Alice", "Bob"]}, "$limit": "2",
                                                          "$sort": {"age": "-1"}}
        self.seed()
        # coerced by the schema: $sort by age descending, two at most, names in the $in list
        assert [r["name"] for r in self.ok("GET", "/people?" + raw)] == ["Bob", "Alice"]

    def test_limit_skip_and_sort_are_integers_parsed_like_parse_int(self):
        self.seed()
        assert [r["name"] for r in self.ok("GET", "/people?$limit=2")] == ["Doug", "Alice"]
        assert [r["name"] for r in self.ok("GET", "/people?$limit=2abc")] == ["Doug", "Alice"]
        assert [r["name"] for r in self.ok("GET", "/people?$skip=1")] == ["Alice", "Bob"]
        assert [r["name"] for r in self.ok("GET", "/people?$sort[age]=1")] == ["Alice", "Doug", "Bob"]
        assert [r["name"] for r in self.ok("GET", "/people?$sort[age]=-1")] == ["Bob", "Doug", "Alice"]
        assert [r["name"] for r in self.ok("GET", "/people?$sort[name]=1&$skip=1&$limit=1")] == ["Bob"]

    def test_values_are_coerced_by_the_query_schema(self):
        for path, id_field in PEOPLE_GROUPS:
            self.seed(path)

            def names(query: str) -> list[str]:
                return sorted(r["name"] for r in self.ok("GET", f"/{path}?{query}"))

            assert names("age=32") == ["Doug"]
            assert names("created=true") == ["Bob", "Doug"]
            assert names("created=false") == ["Alice"]
            assert names(f"{id_field}=1") == ["Alice"]
            assert names("name=Bob") == ["Bob"]
            assert names("age[$in][0]=25&age[$in][1]=40") == ["Alice", "Bob"]
            assert names("age[$nin][0]=25") == ["Bob", "Doug"]
            assert names("age[$lt]=32") == ["Alice"]
            assert names("age[$lte]=32") == ["Alice", "Doug"]
            assert names("age[$gt]=32") == ["Bob"]
            assert names("age[$gte]=32") == ["Bob", "Doug"]
            assert names("age[$ne]=32") == ["Alice", "Bob"]
            assert names("age[$gt]=30.5") == ["Bob", "Doug"]
            assert names("created[$ne]=true") == ["Alice"]
            assert names(f"{id_field}[$in][0]=0&{id_field}[$in][1]=2") == ["Bob", "Doug"]
            assert names("$or[0][age]=25&$or[1][created]=true&$or[1][age][$gt]=35") == ["Alice", "Bob"]
            assert names("$and[0][age][$gte]=25&$and[1][age][$lte]=32&$and[2][created]=false") == ["Alice"]
            assert names("age[$gt]=20&age[$lt]=35") == ["Alice", "Doug"]
            # the paginated views coerce the same way
            page = self.ok("GET", f"/{path}-paginated?age[$gte]=32&$sort[age]=1")
            assert [r["name"] for r in page["data"]] == ["Doug", "Bob"] and page["total"] == 2
            # a get, patch and remove with a coerced query
            assert self.ok("GET", f"/{path}/0?age=32&created=true")["name"] == "Doug"
            self.error("GET", f"/{path}/0?age=33", status=404, name="NotFound",
                       message="No record found for id '0'")

    def test_values_that_do_not_fit_are_rejected_with_the_validator_errors(self):
        self.seed()
        cases = {
            "age=abc": [("/age", "number")],
            "created=yes": [("/created", "boolean")],
            "id=x": [("/id", "number")],
            "age[$gt]=abc": [("/age/$gt", "number")],
            "age[$in][0]=1&age[$in][1]=b": [("/age/$in/1", "number")],
            "$or[0][age]=x": [("/$or/0/age", "number")],
            "$and[0][created]=1": [("/$and/0/created", "boolean")],
            "age=x&created=y": [("/age", "number"), ("/created", "boolean")],
        }
        for query, expected in cases.items():
            for path in ("/people", "/people-paginated", "/people/0"):
                code, _, body = self.call("GET", f"{path}?{query}")
                assert code == 400 and body["name"] == "BadRequest" and body["message"] == "validation failed"
                assert [(e["instancePath"], e["params"]["type"]) for e in body["data"]] == expected, (query, body)
                assert all(e["keyword"] == "type" and e["message"] == f"must be {e['params']['type']}"
                           for e in body["data"])
        # a rejected query changes nothing
        code, _, _ = self.call("PATCH", "/people-paginated?age=abc", {"name": "x"})
        assert code == 400
        code, _, _ = self.call("DELETE", "/people-paginated?age=abc")
        assert code == 400
        assert [r["name"] for r in self.everyone()] == ["Doug", "Alice", "Bob"]

    def test_customid_is_a_number_field_of_its_group(self):
        self.seed("people-customid")
        code, _, body = self.call("GET", "/people-customid?customid=abc")
        assert code == 400 and body["data"][0]["instancePath"] == "/customid"
        assert [r["customid"] for r in self.ok("GET", "/people-customid?customid[$gte]=1")] == [1, 2]

    def test_query_syntax_of_the_adapter(self):
        self.seed()
        assert self.ok("GET", "/people?$select[0]=age&$sort[age]=1") == [
            {"id": 1, "age": 25}, {"id": 0, "age": 32}, {"id": 2, "age": 40}]
        assert self.ok("GET", "/people?$select[]=name&$select[]=age&$limit=1") == [
            {"id": 0, "name": "Doug", "age": 32}]
        assert [r["name"] for r in self.ok("GET", "/people?name[$in]=Alice&name[$in]=Bob")] == ["Alice", "Bob"]
        assert [r["name"] for r in self.ok("GET", "/people?name[$eq]=Bob")] == ["Bob"]

    def test_echo_gets_the_raw_query_without_coercion(self):
        body = self.ok("GET", "/echo?age=32&created=true&$limit=2&$sort[age]=-1")
        assert body["query"] == {"age": "32", "created": "true", "$limit": "2", "$sort": {"age": "-1"}}


# =============================================================================================
# §6 Pagination
# =============================================================================================


class TestPagination(ConformanceCase):
    def setUp(self):
        super().setUp()
        # 120 records through the plain view: every view of the group sees them
        names = [f"n{i:03d}" for i in range(120)]
        self.created = self.ok("POST", "/people-paginated", [{"name": n, "age": i % 7} for i, n in enumerate(names)],
                               status=201)

    def page(self, query: str = "", path: str = "people-paginated") -> dict:
        body = self.ok("GET", f"/{path}" + (f"?{query}" if query else ""))
        assert set(body) == {"total", "limit", "skip", "data"}
        return body

    def test_the_table_on_a_plain_and_a_paginated_service(self):
        plain = self.ok("GET", "/people")
        assert isinstance(plain, list) and len(plain) == 120
        page = self.page()
        assert (page["total"], page["limit"], page["skip"]) == (120, 10, 0) and page["data"] == plain[:10]

        assert self.ok("GET", "/people?$limit=2") == plain[:2]
        page = self.page("$limit=2")
        assert (page["total"], page["limit"], page["skip"], page["data"]) == (120, 2, 0, plain[:2])

        assert self.ok("GET", "/people?$limit=1000") == plain
        page = self.page("$limit=1000")
        assert (page["total"], page["limit"], page["data"]) == (120, 100, plain[:100])

        assert self.ok("GET", "/people?$limit=0") == []
        assert self.page("$limit=0") == {"total": 120, "limit": 0, "skip": 0, "data": []}

        assert self.ok("GET", "/people?$skip=500") == []
        assert self.page("$skip=500") == {"total": 120, "limit": 10, "skip": 500, "data": []}

        by_name_desc = sorted(plain, key=lambda r: r["name"], reverse=True)
        assert self.ok("GET", "/people?$skip=1&$sort[name]=-1") == by_name_desc[1:]
        page = self.page("$skip=1&$sort[name]=-1")
        assert (page["skip"], page["limit"], page["data"]) == (1, 10, by_name_desc[1:11])

    def test_total_counts_every_match_ignoring_limit_and_skip(self):
        matching = [r for r in self.created if r["age"] == 3]
        page = self.page("age=3&$limit=2&$skip=1")
        assert page["total"] == len(matching) and page["data"] == matching[1:3]
        assert (page["limit"], page["skip"]) == (2, 1)

    def test_the_small_view_caps_at_its_max(self):
        page = self.page(path="people-paginated-small")
        assert (page["total"], page["limit"], page["skip"], len(page["data"])) == (120, 1, 0, 1)
        page = self.page("$limit=1000", path="people-paginated-small")
        assert (page["limit"], len(page["data"])) == (2, 2)
        page = self.page("$limit=0", path="people-paginated-small")
        assert page == {"total": 120, "limit": 0, "skip": 0, "data": []}

    def test_customid_group_paginates_the_same(self):
        self.ok("POST", "/people-customid-paginated", [{"name": f"c{i}"} for i in range(15)], status=201)
        page = self.page(path="people-customid-paginated")
        assert (page["total"], page["limit"], [r["customid"] for r in page["data"]]) == (15, 10, list(range(10)))
        page = self.page("$limit=1000", path="people-customid-paginated-small")
        assert (page["total"], page["limit"]) == (15, 2)

    def test_multi_calls_answer_plain_arrays_never_cut_by_the_page(self):
        made = self.ok("POST", "/people-paginated", [{"name": "x1"}, {"name": "x2"}], status=201)
        assert isinstance(made, list) and len(made) == 2
        patched = self.ok("PATCH", "/people-paginated?age=2", {"tag": "two"})
        assert isinstance(patched, list) and len(patched) == len([r for r in self.created if r["age"] == 2]) > 10
        removed = self.ok("DELETE", "/people-paginated?$limit=5")
        assert isinstance(removed, list) and len(removed) == 122
        assert self.page() == {"total": 0, "limit": 10, "skip": 0, "data": []}


# =============================================================================================
# §7 The multi option
# =============================================================================================


class TestMulti(ConformanceCase):
    def test_multi_off_refuses_array_post_and_idless_patch_and_delete(self):
        for path in ("people", "people-paginated-small", "people-customid", "people-customid-paginated-small"):
            before = self.seed(path)
            self.error("POST", f"/{path}", [{"name": "x"}, {"name": "y"}], status=405, name="MethodNotAllowed",
                       message="Can not create multiple entries")
            self.error("PATCH", f"/{path}", {"name": "x"}, status=405, name="MethodNotAllowed",
                       message="Can not patch multiple entries")
            self.error("DELETE", f"/{path}?name=Doug", status=405, name="MethodNotAllowed",
                       message="Can not remove multiple entries")
            plain = path.replace("-paginated-small", "")
            assert self.everyone(plain) == before
            self.ok("DELETE", f"/{plain}-paginated")  # clear the group for the next round

    def test_multi_on_allows_all_three(self):
        for path, id_field in (("people-paginated", "id"), ("people-customid-paginated", "customid")):
            made = self.ok("POST", f"/{path}", [{"name": "a"}, {"name": "b"}], status=201)
            assert [r[id_field] for r in made] == [0, 1]
            assert len(self.ok("PATCH", f"/{path}", {"x": 1})) == 2
            assert len(self.ok("DELETE", f"/{path}")) == 2

    def test_a_failing_item_in_a_multi_create_stores_none(self):
        self.error("POST", "/people-paginated", [{"name": "ok"}, "not an object"], status=400,
                   name="BadRequest", message="Data must be an object")
        assert self.everyone() == []
        assert self.ok("POST", "/people", {"name": "first"}, status=201)["id"] == 0

    def test_put_without_id_is_never_allowed_and_find_always_is(self):
        self.seed()
        for path in ("people", "people-paginated", "people-paginated-small"):
            self.error("PUT", f"/{path}", {"name": "x"}, status=400, name="BadRequest",
                       message="You can not replace multiple instances. Did you mean 'patch'?")
            code, _, _ = self.call("GET", f"/{path}")
            assert code == 200
        assert [r["name"] for r in self.everyone()] == ["Doug", "Alice", "Bob"]


# =============================================================================================
# §8 Route placeholders
# =============================================================================================


class TestRoutePlaceholders(ConformanceCase):
    def test_route_values_reach_the_service_as_strings(self):
        made = self.ok("POST", "/users/7/messages", {"text": "hi", "userId": "other"}, status=201)
        assert made == {"text": "hi", "userId": "7", "id": 0}
        assert self.ok("GET", "/users/7/messages/0") == made
        assert self.ok("GET", "/users/7/messages") == [made]

    def test_another_users_record_is_not_found_and_unseen(self):
        mine = self.ok("POST", "/users/7/messages", {"text": "mine"}, status=201)
        theirs = self.ok("POST", "/users/8/messages", {"text": "theirs"}, status=201)
        assert self.ok("GET", "/users/7/messages") == [mine]
        assert self.ok("GET", "/users/8/messages") == [theirs]
        message = f"No record found for id '{theirs['id']}'"
        for method, body in (("GET", None), ("PUT", {"text": "x"}), ("PATCH", {"text": "x"}), ("DELETE", None)):
            self.error(method, f"/users/7/messages/{theirs['id']}", body, status=404, name="NotFound",
                       message=message)
        assert self.ok("GET", "/users/8/messages") == [theirs]
        # a query naming another user cannot widen the view
        assert self.ok("GET", "/users/7/messages?userId=8") == [mine]

    def test_update_patch_remove_keep_the_owner(self):
        mine = self.ok("POST", "/users/7/messages", {"text": "v1"}, status=201)
        path = f"/users/7/messages/{mine['id']}"
        assert self.ok("PUT", path, {"text": "v2", "userId": "8"}) == {"text": "v2", "userId": "7", "id": 0}
        assert self.ok("PATCH", path, {"text": "v3", "userId": "8"}) == {"text": "v3", "userId": "7", "id": 0}
        assert self.ok("GET", "/users/8/messages") == []
        assert self.ok("DELETE", path) == {"text": "v3", "userId": "7", "id": 0}
        assert self.ok("GET", "/users/7/messages") == []

    def test_messages_have_no_multi(self):
        self.ok("POST", "/users/7/messages", {"text": "a"}, status=201)
        self.error("POST", "/users/7/messages", [{"text": "b"}], status=405, name="MethodNotAllowed",
                   message="Can not create multiple entries")
        self.error("DELETE", "/users/7/messages", status=405, name="MethodNotAllowed",
                   message="Can not remove multiple entries")
        self.error("PATCH", "/users/7/messages", {"text": "b"}, status=405, name="MethodNotAllowed",
                   message="Can not patch multiple entries")

    def test_the_placeholder_path_does_not_shadow_the_users_service(self):
        self.sign_up()
        self.error("GET", "/users/0", status=401, name="NotAuthenticated", message="Not authenticated")
        self.error("GET", "/users/7/messages/0/extra", status=404, name="NotFound",
                   message="Path /users/7/messages/0/extra not found")


# =============================================================================================
# §9 Authentication
# =============================================================================================


def _token(payload_overrides: dict | None = None, *, secret: str = SECRET, headers=None, **kw) -> str:
    now = int(time.time())
    payload = {"iat": now, "exp": now + 3600, "aud": AUDIENCE, "sub": "0", "jti": str(uuid.uuid4())}
    payload.update(payload_overrides or {})
    return jwt.encode(payload, secret, algorithm="HS256", headers=headers or {"typ": "access"}, **kw)


class TestAuthentication(ConformanceCase):
    def test_sign_up_is_public_and_never_returns_the_password(self):
        code, _, body = self.call("POST", "/users", {"email": "dev@example.com", "password": "s3cret-pass"})
        assert code == 201 and body == {"email": "dev@example.com", "id": 0}
        stored = self.feathers.service("users").service.store.records["0"]
        assert stored["password"].startswith("$argon2id$") and "s3cret-pass" not in stored["password"]

    def test_local_login(self):
        self.sign_up()
        before = int(time.time())
        body = self.login()
        after = int(time.time())
        assert set(body) == {"accessToken", "authentication", "user"}
        assert body["user"] == {"email": "dev@example.com", "id": 0}
        assert body["authentication"] == {"strategy": "local", "payload": body["authentication"]["payload"]}
        token = body["accessToken"]
        assert jwt.get_unverified_header(token) == {"alg": "HS256", "typ": "access"}
        payload = jwt.decode(token, SECRET, algorithms=["HS256"], audience=AUDIENCE)
        assert body["authentication"]["payload"] == payload
        assert set(payload) == {"iat", "exp", "aud", "sub", "jti"}
        assert before <= payload["iat"] <= after and payload["exp"] == payload["iat"] + 86400
        assert payload["aud"] == AUDIENCE and payload["sub"] == "0"
        assert str(uuid.UUID(payload["jti"])) == payload["jti"]

    def test_jwt_strategy_answers_the_same_token(self):
        token = self.token()
        body = self.ok("POST", "/authentication", {"strategy": "jwt", "accessToken": token}, status=201)
        payload = jwt.decode(token, SECRET, algorithms=["HS256"], audience=AUDIENCE)
        assert body == {"accessToken": token,
                        "authentication": {"strategy": "jwt", "accessToken": token, "payload": payload},
                        "user": {"email": "dev@example.com", "id": 0}}

    def test_logout(self):
        token = self.token()
        payload = jwt.decode(token, SECRET, algorithms=["HS256"], audience=AUDIENCE)
        code, _, body = self.call("DELETE", "/authentication", headers=bearer(token))
        assert code == 200
        assert body == {"accessToken": token,
                        "authentication": {"strategy": "jwt", "accessToken": token, "payload": payload},
                        "user": {"email": "dev@example.com", "id": 0}}
        self.error("DELETE", "/authentication", status=401, name="NotAuthenticated",
                   message="Invalid authentication information (no `strategy` set)")

    def test_find_on_authentication_is_405(self):
        self.error("GET", "/authentication", status=405, name="MethodNotAllowed",
                   message="Method `find` is not supported by this endpoint.")

    def test_sending_the_token(self):
        token = self.token()
        for header in (f"Bearer {token}", f"bearer {token}", f"BEARER {token}", token):
            assert self.ok("GET", "/users/0", headers={"Authorization": header})["email"] == "dev@example.com"
        self.error("GET", "/users/0", headers={"Authorization": f"Basic {token}"}, status=401,
                   name="NotAuthenticated", message="Not authenticated")

    def test_every_failure_row(self):
        self.sign_up()
        login = {"strategy": "local", "email": "dev@example.com"}
        self.error("POST", "/authentication", {**login, "password": "wrong"}, status=401,
                   name="NotAuthenticated", message="Invalid login")
        self.error("POST", "/authentication", {**login, "email": "nobody@example.com", "password": "s3cret-pass"},
                   status=401, name="NotAuthenticated", message="Invalid login")
        self.error("POST", "/authentication", login, status=401, name="NotAuthenticated", message="Invalid login")
        self.error("POST", "/authentication", {"email": "dev@example.com", "password": "s3cret-pass"},
                   status=401, name="NotAuthenticated",
                   message="Invalid authentication information (no `strategy` set)")
        self.error("POST", "/authentication", {**login, "strategy": "oauth", "password": "s3cret-pass"},
                   status=401, name="NotAuthenticated",
                   message="Invalid authentication information (strategy not allowed in authStrategies)")
        self.error("GET", "/users", status=401, name="NotAuthenticated", message="Not authenticated")
        self.error("GET", "/users", headers=bearer("not-a-jwt"), status=401, name="NotAuthenticated",
                   message="jwt malformed", data={"name": "JsonWebTokenError"})
        self.error("GET", "/users", headers=bearer(_token(secret="another-secret-" + "y" * 32)), status=401,
                   name="NotAuthenticated", message="invalid signature", data={"name": "JsonWebTokenError"})
        exp = int(time.time()) - 60
        expired_at = datetime.datetime.fromtimestamp(exp, datetime.timezone.utc).isoformat(
            timespec="milliseconds").replace("+00:00", "Z")
        self.error("GET", "/users", headers=bearer(_token({"iat": exp - 100, "exp": exp})), status=401,
                   name="NotAuthenticated", message="jwt expired",
                   data={"name": "TokenExpiredError", "expiredAt": expired_at})
        # the same failures through the jwt strategy of the authentication service
        self.error("POST", "/authentication", {"strategy": "jwt", "accessToken": "not-a-jwt"}, status=401,
                   name="NotAuthenticated", message="jwt malformed", data={"name": "JsonWebTokenError"})

    def test_users_methods_need_a_token_except_create(self):
        token = self.token()
        for method, path, body in (("GET", "/users", None), ("GET", "/users/0", None),
                                   ("PUT", "/users/0", {"email": "x@example.com"}),
                                   ("PATCH", "/users/0", {"email": "x@example.com"}), ("DELETE", "/users/0", None)):
            self.error(method, path, body, status=401, name="NotAuthenticated", message="Not authenticated")
        assert self.ok("GET", "/users/0", headers=bearer(token)) == {"email": "dev@example.com", "id": 0}

    def test_password_is_never_returned_and_users_paginate(self):
        token = self.token()
        auth = bearer(token)
        for i in range(1, 60):
            self.feathers.service("users").service.store.records[str(i)] = {"id": i, "email": f"u{i}@x",
                                                                            "password": "h"}
        page = self.ok("GET", "/users", headers=auth)
        assert (page["total"], page["limit"], page["skip"]) == (60, 10, 0)
        assert all("password" not in r for r in page["data"])
        assert self.ok("GET", "/users?$limit=100", headers=auth)["limit"] == 50
        assert self.ok("PATCH", "/users/5", {"password": "new-pass-1"}, headers=auth) == {"id": 5, "email": "u5@x"}
        stored = self.feathers.service("users").service.store.records["5"]["password"]
        assert stored.startswith("$argon2id$")
        assert self.ok("PUT", "/users/6", {"email": "six@x", "password": "p6-pass"}, headers=auth) == {
            "email": "six@x", "id": 6}
        assert self.ok("DELETE", "/users/7", headers=auth) == {"id": 7, "email": "u7@x"}
        code, _, body = self.call("POST", "/users", [{"email": "a@x", "password": "p"}])
        assert code == 405 and body["message"] == "Can not create multiple entries"

    def test_a_logged_in_user_after_a_password_change_logs_in_with_the_new_one(self):
        token = self.token()
        self.ok("PATCH", "/users/0", {"password": "another-pass"}, headers=bearer(token))
        self.error("POST", "/authentication", {"strategy": "local", "email": "dev@example.com",
                                               "password": "s3cret-pass"},
                   status=401, name="NotAuthenticated", message="Invalid login")
        assert self.login(password="another-pass")["user"]["id"] == 0

    def test_secure_echo_needs_a_token_for_every_method(self):
        self.error("GET", "/secure-echo", status=401, name="NotAuthenticated", message="Not authenticated")
        self.error("POST", "/secure-echo", {"a": 1}, headers={"X-Service-Method": "echo"}, status=401,
                   name="NotAuthenticated", message="Not authenticated")
        token = self.token()
        assert self.ok("GET", "/secure-echo?q=1", headers=bearer(token)) == {
            "method": "find", "query": {"q": "1"}, "route": {}, "provider": "rest"}
        assert self.ok("POST", "/secure-echo", {"a": 1}, headers={"X-Service-Method": "echo", **bearer(token)}) == {
            "method": "echo", "data": {"a": 1}, "query": {}, "route": {}, "provider": "rest"}
        self.error("POST", "/secure-echo", {"a": 1}, headers=bearer(token), status=405, name="MethodNotAllowed",
                   message="Method `create` is not supported by this endpoint.")

    def test_a_token_of_a_removed_user_no_longer_authenticates(self):
        token = self.token()
        self.ok("DELETE", "/users/0", headers=bearer(token))
        self.error("GET", "/secure-echo", headers=bearer(token), status=401, name="NotAuthenticated",
                   message="Not authenticated")


class TestLoginRateLimit(ConformanceCase):
    login_max_failures = 3

    def test_failed_logins_are_rate_limited_with_retry_after(self):
        self.sign_up()
        wrong = {"strategy": "local", "email": "dev@example.com", "password": "wrong"}
        for _ in range(3):
            self.error("POST", "/authentication", wrong, status=401, name="NotAuthenticated", message="Invalid login")
        code, headers, body = self.call("POST", "/authentication", {**wrong, "password": "s3cret-pass"})
        assert code == 429 and body["name"] == "TooManyRequests" and body["className"] == "too-many-requests"
        assert int(headers["Retry-After"]) >= 1 and body["data"]["retryAfter"] == int(headers["Retry-After"])


# =============================================================================================
# §10 Headers, content types, CORS
# =============================================================================================


class TestHeadersAndCors(ConformanceCase):
    def test_json_content_type_and_cors_headers_on_every_response(self):
        self.seed()
        for method, path, body, kw in (("GET", "/people", None, {}), ("GET", "/people/0", None, {}),
                                       ("POST", "/people", {"name": "x"}, {}), ("GET", "/nope", None, {}),
                                       ("PATCH", "/echo", {}, {}), ("GET", "/users", None, {}),
                                       ("POST", "/echo", {}, {"headers": {"X-Service-Method": "nothing"}})):
            code, headers, _ = self.call(method, path, body, **kw)
            assert headers["Access-Control-Allow-Origin"] == "*", (method, path)
            assert "Origin" in [v.strip() for v in headers.get("Vary", "").split(",")], (method, path)
            if code != 204:
                assert headers["Content-Type"] == JSON_CT

    def test_cors_with_an_origin_header(self):
        code, headers, _ = self.call("GET", "/people", headers={"Origin": "https://app.example"})
        assert code == 200 and headers["Access-Control-Allow-Origin"] == "*"

    def test_204_has_no_body_and_no_content_type(self):
        response = self.fetch("/echo", method="POST", body=b"{}", raise_error=False,
                              headers={"X-Service-Method": "nothing", "Content-Type": "application/json"})
        assert response.code == 204 and response.body == b"" and "Content-Type" not in response.headers

    def test_accept_is_ignored_errors_stay_json(self):
        for accept in ("text/html", "text/plain", "application/xml"):
            code, headers, body = self.call("GET", "/nope", headers={"Accept": accept})
            assert code == 404 and headers["Content-Type"] == JSON_CT and body["name"] == "NotFound"
            code, headers, body = self.call("GET", "/people", headers={"Accept": accept})
            assert code == 200 and headers["Content-Type"] == JSON_CT and body == []

    def test_preflight(self):
        for path in ("/people", "/people/0", "/users/7/messages", "/nope"):
            response = self.fetch(path, method="OPTIONS", raise_error=False, headers={
                "Origin": "https://app.example", "Access-Control-Request-Method": "PATCH",
                "Access-Control-Request-Headers": "content-type,authorization"})
            assert response.code == 204 and response.body == b"", path
            assert response.headers["Access-Control-Allow-Methods"] == "GET,HEAD,PUT,POST,DELETE,PATCH"
            assert response.headers["Access-Control-Allow-Headers"] == "content-type,authorization"
            assert response.headers["Access-Control-Allow-Origin"] == "*"

    def test_malformed_json_is_400_bad_request_and_changes_nothing(self):
        for method, path in (("POST", "/people"), ("PUT", "/people/0"), ("PATCH", "/people-paginated"),
                             ("POST", "/authentication")):
            code, headers, body = self.call(method, path, raw='{"name": ')
            assert code == 400 and headers["Content-Type"] == JSON_CT, (method, path, body)
            assert body["name"] == "BadRequest" and body["className"] == "bad-request" and body["code"] == 400
            assert set(body) - {"data"} == ERROR_KEYS
        assert self.everyone() == []

    def test_json_without_a_finite_number_is_400_not_a_crash(self):
        # JSON.parse refuses NaN/Infinity literals; a number beyond double range would reach the service as
        # Infinity and come back as null: both are malformed input, not server faults.
        for raw in ('{"a": NaN}', "NaN", '{"a": Infinity}', '[-Infinity]', '{"a": 1e999}', '{"a": [-1e400]}'):
            for method, path, headers in (("POST", "/people", {}), ("POST", "/echo", {}),
                                          ("POST", "/echo", {"X-Service-Method": "echo"}),
                                          ("PATCH", "/people-paginated", {})):
                code, _, body = self.call(method, path, raw=raw, headers=headers)
                assert code == 400 and body["name"] == "BadRequest", (raw, method, path, code, body)
                assert body["message"].startswith("Invalid JSON body"), body
        assert self.everyone() == []
        assert self.ok("POST", "/echo", raw='{"big": 1e308, "small": -2.5e-300}', status=201)["data"] == {
            "big": 1e308, "small": -2.5e-300}


# =============================================================================================
# §11 The Feathers client's requests
# =============================================================================================


class TestClientRequestForms(ConformanceCase):
    """The requests ``@feathersjs/rest-client`` sends (byte for byte, headers included) are understood."""

    CLIENT = {"Accept": "application/json"}

    def test_find_get_create(self):
        self.seed()
        found = self.ok("GET", "/people?age%5B%24gt%5D=30&%24sort%5Bage%5D=1", headers=self.CLIENT)
        assert [r["name"] for r in found] == ["Doug", "Bob"]
        assert self.ok("GET", "/people/1?%24select%5B0%5D=name", headers=self.CLIENT) == {"id": 1, "name": "Alice"}
        made = self.ok("POST", "/people", {"name": "n"}, status=201,
                       headers={**self.CLIENT, "Content-Type": "application/json"})
        assert made["id"] == 3

    def test_get_with_an_encoded_id(self):
        # encodeURIComponent("a b/c") = "a%20b%2Fc": one segment, delivered as sent
        assert self.ok("GET", "/echo/a%20b%2Fc", headers=self.CLIENT)["id"] == "a%20b%2Fc"

    def test_update_null_patch_and_remove_with_a_query(self):
        self.seed()
        self.error("PUT", "/people", {"name": "x"}, headers=self.CLIENT, status=400, name="BadRequest",
                   message="You can not replace multiple instances. Did you mean 'patch'?")
        patched = self.ok("PATCH", "/people-paginated?created=true", {"flag": 1}, headers=self.CLIENT)
        assert sorted(r["name"] for r in patched) == ["Bob", "Doug"]
        removed = self.ok("DELETE", "/people-paginated?name%5B%24in%5D%5B0%5D=Bob", headers=self.CLIENT)
        assert [r["name"] for r in removed] == ["Bob"]

    def test_custom_method_request(self):
        body = self.ok("POST", "/echo", {"x": [1, 2]}, headers={**self.CLIENT, "X-Service-Method": "echo",
                                                                "Content-Type": "application/json"})
        assert body == {"method": "echo", "data": {"x": [1, 2]}, "query": {}, "route": {}, "provider": "rest"}

    def test_route_filled_from_params(self):
        made = self.ok("POST", "/users/7/messages", {"text": "t"}, status=201, headers=self.CLIENT)
        assert self.ok("GET", "/users/7/messages", headers=self.CLIENT) == [made]

    def test_authenticated_calls_carry_bearer(self):
        token = self.token()
        headers = {**self.CLIENT, **bearer(token)}
        assert self.ok("GET", "/users/0", headers=headers)["email"] == "dev@example.com"


# =============================================================================================
# The conformance app's own rules
# =============================================================================================


class TestConformanceAppRules(ConformanceCase):
    def test_views_of_a_group_share_records_and_one_id_sequence(self):
        for base, id_field in PEOPLE_GROUPS:
            a = self.ok("POST", f"/{base}", {"name": "a"}, status=201)
            b = self.ok("POST", f"/{base}-paginated", {"name": "b"}, status=201)
            c = self.ok("POST", f"/{base}-paginated-small", {"name": "c"}, status=201)
            assert [a[id_field], b[id_field], c[id_field]] == [0, 1, 2]
            for suffix in ("", "-paginated", "-paginated-small"):
                assert self.ok("GET", f"/{base}{suffix}/1") == b
            assert self.ok("GET", f"/{base}") == [a, b, c]
            assert self.ok("GET", f"/{base}-paginated")["data"] == [a, b, c]
            self.ok("PATCH", f"/{base}-paginated-small/2", {"age": 5})
            assert self.ok("GET", f"/{base}/2")["age"] == 5
            self.ok("DELETE", f"/{base}/0")
            assert self.ok("GET", f"/{base}-paginated-small")["total"] == 2

    def test_the_two_groups_are_separate_collections(self):
        self.ok("POST", "/people", {"name": "only-in-people"}, status=201)
        assert self.ok("GET", "/people-customid") == []
        made = self.ok("POST", "/people-customid", {"name": "c"}, status=201)
        assert made == {"name": "c", "customid": 0}
        assert "id" not in made

    def test_customid_is_the_id_field(self):
        made = self.ok("POST", "/people-customid", {"name": "Doug", "age": 32}, status=201)
        assert made == {"name": "Doug", "age": 32, "customid": 0}
        given = self.ok("POST", "/people-customid", {"customid": 9, "name": "Nine"}, status=201)
        assert given == {"customid": 9, "name": "Nine"}
        assert self.ok("GET", "/people-customid/9") == given
        assert self.ok("PUT", "/people-customid/0", {"customid": 5, "name": "D"}) == {"customid": 0, "name": "D"}
        assert self.ok("PATCH", "/people-customid/0?$select[0]=age", {"age": 1, "customid": 3}) == {
            "customid": 0, "age": 1}
        assert self.ok("GET", "/people-customid?$select[0]=name&$sort[customid]=-1") == [
            {"customid": 9, "name": "Nine"}, {"customid": 0, "name": "D"}]
        self.error("GET", "/people-customid/1", status=404, name="NotFound", message="No record found for id '1'")
        assert self.ok("DELETE", "/people-customid/9") == given

    def test_generated_ids_skip_ids_given_earlier(self):
        self.ok("POST", "/people", {"id": 0, "name": "given zero"}, status=201)
        self.ok("POST", "/people", {"id": 1, "name": "given one"}, status=201)
        assert self.ok("POST", "/people", {"name": "generated"}, status=201)["id"] == 2

    def test_records_are_free_form(self):
        record = {"name": "x", "nested": {"a": [1, {"b": None}]}, "tags": ["t"], "score": 1.5, "flag": False}
        made = self.ok("POST", "/people", record, status=201)
        assert made == {**record, "id": 0}
        assert self.ok("GET", "/people/0") == made

    def test_a_fresh_app_is_empty(self):
        assert self.ok("GET", "/people") == [] and self.ok("GET", "/people-customid") == []
        assert self.ok("GET", "/users/1/messages") == []
        self.error("POST", "/authentication", {"strategy": "local", "email": "a@x", "password": "p"}, status=401,
                   name="NotAuthenticated", message="Invalid login")


# =============================================================================================
# The real command, and the official Feathers JavaScript client (slow: OS processes)
# =============================================================================================

URL_LINE = re.compile(r"listening on (http://[\d.]+:(\d+))")
REPO = Path(__file__).resolve().parent.parent
JS_DIR = REPO / "tests" / "js"
JS_CACHE = Path(os.environ.get("VECGRID_FEATHERS_JS_CACHE", Path.home() / ".cache" / "vecgrid-feathers-js"))
NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ENETUNREACH", "ECONNRESET",
                  "network request", "getaddrinfo")


class RunningApp:
    """``vecgrid conformance-app --port 0`` as a child process; ``url`` once it said it listens."""

    def __init__(self) -> None:
        # the installed console script when there is one (what a user types), else the module
        script = shutil.which("vecgrid", path=str(Path(sys.executable).parent))
        command = [script] if script else [sys.executable, "-m", "vecgrid.cli"]
        self.proc = subprocess.Popen(command + ["conformance-app", "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        self.url = self._wait_for_url(deadline=time.monotonic() + 60)

    def _wait_for_url(self, deadline: float) -> str:
        seen = []
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    break
                seen.append(line)
                if match := URL_LINE.search(line):
                    return match.group(1)
            elif self.proc.poll() is not None:
                break
        self.proc.kill()
        pytest.fail(f"the conformance app did not announce its URL: {seen} {self.proc.stderr.read()}")

    def stop(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, out, err

    def __enter__(self) -> "RunningApp":
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def _request(url: str, method: str = "GET", body=None, headers: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.slow
def test_the_command_serves_announces_its_url_and_stops_cleanly_on_sigterm():
    with RunningApp() as app:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", app.url) and not app.url.endswith(":0")
        assert _request(app.url + "/people") == (200, [])
        assert _request(app.url + "/people", "POST", {"name": "Doug"}) == (201, {"name": "Doug", "id": 0})
        status, page = _request(app.url + "/people-paginated")
        assert status == 200 and page == {"total": 1, "limit": 10, "skip": 0, "data": [{"name": "Doug", "id": 0}]}
        assert _request(app.url + "/users", "POST", {"email": "a@example.com", "password": "pw-123456"}) == (
            201, {"email": "a@example.com", "id": 0})
        status, auth = _request(app.url + "/authentication", "POST",
                                {"strategy": "local", "email": "a@example.com", "password": "pw-123456"})
        assert status == 201
        status, body = _request(app.url + "/secure-echo", "POST", {"x": 1},
                                {"X-Service-Method": "echo", "Authorization": f"Bearer {auth['accessToken']}"})
        assert status == 200 and body["data"] == {"x": 1}
        status, body = _request(app.url + "/nope")
        assert status == 404 and body["message"] == "Path /nope not found"
        # an idle keep-alive connection (as a browser's or fetch's) does not hold the shutdown up
        idle = http.client.HTTPConnection(urllib.parse.urlsplit(app.url).netloc, timeout=30)
        idle.request("GET", "/echo")
        assert idle.getresponse().read()
        code, out, err = app.stop()
        idle.close()
    assert code == 0, (code, out, err)
    assert out == ""  # the URL line was the one line it printed
    assert "Traceback" not in err


@pytest.mark.slow
def test_sigint_stops_it_cleanly_too():
    with RunningApp() as app:
        assert _request(app.url + "/echo")[0] == 200
        app.proc.send_signal(signal.SIGINT)
        out, err = app.proc.communicate(timeout=30)
    assert app.proc.returncode == 0, (out, err)
    assert "Traceback" not in err


def _install_feathers_client() -> Path:
    """``npm ci`` of tests/js/package-lock.json into the cache dir (once per lock file); skips without npm/network."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to run the official Feathers client")
    JS_CACHE.mkdir(parents=True, exist_ok=True)
    lock = (JS_DIR / "package-lock.json").read_text()
    marker = JS_CACHE / "node_modules" / ".vecgrid-lock"
    if not (marker.exists() and marker.read_text() == lock):
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(JS_DIR / name, JS_CACHE / name)
        done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=JS_CACHE,
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            output = done.stdout + done.stderr
            offline = [line for line in output.splitlines() if any(sign in line for sign in NETWORK_ERRORS)]
            if offline:
                pytest.skip(f"npm could not reach its registry: {offline[0].strip()}")
            pytest.fail(f"npm ci failed:\n{output}")
        marker.write_text(lock)
    shutil.copyfile(JS_DIR / "conformance.mjs", JS_CACHE / "conformance.mjs")
    return JS_CACHE / "conformance.mjs"


@pytest.mark.slow
def test_the_official_feathers_client_against_the_conformance_app():
    script = _install_feathers_client()
    with RunningApp() as app:
        done = subprocess.run(["node", str(script), app.url], capture_output=True, text=True, timeout=300)
        code, _, err = app.stop()
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["failed"] == [] and summary["passed"] == summary["total"] >= 9, summary
    assert code == 0 and "Traceback" not in err
