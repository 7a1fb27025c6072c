"""The shared adapter test cases: every Feathers database adapter must pass all of them.

Each case is ``async def case_...(make)`` where ``make(**options)`` builds an empty service of the
adapter under test with the given options (``id``, ``paginate``, ``multi``, ``query_schema``).  A
test module runs :data:`CASES` against its adapter (see tests/test_adapter_memory.py).  Every case
comes from /work/shared/spec/feathers-rest-facts.md; its docstring names the section.

Records carry explicit ids so the cases do not depend on how an adapter generates ids.
"""

from __future__ import annotations

from typing import Any, Callable

from vecgrid.common.feathers_errors import FeathersError

PEOPLE = [
    {"id": 0, "name": "Doug", "age": 32},
    {"id": 1, "name": "Alice", "age": 25},
    {"id": 2, "name": "Bob", "age": 40},
    {"id": 3, "name": "Carol", "age": 25},
    {"id": 4, "name": "Eve", "age": 10},
]


async def seeded(make: Callable[..., Any], **options: Any) -> Any:
    service = make(**options)
    await service._create([dict(p) for p in PEOPLE], {"adapter": {"multi": True}})
    return service


async def everything(service: Any) -> list[dict]:
    return sorted(await service._find({"paginate": False}), key=lambda r: r["id"])


async def expect_error(awaitable: Any, code: int, name: str, message: str) -> FeathersError:
    try:
        result = await awaitable
    except FeathersError as err:
        assert (err.code, err.name, err.message) == (code, name, message)
        return err
    raise AssertionError(f"expected {name} {message!r}, got {result!r}")


def ids(records: list[dict]) -> list:
    return [r["id"] for r in records]


# -- §1, §4: the methods ---------------------------------------------------------------------------


async def case_find_all_unpaginated(make):
    """§6: a non-paginated find returns an array of all matching records."""
    service = await seeded(make)
    assert sorted(ids(await service.find({}))) == [0, 1, 2, 3, 4]
    assert sorted(ids(await service.find({"query": {"age": 25}}))) == [1, 3]


async def case_get_string_id_matches_number(make):
    """§1: a string id matches a record whose id is the number with that decimal form."""
    service = await seeded(make)
    assert await service.get("0", {}) == {"id": 0, "name": "Doug", "age": 32}
    assert await service.get(0) == {"id": 0, "name": "Doug", "age": 32}


async def case_get_missing_is_not_found(make):
    """§3: get/update/patch/remove of an unknown id → 404 `No record found for id '999'`."""
    service = await seeded(make)
    message = "No record found for id '999'"
    await expect_error(service.get("999", {}), 404, "NotFound", message)
    await expect_error(service.update("999", {"name": "X"}, {}), 404, "NotFound", message)
    await expect_error(service.patch("999", {"name": "X"}, {}), 404, "NotFound", message)
    await expect_error(service.remove("999", {}), 404, "NotFound", message)
    assert await everything(service) == PEOPLE


async def case_id_methods_need_the_query_to_match(make):
    """§3: an existing id whose record does not match the query (`?name=Other`, `?id=<other>`) → 404."""
    service = await seeded(make)
    message = "No record found for id '0'"
    for query in ({"name": "Other"}, {"id": 1}):
        params = {"query": query}
        await expect_error(service.get("0", params), 404, "NotFound", message)
        await expect_error(service.update("0", {"name": "X"}, params), 404, "NotFound", message)
        await expect_error(service.patch("0", {"name": "X"}, params), 404, "NotFound", message)
        await expect_error(service.remove("0", params), 404, "NotFound", message)
    assert await everything(service) == PEOPLE
    assert (await service.get("0", {"query": {"name": "Doug"}}))["name"] == "Doug"


async def case_create_generates_or_takes_the_id(make):
    """§1, §4: create returns the record with its id; an id in the body is used instead of a generated one."""
    service = make()
    created = await service.create({"name": "Doug", "age": 32}, {})
    assert created["name"] == "Doug" and created.get("id") is not None
    assert await service.get(created["id"], {}) == created
    assert await service.create({"id": 77, "name": "Bob"}, {}) == {"id": 77, "name": "Bob"}
    assert await service.get("77", {}) == {"id": 77, "name": "Bob"}


