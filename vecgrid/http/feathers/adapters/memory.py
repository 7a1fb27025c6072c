"""The memory adapter: the reference semantics of the Feathers common query syntax (facts §3-§7).

A plain async service that knows nothing of HTTP: ``find(params)``, ``get(id, params)``,
``create(data, params)``, ``update(id, data, params)``, ``patch(id, data, params)``,
``remove(id, params)``, and the same names with a leading underscore, which the application calls
without hooks.  The semantics live in :mod:`vecgrid.http.feathers.adapters.base`, shared with every other
adapter; this module only keeps the records in a dict.

Ownership: the store, its equality indexes and the id counter belong to the event loop that calls
the service.  A call runs its plan and applies the plan's writes with no await in between, so each
call is atomic on that loop, and a refused call (multi not allowed, update without id, a query that
does not validate) is refused before anything changes.  Calling from another thread is not supported.

Equality indexes: a find whose query has a top-level ``field: <string or number>`` clause scans only
the records holding that value (the bucket of an index built on first use) with the other clauses,
not the whole store with all of them — a 3-clause find over 10,000 records spent most of its time in
the scan.  A bucket holds exactly the records the clause matches under the query rules (``1`` and
``1.0`` together; ``True`` and ``"1"`` elsewhere).  Stored records are never changed
in place (every write stores a new dict), so an index goes stale only through the store's dict, which
counts its changes; a stale index is built again by the next find that uses it (a pass over the
records, about one scan: a store written between every two finds costs what it did without indexes).
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Collection, Iterable, Mapping, TypeVar

from vecgrid.http.feathers.adapters.base import AdapterService, Params, RecordView, as_params, record_key
from vecgrid.http.feathers.query import QuerySchema

__all__ = ["MemoryService", "MemoryStore", "Params", "as_params"]

T = TypeVar("T")


class _Records(dict):
    """The store's records by key, counting every change (server code and tests may write the dict
    directly, not only through a service), so an equality index knows when it is stale."""

    __slots__ = ("version",)

    def __init__(self) -> None:
        super().__init__()
        self.version = 0

    def __setitem__(self, key: str, record: dict[str, Any]) -> None:
        self.version += 1
        super().__setitem__(key, record)

    def __delitem__(self, key: str) -> None:
        self.version += 1
        super().__delitem__(key)

    def pop(self, *args: Any) -> Any:
        self.version += 1
        return super().pop(*args)

    def popitem(self) -> Any:
        self.version += 1
        return super().popitem()

    def clear(self) -> None:
        self.version += 1
        super().clear()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.version += 1
        super().update(*args, **kwargs)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.version += 1
        return super().setdefault(key, default)

    def __ior__(self, other: Any) -> "_Records":
        self.version += 1
        return super().__ior__(other)


_INDEX_MIN_RECORDS = 1024   # below this a scan of every record costs less than keeping an index
_INDEXES_KEPT = 8           # fields indexed at once (queries name arbitrary fields)


class MemoryStore:
    """Records by id key plus the id counter: what several services may share.

    Two services over one store are two views of one collection (same records, one id sequence)
    that differ only in options, as the conformance app's ``people`` and ``people-paginated``.
    Owned, like the services over it, by the event loop that calls them.
    """

    def __init__(self, start_id: int = 0) -> None:
        self.records: dict[str, dict[str, Any]] = _Records()
        self.next_id = start_id
        # field -> (records.version it was built at, value -> records holding it, in store order)
        self._indexes: dict[str, tuple[int, dict[Any, list[dict[str, Any]]]]] = {}

    def narrow(self, conditions: Mapping[str, Any]) -> tuple[Collection[dict[str, Any]], Mapping[str, Any]]:
        """Records that match one top-level ``field: <string or number>`` clause of ``conditions``
        (the index's bucket, in store order) and the conditions left to check on them; every record
        and all the conditions where no clause qualifies."""
        records = self.records
        if len(records) >= _INDEX_MIN_RECORDS:
            for name, value in conditions.items():
                key = _index_key(value)
                if key is not None and not name.startswith("$"):
                    rest = {k: v for k, v in conditions.items() if k != name}
                    return self._index(name).get(key, ()), rest
        return records.values(), conditions

    def _index(self, name: str) -> dict[Any, list[dict[str, Any]]]:
        version = self.records.version  # type: ignore[attr-defined]
        built = self._indexes.pop(name, None)
        if built is None or built[0] != version:
            index: dict[Any, list[dict[str, Any]]] = {}
            for record in self.records.values():
                key = _index_key(record.get(name))
                if key is not None:  # other values (missing, null, booleans, lists, objects) equal no key
                    index.setdefault(key, []).append(record)
            built = (version, index)
            if len(self._indexes) >= _INDEXES_KEPT:
                self._indexes.pop(next(iter(self._indexes)))
        self._indexes[name] = built  # last used last: the first is the one to drop
        return built[1]


def _index_key(value: Any) -> tuple[int, Any] | None:
    """The bucket of a value an equality with a string or number operand can match: values equal
    under the query rules (:func:`vecgrid.http.feathers.query._equal`: ``1`` and ``1.0``, never ``True`` or
    ``"1"``) and only those share a key."""
    kind = type(value)
    if kind is str:
        return (1, value)
    if kind is bool or not isinstance(value, (int, float)):
        return None
    return (0, value)


class _MemoryView(RecordView):
    def __init__(self, service: MemoryService) -> None:
        super().__init__(service.id)
        self._shared = service.store
        self._store = service.store.records
        self.next_id = service.store.next_id

    def load(self, key: str) -> dict[str, Any] | None:
        return self._store.get(key)

    def load_all(self) -> Collection[dict[str, Any]]:
        # The store's own view, not a copy of 10,000 references per query: nothing changes the
        # store while a plan runs (its writes are applied after it returns).
        return self._store.values()

    def narrow(self, conditions: Mapping[str, Any]) -> tuple[Collection[dict[str, Any]], Mapping[str, Any]]:
        assert not self.writes, "a plan reads all records before it writes"
        return self._shared.narrow(conditions)

    def next_candidate_id(self) -> Any:
        candidate = self.next_id
        self.next_id += 1
        return candidate


class MemoryService(AdapterService):
    """Records in a dict, in insertion order (an update or patch keeps a record's place).

    Options as :class:`~vecgrid.http.feathers.adapters.base.AdapterService`, plus ``start_id`` (first
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
