"""The metadata-store adapter: Feathers records that survive a restart (users, small records).

The same semantics as the memory adapter — both run the plans of :mod:`vecgrid.http.feathers.adapters.base`
— over a :class:`~vecgrid.storage.kv.MetaStore` under a key prefix:

* ``<prefix>records/<id>`` → JSON ``{"seq": n, "record": {...}}``; ``seq`` keeps Feathers' insertion
  order (the store scans in key order, which is not creation order) and survives update and patch.
* ``<prefix>counter`` → JSON ``{"next_id": n, "next_seq": m}``, the sequence of generated ids and of
  insertion positions.

Atomicity across processes sharing one store file: a call reads what it needs, runs its plan, and
commits every write in one store transaction guarded by ``expect`` on each key it read or writes
(and on the counter whenever it allocates or scanned).  If another writer changed one of them, the
transaction applies nothing and the call runs its plan again on fresh reads, so two services never
hand out the same id, a multi patch/remove/create is all or nothing, and a multi patch never misses
a record created or changed between its read and its write.  After :data:`MAX_ATTEMPTS` lost races
the call fails with 409 ``Conflict`` rather than spin.

MetaStore calls block (SQLite, fsync on commit), so each call runs its reads, plan and commit on a
worker thread (``asyncio.to_thread``).  The service holds no mutable state of its own (``options``
is read-only after ``__init__``): the store owns the records, and the store is thread-safe.  A view
belongs to one attempt of one call, on that call's worker thread.

Records must be JSON values (they are stored as JSON); ids are stored under ``str(id)`` as in the
memory adapter, so ``"0"`` finds ``{"id": 0}``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable, Iterable, Mapping, TypeVar

from vecgrid.http.feathers.adapters.base import AdapterService, RecordView
from vecgrid.common.feathers_errors import Conflict
from vecgrid.http.feathers.query import QuerySchema
from vecgrid.storage.kv import MetaStore, MetaTxnConflictError

__all__ = ["MetaStoreService", "MAX_ATTEMPTS"]

T = TypeVar("T")

MAX_ATTEMPTS = 100


def _encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


class _StoreView(RecordView):
    """One attempt's reads (raw bytes kept for the commit's guards) and buffered writes."""

    def __init__(self, service: MetaStoreService) -> None:
        super().__init__(service.id)
        self._store = service.store
        self._records_prefix = service.records_prefix
        self._counter_key = service.counter_key
        self._start_id = service.start_id
        self._raw: dict[str, bytes | None] = {}  # store key → value as read
        self._seq: dict[str, int] = {}  # record key → insertion position as read
        self._scanned = False
        self._counter: dict[str, int] | None = None
        self._counter_raw: bytes | None = None

    def _store_key(self, key: str) -> str:
        return self._records_prefix + key

    def _decode(self, key: str, raw: bytes | None) -> dict[str, Any] | None:
        self._raw[self._store_key(key)] = raw
        if raw is None:
            return None
        entry = json.loads(raw)
        self._seq[key] = entry["seq"]
        return entry["record"]

    def load(self, key: str) -> dict[str, Any] | None:
        store_key = self._store_key(key)
        if store_key in self._raw:
            raw = self._raw[store_key]
        else:
            raw = self._store.get(store_key)
        return self._decode(key, raw)

    def load_all(self) -> list[dict[str, Any]]:
        self._scanned = True
        self._load_counter()  # guarded at commit: a concurrent create bumps it
        entries = []
        for store_key, raw in self._store.scan(self._records_prefix):
            key = store_key[len(self._records_prefix):]
            record = self._decode(key, raw)
            entries.append((self._seq[key], record))
        entries.sort(key=lambda entry: entry[0])
        return [record for _, record in entries]

    def _load_counter(self) -> dict[str, int]:
        if self._counter is None:
            self._counter_raw = self._store.get(self._counter_key)
            self._counter = (json.loads(self._counter_raw) if self._counter_raw is not None
                             else {"next_id": self._start_id, "next_seq": 0})
        return self._counter

    def next_candidate_id(self) -> Any:
        counter = self._load_counter()
        candidate = counter["next_id"]
        counter["next_id"] += 1
        return candidate

    def commit(self) -> None:
        """Apply the writes in one transaction guarded by everything they depend on."""
        if not self.writes:
            return
        with self._store.txn() as txn:
            for key, record in self.writes.items():
                store_key = self._store_key(key)
                if store_key not in self._raw:
                    self.load(key)  # its current value (and seq) is what this write replaces
                txn.expect(store_key, self._raw[store_key])
                if record is None:
                    txn.delete(store_key)
                    continue
                seq = self._seq.get(key)
                if seq is None:
                    counter = self._load_counter()
                    seq = counter["next_seq"]
                    counter["next_seq"] += 1
                txn.put(store_key, _encode({"seq": seq, "record": record}))
            if self._scanned:
                for store_key, raw in self._raw.items():
                    txn.expect(store_key, raw)
            if self._counter is not None:
                txn.expect(self._counter_key, self._counter_raw)
                txn.put(self._counter_key, _encode(self._counter))


class MetaStoreService(AdapterService):
    """A Feathers service whose records live in ``store`` under ``prefix`` (e.g. ``"http/users/"``).

    Options as :class:`~vecgrid.http.feathers.adapters.base.AdapterService`, plus ``start_id`` (the first
    generated id when the store has no counter yet).  The caller owns ``store`` and closes it.
    """

    def __init__(self, store: MetaStore, prefix: str, *, id: str = "id",
                 paginate: Mapping[str, int] | None = None, multi: bool | Iterable[str] = False,
                 query_schema: QuerySchema | Mapping[str, str] | None = None, start_id: int = 0,
                 unique: Iterable[str] = ()) -> None:
        super().__init__(id=id, paginate=paginate, multi=multi, query_schema=query_schema, unique=unique)
        if not prefix:
            raise ValueError("a meta store service needs a key prefix of its own")
        self.store = store
        self.records_prefix = prefix + "records/"
        self.counter_key = prefix + "counter"
        self.start_id = start_id

    def _run_blocking(self, plan: Callable[[RecordView], T]) -> T:
        for _ in range(MAX_ATTEMPTS):
            view = _StoreView(self)
            result = plan(view)
            try:
                view.commit()
            except MetaTxnConflictError:
                continue  # another writer changed what the plan read: read again, decide again
            return result
        raise Conflict(f"Records under {self.records_prefix!r} kept changing during the call; "
                       f"gave up after {MAX_ATTEMPTS} attempts")

    async def _run(self, plan: Callable[[RecordView], T]) -> T:
        return await asyncio.to_thread(self._run_blocking, plan)
