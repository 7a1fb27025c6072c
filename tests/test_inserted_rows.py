"""The write path counts the rows it acknowledged (``vecgrid_proxy_inserted_rows_total``, the dashboard's
rows/s): exactly the rows of every insert and upsert that became durable, nothing for a refused write."""

from __future__ import annotations

import numpy as np
import pytest

from vecgrid import errors
from tests.proxy_support import rows_for
from tests.write_support import DIM, WriteSetup


@pytest.fixture
def setup(tmp_path):
    s = WriteSetup(tmp_path)
    yield s
    s.close()


def test_acknowledged_inserts_and_upserts_are_counted_by_their_rows(setup):
    counted = setup.appenders.inserted_rows
    assert counted.snapshot() == {"insert": 0, "upsert": 0}
    setup.writer.insert_sync("plain", rows_for(list(range(40)), DIM))           # two channels, one write
    setup.writer.insert_sync("keys", rows_for([f"k{i}" for i in range(7)], DIM))
    setup.writer.insert_sync("dyn", [{"pk": 100 + i, "vec": [0.5] * DIM, "age": i, "tag": "d", "extra": i}
                                     for i in range(3)])
    assert counted.snapshot() == {"insert": 50, "upsert": 0}
    setup.writer.insert_sync("plain", rows_for(list(range(5)), DIM, seed=1), upsert=True)
    assert counted.snapshot() == {"insert": 50, "upsert": 5}
    setup.writer.delete_sync("plain", [0, 1])                                   # deletes insert nothing
    assert counted.snapshot() == {"insert": 50, "upsert": 5}
    ids = {name: setup.colls[name].id for name in ("plain", "keys", "dyn")}                      # per collection
    assert counted.by_collection() == {ids["plain"]: {"insert": 40, "upsert": 5},
                                       ids["keys"]: {"insert": 7, "upsert": 0}, ids["dyn"]: {"insert": 3, "upsert": 0}}


def test_a_refused_write_counts_nothing(setup):
    bad = rows_for(list(range(4)), DIM)
    bad["vec"] = np.zeros((4, DIM + 1), np.float32)
    with pytest.raises(errors.MilvusError):
        setup.writer.insert_sync("plain", bad)
    with pytest.raises(errors.MilvusError):
        setup.writer.insert_sync("nope", rows_for([1], DIM))
    assert setup.appenders.inserted_rows.snapshot() == {"insert": 0, "upsert": 0}
    assert setup.appenders.inserted_rows.by_collection() == {}
