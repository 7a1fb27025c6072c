"""The Feathers application object: services registered at paths, with hooks.

Services are plain classes (sync or async methods ``find(params)``, ``get(id, params)``,
``create(data, params)``, ``update(id, data, params)``, ``patch(id, data, params)``,
``remove(id, params)`` and custom methods ``name(data, params)``); they know nothing of
HTTP. Hooks run around every call made through ``app.service(path)`` — by the REST
transport or by server code — in Feathers order: app ``before``, service ``before``,
the method, service ``after``, app ``after``; on a failure service ``error`` then app
``error`` hooks. A before hook that sets ``context.result`` skips the method; an error
hook that sets it answers with it instead of the error.

State: the registry (services, hooks) is filled while the app is set up and only read
once it serves; it belongs to the thread/loop that serves it (no lock).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

from vecgrid.common.feathers_errors import MethodNotAllowed, NotFound

STANDARD_METHODS = ("find", "get", "create", "update", "patch", "remove")
HOOK_TYPES = ("before", "after", "error")


class _Unset:
    """Marks ``context.result`` as not set (``None`` is a valid result: it answers 204)."""

    _instance: "_Unset | None" = None

    def __new__(cls) -> "_Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()

Hook = Callable[["HookContext"], Any]


@dataclass
class HookContext:
    """What hooks see and may change (``params``, ``id``, ``data``, ``result``, ``error``)."""

    app: "Application"
    service: Any
    method: str
    path: str
    type: str
    params: dict
    id: Any = None
    data: Any = None
    result: Any = UNSET
    error: BaseException | None = None

    @property
    def has_result(self) -> bool:
        return self.result is not UNSET


def _hook_table(spec: dict | None) -> dict[str, dict[str, list[Hook]]]:
    table: dict[str, dict[str, list[Hook]]] = {t: {} for t in HOOK_TYPES}
    _add_hooks(table, spec or {})
    return table


def _add_hooks(table: dict[str, dict[str, list[Hook]]], spec: dict) -> None:
    for hook_type, per_method in spec.items():
        if hook_type not in HOOK_TYPES:
            raise ValueError(f"unknown hook type {hook_type!r} (expected one of {HOOK_TYPES})")
        for method, hooks in per_method.items():
            hooks = list(hooks) if isinstance(hooks, (list, tuple)) else [hooks]
            table[hook_type].setdefault(method, []).extend(hooks)


def _hooks_for(table: dict[str, dict[str, list[Hook]]], hook_type: str, method: str) -> list[Hook]:
    per_method = table[hook_type]
    return per_method.get("all", []) + per_method.get(method, [])


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _normalize_path(path: str) -> str:
    return path.strip("/")


class RegisteredService:
    """A service mounted at a path: its options, its hooks and the hooked method calls."""

    def __init__(self, app: "Application", path: str, service: Any, options: dict) -> None:
        self.app = app
        self.path = path
        self.service = service
        self.options = dict(options)
        self.segments = path.split("/") if path else []
        self.placeholders = [s[1:] for s in self.segments if s.startswith(":")]
        declared = options.get("methods")
        implemented = [m for m in STANDARD_METHODS if callable(getattr(service, m, None))]
        if declared is None:
            self.methods = implemented
        else:
            missing = [m for m in declared if not callable(getattr(service, m, None))]
            if missing:
                raise ValueError(f"service at {path!r} lists methods it does not have: {missing}")
            self.methods = list(declared)
        self.custom_methods = [m for m in self.methods if m not in STANDARD_METHODS]
        self._hooks = _hook_table(None)
        setup = getattr(service, "setup", None)
        self._setup = setup if callable(setup) else None

    def hooks(self, spec: dict) -> "RegisteredService":
        """Adds ``{"before"|"after"|"error": {method|"all": [hook, ...]}}``; returns self."""
        _add_hooks(self._hooks, spec)
        return self

    def exposes(self, method: str) -> bool:
        """Whether an external client (REST) may call ``method``."""
        return method in self.methods

    async def call(self, method: str, *, id: Any = None, data: Any = None,
                   params: dict | None = None) -> Any:
        """Runs ``method`` with the hook chain; server code may call any method the service has."""
        if not callable(getattr(self.service, method, None)) or method.startswith("_"):
            raise MethodNotAllowed(f"Method `{method}` is not supported by this endpoint.")
        params = params if params is not None else {}
        params.setdefault("query", {})
        ctx = HookContext(app=self.app, service=self.service, method=method, path=self.path,
                          type="before", params=params, id=id, data=data)
        app_hooks = self.app._hooks
        try:
            for hook in _hooks_for(app_hooks, "before", method) + _hooks_for(self._hooks, "before", method):
                ctx = await _run_hook(hook, ctx)
                if ctx.has_result:
                    break
            if not ctx.has_result:
                ctx.result = await _maybe_await(self._invoke(method, ctx))
            ctx.type = "after"
            for hook in _hooks_for(self._hooks, "after", method) + _hooks_for(app_hooks, "after", method):
                ctx = await _run_hook(hook, ctx)
            return ctx.result
        except Exception as error:  # noqa: BLE001 - handed to error hooks, then re-raised
            ctx.type = "error"
            ctx.error = error
            ctx.result = UNSET
            for hook in _hooks_for(self._hooks, "error", method) + _hooks_for(app_hooks, "error", method):
                try:
                    ctx = await _run_hook(hook, ctx)
                except Exception as hook_error:  # noqa: BLE001 - the newer error wins, as in Feathers
                    ctx.error = hook_error
                if ctx.has_result:
                    return ctx.result
            assert ctx.error is not None
            if ctx.error is error:
                raise
            raise ctx.error from error

    def _invoke(self, method: str, ctx: HookContext) -> Any:
        fn = getattr(self.service, method)
        if method == "find":
            return fn(ctx.params)
        if method in ("get", "remove"):
            return fn(ctx.id, ctx.params)
        if method in ("update", "patch"):
            return fn(ctx.id, ctx.data, ctx.params)
        return fn(ctx.data, ctx.params)  # create and custom methods

    # Server-side conveniences mirroring the Feathers service interface.
    async def find(self, params: dict | None = None) -> Any:
        return await self.call("find", params=params)

    async def get(self, id: Any, params: dict | None = None) -> Any:  # noqa: A002
        return await self.call("get", id=id, params=params)

    async def create(self, data: Any, params: dict | None = None) -> Any:
        return await self.call("create", data=data, params=params)

    async def update(self, id: Any, data: Any, params: dict | None = None) -> Any:  # noqa: A002
        return await self.call("update", id=id, data=data, params=params)

    async def patch(self, id: Any, data: Any, params: dict | None = None) -> Any:  # noqa: A002
        return await self.call("patch", id=id, data=data, params=params)

    async def remove(self, id: Any, params: dict | None = None) -> Any:  # noqa: A002
        return await self.call("remove", id=id, params=params)


async def _run_hook(hook: Hook, ctx: HookContext) -> HookContext:
    returned = await _maybe_await(hook(ctx))
    return returned if isinstance(returned, HookContext) else ctx


@dataclass
class RouteMatch:
    """A request path resolved to a service: the id segment (raw) and placeholder values."""

    service: RegisteredService
    id: str | None
    route: dict[str, str]


class Application:
    """Services by path, app-wide hooks and path lookup for transports."""

    def __init__(self, settings: dict | None = None) -> None:
        self.settings: dict = dict(settings or {})
        self.services: dict[str, RegisteredService] = {}
        self._hooks = _hook_table(None)

    def use(self, path: str, service: Any, options: dict | None = None) -> "Application":
        """Mounts ``service`` at ``path`` (``:name`` segments are route placeholders)."""
        key = _normalize_path(path)
        if not key:
            raise ValueError("a service needs a non-empty path")
        if key in self.services:
            raise ValueError(f"a service is already mounted at {key!r}")
        registered = RegisteredService(self, key, service, options or {})
        self.services[key] = registered
        setup = registered._setup
        if setup is not None:
            setup(self, key)
        return self

    def service(self, path: str) -> RegisteredService:
        key = _normalize_path(path)
        try:
            return self.services[key]
        except KeyError:
            raise NotFound(f"Service '{key}' not found") from None

    def hooks(self, spec: dict) -> "Application":
        """App-wide hooks, same shape as a service's; they wrap every service's hooks."""
        _add_hooks(self._hooks, spec)
        return self

    def lookup(self, raw_path: str) -> RouteMatch | None:
        """The service for a request path (not percent-decoded), or None.

        A path matches a service mounted with n segments when it has n (collection) or
        n+1 (id) segments; literal segments must be equal (case-sensitive). When several
        services match, the one with more literal segments wins, then collection over id.
        """
        segments = raw_path.strip("/").split("/") if raw_path.strip("/") else []
        best: tuple[tuple[int, int], RouteMatch] | None = None
        for registered in self.services.values():
            n = len(registered.segments)
            if len(segments) not in (n, n + 1):
                continue
            route: dict[str, str] = {}
            literal = 0
            for pattern, actual in zip(registered.segments, segments):
                if pattern.startswith(":"):
                    if not actual:
                        break
                    route[pattern[1:]] = actual
                elif pattern == actual:
                    literal += 1
                else:
                    break
            else:
                is_id = len(segments) == n + 1
                if is_id and not segments[n]:
                    continue
                score = (literal, 0 if is_id else 1)
                if best is None or score > best[0]:
                    best = (score, RouteMatch(registered, segments[n] if is_id else None, route))
        return best[1] if best else None

