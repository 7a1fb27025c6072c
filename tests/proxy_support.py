"""Helpers for tests of the client-side proxy: its hits as arrays for the numpy references, and an
address nothing listens on."""

from __future__ import annotations

import socket

import numpy as np


def dense_hits(hits: list[list[dict]], k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """The proxy's hits (per query, dicts with ``distance`` and ``id``) as (scores nq×k, keys nq×k)."""
    D = np.full((len(hits), k), np.nan, dtype=np.float32)
    keys = np.empty((len(hits), k), dtype=object)
    keys[:] = None
    for i, row in enumerate(hits):
        for j, hit in enumerate(row):
            D[i, j], keys[i, j] = hit["distance"], hit["id"]
    return D, keys


def refused_address() -> str:
    """An address nothing listens on: connections are refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"
