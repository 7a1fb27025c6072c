"""``import-jobs`` over real HTTP: a job answers at once and runs ``vecgrid import``'s machinery through the
coordinator's catalog; bad requests create no job and write nothing; a cancelled job publishes nothing.
No query node is needed: the service sees only the catalog (the fixture's stand-in coordinator)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
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

    @property
    def imports(self) -> Path:
        """The data dir's ``imports/`` folder: where REST imports may read by default."""
        path = self.root / "data" / "imports"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def parquet(self, name: str, n: int, seed: int = 1, folder: Path | None = None) -> str:
        table, *_ = random_table(n, seed, "pk", False)
        path = (folder or self.imports) / f"{name}.parquet"
        pq.write_table(table, path)
        return str(path)

    async def create(self, data: dict) -> tuple[int, dict]:
        return await self.rest.call("POST", "/import-jobs", data)

    async def finished(self, job_id: str) -> dict:
        async def done():
            code, body = await self.rest.call("GET", f"/import-jobs/{job_id}")
            assert code == 200, body
            return body if body["state"] in ("Completed", "Failed", "Cancelled") else None
        return await poll_until(done, 60, what=f"import job {job_id} to finish")


@contextlib.asynccontextmanager
async def rest_env(tmp_path, store=None, overrides: dict | None = None):
    """A stand-in coordinator over ``tmp_path/data`` (its catalog on ``store`` when given: the same
    metadata store a "restarted" coordinator finds) and the import-jobs service on real HTTP."""
    settings = embedded_settings(tmp_path / "data")
    for key, value in (overrides or {}).items():
        settings.set(key, value)
    data = DataDir(settings.common.data_dir)
    own_store = store is None
    store = data.open_store() if own_store else store
    catalog = data.open_catalog(store)
    ctx = RestContext(coord=SimpleNamespace(catalog=catalog, settings=settings), settings=settings)
    rest = RestServer(ctx, ["import_jobs"])
    try:
        yield Env(rest, catalog, tmp_path, ctx)
    finally:
        await rest.close()
        await ctx.extras["import_jobs"].stop()
        if own_store:
            store.close()


@pytest_asyncio.fixture
async def env(tmp_path):
    async with rest_env(tmp_path) as env:
        yield env


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
                 {"collection": "x", "files": [str(env.imports / "missing.parquet")]},
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
    table, *_ = random_table(20, 3, "pk", False)
    table = table.set_column(0, "pk", pa.array([1] * 20, pa.int64()))   # duplicate primary keys
    path = env.imports / "dups.parquet"
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
    from vecgrid.cluster.datacoord import imports
    from vecgrid.storage import segment_files

    real = imports.import_sources
    written = []
    real_write = segment_files.write_segment

    def write_segment(*args, **kw):
        written.append(args)
        return real_write(*args, **kw)

    monkeypatch.setattr(segment_files, "write_segment", write_segment)

    def cancelled_after_the_first_batch(catalog, root, sources, opts, *, progress, cancelled, **hooks):
        job = next(j for j in env.jobs.list() if j.options.collection == "halfway")

        def progress_then_cancel(rows):
            progress(rows)
            job.cancel.set()
        return real(catalog, root, sources, opts, progress=progress_then_cancel, cancelled=cancelled, **hooks)

    monkeypatch.setattr(imports, "import_sources", cancelled_after_the_first_batch)
    before = catalog_state(env.catalog)
    code, job = await env.rest.call("POST", "/import-jobs", {"collection": "halfway",
                                                             "files": [env.parquet("batches", 300)]})
    assert code == 201
    done = await env.finished(job["id"])
    assert done["state"] == "Cancelled", done
    assert catalog_state(env.catalog) == before
    root = Path(DataDir(str(env.root / "data")).segment_root)
    assert not [p for p in root.rglob("*") if p.is_file() and not p.name.startswith("meta.db")
                and env.imports not in p.parents]
    assert written, "the job was cancelled before it wrote a segment: nothing to undo was tested"


# --- which files a job may read ------------------------------------------------------------------

