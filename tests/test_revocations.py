"""Logged-out tokens: kept in the metadata store across restarts, copied to the nodes, and the rights
servers keep checked again after a logout (the doors themselves: tests/test_grpc_auth.py)."""

from __future__ import annotations

import time

import pytest

from vecgrid.common.auth import KeptRights
from vecgrid.common.feathers_errors import NotAuthenticated
from vecgrid.http.feathers.authentication import AuthenticationService
from vecgrid.http.services.revocations import REVOKED_PREFIX, ClusterRevocations, digest_of
from vecgrid.storage.kv import SQLiteMetaStore

SECRET = "s" * 40


def tokens(revocations: ClusterRevocations) -> AuthenticationService:
    return AuthenticationService(SECRET, revocations=revocations)


async def test_a_logout_survives_a_restart_of_the_coordinator(tmp_path):
    with SQLiteMetaStore(tmp_path / "meta.db") as store:
        first = tokens(ClusterRevocations.load(store))
        kept, dropped = first.create_access_token("1"), first.create_access_token("1")
        payload = first.verify_access_token(dropped)
        await first.revocations.add(payload["jti"], payload["exp"])
        with pytest.raises(NotAuthenticated, match="jwt revoked"):
            first.verify_access_token(dropped)
    with SQLiteMetaStore(tmp_path / "meta.db") as store:   # the process restarted: what the store kept
        again = tokens(ClusterRevocations.load(store))
        with pytest.raises(NotAuthenticated, match="jwt revoked"):
            again.verify_access_token(dropped)
        assert again.verify_access_token(kept)["sub"] == "1"
        assert again.revocations.digest == first.revocations.digest


async def test_expired_ids_leave_the_store(tmp_path):
    now = int(time.time())
    with SQLiteMetaStore(tmp_path / "meta.db") as store:
        store.put(REVOKED_PREFIX + "old", str(now - 5).encode())
        store.put(REVOKED_PREFIX + "live", str(now + 3600).encode())
        loaded = ClusterRevocations.load(store)
        assert loaded.entries() == {"live": now + 3600}
        assert [k for k, _ in store.scan(REVOKED_PREFIX)] == [REVOKED_PREFIX + "live"]
        store.put(REVOKED_PREFIX + "ends", str(now + 1).encode())
        loaded = ClusterRevocations.load(store)
        loaded._expiry["ends"] = now - 1   # its token expired since the load
        await loaded.add("new", now + 60)
        assert sorted(k for k, _ in store.scan(REVOKED_PREFIX)) == [REVOKED_PREFIX + "live", REVOKED_PREFIX + "new"]
        assert loaded.entries() == {"live": now + 3600, "new": now + 60}


def test_a_node_refuses_every_token_until_its_first_copy_and_then_what_the_copy_lists():
    node = ClusterRevocations()
    service = tokens(node)
    token = service.create_access_token("1")
    with pytest.raises(NotAuthenticated, match="jwt revoked"):
        service.verify_access_token(token)
    revision = node.revision
    node.replace({}, digest_of({}))
    assert service.verify_access_token(token)["sub"] == "1" and node.revision == revision + 1
    node.replace({}, digest_of({}))   # the same copy again changes nothing
    assert node.revision == revision + 1


def test_changes_call_the_listeners():
    calls = []
    node = ClusterRevocations()
    node.listeners.append(lambda: calls.append(node.digest))
    node.replace({"a": int(time.time()) + 60}, "d1")
    assert calls == ["d1"] and "a" in node and "b" not in node


async def test_kept_rights_are_checked_again_after_a_logout():
    checks = []
    revision = [0]

    async def check(value, peer):
        checks.append(value)
        return frozenset({"read"})

    kept = KeptRights(check, revision=lambda: revision[0])
    assert await kept.rights("Bearer t") == frozenset({"read"})
    assert await kept.rights("Bearer t") == frozenset({"read"}) and checks == ["Bearer t"]   # kept
    revision[0] += 1   # a logout somewhere: what was kept is checked again
    await kept.rights("Bearer t")
    assert checks == ["Bearer t", "Bearer t"]
