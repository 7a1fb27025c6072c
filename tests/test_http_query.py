"""Query strings and the Feathers query syntax (feathers-rest-facts.md §3, §5)."""

from __future__ import annotations

import pytest

from vecgrid.common.feathers_errors import FeathersError
from vecgrid.http.feathers.query import QuerySchema, matches, parse_query_string, sort_records, split_query


@pytest.mark.parametrize("raw, expected", [
    ("a=1&b[c]=2", {"a": "1", "b": {"c": "2"}}),
    ("arr[0]=x&arr[1]=y", {"arr": ["x", "y"]}),
    ("a=1&a=2", {"a": ["1", "2"]}),
    ("a[]=1&a[]=2", {"a": ["1", "2"]}),
    ("x[2]=b", {"x": ["b"]}),
    ("t=true&n=null&z=1.5", {"t": "true", "n": "null", "z": "1.5"}),
    ("e=&f", {"e": "", "f": ""}),
    ("%24limit=3&name%5B%24in%5D%5B0%5D=A%20B", {"$limit": "3", "name": {"$in": ["A B"]}}),
    ("q=a+b", {"q": "a b"}),
    ("a=%E0%A4%A&b=%ZZ&c=x%20%ZZ&d=%C3%A9", {"a": "%E0%A4%A", "b": "%ZZ", "c": "x%20%ZZ", "d": "\u00e9"}),
    ("$or[0][name]=A&$or[1][age][$gt]=3", {"$or": [{"name": "A"}, {"age": {"$gt": "3"}}]}),
    ("a.b=1", {"a.b": "1"}),
    ("a[b][c][d][e][f][g]=1", {"a": {"b": {"c": {"d": {"e": {"f": {"[g]": "1"}}}}}}}),
    ("__proto__[x]=1&y=2", {"y": "2"}),
    ("a[__proto__]=1&a[b]=2", {"a": {"b": "2"}}),
    ("a[__proto__]=1", {}),
    ("%5F%5Fproto%5F%5F[x]=1", {}),
    ("toString=1&constructor[prototype][x]=1&hasOwnProperty[a]=2&ok=3", {"ok": "3"}),
    ("a[b][c][d][e][f][__proto__]=1", {"a": {"b": {"c": {"d": {"e": {"f": {"[__proto__]": "1"}}}}}}}),
    ("", {}),
])
def test_qs_rules(raw, expected):
    """§5: the qs parsing table, every value a string."""
    assert parse_query_string(raw) == expected


def test_qs_array_limit_20():
    """§5: indices 0-19 are arrays; index 20, or 21 elements, give an object with index keys (Koa)."""
    assert parse_query_string("a[19]=x") == {"a": ["x"]}
    assert parse_query_string("a[20]=x") == {"a": {"20": "x"}}
    indexed = "&".join(f"a[{i}]={i}" for i in range(21))
    assert parse_query_string(indexed) == {"a": {str(i): str(i) for i in range(21)}}
    repeated = "&".join(f"a={i}" for i in range(21))
    assert parse_query_string(repeated) == {"a": {str(i): str(i) for i in range(21)}}
    assert parse_query_string("&".join(f"a={i}" for i in range(20))) == {"a": [str(i) for i in range(20)]}


def test_filters_split_and_converted():
    """§5 type conversion: $limit/$skip to integers (parseInt), $sort values to 1/-1, always."""
    filters, conditions = split_query(parse_query_string(
        "$limit=3&$skip=2&$sort[name]=-1&$sort[age]=1&$select[0]=name&name=Doug"))
    assert (filters.limit, filters.skip) == (3, 2)
    assert filters.sort == [("name", -1), ("age", 1)]
    assert filters.select == ["name"]
    assert conditions == {"name": "Doug"}
    filters, _ = split_query({"$limit": "7abc", "$skip": "x"})  # parseInt: prefix; NaN → absent
    assert (filters.limit, filters.skip) == (7, 0)


def test_without_schema_values_stay_strings():
    """§5: without a query schema nothing but the filters is converted."""
    _, conditions = split_query(parse_query_string("age=32&age2[$gt]=3&$or[0][ok]=true"))
    assert conditions == {"age": "32", "age2": {"$gt": "3"}, "$or": [{"ok": "true"}]}


def test_unknown_top_level_filter():
    """§3: `?$foo=1` → 400 BadRequest `Invalid filter value $foo`."""
    with pytest.raises(FeathersError) as err:
        split_query(parse_query_string("$foo=1"))
    assert err.value.to_dict() == {"name": "BadRequest", "message": "Invalid filter value $foo",
                                   "code": 400, "className": "bad-request"}


def test_unknown_field_operator():
    """§3: `?name[$like]=x` → 400 `Invalid query parameter $like` with `data: {"$like": "x"}`."""
    with pytest.raises(FeathersError) as err:
        split_query(parse_query_string("name[$like]=x"))
    assert err.value.to_dict() == {"name": "BadRequest", "message": "Invalid query parameter $like",
                                   "code": 400, "className": "bad-request", "data": {"$like": "x"}}


def test_unknown_operator_inside_or():
    """§3/§5: operators inside `$or` are checked like those at the top."""
    with pytest.raises(FeathersError) as err:
        split_query(parse_query_string("$or[0][name][$regex]=x"))
    assert err.value.message == "Invalid query parameter $regex"


