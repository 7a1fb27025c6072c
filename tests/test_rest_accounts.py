"""Accounts over REST: users in the metadata store, roles and rights, the token secret, the first admin,
and ``vecgrid users`` (rest-api.md "Authentication", "Accounts")."""

from __future__ import annotations

import io
import json
import stat

import pytest
from tornado.testing import AsyncHTTPTestCase

from vecgrid import cli
from vecgrid.common import auth
from vecgrid.config import ConfigError, Settings
from vecgrid.http.feathers.application import Application
from vecgrid.http.feathers.authentication import Revocations
from vecgrid.http.feathers.rest import make_tornado_app
from vecgrid.http.services import RestContext
from vecgrid.http.services import accounts
from vecgrid.storage.layout import DataDir
from tests.conftest import cheap_passwords


class Thing:
    """A service with one method per right, to see the authorization hook decide."""

    RIGHTS = {"find": "read", "create": "write", "remove": "admin"}

    async def find(self, params):
        return [{"seen": params.get("user", {}).get("email")}]

    async def create(self, data, params):
        return data

    async def remove(self, id, params):  # noqa: A002
        return {"id": id}

    async def patch(self, id, data, params):  # noqa: A002 - exposed but not in RIGHTS
        return data


def settings_for(tmp_path, **http):
    s = cheap_passwords(Settings())
    s.common.data_dir = str(tmp_path / "data")
    for key, value in {"auth": "on", **http}.items():
        setattr(s.http, key, value)
    return s


class AccountsTest(AsyncHTTPTestCase):
    tmp_path = None

    def get_app(self):
        import tempfile
        self._tmp = tempfile.TemporaryDirectory()
        from pathlib import Path
        self.settings = settings_for(Path(self._tmp.name))
        self.store = DataDir(self.settings.common.data_dir).open_store()
        self.api = Application()
        accounts.mount(self.api, RestContext(coord=None, settings=self.settings, store=self.store))
        self.api.use("things", Thing())
        return make_tornado_app(self.api)

    def tearDown(self):
        super().tearDown()
        self.store.close()
        self._tmp.cleanup()

    def get_async_test_timeout(self):
        return 60.0  # Argon2 on a loaded machine

    def call(self, method, path, body=None, token=None):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        raw = json.dumps(body) if body is not None else ("" if method in ("POST", "PATCH", "PUT") else None)
        response = self.fetch(path, method=method, body=raw, headers=headers, allow_nonstandard_methods=True,
                              raise_error=False)
        assert "$argon2" not in response.body.decode(), "a password hash left the server"
        return response.code, (json.loads(response.body) if response.body else None)

    def add(self, email, roles, password="pw-" + "x" * 8):
        self.io_loop.run_sync(lambda: accounts.add_user(self.api, email, password, roles))
        return self.login(email, password)

    def login(self, email, password="pw-" + "x" * 8):
        code, body = self.call("POST", "/authentication", {"strategy": "local", "email": email, "password": password})
        assert code == 201, body
        return body["accessToken"]

    def test_every_call_needs_a_token_and_the_right(self):
        admin = self.add("admin@x.io", ["admin"])
        writer = self.add("writer@x.io", ["writer"])
        reader = self.add("reader@x.io", ["reader"])
        assert self.call("GET", "/things")[0] == 401
        assert self.call("GET", "/things", token="not-a-token")[0] == 401
        assert self.call("GET", "/things", token=reader) == (200, [{"seen": "reader@x.io"}])
        assert self.call("POST", "/things", {"a": 1}, token=reader)[0] == 403
        assert self.call("POST", "/things", {"a": 1}, token=writer) == (201, {"a": 1})
        code, body = self.call("DELETE", "/things/3", token=writer)
        assert code == 403 and body["name"] == "Forbidden" and body["data"] == {"needs": "admin"}
        assert self.call("DELETE", "/things/3", token=admin) == (200, {"id": "3"})
        # A method the service exposes but does not rate is refused even for an admin.
        assert self.call("PATCH", "/things/3", {"a": 1}, token=admin)[0] == 403

    def test_users_are_managed_by_admins_and_a_user_changes_only_their_password(self):
        admin = self.add("admin@x.io", ["admin"])
        assert self.call("POST", "/users", {"email": "a@x.io", "password": "pw"})[0] == 401
        code, created = self.call("POST", "/users", {"email": "a@x.io", "password": "first-pw", "roles": ["reader"]},
                                  token=admin)
        assert code == 201 and created == {"email": "a@x.io", "roles": ["reader"], "id": 1}
        user = self.login("a@x.io", "first-pw")
        assert self.call("GET", "/users", token=user)[0] == 403
        assert self.call("GET", "/users/0", token=user)[0] == 403
        assert self.call("GET", "/users/1", token=user) == (200, created)
        assert self.call("PATCH", "/users/1", {"roles": ["admin"]}, token=user)[0] == 403
        assert self.call("PATCH", "/users/0", {"password": "mine"}, token=user)[0] == 403
        assert self.call("PATCH", "/users/1", {"password": "second-pw"}, token=user) == (200, created)
        self.login("a@x.io", "second-pw")
        code, page = self.call("GET", "/users", token=admin)
        assert code == 200 and [u["email"] for u in page["data"]] == ["admin@x.io", "a@x.io"]

    def test_bad_users_are_refused_and_nothing_is_stored(self):
        admin = self.add("admin@x.io", ["admin"])
        for body in ({"email": "admin@x.io", "password": "pw"},            # taken: 409
                     {"email": "b@x.io", "password": "pw", "roles": ["root"]},
                     {"email": "not-an-email", "password": "pw"},
                     {"email": "c@x.io"},
                     {"email": "d@x.io", "password": "pw", "shoe": 42},
                     [{"email": "e@x.io", "password": "pw"}]):
            code, error = self.call("POST", "/users", body, token=admin)
            assert code in (400, 405, 409), (body, code, error)
        code, page = self.call("GET", "/users", token=admin)
        assert page["total"] == 1

    def test_logout_revokes_the_token(self):
        admin = self.add("admin@x.io", ["admin"])
        assert self.call("DELETE", "/authentication", token=admin)[0] == 200
        assert self.call("GET", "/things", token=admin)[0] == 401


