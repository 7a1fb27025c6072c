"""Seeded synthetic data for tests and benchmarks (after faiss ``contrib/datasets.py``).

:class:`SyntheticDataset` draws a clustered data set: ``n_clusters`` Gaussian
clusters in an ``intrinsic_dim``-dimensional space, projected linearly into ``d``
dimensions.  Clusters overlap enough that an IVF index has to probe several lists
(recall@10 at nlist=128 is ≈0.95 with nprobe=4 and ≥0.99 with nprobe=16 on the
100,000 × 128 default), yet the data is not uniform noise, so graph and IVF indexes
behave as they do on embeddings.  The same seed always gives the same arrays.

:func:`scalar_columns` makes one column of every filterable Milvus scalar type for
filter tests and benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vecgrid.proto import schema_pb2

__all__ = ["SyntheticDataset", "scalar_columns", "SCALAR_FIELDS"]


@dataclass
class SyntheticDataset:
    """Clustered float32 vectors: ``xt`` (train), ``xb`` (database), ``xq`` (queries)."""

    d: int = 128
    nb: int = 100_000
    nq: int = 1_000
    nt: int = 0
    metric: str = "L2"
    seed: int = 1234
    n_clusters: int = 100
    intrinsic_dim: int = 32
    noise: float = 1.0
    xt: np.ndarray = field(init=False, repr=False)
    xb: np.ndarray = field(init=False, repr=False)
    xq: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        rs = np.random.default_rng(self.seed)
        di = min(self.intrinsic_dim, self.d)
        centers = rs.standard_normal((self.n_clusters, di), dtype=np.float32)
        proj = (rs.standard_normal((di, self.d), dtype=np.float32) / np.sqrt(di)).astype(np.float32)

        def draw(n: int) -> np.ndarray:
            which = rs.integers(0, self.n_clusters, n)
            x = centers[which] + self.noise * rs.standard_normal((n, di), dtype=np.float32)
            x = np.ascontiguousarray(x @ proj, dtype=np.float32)
            if self.metric == "COSINE":
                x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
            return x

        self.xb = draw(self.nb)
        self.xq = draw(self.nq)
        self.xt = draw(self.nt)

    def get_groundtruth(self, k: int = 100) -> tuple[np.ndarray, np.ndarray]:
        """Exact ``(D, I)`` of the queries against the database (L2 ascending, IP/COSINE descending)."""
        from vecgrid.gpu.evaluation import knn_ground_truth

        return knn_ground_truth(self.xq, self.xb, k, self.metric)


# field id → (name, DataType) of the columns made by scalar_columns()
SCALAR_FIELDS: dict[int, tuple[str, int]] = {
    101: ("b", schema_pb2.Bool),
    102: ("i8", schema_pb2.Int8),
    103: ("i16", schema_pb2.Int16),
    104: ("i32", schema_pb2.Int32),
    105: ("i64", schema_pb2.Int64),
    106: ("f32", schema_pb2.Float),
    107: ("f64", schema_pb2.Double),
    108: ("s", schema_pb2.VarChar),
    109: ("pct", schema_pb2.Int64),
}


def scalar_columns(n: int, seed: int = 7) -> dict[int, np.ndarray]:
    """One column per filterable scalar type, keyed by the field ids of :data:`SCALAR_FIELDS`.

    ``pct`` (field 109) is uniform over 0..99, so ``pct < p`` passes p % of the rows.
    """
    rs = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    s = np.char.add(words[rs.integers(0, len(words), n)], rs.integers(0, 100, n).astype(str))
    return {
        101: rs.random(n) < 0.5,
        102: rs.integers(-128, 128, n).astype(np.int8),
        103: rs.integers(-1000, 1000, n).astype(np.int16),
        104: rs.integers(-100_000, 100_000, n).astype(np.int32),
        105: rs.integers(-(2**40), 2**40, n).astype(np.int64),
        106: rs.standard_normal(n).astype(np.float32),
        107: rs.standard_normal(n).astype(np.float64) * 100,
        108: s.astype(str),
        109: rs.integers(0, 100, n).astype(np.int64),
    }
