"""The one handler of Milvus's RESTful API v2: ``POST /v2/vectordb/<group>/<action>``.

Every action answers Milvus's envelope: ``{"code": 0, "data": ...}`` on success and ``{"code": <Milvus
code>, "message": "..."}`` on failure, with HTTP 200 either way (Milvus's ``HTTPReturn``).  What a
request can get wrong before anything runs is answered with the codes of Milvus's REST layer:

* a body that is not a JSON object, or a key of the wrong JSON type: **1801** ("can only accept json
  format request");
* a required key missing or empty (gin's ``binding:"required"``): **1802** ("missing required
  parameters");
* a ``dbName`` (or ``DB-Name`` header) that names no database: **800** (database not found);
* with auth on, no valid credentials: HTTP **401** with **1800** ("user hasn't authenticated"), and a
  role without the action's right: HTTP **403** with **1401** ("privilege not permitted"), as Milvus's
  authentication middleware and privilege interceptor answer them.

A :class:`~vecgrid.errors.MilvusError` raised by the call carries its own code and message; a Feathers
``BadRequest`` of the REST helpers reused here (schema decoding) is 1100 (invalid parameter); anything
else is 65535 with a request id, logged with its traceback.

Credentials are Milvus's: ``Authorization: Bearer <user>:<password>`` (the user being a vecgrid
account's email), HTTP basic auth, or ``Bearer <access token>`` (a vecgrid token from
``POST /authentication``).  They are checked as the gRPC servers check them
(:func:`~vecgrid.http.services.accounts.grpc_rights_checker`: the same login limiter and revocations);
reads need the ``read`` right, writes, loads and definitions ``write``.  A successful check is kept for
30 s (:class:`~vecgrid.common.auth.KeptRights`, as the gRPC servers keep it), so a password is not hashed
on every call.

State: the kept credentials (:class:`Credentials`), owned by the app's event loop.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from vecgrid import errors
from vecgrid.common.auth import BEARER_SCHEME, KeptRights, RightsChecker
from vecgrid.common.feathers_errors import FeathersError
from vecgrid.http.base import BaseHandler, decode_json
from vecgrid.storage.catalog import CollectionInfo
from vecgrid.storage.catalog.schema_rules import DEFAULT_DB_NAME

READ, WRITE = "read", "write"
#: Milvus's header that says whether the client reads int64 JSON numbers (absent: yes, Milvus's
#: ``proxy.http.acceptTypeAllowInt64`` default); ``false`` makes Int64 values decimal strings
ALLOW_INT64_HEADER = "Accept-Type-Allow-Int64"
DB_NAME_HEADER = "DB-Name"

# Milvus's REST-layer codes (merr, "high-level restful api related"): vecgrid's errors module has no
# classes for them, as nothing else answers them.
NEED_AUTHENTICATE = 1800
INCORRECT_PARAMETER_FORMAT = 1801
MISSING_REQUIRED_PARAMETERS = 1802
CHECK_PRIMARY_KEY = 1806
PRIVILEGE_NOT_PERMITTED = 1401
UNEXPECTED = 65535


class RestError(Exception):
    """A refusal of the REST layer itself: a Milvus code, its message, and the HTTP status (200 but for
    authentication and privileges)."""

    def __init__(self, code: int, message: str, status: int = 200) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def bad_format(detail: str) -> RestError:
    return RestError(INCORRECT_PARAMETER_FORMAT, f"can only accept json format request, error: {detail}")


def missing(key: str) -> RestError:
    return RestError(MISSING_REQUIRED_PARAMETERS, f"missing required parameters, error: {key} is required")


# --- request bodies --------------------------------------------------------------------------------

_KINDS: dict[Any, tuple[Callable[[Any], bool], str]] = {
    str: (lambda v: isinstance(v, str), "a string"),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    float: (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
    bool: (lambda v: isinstance(v, bool), "true or false"),
    list: (lambda v: isinstance(v, list), "an array"),
    dict: (lambda v: isinstance(v, dict), "an object"),
}


class Body:
    """A request's JSON object, read key by key with Go's rules: unknown keys are ignored, a key of the
    wrong type is 1801, a required key that is missing or empty is 1802."""

    def __init__(self, data: dict[str, Any], allow_int64: bool = True) -> None:
        self.data = data
        self.allow_int64 = allow_int64

    def __contains__(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str, kind: Any, default: Any = None, *, required: bool = False) -> Any:
        value = self.data.get(key)
        if value is None:
            if required:
                raise missing(key)
            return default
        check, words = _KINDS[kind]
        if not check(value):
            raise bad_format(f"{key} must be {words}, got {value!r}"[:300])
        if required and value in ("", [], {}):
            raise missing(key)
        return value

    def strings(self, key: str, *, required: bool = False) -> list[str]:
        value = self.get(key, list, [], required=required)
        if not all(isinstance(v, str) for v in value):
            raise bad_format(f"{key} must be an array of strings")
        return list(value)

    def name(self, key: str = "collectionName") -> str:
        return self.get(key, str, required=True)


# --- credentials -----------------------------------------------------------------------------------

def authorization_value(header: str | None) -> str | None:
    """A Milvus REST ``Authorization`` header as the rights checker takes it: ``Bearer user:password`` and
    ``Basic base64`` become ``base64(user:password)``; ``Bearer <token>`` stays."""
    if not header:
        return None
    scheme, _, credentials = header.strip().partition(" ")
    credentials = credentials.strip()
    if scheme.lower() == "basic" and credentials:
        return credentials
    if scheme.lower() == BEARER_SCHEME.strip().lower() and credentials:
        if ":" in credentials:
            return base64.b64encode(credentials.encode()).decode()
        return BEARER_SCHEME + credentials
    return None


class Credentials:
    """The rights of ``Authorization`` headers: Milvus's forms as the rights checker takes them, checked
    and kept as the gRPC servers keep theirs (:class:`~vecgrid.common.auth.KeptRights`, with its
    ``revision``)."""

    def __init__(self, checker: RightsChecker, revision: Callable[[], int] | None = None) -> None:
        self._kept = KeptRights(checker, revision=revision)

    async def rights(self, header: str | None, peer: str) -> frozenset[str] | None:
        value = authorization_value(header)
        return None if value is None else await self._kept.rights(value, peer)


# --- the actions -----------------------------------------------------------------------------------

@dataclass
class Call:
    """What an action gets: the app's :class:`V2` and the request's :class:`Body`."""

    v2: "V2"
    body: Body


ActionFn = Callable[[Call], Awaitable[Any]]


@dataclass(frozen=True)
class Action:
    right: str
    run: ActionFn


def registry(actions: dict[str, Action]) -> Callable[[str, str], Callable[[ActionFn], ActionFn]]:
    """``@action("name", READ)``: registers an action of a group in ``actions``."""

    def action(name: str, right: str) -> Callable[[ActionFn], ActionFn]:
        def register(fn: ActionFn) -> ActionFn:
            actions[name] = Action(right, fn)
            return fn
        return register

    return action


class V2:
    """What the actions call: the REST app's context (coordinator, proxy, catalog), and the lookups they
    share."""

    def __init__(self, ctx: Any, db: str = "") -> None:
        self.ctx = ctx
        self.coord = ctx.coord
        self.db = db   # the request's database ("" for the default)
        self._databases: dict[str, V2] = {}   # views by database, made on the app's event loop only

    def in_database(self, db: str) -> "V2":
        """The actions' calls for database ``db`` (``""`` or ``default``: the default one)."""
        db = "" if db == DEFAULT_DB_NAME else db
        if db == self.db:
            return self
        if db not in self._databases:
            self._databases[db] = V2(self.ctx, db)
        return self._databases[db]

    @property
    def catalog(self):
        return self.coord.catalog

    @property
    def proxy(self):
        if self.ctx.proxy is None:
            raise errors.ServiceUnimplemented("entities need the coordinator's proxy, which this app was built without")
        return self.ctx.proxy.in_database(self.db)

    async def collection(self, name: str) -> CollectionInfo:
        return await asyncio.to_thread(self.catalog.describe_collection, self.db, name)

    def definitions_changed(self) -> None:
        """A collection, partition or index definition changed: the proxy forgets the kept descriptions
        (as the MilvusService does after every DDL)."""
        if self.ctx.proxy is not None:
            self.ctx.proxy.invalidate_collections()


