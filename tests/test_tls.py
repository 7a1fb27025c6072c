"""TLS on every port: `vecgrid certs` makes a CA and a certificate, and a cluster configured with them
serves REST over HTTPS, every gRPC service (the coordinator's and the query nodes') over TLS only, and
runs Dask over mutual TLS; its own processes call each other over TLS, and the CLI does with --tls-ca."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout

import grpc
import numpy as np
import pytest
import pytest_asyncio
import requests

from tests.conftest import embedded_settings, poll_until
from vecgrid import cli
from vecgrid.config import ConfigError
from vecgrid.deploy import EmbeddedCluster
from vecgrid.proto import milvus_pb2, query_coord_pb2_grpc
from vecgrid.rpc.tls import server_tls

pytestmark = pytest.mark.slow


def make_certs(directory) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["certs", str(directory)]) == 0
    return json.loads(out.getvalue())


def test_a_certificate_needs_its_key_and_a_ca(tmp_path):
    certs = make_certs(tmp_path)
    assert oct(os.stat(certs["tls_key"]).st_mode & 0o777) == "0o600"
    settings = embedded_settings(tmp_path)
    settings.common.tls_cert = certs["tls_cert"]
    with pytest.raises(ConfigError, match="tls_key"):
        server_tls(settings)
    settings.common.tls_key = certs["tls_key"]
    with pytest.raises(ConfigError, match="tls_ca"):
        server_tls(settings)
    settings.common.tls_ca = certs["tls_ca"]
    assert server_tls(settings).cert.startswith(b"-----BEGIN CERTIFICATE-----")


def https(cluster, verb, path, body=None):
    resp = requests.request(verb, cluster.addresses.http + path, json=body, verify=cluster.certs["tls_ca"], timeout=60)
    assert resp.ok, (resp.status_code, resp.text)
    return resp.json()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tls_cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("tls")
    certs = make_certs(root / "certs")
    settings = embedded_settings(root / "data")
    settings.common.tls_cert, settings.common.tls_key, settings.common.tls_ca = (
        certs["tls_cert"], certs["tls_key"], certs["tls_ca"])
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    cluster.certs = certs
    try:
        # the collection every test searches (a module's tests may run in any order, or apart)
        await asyncio.to_thread(https, cluster, "POST", "/collections",
                                {"name": "t", "dimension": 4, "metric": "L2", "load": True})
        await asyncio.to_thread(https, cluster, "POST", "/collections/t/entities",
                                [{"id": i, "vector": [i, 0, 0, 1]} for i in range(9)])
        yield cluster
    finally:
        await asyncio.wait_for(cluster.stop(), 60)


@pytest.mark.asyncio(loop_scope="module")
async def test_rest_is_https_only_and_the_cluster_works_over_tls(tls_cluster):
    base, ca = tls_cluster.addresses.http, tls_cluster.certs["tls_ca"]
    assert base.startswith("https://")
    # Dask's own traffic too: mutual TLS between scheduler, workers and the coordinator's client
    assert tls_cluster.cluster.scheduler_address.startswith("tls://")
    assert all(w.startswith("tls://") for w in tls_cluster.client.scheduler_info()["workers"])

    async def found():  # a Strong search: the coordinator's proxy reaches the query nodes over TLS
        resp = await asyncio.to_thread(requests.post, base + "/collections/t/entities", verify=ca, timeout=60,
                                       json={"vector": [4, 0, 0, 1], "limit": 1}, headers={"X-Service-Method": "search"})
        if resp.status_code != 200:
            assert resp.json()["data"]["retriable"], resp.text  # e.g. not fully loaded yet
            return False
        hits = resp.json()
        return hits[0] and hits[0][0]["id"] == 4
    await poll_until(found, 60, interval=0.5, what="a search over TLS")
    with pytest.raises(requests.RequestException):  # plain HTTP on the HTTPS port gets no answer
        await asyncio.to_thread(requests.get, base.replace("https://", "http://") + "/collections", timeout=10)


@pytest.mark.asyncio(loop_scope="module")
async def test_grpc_answers_over_tls_only(tls_cluster):
    ca = open(tls_cluster.certs["tls_ca"], "rb").read()
    address = tls_cluster.coord.address
    nodes = [a for _, a in tls_cluster.addresses.query_nodes]
    assert nodes
    for target, stub in [(address, query_coord_pb2_grpc.QueryCoordStub),
                         *((n, query_coord_pb2_grpc.QueryNodeStub) for n in nodes)]:
        async with grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=ca)) as channel:
            states = await stub(channel).GetComponentStates(milvus_pb2.GetComponentStatesRequest(), timeout=10)
            assert states.status.code == 0, target
        async with grpc.aio.insecure_channel(target) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub(channel).GetComponentStates(milvus_pb2.GetComponentStatesRequest(), timeout=5)
            assert refused.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED), target


@pytest.mark.asyncio(loop_scope="module")
async def test_the_cli_calls_over_tls(tls_cluster, tmp_path):
    vectors = tmp_path / "q.npy"
    np.save(vectors, np.array([[7, 0, 0, 1]], dtype=np.float32))
    argv = [sys.executable, "-m", "vecgrid.cli", "search", "t", "--coord", tls_cluster.coord.address,
            "--vectors", str(vectors), "--limit", "1"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("VECGRID_")}
    plain = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=120, env=env)
    assert plain.returncode != 0, plain.stdout

    async def search_over_tls():  # the fixture's rows may still be on their way to the nodes
        done = await asyncio.to_thread(subprocess.run, [*argv, "--tls-ca", tls_cluster.certs["tls_ca"]],
                                       capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0 or "retriable" in done.stderr or "not fully loaded" in done.stderr, done.stderr
        return done.returncode == 0 and json.loads(done.stdout)[0][0]["id"] == 7
    await poll_until(search_over_tls, 60, interval=1, what="a CLI search over TLS")


@pytest.mark.asyncio(loop_scope="module")
async def test_vecgrid_worker_joins_a_tls_scheduler(tmp_path):
    from distributed import Scheduler

    from vecgrid.rpc.tls import dask_security

    certs = make_certs(tmp_path / "certs")
    settings = embedded_settings(tmp_path / "data")
    settings.common.tls_cert, settings.common.tls_key, settings.common.tls_ca = (
        certs["tls_cert"], certs["tls_key"], certs["tls_ca"])
    security = dask_security(settings)
    async with Scheduler(host="127.0.0.1", port=0, protocol="tls", security=security, dashboard=False) as scheduler:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("VECGRID_")},
               "VECGRID_COMMON_TLS_CERT": certs["tls_cert"], "VECGRID_COMMON_TLS_KEY": certs["tls_key"],
               "VECGRID_COMMON_TLS_CA": certs["tls_ca"]}
        worker = subprocess.Popen([sys.executable, "-m", "vecgrid.cli", "worker", "--scheduler", scheduler.address,
                                   "--name", "tls-w", "--host", "127.0.0.1", "--data-dir", str(tmp_path / "w")],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            workers = await poll_until(lambda: dict(scheduler.workers), 60, interval=0.5,
                                       what="the worker joining over TLS")
            assert all(address.startswith("tls://") for address in workers)
        finally:
            worker.terminate()
            worker.wait(30)


@pytest.mark.asyncio(loop_scope="module")
async def test_the_health_probes_speak_tls(tls_cluster, monkeypatch):
    from vecgrid import healthcheck

    monkeypatch.setenv("VECGRID_COMMON_TLS_CA", tls_cluster.certs["tls_ca"])
    assert await asyncio.to_thread(healthcheck.main, ["grpc", tls_cluster.coord.address]) == 0
    assert await asyncio.to_thread(healthcheck.main, ["http", tls_cluster.addresses.http + "/health"]) == 0
    monkeypatch.delenv("VECGRID_COMMON_TLS_CA")
    assert await asyncio.to_thread(healthcheck.main, ["grpc", tls_cluster.coord.address]) == 1