async def test_only_files_under_the_import_roots_are_read(env):
    """By default only the data dir's ``imports/`` folder: a REST user cannot make the coordinator read
    any file it can read.  Symlinks and ``..`` are resolved before the check."""
    before = catalog_state(env.catalog)
    outside = env.parquet("outside", 10, folder=env.root)
    (env.imports / "link.parquet").symlink_to(outside)
    fine = env.parquet("fine", 10)
    for files in ([outside], [str(env.imports / "link.parquet")], [str(env.imports / ".." / ".." / "outside.parquet")],
                  ["/etc/passwd"], [fine, outside], ["s3://somebucket/rows.parquet"],
                  [str(env.imports) + "-other/rows.parquet"]):
        code, body = await env.create({"collection": "x", "files": files})
        assert (code, body["name"]) == (403, "Forbidden"), (files, body)
        assert "import_roots" in body["message"], body
    for url in ("http://example.com/rows.parquet", "memory://rows.parquet"):
        code, body = await env.create({"collection": "x", "files": [url]})
        assert (code, body["name"]) == (400, "BadRequest"), (url, body)
    assert (await env.rest.call("GET", "/import-jobs"))[1] == []
    assert catalog_state(env.catalog) == before

    (env.imports / "alias.parquet").symlink_to(fine)   # a link that stays inside is fine
    code, job = await env.create({"collection": "x", "files": [str(env.imports / "alias.parquet")]})
    assert code == 201, job
    assert (await env.finished(job["id"]))["state"] == "Completed"


