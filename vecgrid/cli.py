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
    vecgrid index create NAME --field F [--type T] [--metric M] [--params JSON] [--no-wait]
                                                             index a field; waits until its rows are indexed
                                                             (alias: vecgrid create-index)
    vecgrid index describe NAME [--field F | --index-name N] type, metric, parameters and build progress
    vecgrid index drop NAME --field F | --index-name N       drop an index of a collection not loaded
                                                             (alias: vecgrid drop-index)

Writes print progress on a terminal and a JSON summary as their last line, like ``vecgrid import``.
Flush, compaction and index builds follow the coordinator's progress (GetFlushState, GetCompactionState,
GetIndexBuildProgress of ``vecgrid.write.WriteService``) until done; ``--no-wait`` prints the started
job instead.

Definitions, through the coordinator's REST API (``--http URL``, default ``http://127.0.0.1:<http.port>``)
with :mod:`vecgrid.client`, as any REST client calls it:

    vecgrid collection create NAME --dim N [--metric L2|IP|COSINE] [--pk-field F] [--vector-field F] [--auto-id]
    vecgrid collection create NAME --schema FILE.json        the REST create body (or a schema alone)
    vecgrid collection list | describe NAME | drop NAME | rename NAME NEW_NAME
    vecgrid partition create|drop COLLECTION PARTITION, vecgrid partition list COLLECTION
    vecgrid users add|list|remove|passwd ... --http URL      the users service, as an admin (without
                                                             --http: the data dir's store, no coordinator)

They print text, or one JSON document with ``--json``.  Every client command takes the same credentials:
``--user EMAIL`` (password from ``VECGRID_PASSWORD`` or a prompt) or ``--token-file`` / ``VECGRID_TOKEN``,
and ``--tls-ca``.

Logs go to stderr in one format for every logger of the processes a command starts (``--log-format
text|json``, ``common.log_format``): Dask's, bokeh's and Tornado's handlers get the same formatter, and the
worker processes of ``serve`` / ``worker`` read the same config from ``DASK_DISTRIBUTED__LOGGING`` when
they import ``distributed``.  The banner goes to stdout.

Every command reads the same settings (``--config FILE``, ``VECGRID_*`` variables,
flags).  A user error — unknown flag, unreadable config, port in use — prints one
line ``vecgrid: error: ...`` and exits non-zero; it never shows a traceback.  Output into a pipe whose
reader went away (``vecgrid status --json | head``) ends quietly with status 141, as Unix tools do.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import signal
import socket
import sys
import time
from typing import Any, Sequence

from vecgrid import __version__, errors
from vecgrid.common.feathers_errors import FeathersError
from vecgrid.common.logs import LOG_FORMATS, configure_logging, worker_logging
from vecgrid.config import ConfigError, Settings
from vecgrid.storage import arrow_pool

EXIT_USAGE = 2
EXIT_RUNTIME = 1
#: the reader of the output went away (``vecgrid status --json | head``): what a shell shows for a tool
#: that SIGPIPE ended (128 + 13), as ``cat`` or ``yes`` would
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
DEFAULT_COORD = "127.0.0.1:19531"
CLIENT_COMMANDS = ("load", "release", "search", "status", "insert", "delete", "flush", "compact", "create-index",
                   "drop-index", "describe-index")
#: ``vecgrid index SUB`` runs as the client command (``create-index`` and ``drop-index`` stay its aliases)
INDEX_COMMANDS = {"create": "create-index", "describe": "describe-index", "drop": "drop-index"}
#: the groups that call the coordinator's REST API
REST_COMMANDS = ("collection", "partition")
SERVER_COMMANDS = ("serve", "coord", "worker")   # long-lived processes that load segments
#: seconds between two reads of a job's progress
POLL_S = 0.2
INSERT_BATCH_ROWS = 10_000
#: seconds a REST call of ``vecgrid users --http`` may take
REST_TIMEOUT_S = 60.0


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
    common.add_argument("--log-format", choices=LOG_FORMATS,
                        help="text lines or one JSON object a line, for every logger of every process it starts "
                             "(common.log_format)")

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
    serve.add_argument("--in-process", action="store_const", const=True, dest="in_process",
                       help="one query node in this process, no worker process: searches take no second "
                            "hop (dask.in_process; implies --workers 1)")
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

    credentials = _Parser(add_help=False)
    credentials.add_argument("--user", metavar="EMAIL",
                             help="when auth is on: log in as this user (password from VECGRID_PASSWORD or a prompt)")
    credentials.add_argument("--token-file", metavar="FILE",
                             help="when auth is on: a file holding an access token (or set VECGRID_TOKEN)")
    credentials.add_argument("--tls-ca", metavar="FILE",
                             help="call the cluster over TLS, trusting this CA (PEM; or common.tls_ca)")

    client = _Parser(add_help=False, parents=[credentials])
    client.add_argument("--coord", default=DEFAULT_COORD, metavar="HOST:PORT",
                        help=f"the coordinator's gRPC address (default {DEFAULT_COORD})")
    client.add_argument("--db", default="", help="database (default: the default database)")
    client.add_argument("--config", metavar="FILE", help="TOML settings file (for common.log_level)")
    client.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    client.add_argument("--log-format", choices=LOG_FORMATS, help="text or JSON log lines (common.log_format)")
    client.add_argument("--http", metavar="URL",
                        help="the REST address --user logs in at (default: http(s)://<coordinator host>:19121)")
    # collection and partition commands: the REST API, as any REST client calls it
    rest_client = _Parser(add_help=False, parents=[credentials])
    rest_client.add_argument("--http", "--rest", metavar="URL", dest="http",
                             help="the coordinator's REST address (default: http(s)://127.0.0.1:<http.port>, "
                                  "port 19121 unless the settings say otherwise)")
    rest_client.add_argument("--config", metavar="FILE", help="TOML settings file (http.port, common.tls_ca)")
    rest_client.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    rest_client.add_argument("--log-format", choices=LOG_FORMATS, help="text or JSON log lines (common.log_format)")
    rest_client.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                             help="give up on an answer after this long (default 600)")
    as_json = _Parser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print one JSON object (or array) instead of text")

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
    index_create_help = "index a vector field; shows the build progress until every flushed row is indexed"
    index_drop_help = "drop a field's index (the collection must not be loaded)"
    _index_create_args(sub.add_parser("create-index", parents=[client, no_wait, as_json],
                                      help=f"{index_create_help} (as 'vecgrid index create')"))
    _index_drop_args(sub.add_parser("drop-index", parents=[client, as_json],
                                    help=f"{index_drop_help} (as 'vecgrid index drop')"))
    indexes = sub.add_parser("index", help="create, describe and drop the indexes of a collection")
    index_sub = indexes.add_subparsers(dest="index_command", required=True, parser_class=_Parser)
    _index_create_args(index_sub.add_parser("create", parents=[client, no_wait, as_json], help=index_create_help))
    index_describe = index_sub.add_parser("describe", parents=[client, as_json],
                                          help="a collection's indexes: type, metric, parameters, build progress")
    index_describe.add_argument("name", metavar="NAME")
    index_describe.add_argument("--field", default="", help="only the index of this field")
    index_describe.add_argument("--index-name", default="", help="only the index of this name")
    _index_drop_args(index_sub.add_parser("drop", parents=[client, as_json], help=index_drop_help))

    collections = sub.add_parser("collection", help="create, describe, list, rename and drop collections (REST)")
    coll_sub = collections.add_subparsers(dest="collection_command", required=True, parser_class=_Parser)
    coll_create = coll_sub.add_parser("create", parents=[rest_client, as_json],
                                      help="create a collection: --dim N (the quick form) or --schema FILE.json")
    coll_create.add_argument("name", metavar="NAME")
    form = coll_create.add_mutually_exclusive_group(required=True)
    form.add_argument("--dim", type=int, metavar="N", help="the quick form: a vector field of N dimensions")
    form.add_argument("--schema", metavar="FILE.json",
                      help="the full form: the REST create body ({\"schema\": {...}, \"indexes\": [...], ...}) "
                           "or a schema alone ({\"fields\": [...]})")
    coll_create.add_argument("--metric", type=str.upper, choices=["L2", "IP", "COSINE"],
                             help="quick form: the metric of its AUTOINDEX (default COSINE)")
    coll_create.add_argument("--pk-field", metavar="NAME", help="quick form: the primary key's name (default id)")
    coll_create.add_argument("--vector-field", metavar="NAME", help="quick form: the vector field's name (default vector)")
    coll_create.add_argument("--id-type", choices=["int64", "varchar"],
                             help="quick form: the primary key's type (default int64)")
    coll_create.add_argument("--max-length", type=int, metavar="N", help="quick form: a varchar key's longest length")
    coll_create.add_argument("--auto-id", action="store_true", help="quick form: the cluster assigns primary keys")
    coll_create.add_argument("--shards", type=int, metavar="N", help="DML channels (default 1)")
    coll_create.add_argument("--description", help="the collection's description")
    coll_create.add_argument("--load", action="store_true", help="load it before answering")
    coll_sub.add_parser("list", parents=[rest_client, as_json], help="the collections with rows and load state")
    coll_describe = coll_sub.add_parser("describe", parents=[rest_client, as_json],
                                        help="schema, partitions, indexes, load state of a collection")
    coll_describe.add_argument("name", metavar="NAME")
    coll_drop = coll_sub.add_parser("drop", parents=[rest_client, as_json],
                                    help="drop a collection (released first) and its data")
    coll_drop.add_argument("name", metavar="NAME")
    coll_rename = coll_sub.add_parser("rename", parents=[rest_client, as_json], help="rename a collection")
    coll_rename.add_argument("name", metavar="NAME")
    coll_rename.add_argument("new_name", metavar="NEW_NAME")

    partitions = sub.add_parser("partition", help="create, list and drop the partitions of a collection (REST)")
    part_sub = partitions.add_subparsers(dest="partition_command", required=True, parser_class=_Parser)
    part_create = part_sub.add_parser("create", parents=[rest_client, as_json], help="create a partition")
    part_list = part_sub.add_parser("list", parents=[rest_client, as_json],
                                    help="a collection's partitions with rows, load state and placement")
    part_drop = part_sub.add_parser("drop", parents=[rest_client, as_json],
                                    help="drop a partition (released first) and its data")
    for p in (part_create, part_list, part_drop):
        p.add_argument("collection", metavar="COLLECTION")
    for p in (part_create, part_drop):
        p.add_argument("partition", metavar="PARTITION")

    worker = sub.add_parser("worker", parents=[common], help="run a worker that serves as a QueryNode")
    worker.add_argument("--scheduler", required=True, help="Dask scheduler address")
    worker.add_argument("--name", default=None,
                        help="worker name; the node id is tied to it (default: the host name)")
    worker.add_argument("--nthreads", type=int, default=2)
    worker.add_argument("--resources", default="", help="e.g. GPU=1")
    worker.add_argument("--node-port", type=int, help="QueryNode gRPC port (querynode.port, 0 = free port)")

    # Users: in the data dir's metadata store (no coordinator needed: the first admin), or, with --http, through
    # a running coordinator's REST users service as an admin (--user / --token-file).
    users_where = _Parser(add_help=False, parents=[common, credentials])
    users_where.add_argument("--http", "--rest", metavar="URL", dest="http",
                             help="manage the users of the coordinator at this REST address, logged in as an admin "
                                  "(--user or --token-file), instead of the data dir's store")
    users = sub.add_parser("users", help="manage REST users (the data dir's store, or a coordinator with --http)")
    users_sub = users.add_subparsers(dest="users_command", required=True, parser_class=_Parser)
    users_add = users_sub.add_parser("add", parents=[users_where, as_json],
                                     help="add a user (password from a prompt or stdin)")
    users_add.add_argument("email")
    users_add.add_argument("--role", action="append", dest="roles", choices=["admin", "writer", "reader"],
                           help="role of the user; repeat for several (default: reader)")
    users_add.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    users_sub.add_parser("list", parents=[users_where, as_json],
                         help="print the users as JSON lines, or one JSON array with --json (no passwords)")
    users_remove = users_sub.add_parser("remove", parents=[users_where, as_json], help="remove a user")
    users_remove.add_argument("email")
    users_passwd = users_sub.add_parser("passwd", parents=[users_where, as_json], help="set a user's password")
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