def _allow_int64(header: str | None) -> bool:
    """Go's ``strconv.ParseBool`` of the header; absent is true (Milvus's server default), unreadable false."""
    if header is None:
        return True
    return header.strip() in ("1", "t", "T", "true", "TRUE", "True")


class MilvusV2Handler(BaseHandler):
    """``POST /v2/vectordb/<group>/<action>`` (see the module doc)."""

    def initialize(self, v2: V2, groups: dict[str, dict[str, Action]], credentials: Credentials | None) -> None:
        self.v2 = v2
        self.groups = groups
        self.credentials = credentials

    async def post(self, group: str, name: str) -> None:
        try:
            data = await self._run(group, name)
        except RestError as e:
            self.send_json({"code": e.code, "message": e.message}, status=e.status)
        except errors.MilvusError as e:
            self.send_json({"code": e.code, "message": str(e)})
        except FeathersError as e:
            code = errors.ParameterInvalid.code if e.code == 400 else UNEXPECTED
            self.send_json({"code": code, "message": e.message})
        except Exception as e:  # noqa: BLE001 - every failure answers the envelope; logged with an id
            self.send_json({"code": UNEXPECTED, "message": self._general_error(e).message})
        else:
            self.send_json({"code": 0, "data": data})

    async def _run(self, group: str, name: str) -> Any:
        action = self.groups.get(group, {}).get(name)
        if action is None:
            known = ", ".join(f"{group}/{a}" for a in sorted(self.groups.get(group, {})))
            raise RestError(404, f"no Milvus RESTful API v2 action {group}/{name}; this server has {known}", 404)
        if self.credentials is not None:
            rights = await self.credentials.rights(self.request.headers.get("Authorization"),
                                                   self.request.remote_ip or "")
            if rights is None:
                raise RestError(NEED_AUTHENTICATE, "user hasn't authenticated", 401)
            if action.right not in rights:
                raise RestError(PRIVILEGE_NOT_PERMITTED, f"privilege not permitted[{group}/{name} needs the "
                                                         f"'{action.right}' right]", 403)
        body = self._body()
        # the databases group names the database it creates, drops or describes: it runs in the default one
        db = "" if group == "databases" else body.get("dbName", str, "") or self.request.headers.get(DB_NAME_HEADER, "")
        v2 = self.v2.in_database(db)
        if v2.db:   # an unknown database: Milvus's database-not-found (800) before anything runs
            await asyncio.to_thread(v2.catalog.describe_database, v2.db)
        return await action.run(Call(v2, body))

    def _body(self) -> Body:
        raw = self.request.body
        if not raw or not raw.strip():
            raise RestError(INCORRECT_PARAMETER_FORMAT, "can only accept json format request, the request body "
                                                        "should be nil, however {} is valid")
        try:
            data = decode_json(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise bad_format(str(e)) from None
        if not isinstance(data, dict):
            raise bad_format(f"the body must be a JSON object, got {type(data).__name__}")
        return Body(data, _allow_int64(self.request.headers.get(ALLOW_INT64_HEADER)))
