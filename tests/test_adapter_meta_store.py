"""The metadata-store adapter against the shared adapter cases, plus what only it promises:
records survive a restart, and services sharing one store file never hand out the same id."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.adapter_support import CASES, PEOPLE, everything
from vecgrid.http.feathers.adapters import MetaStoreService
from vecgrid.common.feathers_errors import FeathersError
from vecgrid.storage.kv import SQLiteMetaStore


@pytest.fixture
def store(tmp_path):
    with SQLiteMetaStore(tmp_path / "meta.db") as opened:
        yield opened


@pytest.fixture
def make(store):
    # Each service of a case gets a prefix of its own, as two services of an app would.
    count = iter(range(1000))
    return lambda **options: MetaStoreService(store, f"http/test{next(count)}/", **options)


@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
async def test_adapter_case(case, make):
    await case(make)


async def test_records_survive_closing_and_reopening_the_store(tmp_path):
    path = tmp_path / "meta.db"
    with SQLiteMetaStore(path) as first:
        users = MetaStoreService(first, "http/users/", multi=True)
        await users.create([dict(p) for p in PEOPLE], {})
        await users.patch(1, {"age": 26}, {})
        await users.remove(2, {})
        generated = await users.create({"name": "Zed"}, {})
    with SQLiteMetaStore(path) as second:
        users = MetaStoreService(second, "http/users/", multi=True)
        expected = [p if p["id"] != 1 else {**p, "age": 26} for p in PEOPLE if p["id"] != 2]
        # Insertion order survives too: an unsorted find lists records as they were created.
        assert await users.find({}) == expected + [generated]
        after_restart = await users.create({"name": "Ann"}, {})
        assert after_restart["id"] not in {r["id"] for r in expected + [generated]}


async def test_two_services_over_one_store_file_never_share_an_id(tmp_path):
    # Two store objects hold two SQLite connections, as two processes sharing the file would.
    path = tmp_path / "meta.db"
    with SQLiteMetaStore(path) as one, SQLiteMetaStore(path) as two:
        services = [MetaStoreService(one, "http/users/"), MetaStoreService(two, "http/users/")]
        per_service = 25

        async def create_many(service, tag):
            return [(await service.create({"tag": tag, "n": i}, {}))["id"] for i in range(per_service)]

        first, second = await asyncio.gather(create_many(services[0], "a"), create_many(services[1], "b"))
        handed_out = first + second
        assert len(set(handed_out)) == len(handed_out) == 2 * per_service
        stored = await everything(services[0])
        assert len(stored) == 2 * per_service
        assert sorted(r["id"] for r in stored) == sorted(handed_out)


class _RacedStore:
    """The store as seen by one service, with another writer slipping in once before its first commit."""

    def __init__(self, store, interfere):
        self._store, self._interfere = store, interfere
        self.commits = 0

    def get(self, key):
        return self._store.get(key)

    def scan(self, prefix):
        return self._store.scan(prefix)

    def txn(self):
        self.commits += 1
        if self.commits == 1:
            self._interfere()
        return self._store.txn()


async def test_multi_patch_racing_a_create_reads_again_and_includes_it(tmp_path):
    """A multi patch commits only if nothing it read changed: a matching record created by another
    service between its read and its commit makes it read again, so that record is patched too."""
    path = tmp_path / "meta.db"
    with SQLiteMetaStore(path) as one, SQLiteMetaStore(path) as two:
        other = MetaStoreService(two, "http/users/", multi=True)
        await other.create([dict(p) for p in PEOPLE], {})

        def create_elsewhere():
            asyncio.run(other.create({"id": 9, "name": "Late", "age": 5}, {}))

        raced = _RacedStore(one, create_elsewhere)
        service = MetaStoreService(raced, "http/users/", multi=True)
        patched = await service.patch(None, {"young": True}, {"query": {"age": {"$lt": 30}}})
        assert raced.commits == 2  # the first commit was refused by its guards, nothing applied
        assert sorted(r["id"] for r in patched) == [1, 3, 4, 9]
        assert sorted(r["id"] for r in await other.find({"query": {"young": True}})) == [1, 3, 4, 9]


async def test_update_racing_a_patch_does_not_overwrite_it_blindly(tmp_path):
    """update/patch of one id is guarded by the record as read: the losing writer reads again."""
    path = tmp_path / "meta.db"
    with SQLiteMetaStore(path) as one, SQLiteMetaStore(path) as two:
        other = MetaStoreService(two, "http/users/")
        await other.create({"id": 1, "name": "Ann", "age": 20}, {})

        def rename_elsewhere():
            asyncio.run(other.patch(1, {"name": "Anne"}, {}))

        raced = _RacedStore(one, rename_elsewhere)
        service = MetaStoreService(raced, "http/users/")
        # only matches while the name is Ann: after the race it must not match any more
        with pytest.raises(FeathersError) as refused:
            await service.patch(1, {"age": 21}, {"query": {"name": "Ann"}})
        assert refused.value.code == 404 and raced.commits == 1
        assert await other.get(1, {}) == {"id": 1, "name": "Anne", "age": 20}


async def test_refused_multi_create_with_a_bad_item_stores_nothing(store):
    service = MetaStoreService(store, "http/users/", multi=True)
    with pytest.raises(FeathersError):
        await service.create([{"id": 1, "name": "ok"}, "not an object"], {})
    assert await service.find({}) == []
    assert store.scan("http/users/") == []


async def test_explicit_ids_are_skipped_by_generated_ones(store):
    service = MetaStoreService(store, "http/users/", multi=True)
    created = await service.create([{"id": 0, "name": "explicit"}, {"name": "generated"}], {})
    assert [r["id"] for r in created] == [0, 1]
    assert (await service.create({"name": "next"}, {}))["id"] == 2


async def test_services_under_different_prefixes_are_separate(store):
    users = MetaStoreService(store, "http/users/")
    messages = MetaStoreService(store, "http/messages/")
    await users.create({"id": 1, "name": "Ann"}, {})
    assert await messages.find({}) == []
    stored = dict(store.scan("http/users/records/"))
    assert json.loads(stored["http/users/records/1"])["record"] == {"id": 1, "name": "Ann"}
