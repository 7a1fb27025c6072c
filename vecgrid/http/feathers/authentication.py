"""Feathers authentication: the ``authentication`` service and its hooks (facts file §9).

``AuthenticationService`` is mounted at ``authentication``: ``create`` logs in with
``strategy: local`` (email + password checked against the users service) or re-authenticates
with ``strategy: jwt``; ``remove`` (``DELETE /authentication``) logs out. It has no ``find``
or ``get``, so ``GET /authentication`` is the transport's 405.

Passwords are hashed with argon2-cffi's ``PasswordHasher()`` defaults: Argon2id with the
RFC 9106 "low memory" parameters (t=3, 64 MiB, p=4). Argon2id is memory-hard, so GPU and
ASIC guessing of a leaked hash costs far more than with bcrypt, it has no 72-byte password
truncation, and the library's defaults follow the RFC as it is revised (``check_needs_rehash``
can tell an old hash). A login for an unknown email verifies a dummy hash made with the same
hasher, so both failures cost one Argon2 verification and answer the same ``Invalid login``.

Access tokens are PyJWT HS256 tokens (header ``typ: access``); decoding pins HS256 (so
``alg: none`` and HS512 tokens are refused), requires ``exp``/``iat``/``sub``/``aud``/``jti``
and checks the audience. The secret (at least 32 bytes) is passed in by the integrator, who
takes it from settings or from a file generated once in the data directory.

State: the failure windows of the rate limiter and the refused tokens (:class:`Revocations`, or
what the integrator passes in its place) belong to the event loop that serves the app (no awaits
between reading and writing them, no lock).
Argon2 work runs in a worker thread so that one login does not stall the loop.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import math
import time
import uuid
from typing import Any, Callable, Iterable

import jwt
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from vecgrid.common.auth import MIN_SECRET_BYTES
from vecgrid.http.feathers.application import HookContext
from vecgrid.common.feathers_errors import BadRequest, NotAuthenticated, NotFound, TooManyRequests

ALGORITHM = "HS256"
TOKEN_TYPE = "access"
REQUIRED_CLAIMS = ("exp", "iat", "sub", "aud", "jti")
DEFAULT_AUDIENCE = "https://yourdomain.com"
DEFAULT_LIFETIME_S = 86400

NO_STRATEGY = "Invalid authentication information (no `strategy` set)"
STRATEGY_NOT_ALLOWED = "Invalid authentication information (strategy not allowed in authStrategies)"
INVALID_LOGIN = "Invalid login"
NOT_AUTHENTICATED = "Not authenticated"

_DEFAULT_HASHER = PasswordHasher()


class RateLimited(TooManyRequests):
    """429 whose ``Retry-After`` header the REST transport copies from ``headers``."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__("Too many failed login attempts, try again later",
                         data={"retryAfter": retry_after_s})
        self.headers = {"Retry-After": str(retry_after_s)}


class FailureWindow:
    """Failures per key in a sliding window; a key with ``max_failures`` in the window is refused.

    Owned by the serving event loop. Keys whose failures all left the window are swept once
    more than ``max_keys`` are tracked, so a flood of distinct emails cannot grow it forever.
    """

    def __init__(self, max_failures: int, window_s: float, *, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = 10_000) -> None:
        if max_failures < 1 or window_s <= 0:
            raise ValueError("max_failures must be >= 1 and window_s > 0")
        self.max_failures = max_failures
        self.window_s = window_s
        self.clock = clock
        self.max_keys = max_keys
        self._failures: dict[Any, collections.deque[float]] = {}

    def _recent(self, key: Any, now: float) -> collections.deque[float] | None:
        times = self._failures.get(key)
        if times is None:
            return None
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if not times:
            del self._failures[key]
            return None
        return times

    def retry_after(self, key: Any) -> int | None:
        """Whole seconds until ``key`` may try again, or None when it may now."""
        now = self.clock()
        times = self._recent(key, now)
        if times is None or len(times) < self.max_failures:
            return None
        return max(1, math.ceil(times[0] + self.window_s - now))

    def record(self, key: Any) -> None:
        now = self.clock()
        if key not in self._failures and len(self._failures) >= self.max_keys:
            for old in list(self._failures):
                self._recent(old, now)
        self._failures.setdefault(key, collections.deque(maxlen=self.max_failures)).append(now)

    def reset(self, key: Any) -> None:
        self._failures.pop(key, None)


def token_from_params(params: dict) -> str | None:
    """The access token of a call: ``params.authentication`` first, then ``Authorization``.

    ``Bearer <token>`` (scheme case-insensitive) or a bare ``<token>``; another scheme such as
    ``Basic ...`` counts as no token (§9).
    """
    authentication = params.get("authentication")
    if isinstance(authentication, dict) and authentication.get("accessToken"):
        return str(authentication["accessToken"])
    header = (params.get("headers") or {}).get("authorization")
    if not header:
        return None
    parts = header.strip().split()
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2 and parts[0].lower() == "bearer":
        return parts[1]
    return None


