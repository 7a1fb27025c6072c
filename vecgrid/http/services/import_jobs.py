"""``import-jobs``: bulk imports of server-side files or ``s3://`` objects (Parquet, ``.npy`` + Parquet/CSV,
JSON lines), as ``vecgrid import`` does them (``rest-api.md``).

``create {collection, files, partition?, options?}`` checks the files (a file outside the import roots —
the data dir's ``imports/`` folder and ``[datacoord] import_roots`` — is a 403 Forbidden; a missing file
or an unknown layout is a 400; either way no job) and answers the job at once (201); the import runs in
the coordinator
(:class:`~vecgrid.cluster.datacoord.imports.ImportJobs`).  ``get`` reports ``state`` (``Pending``,
``Importing``, ``Completed``, ``Failed``, ``Cancelled``), ``progress`` (%), ``totalRows``,
``importedRows`` and ``errors``; ``find`` lists the jobs (``?collection=`` narrows them);
``remove`` cancels a pending or running job (nothing of it is published) and answers it.

``options``: ``primaryKey`` (a column to use as primary key when the import creates the collection;
default an auto-id Int64 ``id``), ``metric``, ``index``, ``indexParams``, ``shards`` (for a new
collection), ``segmentRows``, ``segmentMb``.  Jobs are kept in the metadata store: a restarted
coordinator lists them, and reports one it was running as Failed (or Completed, when it had published).
"""

from __future__ import annotations

from typing import Any

from vecgrid.cluster.datacoord.imports import ImportJob, ImportJobs, ImportPathRefused, import_roots
from vecgrid.common.feathers_errors import Forbidden, NotFound
from vecgrid.http.services.collection_common import (READ, WRITE, body, check_keys, json_int, positive_int,
                                                     string_list)
from vecgrid.cluster.datanode.bulk_import import ImportOptions
from vecgrid.http.services.doc_schemas import NAME, NAMES, POSITIVE, answer, obj
from vecgrid.storage.catalog.schema_rules import DEFAULT_DB_NAME, DEFAULT_PARTITION_NAME
from vecgrid.storage.layout import DataDir

_OPTION_KEYS = {"primaryKey": str, "metric": str, "index": str, "indexParams": dict, "shards": int,
                "segmentRows": int, "segmentMb": int}


def job_json(job: ImportJob) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": job.id, "collection": job.options.collection, "partition": job.options.partition,
        "files": list(job.files), "state": job.state, "progress": job.progress, "totalRows": job.total_rows,
        "importedRows": job.imported_rows, "createdAt": job.created_at, "finishedAt": job.finished_at,
        "errors": [] if job.error is None else [{"message": str(job.error), "milvusCode": job.error.code}],
    }
    if job.summary is not None:
        out["collectionId"] = json_int(job.summary["collection_id"])
        out["segments"] = [{"id": json_int(s["segment_id"]), "rows": s["num_rows"], "channel": s["channel"]}
                           for s in job.summary["segments"]]
    return out


class ImportJobsService:
    RIGHTS = {"find": READ, "get": READ, "create": WRITE, "remove": WRITE}
    _JOB = answer({"id": {"type": "string"}, "collection": {"type": "string"}, "partition": {"type": "string"},
                   "files": NAMES, "state": {"enum": ["Pending", "Importing", "Completed", "Failed", "Cancelled"]},
                   "progress": {"type": "number"}, "totalRows": {"type": "integer"},
                   "importedRows": {"type": "integer"}, "errors": {"type": "array"}},
                  ("id", "collection", "files", "state", "progress"))
    OPENAPI = {"tag": "Bulk imports of files under the import roots (Parquet, .npy, JSON rows)", "multi": False,
               "docs": {
        "find": {"summary": "List the import jobs (?collection= narrows them)", "result": {"type": "array", "items": _JOB}},
        "get": {"summary": "An import job's state and progress", "result": _JOB},
        "create": {"summary": "Start an import job (answers at once, state Pending)", "errors": [403],
                   "data": obj({"collection": NAME, "files": NAMES, "partition": {"type": "string"},
                                "options": obj({"primaryKey": {"type": "string"}, "metric": {"type": "string"},
                                                "index": {"type": "string"}, "indexParams": {"type": "object"},
                                                "shards": POSITIVE, "segmentRows": POSITIVE,
                                                "segmentMb": POSITIVE})},
                               ("collection", "files")),
                   "example": {"collection": "demo", "files": ["./data/imports/rows.parquet"]}, "result": _JOB},
        "remove": {"summary": "Cancel a pending or running job (nothing of it is published)", "result": _JOB},
    }}

    def __init__(self, jobs: ImportJobs) -> None:
        self.jobs = jobs

    def _job(self, id: str) -> ImportJob:  # noqa: A002
        job = self.jobs.lookup(id) if id is not None else None
        if job is None:
            raise NotFound(f"No import job with id '{id}'")
        return job

    async def find(self, params: dict) -> list[dict[str, Any]]:
        query = params.get("query") or {}
        collection = query.get("collection")
        return [job_json(j) for j in self.jobs.list(collection if isinstance(collection, str) else None)]

    async def get(self, id: str, params: dict) -> dict[str, Any]:  # noqa: A002
        return job_json(self._job(id))

    async def create(self, data: Any, params: dict) -> dict[str, Any]:
        data = body(data, "create")
        check_keys(data, {"collection": str, "files": list, "partition": str, "options": dict}, "import job",
                   required=("collection", "files"))
        files = string_list(data, "files", "import job")
        options = data.get("options") or {}
        check_keys(options, _OPTION_KEYS, "import options")
        opts = ImportOptions(collection=data["collection"], db_name=DEFAULT_DB_NAME,
                             partition=data.get("partition") or DEFAULT_PARTITION_NAME,
                             primary_key=options.get("primaryKey"), metric=options.get("metric") or "L2",
                             index=options.get("index") or "FLAT", index_params=options.get("indexParams") or {},
                             shards=positive_int(options, "shards", "import options", 1),
                             segment_rows=positive_int(options, "segmentRows", "import options", 1_000_000),
                             segment_bytes=positive_int(options, "segmentMb", "import options", 512) * 1024 * 1024)
        try:
            return job_json(await self.jobs.submit(files, opts))
        except ImportPathRefused as e:
            # not a malformed request: the server will not read there, for any role
            raise Forbidden(e.detail, data={"milvusCode": e.code, "retriable": False}) from None

    async def remove(self, id: str, params: dict) -> dict[str, Any]:  # noqa: A002
        return job_json(await self.jobs.cancel(self._job(id)))


def import_jobs_of(ctx) -> ImportJobs:
    """The coordinator's job table: ``ctx.extras["import_jobs"]`` or a DataCoord part when the deployment
    made one (and stops it), else one over the coordinator's catalog, made here once."""
    jobs = ctx.extras.get("import_jobs")
    if jobs is None and ctx.datacoord is not None:
        jobs = next((part for part in ctx.datacoord.parts if isinstance(part, ImportJobs)), None)
    if jobs is None:
        settings = ctx.settings or ctx.coord.settings
        pull = ctx.datacoord.flush_policy.pull_target if ctx.datacoord is not None else (lambda cid: None)
        data = DataDir.of(settings)
        jobs = ctx.extras["import_jobs"] = ImportJobs(ctx.coord.catalog, data.segment_root, pull_target=pull,
                                                      roots=import_roots(settings), wal_root=data.wal_root)
    return jobs


def mount(api, ctx) -> None:
    api.use("import-jobs", ImportJobsService(import_jobs_of(ctx)), {"methods": ["find", "get", "create", "remove"]})
