"""Feathers authentication over a real Tornado server on loopback (facts file §9, bodies as §2).

Each test names the §9 row it checks. Users live in a MemoryService mounted the way a
Feathers app mounts them: ``create`` public and password-hashing, every other method behind
``authenticate('jwt')``, ``protect('password')`` on every result.
"""

from __future__ import annotations

import json
import time

import jwt
import pytest
from argon2 import PasswordHasher
from tornado.testing import AsyncHTTPTestCase

from vecgrid.http.feathers.adapters.memory import MemoryService
from vecgrid.http.feathers.application import Application, HookContext
from vecgrid.common.feathers_errors import NotAuthenticated
from vecgrid.http.feathers.authentication import (AuthenticationService, FailureWindow,
                                                  authenticate, hash_password, protect)
from vecgrid.http.feathers.rest import make_tornado_app

JSON_CT = "application/json; charset=utf-8"
SECRET = "s" * 40
AUDIENCE = "https://yourdomain.com"
# Cheap Argon2id parameters for the apps these tests start (the defaults cost ~0.1 s a hash); the
# behaviour under test does not depend on them.
FAST_HASHER = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def build_app(clock, *, max_failures=3, window_s=60.0) -> tuple[Application, AuthenticationService, MemoryService]:
    app = Application()
    users = MemoryService(paginate={"default": 10, "max": 50})
    app.use("users", users)
    hashed = hash_password("password", hasher=FAST_HASHER)
    app.service("users").hooks({
        "before": {"create": [hashed],
                   "find": [authenticate("jwt")], "get": [authenticate("jwt")],
                   "update": [authenticate("jwt"), hashed],
                   "patch": [authenticate("jwt"), hashed],
                   "remove": [authenticate("jwt")]},
        "after": {"all": [protect("password")]},
    })
    auth = AuthenticationService(SECRET, max_failures=max_failures, failure_window_s=window_s, clock=clock,
                                 hasher=FAST_HASHER)
    app.use("authentication", auth)
    return app, auth, users