def test_the_secret_is_generated_once_into_the_data_dir_private(tmp_path):
    s = settings_for(tmp_path)
    first = accounts.token_secret(s)
    assert len(first.encode()) >= 32 and accounts.token_secret(s) == first
    path = tmp_path / "data" / auth.TOKEN_SECRET_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    s.http.jwt_secret = "short"
    with pytest.raises(ConfigError):
        accounts.token_secret(s)
    s.http.jwt_secret = "k" * 32
    assert accounts.token_secret(s) == "k" * 32


def test_passwords_cost_argon2s_defaults_unless_the_settings_lower_it():
    default = accounts.password_hasher(Settings())
    assert (default.time_cost, default.memory_cost, default.parallelism) == (3, 65536, 4)
    assert default.hash("pw").startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    cheap = accounts.password_hasher(Settings.load(env={"VECGRID_HTTP_PASSWORD_TIME_COST": "1",
                                                        "VECGRID_HTTP_PASSWORD_MEMORY_KIB": "64",
                                                        "VECGRID_HTTP_PASSWORD_PARALLELISM": "1"}))
    assert cheap.hash("pw").startswith("$argon2id$v=19$m=64,t=1,p=1$")
    for key, value in (("password_time_cost", 0), ("password_parallelism", 0), ("password_memory_kib", 31)):
        s = Settings()
        s.http.password_parallelism = 4
        setattr(s.http, key, value)
        with pytest.raises(ConfigError, match=f"http.{key}"):
            accounts.password_hasher(s)


def users_api(store) -> Application:
    """The ``users`` service alone on ``store``, hashing at the suite's cost."""
    api = Application()
    accounts.mount_users(api, store, accounts.password_hasher(cheap_passwords(Settings())), Revocations(), 3600)
    return api


