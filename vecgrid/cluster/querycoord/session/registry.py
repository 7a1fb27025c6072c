"""Stable int64 node ids, persisted in the metadata store.

Milvus gives each process a server id from an etcd counter.  vecgrid keys ids by
the Dask worker *name*, so a worker the nanny restarts (same name, new address)
and a coordinator that restarts both see the same id.  Ids are never reused.
"""

from __future__ import annotations

import threading

from vecgrid.storage.kv import MetaStore

_PREFIX = "session/id/"
_COUNTER = "session/id-counter"


class NodeIdRegistry:
    def __init__(self, store: MetaStore) -> None:
        self._store = store
        self._lock = threading.Lock()

    def id_for(self, kind: str, name: str) -> int:
        """The id of component ``kind`` (``querynode``/``querycoord``) named ``name``, allocated once."""
        key = f"{_PREFIX}{kind}/{name}"
        with self._lock:
            existing = self._store.get(key)
            if existing is not None:
                return int(existing)
            counter = self._store.get(_COUNTER)
            new_id = (int(counter) if counter is not None else 0) + 1
            with self._store.txn() as txn:
                txn.put(_COUNTER, str(new_id).encode())
                txn.put(key, str(new_id).encode())
            return new_id