async def test_configured_import_roots_are_allowed_too(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (tmp_path / "shared2").mkdir()
    async with rest_env(tmp_path, overrides={"datacoord.import_roots": f" {shared} , s3://bucket/in"}) as env:
        code, job = await env.create({"collection": "x", "files": [env.parquet("a", 30, folder=shared)]})
        assert code == 201, job
        assert (await env.finished(job["id"]))["importedRows"] == 30
        code, job = await env.create({"collection": "x", "partition": "p",
                                      "files": [env.parquet("b", 20, seed=2)]})
        assert code == 201, job   # imports/ stays allowed beside the configured roots
        assert (await env.finished(job["id"]))["state"] == "Completed"
        code, body = await env.create({"collection": "x", "files": [
            env.parquet("c", 5, folder=tmp_path / "shared2")]})
        assert code == 403, body   # a sibling sharing the name's beginning is not inside


# --- s3:// sources ---------------------------------------------------------------------------------

async def test_files_from_s3(tmp_path):
    """Parquet and JSON lines read from a bucket (moto's server on loopback) with the ``storage.s3_*``
    settings the segment store uses; prefixes outside the roots are refused, a missing object is a 400."""
    import io
    import json

    s3 = pytest.importorskip("tests.s3_support")   # this test only: the others need no S3 packages
    with s3.moto_endpoint() as endpoint:
        bucket = s3.Bucket(endpoint)
        table, pks, vectors, cols = random_table(300, 5, "pk", False)
        sink = io.BytesIO()
        pq.write_table(table.slice(0, 200), sink)
        bucket.put("incoming/rows.parquet", sink.getvalue())
        lines = "".join(json.dumps({"pk": int(pks[i]), "vec": vectors[i].tolist(), "age": int(cols["age"][i]),
                                    "tag": str(cols["tag"][i]), "score": float(cols["score"][i])}) + "\n"
                        for i in range(200, 300))
        bucket.put("incoming/more.jsonl", lines.encode())
        bucket.put("other/rows.parquet", sink.getvalue())
        root = f"s3://{bucket.name}/incoming"
        overrides = {**bucket.credentials(), "datacoord.import_roots": root}
        async with rest_env(tmp_path, overrides=overrides) as env:
            before = catalog_state(env.catalog)
            for files, status in (([f"s3://{bucket.name}/other/rows.parquet"], 403),
                                  ([f"{root}/../other/rows.parquet"], 403),
                                  ([f"{root}/missing.parquet"], 400)):
                code, body = await env.create({"collection": "s3rows", "files": files})
                assert code == status, (files, body)
            assert catalog_state(env.catalog) == before
            code, job = await env.create({"collection": "s3rows", "files": [f"{root}/rows.parquet"],
                                          "options": {"primaryKey": "pk"}})
            assert code == 201, job
            done = await env.finished(job["id"])
            assert (done["state"], done["importedRows"]) == ("Completed", 200), done
            code, job = await env.create({"collection": "s3rows", "files": [f"{root}/more.jsonl"]})
            assert code == 201, job
            done = await env.finished(job["id"])
            assert (done["state"], done["importedRows"]) == ("Completed", 100), done
            coll = env.catalog.describe_collection("default", "s3rows")
            assert env.catalog.flushed_rows(coll.id) == 300
            segments = [env.catalog.segment_files_record(s["id"]) for s in done["segments"]]
            from vecgrid.storage import segment_files
            got = pa.concat_tables([segment_files.read_segment(r) for r in segments]).sort_by("pk")
            assert got.column("pk").to_pylist() == pks[200:].tolist()
            np.testing.assert_array_equal(
                np.asarray(got.column("vec").combine_chunks().flatten().to_numpy()).reshape(100, -1), vectors[200:])


# --- jobs survive a restart ---------------------------------------------------------------------

async def test_finished_jobs_survive_a_restart(tmp_path):
    data = DataDir(str(tmp_path / "data"))
    store = data.open_store()
    try:
        async with rest_env(tmp_path, store) as env:
            code, ok = await env.create({"collection": "kept", "files": [env.parquet("ok", 120)],
                                         "options": {"primaryKey": "pk", "shards": 2}})
            ok = await env.finished(ok["id"])
            table, *_ = random_table(20, 3, "pk", False)
            pq.write_table(table.set_column(0, "pk", pa.array([1] * 20, pa.int64())), env.imports / "dups.parquet")
            code, bad = await env.create({"collection": "dups", "options": {"primaryKey": "pk"},
                                          "files": [str(env.imports / "dups.parquet")]})
            bad = await env.finished(bad["id"])
            async with env.jobs._turn:
                code, cancelled = await env.create({"collection": "never", "files": [env.parquet("c", 5)]})
                code, cancelled = await env.rest.call("DELETE", f"/import-jobs/{cancelled['id']}")
            assert [ok["state"], bad["state"], cancelled["state"]] == ["Completed", "Failed", "Cancelled"]
        async with rest_env(tmp_path, store) as env:   # a restarted coordinator over the same metadata store
            code, listed = await env.rest.call("GET", "/import-jobs")
            assert listed == [ok, bad, cancelled]
            assert (await env.rest.call("GET", f"/import-jobs/{ok['id']}"))[1] == ok
            assert (await env.rest.call("GET", "/import-jobs?collection=dups"))[1] == [bad]
            assert env.catalog.flushed_rows(env.catalog.describe_collection("default", "kept").id) == 120
    finally:
        store.close()


def blocking_import(monkeypatch):
    """``import_sources`` that waits on a gate first: the job stays Importing until the test opens it."""
    from vecgrid.cluster.datacoord import imports

    real = imports.import_sources
    gate, reached = threading.Event(), threading.Event()

    def blocked(*args, **kw):
        reached.set()
        assert gate.wait(120), "the test never opened the gate"
        return real(*args, **kw)

    monkeypatch.setattr(imports, "import_sources", blocked)
    return gate, reached


async def test_jobs_that_were_running_when_the_coordinator_died_are_reported_failed(tmp_path, monkeypatch):
    gate, reached = blocking_import(monkeypatch)
    data = DataDir(str(tmp_path / "data"))
    store = data.open_store()
    try:
        async with rest_env(tmp_path, store) as old:
            try:
                code, running = await old.create({"collection": "r", "files": [old.parquet("r", 50)]})
                code, pending = await old.create({"collection": "p", "files": [old.parquet("p", 50)]})
                await poll_until(reached.is_set, 30, what="the first job to start importing")
                assert (await old.rest.call("GET", f"/import-jobs/{pending['id']}"))[1]["state"] == "Pending"
                before = catalog_state(old.catalog)
                # the old coordinator is gone (its process would be): a new one opens the same store
                async with rest_env(tmp_path, store) as new:
                    code, listed = await new.rest.call("GET", "/import-jobs")
                    assert [(j["id"], j["state"]) for j in listed] == [(running["id"], "Failed"),
                                                                       (pending["id"], "Failed")]
                    for job in listed:
                        assert "coordinator" in job["errors"][0]["message"], job
                        assert job["finishedAt"] is not None and job["progress"] < 100
                    assert "before it started" in listed[1]["errors"][0]["message"]
                    assert catalog_state(new.catalog) == before
            finally:
                gate.set()
    finally:
        store.close()


async def test_a_job_that_published_before_the_coordinator_died_is_reported_completed(tmp_path, monkeypatch):
    """The segments were published (one catalog transaction) but the job's record still said Importing:
    the new coordinator finds the segments and reports the job Completed, and runs nothing again."""
    published, gate = threading.Event(), threading.Event()
    data = DataDir(str(tmp_path / "data"))
    store = data.open_store()
    try:
        async with rest_env(tmp_path, store) as old:
            real_publish = old.catalog.publish_segment_records

            def publish_then_die(items):
                out = real_publish(items)
                published.set()
                assert gate.wait(120), "the test never opened the gate"
                return out

            monkeypatch.setattr(old.catalog, "publish_segment_records", publish_then_die)
            try:
                code, job = await old.create({"collection": "pub", "files": [old.parquet("pub", 80)],
                                              "options": {"primaryKey": "pk", "shards": 2}})
                await poll_until(published.is_set, 60, what="the job to publish")
                async with rest_env(tmp_path, store) as new:
                    code, body = await new.rest.call("GET", f"/import-jobs/{job['id']}")
                    assert (body["state"], body["progress"], body["importedRows"], body["errors"]) == (
                        "Completed", 100, 80, [])
                    assert sum(s["rows"] for s in body["segments"]) == 80
                    assert new.catalog.flushed_rows(new.catalog.describe_collection("default", "pub").id) == 80
            finally:
                gate.set()
            await old.finished(job["id"])
        async with rest_env(tmp_path, store) as again:
            code, body = await again.rest.call("GET", f"/import-jobs/{job['id']}")
            assert body["state"] == "Completed"
            assert again.catalog.flushed_rows(again.catalog.describe_collection("default", "pub").id) == 80
    finally:
        store.close()


@pytest.mark.parametrize("written", [False, True], ids=["empty", "holding-rows"])
async def test_a_job_that_died_after_creating_its_collection_drops_it_unless_it_holds_data(
        tmp_path, monkeypatch, written):
    """The coordinator died with the job's files written and reserved, just before publishing: the new
    coordinator settles the job Failed, drops its reservations (their files go a retention later) and
    drops the collection the job created — unless rows were written to it meanwhile; the reason says
    which."""
    from vecgrid.proto import common_pb2
    from vecgrid.storage.wal import MessageKind, Wal

    died, gate = threading.Event(), threading.Event()
    data = DataDir(str(tmp_path / "data"))
    store = data.open_store()
    try:
        async with rest_env(tmp_path, store) as old:
            def die_before_publishing(items):
                died.set()
                assert gate.wait(120), "the test never opened the gate"
                raise RuntimeError("the process is gone")

            monkeypatch.setattr(old.catalog, "publish_segment_records", die_before_publishing)
            try:
                code, job = await old.create({"collection": "orphan", "files": [old.parquet("o", 80)],
                                              "options": {"primaryKey": "pk", "shards": 2, "segmentRows": 30}})
                await poll_until(died.is_set, 60, what="the job to reach its publish")
                coll = old.catalog.describe_collection("default", "orphan")
                reserved = [s.ID for s in old.catalog.list_segments(coll.id)]
                assert reserved and {s.state for s in old.catalog.list_segments(coll.id)} == {common_pb2.Importing}
                if written:   # a client inserted into the new collection while the import ran
                    with Wal(str(data.wal_root)).open_writer(coll.vchannels[0]) as writer:
                        writer.append(MessageKind.INSERT, 1, b"rows")
                async with rest_env(tmp_path, store) as new:
                    code, body = await new.rest.call("GET", f"/import-jobs/{job['id']}")
                    assert body["state"] == "Failed"
                    reason = body["errors"][0]["message"]
                    assert "coordinator stopped while it ran" in reason
                    assert new.catalog.import_leases() == {}
                    assert all(new.catalog.get_segment(sid).state == common_pb2.Dropped for sid in reserved)
                    if written:
                        assert new.catalog.has_collection("default", "orphan")
                        assert "'orphan' it created was kept" in reason, reason
                    else:
                        assert not new.catalog.has_collection("default", "orphan")
                        assert "'orphan' it created was dropped" in reason, reason
            finally:
                gate.set()
            await old.finished(job["id"])
    finally:
        store.close()


async def test_a_clean_stop_records_its_running_job_failed(tmp_path, monkeypatch):
    gate, reached = blocking_import(monkeypatch)
    data = DataDir(str(tmp_path / "data"))
    store = data.open_store()
    try:
        async with rest_env(tmp_path, store) as env:
            before = catalog_state(env.catalog)
            code, job = await env.create({"collection": "s", "files": [env.parquet("s", 50)]})
            await poll_until(reached.is_set, 30, what="the job to start importing")
            stopping = asyncio.create_task(env.jobs.stop())
            gate.set()
            await stopping
            assert env.jobs.lookup(job["id"]).state == "Failed"
            assert catalog_state(env.catalog) == before
        async with rest_env(tmp_path, store) as env:
            code, body = await env.rest.call("GET", f"/import-jobs/{job['id']}")
            assert body["state"] == "Failed"
            assert "coordinator stopped while the import ran" in body["errors"][0]["message"]
            assert body["errors"][0]["milvusCode"] == 1   # service not ready: retriable by submitting again
    finally:
        gate.set()
        store.close()


async def test_import_roots_that_cannot_be_used_stop_the_start():
    from vecgrid.cluster.datacoord.imports import ImportRoots
    from vecgrid.config import ConfigError

    for bad in ("http://example.com/in", "s3:///prefix"):
        with pytest.raises(ConfigError, match="import_roots"):
            ImportRoots([bad])
    roots = ImportRoots(["/srv/in/../in", "s3://b/p/"])
    assert roots.resolve("/srv/in/x.parquet") == "/srv/in/x.parquet"
    assert roots.resolve("s3a://b/p/q/x.jsonl") == "s3a://b/p/q/x.jsonl"
    for outside in ("/srv/inx/y.parquet", "s3://b/px/x.parquet", "s3://c/p/x.parquet", "/srv/in/../y.parquet"):
        with pytest.raises(Exception, match="outside"):
            roots.resolve(outside)
