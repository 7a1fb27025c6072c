"""Collection aliases in the catalog (Milvus's CreateAlias / AlterAlias / DropAlias / DescribeAlias /
ListAliases): resolved wherever a collection is read by name, refused where a collection is changed by
name, never colliding with a collection's name; a refused call writes nothing."""

from __future__ import annotations

import pytest

from vecgrid import errors
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.tso import IDAllocator, TimestampOracle
from tests.proxy_support import write_schema


@pytest.fixture
def cat(store):
    return Catalog(store, IDAllocator(store, "gid/id-allocator", block_size=100), TimestampOracle(store))


def snapshot(store) -> dict:
    return dict(store.scan(""))


def test_an_alias_reads_as_its_collection_everywhere_a_name_is_read(cat, store):
    books = cat.create_collection("default", "books", write_schema(4))
    cat.create_alias("default", "library", "books")
    cat.create_alias("default", "library", "books")   # the same again changes nothing
    assert cat.describe_collection("default", "library").id == books.id
    assert cat.has_collection("default", "library")
    assert cat.describe_alias("default", "library") == "books"
    assert cat.aliases_of(books.id) == ["library"]
    assert cat.list_aliases("default") == [("library", "books")]
    assert cat.list_aliases("default", "library") == [("library", "books")]
    # a second catalog on the same store (another process) reads it too
    other = Catalog(store, IDAllocator(store, "gid/id-allocator", block_size=100), TimestampOracle(store))
    assert other.describe_collection("default", "library").id == books.id


def test_alter_points_the_alias_elsewhere_and_drop_removes_it(cat):
    cat.create_collection("default", "v1", write_schema(4))
    v2 = cat.create_collection("default", "v2", write_schema(4))
    cat.create_alias("default", "live", "v1")
    cat.alter_alias("default", "live", "v2")
    assert cat.describe_collection("default", "live").id == v2.id
    assert cat.list_aliases("default", "v1") == []
    assert cat.drop_alias("default", "live") is True
    assert cat.drop_alias("default", "live") is False
    assert not cat.has_collection("default", "live")
    with pytest.raises(errors.CollectionNotFound):
        cat.describe_collection("default", "live")


def test_refusals_write_nothing(cat, store):
    cat.create_collection("default", "a", write_schema(4))
    cat.create_collection("default", "b", write_schema(4))
    cat.create_alias("default", "x", "a")
    before = snapshot(store)
    with pytest.raises(errors.ParameterInvalid, match="already aliased to another collection"):
        cat.create_alias("default", "x", "b")
    with pytest.raises(errors.ParameterInvalid, match="collection with the same name"):
        cat.create_alias("default", "b", "a")
    with pytest.raises(errors.ParameterInvalid, match="alias of an alias"):
        cat.create_alias("default", "y", "x")
    with pytest.raises(errors.CollectionNotFound):
        cat.create_alias("default", "y", "nope")
    with pytest.raises(errors.ParameterInvalid, match="alias does not exist"):
        cat.alter_alias("default", "y", "a")
    with pytest.raises(errors.ParameterInvalid, match="via alias = x"):
        cat.drop_collection("default", "x")
    with pytest.raises(errors.ParameterInvalid, match="has associated aliases"):
        cat.drop_collection("default", "a")
    with pytest.raises(errors.ParameterInvalid, match="via alias = x"):
        cat.rename_collection("default", "x", "c")
    with pytest.raises(errors.ParameterInvalid, match="existing alias"):
        cat.rename_collection("default", "b", "x")
    with pytest.raises(errors.ParameterInvalid, match="conflicts with an existing alias"):
        cat.create_collection("default", "x", write_schema(4))
    with pytest.raises(errors.ParameterInvalid, match="alias not found"):
        cat.describe_alias("default", "nope")
    with pytest.raises(errors.ParameterInvalid):
        cat.create_alias("default", "1bad", "a")
    assert snapshot(store) == before
    cat.drop_alias("default", "x")
    assert cat.drop_collection("default", "a") is True