def _without(record: Any, fields: Iterable[str]) -> Any:
    if not isinstance(record, dict):
        return record
    return {k: v for k, v in record.items() if k not in fields}


def _jwt_error(message: str, **data: Any) -> NotAuthenticated:
    return NotAuthenticated(message, data={"name": "JsonWebTokenError", **data})


class Revocations:
    """Tokens refused before they expire: a logged-out token (by its ``jti``), and every token of a
    removed user issued up to its removal (by ``sub`` and ``iat``), each kept until such a token would
    have expired anyway.  In memory: an integrator that must keep them across restarts or share them
    with other processes passes a subclass (Feathers itself revokes nothing: a logout only answers).
    ``revision`` counts the changes: what caches checked tokens compares it."""

    def __init__(self) -> None:
        # "jti:<id>" or "sub:<subject>" -> (tokens issued up to this time: a subject's; until this time)
        self._refused: dict[str, tuple[int, int]] = {}
        self.revision = 0

    def refuses(self, payload: dict) -> bool:
        if f"jti:{payload.get('jti')}" in self._refused:
            return True
        subject = self._refused.get(f"sub:{payload.get('sub')}")
        return subject is not None and int(payload.get("iat", 0)) <= subject[0]

    def entries(self) -> dict[str, tuple[int, int]]:
        return dict(self._refused)

    async def refuse_token(self, jti: str, exp: int) -> None:
        """Refuse the token ``jti`` (a logout) until it expires at ``exp``."""
        await self._refuse(f"jti:{jti}", 0, int(exp))

    async def refuse_subject(self, subject: Any, lifetime_s: int) -> None:
        """Refuse every token of ``subject`` issued until now (a removed user), as long as one may live."""
        now = int(time.time())
        await self._refuse(f"sub:{subject}", now, now + int(lifetime_s))

    def roles_changed(self) -> None:
        """A user's rights changed: what was kept of checked tokens is checked again."""
        self.revision += 1

    async def _refuse(self, key: str, cutoff: int, until: int) -> None:
        now = int(time.time())
        self._refused = {k: v for k, v in self._refused.items() if v[1] > now}
        self._refused[key] = (cutoff, until)
        self.revision += 1


