"""DataCoord's garbage collector: files nothing names any more are removed, never earlier than a
retention period after they stopped being named, and Dropped segment records are purged.

Milvus's DataCoord ``garbageCollector`` removes the binlogs of Dropped segments once
``dataCoord.gc.dropTolerance`` has passed and no channel checkpoint or target needs them, files
with no meta at all (a failed flush or compaction) after ``missingTolerance``, and index files of
dropped indexes.  Here every ``datacoord.gc_interval_s`` a sweep:

1. lists every file under the root's ``segments/`` (temporary files of writes in flight included);
2. expires the stale import leases (:meth:`Catalog.expire_import_leases`, on the wall clock: the
   importer may be another process): the segments a killed or hung import reserved become Dropped;
3. computes what is **named**: every file of a segment record that is not Dropped (its data and
   delete logs and the files of its live index builds, :meth:`Catalog.segment_files`), every file in
   the directory of a segment an import reserved and still holds (Importing: its files are being
   written, whatever they are called, temporary ones included), and every file of a segment a
   current or next target still names, Dropped or not (targets are QueryCoord state:
   ``segments_in_targets()`` is injected, and called on the event loop);
4. a file not named is *unnamed since* the first sweep that saw it so; it is removed once it stayed
   unnamed for ``datacoord.gc_retention_s``.  A file that is named again (a flush publishing what it
   wrote) is forgotten, and so is one replaced by another file under its name (another size or
   modification time: a node saving an index again where an unnamed one lay).  An index template
   (``segments/<c>/templates/``, see ``vecgrid.cluster.index_templates``) is named while its index
   is live.  So the files of Dropped segments (compaction sources), of failed flush or
   compaction attempts, of index builds of dropped indexes and of overtaken builds all go, and a
   file written just now — by a flush or build in flight — is never removed before the retention
   passed: it is younger than the clock that protects it;
5. purges (``Catalog.purge_segment``) a Dropped segment no target names once it stayed so for the
   retention and none of its files is left.

The clock lives in this process only: a restarted coordinator waits a whole retention again before
removing anything (later, never earlier).  The retention must exceed the longest write that leaves
files unnamed until it publishes (a flush, a compaction); a bulk import names its segments before it
writes them, so it may run for any time, and its files go only once its lease is stale (its
``ttl_s`` after the last renewal) and then a retention more.

Who owns what: the loop runs on the event loop that called :meth:`start`; each round runs
:meth:`sweep` in one worker thread at a time (rounds are sequential), which alone reads and writes
``_unnamed_since`` and ``_dropped_since``.  ``last`` and ``failures`` are written by the sweep and
read by anyone (one reference each).  A file that cannot be removed stays in ``failures`` and is
tried again every round; a round that fails as a whole (the listing, the catalog) is retried at the
next interval.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from vecgrid import errors
from vecgrid.cluster.periodic import Periodic
from vecgrid.config import Settings
from vecgrid.proto import common_pb2
from vecgrid.storage import segment_files
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.layout import DataDir

log = logging.getLogger(__name__)


@dataclass
class Sweep:
    """What one sweep saw and did."""

    files: int = 0                                         # files listed
    unnamed: list[str] = field(default_factory=list)       # unnamed files kept (retention not over)
    removed: list[str] = field(default_factory=list)
    purged: list[int] = field(default_factory=list)        # Dropped segment records purged
    expired: list[int] = field(default_factory=list)       # reserved by imports whose lease went stale: Dropped


class GarbageCollector(Periodic):
    """See the module doc.  ``root``: the segment storage root (default: ``common.data_dir``'s);
    ``clock``: seconds, monotonic; ``wall_clock``: seconds since the epoch, what import leases are
    renewed with (tests pass their own)."""

    name = "garbage collector"

    def __init__(self, catalog: Catalog, settings: Settings, segments_in_targets: Callable[[], set[int]], *,
                 root: str | None = None, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        super().__init__(settings.datacoord.gc_interval_s)
        self.catalog = catalog
        self.segments_in_targets = segments_in_targets
        self.root = root if root is not None else DataDir.of(settings).segment_root
        self.retention_s = settings.datacoord.gc_retention_s
        self._clock = clock
        self._wall_clock = wall_clock
        # path -> (size and time of the file, when a sweep first saw it unnamed)
        self._unnamed_since: dict[str, tuple[tuple[int, float | None], float]] = {}
        self._dropped_since: dict[int, float] = {}    # Dropped segment no target names -> first seen so
        self.last: Sweep | None = None
        self.failures: dict[str, str] = {}            # path -> why its removal failed

    async def round(self) -> None:
        in_targets = set(self.segments_in_targets())
        await asyncio.to_thread(self.sweep, in_targets)

    def sweep(self, in_targets: set[int]) -> Sweep:
        """One pass (blocking); see the module doc.  ``in_targets``: segment ids a current or next
        target names."""
        now = self._clock()
        out = Sweep()
        # listed before the catalog is read: a file published in between is named, not removed
        stored = {f.path: f for f in segment_files.list_stored_files(self.root)}
        # stale leases first: what they reserved is read below as Dropped, no longer as reserved
        out.expired = self.catalog.expire_import_leases(now=self._wall_clock())
        if out.expired:
            log.info("garbage collection dropped %d segment(s) of import(s) whose lease went stale: %s",
                     len(out.expired), out.expired)
        out.files = len(stored)
        located = {p: where for p in stored if (where := segment_files.segment_of_path(p)) is not None}
        by_segment: dict[int, list[str]] = {}
        for path, (_, _, sid) in located.items():
            by_segment.setdefault(sid, []).append(path)
        named, reserved, dropped = self._named({cid for cid, _, _ in located.values()}, in_targets)
        unnamed = [p for p, (_, _, sid) in located.items() if p not in named and sid not in reserved]
        unnamed += self._dead_templates(stored)
        clocks = {}
        for path in unnamed:
            identity = (stored[path].size, stored[path].mtime)
            known = self._unnamed_since.get(path)
            # the clock restarts when another file was written under the name (size or time changed)
            clocks[path] = known if known is not None and known[0] == identity else (identity, now)
        self._unnamed_since = clocks
        self.failures = {p: why for p, why in self.failures.items() if p in clocks}   # gone or named again
        for path in unnamed:
            if now - self._unnamed_since[path][1] < self.retention_s:
                out.unnamed.append(path)
                continue
            try:
                segment_files.remove_stored_file(self.root, path)
            except (OSError, segment_files.SegmentStorageError) as e:
                self.failures[path] = f"{type(e).__name__}: {e}"
                log.warning("garbage collection could not remove %s (tried again next round): %s", path, e)
                continue
            self.failures.pop(path, None)
            del self._unnamed_since[path]
            out.removed.append(path)
            if path in located:
                by_segment[located[path][2]].remove(path)
        self._dropped_since = {sid: self._dropped_since.get(sid, now) for sid in dropped}
        for sid in sorted(dropped):
            if by_segment.get(sid) or now - self._dropped_since[sid] < self.retention_s:
                continue
            if self.catalog.purge_segment(sid):
                out.purged.append(sid)
            del self._dropped_since[sid]
        if out.removed or out.purged:
            log.info("garbage collection removed %d file(s), purged %d dropped segment(s)",
                     len(out.removed), len(out.purged))
        self.last = out
        return out

    def _dead_templates(self, stored: Iterable[str]) -> list[str]:
        """Index templates (``segments/<c>/templates/``) of indexes no longer live: dropped, or their
        collection dropped."""
        live: dict[int, set[int]] = {}
        dead = []
        for path in stored:
            where = segment_files.template_of_path(path)
            if where is None:
                continue
            cid, _, index_id = where
            if cid not in live:
                live[cid] = {i.indexID for i in self.catalog.index_definitions(cid)}
            if index_id not in live[cid]:
                dead.append(path)
        return dead

    def _named(self, stored_collections: set[int], in_targets: set[int]) -> tuple[set[str], set[int], set[int]]:
        """Paths the catalog or a target names, the segments imports reserved (all their files are
        named), and the Dropped segments no target names."""
        collections = stored_collections | {c.id for c in self.catalog.all_collections()}
        named: set[str] = set()
        reserved: set[int] = set()
        dropped: set[int] = set()
        for cid in sorted(collections):
            for seg in self.catalog.list_segments(cid):
                if seg.state == common_pb2.Dropped and seg.ID not in in_targets:
                    dropped.add(seg.ID)
                    continue
                if seg.state == common_pb2.Importing:
                    reserved.add(seg.ID)
                try:
                    named.update(f.path for f in self.catalog.segment_files(seg.ID))
                except errors.SegmentNotFound:
                    continue  # purged since listed
        return named, reserved, dropped
