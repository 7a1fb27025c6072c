"""``vecgrid`` command line.

    vecgrid serve                      embedded cluster: LocalCluster + coordinator + REST + gRPC
    vecgrid coord  --scheduler ADDR    the coordinator against a running `dask scheduler`
    vecgrid worker --scheduler ADDR    a Dask worker that becomes a QueryNode
    vecgrid import FILE... --collection NAME
                                       bulk-import files into sealed segments

Client commands, against a running coordinator (``--coord HOST:PORT``, default
127.0.0.1:19531), through :class:`~vecgrid.cluster.proxy.proxy.Proxy`:

    vecgrid load NAME [--replicas N] [--resource-group RG]   load, with a progress bar until 100 %
    vecgrid release NAME                                     release
    vecgrid search NAME --vectors FILE.npy [--limit K] [--filter EXPR] [--output-fields a,b]
                                                             nearest rows as JSON, one list per query
    vecgrid status                                           nodes, collections, load %, partition states
    vecgrid insert NAME FILE... [--partition P] [--upsert]   rows from .parquet, .jsonl/.json, or .npy + .parquet/.csv
    vecgrid delete NAME --ids 1,2,3 | --filter EXPR          by primary key, or what a Strong query finds
    vecgrid flush NAME [--no-wait]                           seal growing data into published segments
    vecgrid compact NAME [--no-wait]                         compact a collection now
    vecgrid create-index NAME --field F [--type T] [--metric M] [--params JSON] [--no-wait]
                                                             index a field; waits until its rows are indexed
    vecgrid drop-index NAME --field F | --index-name N       drop an index (of a collection not loaded)

Writes print progress on a terminal and a JSON summary as their last line, like ``vecgrid import``.
Flush, compaction and index builds follow the coordinator's progress (GetFlushState, GetCompactionState,
GetIndexBuildProgress of ``vecgrid.write.WriteService``) until done; ``--no-wait`` prints the started
job instead.

Every command reads the same settings (``--config FILE``, ``VECGRID_*`` variables,
flags).  A user error — unknown flag, unreadable config, port in use — prints one
line ``vecgrid: error: ...`` and exits non-zero; it never shows a traceback.  Output into a pipe whose
reader went away (``vecgrid status --json | head``) ends quietly with status 141, as Unix tools do.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shlex
import signal
import socket
import sys
import time
from typing import Any, Sequence

from vecgrid import __version__, errors
from vecgrid.common.feathers_errors import FeathersError
from vecgrid.config import ConfigError, Settings

EXIT_USAGE = 2
EXIT_RUNTIME = 1
#: the reader of the output went away (``vecgrid status --json | head``): what a shell shows for a tool
#: that SIGPIPE ended (128 + 13), as ``cat`` or ``yes`` would
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
DEFAULT_COORD = "127.0.0.1:19531"
CLIENT_COMMANDS = ("load", "release", "search", "status", "insert", "delete", "flush", "compact", "create-index",
                   "drop-index")
#: seconds between two reads of a job's progress
POLL_S = 0.2
INSERT_BATCH_ROWS = 10_000


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line instead of usage + message."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _parser() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument("--config", metavar="FILE", help="TOML settings file")
    common.add_argument("--data-dir", help="where metadata, WAL and segments live (common.data_dir)")
    common.add_argument("--host", help="address to bind and advertise (common.host)")
    common.add_argument("--log-level", choices=["debug", "info", "warning", "error"])

    coord_ports = _Parser(add_help=False)
    coord_ports.add_argument("--coord-port", type=int, help="QueryCoord gRPC port (0 = free port)")
    coord_ports.add_argument("--http-port", type=int, help="REST port (0 = free port)")
    coord_ports.add_argument("--milvus-port", type=int,
                             help="Milvus API port for pymilvus and the Milvus SDKs (proxy.port; 0 = free port)")

    parser = _Parser(prog="vecgrid", description="GPU-backed vector search cluster (Milvus QueryCoord/QueryNode over Dask)")
    parser.add_argument("--version", action="version", version=f"vecgrid {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    serve = sub.add_parser("serve", parents=[common, coord_ports], help="start the embedded cluster")
    serve.add_argument("--workers", type=int, help="number of worker processes (dask.workers)")
    serve.add_argument("--dashboard-port", type=int, help="Dask dashboard port (0 = free port)")

    coord = sub.add_parser("coord", parents=[common, coord_ports], help="run the coordinator")
    coord.add_argument("--scheduler", required=True, help="Dask scheduler address, e.g. tcp://host:8786")

    imp = sub.add_parser("import", parents=[common], help="bulk-import files into sealed segments")
    imp.add_argument("files", nargs="+", metavar="FILE", help=".parquet files, or .npy vectors plus .parquet/.csv scalars")
    imp.add_argument("--collection", required=True)
    imp.add_argument("--db", default="default", help="database name")
    imp.add_argument("--partition", default="_default")
    imp.add_argument("--primary-key", help="column to use as primary key (default: an auto_id int64 'id')")
    imp.add_argument("--metric", default="L2", choices=["L2", "IP", "COSINE"])
    imp.add_argument("--index", default="FLAT", help="index type for new collections (FLAT, IVF_FLAT, HNSW, ...)")
    imp.add_argument("--index-params", default="{}", help='JSON, e.g. {"nlist": 1024}')
    imp.add_argument("--shards", type=int, default=1)
    imp.add_argument("--segment-rows", type=int, default=1_000_000)
    imp.add_argument("--segment-mb", type=int, default=512)

    client = _Parser(add_help=False)
    client.add_argument("--coord", default=DEFAULT_COORD, metavar="HOST:PORT",
                        help=f"the coordinator's gRPC address (default {DEFAULT_COORD})")
    client.add_argument("--db", default="", help="database (default: the default database)")
    client.add_argument("--config", metavar="FILE", help="TOML settings file (for common.log_level)")
    client.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    client.add_argument("--user", metavar="EMAIL",
                        help="when auth is on: log in as this user (password from VECGRID_PASSWORD or a prompt)")
    client.add_argument("--token-file", metavar="FILE",
                        help="when auth is on: a file holding an access token (or set VECGRID_TOKEN)")
    client.add_argument("--http", metavar="URL",
                        help="the REST address --user logs in at (default: http(s)://<coordinator host>:19121)")
    client.add_argument("--tls-ca", metavar="FILE",
                        help="call the cluster over TLS, trusting this CA (PEM; or common.tls_ca)")

    load = sub.add_parser("load", parents=[client], help="load a collection and wait until it is fully served")
    load.add_argument("name", metavar="NAME")
    load.add_argument("--replicas", type=int, metavar="N",
                      help="replica number (default: the collection's, else the cluster's default)")
    load.add_argument("--resource-group", action="append", default=[], dest="resource_groups", metavar="RG",
                      help="resource group for the replicas; repeat it to give one per replica")
    load.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                      help="give up waiting for 100 %% after this long (default 600)")

    release = sub.add_parser("release", parents=[client], help="release a loaded collection")
    release.add_argument("name", metavar="NAME")

    search = sub.add_parser("search", parents=[client], help="nearest rows of query vectors, printed as JSON")
    search.add_argument("name", metavar="NAME")
    search.add_argument("--vectors", required=True, metavar="FILE.npy", help="nq x dim (or dim) float array")
    search.add_argument("--limit", type=int, default=10, metavar="K", help="hits per query (default 10)")
    search.add_argument("--filter", metavar="EXPR",
                        help='a Milvus expression, e.g. \'age > 20 and tag in ["a"]\', or a REST query object, '
                             'e.g. {"age": {"$gt": 20}, "$or": [...]}')
    search.add_argument("--output-fields", default="", metavar="a,b", help="fields to return with each hit")
    search.add_argument("--consistency", default="Strong", choices=["Strong", "Bounded", "Eventually"],
                        help="how fresh the data must be (default Strong)")

    status = sub.add_parser("status", parents=[client], help="query nodes, collections, load %% and partitions")
    status.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    status.add_argument("--rest", metavar="URL",
                        help="the coordinator's REST address for its /health (default: the --coord host, "
                             "port http.port of the settings)")

    insert = sub.add_parser("insert", parents=[client], help="insert rows from files through the proxy")
    insert.add_argument("name", metavar="NAME")
    insert.add_argument("files", nargs="+", metavar="FILE",
                        help=".parquet, .jsonl (one JSON object per line), or .npy vectors plus .parquet/.csv scalars")
    insert.add_argument("--partition", default=None, help="partition (default _default)")
    insert.add_argument("--batch-rows", type=int, default=INSERT_BATCH_ROWS, metavar="N",
                        help=f"rows per write (default {INSERT_BATCH_ROWS})")
    insert.add_argument("--upsert", action="store_true",
                        help="replace the rows of primary keys that are there (delete + insert at one timestamp)")

    delete = sub.add_parser("delete", parents=[client], help="delete rows by primary key or by filter")
    delete.add_argument("name", metavar="NAME")
    which = delete.add_mutually_exclusive_group(required=True)
    which.add_argument("--ids", metavar="1,2,3", help="primary keys, comma-separated")
    which.add_argument("--filter", metavar="EXPR",
                       help='a Milvus expression, e.g. \'age > 20\', or a REST query object, e.g. {"age": {"$gt": 20}}')
    delete.add_argument("--partition", default=None, help="only this partition (default: every partition)")

    no_wait = _Parser(add_help=False)
    no_wait.add_argument("--no-wait", action="store_true",
                         help="print the started job as JSON instead of following its progress")
    flush = sub.add_parser("flush", parents=[client, no_wait],
                           help="seal growing data; shows its progress until it is published")
    flush.add_argument("name", metavar="NAME")
    compact = sub.add_parser("compact", parents=[client, no_wait],
                             help="compact a collection now; shows its progress until it is published")
    compact.add_argument("name", metavar="NAME")
    index = sub.add_parser("create-index", parents=[client, no_wait],
                           help="index a vector field; shows the build progress until every flushed row is indexed")
    index.add_argument("name", metavar="NAME")
    index.add_argument("--field", required=True, help="the vector field")
    index.add_argument("--type", default="", dest="index_type", help="index type (default AUTOINDEX)")
    index.add_argument("--metric", default="", help="metric type (default: the index's default)")
    index.add_argument("--params", default="{}", help='index parameters as JSON, e.g. {"nlist": 128}')
    index.add_argument("--index-name", default="", help="the index's name (default: the field's)")
    index.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                       help="give up waiting for the builds after this long (default 600)")
    drop_index = sub.add_parser("drop-index", parents=[client],
                                help="drop a field's index (the collection must not be loaded)")
    drop_index.add_argument("name", metavar="NAME")
    drop_index.add_argument("--field", default="", help="the indexed field")
    drop_index.add_argument("--index-name", default="", help="the index's name")

    worker = sub.add_parser("worker", parents=[common], help="run a worker that serves as a QueryNode")
    worker.add_argument("--scheduler", required=True, help="Dask scheduler address")
    worker.add_argument("--name", default=None,
                        help="worker name; the node id is tied to it (default: the host name)")
    worker.add_argument("--nthreads", type=int, default=2)
    worker.add_argument("--resources", default="", help="e.g. GPU=1")
    worker.add_argument("--node-port", type=int, help="QueryNode gRPC port (querynode.port, 0 = free port)")

    users = sub.add_parser("users", help="manage REST users in the data dir's metadata store")
    users_sub = users.add_subparsers(dest="users_command", required=True, parser_class=_Parser)
    users_add = users_sub.add_parser("add", parents=[common], help="add a user (password from a prompt or stdin)")
    users_add.add_argument("email")
    users_add.add_argument("--role", action="append", dest="roles", choices=["admin", "writer", "reader"],
                           help="role of the user; repeat for several (default: reader)")
    users_add.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    users_sub.add_parser("list", parents=[common], help="print the users as JSON lines (no passwords)")
    users_remove = users_sub.add_parser("remove", parents=[common], help="remove a user")
    users_remove.add_argument("email")
    users_passwd = users_sub.add_parser("passwd", parents=[common], help="set a user's password")
    users_passwd.add_argument("email")
    users_passwd.add_argument("--password-stdin", action="store_true", help="read the password from stdin")

    certs = sub.add_parser("certs", help="make a self-signed test CA and a certificate for TLS (ca.pem, cert.pem, key.pem)")
    certs.add_argument("directory", metavar="DIR")
    certs.add_argument("--host", action="append", default=[], metavar="NAME_OR_IP",
                       help="a name or address the certificate is for; repeat (default: 127.0.0.1 and localhost)")
    certs.add_argument("--days", type=int, default=365)

    conformance = sub.add_parser("conformance-app",
                                 help="serve the Feathers conformance app (in memory) until SIGINT/SIGTERM")
    conformance.add_argument("--port", type=int, default=3030, help="port to listen on (0 = free port)")
    conformance.add_argument("--host", default="127.0.0.1", help="address to bind")
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "common.data_dir": getattr(args, "data_dir", None),
        "common.host": getattr(args, "host", None),
        "common.log_level": getattr(args, "log_level", None),
        "querycoord.port": getattr(args, "coord_port", None),
        "http.port": getattr(args, "http_port", None),
        "proxy.port": getattr(args, "milvus_port", None),
        "dask.workers": getattr(args, "workers", None),
        "dask.dashboard_port": getattr(args, "dashboard_port", None),
        "dask.scheduler": getattr(args, "scheduler", None),
        "querynode.port": getattr(args, "node_port", None),
    }


def parse_resources(text: str) -> dict[str, float]:
    resources = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, amount = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            resources[name] = float(amount)
        except ValueError:
            raise UsageError(f"--resources expects NAME=AMOUNT[,NAME=AMOUNT], got {item!r}") from None
    return resources


def _configure_logging(level: str) -> None:
    import distributed  # noqa: F401 - importing it applies Dask's logging config, which we then override

    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if level.lower() != "debug":
        for noisy in ("distributed", "tornado.access", "bokeh"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


async def _until_signalled() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def _serve(settings: Settings) -> None:
    from vecgrid.deploy import EmbeddedCluster, describe

    cluster = EmbeddedCluster(settings)
    await cluster.start()
    try:
        print(describe(cluster.addresses, "embedded cluster"), flush=True)
        print("Press Ctrl-C to stop.", flush=True)
        await _until_signalled()
        print("vecgrid: stopping", flush=True)
    finally:
        await cluster.stop()


async def _coord(settings: Settings) -> None:
    from vecgrid.deploy import Coordinator, describe

    coordinator = Coordinator(settings)
    try:
        await coordinator.start(settings.dask.scheduler)
        coordinator.addresses.query_nodes = [(n.node_id, n.address) for n in coordinator.coord.nodes.all()]
        print(describe(coordinator.addresses, "coordinator"), flush=True)
        await _until_signalled()
    finally:
        await coordinator.stop()


def _read_password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        import getpass
        password = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != password:
            raise UsageError("the two passwords differ")
    if not password:
        raise UsageError("the password must not be empty")
    return password


async def _users(settings: Settings, args: argparse.Namespace) -> None:
    """``vecgrid users``: the users service on the data dir's store, called as server code."""
    from vecgrid.http.feathers.application import Application
    from vecgrid.http.services.accounts import add_user, find_user, mount_users
    from vecgrid.storage.layout import DataDir

    store = DataDir(settings.common.data_dir).open_store()
    try:
        api = Application()
        mount_users(api, store)
        users = api.service("users")
        if args.users_command == "add":
            user = await add_user(api, args.email, _read_password(args), args.roles or ["reader"])
            print(json.dumps({k: v for k, v in user.items() if k != "password"}), flush=True)
        elif args.users_command == "list":
            page = await users.find({"paginate": False})
            for user in page:
                print(json.dumps({k: v for k, v in user.items() if k != "password"}), flush=True)
        elif args.users_command == "remove":
            await users.remove((await find_user(api, args.email))["id"])
        else:
            await users.patch((await find_user(api, args.email))["id"], {"password": _read_password(args)})
    finally:
        store.close()