class AuthenticationService:
    """Logs in (``create``) and out (``remove``); issues and verifies access tokens.

    ``secret``: the HS256 key, at least 32 bytes. ``max_failures`` failed logins within
    ``failure_window_s`` for one email, or for one client address, make further attempts
    from it answer 429 until the oldest failure leaves the window.
    """

    def __init__(self, secret: str | bytes, *, users_path: str = "users", entity_id: str = "id",
                 username_field: str = "email", password_field: str = "password",
                 strategies: Iterable[str] = ("jwt", "local"), audience: str = DEFAULT_AUDIENCE,
                 lifetime_s: int = DEFAULT_LIFETIME_S, max_failures: int = 5,
                 failure_window_s: float = 300.0, hasher: PasswordHasher = _DEFAULT_HASHER,
                 clock: Callable[[], float] = time.monotonic, revocations: Revocations | None = None) -> None:
        key = secret.encode() if isinstance(secret, str) else bytes(secret)
        if len(key) < MIN_SECRET_BYTES:
            raise ValueError(f"the JWT secret must be at least {MIN_SECRET_BYTES} bytes")
        if lifetime_s <= 0:
            raise ValueError("lifetime_s must be positive")
        self._secret = key
        self.users_path = users_path
        self.entity_id = entity_id
        self.username_field = username_field
        self.password_field = password_field
        self.strategies = tuple(strategies)
        self.audience = audience
        self.lifetime_s = lifetime_s
        self.hasher = hasher
        self.failures = FailureWindow(max_failures, failure_window_s, clock=clock)
        self._dummy_hash = ""  # made in setup(): a service that only verifies tokens never needs it
        self.revocations = Revocations() if revocations is None else revocations
        self.app: Any = None

    def setup(self, app: Any, path: str) -> None:
        self.app = app
        # Same hasher, same parameters: verifying it costs what verifying a real hash costs.
        self._dummy_hash = self.hasher.hash(uuid.uuid4().hex)

    @property
    def OPENAPI(self) -> dict[str, Any]:  # noqa: N802 - the declaration's name (openapi module doc)
        """The document's view: ``create`` is logging in, ``remove`` logging out."""
        user = {"type": "object", "description": "the user, without its password"}
        result = {"type": "object", "required": ["accessToken", "authentication", "user"], "properties": {
            "accessToken": {"type": "string", "description": "send it as `Authorization: Bearer <accessToken>`"},
            "authentication": {"type": "object", "required": ["strategy"], "properties": {
                "strategy": {"enum": ["local", "jwt"]}, "accessToken": {"type": "string"},
                "payload": {"type": "object", "description": "the token's claims (iat, exp, aud, sub, jti)"}}},
            "user": user}}
        local = {"title": "local", "type": "object", "required": ["strategy", self.username_field, self.password_field],
                 "properties": {"strategy": {"const": "local"}, self.username_field: {"type": "string"},
                                self.password_field: {"type": "string", "writeOnly": True}}}
        jwt_body = {"title": "jwt", "type": "object", "required": ["strategy", "accessToken"],
                    "properties": {"strategy": {"const": "jwt"}, "accessToken": {"type": "string"}}}
        strategies = [s for s in ("local", "jwt") if s in self.strategies]
        bodies = {"local": local, "jwt": jwt_body}
        return {"tag": "Log in (get an access token) and log out", "multi": ["remove"], "docs": {
            "create": {"summary": f"Log in: local strategy ({self.username_field} + {self.password_field}) or jwt",
                       "description": "`local` checks the credentials and issues an access token; `jwt` checks a "
                                      "token and answers it with its user. Repeated failures per user or client "
                                      "address answer 429 with Retry-After.",
                       "data": {"oneOf": [bodies[s] for s in strategies]},
                       "example": {"strategy": "local", self.username_field: "admin@example.com",
                                   self.password_field: "your password"},
                       "result": result, "errors": [401, 429]},
            "remove": {"summary": "Log out: the bearer token (or the token given as id) is refused from now on",
                       "result": result, "errors": [401], "authenticated": True},
        }}

    # -- tokens --------------------------------------------------------------------------
    def create_access_token(self, subject: Any, *, now: int | None = None) -> str:
        iat = int(time.time()) if now is None else now
        payload = {"iat": iat, "exp": iat + self.lifetime_s, "aud": self.audience,
                   "sub": str(subject), "jti": str(uuid.uuid4())}
        return jwt.encode(payload, self._secret, algorithm=ALGORITHM, headers={"typ": TOKEN_TYPE})

    def verify_access_token(self, token: str) -> dict:
        """The decoded payload, or NotAuthenticated with jsonwebtoken's messages (§9)."""
        try:
            payload = jwt.decode(token, self._secret, algorithms=[ALGORITHM], audience=self.audience,
                                 options={"require": list(REQUIRED_CLAIMS)})
        except jwt.ExpiredSignatureError:
            exp = jwt.decode(token, options={"verify_signature": False}).get("exp")
            expired_at = (datetime.datetime.fromtimestamp(exp, datetime.timezone.utc)
                          .isoformat(timespec="milliseconds").replace("+00:00", "Z"))
            raise NotAuthenticated("jwt expired", data={"name": "TokenExpiredError",
                                                        "expiredAt": expired_at}) from None
        except jwt.InvalidSignatureError:
            raise _jwt_error("invalid signature") from None
        except jwt.InvalidAlgorithmError:
            raise _jwt_error("invalid algorithm") from None
        except jwt.InvalidAudienceError:
            raise _jwt_error(f"jwt audience invalid. expected: {self.audience}") from None
        except jwt.MissingRequiredClaimError as error:
            raise _jwt_error(f"jwt must have a {error.claim} claim") from None
        except jwt.DecodeError:
            raise _jwt_error("jwt malformed") from None
        except jwt.InvalidTokenError:
            raise _jwt_error("invalid token") from None
        if jwt.get_unverified_header(token).get("typ") != TOKEN_TYPE:
            raise _jwt_error("invalid token type")
        if not isinstance(payload.get("jti"), str) or self.revocations.refuses(payload):
            raise _jwt_error("jwt revoked")
        return payload

    async def authenticate_jwt(self, token: str) -> dict:
        """``{"accessToken", "authentication", "user"}`` for a valid token (user with password)."""
        payload = self.verify_access_token(token)
        try:
            user = await self.app.service(self.users_path).get(payload["sub"])
        except NotFound:
            raise NotAuthenticated(NOT_AUTHENTICATED) from None
        return {"accessToken": token,
                "authentication": {"strategy": "jwt", "accessToken": token, "payload": payload},
                "user": user}

    # -- service methods -------------------------------------------------------------------
    async def create(self, data: Any, params: dict) -> dict:
        data = data if isinstance(data, dict) else {}
        strategy = data.get("strategy")
        if not strategy:
            raise NotAuthenticated(NO_STRATEGY)
        if strategy not in self.strategies or strategy not in ("jwt", "local"):
            raise NotAuthenticated(STRATEGY_NOT_ALLOWED)
        if strategy == "jwt":
            token = data.get("accessToken")
            if not isinstance(token, str) or not token:
                raise NotAuthenticated(NOT_AUTHENTICATED)
            result = await self.authenticate_jwt(token)
        else:
            result = await self._login_local(data, params)
        result["user"] = _without(result["user"], (self.password_field,))
        return result

    async def remove(self, id: Any, params: dict) -> dict:  # noqa: A002 - Feathers signature
        """Logout: the token's id is refused from now until the token would have expired."""
        token = token_from_params(params) or (str(id) if id is not None else None)
        if token is None:
            raise NotAuthenticated(NO_STRATEGY)
        result = await self.authenticate_jwt(token)
        payload = result["authentication"]["payload"]
        await self.revocations.refuse_token(payload["jti"], payload["exp"])
        result["user"] = _without(result["user"], (self.password_field,))
        return result

    async def _login_local(self, data: dict, params: dict) -> dict:
        username = data.get(self.username_field)
        password = data.get(self.password_field)
        username_key = ("user", username.strip().lower()) if isinstance(username, str) else None
        address_key = ("address", params["ip"]) if params.get("ip") else None
        keys = [k for k in (username_key, address_key) if k is not None]
        waits = [w for w in (self.failures.retry_after(k) for k in keys) if w is not None]
        if waits:
            raise RateLimited(max(waits))
        user = await self._find_user(username) if isinstance(username, str) and username else None
        stored = user.get(self.password_field) if user else None
        ok = await asyncio.to_thread(self._verify, stored if isinstance(stored, str) else None,
                                     password if isinstance(password, str) else None)
        if not ok or user is None:
            for key in keys:
                self.failures.record(key)
            raise NotAuthenticated(INVALID_LOGIN)
        if username_key is not None:
            self.failures.reset(username_key)
        payload_sub = user[self.entity_id]
        token = self.create_access_token(payload_sub)
        payload = jwt.decode(token, self._secret, algorithms=[ALGORITHM], audience=self.audience)
        return {"accessToken": token, "authentication": {"strategy": "local", "payload": payload},
                "user": user}

    def _verify(self, stored: str | None, password: str | None) -> bool:
        # Always one Argon2 verification: against the dummy when there is nothing to check.
        candidate = password if password is not None else ""
        try:
            self.hasher.verify(stored if stored is not None else self._dummy_hash, candidate)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
        return stored is not None and password is not None

    async def _find_user(self, username: str) -> dict | None:
        found = await self.app.service(self.users_path).find(
            {"query": {self.username_field: username}, "paginate": False})
        if isinstance(found, dict):
            found = found.get("data", [])
        return found[0] if found else None


