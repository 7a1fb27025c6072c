"""The one implementation of the Feathers adapter semantics (facts §3-§7), shared by every adapter.

An adapter only says how records are stored: it subclasses :class:`RecordView` (reads of one
operation, writes buffered in the view) and implements :meth:`AdapterService._run`, which runs a
*plan* — a plain synchronous function of a view — atomically and applies the view's buffered writes
all at once.  Everything Feathers specifies (query validation, matching, sorting, pagination, multi,
``$select``, the error messages, "a refused call changes nothing") lives in the plans here, so the
memory adapter and the metadata-store adapter cannot drift apart.

Why plans are synchronous: an adapter decides where they run.  The memory adapter runs them on the
event loop with no await inside, so each call is atomic on that loop; the metadata-store adapter
runs them on a worker thread and commits their writes in one guarded store transaction, replaying
the plan when another writer got there first.

A plan reads before it writes (``all()`` is only called before any ``put``/``delete``); ``get``
sees the plan's own buffered writes so generated ids skip ids given earlier in the same batch.
"""

from __future__ import annotations

import copy
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterable, Mapping, TypeVar

from vecgrid.common.feathers_errors import BadRequest, Conflict, MethodNotAllowed, NotFound
from vecgrid.http.feathers.query import (QuerySchema, compile_filter, matches, page_limit, select_fields,
                                         sort_records, split_query)

T = TypeVar("T")
_SCALARS = frozenset((str, int, float, bool, type(None)))


@dataclass
class Params:
    """Feathers ``params``: ``paginate`` and ``adapter`` are per-call overrides of the options.

    ``paginate`` ``None`` means "the service's setting"; ``False`` turns pagination off for the call;
    a dict replaces ``{default, max}``.
    """

    query: dict[str, Any] = field(default_factory=dict)
    paginate: Any = None
    adapter: dict[str, Any] | None = None
    provider: str | None = None
    route: dict[str, str] = field(default_factory=dict)
    user: Any = None
    authentication: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def as_params(params: Params | Mapping[str, Any] | None) -> Params:
    if params is None:
        return Params()
    if isinstance(params, Params):
        return params
    known = {k: v for k, v in params.items() if k in Params.__dataclass_fields__}
    return Params(**known)


def record_key(record_id: Any) -> str:
    # Feathers' memory store is a JS object: keys are strings, so the URL id "0" finds the record {"id": 0}.
    return str(record_id)


