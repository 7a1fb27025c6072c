"""`vecgrid collection | partition | index | users --http` as a user runs them: bad input fails in one line with
exit 2 before anything connects (fast lane); against an embedded cluster with auth on (slow) each command
changes what the catalog holds, answers text or one JSON document, and calls with the admin's credentials."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest
import pytest_asyncio

from tests.cli_support import Result, assert_one_line_error, run_in_process

ADMIN, PASSWORD = "admin@example.com", "admin-pass-1"
NOWHERE = ["--http", "http://127.0.0.1:1"]   # nothing listens: a command that connects fails with exit 1


# --- fast: refused before anything connects ----------------------------------------------------------------

@pytest.mark.parametrize("args,fragment", [
    (["collection", "create", "c"], "one of the arguments --dim --schema is required"),
    (["collection", "create", "c", "--dim", "0"], "--dim must be 1 or more"),
    (["collection", "create", "c", "--dim", "4", "--schema", "s.json"], "not allowed with argument --dim"),
    (["collection", "create", "c", "--dim", "4", "--metric", "HAMMING"], "invalid choice: 'HAMMING'"),
    (["collection", "create", "c", "--dim", "4", "--max-length", "9"], "--max-length N (1 or more) goes with"),
    (["collection", "create", "c", "--dim", "4", "--shards", "0"], "--shards must be 1 or more"),
    (["collection", "create", "c", "--schema", "missing.json"], "cannot read --schema missing.json"),
    (["collection", "create", "c", "--schema", "bad.json"], "--schema bad.json is not JSON"),
    (["collection", "create", "c", "--schema", "list.json"], "must hold a JSON object"),
    (["collection", "create", "c", "--schema", "other.json"], "names collection 'other', not 'c'"),
    (["collection", "create", "c", "--schema", "full.json", "--metric", "L2", "--auto-id"],
     "--metric, --auto-id belong to the quick form"),
    (["collection", "rename", "c", "c"], "already has that name"),
    (["collection", "drop"], "the following arguments are required: NAME"),
    (["partition", "create", "c"], "the following arguments are required: PARTITION"),
    (["index", "drop", "c"], "name the index: --field F, --index-name N or both"),
    (["index", "create", "c", "--field", "v", "--params", "[1]"], "--params must be a JSON object"),
    (["users", "list", "--data-dir", "d"], "give --data-dir (the store itself) or --http"),
])
def test_bad_input_is_one_line_and_exit_2(args, fragment, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("{nope")
    (tmp_path / "list.json").write_text("[1]")
    (tmp_path / "other.json").write_text(json.dumps({"name": "other", "schema": {"fields": []}}))
    (tmp_path / "full.json").write_text(json.dumps({"fields": []}))
    result = run_in_process([*args, *NOWHERE, "--coord", "127.0.0.1:1"] if args[0] == "index" else [*args, *NOWHERE],
                            capsys)
    assert_one_line_error(result, fragment)
    assert result.returncode == 2


def test_users_credentials_without_a_coordinator_are_bad_input(capsys, tmp_path):
    result = run_in_process(["users", "list", "--data-dir", str(tmp_path), "--user", ADMIN], capsys)
    assert_one_line_error(result, "--user goes with --http URL")
    assert result.returncode == 2


def test_the_dashboard_page_url_and_link():
    from vecgrid.http.health import _dashboard_link, dashboard_page

    assert dashboard_page("http://10.0.0.5:8787/status") == "http://10.0.0.5:8787/individual-vecgrid"
    assert dashboard_page("https://h/dask/status/") == "https://h/dask/individual-vecgrid"
    assert dashboard_page(None) == "" and dashboard_page("") == ""

    class NoDashboard:   # a scheduler without one: the cached identity lacks the service
        @property
        def dashboard_link(self):
            raise KeyError("dashboard")
    assert _dashboard_link(NoDashboard()) is None


# --- slow: against a cluster ----------------------------------------------------------------------------------

async def vecgrid(*args: str, password: str | None = PASSWORD, stdin: str = "", timeout: float = 120) -> Result:
    """``vecgrid ARGS`` as a child process, the admin's password in its environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("VECGRID_PASSWORD", "VECGRID_TOKEN")}
    if password is not None:
        env["VECGRID_PASSWORD"] = password
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "vecgrid.cli", *args, env=env,
                                                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), timeout)
    return Result(proc.returncode, out.decode(), err.decode())


