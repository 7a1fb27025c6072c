"""Accounts: the ``users`` and ``authentication`` services and who may call what (``rest-api.md``).

Users persist in the metadata store (``http/users/`` keys, :class:`MetaStoreService`): ``{id, email,
password, roles}``, the password an Argon2id hash that no answer carries, the email unique.  Roles:
``admin`` (every right), ``writer`` (``read`` and ``write``: the data plane), ``reader`` (``read``:
finds, gets, searches).  Each service class says in ``RIGHTS`` which right each of its methods needs;
the app-wide :func:`authorization_hook` checks it before any other hook or the method runs, so a
refused call does nothing.  ``self`` is the users service's own right: an admin, or the user the call
is about (read yourself, change your own password).

Auth is on when ``[http] auth`` says ``on``, or says ``auto`` and the REST port binds to anything but
loopback.  The token secret comes from ``[http] jwt_secret`` or is generated once into the data dir.
The first admin comes from ``vecgrid users add --role admin EMAIL`` or, on a start with no users, from
``VECGRID_HTTP_ADMIN_EMAIL`` / ``VECGRID_HTTP_ADMIN_PASSWORD`` (containers).

State: none of its own; the users live in the store, the login limiter in the authentication service.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any, Iterable

from argon2 import PasswordHasher

from vecgrid.common.auth import (BEARER_SCHEME, CLUSTER_SECRET_FILE, LOOPBACK_HOSTS, MIN_SECRET_BYTES, ROLE_RIGHTS,
                                 TOKEN_SECRET_FILE, data_dir_secret, rights_of_roles)
from vecgrid.config import ConfigError
from vecgrid.common.feathers_errors import BadRequest, FeathersError, Forbidden
from vecgrid.http.feathers.adapters.meta_store import MetaStoreService
from vecgrid.http.feathers.application import HookContext
from vecgrid.http.feathers.authentication import (AuthenticationService, Revocations, authenticate, hash_password,
                                                  protect)

if TYPE_CHECKING:
    from vecgrid.config import Settings
    from vecgrid.http.feathers.application import Application
    from vecgrid.http.services import RestContext
    from vecgrid.storage.kv import MetaStore

RIGHTS_NAMES = ("read", "write", "admin", "self")
USERS_PREFIX = "http/users/"


def auth_enabled(settings: "Settings") -> bool:
    """The one switch of REST and gRPC auth (``[http] auth``)."""
    mode = settings.http.auth.strip().lower()
    if mode not in ("on", "off", "auto"):
        raise ConfigError(f"http.auth must be on, off or auto, not {settings.http.auth!r}")
    if mode == "auto":
        return settings.common.host not in LOOPBACK_HOSTS
    return mode == "on"


def password_hasher(settings: "Settings") -> PasswordHasher:
    """Argon2id with ``[http] password_time_cost`` / ``password_memory_kib`` / ``password_parallelism``."""
    http = settings.http
    if http.password_time_cost < 1 or http.password_parallelism < 1:
        raise ConfigError("http.password_time_cost and http.password_parallelism must be at least 1")
    if http.password_memory_kib < 8 * http.password_parallelism:
        raise ConfigError("http.password_memory_kib must be at least 8 per lane (8 x http.password_parallelism)")
    return PasswordHasher(time_cost=http.password_time_cost, memory_cost=http.password_memory_kib,
                          parallelism=http.password_parallelism)


def token_secret(settings: "Settings") -> str:
    """``[http] jwt_secret``, or the data dir's secret file, created (mode 0600) on first use."""
    configured = settings.http.jwt_secret
    if configured:
        if len(configured.encode()) < MIN_SECRET_BYTES:
            raise ConfigError(f"http.jwt_secret must be at least {MIN_SECRET_BYTES} bytes")
        return configured
    return _secret(settings, TOKEN_SECRET_FILE)


def cluster_secret(settings: "Settings") -> str:
    """The secret the cluster's own processes authenticate with over gRPC (the data dir's file)."""
    return _secret(settings, CLUSTER_SECRET_FILE)


def _secret(settings: "Settings", name: str) -> str:
    try:
        return data_dir_secret(settings.common.data_dir, name)
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _check_roles(roles: Any) -> list[str]:
    if not isinstance(roles, list) or not roles or not all(isinstance(r, str) for r in roles):
        raise BadRequest("'roles' must be a non-empty array of role names",
                         errors={"roles": f"one or more of {sorted(ROLE_RIGHTS)}"})
    unknown = sorted(set(roles) - set(ROLE_RIGHTS))
    if unknown:
        raise BadRequest(f"unknown roles {unknown}", errors={"roles": f"one or more of {sorted(ROLE_RIGHTS)}"})
    return sorted(set(roles))


