"""The OpenAPI 3.1 document of a Feathers app (vecgrid.http.feathers.openapi) and GET /openapi.json.

The document is validated with the official OpenAPI 3.1 meta-schema (the copy Schemathesis ships,
run by jsonschema_rs), every embedded Schema Object with the JSON Schema 2020-12 meta-schema.
"""

from __future__ import annotations

import json

import pytest
from tornado.testing import AsyncHTTPTestCase

from vecgrid.http.feathers.adapters.memory import MemoryService
from vecgrid.http.feathers.conformance import build_app
from vecgrid.http.feathers.application import Application
from vecgrid.http.feathers.authentication import authenticate
from vecgrid.http.feathers.openapi import openapi_document
from vecgrid.http.feathers.rest import make_tornado_app
from tests.openapi_support import openapi_31_errors, assert_valid_openapi_31

PEOPLE_FIELDS = {"name": "string", "age": "number", "created": "boolean", "id": "number"}


class Echo:
    async def find(self, params):
        return {"query": params["query"]}

    async def echo(self, data, params):
        return data

    async def nothing(self, data, params):
        return None


class CustomOnly:
    async def ping(self, data, params):
        return {"pong": True}


class Accounts:
    async def get(self, id, params):
        return {"id": id}


class Plain:
    async def patch(self, id, data, params):
        return data

    async def remove(self, id, params):
        return None


