"""The memory adapter: the reference semantics of the Feathers common query syntax (facts §3-§7).

A plain async service that knows nothing of HTTP: ``find(params)``, ``get(id, params)``,
``create(data, params)``, ``update(id, data, params)``, ``patch(id, data, params)``,
``remove(id, params)``, and the same names with a leading underscore, which the application calls
without hooks.  Both validate and convert the query through :mod:`vecgrid.http.query`; the
underscored variants exist so hooks can be layered on the public ones.

Ownership: the store belongs to the event loop that calls the service.  No method awaits between
reading and writing the store, so each call is atomic on that loop, and a refused call (multi not
allowed, update without id, a query that does not validate) is refused before anything changes.
Calling from another thread is not supported.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from vecgrid.http.feathers.errors import BadRequest, MethodNotAllowed, NotFound
from vecgrid.http.query import QuerySchema, matches, select_fields, sort_records, split_query

_UNSET: Any = object()


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


def _key(record_id: Any) -> str:
    # Feathers' memory store is a JS object: keys are strings, so the URL id "0" finds the record {"id": 0}.
    return str(record_id)


class MemoryService:
    """Records in a dict, in insertion order.

    Options: ``id`` (the id field, default ``"id"``), ``paginate`` (``{"default": n, "max": m}`` or
    ``None``), ``multi`` (``False``, ``True`` or a list of ``"create"``/``"patch"``/``"remove"``),
    ``query_schema`` (a :class:`QuerySchema` or a dict of field types), ``start_id`` (first
    generated id).  ``params.adapter`` overrides any option for one call.
    """

    def __init__(self, *, id: str = "id", paginate: Mapping[str, int] | None = None,
                 multi: bool | Iterable[str] = False,
                 query_schema: QuerySchema | Mapping[str, str] | None = None,
                 start_id: int = 0, store: Mapping[Any, Mapping[str, Any]] | None = None) -> None:
        if query_schema is not None and not isinstance(query_schema, QuerySchema):
            query_schema = QuerySchema(dict(query_schema))
        self.options: dict[str, Any] = {"id": id, "paginate": dict(paginate) if paginate else None,
                                        "multi": multi if isinstance(multi, bool) else list(multi),
                                        "query_schema": query_schema}
        self._store: dict[str, dict[str, Any]] = {}
        self._next_id = start_id
        for record in (store or {}).values():
            self._store[_key(record[id])] = copy.deepcopy(dict(record))

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

    def _out(self, record: Mapping[str, Any], select: list[str] | None, id_field: str) -> dict[str, Any]:
        return copy.deepcopy(select_fields(record, select, id_field))

    def _matching(self, conditions: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [r for r in self._store.values() if matches(r, conditions)]

    def _lookup(self, record_id: Any, conditions: Mapping[str, Any]) -> dict[str, Any]:
        record = None if record_id is None else self._store.get(_key(record_id))
        if record is None or not matches(record, conditions):
            raise NotFound(f"No record found for id '{record_id}'")
        return record

    # -- hook-free methods ------------------------------------------------------------------------

    async def _find(self, params: Params | Mapping[str, Any] | None = None) -> Any:
        params = as_params(params)
        filters, conditions = self._split(params)
        paginate = self._paginate(params)
        found = self._matching(conditions)
        if filters.sort:
            found = sort_records(found, filters.sort)
        limit = filters.limit
        if paginate:
            base = limit if limit is not None else paginate.get("default")
            maximum = paginate.get("max")
            limit = min(base, maximum) if base is not None and maximum is not None else (
                base if base is not None else maximum)
        window = found[filters.skip:] if limit is None else found[filters.skip:filters.skip + limit]
        data = [self._out(r, filters.select, self.id) for r in window]
        if not paginate:
            return data
        return {"total": len(found), "limit": limit, "skip": filters.skip, "data": data}

    async def _get(self, id: Any, params: Params | Mapping[str, Any] | None = None) -> dict[str, Any]:
        params = as_params(params)
        filters, conditions = self._split(params)
        return self._out(self._lookup(id, conditions), filters.select, self.id)

    async def _create(self, data: Any, params: Params | Mapping[str, Any] | None = None) -> Any:
        params = as_params(params)
        if isinstance(data, list) and not self.allows_multi("create", params):
            raise MethodNotAllowed("Can not create multiple entries")
        # The query filters nothing on create; only $select shapes the answer (facts §4).
        filters, _ = self._split(params)
        for item in data if isinstance(data, list) else [data]:
            if not isinstance(item, dict):  # checked for every item before the first is stored
                raise BadRequest("Data must be an object")
        if isinstance(data, list):
            return [self._out(self._insert(item), filters.select, self.id) for item in data]
        return self._out(self._insert(data), filters.select, self.id)

    def _insert(self, data: dict[str, Any]) -> dict[str, Any]:
        record = copy.deepcopy(data)
        if record.get(self.id) is None:
            while _key(self._next_id) in self._store:
                self._next_id += 1
            record[self.id] = self._next_id
            self._next_id += 1
        self._store[_key(record[self.id])] = record
        return record

    async def _update(self, id: Any, data: Any, params: Params | Mapping[str, Any] | None = None) -> dict:
        params = as_params(params)
        if id is None or isinstance(data, list):
            raise BadRequest("You can not replace multiple instances. Did you mean 'patch'?")
        if not isinstance(data, dict):
            raise BadRequest("Data must be an object")
        filters, conditions = self._split(params)
        old = self._lookup(id, conditions)
        # The id comes from the stored record; an id in the body is ignored (facts §4).
        record = {**copy.deepcopy(data), self.id: old[self.id]}
        self._store[_key(old[self.id])] = record
        return self._out(record, filters.select, self.id)

    async def _patch(self, id: Any, data: Any, params: Params | Mapping[str, Any] | None = None) -> Any:
        params = as_params(params)
        if id is None and not self.allows_multi("patch", params):
            raise MethodNotAllowed("Can not patch multiple entries")
        if not isinstance(data, dict):
            raise BadRequest("Data must be an object")
        filters, conditions = self._split(params)
        changes = {k: v for k, v in copy.deepcopy(data).items() if k != self.id}
        if id is None:
            # $limit and pagination never limit a multi patch (facts §4, §6).
            targets = self._matching(conditions)
            for record in targets:
                record.update(copy.deepcopy(changes))
            return [self._out(r, filters.select, self.id) for r in targets]
        record = self._lookup(id, conditions)
        record.update(changes)
        return self._out(record, filters.select, self.id)

    async def _remove(self, id: Any, params: Params | Mapping[str, Any] | None = None) -> Any:
        params = as_params(params)
        if id is None and not self.allows_multi("remove", params):
            raise MethodNotAllowed("Can not remove multiple entries")
        filters, conditions = self._split(params)
        targets = self._matching(conditions) if id is None else [self._lookup(id, conditions)]
        for record in targets:
            del self._store[_key(record[self.id])]
        return [self._out(r, filters.select, self.id) for r in targets] if id is None else \
            self._out(targets[0], filters.select, self.id)

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