class FeathersAuthTest(AsyncHTTPTestCase):
    def get_app(self):
        self.clock = FakeClock()
        self.feathers, self.auth, self.users = build_app(self.clock)
        return make_tornado_app(self.feathers)

    def get_async_test_timeout(self):
        return 60.0  # Argon2 hashing on a shared, loaded machine

    def call(self, method, path, body=None, headers=None):
        headers = dict(headers or {})
        raw = None
        if body is not None:
            raw = json.dumps(body)
            headers.setdefault("Content-Type", "application/json")
        elif method in ("POST", "PUT", "PATCH"):
            raw = ""
        response = self.fetch(path, method=method, body=raw, headers=headers,
                              allow_nonstandard_methods=True, raise_error=False)
        # Every answer of this suite is JSON; the raw text is kept to look for passwords.
        self.seen_bodies.append(response.body.decode())
        return response, (json.loads(response.body) if response.body else None)

    def setUp(self):
        self.seen_bodies: list[str] = []
        super().setUp()

    def tearDown(self):
        # "user never contains password" (§9): not in any answer of any test, hashed or not.
        for body in self.seen_bodies:
            assert "password" not in body, body
            assert "$argon2" not in body, body
        super().tearDown()

    def assert_401(self, response, body, message, data=None):
        assert response.code == 401, (response.code, body)
        assert response.headers["Content-Type"] == JSON_CT
        assert body["name"] == "NotAuthenticated" and body["code"] == 401
        assert body["className"] == "not-authenticated"
        assert body["message"] == message
        assert set(body) <= {"name", "message", "code", "className", "data"}
        if data is None:
            assert "data" not in body
        else:
            assert body["data"] == data

    def sign_up(self, email="alice@example.com", password="correct horse"):
        response, body = self.call("POST", "/users", {"email": email, "password": password})
        assert response.code == 201, body
        return body

    def login(self, email="alice@example.com", password="correct horse"):
        return self.call("POST", "/authentication", {"strategy": "local", "email": email, "password": password})

    def bearer(self, token):
        return {"Authorization": f"Bearer {token}"}

    # §9 `POST /users {"email", "password"}` → 201 `{"email", "id": 0}`, stored hashed
    def test_sign_up_stores_a_hash_and_never_returns_it(self):
        assert self.sign_up() == {"email": "alice@example.com", "id": 0}
        stored = self.users.store.records["0"]["password"]
        assert stored.startswith("$argon2id$") and "correct horse" not in stored

    # §9 `POST /authentication {"strategy": "local", ...}` → 201 {accessToken, authentication, user}
    # and "JWT payload: {iat, exp = iat + 86400, aud, sub (string id), jti (uuid)}"
    def test_local_login(self):
        self.sign_up()
        response, body = self.login()
        assert response.code == 201, body
        assert set(body) == {"accessToken", "authentication", "user"}
        assert body["user"] == {"email": "alice@example.com", "id": 0}
        assert body["authentication"]["strategy"] == "local"
        assert "accessToken" not in body["authentication"]
        payload = body["authentication"]["payload"]
        assert set(payload) == {"iat", "exp", "aud", "sub", "jti"}
        assert payload["exp"] == payload["iat"] + 86400
        assert payload["aud"] == AUDIENCE and payload["sub"] == "0"
        assert jwt.get_unverified_header(body["accessToken"]) == {"alg": "HS256", "typ": "access"}
        assert jwt.decode(body["accessToken"], SECRET, algorithms=["HS256"], audience=AUDIENCE) == payload

    # §9 failures: wrong password / unknown email / password missing → 401 `Invalid login`, no data
    def test_wrong_password_unknown_email_and_missing_password_answer_the_same(self):
        self.sign_up()
        answers = [self.login(password="wrong"), self.login(email="nobody@example.com"),
                   self.call("POST", "/authentication", {"strategy": "local", "email": "alice@example.com"})]
        for response, body in answers:
            self.assert_401(response, body, "Invalid login")
        assert answers[0][1] == answers[1][1] == answers[2][1]

    # §9 failures: `strategy` missing; strategy not allowed
    def test_strategy_missing_or_not_allowed(self):
        response, body = self.call("POST", "/authentication", {"email": "a@b.c", "password": "x"})
        self.assert_401(response, body, "Invalid authentication information (no `strategy` set)")
        response, body = self.call("POST", "/authentication", {"strategy": "oauth", "email": "a@b.c"})
        self.assert_401(response, body,
                        "Invalid authentication information (strategy not allowed in authStrategies)")

    # §9 `POST /authentication {"strategy": "jwt", "accessToken"}` → 201, the same token back
    def test_jwt_reauthentication(self):
        self.sign_up()
        token = self.login()[1]["accessToken"]
        response, body = self.call("POST", "/authentication", {"strategy": "jwt", "accessToken": token})
        assert response.code == 201, body
        assert body["accessToken"] == token
        assert body["authentication"]["strategy"] == "jwt"
        assert body["authentication"]["accessToken"] == token
        assert body["authentication"]["payload"] == jwt.decode(token, SECRET, algorithms=["HS256"],
                                                               audience=AUDIENCE)
        assert body["user"] == {"email": "alice@example.com", "id": 0}

    # §9 failures: expired token → `jwt expired`, data {name: TokenExpiredError, expiredAt}
    def test_expired_token_refused(self):
        self.sign_up()
        old = int(time.time()) - 2 * 86400
        token = self.auth.create_access_token(0, now=old)
        response, body = self.call("GET", "/users", headers=self.bearer(token))
        self.assert_401(response, body, "jwt expired", data={
            "name": "TokenExpiredError",
            "expiredAt": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(old + 86400))})

    # §9 failures: bad signature → `invalid signature`; malformed → `jwt malformed`
    def test_tampered_and_malformed_tokens_refused(self):
        self.sign_up()
        token = self.login()[1]["accessToken"]
        header, payload, signature = token.split(".")
        forged = jwt.encode({**jwt.decode(token, options={"verify_signature": False}), "sub": "1"},
                            "x" * 40, algorithm="HS256", headers={"typ": "access"})
        tampered = f"{header}.{forged.split('.')[1]}.{signature}"
        for bad in (forged, tampered):
            response, body = self.call("GET", "/users", headers=self.bearer(bad))
            self.assert_401(response, body, "invalid signature", data={"name": "JsonWebTokenError"})
        response, body = self.call("GET", "/users", headers=self.bearer("not-a-jwt"))
        self.assert_401(response, body, "jwt malformed", data={"name": "JsonWebTokenError"})

    # §9 "HS256" pinned: `alg: none` and HS512 (same secret, valid claims) are refused
    def test_other_algorithms_refused(self):
        self.sign_up()
        now = int(time.time())
        claims = {"iat": now, "exp": now + 3600, "aud": AUDIENCE, "sub": "0", "jti": "x"}
        unsigned = jwt.encode(claims, None, algorithm="none", headers={"typ": "access"})
        hs512 = jwt.encode(claims, SECRET, algorithm="HS512", headers={"typ": "access"})
        for bad in (unsigned, hs512):
            response, body = self.call("GET", "/users", headers=self.bearer(bad))
            self.assert_401(response, body, "invalid algorithm", data={"name": "JsonWebTokenError"})

    # §9 payload claims exp/iat/sub/aud/jti are required; the audience is checked
    def test_missing_claims_and_wrong_audience_refused(self):
        self.sign_up()
        now = int(time.time())
        full = {"iat": now, "exp": now + 3600, "aud": AUDIENCE, "sub": "0", "jti": "j"}
        for claim in ("exp", "iat", "sub", "aud", "jti"):
            claims = {k: v for k, v in full.items() if k != claim}
            token = jwt.encode(claims, SECRET, algorithm="HS256", headers={"typ": "access"})
            response, body = self.call("GET", "/users", headers=self.bearer(token))
            assert response.code == 401 and body["name"] == "NotAuthenticated", (claim, body)
        token = jwt.encode({**full, "aud": "https://elsewhere"}, SECRET, algorithm="HS256",
                           headers={"typ": "access"})
        response, body = self.call("GET", "/users", headers=self.bearer(token))
        assert response.code == 401 and body["data"] == {"name": "JsonWebTokenError"}

    # §9 "protected method, no token" → 401 `Not authenticated`; `Basic ...` counts as no token;
    # "Protection is per method": users.create public, find/get need a token
    def test_protected_service_needs_a_token(self):
        self.sign_up()
        for headers in ({}, {"Authorization": "Basic YWxpY2U6eA=="}):
            for path in ("/users", "/users/0"):
                response, body = self.call("GET", path, headers=headers)
                self.assert_401(response, body, "Not authenticated")
        token = self.login()[1]["accessToken"]
        # Scheme case-insensitive; a bare token is accepted too (§9).
        for authorization in (f"Bearer {token}", f"bearer {token}", token):
            response, body = self.call("GET", "/users", headers={"Authorization": authorization})
            assert response.code == 200, body
            assert body["data"] == [{"email": "alice@example.com", "id": 0}]
        response, body = self.call("GET", "/users/0", headers=self.bearer(token))
        assert response.code == 200 and body == {"email": "alice@example.com", "id": 0}

    # §9 "`user` never contains `password`": pages, arrays and single records over REST
    def test_password_never_returned(self):
        self.sign_up()
        self.sign_up("bob@example.com", "hunter22")
        token = self.login()[1]["accessToken"]
        headers = self.bearer(token)
        _, page = self.call("GET", "/users", headers=headers)
        assert [set(r) for r in page["data"]] == [{"email", "id"}] * 2
        _, patched = self.call("PATCH", "/users/1", {"password": "new one"}, headers=headers)
        assert patched == {"email": "bob@example.com", "id": 1}
        response, body = self.login("bob@example.com", "new one")
        assert response.code == 201, body
        _, removed = self.call("DELETE", "/users/1", headers=headers)
        assert removed == {"email": "bob@example.com", "id": 1}
        # tearDown checks every body of this test for "password" and "$argon2".

    # §9 `DELETE /authentication` with a valid token → 200 jwt shape; without → 401 no strategy
    def test_logout(self):
        self.sign_up()
        token = self.login()[1]["accessToken"]
        response, body = self.call("DELETE", "/authentication")
        self.assert_401(response, body, "Invalid authentication information (no `strategy` set)")
        response, body = self.call("DELETE", "/authentication", headers=self.bearer(token))
        assert response.code == 200, body
        assert body["accessToken"] == token
        assert body["authentication"]["strategy"] == "jwt"
        assert body["authentication"]["accessToken"] == token
        assert body["user"] == {"email": "alice@example.com", "id": 0}
        # A logged-out token is not accepted again (beyond Feathers, which keeps it valid).
        response, body = self.call("GET", "/users", headers=self.bearer(token))
        self.assert_401(response, body, "jwt revoked", data={"name": "JsonWebTokenError"})
        # A new login works.
        assert self.login()[0].code == 201

    # hash_password on update (PUT): the replaced password is hashed and works for login
    def test_update_hashes_the_password(self):
        self.sign_up()
        token = self.login()[1]["accessToken"]
        response, body = self.call("PUT", "/users/0", {"email": "alice@example.com", "password": "replaced"},
                                   headers=self.bearer(token))
        assert response.code == 200 and body == {"email": "alice@example.com", "id": 0}
        assert self.users.store.records["0"]["password"].startswith("$argon2id$")
        assert self.login(password="replaced")[0].code == 201

    # §9 `GET /authentication` → 405 ``Method `find` is not supported by this endpoint.``
    def test_find_on_authentication_is_405(self):
        response, body = self.call("GET", "/authentication")
        assert response.code == 405
        assert body["name"] == "MethodNotAllowed"
        assert body["message"] == "Method `find` is not supported by this endpoint."

    # Issue 13 item 6: 429 with Retry-After after N failures in a window, per email
    def test_rate_limited_per_email(self):
        self.sign_up()
        for _ in range(3):
            self.assert_401(*self.login(password="wrong"), "Invalid login")
        response, body = self.login()  # even the right password is refused while limited
        assert response.code == 429, body
        assert body["name"] == "TooManyRequests" and body["className"] == "too-many-requests"
        assert response.headers["Retry-After"] == "60"
        self.clock.now += 30
        response, _ = self.login(email="ALICE@example.com ")  # same email, other spelling
        assert response.code == 429 and response.headers["Retry-After"] == "30"
        self.clock.now += 31  # the failures left the window
        response, body = self.login()
        assert response.code == 201, body

    # Issue 13 item 6: per client address — different emails from one address
    def test_rate_limited_per_address(self):
        for i in range(3):
            self.assert_401(*self.login(email=f"nobody{i}@example.com"), "Invalid login")
        response, body = self.login(email="someone-else@example.com")
        assert response.code == 429, body
        assert int(response.headers["Retry-After"]) == 60


