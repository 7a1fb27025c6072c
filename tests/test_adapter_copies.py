"""Records an adapter answers are the caller's: changing them (nested values too) never changes the store."""

from __future__ import annotations

from vecgrid.http.feathers.adapters.memory import MemoryService


async def test_answers_do_not_alias_the_store():
    service = MemoryService(multi=True)
    created = await service.create({"name": "a", "tags": ["x"], "meta": {"k": [1]}})
    created["tags"].append("from-create")
    found = (await service.find({"query": {}}))[0]
    found["tags"].append("from-find")
    found["meta"]["k"].append(2)
    found["name"] = "changed"
    got = await service.get(0, {"query": {"$select": ["tags"]}})
    got["tags"].append("from-get")
    patched = await service.patch(0, {"extra": {"n": 1}}, {"query": {}})
    patched["extra"]["n"] = 99
    (await service.patch(None, {}, {"query": {}}))[0]["meta"]["k"].clear()
    (await service.remove(None, {"query": {"name": "nobody"}}))
    assert await service.get(0, {"query": {}}) == {"id": 0, "name": "a", "tags": ["x"], "meta": {"k": [1]},
                                                   "extra": {"n": 1}}