def _index_create_args(index: _Parser) -> None:
    """``vecgrid index create`` and its alias ``vecgrid create-index``."""
    index.add_argument("name", metavar="NAME")
    index.add_argument("--field", required=True, help="the vector field")
    index.add_argument("--type", default="", dest="index_type", help="index type (default AUTOINDEX)")
    index.add_argument("--metric", default="", help="metric type (default: the index's default)")
    index.add_argument("--params", default="{}", help='index parameters as JSON, e.g. {"nlist": 128}')
    index.add_argument("--index-name", default="", help="the index's name (default: the field's)")
    index.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                       help="give up waiting for the builds after this long (default 600)")


def _index_drop_args(drop_index: _Parser) -> None:
    """``vecgrid index drop`` and its alias ``vecgrid drop-index``."""
    drop_index.add_argument("name", metavar="NAME")
    drop_index.add_argument("--field", default="", help="the indexed field")
    drop_index.add_argument("--index-name", default="", help="the index's name")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "common.data_dir": getattr(args, "data_dir", None),
        "common.host": getattr(args, "host", None),
        "common.log_level": getattr(args, "log_level", None),
        "common.log_format": getattr(args, "log_format", None),
        "querycoord.port": getattr(args, "coord_port", None),
        "http.port": getattr(args, "http_port", None),
        "proxy.port": getattr(args, "milvus_port", None),
        "dask.workers": 1 if getattr(args, "in_process", None) and getattr(args, "workers", None) is None
        else getattr(args, "workers", None),
        "dask.in_process": getattr(args, "in_process", None),
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


