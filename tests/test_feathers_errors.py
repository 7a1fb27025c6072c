"""Feathers error classes by name (feathers-rest-facts.md §2)."""

from __future__ import annotations

import pytest

from vecgrid.common import feathers_errors
from vecgrid.common.feathers_errors import FeathersError

TABLE = [
    ("BadRequest", 400, "bad-request"), ("NotAuthenticated", 401, "not-authenticated"),
    ("PaymentError", 402, "payment-error"), ("Forbidden", 403, "forbidden"), ("NotFound", 404, "not-found"),
    ("MethodNotAllowed", 405, "method-not-allowed"), ("NotAcceptable", 406, "not-acceptable"),
    ("Timeout", 408, "timeout"), ("Conflict", 409, "conflict"), ("Gone", 410, "gone"),
    ("LengthRequired", 411, "length-required"), ("Unprocessable", 422, "unprocessable"),
    ("TooManyRequests", 429, "too-many-requests"), ("GeneralError", 500, "general-error"),
    ("NotImplemented", 501, "not-implemented"), ("BadGateway", 502, "bad-gateway"),
    ("Unavailable", 503, "unavailable"),
]


@pytest.mark.parametrize("name, code, class_name", TABLE)
def test_error_class_body(name, code, class_name):
    """§2: name, code and className of every Feathers error; no other keys unless data/errors are set."""
    cls = getattr(feathers_errors, name)
    err = cls("went wrong")
    assert isinstance(err, FeathersError) and err.code == code and err.class_name == class_name
    assert err.to_dict() == {"name": name, "message": "went wrong", "code": code, "className": class_name}
    assert feathers_errors.ERROR_CLASSES[name] is cls


def test_data_and_errors_only_when_set():
    """§2: `data` and `errors` appear only when the error carries them."""
    body = feathers_errors.BadRequest("Invalid query parameter $like", data={"$like": "x"}).to_dict()
    assert body == {"name": "BadRequest", "message": "Invalid query parameter $like", "code": 400,
                    "className": "bad-request", "data": {"$like": "x"}}
    body = feathers_errors.Unprocessable("no", errors=[{"field": "a"}]).to_dict()
    assert body["errors"] == [{"field": "a"}] and "data" not in body