async def case_create_query_filters_nothing_select_shapes(make):
    """§4: on create the query filters nothing; only `$select` shapes the response, keeping the id."""
    service = make()
    created = await service.create({"id": 5, "name": "Doug", "age": 32},
                                   {"query": {"name": "Other", "$select": ["name"]}})
    assert created == {"id": 5, "name": "Doug"}
    assert await service.get(5, {}) == {"id": 5, "name": "Doug", "age": 32}


async def case_update_replaces(make):
    """§4: update replaces the whole record; the id comes from the URL, an id in the body is ignored."""
    service = await seeded(make)
    updated = await service.update("0", {"id": 99, "name": "Douglas"}, {})
    assert updated == {"id": 0, "name": "Douglas"}
    assert await service.get(0, {}) == {"id": 0, "name": "Douglas"}
    await expect_error(service.get(99, {}), 404, "NotFound", "No record found for id '99'")


async def case_patch_merges(make):
    """§4: patch merges the body into the record; other fields stay; the id cannot be changed."""
    service = await seeded(make)
    patched = await service.patch("1", {"id": 50, "age": 26}, {})
    assert patched == {"id": 1, "name": "Alice", "age": 26}
    assert await service.get(1, {}) == patched


async def case_remove_returns_the_record(make):
    """§1: remove returns the record as it was before removal; it is gone afterwards."""
    service = await seeded(make)
    assert await service.remove("2", {}) == {"id": 2, "name": "Bob", "age": 40}
    await expect_error(service.get(2, {}), 404, "NotFound", "No record found for id '2'")
    assert ids(await everything(service)) == [0, 1, 3, 4]


async def case_select_on_every_method(make):
    """§4: `$select` shapes the record(s) of get/create/update/patch/remove and find; the id is kept."""
    service = await seeded(make)
    select = {"query": {"$select": ["name"]}}
    assert await service.get(0, select) == {"id": 0, "name": "Doug"}
    assert await service.patch(0, {"age": 33}, select) == {"id": 0, "name": "Doug"}
    assert await service.update(1, {"name": "Al", "age": 1}, select) == {"id": 1, "name": "Al"}
    assert await service.remove(2, select) == {"id": 2, "name": "Bob"}
    found = await service.find({"query": {"$select": ["age"], "name": "Doug"}})
    assert found == [{"id": 0, "age": 33}]


async def case_update_without_id_is_bad_request(make):
    """§3: update without id → 400 `You can not replace multiple instances. Did you mean 'patch'?`, even
    with multi on; nothing changes."""
    service = await seeded(make, multi=True)
    await expect_error(service.update(None, {"name": "X"}, {}), 400, "BadRequest",
                       "You can not replace multiple instances. Did you mean 'patch'?")
    assert await everything(service) == PEOPLE


# -- §5: query syntax through find ------------------------------------------------------------------


async def case_operators_and_logic(make):
    """§5: operators, `$or`/`$and` nesting, several operators on one field."""
    service = await seeded(make)

    async def found(query):
        return sorted(ids(await service.find({"query": query})))

    assert await found({"age": {"$in": [25, 40]}}) == [1, 2, 3]
    assert await found({"age": {"$nin": [25, 40]}}) == [0, 4]
    assert await found({"age": {"$gt": 10, "$lt": 40}}) == [0, 1, 3]
    assert await found({"age": {"$gte": 32}}) == [0, 2]
    assert await found({"age": {"$lte": 25}}) == [1, 3, 4]
    assert await found({"name": {"$ne": "Doug"}}) == [1, 2, 3, 4]
    assert await found({"$or": [{"name": "Doug"}, {"age": {"$lt": 20}}]}) == [0, 4]
    assert await found({"$and": [{"age": 25}, {"$or": [{"name": "Carol"}, {"name": "Doug"}]}]}) == [3]
    assert await found({"age": 25, "$or": [{"name": "Alice"}, {"name": "Bob"}]}) == [1]


async def case_sort_skip_limit(make):
    """§5, §6: `$sort` on several keys, `$skip`, `$limit` (strings as from a query string)."""
    service = await seeded(make)
    query = {"$sort": {"age": "1", "name": "-1"}}
    assert ids(await service.find({"query": query})) == [4, 3, 1, 0, 2]
    query = {"$sort": {"name": "-1"}, "$skip": "1", "$limit": "2"}
    assert ids(await service.find({"query": query})) == [0, 3]
    assert await service.find({"query": {"$limit": "0"}}) == []
    assert await service.find({"query": {"$skip": "50"}}) == []