def answer(result: Result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(tmp_path_factory):
    from vecgrid.deploy import EmbeddedCluster
    from tests.querycoord_support import fast_settings

    root = tmp_path_factory.mktemp("climanage")
    settings = fast_settings(root / "data", workers=1)
    settings.http.auth = "on"
    settings.http.admin_email, settings.http.admin_password = ADMIN, PASSWORD
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    yield cluster, root
    await asyncio.wait_for(cluster.stop(), 60)


def rest(cluster) -> list[str]:
    """Where the REST commands call, as the admin."""
    return ["--http", cluster.addresses.http, "--user", ADMIN]


def grpc(cluster) -> list[str]:
    """Where the index commands call (the coordinator's gRPC port), as the admin logged in over REST."""
    return ["--coord", cluster.addresses.grpc, "--http", cluster.addresses.http, "--user", ADMIN]


def names(cluster) -> set[str]:
    return {c.name for c in cluster.coord.catalog.list_collections()}


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_collection_create_describe_list_rename_drop(cluster):
    cluster, _ = cluster
    catalog = cluster.coord.catalog
    created = await vecgrid("collection", "create", "films", "--dim", "8", "--metric", "L2", "--pk-field", "pk",
                            "--vector-field", "emb", "--auto-id", *rest(cluster))
    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith("created collection films (id ")
    coll = catalog.describe_collection("default", "films")
    fields = {f.name: f for f in coll.schema.fields}
    assert fields["pk"].is_primary_key and fields["pk"].autoID and "emb" in fields

    described = answer(await vecgrid("collection", "describe", "films", "--json", *rest(cluster)))
    assert described["name"] == "films" and described["indexes"][0]["metric"] == "L2"
    assert [f["name"] for f in described["schema"]["fields"]] == ["pk", "emb"]
    text = await vecgrid("collection", "describe", "films", *rest(cluster))
    assert "emb" in text.stdout and "primary key" in text.stdout and "auto id" in text.stdout
    assert "films" in [c["name"] for c in answer(await vecgrid("collection", "list", "--json", *rest(cluster)))]

    again = await vecgrid("collection", "create", "films", "--dim", "8", *rest(cluster))
    assert_one_line_error(again, "already exists")
    assert again.returncode == 1

    renamed = answer(await vecgrid("collection", "rename", "films", "movies", "--json", *rest(cluster)))
    assert renamed["name"] == "movies" and renamed["id"] == coll.id
    assert "movies" in names(cluster) and "films" not in names(cluster)

    dropped = await vecgrid("collection", "drop", "movies", *rest(cluster))
    assert dropped.returncode == 0 and dropped.stdout.startswith("collection movies dropped"), dropped
    assert "movies" not in names(cluster)
    gone = await vecgrid("collection", "describe", "movies", *rest(cluster))
    assert_one_line_error(gone, "movies")
    assert gone.returncode == 1


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_a_full_schema_its_partitions_and_its_index(cluster):
    cluster, root = cluster
    catalog = cluster.coord.catalog
    schema = root / "shelf.json"
    schema.write_text(json.dumps({
        "schema": {"enableDynamicField": False, "fields": [
            {"name": "pk", "type": "Int64", "isPrimary": True},
            {"name": "vec", "type": "FloatVector", "params": {"dim": 4}}]},
        "indexes": [{"field": "vec", "type": "IVF_FLAT", "metric": "IP", "params": {"nlist": 16}}]}))
    created = answer(await vecgrid("collection", "create", "shelf", "--schema", str(schema), "--shards", "2",
                                   "--json", *rest(cluster)))
    assert created["shards"] == 2 and created["indexes"][0]["type"] == "IVF_FLAT"
    cid = catalog.describe_collection("default", "shelf").id

    made = await vecgrid("partition", "create", "shelf", "p2024", *rest(cluster))
    assert made.returncode == 0 and made.stdout.startswith("partition p2024 of collection shelf created"), made
    assert catalog.get_collection(cid).partition_names == ("_default", "p2024")
    listed = answer(await vecgrid("partition", "list", "shelf", "--json", *rest(cluster)))
    assert [p["name"] for p in listed] == ["_default", "p2024"]
    assert "p2024" in (await vecgrid("partition", "list", "shelf", *rest(cluster))).stdout
    dropped = answer(await vecgrid("partition", "drop", "shelf", "p2024", "--json", *rest(cluster)))
    assert dropped["name"] == "p2024" and catalog.get_collection(cid).partition_names == ("_default",)

    [index] = answer(await vecgrid("index", "describe", "shelf", "--json", *grpc(cluster)))
    assert (index["index_name"], index["field"], index["type"], index["metric"], index["params"]) == \
        ("vec", "vec", "IVF_FLAT", "IP", {"nlist": 16})
    assert index["state"] == "Finished"
    text = (await vecgrid("index", "describe", "shelf", *grpc(cluster))).stdout
    assert text.startswith('index vec on shelf.vec: IVF_FLAT IP {"nlist":16}'), text
    missing = await vecgrid("index", "describe", "shelf", "--field", "nope", *grpc(cluster))
    assert_one_line_error(missing, "no index with field 'nope'")

    assert answer(await vecgrid("index", "drop", "shelf", "--field", "vec", *grpc(cluster))) == {
        "collection": "shelf", "index_name": "vec", "field": "vec"}
    assert catalog.describe_index(cid) == []
    assert answer(await vecgrid("index", "describe", "shelf", "--json", *grpc(cluster))) == []
    # the old spelling stays an alias, with its one-line JSON summary
    created = await vecgrid("create-index", "shelf", "--field", "vec", "--type", "HNSW", "--metric", "L2",
                            *grpc(cluster))
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout.splitlines()[-1])["state"] == "Finished"
    assert [i.index_name for i in catalog.describe_index(cid)] == ["vec"]


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_bad_input_against_a_cluster_changes_nothing(cluster):
    cluster, root = cluster
    (root / "nofields.json").write_text(json.dumps({"schema": {"fields": [{"name": "x", "type": "Nope"}]}}))
    before = names(cluster)
    for args in (["collection", "create", "c1", "--dim", "0"], ["collection", "rename", "c1", "c1"],
                 ["collection", "create", "c1", "--schema", str(root / "missing.json")]):
        result = await vecgrid(*args, *rest(cluster))
        assert result.returncode == 2, result
    # refused by the server (a bad schema): one line, the server's reason, exit 1, nothing created
    refused = await vecgrid("collection", "create", "c1", "--schema", str(root / "nofields.json"), *rest(cluster))
    assert_one_line_error(refused)
    assert refused.returncode == 1
    assert names(cluster) == before


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_the_same_credentials_as_the_other_client_commands(cluster):
    from vecgrid.client import rest as feathers_rest

    cluster, root = cluster
    http = ["--http", cluster.addresses.http]
    anonymous = await vecgrid("collection", "list", *http, password=None)
    assert_one_line_error(anonymous, "Not")   # NotAuthenticated
    assert anonymous.returncode == 1
    wrong = await vecgrid("collection", "list", *rest(cluster), password="not-it")
    assert_one_line_error(wrong, f"login as {ADMIN}")
    # an access token from a file, as --token-file gives it to every client command
    login = await asyncio.to_thread(feathers_rest(cluster.addresses.http).urllib().service("authentication").create,
                                    {"strategy": "local", "email": ADMIN, "password": PASSWORD})
    (root / "token").write_text(login["accessToken"])
    assert isinstance(answer(await vecgrid("collection", "list", "--json", *http, "--token-file", str(root / "token"),
                                           password=None)), list)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_users_through_the_coordinator(cluster):
    cluster, _ = cluster
    added = answer(await vecgrid("users", "add", "writer@example.com", "--role", "writer", "--password-stdin",
                                 "--json", *rest(cluster), stdin="writer-pass-1\n"))
    assert added["roles"] == ["writer"] and "password" not in added
    listed = answer(await vecgrid("users", "list", "--json", *rest(cluster)))
    assert {u["email"] for u in listed} == {ADMIN, "writer@example.com"}
    # the new user's own credentials work for the REST commands; a writer may not manage users
    assert (await vecgrid("collection", "list", "--http", cluster.addresses.http, "--user", "writer@example.com",
                          password="writer-pass-1")).returncode == 0
    refused = await vecgrid("users", "list", "--http", cluster.addresses.http, "--user", "writer@example.com",
                            password="writer-pass-1")
    assert refused.returncode == 1
    removed = await vecgrid("users", "remove", "writer@example.com", *rest(cluster))
    assert removed.stdout.strip() == "user writer@example.com removed", removed
    assert [u["email"] for u in answer(await vecgrid("users", "list", "--json", *rest(cluster)))] == [ADMIN]
    missing = await vecgrid("users", "remove", "writer@example.com", *rest(cluster))
    assert_one_line_error(missing, "no user with email 'writer@example.com'")
    assert missing.returncode == 1