def _check_users_args(args: argparse.Namespace) -> None:
    """``vecgrid users`` works on the data dir's store or, with ``--http``, through a coordinator: not both."""
    if args.http and args.data_dir:
        raise UsageError("give --data-dir (the store itself) or --http (a running coordinator), not both")
    remote_only = [flag for flag, value in (("--user", args.user), ("--token-file", args.token_file),
                                            ("--tls-ca", args.tls_ca)) if value]
    if remote_only and not args.http:
        verb = "go" if len(remote_only) > 1 else "goes"
        raise UsageError(f"{', '.join(remote_only)} {verb} with --http URL (the coordinator's users service)")


async def _users(settings: Settings, args: argparse.Namespace) -> None:
    """``vecgrid users``: the users service on the data dir's store, called as server code."""
    from vecgrid.http.feathers.application import Application
    from vecgrid.http.services.accounts import add_user, find_user, mount_users, password_hasher
    from vecgrid.http.services.revocations import ClusterRevocations
    from vecgrid.storage.layout import DataDir

    store = DataDir(settings.common.data_dir).open_store()
    try:
        api = Application()
        # a removal refuses the user's tokens in the store, where the coordinator reads them (every 5 s)
        mount_users(api, store, password_hasher(settings), ClusterRevocations.load(store),
                    settings.http.token_lifetime_s)
        users = api.service("users")
        if args.users_command == "add":
            _print_users(args, await add_user(api, args.email, _read_password(args), args.roles or ["reader"]))
        elif args.users_command == "list":
            _print_users(args, await users.find({"paginate": False}))
        elif args.users_command == "remove":
            _print_users(args, await users.remove((await find_user(api, args.email))["id"]))
        else:
            _print_users(args, await users.patch((await find_user(api, args.email))["id"],
                                                 {"password": _read_password(args)}))
    finally:
        store.close()


