"""Validation of OpenAPI 3.1 documents for the suite: the official meta-schema (the copy Schemathesis
ships, run by jsonschema_rs) and every embedded Schema Object against JSON Schema 2020-12."""

from __future__ import annotations

import json

import jsonschema_rs


def _schema_objects(node, in_schema=False):
    """Every Schema Object of the document (values under "schema" and the component schemas)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "schema" and isinstance(value, dict):
                yield value
            elif key == "schemas" and isinstance(value, dict):
                yield from value.values()
            yield from _schema_objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _schema_objects(value)


def openapi_31_errors(document: dict) -> list:
    # imported here: schemathesis costs seconds to import, in every pytest process that collects this
    from schemathesis.specs.openapi.definitions import OPENAPI_31_VALIDATOR

    return list(OPENAPI_31_VALIDATOR.iter_errors(document))


def assert_valid_openapi_31(document: dict) -> None:
    errors = [e.message for e in openapi_31_errors(document)]
    assert not errors, errors
    for schema in _schema_objects(document):
        jsonschema_rs.meta.validate({"$schema": "https://json-schema.org/draft/2020-12/schema", **schema})
    json.dumps(document, allow_nan=False)  # plain JSON
