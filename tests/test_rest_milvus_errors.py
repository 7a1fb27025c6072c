"""Milvus errors leave the REST app as the Feathers errors of rest-api.md's table, with the code in data."""

from __future__ import annotations

import json

import pytest
from tornado.testing import AsyncHTTPTestCase

from vecgrid import errors
from vecgrid.common.feathers_errors import BadRequest
from vecgrid.http.feathers.application import Application
from vecgrid.http.feathers.rest import make_tornado_app
from vecgrid.http.milvus_errors import feathers_error, milvus_error_hook


@pytest.mark.parametrize("error, status, name", [
    (errors.CollectionNotFound(collection="c"), 404, "NotFound"),
    (errors.PartitionNotFound(partition="p"), 404, "NotFound"),
    (errors.IndexNotFound(), 404, "NotFound"),
    (errors.CollectionNotLoaded(collection="c"), 409, "Conflict"),
    (errors.ParameterInvalid("dim 3 != 4"), 400, "BadRequest"),
    (errors.RateLimitExceeded(), 429, "TooManyRequests"),
    (errors.ServiceQuotaExceeded(), 429, "TooManyRequests"),
    (errors.ServiceNotReady(), 503, "Unavailable"),
    (errors.Timeout(), 408, "Timeout"),
    (errors.SegmentLoadFailed(), 500, "GeneralError"),
    # a search that met a segment released under it (a balance moved it): retry, not a server fault
    (errors.SegmentNotLoaded(segment=7), 503, "Unavailable"),
    (errors.SegmentLack(), 503, "Unavailable"),
])
def test_mapping(error, status, name):
    mapped = feathers_error(error)
    assert (mapped.code, mapped.name) == (status, name)
    assert mapped.data == {"milvusCode": error.code, "retriable": error.retriable or status == 503}
    assert mapped.message.startswith(error.message)


@pytest.mark.parametrize("error", [
    errors.ChannelNotFound(channel="dml_0"),        # a channel moving back to a restarted node
    errors.ChannelNotAvailable(channel="dml_0"),
    errors.SegmentNotLoaded(segment=7),
    errors.ServiceNotReady(),
])
def test_a_moving_state_is_503_and_retriable(error):
    """A read or a delete routed while a channel or segment moves is told to try again, never that the
    row does not exist: a client reading 404 on delete as "already gone" would lose a live row."""
    mapped = feathers_error(error)
    assert (mapped.code, mapped.name) == (503, "Unavailable")
    assert mapped.data["retriable"] is True and mapped.data["milvusCode"] == error.code


def test_not_loaded_says_what_to_do():
    assert "load" in feathers_error(errors.CollectionNotLoaded(collection="c")).message.split(";", 1)[1]


class Failing:
    def __init__(self):
        self.error = None

    async def find(self, params):
        raise self.error


class HookOverHttpTest(AsyncHTTPTestCase):
    def get_app(self):
        self.service = Failing()
        app = Application()
        app.hooks({"error": {"all": [milvus_error_hook]}})
        app.use("things", self.service)
        return make_tornado_app(app)

    def test_a_milvus_error_is_a_feathers_body(self):
        self.service.error = errors.CollectionNotLoaded(collection="books")
        response = self.fetch("/things", raise_error=False)
        body = json.loads(response.body)
        assert response.code == 409 and body["name"] == "Conflict" and body["className"] == "conflict"
        assert body["data"] == {"milvusCode": 101, "retriable": False}

    def test_feathers_errors_pass_unchanged(self):
        self.service.error = BadRequest("no", data={"x": 1})
        body = json.loads(self.fetch("/things", raise_error=False).body)
        assert body == {"name": "BadRequest", "message": "no", "code": 400, "className": "bad-request",
                        "data": {"x": 1}}