# -- hooks -----------------------------------------------------------------------------------
def authenticate(*strategies: str, service_path: str = "authentication") -> Callable[[HookContext], Any]:
    """Before hook: external calls need a valid access token; sets ``params.user``/``authentication``.

    Internal calls (no ``provider``) pass untouched, as in Feathers.
    """
    if not strategies or any(s != "jwt" for s in strategies):
        raise ValueError("authenticate() supports the 'jwt' strategy")

    async def hook(ctx: HookContext) -> HookContext:
        if ctx.params.get("provider") is None:
            return ctx
        token = token_from_params(ctx.params)
        if token is None:
            raise NotAuthenticated(NOT_AUTHENTICATED)
        service: AuthenticationService = ctx.app.service(service_path).service
        result = await service.authenticate_jwt(token)
        ctx.params["user"] = result["user"]
        ctx.params["authentication"] = result["authentication"]
        return ctx

    return hook


def protect(*fields: str) -> Callable[[HookContext], Any]:
    """After hook: removes ``fields`` from a record, a list or a page, for external calls only."""

    def strip(result: Any) -> Any:
        if isinstance(result, list):
            return [_without(r, fields) for r in result]
        if isinstance(result, dict) and isinstance(result.get("data"), list) and "total" in result:
            return {**result, "data": [_without(r, fields) for r in result["data"]]}
        return _without(result, fields)

    def hook(ctx: HookContext) -> HookContext:
        if ctx.params.get("provider") is not None and ctx.has_result:
            ctx.result = strip(ctx.result)
        return ctx

    return hook


def hash_password(field: str = "password", *,
                  hasher: PasswordHasher = _DEFAULT_HASHER) -> Callable[[HookContext], Any]:
    """Before hook (create/update/patch): replaces ``field`` in the data with its Argon2id hash."""

    async def hash_one(record: Any) -> Any:
        if not isinstance(record, dict) or field not in record:
            return record
        password = record[field]
        if not isinstance(password, str) or not password:
            raise BadRequest(f"'{field}' must be a non-empty string")
        return {**record, field: await asyncio.to_thread(hasher.hash, password)}

    async def hook(ctx: HookContext) -> HookContext:
        if isinstance(ctx.data, list):
            ctx.data = [await hash_one(r) for r in ctx.data]
        else:
            ctx.data = await hash_one(ctx.data)
        return ctx

    return hook
