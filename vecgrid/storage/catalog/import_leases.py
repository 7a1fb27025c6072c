"""Import leases: the segments a bulk import reserved before writing their files, and the proof that the
import is still alive.

Milvus's DataCoord records an import's segments (state ``Importing``) before any file is written, so its
garbage collector finds every file named, and drops the Importing segments of a job that failed.  Here an
import — in the coordinator's process or in ``vecgrid import`` beside it — opens a lease
(:meth:`~ImportLeaseMeta.open_import_lease`), reserves each segment under it before writing its files
(:meth:`~ImportLeaseMeta.reserve_import_segment`: the Importing record and the lease's longer segment list
in ONE transaction), renews the lease while it runs, publishes (which replaces the Importing records with
Flushed ones, guarded by them: :mod:`.publish`) and releases the lease
(:meth:`~ImportLeaseMeta.release_import_lease`, which drops whatever it still holds Importing: everything
of an import that failed).

A lease not renewed for its ``ttl_s`` (wall-clock seconds: the importer may be another process on
another clock, so keep the ttl well above any clock skew) is stale: its owner was killed or hangs.
:meth:`~ImportLeaseMeta.expire_import_leases` (the garbage collector, every sweep) drops its Importing
segments and deletes it in one transaction guarded by the lease as read, so a renewal landing in between
wins.  The Dropped segments' files then go as any Dropped segment's, a retention later.  A renewal or a
reservation that finds its lease gone raises ``ServiceUnavailable``: the import undoes itself (its
publish would be refused anyway, the segments being Dropped).

Record: ``datacoord-meta/import-lease/<lease id>`` → JSON ``{"owner", "ttl_s", "renewed_at", "segments"}``.
Of its segments only those still Importing count; the published ones are ignored.

Who owns what: within a process every write holds ``_lock`` (:mod:`.base`); across processes every change
of a lease is guarded by its bytes as read (``expect``), so an importer and a collector never overwrite
each other.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from vecgrid import errors
from vecgrid.proto import data_coord_pb2

from ..kv import MetaTxnConflictError
from . import keys
from .base import L, S, CatalogBase, encode
from .segments import dropped_writes

_LEASE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")


def _now(now: float | None) -> float:
    return time.time() if now is None else float(now)


def _encode(lease: dict[str, Any]) -> bytes:
    return json.dumps(lease, separators=(",", ":"), sort_keys=True).encode()


def is_stale(lease: dict[str, Any], now: float) -> bool:
    return now - lease["renewed_at"] > lease["ttl_s"]


class ImportLeaseMeta(CatalogBase):
    """Import leases under ``datacoord-meta/import-lease/`` and the Importing segments they hold."""

    def open_import_lease(self, lease_id: str, owner: str, ttl_s: float, *, now: float | None = None) -> None:
        """Open a lease (no segment yet) that stays fresh ``ttl_s`` seconds past each renewal.  ``owner``
        says who holds it (for a person reading the store)."""
        if not isinstance(lease_id, str) or not _LEASE_ID.match(lease_id):
            raise errors.ParameterInvalid(f"import lease id {lease_id!r}: letters, digits and . _ : - only")
        if not ttl_s > 0:
            raise errors.ParameterInvalid(f"an import lease's ttl must be positive, got {ttl_s}")
        lease = {"owner": str(owner), "ttl_s": float(ttl_s), "renewed_at": _now(now), "segments": []}
        if not self._store.compare_and_swap(keys.import_lease_key(lease_id), None, _encode(lease)):
            raise errors.ParameterInvalid(f"import lease {lease_id!r} exists already")

    def import_leases(self) -> dict[str, dict[str, Any]]:
        """Every open lease by id (stale ones included, until expired)."""
        return {key[len(keys.IMPORT_LEASE_PREFIX):]: json.loads(raw)
                for key, raw in self._store.scan(keys.IMPORT_LEASE_PREFIX)}

    def _read_lease(self, lease_id: str) -> tuple[bytes, dict[str, Any]]:
        raw = self._store.get(keys.import_lease_key(lease_id))
        if raw is None:
            raise errors.ServiceUnavailable(
                f"import lease {lease_id!r} is gone: it went unrenewed too long and the garbage collector "
                "dropped what it reserved, or it was released; the import cannot publish")
        return raw, json.loads(raw)

    def reserve_import_segment(self, lease_id: str, collection_id: int, partition_id: int, channel: str, *,
                               now: float | None = None) -> data_coord_pb2.SegmentInfo:
        """Record a new Importing segment under the lease (renewing it), before its files are written."""
        with self._lock:
            while True:
                raw, lease = self._read_lease(lease_id)
                key, seg = self._new_segment_record(collection_id, partition_id, channel, None, S.Importing,
                                                    None, L.L1, 0)
                lease["segments"].append(seg.ID)
                lease["renewed_at"] = _now(now)
                try:
                    with self._store.txn() as t:
                        t.expect(keys.import_lease_key(lease_id), raw)
                        t.put(keys.import_lease_key(lease_id), _encode(lease))
                        t.put(key, encode(seg))
                except MetaTxnConflictError:
                    continue   # expired meanwhile (read again: gone) or changed by its owner elsewhere
                self._segment_keys.put(seg.ID, key)
                return seg

    def renew_import_lease(self, lease_id: str, *, now: float | None = None) -> None:
        """Mark the lease's owner alive; ``ServiceUnavailable`` once the lease is gone."""
        with self._lock:
            while True:
                raw, lease = self._read_lease(lease_id)
                lease["renewed_at"] = _now(now)
                if self._store.compare_and_swap(keys.import_lease_key(lease_id), raw, _encode(lease)):
                    return

    def release_import_lease(self, lease_id: str) -> list[int]:
        """Close the lease: its segments still Importing (not published) become Dropped, in the same
        transaction.  Returns their ids ([] when the lease is gone already)."""
        with self._lock:
            while True:
                raw = self._store.get(keys.import_lease_key(lease_id))
                if raw is None:
                    return []
                try:
                    return self._drop_lease(lease_id, raw)
                except MetaTxnConflictError:
                    continue

    def expire_import_leases(self, *, now: float | None = None) -> list[int]:
        """Release every stale lease (module doc); returns the segments dropped.  A lease renewed since it
        was read stays."""
        wall = _now(now)
        dropped: list[int] = []
        with self._lock:
            for key, raw in self._store.scan(keys.IMPORT_LEASE_PREFIX):
                if not is_stale(json.loads(raw), wall):
                    continue
                try:
                    dropped += self._drop_lease(key[len(keys.IMPORT_LEASE_PREFIX):], raw)
                except MetaTxnConflictError:
                    continue   # renewed (or released) since read: its owner is alive
        return dropped

    def _drop_lease(self, lease_id: str, raw: bytes) -> list[int]:
        """Delete the lease as read (``raw``) and drop its Importing segments, in one guarded transaction."""
        reserved = []
        for sid in json.loads(raw)["segments"]:
            found = self._find_segment(sid)
            if found is not None and found[1].state == S.Importing:
                reserved.append(found)
        with self._store.txn() as t:
            t.expect(keys.import_lease_key(lease_id), raw)
            t.delete(keys.import_lease_key(lease_id))
            for key, value in dropped_writes(reserved):
                t.expect(key, encode(next(seg for k, seg in reserved if k == key)))
                t.put(key, value)
        return [seg.ID for _, seg in reserved]