def test_secret_must_be_at_least_32_bytes():
    with pytest.raises(ValueError):
        AuthenticationService("short")
    AuthenticationService(b"\x00" * 32)


def test_lifetime_is_configurable():
    auth = AuthenticationService(SECRET, lifetime_s=600)
    payload = auth.verify_access_token(auth.create_access_token("7"))
    assert payload["exp"] - payload["iat"] == 600 and payload["sub"] == "7"


def test_failure_window_slides():
    clock = FakeClock()
    window = FailureWindow(2, 10.0, clock=clock)
    window.record("k")
    clock.now += 5
    window.record("k")
    assert window.retry_after("k") == 5
    clock.now += 5  # the first failure leaves the window
    assert window.retry_after("k") is None
    window.record("k")
    assert window.retry_after("k") == 5
    window.reset("k")
    assert window.retry_after("k") is None


async def test_internal_calls_pass_without_token_and_see_the_hash():
    app, _, users = build_app(FakeClock())
    created = await app.service("users").create({"email": "c@example.com", "password": "pw"})
    assert created["password"].startswith("$argon2id$")  # no provider: protect() leaves it
    page = await app.service("users").find({})
    assert page["total"] == 1


class CountingHasher(PasswordHasher):
    """Counts verifications (what an unknown email must also cost): the count is the point, so the cost is
    Argon2's lowest."""

    def __init__(self) -> None:
        super().__init__(time_cost=1, memory_cost=1024, parallelism=1)
        self.verifications = 0
        self.hashes = 0

    def hash(self, password, *, salt=None):
        self.hashes += 1
        return super().hash(password, salt=salt)

    def verify(self, hash, password):  # noqa: A002 - argon2's signature
        self.verifications += 1
        return super().verify(hash, password)