def _import(settings: Settings, args: argparse.Namespace) -> int:

    from vecgrid.cluster.datanode.bulk_import import ImportOptions, bulk_import, summary_json
    from vecgrid.storage.layout import DataDir

    try:
        params = json.loads(args.index_params)
        if not isinstance(params, dict):
            raise ValueError
    except ValueError:
        raise UsageError(f"--index-params must be a JSON object, got {args.index_params!r}") from None
    opts = ImportOptions(collection=args.collection, db_name=args.db, partition=args.partition,
                         primary_key=args.primary_key, metric=args.metric, index=args.index,
                         index_params=params, shards=args.shards, segment_rows=args.segment_rows,
                         segment_bytes=args.segment_mb * 1024 * 1024)
    try:
        summary = bulk_import(settings.common.data_dir, args.files, opts,
                              progress=lambda rows: Progress(f"import {args.collection}", rows, unit="rows"),
                              segment_root=DataDir.of(settings).segment_root)
    except errors.MilvusError as e:
        print(f"vecgrid: error: import failed, nothing was published: {e}", file=sys.stderr)
        return EXIT_RUNTIME
    print(summary_json(summary), flush=True)
    return 0


def _nanny_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """What ``vecgrid worker`` gives its nanny.  ``--host`` is where every port of the
    worker listens: the nanny's and the worker's (``host``), the worker's HTTP server (``dashboard_address``,
    else on all interfaces), and the QueryNode's gRPC, which binds the worker's ip.  Without it, Dask's
    defaults: the worker is reachable from the scheduler's hosts (the compose workers rely on it)."""
    env = {}
    if args.node_port is not None:
        # The plugin applies the worker's own VECGRID_* variables over the coordinator's settings.
        env["VECGRID_QUERYNODE_PORT"] = str(args.node_port)
    kwargs: dict[str, Any] = {"name": args.name or socket.gethostname(), "nthreads": args.nthreads,
                              "resources": parse_resources(args.resources) or None, "env": env}
    if args.host:
        kwargs.update(host=args.host, dashboard_address=f"{args.host}:0")
    return kwargs


