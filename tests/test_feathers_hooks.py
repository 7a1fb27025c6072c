"""Feathers application hooks: order, skipping the method, error hooks, context fields."""

from __future__ import annotations

import asyncio

import pytest

from vecgrid.http.feathers.application import Application, HookContext
from vecgrid.common.feathers_errors import BadRequest, Forbidden, MethodNotAllowed, NotFound


class Things:
    def __init__(self) -> None:
        self.calls = 0

    async def get(self, id, params):
        self.calls += 1
        if id == "missing":
            raise NotFound(f"No record found for id '{id}'")
        return {"id": id, "route": params.get("route")}

    def create(self, data, params):  # sync service methods are allowed
        self.calls += 1
        return dict(data)

    async def ping(self, data, params):
        return {"pong": data}


def make_app():
    app = Application()
    things = Things()
    app.use("/things/", things, {"methods": ["get", "create", "ping"]})
    return app, things


def test_hook_order_app_wraps_service_and_context_fields():
    app, things = make_app()
    order = []

    def recorder(tag):
        def hook(ctx: HookContext):
            order.append((tag, ctx.type, ctx.method))
        return hook

    app.hooks({"before": {"all": [recorder("app")]}, "after": {"get": recorder("app")}})
    seen = {}

    async def inspect_ctx(ctx):
        seen.update(app=ctx.app, service=ctx.service, path=ctx.path, id=ctx.id, data=ctx.data,
                    params=ctx.params)
        return ctx

    app.service("things").hooks({"before": {"get": [recorder("svc"), inspect_ctx]},
                                 "after": {"all": recorder("svc")}})
    result = asyncio.run(app.service("things").get("7", {"route": {"a": "1"}}))
    assert result == {"id": "7", "route": {"a": "1"}}
    assert order == [("app", "before", "get"), ("svc", "before", "get"),
                     ("svc", "after", "get"), ("app", "after", "get")]
    assert seen["app"] is app and seen["service"] is things and seen["path"] == "things"
    assert seen["id"] == "7" and seen["data"] is None and seen["params"]["query"] == {}


def test_before_hook_setting_result_skips_method_and_after_hooks_can_change_it():
    app, things = make_app()

    def cached(ctx):
        ctx.result = {"cached": True}

    def stamp(ctx):
        ctx.result = {**ctx.result, "stamped": True}

    app.service("things").hooks({"before": {"get": cached}, "after": {"get": stamp}})
    assert asyncio.run(app.service("things").get("1")) == {"cached": True, "stamped": True}
    assert things.calls == 0


def test_before_hook_can_change_data_and_refuse():
    app, things = make_app()

    def validate(ctx):
        if "name" not in ctx.data:
            raise BadRequest("name is required", data={"field": "name"})
        ctx.data = {**ctx.data, "checked": True}

    app.service("things").hooks({"before": {"create": [validate]}})
    assert asyncio.run(app.service("things").create({"name": "a"})) == {"name": "a", "checked": True}
    with pytest.raises(BadRequest) as info:
        asyncio.run(app.service("things").create({}))
    assert info.value.to_dict() == {"name": "BadRequest", "message": "name is required", "code": 400,
                                    "className": "bad-request", "data": {"field": "name"}}
    assert things.calls == 1


def test_error_hooks_see_error_can_replace_it_or_answer_with_a_result():
    app, _ = make_app()
    seen = []

    def svc_error(ctx):
        seen.append(("svc", type(ctx.error).__name__, ctx.type))
        raise Forbidden("replaced")

    def app_error(ctx):
        seen.append(("app", type(ctx.error).__name__, ctx.type))

    app.service("things").hooks({"error": {"get": svc_error}})
    app.hooks({"error": {"all": app_error}})
    with pytest.raises(Forbidden):
        asyncio.run(app.service("things").get("missing"))
    assert seen == [("svc", "NotFound", "error"), ("app", "Forbidden", "error")]

    app2, _ = make_app()

    def recover(ctx):
        ctx.result = {"fallback": ctx.id}

    app2.service("things").hooks({"error": {"all": recover}})
    assert asyncio.run(app2.service("things").get("missing")) == {"fallback": "missing"}


def test_error_in_after_hook_goes_to_error_hooks_and_raises():
    app, _ = make_app()
    errors = []

    def broken(ctx):
        raise RuntimeError("after failed")

    app.service("things").hooks({"after": {"get": broken}, "error": {"get": lambda ctx: errors.append(ctx.error)}})
    with pytest.raises(RuntimeError, match="after failed"):
        asyncio.run(app.service("things").get("1"))
    assert len(errors) == 1


def test_custom_methods_run_hooks_and_private_or_missing_methods_are_refused():
    app, _ = make_app()
    app.service("things").hooks({"before": {"ping": lambda ctx: setattr(ctx, "data", "changed")}})
    assert asyncio.run(app.service("things").call("ping", data="x")) == {"pong": "changed"}
    for name in ("nosuch", "_get"):
        with pytest.raises(MethodNotAllowed):
            asyncio.run(app.service("things").call(name))


def test_use_validates_methods_option_and_paths():
    app = Application()
    with pytest.raises(ValueError, match="does not have"):
        app.use("x", Things(), {"methods": ["find"]})
    app.use("x", Things())
    with pytest.raises(ValueError, match="already mounted"):
        app.use("/x/", Things())
    assert app.service("x").methods == ["get", "create"]  # default: the standard methods it has
    with pytest.raises(NotFound):
        app.service("y")