def _valid_user(data: Any, *, partial: bool) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BadRequest("Data must be an object")
    unknown = sorted(set(data) - {"email", "password", "roles", "id"})
    if unknown:
        raise BadRequest(f"unknown user fields {unknown}", errors={k: "not a user field" for k in unknown})
    user = {k: v for k, v in data.items() if k != "id"}
    if not partial or "email" in user:
        email = user.get("email")
        if not isinstance(email, str) or "@" not in email or len(email) > 254:
            raise BadRequest("'email' must be an email address", errors={"email": "an email address"})
    if not partial and "password" not in user:
        raise BadRequest("'password' is required", errors={"password": "required"})
    if "roles" in user or not partial:
        user["roles"] = _check_roles(user.get("roles", ["reader"]))
    return user


def _validate_user(ctx: HookContext) -> None:
    if isinstance(ctx.data, list):
        raise BadRequest("Create one user at a time")
    ctx.data = _valid_user(ctx.data, partial=ctx.method == "patch")


def _only_admins_change_roles(ctx: HookContext) -> None:
    """A user patching themself may change their password, not their roles or email."""
    user = ctx.params.get("user")
    if user is None or "admin" in (user.get("roles") or []):
        return
    if set(ctx.data) - {"password"}:
        raise Forbidden("Only an admin may change a user's email or roles")


class UsersService(MetaStoreService):
    """``users``: accounts in the metadata store; emails unique; passwords never leave."""

    RIGHTS = {"find": "admin", "get": "self", "create": "admin", "patch": "self", "remove": "admin"}
    OPENAPI = {
        "tag": "Accounts (admins manage them; a user reads itself and changes its own password)",
        "schema": {"type": "object", "required": ["email", "roles"], "properties": {
            "id": {"type": "integer"}, "email": {"type": "string"},
            "roles": {"type": "array", "items": {"enum": sorted(ROLE_RIGHTS)}}}},
        "data_schema": {"type": "object", "additionalProperties": False, "required": ["email", "password"],
                        "properties": {"email": {"type": "string", "format": "email", "maxLength": 254},
                                       "password": {"type": "string", "minLength": 1, "writeOnly": True},
                                       "roles": {"type": "array", "minItems": 1,
                                                 "items": {"enum": sorted(ROLE_RIGHTS)},
                                                 "description": "default [\"reader\"]"}}},
        "docs": {"find": {"summary": "List the users (admins)"},
                 "get": {"summary": "A user (admins, or the user itself)"},
                 "create": {"summary": "Add a user (admins); roles default to [\"reader\"]", "errors": [409],
                            "example": {"email": "reader@example.com", "password": "a long passphrase",
                                        "roles": ["reader"]}},
                 "patch": {"summary": "Change a user (admins; a user may change its own password)", "errors": [403]},
                 "remove": {"summary": "Remove a user (admins)"}},
    }

    def __init__(self, store: "MetaStore") -> None:
        super().__init__(store, USERS_PREFIX, paginate={"default": 10, "max": 50}, unique=["email"],
                         query_schema={"id": "number", "email": "string"})


class AuthenticationResource(AuthenticationService):
    """``authentication``: open to everyone (logging in is how a caller gets a token)."""

    RIGHTS = {"create": "public", "remove": "public"}


def mount_users(api: "Application", store: "MetaStore", hasher: PasswordHasher, revocations: Revocations,
                token_lifetime_s: int) -> None:
    """The ``users`` service (``vecgrid users`` also uses it alone, on the data dir's store).  Removing a
    user refuses its tokens in ``revocations`` (REST looks the user up on every call, but the gRPC
    servers keep checked rights a while, and a query node checks only the token itself); new roles
    make kept rights be checked again."""
    api.use("users", UsersService(store), {"methods": ["find", "get", "create", "patch", "remove"]})
    hashed = hash_password("password", hasher=hasher)

    async def refuse_the_tokens_of_removed_users(ctx: HookContext) -> None:
        for user in ctx.result if isinstance(ctx.result, list) else [ctx.result]:
            await revocations.refuse_subject(user["id"], token_lifetime_s)

    def check_rights_again(ctx: HookContext) -> None:
        if "roles" in (ctx.data or {}):
            revocations.roles_changed()

    api.service("users").hooks({
        "before": {"create": [_validate_user, hashed],
                   "patch": [_validate_user, _only_admins_change_roles, hashed]},
        "after": {"all": [protect("password")], "remove": [refuse_the_tokens_of_removed_users],
                  "patch": [check_rights_again]},
    })


