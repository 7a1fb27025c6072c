"""Putting processes together, as Dask's ``deploy`` package does.

:class:`Coordinator` is the coordinator process: a Dask client that registers the
QueryNode worker plugin (:mod:`vecgrid.node_plugin`), the QueryCoord component with its gRPC server, and the
REST app.  :class:`EmbeddedCluster` adds a ``distributed.LocalCluster`` of worker
processes on this host — what ``vecgrid serve`` runs.  Start-up binds every
explicitly requested port first, so "port in use" is reported before anything is
started; shutdown reverses start-up and leaves no process behind.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import tornado.httpserver
import tornado.netutil
from distributed import Client, LocalCluster

from vecgrid.cluster.datacoord.compaction import Compaction
from vecgrid.cluster.datacoord.component import DataCoord
from vecgrid.cluster.datacoord.gc import GarbageCollector
from vecgrid.cluster.datacoord.imports import ImportJobs, import_roots
from vecgrid.cluster.datacoord.index_builder import IndexBuilder
from vecgrid.cluster.lifecycle import StateCode
from vecgrid.cluster.proxy.proxy import Proxy
from vecgrid.cluster.proxy.write_access import DataCoordAccess
from vecgrid.cluster.proxy.writer import Writer
from vecgrid.cluster.querycoord.coordinator import QueryCoord
from vecgrid.cluster.querycoord.flush_handoff import FlushHandoff
from vecgrid.cluster.querycoord.monitor import ClusterPublisher
from vecgrid.cluster.querynode.dask_worker import QueryNodeNanny, QueryNodeWorker
from vecgrid.common.auth import CLUSTER_SCHEME, send_authorization
from vecgrid.common.channels import use_tls
from vecgrid.config import ConfigError, Settings
from vecgrid.http.app import build_api, make_app
from vecgrid.http.health import dashboard_page
from vecgrid.http.services.accounts import (auth_enabled, cluster_secret, ensure_first_admin, grpc_rights_checker,
                                            token_secret)
from vecgrid.http.services import RestContext
from vecgrid.http.services.revocations import ClusterRevocations
from vecgrid.common.auth import RightsChecker
from vecgrid.rpc.auth import ServerAuth
from vecgrid.rpc.catalog_servicer import catalog_service
from vecgrid.rpc.milvus_servicer import serve_milvus
from vecgrid.rpc.channel_stream_servicer import channel_stream_service
from vecgrid.rpc.querycoord_servicer import serve_querycoord
from vecgrid.rpc.server import GrpcServer, PortInUse
from vecgrid.rpc.tls import dask_security, server_tls, trusted_ca
from vecgrid.rpc.write_servicer import WriteServicer, write_service
from vecgrid.node_plugin import NodeAuth, QueryNodePlugin
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import Wal

log = logging.getLogger(__name__)


def ensure_ports_free(host: str, ports: list[tuple[int, str]]) -> None:
    """Raise :class:`PortInUse` naming the first requested (non-zero) port that cannot be bound.

    The probe binds as the servers do, with ``SO_REUSEADDR`` (Tornado and grpc set it): a port whose
    connections of the last run are in TIME_WAIT is free for them, while one a process listens on is
    still refused."""
    for port, what in ports:
        if port == 0:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError as e:
                raise PortInUse(f"{what}: cannot listen on {host}:{port} ({e.strerror})") from None


@dataclass
class Addresses:
    grpc: str = ""
    milvus: str = ""
    http: str = ""
    scheduler: str = ""
    dashboard: str = ""
    data_dir: str = ""
    query_nodes: list[tuple[int, str]] = field(default_factory=list)


class Coordinator:
    """The coordinator process over an existing Dask scheduler."""

    def __init__(self, settings: Settings, deploy_mode: str = "CLUSTER") -> None:
        self.settings = settings
        self.deploy_mode = deploy_mode
        self.client: Client | None = None
        self.coord: QueryCoord | None = None
        self.datacoord: DataCoord | None = None
        self.grpc: GrpcServer | None = None
        self.milvus: GrpcServer | None = None   # MilvusService: the Milvus clients' port
        self.http: tornado.httpserver.HTTPServer | None = None
        self.addresses = Addresses()
        self._store = None
        self.proxy: Proxy | None = None                 # the coordinator's own proxy: the write path
        self.write_servicer = WriteServicer()
        self.publisher: ClusterPublisher | None = None  # cluster state for the Dask dashboard page
        self.node_auth: NodeAuth | None = None  # what the workers it admits authenticate with (auth on)
        self.revocations: ClusterRevocations | None = None  # tokens refused at every door (logouts, removed users)
        self._grpc_users: RightsChecker | None = None  # the REST app's users, once it is built

    def node_settings(self) -> Settings:
        """What the QueryNode plugin ships to every worker."""
        return self.settings

    async def _grpc_user_rights(self, value: str, peer: str) -> frozenset[str] | None:
        """A gRPC caller's rights from the REST app's users (none until the app is built)."""
        return None if self._grpc_users is None else await self._grpc_users(value, peer)

    async def start(self, scheduler_address: str) -> None:
        s = self.settings
        # before anything starts: a busy port is bad input (exit 2), not a failure half-way through
        ensure_ports_free(s.common.host, [(s.querycoord.port, "querycoord gRPC"), (s.proxy.port, "Milvus gRPC"),
                                          (s.http.port, "REST")])
        data = DataDir.of(s)
        self._store = data.open_store()
        self.revocations = ClusterRevocations.load(self._store)
        self.client = await Client(scheduler_address, asynchronous=True, name="vecgrid-coordinator",
                                   security=dask_security(s), timeout=s.dask.scheduler_wait_s)
        self.coord = QueryCoord(s, self.client, self._store, self.deploy_mode)
        self.datacoord = data_coord(self.coord, data, self.client)
        # Serve gRPC at once: until the coordinator is Healthy it answers Initializing, as Milvus does.
        # The coordinator also streams DML channels to nodes on other hosts (vecgrid.wal.ChannelStream)
        # and lets proxies in other processes read its catalog (vecgrid.catalog.CatalogService).
        self.wal = Wal(str(data.wal_root))
        interceptors = []
        if auth_enabled(s):
            self.node_auth = NodeAuth(cluster_secret(s), token_secret(s), s.http.jwt_audience)
            refusals = self.revocations
            interceptors.append(ServerAuth(self.node_auth.cluster_secret, self._grpc_user_rights,
                                           revision=lambda: refusals.revision))
        # this process's own calls (its proxy to the nodes and to this server) authenticate as the cluster
        send_authorization(CLUSTER_SCHEME + self.node_auth.cluster_secret if self.node_auth else None)
        tls = server_tls(s)
        use_tls(trusted_ca(s))
        self.grpc = await serve_querycoord(self.coord, s.common.host, s.querycoord.port,
                                           [channel_stream_service(self.wal), catalog_service(self.coord.catalog),
                                            write_service(self.write_servicer)], interceptors,
                                           tls.grpc_credentials() if tls else None)
        self.proxy = coordinator_proxy(self.coord, self.datacoord)
        self.write_servicer.writes = self.proxy.writes  # vecgrid.write.WriteService: writes of other processes
        self.write_servicer.ddl = self.coord.ddl
        self.milvus = await serve_milvus(self.coord, self.proxy, s.common.host, s.proxy.port,
                                         interceptors, tls.grpc_credentials() if tls else None)
        s.proxy.port = self.milvus.port
        sockets = tornado.netutil.bind_sockets(s.http.port, s.common.host)
        s.http.port = sockets[0].getsockname()[1]
        rest = RestContext(coord=self.coord, proxy=self.proxy, datacoord=self.datacoord, settings=s,
                           store=self._store, revocations=self.revocations)
        api = build_api(rest)
        self._grpc_users = grpc_rights_checker(api)
        await ensure_first_admin(api, s.http.admin_email, s.http.admin_password)
        self.http = tornado.httpserver.HTTPServer(make_app(rest, api), ssl_options=tls.ssl_context() if tls else None)
        self.http.add_sockets(sockets)
        # the membership registers it with the scheduler, and again with a scheduler that was restarted
        self.coord.membership.plugin = QueryNodePlugin(self.node_settings(), self.deploy_mode, self.node_auth)
        if self.node_auth is not None:   # the nodes take access tokens too: they get the refused ones
            self.coord.membership.revocations = self.revocations
        await self.coord.start()
        await self.datacoord.start()
        self.publisher = ClusterPublisher(self.coord, self.client, datacoord=self.datacoord)
        self.publisher.start()
        self.addresses.grpc = self.coord.address
        self.addresses.milvus = f"{s.common.host}:{s.proxy.port}"
        self.addresses.http = f"{'https' if tls else 'http'}://{s.common.host}:{s.http.port}"
        self.addresses.scheduler = scheduler_address
        self.addresses.dashboard = self.client.dashboard_link or ""
        self.addresses.data_dir = str(data.path)

    async def wait_for_nodes(self, count: int, timeout_s: float = 60.0) -> None:
        """Wait until ``count`` query nodes are registered (start-up of the embedded cluster)."""
        deadline = time.monotonic() + timeout_s
        while len(self.coord.nodes) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(self.coord.nodes)} of {count} query nodes registered "
                                   f"within {timeout_s:.0f} s")
            await asyncio.sleep(0.1)
        self.addresses.query_nodes = [(n.node_id, n.address) for n in self.coord.nodes.all()]

    async def stop(self) -> None:
        if self.coord is not None:
            self.coord.lifecycle.set(StateCode.Stopping)  # new calls answer "not ready" while draining
        if self.milvus is not None:
            await self.milvus.stop(self.settings.querycoord.grace_s)
        if self.grpc is not None:
            await self.grpc.stop(self.settings.querycoord.grace_s)
        if self.proxy is not None:
            await self.proxy.close()
        if self.http is not None:
            self.http.stop()
            await self.http.close_all_connections()
        if self.publisher is not None:
            await self.publisher.stop()
        if self.datacoord is not None:
            await self.datacoord.stop()  # before the QueryCoord: it flushes through its appenders
        if self.coord is not None:
            await self.coord.stop()
        if self.client is not None:
            await self.client.close()
        if self._store is not None:
            self._store.close()
        # this process no longer calls as the cluster (what start set for its channels)
        send_authorization(None)
        use_tls(None)


def data_coord(qc: QueryCoord, data: DataDir, client: Client) -> DataCoord:
    """The DataCoord beside ``qc``: its catalog and appenders, the target hand-off of its flushes, and
    its parts — index builds, compaction and garbage collection on the coordinator's Dask client, and
    the REST import jobs."""
    handoff = FlushHandoff(qc.collections, qc.targets, qc.target_observer)
    dc = DataCoord(qc.settings, qc.catalog, qc.appenders, data.segment_root,
                   pull_target=handoff.pull_target, sealed_copies_serve=handoff.sealed_copies_serve,
                   node_id=lambda: qc.lifecycle.node_id)
    dc.add_part(IndexBuilder(qc.catalog, client, qc.settings, root=data.segment_root))
    dc.add_part(GarbageCollector(qc.catalog, qc.settings, handoff.segments_in_targets, root=data.segment_root))
    dc.add_part(Compaction(qc.settings, qc.catalog, client, data.segment_root, handoff.pull_target), compaction=True)
    dc.add_part(ImportJobs(qc.catalog, data.segment_root, handoff.pull_target, roots=import_roots(qc.settings),
                           wal_root=data.wal_root))
    qc.health.roles.append(("datacoord", lambda: qc.lifecycle.node_id, dc.health_reasons))
    return dc


def coordinator_proxy(coord: QueryCoord, datacoord: DataCoordAccess | None = None) -> Proxy:
    """The proxy of the coordinator's process: reads and writes its catalog and channels directly.  Its
    write quota asks which query nodes watch a channel (they hold its growing rows) from QueryCoord's
    distribution, read from the writer's thread: the distribution swaps whole lists, never edits one."""
    def channel_leaders(channel: str) -> list[int]:
        return sorted({node for node, info in coord.dist.channels() if info.channel == channel})

    writer = Writer(coord.catalog, coord.appenders, max_growing_mb=coord.settings.querynode.max_growing_mb,
                    leaders_of_channel=channel_leaders)
    return Proxy(coord.address, writer=writer, datacoord=datacoord)