async def _worker(settings: Settings, args: argparse.Namespace) -> None:
    from vecgrid.cluster.querynode.dask_worker import QueryNodeNanny
    from vecgrid.rpc.tls import dask_security

    kwargs = _nanny_kwargs(args)
    security = dask_security(settings)
    if security is not None:  # mutual TLS with the scheduler: the same certificate settings as the gRPC ports
        kwargs.update(security=security, protocol="tls")
    async with QueryNodeNanny(settings.dask.scheduler, **kwargs) as nanny:
        print(f"vecgrid worker {kwargs['name']} at {nanny.worker_address} joined {settings.dask.scheduler}",
              flush=True)
        await _until_signalled()


# --- client commands ---------------------------------------------------------------------------------

def _search_inputs(args: argparse.Namespace) -> tuple[Any, Any, list[str]]:
    """Vectors, filter and output fields of ``vecgrid search``, checked before anything connects."""

    import numpy as np

    try:
        vectors = np.load(args.vectors, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read --vectors {args.vectors}: {e}") from None
    query = _filter_arg(args.filter) if args.filter else None
    fields = [f.strip() for f in args.output_fields.split(",") if f.strip()]
    return vectors, query, fields


def _insert_inputs(args: argparse.Namespace) -> tuple[Any, int]:
    """``(batches, total rows)`` of ``vecgrid insert``, opened before anything connects: Arrow record
    batches of the files, read as ``vecgrid import`` and REST import jobs read them (Parquet, JSON rows,
    ``.npy`` + scalars)."""
    if args.batch_rows < 1:
        raise UsageError(f"--batch-rows must be 1 or more, got {args.batch_rows}")
    from vecgrid.cluster.datanode.import_sources import open_sources

    try:
        sources = open_sources(args.files)
    except errors.MilvusError as e:
        raise UsageError(str(e.detail or e)) from None
    return sources.batches(args.batch_rows), sources.num_rows


def _delete_inputs(args: argparse.Namespace) -> tuple[list[Any] | None, dict | None]:

    if args.ids is not None:
        keys = [k.strip() for k in args.ids.split(",") if k.strip()]
        if not keys:
            raise UsageError("--ids is empty")
        try:
            return [int(k) for k in keys], None
        except ValueError:
            return keys, None   # a VarChar primary key
    return None, _filter_arg(args.filter)


def _index_params(args: argparse.Namespace) -> dict:
    """``--params`` of ``vecgrid create-index``: a JSON object."""
    try:
        params = json.loads(args.params)
    except ValueError as e:
        raise UsageError(f"--params is not JSON ({e}): {args.params!r}") from None
    if not isinstance(params, dict):
        raise UsageError(f"--params must be a JSON object, got {args.params!r}")
    return params


def _filter_arg(text: str) -> dict | str:
    """``--filter``: a Milvus expression (``'year > 2000'``), or a REST query object as JSON (``{...}``)."""
    if not text.lstrip().startswith("{"):
        return text   # compiled by the proxy against the collection's schema
    try:
        query = json.loads(text)
    except ValueError as e:
        raise UsageError(f"--filter is not a JSON object ({e}): {text!r}") from None
    return query


class Progress:
    """Progress of long work on stderr: a tqdm bar on a terminal, plain lines otherwise.

    Plain lines (``import books: 4,000/10,000 rows (40 %)``) come at every ``PLAIN_STEP`` % and at the
    end, or, without a known total, every ``PLAIN_EVERY_S`` seconds, so that a log file shows how long
    work goes on without a line per batch.  Work done within ``PLAIN_AFTER_S`` prints none (a quick
    failure stays one ``vecgrid: error:`` line).  One owner: the coroutine or thread doing the work."""

    PLAIN_STEP = 10
    PLAIN_EVERY_S = 10.0
    PLAIN_AFTER_S = 2.0

    def __init__(self, desc: str, total: int | None, unit: str = "%", stream: Any = None) -> None:
        self.desc, self.total, self.unit = desc, total, unit
        self.stream = stream if stream is not None else sys.stderr
        self.n = 0
        self.started = time.monotonic()
        self._last_step = -1
        self._last_line = self.started
        self._printed = False
        self.bar = None
        if self.stream.isatty():
            from tqdm import tqdm

            fmt = None
            if total is None:
                fmt = "{desc}: {elapsed}"
            elif unit == "%":
                fmt = "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}]"
            self.bar = tqdm(total=total, desc=desc, file=self.stream, unit=unit if unit != "%" else "it",
                            unit_scale=unit != "%", bar_format=fmt)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(done=exc[0] is None)

    def update(self, n: int) -> None:
        self.set(self.n + n)

    def set(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n - self.n)
        self.n = n
        if self.bar is None:
            self._plain()

    def tick(self) -> None:
        """Work without a count goes on: refresh the elapsed time (a plain line now and then)."""
        if self.bar is not None:
            self.bar.refresh()
        else:
            self._plain()

    def close(self, done: bool = True) -> None:
        if self.bar is not None:
            self.bar.close()
        elif done and self.total is not None and self._printed and self._last_step < 100:
            self._line()

    def _plain(self) -> None:
        now = time.monotonic()
        if now - self.started < self.PLAIN_AFTER_S:
            return
        if self.total:
            step = min(100, int(100 * self.n / self.total)) // self.PLAIN_STEP * self.PLAIN_STEP
            if step > self._last_step:
                self._last_step = step
                self._line()
        elif now - self._last_line >= self.PLAIN_EVERY_S:
            self._line()

    def _line(self) -> None:
        self._printed = True
        self._last_line = time.monotonic()
        elapsed = self._last_line - self.started
        if self.total is None:
            text = f"{self.desc}: still running after {elapsed:.0f} s"
        elif self.unit == "%":
            text = f"{self.desc}: {self.n} %"
        else:
            pct = 100 * self.n / self.total if self.total else 100
            text = f"{self.desc}: {self.n:,}/{self.total:,} {self.unit} ({pct:.0f} %)"
        print(f"{text} [{elapsed:.0f} s]", file=self.stream, flush=True)


def _summary(summary: dict[str, Any]) -> None:

    print(json.dumps(summary, separators=(",", ":")), flush=True)


async def _insert(proxy: Any, args: argparse.Namespace, inputs: tuple[Any, int]) -> None:
    batches, total = inputs
    verb, write = ("upsert", proxy.upsert) if args.upsert else ("insert", proxy.insert)
    written, count, timestamp = 0, 0, 0
    with Progress(f"{verb} {args.name}", total, unit="rows") as bar:
        for batch in batches:
            try:
                done = await write(args.name, batch, partition=args.partition)
            except errors.MilvusError as e:
                raise errors.from_remote(e.code, f"{e} (after {written} of {total} rows were {verb}ed)") from None
            rows = done.upsert_cnt if args.upsert else done.insert_cnt
            written += rows
            count += 1
            timestamp = done.timestamp
            bar.update(rows)
    _summary({"collection": args.name, f"{verb}_count": written, "batches": count, "timestamp": timestamp})


async def _waiting(desc: str, work: Any) -> Any:
    """Await ``work`` showing the elapsed time (a counter on a terminal, a line every few seconds otherwise):
    work with no percentage to read (a delete by filter)."""
    task = asyncio.ensure_future(work)
    with Progress(desc, None) as bar:
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.2)
            if done:
                return task.result()
            bar.tick()


