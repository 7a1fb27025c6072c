"""Refused access tokens (logged out, or of a removed user), by every door of the cluster and after a restart.

A logout (``DELETE /authentication`` on the coordinator's REST app) records the token's id, and the
removal of a user (``DELETE /users/<id>``) the user's id and the time, in the metadata store before
it answers, so a restarted coordinator still refuses those tokens until they would have expired
anyway.  The query nodes take access tokens too (read methods), so the coordinator sends
each node the whole list: to every node when it changes, and again to any node whose copy differs
(its membership's reconcile, every few seconds: a node that was away, or joined since).  A node
refuses every access token until its first copy arrives.

Servers keep the rights of credentials they checked for a while (:class:`~vecgrid.common.auth.KeptRights`):
:attr:`ClusterRevocations.revision`, raised by every change, makes them check again, so such a
token is refused at once where the change was recorded, and on a node as soon as its copy arrives.

State: owned by the event loop of its process (the coordinator's, or the worker's on a node); the
store is written from a worker thread, before the list changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from vecgrid.http.feathers.authentication import Revocations

if TYPE_CHECKING:
    from vecgrid.storage.kv import MetaStore

#: ``<prefix>jti:<id>`` / ``<prefix>sub:<subject>`` -> ``[cutoff, until]`` (JSON; see Revocations)
REVOKED_PREFIX = "http/revoked/"
#: the layout before removed users were refused: ``<prefix><jti>`` -> the token's ``exp`` (decimal);
#: read once, moved to :data:`REVOKED_PREFIX`
LOGOUTS_PREFIX = "http/revoked_tokens/"


def digest_of(entries: Mapping[str, Sequence[int]]) -> str:
    """What names one list: equal lists, equal digests (a node's copy is compared by it)."""
    return hashlib.sha256(json.dumps(sorted((k, list(v)) for k, v in entries.items())).encode()).hexdigest()[:32]


class ClusterRevocations(Revocations):
    """The coordinator's list (:meth:`load`: kept in the metadata store) or a node's copy of it
    (:meth:`replace` by the coordinator; none yet: every token refused)."""

    def __init__(self) -> None:
        super().__init__()
        self.store: MetaStore | None = None
        self.digest: str | None = None            # None: a node that has no copy yet
        self.listeners: list[Callable[[], None]] = []   # called after each change (the push to the nodes)

    @classmethod
    def load(cls, store: "MetaStore") -> "ClusterRevocations":
        """The coordinator's list, read from ``store`` (entries past their time dropped from it)."""
        out = cls()
        out.store = store
        out._refused = _stored(store)
        out.digest = digest_of(out._refused)
        return out

    async def reload(self) -> None:
        """The coordinator's list again from its store, for what another process wrote there
        (``vecgrid users remove`` on the data dir); the coordinator's membership calls it every round.
        The store is read in a worker thread, off the loop."""
        if self.store is None:
            return
        stored = await asyncio.to_thread(_stored, self.store)
        # a refusal made while the thread read is in the store, maybe not in what it read: refusals are
        # only ever added (and dropped once past their time), so what this process holds stays
        now = int(time.time())
        entries = {**stored, **{k: v for k, v in self._refused.items() if v[1] > now}}
        digest = digest_of(entries)
        if digest != self.digest:
            self._refused = entries
            self._changed(digest)

    def refuses(self, payload: dict) -> bool:
        return self.digest is None or super().refuses(payload)

    async def _refuse(self, key: str, cutoff: int, until: int) -> None:
        now = int(time.time())
        past = [k for k, v in self._refused.items() if v[1] <= now]
        if self.store is not None:   # stored before the change answers: a restart still refuses the tokens
            await asyncio.to_thread(self._write, key, (cutoff, until), past)
        for k in past:
            self._refused.pop(k, None)
        self._refused[key] = (cutoff, until)
        self._changed(digest_of(self._refused))

    def _write(self, key: str, value: tuple[int, int], past: list[str]) -> None:
        assert self.store is not None
        with self.store.txn() as txn:
            for k in past:
                txn.delete(REVOKED_PREFIX + k)
            txn.put(REVOKED_PREFIX + key, json.dumps(list(value)).encode())

    def replace(self, entries: Mapping[str, Sequence[int]], digest: str) -> None:
        """A node's copy of the coordinator's list."""
        if digest == self.digest:
            return
        self._refused = {str(k): (int(v[0]), int(v[1])) for k, v in entries.items()}
        self._changed(digest)

    def _changed(self, digest: str) -> None:
        self.digest = digest
        self.revision += 1
        for listener in self.listeners:
            listener()


def _stored(store: "MetaStore") -> dict[str, tuple[int, int]]:
    """The entries in ``store`` still in their time.  Those past it are deleted from it, and logouts of
    the earlier layout move to this one (a write only when there is one of either)."""
    now = int(time.time())
    out: dict[str, tuple[int, int]] = {}
    past: list[str] = []
    for key, raw in store.scan(REVOKED_PREFIX):
        cutoff, until = json.loads(raw)
        if until > now:
            out[key[len(REVOKED_PREFIX):]] = (int(cutoff), int(until))
        else:
            past.append(key)
    moved = {f"jti:{key[len(LOGOUTS_PREFIX):]}": (0, int(raw)) for key, raw in store.scan(LOGOUTS_PREFIX)}
    if past or moved:
        with store.txn() as txn:
            for key in past:
                txn.delete(key)
            for key, value in moved.items():
                if value[1] > now:
                    txn.put(REVOKED_PREFIX + key, json.dumps(list(value)).encode())
                txn.delete(LOGOUTS_PREFIX + key[len("jti:"):])
        out.update((k, v) for k, v in moved.items() if v[1] > now)
    return out