async def case_unknown_dollar_names(make):
    """§3: `$foo` at the top → `Invalid filter value $foo`; `name[$like]` → `Invalid query parameter $like`."""
    service = await seeded(make)
    await expect_error(service.find({"query": {"$foo": "1"}}), 400, "BadRequest", "Invalid filter value $foo")
    err = await expect_error(service.find({"query": {"name": {"$like": "x"}}}), 400, "BadRequest",
                             "Invalid query parameter $like")
    assert err.data == {"$like": "x"}


async def case_query_schema_coerces(make):
    """§5: with a query schema, string values are coerced (also in operators and `$or`); misfits → 400."""
    service = await seeded(make, query_schema={"id": "integer", "name": "string", "age": "number"})
    assert ids(await service.find({"query": {"age": "32"}})) == [0]
    assert sorted(ids(await service.find({"query": {"age": {"$in": ["25", "40"]}}}))) == [1, 2, 3]
    assert sorted(ids(await service.find({"query": {"$or": [{"age": {"$gt": "32"}}, {"id": "4"}]}}))) == [2, 4]
    assert (await service.get("0", {"query": {"age": "32"}}))["id"] == 0
    err = await expect_error(service.find({"query": {"age": "old"}}), 400, "BadRequest", "validation failed")
    assert isinstance(err.data, list) and err.data[0]["instancePath"] == "/age"
    await expect_error(service.patch(None, {"age": 1}, {"query": {"age": "x"}, "adapter": {"multi": True}}),
                       400, "BadRequest", "validation failed")
    assert await everything(service) == PEOPLE


# -- §6: pagination ---------------------------------------------------------------------------------


async def case_paginated_pages(make):
    """§6: the page object `{total, limit, skip, data}`, `limit` = min($limit or default, max)."""
    service = await seeded(make, paginate={"default": 2, "max": 3})
    page = await service.find({})
    assert set(page) == {"total", "limit", "skip", "data"}
    assert (page["total"], page["limit"], page["skip"], len(page["data"])) == (5, 2, 0, 2)
    page = await service.find({"query": {"$limit": "1000"}})
    assert (page["total"], page["limit"], len(page["data"])) == (5, 3, 3)
    page = await service.find({"query": {"$limit": "1", "age": 25}})
    assert (page["total"], page["limit"], len(page["data"])) == (2, 1, 1)
    page = await service.find({"query": {"$skip": "1", "$sort": {"name": "-1"}}})
    assert (page["skip"], ids(page["data"])) == (1, [0, 3])


async def case_paginated_count_only_and_past_the_end(make):
    """§6: `$limit=0` is a count-only page; `$skip` past the end gives an empty page with the total."""
    service = await seeded(make, paginate={"default": 10, "max": 100})
    assert await service.find({"query": {"$limit": "0"}}) == {"total": 5, "limit": 0, "skip": 0, "data": []}
    assert await service.find({"query": {"$skip": "50"}}) == {"total": 5, "limit": 10, "skip": 50, "data": []}


async def case_params_paginate_per_call(make):
    """§6: `params.paginate` per call: false turns it off, a dict turns it on or replaces it."""
    service = await seeded(make, paginate={"default": 2, "max": 3})
    assert len(await service.find({"paginate": False})) == 5
    page = await service.find({"paginate": {"default": 4, "max": 4}})
    assert (page["limit"], len(page["data"])) == (4, 4)
    plain = await seeded(make)
    page = await plain.find({"paginate": {"default": 1, "max": 2}})
    assert (page["total"], page["limit"], len(page["data"])) == (5, 1, 1)
    page = await plain.find({"adapter": {"paginate": {"default": 3, "max": 3}}})
    assert (page["total"], page["limit"]) == (5, 3)


async def case_pagination_never_limits_multi(make):
    """§4, §6: multi patch/remove act on every match ($limit ignored) and return plain arrays; multi
    create returns a plain array, even on a paginated service."""
    service = await seeded(make, paginate={"default": 1, "max": 1}, multi=True)
    patched = await service.patch(None, {"tag": "young"}, {"query": {"age": {"$lt": 30}, "$limit": "1"}})
    assert sorted(ids(patched)) == [1, 3, 4] and all(r["tag"] == "young" for r in patched)
    created = await service.create([{"id": 10, "name": "X"}, {"id": 11, "name": "Y"}], {})
    assert ids(created) == [10, 11]
    removed = await service.remove(None, {"query": {"tag": "young", "$limit": "1"}})
    assert sorted(ids(removed)) == [1, 3, 4]
    assert (await service.find({"query": {"$limit": "0"}}))["total"] == 4