def _users_rest(settings: Settings, args: argparse.Namespace) -> None:
    """``vecgrid users ... --http URL``: the coordinator's REST ``users`` service, as an admin (only an admin
    manages other users; any user may change their own password)."""
    from vecgrid.common.feathers_errors import NotFound

    password = _read_password(args) if args.users_command in ("add", "passwd") else ""
    app = _rest_app(args, settings)
    try:
        users = app.service("users")

        def find(email: str) -> dict[str, Any]:
            found = _records(users.find({"query": {"email": email}}))
            if not found:
                raise NotFound(f"no user with email {email!r}")
            return found[0]

        if args.users_command == "add":
            _print_users(args, users.create({"email": args.email, "password": password,
                                             "roles": args.roles or ["reader"]}))
        elif args.users_command == "list":
            listed: list[dict[str, Any]] = []
            while True:
                page = users.find({"query": {"$skip": len(listed)}})
                records = _records(page)
                listed += records
                if not isinstance(page, dict) or not records or len(listed) >= int(page.get("total", 0)):
                    break
            _print_users(args, listed)
        elif args.users_command == "remove":
            _print_users(args, users.remove(find(args.email)["id"]))
        else:
            _print_users(args, users.patch(find(args.email)["id"], {"password": password}))
    finally:
        app.close()


