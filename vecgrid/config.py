"""One settings object for every vecgrid process.

Values come, lowest precedence first, from the defaults below, a TOML file, the
environment and command-line flags.  The TOML file has one table per section::

    [common]
    data_dir = "/var/lib/vecgrid"

    [querycoord]
    port = 19531

and every key can be overridden by an environment variable named
``VECGRID_<SECTION>_<KEY>`` (``VECGRID_QUERYCOORD_PORT=19600``).  Settings are
plain dataclasses so they pickle: the coordinator ships them to every Dask worker
inside the QueryNode plugin, and each worker therefore runs with the coordinator's
configuration.

``ShowConfigurations`` answers from :meth:`Settings.config_items`, so what an
operator reads over gRPC is exactly what the process runs with.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from typing import Any, Mapping

ENV_PREFIX = "VECGRID_"


# What a report shows instead of a secret setting's value.
REDACTED = "******"
_SECRET_WORDS = ("secret", "password", "access_key", "credential")


def is_secret(name: str) -> bool:
    """Whether a setting's value must never leave the process in a report (ShowConfigurations, REST)."""
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


class ConfigError(ValueError):
    """A configuration file or value that cannot be used; the message is one line for the user."""


@dataclass
class CommonSettings:
    data_dir: str = "./data"
    # Address the services bind to and advertise to clients and peers.
    host: str = "127.0.0.1"
    # Prefix of channel names, as Milvus's `msgChannel.chanNamePrefix.cluster`.
    cluster_prefix: str = "by-dev"
    log_level: str = "info"
    # "text" or "json" (one object a line), for every logger of the processes a command starts.
    log_format: str = "text"
    # How often a coordinator refreshes its cached CheckHealth answer (Milvus: 30 s).
    healthcheck_interval_s: float = 30.0
    healthcheck_timeout_s: float = 10.0
    # TLS on REST and every gRPC port (PEM paths; `vecgrid certs` makes a test CA): this process's
    # certificate and key when it serves, and the CA it trusts when it calls.  All empty: plain text.
    tls_cert: str = ""
    tls_key: str = ""
    tls_ca: str = ""


@dataclass
class QueryCoordSettings:
    port: int = 19531
    # Seconds a stopping gRPC server lets in-flight calls finish.
    grace_s: float = 5.0
    # How often each node's GetDataDistribution is polled, and its deadline (Milvus: 500 ms, 5 s).
    dist_pull_interval_s: float = 0.5
    dist_request_timeout_s: float = 5.0
    # LocalityAwareBalancer (sealed segments on their channel's shard leader while it has room), or
    # Milvus's queryCoord.balancer: ScoreBasedBalancer (also for unknown names), RowCountBasedBalancer,
    # RoundRobinBalancer or ChannelLevelScoreBalancer (channel-exclusive replicas).
    balancer: str = "LocalityAwareBalancer"
    # LocalityAwareBalancer: a leader takes its channels' sealed segments while everything it holds
    # stays within this share of its memory (GPU memory on GPU nodes) ...
    leader_memory_fraction: float = 0.7
    # ... and the rows one query of its channel compares there stay within this count: every growing
    # row, and of a sealed segment what its index scans (FLAT all, IVF its centroids and nprobe lists,
    # graphs a walk's few thousand).  Past it, scanning parts elsewhere in parallel pays for the hop.
    leader_scan_rows: int = 5_000_000
    # Milvus's queryCoord.channelExclusiveNodeFactor: under ChannelLevelScoreBalancer, a replica with at
    # least this many read-write nodes per DML channel gives each channel nodes of its own.
    channel_exclusive_node_factor: int = 4
    auto_balance: bool = True
    # Checker periods (Milvus: channel/segment/balance 3 s, index 10 s, leader 1 s).
    check_channel_interval_s: float = 3.0
    check_segment_interval_s: float = 3.0
    check_balance_interval_s: float = 3.0
    check_index_interval_s: float = 10.0
    check_leader_interval_s: float = 1.0
    # Collection observer (load progress) and target observer periods (Milvus: 200 ms; next target 10 s).
    collection_observer_interval_s: float = 0.2
    next_target_interval_s: float = 10.0
    # Task deadlines (Milvus: segment 120 s, channel 60 s) and the load timeout without progress (600 s).
    segment_task_timeout_s: float = 120.0
    channel_task_timeout_s: float = 60.0
    load_timeout_s: float = 600.0
    # Time ticks on the DML channels of loaded collections (Milvus: 200 ms).
    time_tick_interval_s: float = 0.2
    # How often idle channels' checkpoints follow their time ticks and old log files are dropped
    # (Milvus's DataNode moves an idle channel's checkpoint about once a minute).
    checkpoint_interval_s: float = 60.0
    # Replicas a load gets when the request, collection and database name none (Milvus: 1).
    cluster_level_load_replica_number: int = 1


