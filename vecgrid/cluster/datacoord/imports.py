"""Bulk-import jobs of the coordinator: ``vecgrid import``'s machinery, started by a request, watched and
cancelled while it runs (Milvus's DataCoord ImportV2 jobs: ``Pending`` → ``Importing`` → ``Completed`` /
``Failed``, plus ``Cancelled``).

:meth:`ImportJobs.submit` checks that every file lies under an **import root** (below), opens the files
(a missing file or an unknown layout is refused at once, and nothing is registered) and answers the job
at once; the import itself runs in a worker thread through the coordinator's own catalog
(:func:`vecgrid.cluster.datanode.bulk_import.import_sources`: all or nothing).  Jobs run one at a time in
submission order: two imports creating the same collection from their files would otherwise race.  A
finished import asks the QueryCoord for a next target of its collection (through ``pull_target``) so a
loaded collection serves the new segments at once.

**Import roots.**  A request names files on the coordinator's host or in an object store, so without a
limit any API user could make the coordinator read any file it can read (its configuration, keys, other
tenants' data).  Only files under the roots are read: the data dir's ``imports/`` folder (always: a
place that exists on every deployment, inside what the coordinator owns anyway) and whatever
``[datacoord] import_roots`` adds (local directories, ``s3://bucket/prefix``).  Local paths are resolved
(symlinks, ``..``) before the check, so a link inside a root pointing elsewhere is refused; an S3 key is
checked as the store will read it.  ``vecgrid import`` on the command line is the operator's own and is
not limited.

**Persistence.**  Every job is a JSON record in the metadata store (``datacoord-meta/import-job/<id>``,
beside Milvus's own key of that name), written when it is submitted, starts, and finishes, so a
restarted coordinator still lists its jobs.  The import reserves its segments (Importing) under the
lease ``import-job-<id>`` before writing them (:mod:`vecgrid.cluster.datanode.bulk_import`); a collection it
creates is recorded at once (``datacoord-meta/import-created/<id>``), and just before it publishes its
segments (one catalog transaction) their ids are recorded too (``datacoord-meta/import-publishing/<id>``).
A restarted coordinator that finds a job still ``Pending`` or ``Importing`` settles it once, without
running anything again: if its recorded segments were published the job is ``Completed``; otherwise
nothing of it was published and it is ``Failed`` with a reason saying the coordinator stopped.  Then
its lease is released, so its reservations are Dropped at once (their files go a garbage-collection
retention later), and a collection it created is dropped again if nothing else was written to it
since: no segment but the job's, no channel checkpoint and, where the WAL is known (``wal_root``), no
insert or delete in its channels' logs; otherwise it is kept.  The reason says which.  A coordinator
that stops cleanly fails its running jobs as a restart would (and undoes them at once, as a failed
import does).

Who owns what: the job table and every :class:`ImportJob` field are owned by the event loop that calls
:meth:`submit` (the coordinator's); the worker thread reports progress only through
``loop.call_soon_threadsafe``, reads only the job's ``cancel`` event (a ``threading.Event``) and writes
only the job's publishing record.  The store is thread-safe; records are written from worker threads
(``asyncio.to_thread``) awaited by the job's own task, so one job's writes land in order.  ``_unsaved``
(records whose write failed, retried with every later write and reported by :meth:`health_problems`)
and ``_recovered`` (the recorded jobs were loaded) belong to the loop too.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import itertools
import json
import logging
import os
import posixpath
import threading
import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from vecgrid import errors
from vecgrid.config import ConfigError, Settings
from vecgrid.cluster.datanode.bulk_import import ImportOptions, check_options, import_sources
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.catalog.schema_rules import validate_name
from vecgrid.proto import common_pb2
from vecgrid.cluster.datanode.import_sources import URL_SCHEMES, Sources, open_sources, url_scheme
from vecgrid.storage.wal import MessageKind, Wal

log = logging.getLogger(__name__)

PENDING, IMPORTING, COMPLETED, FAILED, CANCELLED = "Pending", "Importing", "Completed", "Failed", "Cancelled"
FINISHED = (COMPLETED, FAILED, CANCELLED)
KEEP_FINISHED = 1000   # finished jobs remembered; the oldest are forgotten first (and their records deleted)
IMPORTS_DIR = "imports"   # under the data dir: always an import root
JOB_PREFIX = "datacoord-meta/import-job/"
PUBLISHING_PREFIX = "datacoord-meta/import-publishing/"
CREATED_PREFIX = "datacoord-meta/import-created/"


def lease_id(job_id: str) -> str:
    """The lease a job's import reserves its segments under (:mod:`vecgrid.storage.catalog.import_leases`)."""
    return f"import-job-{job_id}"


