"""Bulk-import jobs of the coordinator: ``vecgrid import``'s machinery, started by a request, watched and
cancelled while it runs (Milvus's DataCoord ImportV2 jobs: ``Pending`` → ``Importing`` → ``Completed`` /
``Failed``, plus ``Cancelled``).

:meth:`ImportJobs.submit` opens the files (a missing file or an unknown layout is refused at once, and
nothing is registered) and answers the job at once; the import itself runs in a worker thread through
the coordinator's own catalog (:func:`vecgrid.storage.bulk_import.import_sources`: all or nothing).  Jobs
run one at a time in submission order: two imports creating the same collection from their files would
otherwise race.  A finished import asks the QueryCoord for a next target of its collection (through
``pull_target``) so a loaded collection serves the new segments at once.

Who owns what: the job table and every :class:`ImportJob` field are owned by the event loop that calls
:meth:`submit` (the coordinator's); the worker thread reports progress only through
``loop.call_soon_threadsafe`` and reads only the job's ``cancel`` event (a ``threading.Event``).  Jobs live
in memory: a restarted coordinator has none (an import that was running published nothing).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from vecgrid import errors
from vecgrid.storage.bulk_import import ImportOptions, check_options, import_sources
from vecgrid.storage.catalog import Catalog
from vecgrid.storage.catalog.schema_rules import validate_name
from vecgrid.storage.import_sources import Sources, open_sources

log = logging.getLogger(__name__)

PENDING, IMPORTING, COMPLETED, FAILED, CANCELLED = "Pending", "Importing", "Completed", "Failed", "Cancelled"
FINISHED = (COMPLETED, FAILED, CANCELLED)
KEEP_FINISHED = 1000   # finished jobs remembered; the oldest are forgotten first


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


class ImportJobs:
    """The coordinator's import jobs (see the module doc).  ``pull_target(collection_id)`` tells the
    QueryCoord that segments were published (a no-op for a collection that is not loaded)."""

    def __init__(self, catalog: Catalog, segment_root: str,
                 pull_target: Callable[[int], None] = lambda collection_id: None) -> None:
        self.catalog, self.segment_root, self.pull_target = catalog, segment_root, pull_target
        self._jobs: dict[str, ImportJob] = {}
        self._finished: collections.deque[str] = collections.deque()
        self._turn = asyncio.Lock()
        self._numbers = itertools.count(1)
        self._stopping = False

    def start(self) -> None:
        """Nothing runs until a job is submitted (a DataCoord part may be started)."""

    async def stop(self) -> None:
        """Cancel every job and wait for their threads: nothing is left half-written."""
        self._stopping = True
        running = [job for job in self._jobs.values() if job.task is not None and not job.task.done()]
        for job in running:
            job.cancel.set()
        await asyncio.gather(*(job.task for job in running), return_exceptions=True)

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
        sources = await asyncio.to_thread(open_sources, files)
        job = ImportJob(id=f"{time.time_ns()}-{next(self._numbers)}", files=list(files), options=options,
                        total_rows=sources.num_rows)
        self._jobs[job.id] = job
        job.task = asyncio.create_task(self._run(job, sources), name=f"import-job-{job.id}")
        return job

    def lookup(self, job_id: str) -> ImportJob | None:
        return self._jobs.get(job_id)

    def list(self, collection: str | None = None) -> list[ImportJob]:
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
                job.summary = await asyncio.to_thread(
                    import_sources, self.catalog, self.segment_root, sources, job.options,
                    progress=lambda rows: loop.call_soon_threadsafe(advance, rows), cancelled=job.cancel.is_set)
            finally:
                self._turn.release()
            job.imported_rows = job.summary["num_rows"]
            job.state = COMPLETED
            self.pull_target(job.summary["collection_id"])
        except errors.Canceled as e:
            job.state, job.error = CANCELLED, e
        except errors.MilvusError as e:
            job.state, job.error = FAILED, e
        except Exception as e:  # noqa: BLE001 - reported on the job: a failed import is an answer, not a crash
            log.exception("import job %s failed", job.id)
            job.state, job.error = FAILED, errors.ServiceInternal(f"import failed: {e}")
        finally:
            job.finished_at = time.time()
            self._finished.append(job.id)
            while len(self._finished) > KEEP_FINISHED:
                self._jobs.pop(self._finished.popleft(), None)
