"""Shared data of the storage tests (imported by their child processes too)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

DIM = 16


def all_types_table(n: int, seed: int = 0) -> pa.Table:
    """One column per Milvus field type vecgrid stores, with nulls in the nullable scalars."""
    rng = np.random.default_rng(seed)
    mask = rng.random(n) < 0.1

    def nullable(values, type_):
        return pa.array(values, type=type_, mask=mask)

    docs = [json.dumps({"i": i, "tags": ["a", "b"][: i % 3], "x": None}) for i in range(n)]
    return pa.table(
        {
            "pk": pa.array(np.arange(n, dtype=np.int64) * 3),
            "flag": nullable(rng.random(n) < 0.5, pa.bool_()),
            "i8": nullable(rng.integers(-128, 127, n, dtype=np.int8), pa.int8()),
            "i16": nullable(rng.integers(-(2**15), 2**15 - 1, n, dtype=np.int16), pa.int16()),
            "i32": nullable(rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32), pa.int32()),
            "i64": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)),
            "f32": nullable(rng.standard_normal(n).astype(np.float32), pa.float32()),
            "f64": pa.array(rng.standard_normal(n)),
            "name": pa.array([None if m else f"name-{i}-\u00e9" for i, m in enumerate(mask)]),
            "json_str": pa.array(docs),
            "json_bin": pa.array([d.encode() for d in docs], type=pa.binary()),
            "json_ext": pa.array(docs, type=pa.json_(pa.utf8())),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * DIM, dtype=np.float32)), DIM),
        }
    )