async def _delete(proxy: Any, args: argparse.Namespace, inputs: tuple[Any, Any]) -> None:
    ids, query = inputs
    done = await _waiting(f"delete {args.name}", proxy.delete(args.name, ids=ids, filter=query,
                                                              partition=args.partition))
    _summary({"collection": args.name, "delete_count": done.delete_cnt, "timestamp": done.timestamp})


async def _follow(desc: str, state: dict[str, Any], read: Any, finished: Any,
                  deadline: float | None = None) -> dict[str, Any]:
    """Show a job's ``progress`` (%) until ``finished(state)``, reading it again with ``read()`` every
    ``POLL_S``; returns the last state.  Past ``deadline`` (monotonic) it raises ``TimeoutError``."""
    with Progress(desc, 100) as bar:
        while True:
            bar.set(state["progress"])
            if finished(state):
                return state
            if deadline is not None and time.monotonic() > deadline:
                reason = f" (last failure: {state['fail_reason']})" if state.get("fail_reason") else ""
                raise TimeoutError(f"{desc} is at {state['progress']} % after waiting{reason}; the coordinator "
                                   "goes on with it (bulk-imported segments are indexed when their collection "
                                   "is loaded)")
            await asyncio.sleep(POLL_S)
            state = await read()


def _job_ended(state: dict[str, Any]) -> bool:
    return state["state"] != "Executing"