def small_app() -> Application:
    app = Application({"title": "test API", "version": "9.9"})
    app.use("people", MemoryService(query_schema=PEOPLE_FIELDS))
    app.use("people-paginated", MemoryService(paginate={"default": 10, "max": 100},
                                              multi=["create", "patch"], query_schema=PEOPLE_FIELDS))
    app.use("echo", Echo(), {"methods": ["find", "echo", "nothing"],
                             "docs": {"echo": {"data": {"type": "object"}, "result": {"type": "object"},
                                               "empty": False, "summary": "echoes its body"}}})
    app.use("ping", CustomOnly(), {"methods": ["ping"]})
    app.use("users/:userId/notes", MemoryService(), {
        "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "docs": {"all": {"authenticated": True}, "remove": {"errors": [409]}}})
    app.use("accounts", Accounts(), {"docs": {"get": {"result": {"type": "object"}}}})
    app.use("plain", Plain())
    app.use("plain-multi", Plain(), {"multi": ["remove"]})
    app.service("accounts").hooks({"before": {"get": [authenticate("jwt")]}})
    return app


@pytest.mark.parametrize("build", [small_app, build_app], ids=["small", "conformance"])
def test_document_is_valid_openapi_31(build):
    assert_valid_openapi_31(openapi_document(build()))


def test_validator_rejects_a_broken_document():
    # The check above can fail: a response without a description is not OpenAPI 3.1.
    document = openapi_document(small_app())
    del document["paths"]["/people"]["get"]["responses"]["200"]["description"]
    assert openapi_31_errors(document)


def test_operations_follow_the_rest_mapping():
    paths = openapi_document(small_app())["paths"]
    assert set(paths["/people"]) == {"get", "post"}  # multi off: no collection patch/delete
    assert set(paths["/people/{id}"]) == {"get", "put", "patch", "delete", "parameters"}
    assert set(paths["/people-paginated"]) == {"get", "post", "patch"}  # multi create+patch, not remove
    assert paths["/people"]["post"]["responses"].keys() >= {"201", "400", "default"}
    assert "200" not in paths["/people"]["post"]["responses"]
    for verb in ("get", "put", "patch", "delete"):
        assert paths["/people/{id}"][verb]["responses"].keys() >= {"200", "404", "default"}
    id_param = paths["/people/{id}"]["parameters"][0]
    assert id_param["name"] == "id" and id_param["in"] == "path" and id_param["required"]
    assert id_param["schema"]["type"] == "string"
    ids = {op["operationId"] for item in paths.values() for verb, op in item.items() if verb != "parameters"}
    count = sum(1 for item in paths.values() for verb in item if verb != "parameters")
    assert len(ids) == count  # unique operation ids


def test_route_placeholders_become_path_parameters():
    paths = openapi_document(small_app())["paths"]
    assert "/users/{userId}/notes" in paths and "/users/{userId}/notes/{id}" in paths
    names = [p["name"] for p in paths["/users/{userId}/notes/{id}"]["parameters"]]
    assert names == ["userId", "id"]
    assert all(p["in"] == "path" and p["required"] for p in paths["/users/{userId}/notes/{id}"]["parameters"])


def test_query_parameters_from_the_query_schema_and_filters():
    paths = openapi_document(small_app())["paths"]
    find = {p["name"]: p for p in paths["/people"]["get"]["parameters"]}
    assert set(find) == {"name", "age", "created", "id", "$limit", "$skip", "$sort", "$select"}
    assert find["age"]["schema"] == {"type": "number"} and find["created"]["schema"] == {"type": "boolean"}
    assert find["$limit"]["schema"] == {"type": "integer", "minimum": 0}
    assert find["$sort"]["style"] == "deepObject"
    assert find["$sort"]["schema"]["properties"]["age"] == {"type": "integer", "enum": [1, -1]}
    assert find["$select"]["schema"]["items"]["enum"] == list(PEOPLE_FIELDS)
    get = {p["name"] for p in paths["/people/{id}"]["get"]["parameters"]}
    assert get == {"name", "age", "created", "id", "$select"}  # no paging on get
    create = {p["name"] for p in paths["/people"]["post"]["parameters"]}
    assert create == {"$select"}  # the query filters nothing on create (facts §4)


def test_find_answers_a_page_object_on_paginated_services_and_an_array_otherwise():
    document = openapi_document(small_app())
    paths, schemas = document["paths"], document["components"]["schemas"]
    plain = paths["/people"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert plain == {"type": "array", "items": {"$ref": "#/components/schemas/people.record"}}
    paged = paths["/people-paginated"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    page = schemas[paged["$ref"].rsplit("/", 1)[1]]
    assert page["required"] == ["total", "limit", "skip", "data"] and page["additionalProperties"] is False
    assert schemas["people.record"]["required"] == ["id"]
    # multi create: an array body answers an array
    body = paths["/people-paginated"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert {"type": "array", "items": {"type": "object"}} in body["anyOf"]


def test_every_error_response_is_the_feathers_error_body():
    document = openapi_document(small_app())
    error = document["components"]["schemas"]["FeathersError"]
    assert error["required"] == ["name", "message", "code", "className"]
    assert set(error["properties"]) == {"name", "message", "code", "className", "data", "errors"}
    assert error["additionalProperties"] is False
    responses = document["components"]["responses"]
    for item in document["paths"].values():
        for verb, operation in item.items():
            if verb == "parameters":
                continue
            assert operation["responses"]["default"] == {"$ref": "#/components/responses/FeathersError"}
            for status, response in operation["responses"].items():
                if status[0] in "45":
                    ref = response["$ref"].rsplit("/", 1)[1]
                    schema = responses[ref]["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/FeathersError"}


def test_custom_methods_share_the_post_operation_with_a_method_header():
    paths = openapi_document(small_app())["paths"]
    ping = paths["/ping"]["post"]
    header = next(p for p in ping["parameters"] if p["in"] == "header")
    assert header == {"name": "X-Service-Method", "in": "header", "required": True,
                      "schema": {"type": "string", "enum": ["ping"]},
                      "description": "the custom method to call"}
    assert "200" in ping["responses"] and "201" not in ping["responses"]
    echo = paths["/echo"]["post"]
    header = next(p for p in echo["parameters"] if p["in"] == "header")
    assert header["required"] and header["schema"]["enum"] == ["echo", "nothing"]
    assert echo["x-feathers-methods"]["echo"] == {"data": {"type": "object"}, "result": {"type": "object"},
                                                  "empty": False, "description": "echoes its body"}
    assert echo["x-feathers-methods"]["nothing"]["empty"] is True  # nothing declared: may be empty
    assert "204" in echo["responses"]


def test_custom_methods_beside_create_make_the_header_optional():
    paths = openapi_document(build_app())["paths"]
    post = paths["/echo"]["post"]
    header = next(p for p in post["parameters"] if p["in"] == "header")
    assert header["required"] is False and header["schema"]["enum"] == ["echo", "nothing"]
    assert {"200", "201", "204"} <= post["responses"].keys()
    assert set(post["x-feathers-methods"]) == {"echo", "nothing"}


def test_registration_schema_docs_and_authentication():
    document = openapi_document(small_app())
    paths, schemas = document["paths"], document["components"]["schemas"]
    record = schemas["users__userId_notes.record"]
    assert record["required"] == ["text", "id"] and record["properties"] == {"text": {"type": "string"}}
    create = paths["/users/{userId}/notes"]["post"]
    body = create["requestBody"]["content"]["application/json"]["schema"]
    assert "required" not in body and body["properties"] == {"text": {"type": "string"}}
    assert create["security"] == [{"bearerAuth": []}] and "401" in create["responses"]
    assert "409" in paths["/users/{userId}/notes/{id}"]["delete"]["responses"]
    assert document["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    # an authenticate('jwt') hook is found without a docs entry
    assert paths["/accounts/{id}"]["get"]["security"] == [{"bearerAuth": []}]
    assert "204" not in paths["/accounts/{id}"]["get"]["responses"]  # a declared result
    assert "security" not in paths["/people"]["get"]


def test_methods_of_unknown_services_may_answer_204():
    paths = openapi_document(small_app())["paths"]
    assert "204" in paths["/echo"]["get"]["responses"]        # nothing declared
    assert "204" not in paths["/people"]["get"]["responses"]  # adapters always answer records


def test_conformance_app_protected_methods_are_marked():
    paths = openapi_document(build_app())["paths"]
    assert "security" not in paths["/users"]["post"]  # sign-up is public
    for verb in ("get",):
        assert paths["/users"][verb]["security"] == [{"bearerAuth": []}]
    for verb in ("get", "put", "patch", "delete"):
        assert paths["/users/{id}"][verb]["security"] == [{"bearerAuth": []}]
    assert paths["/secure-echo"]["get"]["security"] == [{"bearerAuth": []}]


class OpenAPIEndpointTest(AsyncHTTPTestCase):
    def get_app(self):
        return make_tornado_app(small_app())

    def test_served_at_openapi_json(self):
        response = self.fetch("/openapi.json")
        assert response.code == 200
        assert response.headers["Content-Type"] == "application/json; charset=utf-8"
        assert response.headers["Access-Control-Allow-Origin"] == "*"
        document = json.loads(response.body)
        assert document["openapi"] == "3.1.0"
        assert document["info"] == {"title": "test API", "version": "9.9"}
        assert "/people/{id}" in document["paths"]
        assert_valid_openapi_31(document)

    def test_other_verbs_on_openapi_json_are_feathers_errors(self):
        response = self.fetch("/openapi.json", method="POST", body=b"{}")
        assert response.code == 405
        body = json.loads(response.body)
        assert body["name"] == "MethodNotAllowed" and body["className"] == "method-not-allowed"


def test_multi_calls_of_services_that_are_no_adapter():
    paths = openapi_document(small_app())["paths"]
    assert set(paths["/plain"]) == {"patch", "delete"}  # unknown: documented (a refusal is a 405)
    assert set(paths["/plain-multi"]) == {"delete"}     # declared: only remove takes multi


def test_vecgrid_services_document_is_valid(tmp_path):
    # The coordinator's services (without accounts, which need a metadata store) mounted on fakes.
    import importlib
    from types import SimpleNamespace

    from tests.conftest import embedded_settings
    from vecgrid.http.services import SERVICE_MODULES, RestContext

    settings = embedded_settings(tmp_path)
    ctx = RestContext(coord=SimpleNamespace(catalog=None, settings=settings), settings=settings,
                      proxy=SimpleNamespace())
    api = Application()
    for module in SERVICE_MODULES:
        if module != "accounts":
            importlib.import_module(f"vecgrid.http.services.{module}").mount(api, ctx)
    document = openapi_document(api)
    assert_valid_openapi_31(document)
    assert "/collections/{collection}/entities/{id}" in document["paths"]
