"""``vecgrid`` command line.

    vecgrid serve                      embedded cluster: LocalCluster + coordinator + REST + gRPC
    vecgrid coord  --scheduler ADDR    the coordinator against a running `dask scheduler`
    vecgrid worker --scheduler ADDR    a Dask worker that becomes a QueryNode

Every command reads the same settings (``--config FILE``, ``VECGRID_*`` variables,
flags).  A user error — unknown flag, unreadable config, port in use — prints one
line ``vecgrid: error: ...`` and exits non-zero; it never shows a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sys
from typing import Any, Sequence

from vecgrid import __version__
from vecgrid.config import ConfigError, Settings

EXIT_USAGE = 2
EXIT_RUNTIME = 1


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

    worker = sub.add_parser("worker", parents=[common], help="run a worker that serves as a QueryNode")
    worker.add_argument("--scheduler", required=True, help="Dask scheduler address")
    worker.add_argument("--name", default=None,
                        help="worker name; the node id is tied to it (default: the host name)")
    worker.add_argument("--nthreads", type=int, default=2)
    worker.add_argument("--resources", default="", help="e.g. GPU=1")
    worker.add_argument("--node-port", type=int, help="QueryNode gRPC port (querynode.port, 0 = free port)")
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "common.data_dir": getattr(args, "data_dir", None),
        "common.host": getattr(args, "host", None),
        "common.log_level": getattr(args, "log_level", None),
        "querycoord.port": getattr(args, "coord_port", None),
        "http.port": getattr(args, "http_port", None),
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


def _import(settings: Settings, args: argparse.Namespace) -> int:
    import json

    from vecgrid import errors
    from vecgrid.storage.bulk_import import ImportOptions, bulk_import, summary_json

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
        summary = bulk_import(settings.common.data_dir, args.files, opts, progress=True)
    except errors.MilvusError as e:
        print(f"vecgrid: error: import failed, nothing was published: {e}", file=sys.stderr)
        return EXIT_RUNTIME
    print(summary_json(summary), flush=True)
    return 0


async def _worker(settings: Settings, args: argparse.Namespace) -> None:
    from distributed import Nanny

    env = {}
    if args.node_port is not None:
        # The plugin applies the worker's own VECGRID_* variables over the coordinator's settings.
        env["VECGRID_QUERYNODE_PORT"] = str(args.node_port)
    name = args.name or socket.gethostname()
    async with Nanny(settings.dask.scheduler, name=name, nthreads=args.nthreads,
                     resources=parse_resources(args.resources) or None, env=env) as nanny:
        print(f"vecgrid worker {name} at {nanny.worker_address} joined {settings.dask.scheduler}", flush=True)
        await _until_signalled()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        settings = Settings.load(args.config, overrides=_overrides(args))
        if args.command == "worker":
            parse_resources(args.resources)
    except (UsageError, ConfigError) as e:
        print(f"vecgrid: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    _configure_logging(settings.common.log_level)
    try:
        if args.command == "import":
            return _import(settings, args)
        if args.command == "serve":
            asyncio.run(_serve(settings))
        elif args.command == "coord":
            asyncio.run(_coord(settings))
        else:
            asyncio.run(_worker(settings, args))
    except KeyboardInterrupt:
        pass
    except UsageError as e:
        print(f"vecgrid: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, TimeoutError, ConfigError) as e:
        print(f"vecgrid: error: {e}", file=sys.stderr)
        return EXIT_RUNTIME
    return 0


if __name__ == "__main__":
    sys.exit(main())