async def test_a_stored_password_keeps_the_cost_it_was_made_with(tmp_path):
    """Lowering (or raising) the cost does not lock anyone out: the hash carries its own parameters."""
    store = DataDir(tmp_path / "data").open_store()
    try:
        await accounts.add_user(users_api(store), "a@x.io", "pw", ["reader"])
        settings = settings_for(tmp_path)
        settings.http.password_time_cost = 2
        after = Application()
        accounts.mount(after, RestContext(coord=None, settings=settings, store=store))
        login = await after.service("authentication").create({"strategy": "local", "email": "a@x.io",
                                                              "password": "pw"}, {})
        assert login["accessToken"]
        await after.service("users").patch(login["user"]["id"], {"password": "pw2"}, {})
        stored = json.loads(store.get(accounts.USERS_PREFIX + "records/0"))["record"]["password"]
        assert stored.startswith("$argon2id$v=19$m=64,t=2,p=1$")
    finally:
        store.close()


def test_auth_is_on_by_default_only_off_loopback(tmp_path):
    s = settings_for(tmp_path, auth="auto")
    s.common.host = "127.0.0.1"
    assert not accounts.auth_enabled(s)
    s.common.host = "0.0.0.0"
    assert accounts.auth_enabled(s)
    s.http.auth = "off"
    assert not accounts.auth_enabled(s)
    s.http.auth = "maybe"
    with pytest.raises(ConfigError):
        accounts.auth_enabled(s)


async def test_the_first_admin_comes_from_the_environment_once(tmp_path):
    store = DataDir(tmp_path / "data").open_store()
    try:
        api = users_api(store)
        env = {"VECGRID_HTTP_ADMIN_EMAIL": "root@x.io", "VECGRID_HTTP_ADMIN_PASSWORD": "pw"}
        settings = Settings.load(env={})
        assert await accounts.ensure_first_admin(api, settings.http.admin_email, settings.http.admin_password) is None
        settings = Settings.load(env=env)
        created = await accounts.ensure_first_admin(api, settings.http.admin_email, settings.http.admin_password)
        assert created["roles"] == ["admin"] and created["password"].startswith("$argon2id$")
        assert await accounts.ensure_first_admin(api, "other@x.io", "pw") is None
        assert [u["email"] for u in await api.service("users").find({"paginate": False})] == ["root@x.io"]
    finally:
        store.close()


def test_users_command_adds_lists_changes_and_removes(tmp_path, monkeypatch, capsys):
    data = str(tmp_path / "data")

    def run(*argv, stdin=""):
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = cli.main(["users", *argv, "--data-dir", data])
        return code, capsys.readouterr()

    code, out = run("add", "root@x.io", "--role", "admin", "--password-stdin", stdin="pw1\n")
    assert code == 0 and json.loads(out.out) == {"email": "root@x.io", "roles": ["admin"], "id": 0}
    assert run("add", "root@x.io", "--password-stdin", stdin="pw2\n")[0] == cli.EXIT_RUNTIME
    assert run("add", "x@x.io", "--password-stdin", stdin="\n")[0] == cli.EXIT_USAGE
    code, out = run("list")
    assert code == 0 and [json.loads(line)["email"] for line in out.out.splitlines()] == ["root@x.io"]
    assert "argon2" not in out.out
    assert run("passwd", "root@x.io", "--password-stdin", stdin="pw3\n")[0] == 0
    store = DataDir(data).open_store()
    try:
        from argon2 import PasswordHasher
        stored = json.loads(store.get(accounts.USERS_PREFIX + "records/0"))["record"]
        assert PasswordHasher().verify(stored["password"], "pw3")
        assert stored["password"].startswith("$argon2id$v=19$m=64,t=1,p=1$")   # conftest's environment
    finally:
        store.close()
    assert run("remove", "nobody@x.io")[0] == cli.EXIT_RUNTIME
    assert run("remove", "root@x.io")[0] == 0
    assert run("list")[1].out == ""