# -- §7: multi --------------------------------------------------------------------------------------


async def case_multi_refused_changes_nothing(make):
    """§3, §7: with multi off, array create / patch without id / remove without id → 405 with the exact
    messages, and nothing is created, changed or removed."""
    service = await seeded(make)
    await expect_error(service.create([{"id": 9, "name": "X"}], {}), 405, "MethodNotAllowed",
                       "Can not create multiple entries")
    await expect_error(service.patch(None, {"age": 1}, {}), 405, "MethodNotAllowed",
                       "Can not patch multiple entries")
    await expect_error(service.remove(None, {}), 405, "MethodNotAllowed", "Can not remove multiple entries")
    assert await everything(service) == PEOPLE


async def case_multi_list(make):
    """§7: `multi: ['create', 'patch']` allows those two; remove without id stays 405."""
    service = await seeded(make, multi=["create", "patch"])
    assert ids(await service.create([{"id": 7, "name": "G"}, {"id": 8, "name": "H"}], {})) == [7, 8]
    assert await service.create([], {}) == []
    patched = await service.patch(None, {"age": 1}, {"query": {"id": {"$in": [7, 8]}}})
    assert sorted(ids(patched)) == [7, 8]
    await expect_error(service.remove(None, {"query": {"id": 7}}), 405, "MethodNotAllowed",
                       "Can not remove multiple entries")
    assert (await service.get(7, {}))["age"] == 1


async def case_multi_true_and_adapter_override(make):
    """§7: `multi: true` allows all three; `params.adapter` overrides multi for one call."""
    service = await seeded(make)
    removed = await service.remove(None, {"query": {"age": 25}, "adapter": {"multi": True}})
    assert sorted(ids(removed)) == [1, 3]
    await expect_error(service.remove(None, {"query": {"age": 10}}), 405, "MethodNotAllowed",
                       "Can not remove multiple entries")
    everyone = await seeded(make, multi=True)
    assert await everyone.remove(None, {"query": {"name": "Nobody"}}) == []
    assert sorted(ids(await everyone.remove(None, {}))) == [0, 1, 2, 3, 4]
    assert await everything(everyone) == []


async def case_multi_patch_changing_the_queried_field(make):
    """§4: a multi patch whose data changes the queried field returns the records that matched before,
    now patched."""
    service = await seeded(make, multi=True)
    patched = await service.patch(None, {"age": 2}, {"query": {"age": 25}})
    assert sorted(ids(patched)) == [1, 3] and {r["age"] for r in patched} == {2}
    assert await service.find({"query": {"age": 25}}) == []


async def case_returned_records_are_copies(make):
    """§1: a service's answers are values: changing a returned record changes nothing stored."""
    service = await seeded(make)
    record = await service.get(0, {})
    record["name"] = "Changed"
    (await service.find({}))[0]["age"] = -1
    assert await everything(service) == PEOPLE


async def case_unique_fields_refuse_a_clash_and_change_nothing(make):
    """The ``unique`` option (vecgrid's, for users' emails): a create, update or patch that would give
    two records one value is 409 Conflict, also within one multi create, and nothing is written."""
    service = await seeded(make, unique=["name"], multi=True)
    await expect_error(service.create({"id": 9, "name": "Doug"}, {}), 409, "Conflict",
                       "A record with this name already exists")
    await expect_error(service.create([{"id": 9, "name": "Zed"}, {"id": 10, "name": "Zed"}], {}), 409,
                       "Conflict", "A record with this name already exists")
    await expect_error(service.patch(1, {"name": "Bob"}, {}), 409, "Conflict",
                       "A record with this name already exists")
    await expect_error(service.update(1, {"name": "Bob"}, {}), 409, "Conflict",
                       "A record with this name already exists")
    await expect_error(service.patch(None, {"name": "Same"}, {"query": {"age": 25}}), 409, "Conflict",
                       "A record with this name already exists")
    assert await everything(service) == PEOPLE
    assert (await service.patch(1, {"name": "Alice", "age": 26}, {}))["age"] == 26  # its own value


CASES = [value for name, value in list(globals().items()) if name.startswith("case_")]
