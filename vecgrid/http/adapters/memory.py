"""The memory adapter: the reference semantics of the Feathers common query syntax (facts §3-§7).

A plain async service that knows nothing of HTTP: ``find(params)``, ``get(id, params)``,
``create(data, params)``, ``update(id, data, params)``, ``patch(id, data, params)``,
``remove(id, params)``, and the same names with a leading underscore, which the application calls
without hooks.  The semantics live in :mod:`vecgrid.http.adapters.base`, shared with every other
adapter; this module only keeps the records in a dict.

Ownership: the store and the id counter belong to the event loop that calls the service.  A call
runs its plan and applies the plan's writes with no await in between, so each call is atomic on that
loop, and a refused call (multi not allowed, update without id, a query that does not validate) is
refused before anything changes.  Calling from another thread is not supported.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Collection, Iterable, Mapping, TypeVar

from vecgrid.http.adapters.base import AdapterService, Params, RecordView, as_params, record_key
from vecgrid.http.query import QuerySchema

__all__ = ["MemoryService", "MemoryStore", "Params", "as_params"]

T = TypeVar("T")


class MemoryStore:
    """Records by id key plus the id counter: what several services may share.

    Two services over one store are two views of one collection (same records, one id sequence)
    that differ only in options, as the conformance app's ``people`` and ``people-paginated``.
    Owned, like the services over it, by the event loop that calls them.
    """

    def __init__(self, start_id: int = 0) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.next_id = start_id


class _MemoryView(RecordView):
    def __init__(self, service: MemoryService) -> None:
        super().__init__(service.id)
        self._store = service.store.records
        self.next_id = service.store.next_id

    def load(self, key: str) -> dict[str, Any] | None:
        return self._store.get(key)

    def load_all(self) -> Collection[dict[str, Any]]:
        # The store's own view, not a copy of 10,000 references per query: nothing changes the
        # store while a plan runs (its writes are applied after it returns).
        return self._store.values()

    def next_candidate_id(self) -> Any:
        candidate = self.next_id
        self.next_id += 1
        return candidate


class MemoryService(AdapterService):
    """Records in a dict, in insertion order (an update or patch keeps a record's place).

    Options as :class:`~vecgrid.http.adapters.base.AdapterService`, plus ``start_id`` (first
    generated id), ``store`` (initial records) and ``shared`` (a :class:`MemoryStore` this service
    shares with others; ``start_id`` and ``store`` then do not apply).
    """

    def __init__(self, *, id: str = "id", paginate: Mapping[str, int] | None = None,
                 multi: bool | Iterable[str] = False,
                 query_schema: QuerySchema | Mapping[str, str] | None = None,
                 start_id: int = 0, store: Mapping[Any, Mapping[str, Any]] | None = None,
                 shared: MemoryStore | None = None, unique: Iterable[str] = ()) -> None:
        super().__init__(id=id, paginate=paginate, multi=multi, query_schema=query_schema, unique=unique)
        if shared is not None and (store or start_id):
            raise ValueError("a shared store brings its own records and id counter")
        self.store = shared if shared is not None else MemoryStore(start_id)
        for record in (store or {}).values():
            self.store.records[record_key(record[id])] = copy.deepcopy(dict(record))

    async def _run(self, plan: Callable[[RecordView], T]) -> T:
        view = _MemoryView(self)
        result = plan(view)  # raises before anything below changes the store
        for key, record in view.writes.items():
            if record is None:
                self.store.records.pop(key, None)
            else:
                self.store.records[key] = record
        self.store.next_id = view.next_id
        return result