@dataclass
class QueryNodeSettings:
    # 0 picks a free port; the embedded cluster always uses 0 because its workers share a host.
    port: int = 21123
    grace_s: float = 5.0
    # Fraction of a GPU's free memory a node may fill with indexes.
    gpu_memory_fraction: float = 0.8
    # What searches GPU segments: auto (faiss-gpu when installed, else cupy when it sees a GPU),
    # faiss, or cupy (FLAT and IVF_FLAT on the GPU beside a CPU faiss).
    gpu_engine: str = "auto"
    # Largest message QueryStream sends; a big query result goes out as several.
    stream_chunk_bytes: int = 4 * 1024 * 1024
    # Growing (not yet flushed) data a node may hold as shard leader; a write that would pass it is
    # refused with Milvus's quota error (code 9) until a flush frees memory.
    max_growing_mb: float = 1024.0
    # OpenMP threads of one faiss search in this node; 0: each search leases the host's cores it finds
    # free (up to one per query, at least 1), shared with the other query nodes of the host, so a busy
    # leader gets every core of a host whose other nodes are idle and none is oversubscribed.
    faiss_threads: int = 0
    # Micro-batching: concurrent small searches of the same segments and plan are gathered into one
    # faiss call.  A batch leaves as soon as nothing runs for its key, else after at most this long,
    # or once it holds batch_max_nq queries; 0 turns batching off.  Requests above batch_max_nq
    # queries are searched alone.
    batch_window_ms: float = 0.5
    batch_max_nq: int = 64
    # Interim index (Milvus's queryNode.segcore.interimIndex): a growing segment of a collection with
    # an approximate index (not FLAT or GPU_BRUTE_FORCE) is searched through an IVF index of its rows
    # once it holds interim_index_rows rows (0: always exactly), nlist lists, nprobe of them probed.
    interim_index_rows: int = 65_536
    interim_index_nlist: int = 128
    interim_index_nprobe: int = 16
    # How long a shard leader keeps retrying a delete on the nodes of its view (failed, missing or
    # unanswered DeleteBatch) before it marks its channel unserviceable, and the limit of one attempt.
    delete_retry_deadline_s: float = 30.0
    delete_call_timeout_s: float = 10.0


@dataclass
class DataCoordSettings:
    # A channel's growing data is sealed and flushed at this many rows or megabytes (Milvus:
    # dataCoord.segment.maxSize 1024 MB, sealProportion 0.12), or after this long without writes.
    segment_max_rows: int = 1_000_000
    segment_max_mb: float = 512.0
    flush_idle_s: float = 600.0
    # How often the seal, compaction, index-build and garbage-collection policies look.
    check_interval_s: float = 1.0
    # Compaction by the policy's triggers (Milvus: dataCoord.enableAutoCompaction); an explicit compact
    # runs either way.
    auto_compaction: bool = True
    # Mix compaction: segments below this fraction of segment_max_rows are small; a partition and
    # channel with at least compaction_min_segments of them is compacted.  A segment with more than
    # compaction_deleted_ratio of its rows deleted is compacted on its own (Milvus: 0.2).
    compaction_small_proportion: float = 0.5
    compaction_min_segments: int = 4
    compaction_deleted_ratio: float = 0.2
    # L0 compaction: a channel's L0 segments are compacted once there are this many (Milvus: 10).
    l0_compaction_min_segments: int = 4
    # Deadline of one index build or compaction task before it is redone elsewhere.
    task_timeout_s: float = 600.0
    # Files no catalog entry and no target names are removed after this long (Milvus: gc.dropTolerance 1 d).
    gc_retention_s: float = 3600.0
    gc_interval_s: float = 600.0
    # Where REST import jobs may read files, beside the data dir's imports/ folder (always allowed): a
    # comma-separated list of local directories and s3://bucket/prefix prefixes.  Anything else is
    # refused (403), so an API user cannot make the coordinator read any file it can read; `vecgrid
    # import` on the command line is the operator's own and reads any file given.
    import_roots: str = ""