async def test_unknown_email_costs_one_argon2_verification_like_a_wrong_password():
    # §9 "unknown email: `Invalid login` (same as wrong password)"; issue 13 item 6 "hash a dummy"
    hasher = CountingHasher()
    app = Application()
    app.use("users", MemoryService())
    auth = AuthenticationService(SECRET, hasher=hasher, max_failures=100)
    app.use("authentication", auth)
    await app.service("users").create({"email": "a@example.com", "password": hasher.hash("right")})
    attempts = [{"email": "a@example.com", "password": "wrong"},
                {"email": "unknown@example.com", "password": "wrong"},
                {"email": "a@example.com"},
                {"password": "wrong"}]
    for data in attempts:
        before = hasher.verifications
        with pytest.raises(NotAuthenticated, match="^Invalid login$"):
            await app.service("authentication").create({"strategy": "local", **data}, {})
        assert hasher.verifications == before + 1, data


def test_a_service_that_only_verifies_tokens_hashes_nothing():
    # A query node builds the service to check access tokens and never logs anyone in: the dummy hash
    # (a whole Argon2 hash at the configured cost) is made when the service is mounted to take logins.
    hasher = CountingHasher()
    auth = AuthenticationService(SECRET, hasher=hasher)
    assert auth.verify_access_token(auth.create_access_token("u1"))["sub"] == "u1"
    assert hasher.hashes == 0
    Application().use("authentication", auth)
    assert hasher.hashes == 1


def test_protect_strips_records_arrays_and_pages_for_external_calls_only():
    # §9 "`user` never contains `password`": protect('password') on every result shape
    hook = protect("password")
    record = {"id": 0, "email": "a", "password": "h"}
    shapes = [(record, {"id": 0, "email": "a"}),
              ([record, record], [{"id": 0, "email": "a"}] * 2),
              ({"total": 1, "limit": 10, "skip": 0, "data": [record]},
               {"total": 1, "limit": 10, "skip": 0, "data": [{"id": 0, "email": "a"}]})]
    for result, expected in shapes:
        ctx = HookContext(app=None, service=None, method="find", path="users", type="after",
                          params={"provider": "rest"}, result=result)
        assert hook(ctx).result == expected
        internal = HookContext(app=None, service=None, method="find", path="users", type="after",
                               params={}, result=result)
        assert hook(internal).result is result
    assert record["password"] == "h"  # the stored record is not mutated