class EmbeddedCluster(Coordinator):
    """A LocalCluster of N worker processes plus the coordinator, all on one host."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, deploy_mode="EMBEDDED")
        self.cluster: LocalCluster | None = None

    def node_settings(self) -> Settings:
        # Workers share this host, so each query node takes a free port.
        node = copy.deepcopy(self.settings)
        node.querynode.port = 0
        return node

    @staticmethod
    def check(settings: Settings) -> None:
        """Refuse settings an embedded cluster cannot run (bad input: before anything starts)."""
        if settings.dask.in_process and settings.dask.workers != 1:
            raise ConfigError(f"dask.in_process runs one query node in this process: dask.workers must be 1, "
                              f"not {settings.dask.workers}")

    async def start(self) -> None:  # type: ignore[override]
        s = self.settings
        self.check(s)
        ensure_ports_free(s.common.host, [(s.querycoord.port, "querycoord gRPC"),
                                          (s.proxy.port, "Milvus gRPC"),
                                          (s.http.port, "REST"),
                                          (s.dask.dashboard_port, "Dask dashboard")])
        local_dir = Path(s.common.data_dir).absolute() / "dask"
        local_dir.mkdir(parents=True, exist_ok=True)
        security = dask_security(s)
        self.cluster = await LocalCluster(
            security=security,
            protocol="tls://" if security else "tcp://",  # not inproc: others reach the scheduler too
            n_workers=s.dask.workers,
            threads_per_worker=s.dask.threads_per_worker,
            processes=not s.dask.in_process,
            # the query nodes outlive a lost scheduler
            worker_class=QueryNodeWorker if s.dask.in_process else QueryNodeNanny,
            host=s.common.host,
            scheduler_port=0,
            dashboard_address=f"{s.common.host}:{s.dask.dashboard_port}",
            local_directory=str(local_dir),
            asynchronous=True,
            # the vecgrid page on the dashboard, as `dask scheduler --preload vecgrid.dashboard`
            scheduler_kwargs={"preload": ["vecgrid.dashboard"]},
            silence_logs=logging.WARNING if s.common.log_level.lower() != "debug" else False,
        )
        try:
            await super().start(self.cluster.scheduler_address)
            self.addresses.dashboard = self.cluster.dashboard_link
            await self.wait_for_nodes(s.dask.workers)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        await super().stop()
        if self.cluster is not None:
            await self.cluster.close()
            self.cluster = None


def describe(addresses: Addresses, mode: str) -> str:
    """The start-up banner ``vecgrid serve`` / ``vecgrid coord`` print."""
    lines = [
        f"vecgrid {mode}: {len(addresses.query_nodes)} query node(s)",
        f"  Milvus gRPC     : {addresses.milvus} (pymilvus: MilvusClient(\"http://{addresses.milvus}\"))",
        f"  QueryCoord gRPC : {addresses.grpc}",
        f"  REST            : {addresses.http}",
        f"  Dask scheduler  : {addresses.scheduler}",
        f"  Dask dashboard  : {addresses.dashboard}",
        *([f"  vecgrid page    : {dashboard_page(addresses.dashboard)}"] if addresses.dashboard else []),
        f"  data dir        : {addresses.data_dir}",
    ]
    lines += [f"  QueryNode {node_id:<5} : {address}" for node_id, address in addresses.query_nodes]
    return "\n".join(lines)