@dataclass
class HTTPSettings:
    port: int = 19121
    # Request bodies above this are refused with 413 (a Feathers error, not Tornado's bare 400).
    max_body_mb: float = 64.0
    # Origins allowed by CORS: "*" or a comma-separated list.
    cors_origins: str = "*"
    # "on", "off", or "auto": on whenever the REST port binds to anything but loopback.
    auth: str = "auto"
    # HS256 secret of the access tokens (>= 32 bytes); empty: generated once into the data dir.
    jwt_secret: str = ""
    jwt_audience: str = "https://yourdomain.com"
    # The first admin a container creates when the metadata store has no user yet (VECGRID_HTTP_ADMIN_EMAIL /
    # VECGRID_HTTP_ADMIN_PASSWORD, read by vecgrid.http.services.accounts.ensure_first_admin): keys of their
    # own, so that setting them is not an unknown setting that stops every command.
    admin_email: str = ""
    admin_password: str = ""
    token_lifetime_s: int = 86400
    # Login failures per email and per client address before 429, within the window.
    login_max_failures: int = 10
    login_window_s: float = 300.0
    # The Argon2id cost of a stored password (argon2-cffi's defaults, RFC 9106's second choice): every login
    # pays one verification (0.2-0.3 s of CPU on two cores).  Lower it on a small host at the price of a
    # cheaper guess against a stolen hash; a stored hash keeps the cost it was made with.
    password_time_cost: int = 3
    password_memory_kib: int = 65536
    password_parallelism: int = 4
    # Caps of the entities service: $in list length, nq of one search, limit + offset, $skip + $limit.
    max_in_list: int = 16384
    max_nq: int = 16384
    max_topk: int = 16384


@dataclass
class ProxySettings:
    # Milvus's public API (MilvusService: pymilvus, the Milvus SDKs, Attu), in the coordinator
    # process beside REST; Milvus's own default port.  0 picks a free port.
    port: int = 19530


@dataclass
class StorageSettings:
    # Where sealed segments, delete logs and index files live: empty for the data dir itself, or an
    # fsspec URL such as s3://bucket/prefix (the s3 extra).  Metadata and WAL stay in the data dir.
    segment_root: str = ""
    # An S3-compatible object store (MinIO, moto): its endpoint URL, credentials and region.  Empty
    # values leave them to s3fs and botocore's own chain (AWS_* variables, ~/.aws, instance roles).
    s3_endpoint_url: str = ""
    s3_access_key_id: str = ""
    s3_secret_access_key: str = ""
    s3_region: str = ""


@dataclass
class DaskSettings:
    # Scheduler address for cluster mode; empty means the embedded LocalCluster.
    scheduler: str = ""
    workers: int = 2
    threads_per_worker: int = 2
    # Embedded cluster only: run the query node in the coordinator's process (``workers`` must be 1), so a
    # search is served where it arrives, without a second gRPC hop; a crash of either takes both down.
    in_process: bool = False
    dashboard_port: int = 8787
    # How long the coordinator's Dask client waits for the scheduler, at start and to reconnect after
    # losing it; past it the client closes and /health reports the scheduler Unreachable.
    scheduler_wait_s: float = 300.0


