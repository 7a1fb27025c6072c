"""Which DML channel (shard) a row goes to: a stable hash of its primary key.

The bulk import and the insert path must agree, so a primary key always lands on
the same channel and a delete finds the rows it targets.
"""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def shard_of(primary_keys: pa.Array | np.ndarray, num_shards: int) -> np.ndarray:
    """The shard index (0..num_shards-1) of every primary key (int64 or string)."""
    if num_shards == 1:
        return np.zeros(len(primary_keys), dtype=np.int64)
    if isinstance(primary_keys, (pa.Array, pa.ChunkedArray)) and pa.types.is_string(primary_keys.type):
        hashes = np.fromiter((zlib.crc32(k.encode()) for k in primary_keys.to_pylist()), dtype=np.uint64,
                             count=len(primary_keys))
    else:
        keys = np.asarray(primary_keys, dtype=np.int64).view(np.uint64)
        hashes = (keys * _GOLDEN) >> np.uint64(33)  # Fibonacci hashing: spreads sequential ids evenly
    return (hashes % np.uint64(num_shards)).astype(np.int64)