def test_le_is_rejected_and_eq_is_equality():
    """§5 lists no `$le`/`$eq`; decided in vecgrid.http.feathers.query: `$le` is refused, `$eq` is equality."""
    with pytest.raises(FeathersError) as err:
        split_query(parse_query_string("age[$le]=3"))
    assert (err.value.code, err.value.message) == (400, "Invalid query parameter $le")
    _, conditions = split_query(parse_query_string("name[$eq]=Doug"))
    assert matches({"name": "Doug"}, conditions) and not matches({"name": "Bob"}, conditions)


PEOPLE_SCHEMA = QuerySchema({"id": "integer", "name": "string", "age": "number", "admin": "boolean"})


def test_schema_coerces_everywhere():
    """§5: a query schema turns "32" into 32 and "true" into True, also in operators and $or/$and."""
    _, conditions = split_query(parse_query_string(
        "age=32&admin=true&id[$in][0]=1&id[$in][1]=2&$or[0][age][$gt]=3.5&$and[0][admin][$ne]=false"),
        PEOPLE_SCHEMA)
    assert conditions == {"age": 32, "admin": True, "id": {"$in": [1, 2]},
                          "$or": [{"age": {"$gt": 3.5}}], "$and": [{"admin": {"$ne": False}}]}
    assert split_query({"id": "1.0", "age": " 7 "}, PEOPLE_SCHEMA)[1] == {"id": 1, "age": 7}
    # already coerced values pass unchanged (a hook may have coerced first)
    assert split_query(conditions, PEOPLE_SCHEMA)[1] == conditions


@pytest.mark.parametrize("raw, path, kind", [
    ("age=abc", "/age", "number"),
    ("age[$gt]=x", "/age/$gt", "number"),
    ("id[$in][0]=1&id[$in][1]=1.5", "/id/$in/1", "integer"),
    ("admin=yes", "/admin", "boolean"),
    ("$or[0][age]=old", "/$or/0/age", "number"),
    ("age=", "/age", "number"),
])
def test_schema_rejects_misfits(raw, path, kind):
    """§3: a query rejected by the query schema → 400 `validation failed`, data: the validator's errors."""
    with pytest.raises(FeathersError) as err:
        split_query(parse_query_string(raw), PEOPLE_SCHEMA)
    body = err.value.to_dict()
    assert (body["code"], body["name"], body["message"]) == (400, "BadRequest", "validation failed")
    assert isinstance(body["data"], list) and len(body["data"]) == 1
    assert body["data"][0]["instancePath"] == path and body["data"][0]["params"] == {"type": kind}


def test_schema_rejects_undeclared_fields_select_and_sort():
    """§3: fields, `$select` and `$sort` names outside the schema fail validation."""
    for raw in ("nick=x", "$select[0]=nick", "$sort[nick]=1"):
        with pytest.raises(FeathersError) as err:
            split_query(parse_query_string(raw), PEOPLE_SCHEMA)
        assert err.value.message == "validation failed", raw


def test_operators_match():
    """§5: `$in`, `$nin`, `$lt`, `$lte`, `$gt`, `$gte`, `$ne`, plain equality; several must all hold."""
    doug = {"id": 0, "name": "Doug", "age": 32}
    cases = [
        ({"age": 32}, True), ({"age": 31}, False), ({"age": "32"}, False),
        ({"name": {"$in": ["Doug", "Bob"]}}, True), ({"name": {"$nin": ["Doug"]}}, False),
        ({"age": {"$lt": 32}}, False), ({"age": {"$lte": 32}}, True),
        ({"age": {"$gt": 30, "$lt": 40}}, True), ({"age": {"$gt": 30, "$lt": 31}}, False),
        ({"age": {"$gte": 33}}, False), ({"name": {"$ne": "Bob"}}, True),
        ({"$or": [{"name": "Bob"}, {"age": 32}]}, True), ({"$or": [{"name": "Bob"}]}, False),
        ({"$and": [{"name": "Doug"}, {"$or": [{"age": 1}, {"age": 32}]}]}, True),
        ({"$and": [{"name": "Doug"}, {"age": {"$ne": 32}}]}, False),
        ({"missing": {"$ne": 1}}, True), ({"missing": {"$gt": 1}}, False),
    ]
    for conditions, expected in cases:
        assert matches(doug, conditions) is expected, conditions


def test_sort_several_keys():
    """§5: `$sort` with several fields, the first deciding first."""
    rows = [{"id": 0, "a": 1, "b": "x"}, {"id": 1, "a": 2, "b": "y"}, {"id": 2, "a": 1, "b": "z"}]
    filters, _ = split_query(parse_query_string("$sort[a]=-1&$sort[b]=-1"))
    assert [r["id"] for r in sort_records(rows, filters.sort)] == [1, 2, 0]
    filters, _ = split_query(parse_query_string("$sort[a]=1&$sort[b]=-1"))
    assert [r["id"] for r in sort_records(rows, filters.sort)] == [2, 0, 1]


def test_a_repeated_query_string_gives_a_fresh_object_each_time():
    """The parse is cached; what a hook or service does to one call's query never reaches the next."""
    first = parse_query_string("a[b][0]=1&c=2")
    first["a"]["b"].append("changed")
    first["c"] = "x"
    assert parse_query_string("a[b][0]=1&c=2") == {"a": {"b": ["1"]}, "c": "2"}
