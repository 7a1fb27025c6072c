"""The DataCoord's explicit jobs by id (flushes, compactions): what GetFlushState and
GetCompactionState read.

A job runs as a task of the event loop; the table keeps the running jobs and the last ``kept`` ended
ones, so a client polling a job's progress still finds it a while after it ended (Milvus keeps its
compaction and flush states for a retention period too).  Owned by the event loop that starts the
jobs: no lock.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any, Coroutine, Generic, Protocol, TypeVar

from vecgrid import errors


class Job(Protocol):
    id: int
    collection_id: int
    task: asyncio.Task | None


J = TypeVar("J", bound=Job)


class JobTable(Generic[J]):
    """Jobs of one kind (``kind`` names it in errors), in the order they started."""

    def __init__(self, kind: str, kept: int) -> None:
        self.kind, self.kept = kind, kept
        self._jobs: collections.OrderedDict[int, J] = collections.OrderedDict()

    def start(self, job: J, run: Coroutine[Any, Any, Any]) -> J:
        """Run ``run`` as ``job``'s task and keep the job; forget the oldest ended jobs past ``kept``."""
        job.task = asyncio.ensure_future(run)
        job.task.add_done_callback(retrieve)
        self._jobs[job.id] = job
        ended = [jid for jid, j in self._jobs.items() if j.task is not None and j.task.done()]
        for jid in ended[:max(0, len(ended) - self.kept)]:
            del self._jobs[jid]
        return job

    def get(self, job_id: int) -> J:
        job = self._jobs.get(job_id)
        if job is None:
            raise errors.ParameterInvalid(f"no {self.kind} {job_id}: the coordinator keeps the last {self.kept} "
                                          f"ended {self.kind}s and the running ones")
        return job

    def newest_first(self, collection_id: int | None = None) -> list[J]:
        """The kept jobs (of one collection), newest first."""
        return [j for j in reversed(self._jobs.values()) if collection_id is None or j.collection_id == collection_id]

    def tasks(self) -> list[asyncio.Task]:
        return [j.task for j in self._jobs.values() if j.task is not None]


def retrieve(task: asyncio.Task) -> None:
    """A task's failure is retrieved: it is kept where it belongs (a job's ``error``, a channel's
    bookkeeping), so a task nobody awaits does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()
