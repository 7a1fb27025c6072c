"""The memory adapter against the shared adapter cases (tests/adapter_support.py)."""

from __future__ import annotations

import pytest

from tests.adapter_support import CASES
from vecgrid.http.adapters import MemoryService
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
