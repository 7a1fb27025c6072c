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


_refusing: list[socket.socket] = []   # bound, never listening, for the test process's life


def refused_address() -> str:
    """An address nothing listens on: connections are refused at once.  Its socket stays bound (not
    listening, which refuses as well), so that no server of a test running alongside can take the port."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _refusing.append(s)
    return f"127.0.0.1:{s.getsockname()[1]}"


# --- collections written through the proxy ----------------------------------------------------------------

def write_schema(dim: int, *, auto_id: bool = False, dynamic: bool = False, str_pk: bool = False,
                 defaults: bool = False):
    """pk (Int64, or VarChar 32), vec (FloatVector dim), age (Int32), tag (VarChar 16), and with ``defaults``
    score (Double, default 0.5)."""
    from vecgrid.proto import common_pb2, schema_pb2

    def kv(**items):
        return [common_pb2.KeyValuePair(key=k, value=str(v)) for k, v in items.items()]

    fields = [
        schema_pb2.FieldSchema(name="pk", data_type=schema_pb2.VarChar if str_pk else schema_pb2.Int64,
                               is_primary_key=True, autoID=auto_id, type_params=kv(max_length=32) if str_pk else []),
        schema_pb2.FieldSchema(name="vec", data_type=schema_pb2.FloatVector, type_params=kv(dim=dim)),
        schema_pb2.FieldSchema(name="age", data_type=schema_pb2.Int32),
        schema_pb2.FieldSchema(name="tag", data_type=schema_pb2.VarChar, type_params=kv(max_length=16)),
    ]
    if defaults:
        fields.append(schema_pb2.FieldSchema(name="score", data_type=schema_pb2.Double,
                                             default_value=schema_pb2.ValueField(double_data=0.5)))
    return schema_pb2.CollectionSchema(fields=fields, enable_dynamic_field=dynamic)


def create_collection(catalog, name: str, *, dim: int = 16, shards: int = 2, metric: str = "L2", **schema_kw):
    """An empty collection with a FLAT index on ``vec``; returns its CollectionInfo."""
    coll = catalog.create_collection("default", name, write_schema(dim, **schema_kw), shards_num=shards)
    catalog.create_index(coll.id, "vec", "FLAT", metric)
    return catalog.get_collection(coll.id)


def rows_for(pks, dim: int = 16, seed: int = 0, tag: str = "w") -> dict:
    """Columns for ``pks`` (None: let auto_id choose): vectors, age = key % 100, tag."""
    rng = np.random.default_rng(seed)
    n = len(pks)
    out = {"vec": rng.standard_normal((n, dim)).astype(np.float32),
           "age": (np.asarray(pks, np.int64) % 100).astype(np.int32) if n and not isinstance(pks[0], str)
           else np.arange(n, dtype=np.int32),
           "tag": [tag] * n}
    out["pk"] = list(pks)
    return out


def dynamic_flat_collection(tmp_path):
    """A data dir under ``tmp_path`` holding the collection ``dyn``: :func:`write_schema` (dim 4, dynamic
    field on, defaults) with a FLAT index; returns the :class:`~vecgrid.storage.layout.DataDir`."""
    from vecgrid.storage.layout import DataDir

    data = DataDir(str(tmp_path / "data"))
    store = data.open_store()
    try:
        catalog = data.open_catalog(store)
        coll = catalog.create_collection("default", "dyn", write_schema(4, dynamic=True, defaults=True))
        catalog.create_index(coll.id, "vec", "FLAT", "L2")
    finally:
        store.close()
    return data
