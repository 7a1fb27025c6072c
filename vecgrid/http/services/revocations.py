"""Logged-out access tokens, refused by every door of the cluster and after a restart.

A logout (``DELETE /authentication`` on the coordinator's REST app) records the token's id in the
metadata store before it answers, so a restarted coordinator still refuses the token until it would
have expired anyway.  The query nodes take access tokens too (read methods), so the coordinator sends
each node the whole list: to every node when it changes, and again to any node whose copy differs
(its membership's reconcile, every few seconds: a node that was away, or joined since).  A node
refuses every access token until its first copy arrives.

Servers keep the rights of credentials they checked for a while (:class:`~vecgrid.common.auth.KeptRights`):
:attr:`ClusterRevocations.revision`, raised by every change, makes them check again, so a logged-out
token is refused at once where the logout was recorded, and on a node as soon as its copy arrives.

State: owned by the event loop of its process (the coordinator's, or the worker's on a node); the
store is written from a worker thread, before the list changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import TYPE_CHECKING, Callable, Mapping

from vecgrid.http.feathers.authentication import Revocations

if TYPE_CHECKING:
    from vecgrid.storage.kv import MetaStore

#: ``<prefix><jti>`` -> the token's ``exp`` (decimal)
REVOKED_PREFIX = "http/revoked_tokens/"


def digest_of(entries: Mapping[str, int]) -> str:
    """What names one list: equal lists, equal digests (a node's copy is compared by it)."""
    return hashlib.sha256(json.dumps(sorted(entries.items())).encode()).hexdigest()[:32]


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
        """The coordinator's list, read from ``store`` (expired ids dropped from it)."""
        out = cls()
        out.store = store
        now = int(time.time())
        with store.txn() as txn:
            for key, raw in store.scan(REVOKED_PREFIX):
                if int(raw) > now:
                    out._expiry[key[len(REVOKED_PREFIX):]] = int(raw)
                else:
                    txn.delete(key)
        out.digest = digest_of(out._expiry)
        return out

    def __contains__(self, jti: object) -> bool:
        return self.digest is None or super().__contains__(jti)

    async def add(self, jti: str, exp: int) -> None:
        now = int(time.time())
        expired = [k for k, v in self._expiry.items() if v <= now]
        if self.store is not None:   # stored before the logout answers: a restart still refuses the token
            await asyncio.to_thread(self._write, jti, int(exp), expired)
        for k in expired:
            self._expiry.pop(k, None)
        self._expiry[jti] = int(exp)
        self._changed(digest_of(self._expiry))

    def _write(self, jti: str, exp: int, expired: list[str]) -> None:
        assert self.store is not None
        with self.store.txn() as txn:
            for k in expired:
                txn.delete(REVOKED_PREFIX + k)
            txn.put(REVOKED_PREFIX + jti, str(exp).encode())

    def replace(self, entries: Mapping[str, int], digest: str) -> None:
        """A node's copy of the coordinator's list."""
        if digest == self.digest:
            return
        self._expiry = {str(k): int(v) for k, v in entries.items()}
        self._changed(digest)

    def _changed(self, digest: str) -> None:
        self.digest = digest
        self.revision += 1
        for listener in self.listeners:
            listener()
