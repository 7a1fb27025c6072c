"""Regressions for what Schemathesis found on the real app (tests/test_rest_fuzz.py), each checked
here without a cluster: the services on fakes that fail at the first thing past the point the bug was."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vecgrid import errors
from vecgrid.http.services.collections import CollectionsService
from vecgrid.http.services.partitions import PartitionsService


class _NoCollections:
    def describe_collection(self, db, name):
        raise errors.CollectionNotFound(f"collection {name!r} not found")


def _ctx():
    return SimpleNamespace(coord=SimpleNamespace(catalog=_NoCollections()), proxy=None, datacoord=None)


@pytest.mark.parametrize("call", [
    lambda: CollectionsService(_ctx()).load({"name": "nope", "timeout": None}, {}),
    lambda: PartitionsService(_ctx()).load({"partitions": ["p"], "timeout": None}, {"route": {"collection": "nope"}}),
], ids=["collections", "partitions"])
async def test_a_null_load_timeout_is_the_default_not_a_500(call):
    # was: TypeError ('<=' between None and int), a 500; null means "not given" for every other key
    with pytest.raises(errors.CollectionNotFound):
        await call()