def _job_failed(what: str, state: dict[str, Any]) -> None:
    if state["state"] == "Failed":
        raise errors.ServiceInternal(f"{what} failed: {state['error']}")


async def _flush(proxy: Any, args: argparse.Namespace) -> None:
    writes = proxy.writes
    state = await writes.start_flush(proxy.db_name, args.name)
    if not args.no_wait:
        state = await _follow(f"flush {args.name}", state, lambda: writes.flush_state(state["flush_id"]), _job_ended)
        _job_failed(f"flush {state['flush_id']} of {args.name}", state)
    _summary({"collection": args.name, "flush_id": state["flush_id"], "state": state["state"],
              "progress": state["progress"], "segment_ids": state["segment_ids"]})


async def _compact(proxy: Any, args: argparse.Namespace) -> None:
    writes = proxy.writes
    state = await writes.start_compaction(proxy.db_name, args.name)
    if not args.no_wait:
        state = await _follow(f"compact {args.name}", state,
                              lambda: writes.compaction_state(state["compaction_id"]), _job_ended)
        _job_failed(f"compaction {state['compaction_id']} of {args.name}", state)
    _summary({"collection": args.name, "compaction_id": state["compaction_id"], "state": state["state"],
              "progress": state["progress"], "completed_plans": state["completed_plans"]})