def mount(api: "Application", ctx: "RestContext") -> None:
    settings = ctx.settings
    assert settings is not None and ctx.store is not None, "accounts need the settings and the metadata store"
    hasher = password_hasher(settings)
    revocations = Revocations() if ctx.revocations is None else ctx.revocations
    mount_users(api, ctx.store, hasher, revocations, settings.http.token_lifetime_s)
    api.use("authentication", AuthenticationResource(
        token_secret(settings), audience=settings.http.jwt_audience, lifetime_s=settings.http.token_lifetime_s,
        max_failures=settings.http.login_max_failures, failure_window_s=settings.http.login_window_s,
        hasher=hasher, revocations=revocations))
    api.hooks({"before": {"all": [authorization_hook(auth_enabled(settings))]}})


def rights_of(service: Any, method: str) -> str | None:
    return (getattr(service, "RIGHTS", None) or {}).get(method)


def authorization_hook(enabled: bool):
    """App-wide first ``before`` hook: with auth on, an external call needs a token (401) and a role
    with the method's right (403).  Internal calls (no provider) and auth off pass."""
    jwt = authenticate("jwt")

    async def hook(ctx: HookContext) -> HookContext:
        if not enabled or ctx.params.get("provider") is None:
            return ctx
        right = rights_of(ctx.service, ctx.method)
        if right == "public":
            return ctx
        await jwt(ctx)
        user = ctx.params["user"]
        granted = rights_of_roles(user.get("roles"))
        if right == "self":
            if "admin" in granted or (ctx.id is not None and str(ctx.id) == str(user.get("id"))):
                return ctx
        elif right in granted:
            return ctx
        raise Forbidden(f"Your roles do not allow {ctx.method} on {ctx.path}",
                        data={"needs": right or "a right the service does not declare"})

    # for the OpenAPI document: the methods this hook asks a token for (bearer security, 401)
    hook.openapi_authenticated = lambda service, method: enabled and rights_of(service, method) != "public"
    return hook


async def ensure_first_admin(api: "Application", email: str, password: str) -> dict[str, Any] | None:
    """The containers' first admin (``[http] admin_email`` / ``admin_password``, i.e.
    ``VECGRID_HTTP_ADMIN_EMAIL`` / ``_PASSWORD``): created when no user exists yet."""
    if not email or not password:
        return None
    users = api.service("users")
    if (await users.find({"query": {"$limit": 0}}))["total"]:
        return None
    return await users.create({"email": email, "password": password, "roles": ["admin"]})


async def add_user(api: "Application", email: str, password: str, roles: Iterable[str]) -> dict[str, Any]:
    return await api.service("users").create({"email": email, "password": password, "roles": list(roles)})


async def find_user(api: "Application", email: str) -> dict[str, Any]:
    page = await api.service("users").find({"query": {"email": email}})
    if not page["data"]:
        raise BadRequest(f"no user with email {email!r}")
    return page["data"][0]


def grpc_rights_checker(api: "Application"):
    """The rights of a gRPC caller's ``authorization`` value, checked as REST checks them: Milvus's
    ``base64(user:password)`` logs in with the local strategy (the same login limiter), ``Bearer
    <token>`` is an access token (revocations honoured).  ``None`` for anything invalid."""
    auth = api.service("authentication").service

    async def rights(value: str, peer: str) -> frozenset[str] | None:
        try:
            if value[:len(BEARER_SCHEME)].lower() == BEARER_SCHEME.lower():
                user = (await auth.authenticate_jwt(value[len(BEARER_SCHEME):].strip()))["user"]
            else:
                email, sep, password = base64.b64decode(value, validate=True).decode().partition(":")
                if not sep:
                    return None
                user = (await auth.create({"strategy": "local", "email": email, "password": password},
                                          {"ip": peer}))["user"]
        except (FeathersError, binascii.Error, UnicodeDecodeError, ValueError):
            return None
        return rights_of_roles(user.get("roles"))

    return rights