class ImportPathRefused(errors.ParameterInvalid):
    """A file outside the import roots (the REST service answers 403 Forbidden)."""


# --- import roots ------------------------------------------------------------------------------------

def import_roots(settings: Settings) -> list[str]:
    """The data dir's ``imports/`` folder, then ``[datacoord] import_roots`` (comma-separated)."""
    configured = [root.strip() for root in settings.datacoord.import_roots.split(",") if root.strip()]
    return [os.path.join(settings.common.data_dir, IMPORTS_DIR), *configured]


def _split_s3(url: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` → ``("bucket", "a/b")`` (s3a:// is the same store)."""
    bucket, _, key = url.split("://", 1)[1].partition("/")
    return bucket, key


class ImportRoots:
    """Where import jobs may read (see the module doc); read-only after ``__init__``."""

    def __init__(self, roots: Iterable[str]) -> None:
        self.given = list(roots)
        self.local: list[str] = []
        self.s3: list[tuple[str, str]] = []
        for root in self.given:
            scheme = url_scheme(root)
            if scheme is None:
                self.local.append(os.path.realpath(root))
            elif scheme in URL_SCHEMES:
                bucket, prefix = _split_s3(root)
                if not bucket:
                    raise ConfigError(f"datacoord.import_roots: {root!r} names no bucket")
                self.s3.append((bucket, posixpath.normpath(prefix).strip("/") if prefix.strip("/") else ""))
            else:
                raise ConfigError(f"datacoord.import_roots: {root!r} is neither a local directory "
                                  "nor s3://bucket/prefix")

    def resolve(self, path: str) -> str:
        """What to open for ``path``: its real path (local) or its URL; refused unless under a root."""
        scheme = url_scheme(path)
        if scheme is None:
            real = os.path.realpath(path)
            if any(os.path.commonpath([real, root]) == root for root in self.local):
                return real
            raise self._refused(path)
        if scheme not in URL_SCHEMES:
            raise errors.ParameterInvalid(f"input file {path}: only local paths and s3:// URLs can be imported")
        bucket, key = _split_s3(path)
        plain = posixpath.normpath("/" + key).lstrip("/")   # how "..", "." and "//" would read
        if not any(bucket == b and (not prefix or plain == prefix or plain.startswith(prefix + "/"))
                   for b, prefix in self.s3):
            raise self._refused(path)
        if plain != key:
            raise errors.ParameterInvalid(f"input file {path}: write the key without '.', '..' or empty parts")
        return path

    def _refused(self, path: str) -> ImportPathRefused:
        return ImportPathRefused(f"input file {path} is outside the folders import jobs may read "
                                 f"({', '.join(self.given)}); put it there, or add its folder to "
                                 "[datacoord] import_roots")


# --- jobs --------------------------------------------------------------------------------------------

@dataclass
class ImportJob:
    id: str
    files: list[str]
    options: ImportOptions
    total_rows: int
    state: str = PENDING
    imported_rows: int = 0
    error: errors.MilvusError | None = None
    summary: dict[str, Any] | None = None
    created_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    task: asyncio.Task | None = None

    @property
    def progress(self) -> int:
        """Percent: rows read so far over the files' rows (100 only once published)."""
        if self.state == COMPLETED:
            return 100
        if not self.total_rows:
            return 0
        return min(99, self.imported_rows * 100 // self.total_rows)

    def record(self) -> dict[str, Any]:
        """What the metadata store keeps of the job."""
        return {"id": self.id, "files": self.files, "options": dataclasses.asdict(self.options),
                "totalRows": self.total_rows, "state": self.state, "importedRows": self.imported_rows,
                "error": None if self.error is None else {"code": self.error.code, "message": str(self.error)},
                "summary": self.summary, "createdAt": self.created_at, "finishedAt": self.finished_at}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "ImportJob":
        error = record["error"]
        return cls(id=record["id"], files=record["files"], options=ImportOptions(**record["options"]),
                   total_rows=record["totalRows"], state=record["state"], imported_rows=record["importedRows"],
                   error=None if error is None else errors.from_remote(error["code"], error["message"]),
                   summary=record["summary"], created_at=record["createdAt"], finished_at=record["finishedAt"])


def _encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class ImportJobs:
    """The coordinator's import jobs (see the module doc).  ``pull_target(collection_id)`` tells the
    QueryCoord that segments were published (a no-op for a collection that is not loaded); ``roots``
    are where jobs may read (:func:`import_roots`); ``wal_root``: the DML channels' logs, read after a
    restart to tell whether a collection a dead job created was written to (None: unknown, and such a
    collection is kept)."""

    def __init__(self, catalog: Catalog, segment_root: str,
                 pull_target: Callable[[int], None] = lambda collection_id: None, *, roots: Iterable[str],
                 wal_root: str | Path | None = None) -> None:
        self.catalog, self.segment_root, self.pull_target = catalog, segment_root, pull_target
        self.wal_root = None if wal_root is None else str(wal_root)
        self.roots = ImportRoots(roots)
        self._recovered = False
        self._jobs: dict[str, ImportJob] = {}
        self._finished: collections.deque[str] = collections.deque()
        self._unsaved: dict[str, str] = {}   # job id → why its last record write failed
        self._turn = asyncio.Lock()
        self._numbers = itertools.count(1)
        self._stopping = False

    @property
    def store(self):
        return self.catalog.store

    def start(self) -> None:
        """Load the recorded jobs (module doc); nothing runs until a job is submitted.  A table that is
        never started (the REST service's own, without a DataCoord) loads them on its first request."""
        self._recover()

    async def stop(self) -> None:
        """Stop every job and wait for their threads: nothing is left half-written; each is recorded
        Failed (the coordinator stopped), as a restart would find it."""
        self._stopping = True
        running = [job for job in self._jobs.values() if job.task is not None and not job.task.done()]
        for job in running:
            job.cancel.set()
            if job.state == PENDING:
                job.task.cancel()
        await asyncio.gather(*(job.task for job in running), return_exceptions=True)

    def health_problems(self) -> list[str]:
        return [f"import job {job_id}: its record could not be saved: {why}" for job_id, why in self._unsaved.items()]

    # --- requests -------------------------------------------------------------------------------

    async def submit(self, files: list[str], options: ImportOptions) -> ImportJob:
        """Check the files and options, register the job, start it; answers at once."""
        if self._stopping:
            raise errors.ServiceNotReady("the coordinator is stopping")
        if not isinstance(files, list) or not files or not all(isinstance(f, str) and f for f in files):
            raise errors.ParameterInvalid("files must be a non-empty list of file paths")
        check_options(options)
        validate_name("collection", options.collection)
        validate_name("partition", options.partition)
        self._recover()
        readable = [self.roots.resolve(path) for path in files]
        sources = await asyncio.to_thread(open_sources, readable)
        job = ImportJob(id=f"{time.time_ns()}-{next(self._numbers)}", files=list(files), options=options,
                        total_rows=sources.num_rows)
        await asyncio.to_thread(self.store.put, JOB_PREFIX + job.id, _encode(job.record()))
        self._jobs[job.id] = job
        job.task = asyncio.create_task(self._run(job, sources), name=f"import-job-{job.id}")
        return job

    def lookup(self, job_id: str) -> ImportJob | None:
        self._recover()
        return self._jobs.get(job_id)

    def list(self, collection: str | None = None) -> list[ImportJob]:
        self._recover()
        return [j for j in self._jobs.values() if collection is None or j.options.collection == collection]

    async def cancel(self, job: ImportJob) -> ImportJob:
        """Cancel a pending or running job and wait until it has undone its work; a finished job is
        answered as it is."""
        if job.state in FINISHED:
            return job
        job.cancel.set()
        if job.state == PENDING:
            job.task.cancel()   # it waits for its turn: stop waiting (its thread has not started)
        await asyncio.gather(asyncio.shield(job.task), return_exceptions=True)
        return job

    # --- the job --------------------------------------------------------------------------------

    async def _run(self, job: ImportJob, sources: Sources) -> None:
        loop = asyncio.get_running_loop()

        def advance(rows: int) -> None:
            job.imported_rows += rows

        def before_publish(segments: list[dict[str, Any]]) -> None:   # the worker thread
            self.store.put(PUBLISHING_PREFIX + job.id, _encode(segments))

        def created(collection_id: int) -> None:   # the worker thread
            self.store.put(CREATED_PREFIX + job.id, _encode({"collection_id": collection_id}))

        try:
            try:
                await self._turn.acquire()
            except asyncio.CancelledError:
                if not job.cancel.is_set():
                    raise   # the loop is going away, not a cancelled job
                raise errors.Canceled("the import was cancelled before it started") from None
            try:
                if job.cancel.is_set():
                    raise errors.Canceled("the import was cancelled before it started")
                job.state = IMPORTING
                await self._save(job)
                job.summary = await asyncio.to_thread(
                    import_sources, self.catalog, self.segment_root, sources, job.options,
                    progress=lambda rows: loop.call_soon_threadsafe(advance, rows), cancelled=job.cancel.is_set,
                    before_publish=before_publish, created=created, lease_id=lease_id(job.id))
            finally:
                self._turn.release()
            job.imported_rows = job.summary["num_rows"]
            job.state = COMPLETED
            self.pull_target(job.summary["collection_id"])
        except errors.Canceled as e:
            if self._stopping:
                job.state, job.error = FAILED, errors.ServiceNotReady(
                    f"the coordinator stopped while the import {'ran' if job.state == IMPORTING else 'waited'}; "
                    "nothing of it was published; submit it again")
            else:
                job.state, job.error = CANCELLED, e
        except errors.MilvusError as e:
            job.state, job.error = FAILED, e
        except Exception as e:  # noqa: BLE001 - reported on the job: a failed import is an answer, not a crash
            log.exception("import job %s failed", job.id)
            job.state, job.error = FAILED, errors.ServiceInternal(f"import failed: {e}")
        finally:
            job.finished_at = time.time()
            self._finished.append(job.id)
            forgotten = []
            while len(self._finished) > KEEP_FINISHED:
                forgotten.append(self._finished.popleft())
                self._jobs.pop(forgotten[-1], None)
            await self._save(job, forgotten)

    async def _save(self, job: ImportJob, forgotten: Iterable[str] = ()) -> None:
        """Write ``job``'s record (a finished job's publishing record goes; forgotten jobs' records go).
        A failed write is kept in ``_unsaved`` (unhealthy) and tried again with the next one."""
        records = {job_id: self._jobs[job_id].record() for job_id in self._unsaved if job_id in self._jobs}
        records[job.id] = job.record()
        gone = list(forgotten)

        def write() -> None:
            with self.store.txn() as txn:
                for job_id, record in records.items():
                    txn.put(JOB_PREFIX + job_id, _encode(record))
                    if record["state"] in FINISHED:
                        txn.delete(PUBLISHING_PREFIX + job_id)
                        txn.delete(CREATED_PREFIX + job_id)
                for job_id in gone:
                    txn.delete(JOB_PREFIX + job_id)
                    txn.delete(PUBLISHING_PREFIX + job_id)
                    txn.delete(CREATED_PREFIX + job_id)
        try:
            await asyncio.to_thread(write)
        except Exception as e:  # noqa: BLE001 - kept, reported by health_problems, retried with the next write
            log.exception("import job %s: its record could not be saved", job.id)
            self._unsaved.update({job_id: str(e) for job_id in records})
            return
        self._unsaved.clear()

    # --- after a restart --------------------------------------------------------------------------

    def _recover(self) -> None:
        """Load the recorded jobs, once; settle those a stopped coordinator left unfinished (module doc)."""
        if self._recovered:
            return
        publishing = {key[len(PUBLISHING_PREFIX):]: json.loads(raw) for key, raw in self.store.scan(PUBLISHING_PREFIX)}
        created = {key[len(CREATED_PREFIX):]: json.loads(raw)["collection_id"]
                   for key, raw in self.store.scan(CREATED_PREFIX)}
        jobs = sorted((ImportJob.from_record(json.loads(raw)) for _, raw in self.store.scan(JOB_PREFIX)),
                      key=lambda j: (j.created_at, j.id))
        for job in jobs:
            if job.state not in FINISHED:
                self._settle(job, publishing.get(job.id), created.get(job.id))
                with self.store.txn() as txn:
                    txn.put(JOB_PREFIX + job.id, _encode(job.record()))
                    txn.delete(PUBLISHING_PREFIX + job.id)
                    txn.delete(CREATED_PREFIX + job.id)
            self._jobs[job.id] = job
            self._finished.append(job.id)
        for job_id in set(publishing) - set(self._jobs):
            self.store.delete(PUBLISHING_PREFIX + job_id)
        for job_id in set(created) - set(self._jobs):
            self.store.delete(CREATED_PREFIX + job_id)
        self._recovered = True

    def _settle(self, job: ImportJob, segments: list[dict[str, Any]] | None, created: int | None) -> None:
        job.finished_at = time.time()
        published = bool(segments) and self._published(segments)
        # published: nothing is left Importing and the lease just goes; else its reservations are Dropped
        self.catalog.release_import_lease(lease_id(job.id))
        if published:
            collection_id = self.catalog.get_segment(segments[0]["segment_id"]).collectionID
            rows = sum(s["num_rows"] for s in segments)
            job.state, job.imported_rows = COMPLETED, rows
            job.summary = {"collection_id": collection_id, "num_rows": rows, "segments": segments}
            log.info("import job %s published before the coordinator stopped: completed", job.id)
            return
        stage = "before it started" if job.state == PENDING else "while it ran"
        job.state = FAILED
        job.error = errors.ServiceNotReady(f"the coordinator stopped {stage}; nothing of it was published"
                                           f"{self._undo_created(job, created)}; submit it again")

    def _published(self, segments: list[dict[str, Any]]) -> bool:
        """Whether the import's one publishing transaction happened.  Before it, its segments are
        reserved (Importing), or Dropped with no files named once the reservation was dropped; after
        it, they are Flushed, or Dropped with their binlogs by a compaction since (or purged: then it
        cannot be told, and is taken for not published)."""
        try:
            seg = self.catalog.get_segment(segments[0]["segment_id"])
        except errors.SegmentNotFound:
            return False
        return seg.state == common_pb2.Flushed or (seg.state == common_pb2.Dropped and len(seg.binlogs) > 0)

    def _undo_created(self, job: ImportJob, collection_id: int | None) -> str:
        """Drop the collection a dead job created if nothing else was written to it (module doc); the
        words the job's reason gets about it."""
        if collection_id is None:
            return ""
        try:
            coll = self.catalog.get_collection(collection_id)
        except errors.CollectionNotFound:
            return ""
        why_kept = self._written_to(coll)
        if why_kept:
            log.info("import job %s: keeping collection %r it created: %s", job.id, coll.name, why_kept)
            return f"; the collection {coll.name!r} it created was kept: {why_kept}"
        self.catalog.drop_collection(coll.db_name or "default", coll.name)
        log.info("import job %s: dropped the empty collection %r it created", job.id, coll.name)
        return f"; the collection {coll.name!r} it created was dropped again (nothing was written to it)"

    def _written_to(self, coll) -> str:
        """Why ``coll`` may hold rows not the job's ('' when nothing was written to it)."""
        if any(s.state != common_pb2.Dropped for s in self.catalog.list_segments(coll.id)):
            return "it has segments"
        if self.catalog.channel_checkpoints(coll.id):
            return "its channels were flushed or consumed"
        if self.wal_root is None:
            return "its channels' logs could not be checked for rows"
        wal = Wal(self.wal_root)
        for channel in coll.vchannels:
            if not os.path.isdir(wal.channel_dir(channel)):
                continue
            with wal.open_reader(channel, "earliest") as reader:
                while (record := reader.read(timeout=0)) is not None:
                    if record.kind in (MessageKind.INSERT, MessageKind.DELETE):
                        return f"its channel {channel} holds inserts or deletes"
        return ""