async def _create_index(proxy: Any, args: argparse.Namespace, params: dict) -> None:
    from vecgrid.storage.catalog.indexes import ONE_INDEX_PER_FIELD

    writes = proxy.writes
    deadline = time.monotonic() + args.timeout
    try:
        index = await writes.create_index(proxy.db_name, args.name, args.field, args.index_type, args.metric,
                                          params, args.index_name)
    except errors.ParameterInvalid as e:
        if ONE_INDEX_PER_FIELD not in str(e):
            raise
        raise errors.from_remote(e.code, f"{e}: {_drop_index_command(args)}") from None

    async def read() -> dict[str, Any]:
        return (await writes.index_progress(proxy.db_name, args.name, index["index_name"]))[0]
    if not args.no_wait:
        index = await _follow(f"index {args.name}.{args.field}", index, read,
                              lambda i: i["state"] == "Finished", deadline)
    _summary({"collection": args.name, "index_name": index["index_name"], "field": index["field"],
              "state": index["state"], "progress": index["progress"], "indexed_rows": index["indexed_rows"],
              "total_rows": index["total_rows"], "pending_index_rows": index["pending_index_rows"]})


def _drop_index_command(args: argparse.Namespace) -> str:
    """The ``vecgrid drop-index`` for the index a refused ``vecgrid create-index`` ran into."""
    where = (["--db", args.db] if args.db else []) + (["--coord", args.coord] if args.coord != DEFAULT_COORD else [])
    return shlex.join(["vecgrid", "drop-index", args.name, "--field", args.field, *where])


async def _drop_index(proxy: Any, args: argparse.Namespace) -> None:
    dropped = await proxy.writes.drop_index(proxy.db_name, args.name, args.field, args.index_name)
    _summary({"collection": args.name, **dropped})


async def _load(proxy: Any, args: argparse.Namespace) -> None:
    from vecgrid.cluster.proxy.catalog_access import unary_call
    from vecgrid.proto import query_coord_pb2

    meta = await proxy.describe(args.name)
    await unary_call(proxy.coord.LoadCollection, query_coord_pb2.LoadCollectionRequest(
        collectionID=meta.id, replica_number=args.replicas or 0, resource_groups=args.resource_groups),
        timeout=args.timeout, what=f"LoadCollection at {args.coord}")
    deadline = time.monotonic() + args.timeout
    with Progress(f"load {meta.name}", 100) as bar:
        while True:
            shown = await unary_call(proxy.coord.ShowCollections, query_coord_pb2.ShowCollectionsRequest(
                collectionIDs=[meta.id]), timeout=30, what=f"ShowCollections at {args.coord}")
            percent = int(shown.inMemory_percentages[0])
            bar.set(percent)
            if percent >= 100:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"collection {meta.name!r} is still {percent} % loaded after {args.timeout:g} s; "
                                   "the coordinator goes on loading it")
            await asyncio.sleep(0.2)
    print(f"collection {meta.name} loaded: 100 %", flush=True)


async def _release(proxy: Any, args: argparse.Namespace) -> None:
    from vecgrid.cluster.proxy.catalog_access import unary_call
    from vecgrid.proto import query_coord_pb2

    meta = await proxy.describe(args.name)
    await unary_call(proxy.coord.ReleaseCollection, query_coord_pb2.ReleaseCollectionRequest(collectionID=meta.id),
                     timeout=600, what=f"ReleaseCollection at {args.coord}")
    print(f"collection {meta.name} released", flush=True)