def _print_users(args: argparse.Namespace, answer: Any) -> None:
    """``add`` prints the user and ``list`` one user a line as JSON (as they always did), ``--json`` one
    object or array; ``remove`` and ``passwd`` say what they did."""
    public = [{k: v for k, v in user.items() if k != "password"}
              for user in (answer if isinstance(answer, list) else [answer])]
    if args.json:
        print(json.dumps(public if args.users_command == "list" else public[0]), flush=True)
    elif args.users_command in ("add", "list"):
        for user in public:
            print(json.dumps(user), flush=True)
    else:
        done = "removed" if args.users_command == "remove" else "has a new password"
        print(f"user {public[0].get('email', args.email)} {done}", flush=True)


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
    lines += [f"dashboard: {c['dashboard_page']}" for c in health["components"] if c.get("dashboard_page")]
    return lines


def _access_token(args: argparse.Namespace, ca_file: str, url: str) -> str | None:
    """The caller's access token: ``--token-file``, ``VECGRID_TOKEN``, or a login as ``--user`` at the REST
    address ``url``."""
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
    url = url.rstrip("/")
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
    scheme = "https" if ca_file else "http"
    token = _access_token(args, ca_file, args.http or f"{scheme}://{args.coord.rsplit(':', 1)[0]}:{settings.http.port}")
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
        elif args.command == "describe-index":
            indexes = await _describe_index(proxy, args)
            print(json.dumps(indexes, indent=2) if args.json else _indexes_text(args.name, indexes), flush=True)
        else:
            report = await _status_report(proxy, args)
            report["health"] = await _health(args.rest or _default_rest(args.coord, settings))
            if args.json:
                print(json.dumps(report, indent=2), flush=True)
            else:
                print(_status_text(report), flush=True)


