"""compile_conditions (vecgrid.http.feathers.query) answers exactly as matches, for any record and conditions."""

from __future__ import annotations

import pytest

import math

import hypothesis
import hypothesis.strategies as st

from vecgrid.http.feathers.query import compile_conditions, compile_filter, matches

FIELDS = ["a", "b", "c"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, 1.0, -2.5, math.nan, math.inf]),
                    st.sampled_from(["", "x", "1", "true"]))
values = st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(st.sampled_from(["k"]), scalars, max_size=1))
operators = st.dictionaries(st.sampled_from(["$eq", "$ne", "$lt", "$lte", "$gt", "$gte", "$in", "$nin"]),
                            st.one_of(scalars, st.lists(scalars, max_size=3)), min_size=1, max_size=3)
records = st.dictionaries(st.sampled_from(FIELDS), values, max_size=3)


def conditions(depth: int = 2):
    fields = st.dictionaries(st.sampled_from(FIELDS), st.one_of(scalars, operators), max_size=3)
    if depth == 0:
        return fields
    sub = st.lists(conditions(depth - 1), max_size=3)
    return st.tuples(fields, st.dictionaries(st.sampled_from(["$or", "$and"]), sub, max_size=2)).map(
        lambda pair: {**pair[0], **pair[1]})


@pytest.mark.slow  # 400 random cases (2.2 s): make test runs it
@hypothesis.settings(max_examples=400, deadline=None, database=None)
@hypothesis.given(conditions(), st.lists(records, min_size=1, max_size=8))
def test_compiled_conditions_answer_as_matches(conds, recs):
    predicate = compile_conditions(conds)
    assert [predicate(r) for r in recs] == [matches(r, conds) for r in recs]


def test_operands_and_names_are_not_source():
    # A field name or operand that looks like code is a value, never evaluated.
    conds = {"__import__('os').system('false')": "x) or (True", "a": {"$gt": "b) or (1"}}
    predicate = compile_conditions(conds)
    assert predicate({"__import__('os').system('false')": "x) or (True", "a": "c"}) is True
    assert predicate({"a": "c"}) is False


def test_mixed_kinds_follow_the_generic_rules():
    predicate = compile_conditions({"n": 1, "s": {"$gte": "b"}, "f": {"$ne": True}})
    assert predicate({"n": 1, "s": "c", "f": 1}) is True          # 1 is not True: $ne holds
    assert predicate({"n": True, "s": "c", "f": False}) is False   # True is not the number 1
    assert predicate({"n": 1.0, "s": 5, "f": None}) is False       # a number is not ordered with "b"
    assert predicate({"n": 1, "s": "c"}) is True                   # a missing field is not True


def test_a_filters_optimistic_comparisons_keep_the_kind_rules():
    """The scan compares before it checks a value's kind: values Python orders with a number but that
    are not numbers here (True, Decimal), and values it cannot order at all (None, a list, a string
    against a number), still answer as ``matches``."""
    from decimal import Decimal

    conds = {"n": {"$gte": 1}, "s": {"$lt": "m"}}
    rows = [{"n": 2, "s": "a"}, {"n": True, "s": "a"}, {"n": Decimal(5), "s": "a"}, {"n": 2.5, "s": ["a"]},
            {"n": None, "s": "a"}, {"n": "9", "s": "a"}, {"n": 3, "s": "b"}, {"n": 1, "s": 7}]
    assert compile_filter(conds)(rows) == [r for r in rows if matches(r, conds)] == [rows[0], rows[6]]
    for row in rows:  # each alone too: the first pass may end on the row itself
        assert compile_filter(conds)([row]) == [r for r in [row] if matches(r, conds)]


@hypothesis.settings(max_examples=200, deadline=None, database=None)
@hypothesis.given(conditions(), st.lists(records, max_size=8))
def test_compiled_filter_keeps_what_matches_keeps(conds, recs):
    assert compile_filter(conds)(recs) == [r for r in recs if matches(r, conds)]


def test_filter_reads_records_without_a_queried_field():
    rows = [{"a": 1, "b": "x"}, {"a": 1}, {"b": "x"}, {"a": 2, "b": "x"}, {"a": 1, "b": "x", "c": None}]
    assert compile_filter({"a": 1, "b": "x"})(rows) == [rows[0], rows[4]]
    assert compile_filter({"c": None})(rows) == rows  # a missing field equals null
    assert compile_filter({"a": {"$ne": 1}})(rows) == [rows[2], rows[3]]


def test_cached_filters_keep_one_true_and_one_point_zero_apart():
    from vecgrid.http.feathers.query import compile_filter
    records = [{"v": 1}, {"v": True}, {"v": 1.0}]
    assert compile_filter({"v": 1})(records) == [r for r in records if matches(r, {"v": 1})]
    assert compile_filter({"v": True})(records) == [r for r in records if matches(r, {"v": True})]
    assert compile_filter({"v": 1})(records) == [r for r in records if matches(r, {"v": 1})]


def test_a_nan_operand_is_not_cached_as_null():
    """The cache key is the conditions' JSON, where NaN is written as null: such conditions are compiled
    afresh (found by the property test above)."""
    from vecgrid.http.feathers.query import compile_filter
    assert compile_filter({"a": float("nan")})([{}]) == []
    assert compile_filter({"a": None})([{}]) == [{}]
    assert compile_filter({"a": float("nan")})([{}]) == []
