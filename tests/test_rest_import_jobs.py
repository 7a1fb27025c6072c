"""``import-jobs`` over real HTTP: a job answers at once and runs ``vecgrid import``'s machinery through the
coordinator's catalog; bad requests create no job and write nothing; a cancelled job publishes nothing.
No query node is needed: the service sees only the catalog (the fixture's stand-in coordinator)."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
import pytest_asyncio

from vecgrid.http.services import RestContext
from vecgrid.storage.layout import DataDir
from tests.conftest import embedded_settings, poll_until
from tests.querynode_support import random_table
from tests.rest_support import RestServer, catalog_state

pytestmark = pytest.mark.asyncio(loop_scope="function")


class Env:
    def __init__(self, rest: RestServer, catalog, root, ctx: RestContext) -> None:
        self.rest, self.catalog, self.root, self.ctx = rest, catalog, root, ctx

    @property
    def jobs(self):
        return self.ctx.extras["import_jobs"]

    def parquet(self, name: str, n: int, seed: int = 1) -> str:
        table, *_ = random_table(n, seed, "pk", False)
        path = self.root / f"{name}.parquet"
        pq.write_table(table, path)
        return str(path)

    async def finished(self, job_id: str) -> dict:
        async def done():
            code, body = await self.rest.call("GET", f"/import-jobs/{job_id}")
            assert code == 200, body
            return body if body["state"] in ("Completed", "Failed", "Cancelled") else None
        return await poll_until(done, 60, what=f"import job {job_id} to finish")


@pytest_asyncio.fixture
async def env(tmp_path):
    settings = embedded_settings(tmp_path / "data")
    data = DataDir(settings.common.data_dir)
    store = data.open_store()
    catalog = data.open_catalog(store)
    ctx = RestContext(coord=SimpleNamespace(catalog=catalog, settings=settings), settings=settings)
    rest = RestServer(ctx, ["import_jobs"])
    try:
        yield Env(rest, catalog, tmp_path, ctx)
    finally:
        await rest.close()
        await ctx.extras["import_jobs"].stop()
        store.close()


async def test_a_job_imports_the_files_into_a_new_collection(env):
    path = env.parquet("rows", 500)
    code, job = await env.rest.call("POST", "/import-jobs", {"collection": "imported", "files": [path],
                                                             "options": {"primaryKey": "pk", "shards": 2,
                                                                         "segmentRows": 200}})
    assert code == 201, job
    assert job["state"] in ("Pending", "Importing", "Completed") and job["totalRows"] == 500
    done = await env.finished(job["id"])
    assert (done["state"], done["progress"], done["importedRows"], done["errors"]) == ("Completed", 100, 500, [])
    assert sum(s["rows"] for s in done["segments"]) == 500
    coll = env.catalog.describe_collection("default", "imported")
    assert env.catalog.flushed_rows(coll.id) == 500 and coll.shards_num == 2
    code, listed = await env.rest.call("GET", "/import-jobs", )
    assert [j["id"] for j in listed] == [job["id"]]
    assert (await env.rest.call("GET", "/import-jobs?collection=other"))[1] == []

    # a second import into the existing collection, into a new partition
    code, job = await env.rest.call("POST", "/import-jobs", {"collection": "imported", "partition": "more",
                                                             "files": [env.parquet("more", 50, seed=2)]})
    assert code == 201, job
    done = await env.finished(job["id"])
    assert done["state"] == "Completed", done
    coll = env.catalog.describe_collection("default", "imported")
    assert env.catalog.flushed_rows(coll.id, coll.partition("more").partitionID) == 50


async def test_bad_requests_create_no_job_and_write_nothing(env):
    before = catalog_state(env.catalog)
    path = env.parquet("ok", 10)
    for data in ({"collection": "x"}, {"files": [path]}, {"collection": "x", "files": []},
                 {"collection": "x", "files": [str(env.root / "missing.parquet")]},
                 {"collection": "x", "files": [path], "options": {"segmentRows": 0}},
                 {"collection": "x", "files": [path], "options": {"colour": 1}},
                 {"collection": "x", "files": path}, {"collection": "1x", "files": [path]},
                 {"collection": "x", "partition": "a-b", "files": [path]}):
        code, body = await env.rest.call("POST", "/import-jobs", data)
        assert code == 400 and body["name"] == "BadRequest", (data, body)
    assert (await env.rest.call("GET", "/import-jobs"))[1] == []
    assert catalog_state(env.catalog) == before
    code, body = await env.rest.call("GET", "/import-jobs/nope")
    assert (code, body["name"]) == (404, "NotFound")
    assert (await env.rest.call("DELETE", "/import-jobs/nope"))[0] == 404


async def test_a_failing_import_reports_why_and_publishes_nothing(env):
    import pyarrow as pa
    table, *_ = random_table(20, 3, "pk", False)
    table = table.set_column(0, "pk", pa.array([1] * 20, pa.int64()))   # duplicate primary keys
    path = env.root / "dups.parquet"
    pq.write_table(table, path)
    before = catalog_state(env.catalog)
    code, job = await env.rest.call("POST", "/import-jobs", {"collection": "dups", "files": [str(path)],
                                                             "options": {"primaryKey": "pk"}})
    assert code == 201, job
    done = await env.finished(job["id"])
    assert done["state"] == "Failed" and "duplicate primary key" in done["errors"][0]["message"]
    assert done["errors"][0]["milvusCode"] == 1100
    assert catalog_state(env.catalog) == before   # the collection it created is dropped again


async def test_remove_cancels_a_job_that_has_not_published(env):
    path = env.parquet("slow", 100)
    before = catalog_state(env.catalog)
    async with env.rest.api.service("import-jobs").service.jobs._turn:   # another import runs meanwhile
        code, job = await env.rest.call("POST", "/import-jobs", {"collection": "cancelled", "files": [path]})
        assert (code, job["state"]) == (201, "Pending")
        code, body = await env.rest.call("DELETE", f"/import-jobs/{job['id']}")
    assert code == 200 and body["state"] == "Cancelled", body
    assert "cancelled" in body["errors"][0]["message"]
    assert catalog_state(env.catalog) == before
    # a finished job is answered as it is
    code, again = await env.rest.call("DELETE", f"/import-jobs/{job['id']}")
    assert (code, again["state"]) == (200, "Cancelled")


async def test_cancelled_while_importing_undoes_everything(env, monkeypatch):
    """Cancelled after its segment files are written, before they are published: the files are deleted
    and the collection the job created is dropped."""
    from pathlib import Path

    from vecgrid.cluster.datacoord import imports
    from vecgrid.storage import segment_files

    real = imports.import_sources
    written = []
    real_write = segment_files.write_segment

    def write_segment(*args, **kw):
        written.append(args)
        return real_write(*args, **kw)

    monkeypatch.setattr(segment_files, "write_segment", write_segment)

    def cancelled_after_the_first_batch(catalog, root, sources, opts, *, progress, cancelled):
        job = next(j for j in env.jobs.list() if j.options.collection == "halfway")

        def progress_then_cancel(rows):
            progress(rows)
            job.cancel.set()
        return real(catalog, root, sources, opts, progress=progress_then_cancel, cancelled=cancelled)

    monkeypatch.setattr(imports, "import_sources", cancelled_after_the_first_batch)
    before = catalog_state(env.catalog)
    code, job = await env.rest.call("POST", "/import-jobs", {"collection": "halfway",
                                                             "files": [env.parquet("batches", 300)]})
    assert code == 201
    done = await env.finished(job["id"])
    assert done["state"] == "Cancelled", done
    assert catalog_state(env.catalog) == before
    root = Path(DataDir(str(env.root / "data")).segment_root)
    assert not [p for p in root.rglob("*") if p.is_file() and not p.name.startswith("meta.db")]
    assert written, "the job was cancelled before it wrote a segment: nothing to undo was tested"
