"""Every method the data-plane services expose (standard and custom) has its right in ``RIGHTS``: reads
need ``read``, everything else ``write`` (the authorization hook refuses a method a service does not list)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vecgrid.http.feathers.application import Application
from vecgrid.http.services import RestContext
from tests.conftest import embedded_settings

MODULES = ["collections", "partitions", "indexes", "import_jobs"]


@pytest.mark.parametrize("module", MODULES)
def test_every_exposed_method_has_its_right(module, tmp_path):
    import importlib

    settings = embedded_settings(tmp_path)
    ctx = RestContext(coord=SimpleNamespace(catalog=None, settings=settings), settings=settings)
    api = Application()
    importlib.import_module(f"vecgrid.http.services.{module}").mount(api, ctx)
    assert api.services
    for path, registered in api.services.items():
        rights = type(registered.service).RIGHTS
        assert set(registered.methods) == set(rights), path
        for method in registered.methods:
            assert rights[method] == ("read" if method in ("find", "get") else "write"), (path, method)


def test_the_coordinators_app_mounts_them(tmp_path, monkeypatch):
    from vecgrid.http import services
    from vecgrid.http.app import build_api

    monkeypatch.setattr(services, "SERVICE_MODULES", tuple(MODULES))
    settings = embedded_settings(tmp_path)
    api = build_api(RestContext(coord=SimpleNamespace(catalog=None, settings=settings), settings=settings))
    assert {"collections", "collections/:collection/partitions", "collections/:collection/indexes",
            "import-jobs"} <= set(api.services)
    assert api.lookup("/collections/c1/partitions/p1").route == {"collection": "c1"}