async def _search(proxy: Any, args: argparse.Namespace, inputs: tuple[Any, Any, list[str]]) -> None:

    vectors, query, fields = inputs
    hits = await proxy.search(args.name, vectors, limit=args.limit, filter=query, output_fields=fields,
                              consistency=args.consistency)
    print(json.dumps(hits), flush=True)


async def _status_report(proxy: Any, args: argparse.Namespace) -> dict[str, Any]:
    from vecgrid.cluster.proxy.catalog_access import unary_call
    from vecgrid.proto import query_coord_pb2

    at = f"at {args.coord}"
    nodes = await unary_call(proxy.coord.ListQueryNode, query_coord_pb2.ListQueryNodeRequest(), timeout=30,
                             what=f"ListQueryNode {at}")
    shown = await unary_call(proxy.coord.ShowCollections, query_coord_pb2.ShowCollectionsRequest(), timeout=30,
                             what=f"ShowCollections {at}")
    loaded = dict(zip(shown.collectionIDs, shown.inMemory_percentages))
    metas = {m.id: m for m in await proxy.catalog.list(args.db)}
    for cid in loaded.keys() - metas.keys():  # loaded collections of other databases
        metas[cid] = await proxy.catalog.describe_id(cid)
    collections = []
    for cid, meta in sorted(metas.items()):
        entry: dict[str, Any] = {"name": meta.name, "id": cid, "loaded": cid in loaded,
                                 "load_percentage": int(loaded[cid]) if cid in loaded else None, "partitions": []}
        if cid in loaded:
            names = {pid: name for name, pid in meta.partitions.items()}
            try:
                states = await unary_call(proxy.coord.GetPartitionStates, query_coord_pb2.GetPartitionStatesRequest(
                    collectionID=cid), timeout=30, what=f"GetPartitionStates {at}")
            except errors.MilvusError as e:  # e.g. released meanwhile: report it, go on with the others
                entry["error"] = str(e)
            else:
                entry["partitions"] = [{"name": names.get(p.partitionID, ""), "id": p.partitionID,
                                        "state": query_coord_pb2.PartitionState.Name(p.state),
                                        "load_percentage": int(p.inMemory_percentage)}
                                       for p in states.partition_descriptions]
        collections.append(entry)
    return {"coordinator": args.coord,
            "nodes": [{"id": n.ID, "address": n.address, "state": n.state} for n in nodes.nodeInfos],
            "collections": collections}


def _status_text(report: dict[str, Any]) -> str:
    lines = [f"coordinator {report['coordinator']}", *_health_text(report["health"]),
             f"query nodes: {len(report['nodes'])}"]
    lines += [f"  node {n['id']:<6} {n['address']:<24} {n['state']}" for n in report["nodes"]]
    lines.append(f"collections: {len(report['collections'])}")
    for c in report["collections"]:
        load = f"loaded {c['load_percentage']} %" if c["loaded"] else "not loaded"
        lines.append(f"  {c['name']:<24} id {c['id']:<20} {load}")
        if "error" in c:
            lines.append(f"    partition states unavailable: {c['error']}")
        lines += [f"    partition {p['name'] or p['id']:<16} {p['state']:<16} {p['load_percentage']} %"
                  for p in c["partitions"]]
    return "\n".join(lines)


def _default_rest(coord: str, settings: Settings) -> str:
    host = coord.rsplit(":", 1)[0] if ":" in coord else coord
    return f"http://{host}:{settings.http.port}"


async def _health(rest: str) -> dict[str, Any]:
    """The coordinator's ``GET /health`` (its body also on 503); ``{"status": "unreachable", ...}`` when no
    answer comes: ``vecgrid status`` still prints what the gRPC calls told it."""
    from tornado.httpclient import AsyncHTTPClient, HTTPClientError

    url = rest.rstrip("/") + "/health"
    try:
        response = await AsyncHTTPClient().fetch(url, request_timeout=30)
        body = response.body
    except HTTPClientError as e:
        if e.response is None:
            return {"status": "unreachable", "url": url, "error": str(e)}
        body = e.response.body
    except OSError as e:
        return {"status": "unreachable", "url": url, "error": str(e)}
    try:
        return {**json.loads(body), "url": url}
    except ValueError:
        return {"status": "unreachable", "url": url, "error": f"not a health answer: {body[:200]!r}"}


def _health_text(health: dict[str, Any]) -> list[str]:
    if "components" not in health:
        return [f"health: {health['status']} ({health['url']}: {health.get('error', '')})"]
    lines = [f"health: {health['status']}"]
    for c in health["components"]:
        mark = "ok" if c["healthy"] else "UNHEALTHY"
        lines.append(f"  {c['name']:<16} {mark:<10} {c['state']:<12} {c['reason']}".rstrip())
    return lines