class RecordView(ABC):
    """The records as one operation sees them, plus that operation's writes, buffered in order.

    Owned by the one plan it is handed to; never shared between operations.
    """

    def __init__(self, id_field: str) -> None:
        self.id_field = id_field
        self.writes: dict[str, dict[str, Any] | None] = {}

    @abstractmethod
    def load(self, key: str) -> dict[str, Any] | None:
        """The stored record under ``key`` (not to be mutated), or ``None``."""

    @abstractmethod
    def load_all(self) -> Collection[dict[str, Any]]:
        """Every stored record in insertion order (not to be mutated; may be read more than once)."""

    @abstractmethod
    def next_candidate_id(self) -> Any:
        """The next id of the adapter's sequence; :meth:`new_id` skips those already taken."""

    def get(self, key: str) -> dict[str, Any] | None:
        if key in self.writes:
            return self.writes[key]
        return self.load(key)

    def all(self) -> Collection[dict[str, Any]]:
        assert not self.writes, "a plan reads all records before it writes"
        return self.load_all()

    def narrow(self, conditions: Mapping[str, Any]) -> tuple[Collection[dict[str, Any]], Mapping[str, Any]]:
        """Records in insertion order and the conditions still to check on them: a record matches
        ``conditions`` if and only if it is among them and matches the rest.  Every record and all
        the conditions here; an adapter with an index answers part of the query from it."""
        return self.all(), conditions

    def matching(self, conditions: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every record that matches ``conditions``, in insertion order."""
        rows, rest = self.narrow(conditions)
        return compile_filter(rest)(rows)

    def new_id(self) -> Any:
        while True:
            candidate = self.next_candidate_id()
            if self.get(record_key(candidate)) is None:
                return candidate

    def put(self, record: dict[str, Any]) -> None:
        self.writes[record_key(record[self.id_field])] = record

    def delete(self, key: str) -> None:
        self.writes[key] = None


class AdapterService(ABC):
    """A Feathers database service: the public methods, their hook-free ``_`` variants, the options.

    Options: ``id`` (the id field, default ``"id"``), ``paginate`` (``{"default": n, "max": m}`` or
    ``None``), ``multi`` (``False``, ``True`` or a list of ``"create"``/``"patch"``/``"remove"``),
    ``query_schema`` (a :class:`QuerySchema` or a dict of field types), ``unique`` (fields no two
    records may share, e.g. a user's ``email``: checked in the same atomic plan as the write, so two
    racing creates cannot both pass; a clash is 409 Conflict).  ``params.adapter`` overrides any
    option for one call.  ``options`` is set once in ``__init__`` and only read after.
    """

    def __init__(self, *, id: str = "id", paginate: Mapping[str, int] | None = None,
                 multi: bool | Iterable[str] = False,
                 query_schema: QuerySchema | Mapping[str, str] | None = None,
                 unique: Iterable[str] = ()) -> None:
        if query_schema is not None and not isinstance(query_schema, QuerySchema):
            query_schema = QuerySchema(dict(query_schema))
        self.options: dict[str, Any] = {"id": id, "paginate": dict(paginate) if paginate else None,
                                        "multi": multi if isinstance(multi, bool) else list(multi),
                                        "query_schema": query_schema, "unique": tuple(unique)}

    @abstractmethod
    async def _run(self, plan: Callable[[RecordView], T]) -> T:
        """Run ``plan`` on a fresh view and apply the view's writes, all or nothing."""

    @property
    def id(self) -> str:
        return self.options["id"]

    # -- option helpers ---------------------------------------------------------------------------

    def _options(self, params: Params) -> dict[str, Any]:
        return {**self.options, **(params.adapter or {})}

    def allows_multi(self, method: str, params: Params | Mapping[str, Any] | None = None) -> bool:
        multi = self._options(as_params(params))["multi"]
        if isinstance(multi, bool):
            return multi
        return method in multi

    def _paginate(self, params: Params) -> dict[str, int] | None:
        if params.paginate is not None:
            return params.paginate or None
        return self._options(params)["paginate"] or None

    def _split(self, params: Params):
        schema = self._options(params)["query_schema"]
        if schema is not None and not isinstance(schema, QuerySchema):
            schema = QuerySchema(dict(schema))
        return split_query(params.query, schema)

    def _out(self, record: Mapping[str, Any], select: list[str] | None) -> dict[str, Any]:
        # A copy the caller may change without touching the store: select_fields gives a new dict,
        # and only nested values need copying (deepcopy returns a scalar itself: the same result).
        return {k: v if type(v) in _SCALARS else copy.deepcopy(v)
                for k, v in select_fields(record, select, self.id).items()}

    def _check_unique(self, existing: list[dict[str, Any]], written: list[dict[str, Any]]) -> None:
        """Refuses ``written`` records that share a ``unique`` field's value with another record."""
        for field_name in self.options["unique"]:
            owners = {record_key(r[self.id]): r.get(field_name) for r in existing}
            owners.update((record_key(r[self.id]), r.get(field_name)) for r in written)
            seen: set[Any] = set()
            for value in owners.values():
                if value is None:
                    continue
                marker = json.dumps(value, sort_keys=True)
                if marker in seen:
                    raise Conflict(f"A record with this {field_name} already exists",
                                   data={"field": field_name})
                seen.add(marker)

    def _lookup(self, view: RecordView, record_id: Any, conditions: Mapping[str, Any]) -> dict[str, Any]:
        record = None if record_id is None else view.get(record_key(record_id))
        if record is None or not matches(record, conditions):
            raise NotFound(f"No record found for id '{record_id}'")
        return record

    # -- hook-free methods (every refusal is raised before the plan runs or before it writes) -------

    async def _find(self, params: Params | Mapping[str, Any] | None = None) -> Any:
        params = as_params(params)
        filters, conditions = self._split(params)
        paginate = self._paginate(params)
        limit = page_limit(filters.limit, paginate)

        def plan(view: RecordView) -> Any:
            found = view.matching(conditions)
            if filters.sort:
                found = sort_records(found, filters.sort)
            end = None if limit is None else filters.skip + limit
            data = [self._out(r, filters.select) for r in found[filters.skip:end]]
            if not paginate:
                return data
            return {"total": len(found), "limit": limit, "skip": filters.skip, "data": data}

        return await self._run(plan)

    async def _get(self, id: Any, params: Params | Mapping[str, Any] | None = None) -> dict[str, Any]:
        params = as_params(params)
        filters, conditions = self._split(params)
        return await self._run(lambda view: self._out(self._lookup(view, id, conditions), filters.select))

    async def _create(self, data: Any, params: Params | Mapping[str, Any] | None = None) -> Any:
        params = as_params(params)
        if isinstance(data, list) and not self.allows_multi("create", params):
            raise MethodNotAllowed("Can not create multiple entries")
        # The query filters nothing on create; only $select shapes the answer (facts §4).
        filters, _ = self._split(params)
        items = data if isinstance(data, list) else [data]
        for item in items:
            if not isinstance(item, dict):  # checked for every item before the first is stored
                raise BadRequest("Data must be an object")

        def plan(view: RecordView) -> list[dict[str, Any]]:
            existing = view.all() if self.options["unique"] else []
            records = []
            for item in items:
                record = copy.deepcopy(item)
                if record.get(self.id) is None:
                    record[self.id] = view.new_id()
                view.put(record)
                records.append(record)
            self._check_unique(existing, records)
            return [self._out(record, filters.select) for record in records]

        created = await self._run(plan)
        return created if isinstance(data, list) else created[0]

    async def _update(self, id: Any, data: Any, params: Params | Mapping[str, Any] | None = None) -> dict:
        params = as_params(params)
        if id is None or isinstance(data, list):
            raise BadRequest("You can not replace multiple instances. Did you mean 'patch'?")
        if not isinstance(data, dict):
            raise BadRequest("Data must be an object")
        filters, conditions = self._split(params)

        def plan(view: RecordView) -> dict[str, Any]:
            existing = view.all() if self.options["unique"] else []
            old = self._lookup(view, id, conditions)
            # The id comes from the stored record; an id in the body is ignored (facts §4).
            record = {**copy.deepcopy(data), self.id: old[self.id]}
            self._check_unique(existing, [record])
            view.put(record)
            return self._out(record, filters.select)

        return await self._run(plan)

    async def _patch(self, id: Any, data: Any, params: Params | Mapping[str, Any] | None = None) -> Any:
        params = as_params(params)
        if id is None and not self.allows_multi("patch", params):
            raise MethodNotAllowed("Can not patch multiple entries")
        if not isinstance(data, dict):
            raise BadRequest("Data must be an object")
        filters, conditions = self._split(params)
        changes = {k: v for k, v in data.items() if k != self.id}

        def plan(view: RecordView) -> list[dict[str, Any]]:
            # $limit and pagination never limit a multi patch (facts §4, §6).
            existing = view.all() if self.options["unique"] else []
            if id is not None:
                targets = [self._lookup(view, id, conditions)]
            else:
                targets = (compile_filter(conditions)(existing) if self.options["unique"]
                           else view.matching(conditions))
            patched = [{**r, **copy.deepcopy(changes)} for r in targets]
            self._check_unique(existing, patched)
            for record in patched:
                view.put(record)
            return [self._out(r, filters.select) for r in patched]

        patched = await self._run(plan)
        return patched if id is None else patched[0]

    async def _remove(self, id: Any, params: Params | Mapping[str, Any] | None = None) -> Any:
        params = as_params(params)
        if id is None and not self.allows_multi("remove", params):
            raise MethodNotAllowed("Can not remove multiple entries")
        filters, conditions = self._split(params)

        def plan(view: RecordView) -> list[dict[str, Any]]:
            targets = (view.matching(conditions) if id is None
                       else [self._lookup(view, id, conditions)])
            removed = [self._out(r, filters.select) for r in targets]
            for record in targets:
                view.delete(record_key(record[self.id]))
            return removed

        removed = await self._run(plan)
        return removed if id is None else removed[0]

    # -- the public methods (hooks are layered on these by the application) ------------------------

    async def find(self, params: Params | Mapping[str, Any] | None = None) -> Any:
        return await self._find(params)

    async def get(self, id: Any, params: Params | Mapping[str, Any] | None = None) -> dict[str, Any]:
        return await self._get(id, params)

    async def create(self, data: Any, params: Params | Mapping[str, Any] | None = None) -> Any:
        return await self._create(data, params)

    async def update(self, id: Any, data: Any, params: Params | Mapping[str, Any] | None = None) -> dict:
        return await self._update(id, data, params)

    async def patch(self, id: Any, data: Any, params: Params | Mapping[str, Any] | None = None) -> Any:
        return await self._patch(id, data, params)

    async def remove(self, id: Any, params: Params | Mapping[str, Any] | None = None) -> Any:
        return await self._remove(id, params)