@dataclass
class Settings:
    common: CommonSettings = field(default_factory=CommonSettings)
    querycoord: QueryCoordSettings = field(default_factory=QueryCoordSettings)
    querynode: QueryNodeSettings = field(default_factory=QueryNodeSettings)
    datacoord: DataCoordSettings = field(default_factory=DataCoordSettings)
    http: HTTPSettings = field(default_factory=HTTPSettings)
    proxy: ProxySettings = field(default_factory=ProxySettings)
    dask: DaskSettings = field(default_factory=DaskSettings)
    storage: StorageSettings = field(default_factory=StorageSettings)

    # --- loading -----------------------------------------------------------------

    @classmethod
    def load(cls, config_file: str | None = None, env: Mapping[str, str] | None = None,
             overrides: Mapping[str, Any] | None = None) -> "Settings":
        """Defaults, then ``config_file``, then ``VECGRID_*`` variables, then ``overrides``.

        ``overrides`` maps dotted keys (``"querycoord.port"``) to values; ``None``
        values are skipped so unset command-line flags keep lower layers.
        """
        settings = cls()
        if config_file:
            settings._apply_file(config_file)
        settings._apply_env(os.environ if env is None else env)
        for key, value in (overrides or {}).items():
            if value is not None:
                settings.set(key, value, source="flag")
        return settings

    def _apply_file(self, path: str) -> None:
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except OSError as e:
            raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"config file {path} is not valid TOML: {e}") from None
        for section, values in data.items():
            if not isinstance(values, dict):
                raise ConfigError(f"config file {path}: top-level key {section!r} must be a table like [{section}]")
            for key, value in values.items():
                self.set(f"{section}.{key}", value, source=f"config file {path}")

    def _apply_env(self, env: Mapping[str, str]) -> None:
        sections = {s.upper(): s for s in self._sections()}
        for name, value in env.items():
            if not name.startswith(ENV_PREFIX):
                continue
            rest = name[len(ENV_PREFIX):]
            section = next((s for s in sections if rest.startswith(s + "_")), None)
            if section is None:
                continue
            key = rest[len(section) + 1:].lower()
            self.set(f"{sections[section]}.{key}", value, source=f"environment variable {name}")

    # --- access ------------------------------------------------------------------

    def _sections(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self)]

    def set(self, dotted: str, value: Any, source: str = "setting") -> None:
        """Set ``section.key`` converting ``value`` to the field's type; unknown keys are errors."""
        section, _, key = dotted.partition(".")
        if section not in self._sections():
            raise ConfigError(f"{source}: unknown section {section!r} (known: {', '.join(self._sections())})")
        target = getattr(self, section)
        types = {f.name: f.type for f in dataclasses.fields(target)}
        if key not in types:
            raise ConfigError(f"{source}: unknown setting {dotted!r}")
        setattr(target, key, _convert(value, types[key], dotted, source))

    def config_items(self, role_prefix: str) -> list[tuple[str, str]]:
        """Flattened ``(key, value)`` pairs a component reports in ShowConfigurations.

        A component reports its own section (``querycoord.`` or ``querynode.``) and
        the ``common.`` one, like Milvus's per-role key prefixes.  Secrets are reported
        as :data:`REDACTED` (Milvus reports them in clear), empty ones as empty.
        """
        items = []
        for section in ("common", role_prefix):
            for f in dataclasses.fields(getattr(self, section)):
                value = _render(getattr(getattr(self, section), f.name))
                if value and is_secret(f.name):
                    value = REDACTED
                items.append((f"{section}.{f.name}".lower(), value))
        return sorted(items)

    def matching(self, role_prefix: str, pattern: str) -> list[tuple[str, str]]:
        """``config_items`` whose key contains ``pattern`` (case-insensitive, empty = all)."""
        needle = pattern.lower()
        return [(k, v) for k, v in self.config_items(role_prefix) if needle in k]

    def with_env(self, env: Mapping[str, str]) -> "Settings":
        """A copy with ``VECGRID_*`` variables of ``env`` applied on top.

        A worker applies its own environment over the settings the coordinator
        shipped, so per-host values (``VECGRID_QUERYNODE_PORT``) can differ.
        """
        settings = copy.deepcopy(self)
        settings._apply_env(env)
        return settings


def _convert(value: Any, type_name: str, key: str, source: str) -> Any:
    try:
        if type_name == "int":
            if isinstance(value, bool):
                raise ValueError
            return int(value)
        if type_name == "float":
            return float(value)
        if type_name == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError
        return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{source}: {key} must be a {type_name}, got {value!r}") from None


def _render(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
