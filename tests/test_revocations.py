"""Logged-out tokens: kept in the metadata store across restarts, copied to the nodes, and the rights
servers keep checked again after a logout (the doors themselves: tests/test_grpc_auth.py)."""

from __future__ import annotations

import json
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
        await first.revocations.refuse_token(payload["jti"], payload["exp"])
        with pytest.raises(NotAuthenticated, match="jwt revoked"):
            first.verify_access_token(dropped)
    with SQLiteMetaStore(tmp_path / "meta.db") as store:   # the process restarted: what the store kept
        again = tokens(ClusterRevocations.load(store))
        with pytest.raises(NotAuthenticated, match="jwt revoked"):
            again.verify_access_token(dropped)
        assert again.verify_access_token(kept)["sub"] == "1"
        assert again.revocations.digest == first.revocations.digest


async def test_a_removed_users_tokens_are_refused_and_a_later_one_is_not(tmp_path):
    with SQLiteMetaStore(tmp_path / "meta.db") as store:
        service = tokens(ClusterRevocations.load(store))
        now = int(time.time())
        old, other = service.create_access_token("7", now=now - 10), service.create_access_token("8", now=now - 10)
        await service.revocations.refuse_subject("7", 3600)
        with pytest.raises(NotAuthenticated, match="jwt revoked"):
            service.verify_access_token(old)
        assert service.verify_access_token(other)["sub"] == "8"
    with SQLiteMetaStore(tmp_path / "meta.db") as store:
        again = tokens(ClusterRevocations.load(store))
        with pytest.raises(NotAuthenticated, match="jwt revoked"):
            again.verify_access_token(old)
        # a token issued after the removal (a user of that id again) is not the removed user's
        again.revocations._refused["sub:7"] = (now - 20, now + 3600)
        assert again.verify_access_token(old)["sub"] == "7"


async def test_entries_past_their_time_leave_the_store(tmp_path):
    now = int(time.time())
    with SQLiteMetaStore(tmp_path / "meta.db") as store:
        store.put(REVOKED_PREFIX + "jti:old", json.dumps([0, now - 5]).encode())
        store.put(REVOKED_PREFIX + "jti:live", json.dumps([0, now + 3600]).encode())
        loaded = ClusterRevocations.load(store)
        assert loaded.entries() == {"jti:live": (0, now + 3600)}
        assert [k for k, _ in store.scan(REVOKED_PREFIX)] == [REVOKED_PREFIX + "jti:live"]
        store.put(REVOKED_PREFIX + "sub:3", json.dumps([now, now + 1]).encode())
        loaded = ClusterRevocations.load(store)
        loaded._refused["sub:3"] = (now, now - 1)   # its tokens expired since the load
        await loaded.refuse_token("new", now + 60)
        assert sorted(k for k, _ in store.scan(REVOKED_PREFIX)) == [REVOKED_PREFIX + "jti:live",
                                                                      REVOKED_PREFIX + "jti:new"]
        assert loaded.entries() == {"jti:live": (0, now + 3600), "jti:new": (0, now + 60)}


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
    node.replace({"jti:a": (0, int(time.time()) + 60)}, "d1")
    assert calls == ["d1"] and node.refuses({"jti": "a"}) and not node.refuses({"jti": "b", "sub": "1", "iat": 0})


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


async def test_removing_a_user_from_the_data_dirs_store_refuses_its_tokens_after_a_restart(tmp_path):
    """What ``vecgrid users remove`` does on the data dir: the refusal lands in the store, which the
    coordinator reads (at start, and every membership round) and sends on to its nodes."""
    from argon2 import PasswordHasher

    from vecgrid.http.feathers.application import Application
    from vecgrid.http.services.accounts import add_user, mount_users

    with SQLiteMetaStore(tmp_path / "meta.db") as store:
        api = Application()
        mount_users(api, store, PasswordHasher(time_cost=1, memory_cost=64, parallelism=1),
                    ClusterRevocations.load(store), 3600)
        user = await add_user(api, "gone@x.io", "pw", ["reader"])
        token = tokens(ClusterRevocations.load(store)).create_access_token(user["id"], now=int(time.time()) - 5)
        await api.service("users").remove(user["id"])
    with SQLiteMetaStore(tmp_path / "meta.db") as store:
        with pytest.raises(NotAuthenticated, match="jwt revoked"):
            tokens(ClusterRevocations.load(store)).verify_access_token(token)


async def test_the_coordinator_follows_what_another_process_wrote_to_the_store(tmp_path):
    with SQLiteMetaStore(tmp_path / "meta.db") as store:
        coordinator, other = ClusterRevocations.load(store), ClusterRevocations.load(store)
        changes = []
        coordinator.listeners.append(lambda: changes.append(coordinator.digest))
        await other.refuse_subject("5", 3600)   # vecgrid users remove, on the data dir
        await coordinator.reload()
        assert coordinator.refuses({"jti": "x", "sub": "5", "iat": int(time.time()) - 1})
        assert changes == [other.digest]
        await coordinator.reload()   # nothing new: no change, nothing sent
        assert changes == [other.digest]


async def test_a_refusal_made_while_the_store_is_read_again_is_kept(tmp_path, monkeypatch):
    """The coordinator's round reads the store in a thread; a logout recorded meanwhile is not in what
    that read found, and must not be dropped until the next round reads it back."""
    from vecgrid.http.services import revocations as module

    now = int(time.time())
    with SQLiteMetaStore(tmp_path / "meta.db") as store:
        coordinator = ClusterRevocations.load(store)
        read_before_the_logout = module._stored(store)
        await coordinator.refuse_token("during", now + 60)
        monkeypatch.setattr(module, "_stored", lambda _store: read_before_the_logout)
        await coordinator.reload()
        assert coordinator.refuses({"jti": "during"})


async def test_logouts_stored_by_the_earlier_layout_are_still_refused(tmp_path):
    """Before refused users, a logout was stored as ``http/revoked_tokens/<jti>`` -> its ``exp``; a data
    dir written then keeps refusing those tokens."""
    now = int(time.time())
    with SQLiteMetaStore(tmp_path / "meta.db") as store:
        store.put("http/revoked_tokens/before", str(now + 600).encode())
        store.put("http/revoked_tokens/expired", str(now - 5).encode())
        loaded = ClusterRevocations.load(store)
        assert loaded.refuses({"jti": "before"}) and not loaded.refuses({"jti": "expired", "sub": "1", "iat": 0})
        assert store.scan("http/revoked_tokens/") == []   # moved to the current layout, the expired one dropped
        assert [k for k, _ in store.scan(REVOKED_PREFIX)] == [REVOKED_PREFIX + "jti:before"]
        assert ClusterRevocations.load(store).refuses({"jti": "before"})