def _access_token(args: argparse.Namespace, settings: Settings, ca_file: str) -> str | None:
    """The caller's access token: ``--token-file``, ``VECGRID_TOKEN``, or a login as ``--user``."""
    if args.token_file:
        try:
            with open(args.token_file) as f:
                return f.read().strip()
        except OSError as e:
            raise UsageError(f"cannot read --token-file: {e}") from None
    if os.environ.get("VECGRID_TOKEN"):
        return os.environ["VECGRID_TOKEN"].strip()
    if not args.user:
        return None
    import getpass
    import urllib.error
    import urllib.request

    import ssl

    password = os.environ.get("VECGRID_PASSWORD") or getpass.getpass(f"password for {args.user}: ")
    scheme = "https" if ca_file else "http"
    url = (args.http or f"{scheme}://{args.coord.rsplit(':', 1)[0]}:{settings.http.port}").rstrip("/")
    body = json.dumps({"strategy": "local", "email": args.user, "password": password}).encode()
    req = urllib.request.Request(f"{url}/authentication", data=body, headers={"Content-Type": "application/json"})
    try:
        context = ssl.create_default_context(cafile=ca_file) if ca_file else None
        with urllib.request.urlopen(req, timeout=30, context=context) as resp:
            return json.loads(resp.read())["accessToken"]
    except urllib.error.HTTPError as e:
        raise errors.ParameterInvalid(f"login as {args.user} at {url} failed: {e.code} "
                                      f"{e.read()[:200].decode('utf-8', 'replace')}") from None
    except (urllib.error.URLError, OSError) as e:
        raise errors.ServiceUnavailable(f"cannot log in at {url}: {e}") from None


async def _client(args: argparse.Namespace, inputs: Any, settings: Settings) -> None:
    from pathlib import Path

    from vecgrid.cluster.proxy.proxy import Proxy
    from vecgrid.common.auth import BEARER_SCHEME, send_authorization
    from vecgrid.common.channels import use_tls

    ca_file = args.tls_ca or settings.common.tls_ca
    try:
        use_tls(Path(ca_file).read_bytes() if ca_file else None)
    except OSError as e:
        raise UsageError(f"cannot read the TLS CA {ca_file!r}: {e.strerror}") from None
    token = _access_token(args, settings, ca_file)
    send_authorization(BEARER_SCHEME + token if token else None)
    async with Proxy(args.coord, db_name=args.db) as proxy:
        if args.command == "load":
            await _load(proxy, args)
        elif args.command == "release":
            await _release(proxy, args)
        elif args.command == "search":
            await _search(proxy, args, inputs)
        elif args.command == "insert":
            await _insert(proxy, args, inputs)
        elif args.command == "delete":
            await _delete(proxy, args, inputs)
        elif args.command == "flush":
            await _flush(proxy, args)
        elif args.command == "compact":
            await _compact(proxy, args)
        elif args.command == "create-index":
            await _create_index(proxy, args, inputs)
        elif args.command == "drop-index":
            await _drop_index(proxy, args)
        else:
            report = await _status_report(proxy, args)
            report["health"] = await _health(args.rest or _default_rest(args.coord, settings))
            if args.json:
                print(json.dumps(report, indent=2), flush=True)
            else:
                print(_status_text(report), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except BrokenPipeError:
        # Python's advice: point stdout at devnull, or the interpreter's flush at exit fails again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    try:
        args = _parser().parse_args(argv)
        settings = Settings.load(getattr(args, "config", None), overrides=_overrides(args))
        if args.command == "worker":
            parse_resources(args.resources)
        inputs = {"search": _search_inputs, "insert": _insert_inputs, "delete": _delete_inputs,
                  "create-index": _index_params}.get(
            args.command, lambda _: None)(args)
        if args.command == "load" and args.replicas is not None and args.replicas < 1:
            raise UsageError(f"--replicas must be 1 or more, got {args.replicas}")
        if args.command == "drop-index" and not (args.field or args.index_name):
            raise UsageError("name the index: --field F, --index-name N or both")
    except (UsageError, ConfigError) as e:
        print(f"vecgrid: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    _configure_logging(settings.common.log_level)
    try:
        if args.command == "import":
            return _import(settings, args)
        if args.command in CLIENT_COMMANDS:
            asyncio.run(_client(args, inputs, settings))
        elif args.command == "serve":
            asyncio.run(_serve(settings))
        elif args.command == "coord":
            asyncio.run(_coord(settings))
        elif args.command == "users":
            asyncio.run(_users(settings, args))
        elif args.command == "certs":
            from vecgrid.rpc.tls import make_test_certificates
            paths = make_test_certificates(args.directory, args.host or ["127.0.0.1", "localhost"], args.days)
            print(json.dumps({"tls_ca": paths["ca"], "tls_cert": paths["cert"], "tls_key": paths["key"]}))
        elif args.command == "conformance-app":
            from vecgrid.http.feathers.conformance import serve as serve_conformance_app
            asyncio.run(serve_conformance_app(args.port, args.host))
        else:
            asyncio.run(_worker(settings, args))
    except KeyboardInterrupt:
        pass
    except UsageError as e:
        print(f"vecgrid: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        raise  # not an error of the command: main ends quietly
    except (OSError, TimeoutError, ConfigError, errors.MilvusError, FeathersError) as e:
        print(f"vecgrid: error: {e}", file=sys.stderr)
        return _exit_status(e)
    return 0


def _exit_status(error: Exception) -> int:
    """A port in use is bad input (pick another port, or stop what holds it), as a usage error is; the
    rest failed at run time."""
    from vecgrid.rpc.server import PortInUse

    return EXIT_USAGE if isinstance(error, PortInUse) else EXIT_RUNTIME


if __name__ == "__main__":
    sys.exit(main())
