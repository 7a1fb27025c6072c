"""The coordinator's whole OpenAPI document (services on fakes, auth on) and the ``/docs`` page, with
no cluster: every body-taking operation documents its body, custom methods each have a body and a
working example, login/logout are named as such, the plain and Milvus v2 routes are there, and the
docs page loads nothing from outside the server."""

from __future__ import annotations

import json
import re
import shutil
from types import SimpleNamespace

import jsonschema_rs
from tornado.testing import AsyncHTTPTestCase

from tests.conftest import secured_settings
from tests.openapi_support import assert_valid_openapi_31
from vecgrid.http import milvus_v2
from vecgrid.http.app import make_app
from vecgrid.http.feathers.openapi import METHOD_HEADER, method_document
from vecgrid.http.services import RestContext
from vecgrid.storage.kv import SQLiteMetaStore

BODY_VERBS = ("post", "put", "patch")


def _body_schema(operation: dict) -> dict | None:
    return operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")


def _resolve(document: dict, schema: dict) -> dict:
    """``schema`` with the document's components, for a standalone validator."""
    return {**schema, "components": document["components"]}


class DocumentTest(AsyncHTTPTestCase):
    def get_app(self):
        import tempfile
        from pathlib import Path

        self.tmp = Path(tempfile.mkdtemp())
        settings = secured_settings(self.tmp, "admin@x.io", "correct horse battery")
        self.store = SQLiteMetaStore(self.tmp / "meta.db")
        ctx = RestContext(coord=SimpleNamespace(catalog=None, settings=settings), settings=settings,
                          proxy=SimpleNamespace(), store=self.store)
        return make_app(ctx)

    def tearDown(self):
        super().tearDown()
        self.store.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def document(self) -> dict:
        response = self.fetch("/openapi.json")
        assert response.code == 200
        return json.loads(response.body)

    def test_document_is_valid_and_complete(self):
        document = self.document()
        assert_valid_openapi_31(document)
        paths = document["paths"]
        for path in ("/health", "/version", "/metrics", "/openapi.json", "/docs", "/"):
            assert "get" in paths[path], path
        assert set(paths["/metrics"]["get"]["responses"]["200"]["content"]) == {"text/plain"}
        assert {"200", "503"} <= set(paths["/health"]["get"]["responses"])
        for group, actions in milvus_v2.GROUPS.items():
            for action in actions:
                operation = paths[f"/v2/vectordb/{group}/{action}"]["post"]
                assert _body_schema(operation), (group, action)
        # services that take no multi calls declare it: no collection PATCH / DELETE documented for them
        assert not {"patch", "delete"} & set(paths["/collections"])
        assert "delete" in paths["/collections/{collection}/entities"]   # multi remove of the adapter
        missing = [f"{verb.upper()} {path}" for path, item in paths.items() for verb, op in item.items()
                   if verb in BODY_VERBS and _body_schema(op) in (None, {})]
        assert not missing, missing

    def test_custom_methods_have_bodies_and_examples_that_fit_them(self):
        document = self.document()
        seen = []
        for path, item in document["paths"].items():
            operation = item.get("post", {})
            for name, contract in operation.get("x-feathers-methods", {}).items():
                seen.append(f"{path} {name}")
                assert contract["data"] not in ({}, None), (path, name)
                example = operation["requestBody"]["content"]["application/json"]["examples"][name]
                assert METHOD_HEADER in example["summary"]
                validator = jsonschema_rs.validator_for(_resolve(document, contract["data"]))
                assert validator.is_valid(example["value"]), (path, name, example["value"])
                body = _body_schema(operation)
                titles = [s.get("title") for s in body.get("anyOf", [body])]
                assert name in titles, (path, titles)
        assert "/collections/{collection}/entities search" in seen and "/collections load" in seen, seen

    def test_search_body_is_visible_in_the_post_operation(self):
        operation = self.document()["paths"]["/collections/{collection}/entities"]["post"]
        search = next(s for s in _body_schema(operation)["anyOf"] if s.get("title") == "search")
        assert {"vectors", "limit", "filter"} <= set(search["properties"])
        assert "### `search`" in operation["description"]

    def test_method_document_narrows_to_one_custom_method(self):
        document = self.document()
        narrowed = method_document(document, "/collections/{collection}/entities", "count")
        (item,) = narrowed["paths"].values()
        operation = item["post"]
        header = next(p for p in operation["parameters"] if p["name"] == METHOD_HEADER)
        assert header["required"] and header["schema"]["enum"] == ["count"]
        assert "201" not in operation["responses"]
        assert_valid_openapi_31(narrowed)

    def test_login_and_logout_are_named_and_secured(self):
        document = self.document()
        login = document["paths"]["/authentication"]["post"]
        assert login["summary"].startswith("Log in")
        assert "security" not in login   # logging in needs no token
        strategies = {s["title"] for s in _body_schema(login)["oneOf"]}
        assert strategies == {"local", "jwt"}
        assert set(login["responses"]["201"]["content"]["application/json"]["schema"]["required"]) == \
            {"accessToken", "authentication", "user"}
        logout = document["paths"]["/authentication/{id}"]["delete"]
        assert logout["summary"].startswith("Log out") and logout["security"] == [{"bearerAuth": []}]
        assert document["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
        # with auth on, data routes ask for the token
        assert document["paths"]["/collections"]["get"]["security"] == [{"bearerAuth": []}]
        assert "security" not in document["paths"]["/health"]["get"]

    def test_docs_page_and_index_load_only_local_files(self):
        page = self.fetch("/docs")
        assert page.code == 200 and page.headers["Content-Type"].startswith("text/html")
        html = page.body.decode()
        refs = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert refs and all(r.startswith("/docs/static/") for r in refs), refs
        assert "http:" not in html and "https:" not in html and "//" not in html.replace("<!DOCTYPE", "")
        for ref in refs:
            asset = self.fetch(ref)
            assert asset.code == 200 and len(asset.body) > 100, ref
        init = self.fetch("/docs/static/docs-init.js").body.decode()
        assert '"/openapi.json"' in init and "validatorUrl: null" in init
        assert "http:" not in init and "https:" not in init
        assert self.fetch("/docs/static/../app.py").code == 404
        index = self.fetch("/").body.decode()
        assert 'href="/docs"' in index and 'href="/console"' in index

    def test_docs_are_public_with_auth_on(self):
        assert self.fetch("/docs").code == 200 and self.fetch("/openapi.json").code == 200
        assert self.fetch("/collections").code == 401
