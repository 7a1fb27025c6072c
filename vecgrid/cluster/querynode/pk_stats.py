"""Primary-key statistics of a sealed segment: a bloom filter plus the key range.

Milvus's shard leader keeps one bloom filter per sealed segment (its ``statslog``)
so a delete arriving on the channel goes only to the segments that may hold the
key.  vecgrid builds the same from the segment's primary-key column when the leader
records the segment.  A filter never misses a key it holds; about 1.7 % of absent
keys pass (10 bits per key, 3 hashes), which only costs a no-op delete.
"""

from __future__ import annotations

import hashlib

import numpy as np

_BITS_PER_KEY = 10
_HASHES = 3
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _as_u64(pks: np.ndarray) -> np.ndarray:
    if pks.dtype.kind in "iu":
        return pks.astype(np.int64, copy=False).view(np.uint64)
    return np.fromiter((int.from_bytes(hashlib.blake2b(str(k).encode(), digest_size=8).digest(), "little")
                        for k in pks), dtype=np.uint64, count=len(pks))


def _mix(x: np.ndarray, seed: int) -> np.ndarray:
    """splitmix64: independent-looking hashes of the same keys for each seed."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(seed + 1) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


class PkStats:
    def __init__(self, pks: np.ndarray) -> None:
        pks = np.asarray(pks)
        self.numeric = pks.dtype.kind in "iu"
        self.count = len(pks)
        self.min = pks.min() if self.count and self.numeric else None
        self.max = pks.max() if self.count and self.numeric else None
        bits = 1 << max(10, int(np.ceil(np.log2(max(1, self.count) * _BITS_PER_KEY))))
        self._mask = np.uint64(bits - 1)
        self._bits = np.zeros(bits // 8, dtype=np.uint8)
        keys = _as_u64(pks)
        for seed in range(_HASHES):
            pos = _mix(keys, seed) & self._mask
            np.bitwise_or.at(self._bits, (pos >> np.uint64(3)).astype(np.int64),
                             (np.uint8(1) << (pos & np.uint64(7)).astype(np.uint8)))

    def might_contain(self, pks: np.ndarray) -> np.ndarray:
        """A bool per key: False means the segment certainly does not hold it."""
        pks = np.asarray(pks)
        out = np.ones(len(pks), dtype=bool)
        if self.count == 0:
            return ~out
        if self.numeric and pks.dtype.kind in "iu":
            out &= (pks >= self.min) & (pks <= self.max)
        keys = _as_u64(pks)
        for seed in range(_HASHES):
            pos = _mix(keys, seed) & self._mask
            out &= (self._bits[(pos >> np.uint64(3)).astype(np.int64)] >> (pos & np.uint64(7)).astype(np.uint8)) & 1 == 1
        return out
