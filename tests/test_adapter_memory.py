"""The memory adapter against the shared adapter cases (tests/adapter_support.py)."""

from __future__ import annotations

import pytest

from tests.adapter_support import CASES
from vecgrid.http.feathers.adapters import MemoryService
from vecgrid.common.feathers_errors import FeathersError


@pytest.fixture
def make():
    return lambda **options: MemoryService(**options)


@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
async def test_adapter_case(case, make):
    await case(make)


async def test_memory_generated_ids_skip_taken_ones():
    """§4: an explicit id does not collide with later generated ones."""
    service = MemoryService()
    await service.create({"id": 0, "name": "explicit"}, {})
    generated = await service.create({"name": "generated"}, {})
    assert generated["id"] == 1
    assert (await service.get(0, {}))["name"] == "explicit"


async def test_memory_refused_multi_create_with_a_bad_item_stores_nothing():
    """§3: a refused call changes nothing, also when the fault is in a later item of an array create."""
    service = MemoryService(multi=True)
    with pytest.raises(FeathersError):
        await service.create([{"id": 1, "name": "ok"}, "not an object"], {})
    assert await service.find({}) == []


# -- equality indexes: a find narrowed to one value's records answers as a scan of every record -----

def _mixed_records(n: int) -> list[dict]:
    """Values that share a hash but not a kind (1, 1.0, True, "1"), nulls, missing fields, lists."""
    import random

    rng = random.Random(3)
    kinds = [1, 1.0, True, "1", 2, "a", None, [1], {"v": 1}, 0, -0.0, False, float("nan")]
    records = []
    for i in range(n):
        record = {"id": i, "score": rng.random()}
        if i % 7:
            record["group"] = kinds[rng.randrange(len(kinds))]
        records.append(record)
    return records


def _scan(records: list[dict], query: dict) -> list[int]:
    from vecgrid.http.feathers.query import matches

    return [r["id"] for r in records if matches(r, query)]


QUERIES = [{"group": 1}, {"group": 1.0}, {"group": "1"}, {"group": 2, "score": {"$lt": 0.5}},
           {"group": 0}, {"group": "a", "$or": [{"score": {"$gt": 0.9}}, {"score": {"$lt": 0.1}}]},
           {"group": 3}, {"group": float("nan")}, {"group": True}, {"group": None}]


@pytest.mark.parametrize("query", QUERIES, ids=[repr(q) for q in QUERIES])
async def test_an_indexed_find_answers_as_a_scan_of_every_record(query):
    records = _mixed_records(3000)
    service = MemoryService(store={r["id"]: r for r in records}, paginate={"default": 5000, "max": 5000})
    for _ in range(2):  # the first call builds the index, the second reads it
        page = await service.find({"query": dict(query)})
        assert [r["id"] for r in page["data"]] == _scan(records, query)
        assert page["total"] == len(_scan(records, query))


async def test_an_index_sees_every_change_to_the_store():
    """Creates, patches, removes through the service and writes straight into the store's dict (as
    server code and tests do) are all seen by the next indexed find, in store order."""
    records = _mixed_records(2000)
    service = MemoryService(store={r["id"]: r for r in records}, multi=True)

    async def ids(query):
        return [r["id"] for r in await service.find({"query": query})]

    assert await ids({"group": 2}) == _scan(records, {"group": 2})
    await service.create({"id": 5000, "group": 2})
    await service.patch(None, {"group": 2}, {"query": {"group": "a"}})
    await service.remove(None, {"query": {"group": 1, "score": {"$lt": 0.5}}})
    first_of_group_2 = (await ids({"group": 2}))[0]
    service.store.records[str(first_of_group_2)] = {"id": first_of_group_2, "group": 9}
    service.store.records["6000"] = {"id": 6000, "group": 2}
    del service.store.records["5000"]
    current = list(service.store.records.values())
    for query in ({"group": 2}, {"group": "a"}, {"group": 1}, {"group": 9}):
        assert await ids(query) == _scan(current, query), query
    assert (await ids({"group": 2}))[-1] == 6000
    # the find read the bucket, not the store
    assert len(service.store.narrow({"group": 2})[0]) == len(_scan(current, {"group": 2}))


async def test_multi_patch_and_remove_through_an_index_touch_exactly_the_matching_records():
    records = _mixed_records(2000)
    service = MemoryService(store={r["id"]: r for r in records}, multi=True)
    query = {"group": 2, "score": {"$gte": 0.25}}
    patched = await service.patch(None, {"tag": "x"}, {"query": dict(query)})
    assert [r["id"] for r in patched] == _scan(records, query)
    removed = await service.remove(None, {"query": {"group": 1.0}})
    assert [r["id"] for r in removed] == _scan(records, {"group": 1})
    left = list(service.store.records.values())
    assert [r["id"] for r in left if r.get("tag") == "x"] == _scan(records, query)
    assert not _scan(left, {"group": 1})


def test_every_way_of_writing_the_store_dict_is_counted():
    records = _mixed_records(1500)
    service = MemoryService(store={r["id"]: r for r in records})
    store = service.store.records
    writes = [lambda: store.__setitem__("0", {"id": 0, "group": 2}), lambda: store.pop("1"),
              lambda: store.__delitem__("2"), lambda: store.update({"3": {"id": 3, "group": 2}}),
              lambda: store.setdefault("9000", {"id": 9000, "group": 2}), lambda: store.__ior__({"4": {"id": 4}}),
              lambda: store.popitem(), lambda: store.clear()]
    for write in writes:
        before = store.version
        write()
        assert store.version > before