async def _describe_index(proxy: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each index of the collection (or the one named by ``--field`` / ``--index-name``): its definition from
    the catalog (DescribeCollection of the catalog service) and its build progress (GetIndexBuildProgress)."""
    from vecgrid.storage.catalog.index_rules import INDEX_TYPE_KEY, METRIC_TYPE_KEY
    from vecgrid.storage.catalog.schema_rules import kv_dict

    meta = await proxy.describe(args.name)
    built = {i["index_name"]: i for i in await proxy.writes.index_progress(proxy.db_name, meta.name)}
    fields = {f.fieldID: f.name for f in meta.schema.fields}
    indexes = []
    for info in meta.pb.indexes:
        field = fields.get(info.fieldID, "")
        if (args.field and field != args.field) or (args.index_name and info.index_name != args.index_name):
            continue
        params = kv_dict(info.index_params)
        progress = built.get(info.index_name, {})
        indexes.append({"collection": meta.name, "index_name": info.index_name, "field": field,
                        "type": params.pop(INDEX_TYPE_KEY, ""), "metric": params.pop(METRIC_TYPE_KEY, ""),
                        "params": {k: _param_value(v) for k, v in params.items()},
                        **{k: progress[k] for k in ("state", "progress", "indexed_rows", "total_rows",
                                                    "pending_index_rows", "fail_reason") if k in progress}})
    if (args.field or args.index_name) and not indexes:
        named = " and ".join(f"{what} {value!r}" for what, value in (("field", args.field),
                                                                      ("name", args.index_name)) if value)
        raise errors.IndexNotFound(f"collection {meta.name!r} has no index with {named}", collection=meta.name)
    return indexes


def _param_value(text: str) -> Any:
    """An index parameter as the catalog keeps it (a string) back to its JSON value: 128, {"nlist": 128}."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _indexes_text(collection: str, indexes: list[dict[str, Any]]) -> str:
    if not indexes:
        return f"collection {collection} has no index"
    lines = []
    for i in indexes:
        params = json.dumps(i["params"], separators=(",", ":")) if i["params"] else ""
        lines.append(f"index {i['index_name']} on {collection}.{i['field']}: {i['type']} {i['metric']} {params}".rstrip())
        if "state" in i:
            lines.append(f"  {i['state']} {i['progress']} % ({i['indexed_rows']:,}/{i['total_rows']:,} rows indexed, "
                         f"{i['pending_index_rows']:,} pending)")
        if i.get("fail_reason"):
            lines.append(f"  last failure: {i['fail_reason']}")
    return "\n".join(lines)


# --- collection and partition commands: the REST API ----------------------------------------------------

_ID_TYPES = {"int64": "Int64", "varchar": "VarChar"}


def _collection_body(args: argparse.Namespace) -> dict[str, Any]:
    """The REST create body of ``vecgrid collection create``, checked before anything connects."""
    quick = {"--metric": args.metric, "--pk-field": args.pk_field, "--vector-field": args.vector_field,
             "--id-type": args.id_type, "--max-length": args.max_length, "--auto-id": args.auto_id or None}
    body: dict[str, Any] = {"name": args.name}
    if args.schema is not None:
        given = [flag for flag, value in quick.items() if value is not None]
        if given:
            raise UsageError(f"{', '.join(given)} belong to the quick form (--dim), not to --schema")
        body.update(_schema_file(args.schema, args.name))
    else:
        if args.dim < 1:
            raise UsageError(f"--dim must be 1 or more, got {args.dim}")
        if args.max_length is not None and (args.id_type != "varchar" or args.max_length < 1):
            raise UsageError("--max-length N (1 or more) goes with --id-type varchar")
        body["dimension"] = args.dim
        body.update({key: value for key, value in (
            ("metric", args.metric), ("primaryField", args.pk_field), ("vectorField", args.vector_field),
            ("idType", _ID_TYPES.get(args.id_type or "")), ("maxLength", args.max_length),
            ("autoId", True if args.auto_id else None)) if value is not None})
    if args.shards is not None:
        if args.shards < 1:
            raise UsageError(f"--shards must be 1 or more, got {args.shards}")
        body["shards"] = args.shards
    if args.description is not None:
        body["description"] = args.description
    if args.load:
        body["load"] = True
    return body


def _schema_file(path: str, name: str) -> dict[str, Any]:
    """``--schema FILE.json``: the REST create body (``{"schema": {...}, "indexes": [...], ...}``) or a schema
    alone (``{"fields": [...]}``)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise UsageError(f"cannot read --schema {path}: {e.strerror}") from None
    except ValueError as e:
        raise UsageError(f"--schema {path} is not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise UsageError(f"--schema {path} must hold a JSON object: the REST create body or a schema")
    if "fields" in doc:
        doc = {"schema": doc}
    if not isinstance(doc.get("schema"), dict):
        raise UsageError(f'--schema {path} has no "schema" object (nor "fields"): see docs/rest-api.md, Collections')
    if doc.get("name", name) != name:
        raise UsageError(f"--schema {path} names collection {doc['name']!r}, not {name!r}")
    return {k: v for k, v in doc.items() if k != "name"}


def _rest_url(args: argparse.Namespace, settings: Settings, ca_file: str) -> str:
    return (args.http or f"{'https' if ca_file else 'http'}://127.0.0.1:{settings.http.port}").rstrip("/")


def _rest_app(args: argparse.Namespace, settings: Settings) -> Any:
    """A Feathers client of the coordinator's REST API (:mod:`vecgrid.client`), with the caller's token."""
    import ssl
    import urllib.request

    from vecgrid.client import rest

    ca_file = args.tls_ca or settings.common.tls_ca
    opener = None
    if ca_file:
        try:
            context = ssl.create_default_context(cafile=ca_file)
        except (OSError, ssl.SSLError) as e:
            raise UsageError(f"cannot read the TLS CA {ca_file!r}: {e}") from None
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))
    url = _rest_url(args, settings, ca_file)
    token = _access_token(args, ca_file, url)
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return rest(url).urllib(opener, headers=headers, timeout=getattr(args, "timeout", REST_TIMEOUT_S))


def _records(found: Any) -> list[dict[str, Any]]:
    """A find's records, paginated (``{total, data}``) or not."""
    return found["data"] if isinstance(found, dict) else list(found)


def _load_text(record: dict[str, Any]) -> str:
    state = str(record.get("loadState", "")).removeprefix("LoadState")
    return f"{state} {record.get('loadPercent', 0)} %" if state == "Loading" else state


def _collections_text(found: list[dict[str, Any]]) -> str:
    if not found:
        return "no collections"
    lines = [f"{'NAME':<24} {'ID':<20} {'ROWS':>12}  LOAD"]
    lines += [f"{c['name']:<24} {c['id']!s:<20} {c.get('rowCount', 0):>12,}  {_load_text(c)}" for c in found]
    return "\n".join(lines)


def _collection_text(c: dict[str, Any]) -> str:
    schema = c.get("schema", {})
    lines = [f"collection {c['name']} (id {c['id']})"]
    if c.get("description"):
        lines.append(f"  description : {c['description']}")
    lines += [f"  rows        : {c.get('rowCount', 0):,}",
              f"  load        : {_load_text(c)}" + (f", {c['replicas']} replica(s) in {', '.join(c['resourceGroups'])}"
                                                     if c.get("replicas") else ""),
              f"  shards      : {c.get('shards', '')}   consistency: {c.get('consistencyLevel', '')}",
              "  fields      :"]
    for f in schema.get("fields", []):
        marks = [f"{k}={v}" for k, v in f.get("params", {}).items()]
        marks += ["primary key"] if f.get("isPrimary") else []
        marks += ["auto id"] if f.get("autoId") else []
        lines.append(f"    {f['name']:<20} {f['type']:<14} {' '.join(marks)}".rstrip())
    if schema.get("enableDynamicField"):
        lines.append("    (dynamic field: other keys of a row are kept and filterable)")
    lines.append(f"  partitions  : {', '.join(p['name'] for p in c.get('partitions', []))}")
    lines.append("  indexes     :" + ("" if c.get("indexes") else " none"))
    for i in c.get("indexes", []):
        params = json.dumps(i["params"], separators=(",", ":")) if i.get("params") else ""
        what = " ".join(part for part in (i["type"], i["metric"], params, i["state"]) if part)
        lines.append(f"    {i['name']:<20} on {i['field']}: {what} {i.get('progress', 0)} %")
    return "\n".join(lines)


def _partitions_text(collection: str, found: list[dict[str, Any]]) -> str:
    lines = [f"partitions of {collection}:", f"  {'NAME':<24} {'ID':<20} {'ROWS':>12}  LOAD"]
    lines += [f"  {p['name']:<24} {p['id']!s:<20} {p.get('rowCount', 0):>12,}  {_load_text(p)}"
              + (f" ({p['placement']})" if p.get("placement", "NotLoaded") != "NotLoaded" else "") for p in found]
    return "\n".join(lines)


def _rest_command(args: argparse.Namespace, settings: Settings, body: dict[str, Any] | None) -> None:
    """``vecgrid collection ...`` / ``partition ...``: one REST call, its answer as text or JSON."""
    app = _rest_app(args, settings)
    try:
        if args.command == "collection":
            answer, text = _collection_call(app, args, body)
        else:
            answer, text = _partition_call(app, args)
    finally:
        app.close()
    print(json.dumps(answer, indent=2) if args.json else text, flush=True)


def _collection_call(app: Any, args: argparse.Namespace, body: dict[str, Any] | None) -> tuple[Any, str]:
    collections = app.service("collections", methods=["rename"])
    which = args.collection_command
    if which == "create":
        created = collections.create(body)
        return created, f"created {_collection_text(created)}"
    if which == "list":
        found = _records(collections.find())
        return found, _collections_text(found)
    if which == "describe":
        described = collections.get(args.name)
        return described, _collection_text(described)
    if which == "drop":
        dropped = collections.remove(args.name)
        return dropped, f"collection {dropped['name']} dropped ({dropped.get('rowCount', 0):,} rows)"
    renamed = collections.rename({"name": args.name, "newName": args.new_name})
    return renamed, f"collection {args.name} renamed to {renamed['name']}"


def _partition_call(app: Any, args: argparse.Namespace) -> tuple[Any, str]:
    partitions = app.service("collections/:collection/partitions")
    route = {"route": {"collection": args.collection}}
    which = args.partition_command
    if which == "create":
        created = partitions.create({"name": args.partition}, route)
        return created, f"partition {created['name']} of collection {args.collection} created (id {created['id']})"
    if which == "list":
        found = _records(partitions.find(route))
        return found, _partitions_text(args.collection, found)
    dropped = partitions.remove(args.partition, route)
    return dropped, f"partition {dropped['name']} of collection {args.collection} dropped ({dropped.get('rowCount', 0):,} rows)"


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except BrokenPipeError:
        # Python's advice: point stdout at devnull, or the interpreter's flush at exit fails again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _process_settings(command: str) -> None:
    """What a server process sets before anything imports pyarrow (its children inherit it), and the
    intervals of Dask's periodic work before it starts a Dask server."""
    if command in SERVER_COMMANDS:
        arrow_pool.use_system_allocator()
        from vecgrid.cluster import dask_intervals
        dask_intervals.stretch()


def _run(argv: Sequence[str] | None) -> int:
    try:
        args = _parser().parse_args(argv)
        _process_settings(args.command)
        if args.command == "index":
            args.command = INDEX_COMMANDS[args.index_command]
        settings = Settings.load(getattr(args, "config", None), overrides=_overrides(args))
        if settings.common.log_format not in LOG_FORMATS:
            raise ConfigError(f"common.log_format must be text or json, not {settings.common.log_format!r}")
        if args.command == "worker":
            parse_resources(args.resources)
        if args.command == "serve":
            from vecgrid.deploy import EmbeddedCluster
            EmbeddedCluster.check(settings)
        inputs = {"search": _search_inputs, "insert": _insert_inputs, "delete": _delete_inputs,
                  "create-index": _index_params}.get(
            args.command, lambda _: None)(args)
        if args.command == "load" and args.replicas is not None and args.replicas < 1:
            raise UsageError(f"--replicas must be 1 or more, got {args.replicas}")
        if args.command == "drop-index" and not (args.field or args.index_name):
            raise UsageError("name the index: --field F, --index-name N or both")
        if args.command == "collection" and args.collection_command == "create":
            inputs = _collection_body(args)
        if args.command == "collection" and args.collection_command == "rename" and args.new_name == args.name:
            raise UsageError(f"collection {args.name!r} already has that name")
        if args.command == "users":
            _check_users_args(args)
    except (UsageError, ConfigError) as e:
        print(f"vecgrid: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    # Dask's logging config applies when distributed is imported: only the processes that run Dask do
    configure_logging(settings.common.log_level, settings.common.log_format, dask=args.command in SERVER_COMMANDS)
    try:
        if args.command == "import":
            return _import(settings, args)
        if args.command in CLIENT_COMMANDS:
            asyncio.run(_client(args, inputs, settings))
        elif args.command in REST_COMMANDS:
            _rest_command(args, settings, inputs)
        elif args.command == "serve":
            with worker_logging(settings.common.log_level, settings.common.log_format):
                asyncio.run(_serve(settings))
        elif args.command == "coord":
            asyncio.run(_coord(settings))
        elif args.command == "users" and args.http:
            _users_rest(settings, args)
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
            with worker_logging(settings.common.log_level, settings.common.log_format):
                asyncio.run(_worker(settings, args))
    except KeyboardInterrupt:
        pass
    except UsageError as e:
        print(f"vecgrid: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        raise  # not an error of the command: main ends quietly
    except (OSError, TimeoutError, ConfigError, errors.MilvusError, FeathersError) as e:
        print(f"vecgrid: error: {_error_text(e)}", file=sys.stderr)
        return _exit_status(e)
    return 0


def _error_text(error: Exception) -> str:
    """The one error line: a REST answer's per-field ``errors`` go with its message."""
    if isinstance(error, FeathersError) and isinstance(error.errors, dict) and error.errors:
        return f"{error}: " + "; ".join(f"{field} {why}" for field, why in error.errors.items())
    return str(error)


def _exit_status(error: Exception) -> int:
    """A port in use is bad input (pick another port, or stop what holds it), as a usage error is; the
    rest failed at run time."""
    from vecgrid.rpc.server import PortInUse

    return EXIT_USAGE if isinstance(error, PortInUse) else EXIT_RUNTIME


if __name__ == "__main__":
    sys.exit(main())
