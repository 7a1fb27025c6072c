"""`vecgrid` as a user runs it: serve, stop with Ctrl-C, and one-line errors for bad input."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request

import grpc
import psutil
import pytest

from vecgrid.cli import main, parse_resources
from vecgrid.proto import milvus_pb2, query_coord_pb2, query_coord_pb2_grpc
from tests.cli_support import VECGRID, assert_one_line_error, run_in_process, run_process


@pytest.mark.slow
def test_serve_answers_grpc_and_http_then_exits_cleanly_on_sigint(tmp_path):
    proc = subprocess.Popen(
        VECGRID + ["serve", "--data-dir", str(tmp_path), "--workers", "2",
                   "--coord-port", "0", "--http-port", "0", "--milvus-port", "0", "--dashboard-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True)  # its own process group, like a job in a terminal
    try:
        banner = _read_until(proc, "Press Ctrl-C to stop.", timeout=90)
        grpc_addr = re.search(r"QueryCoord gRPC : (\S+)", banner).group(1)
        http_addr = re.search(r"REST\s+: (\S+)", banner).group(1)
        assert re.search(r"Dask dashboard  : http://127\.0\.0\.1:\d+", banner)
        assert len(re.findall(r"QueryNode \d+\s+: 127\.0\.0\.1:\d+", banner)) == 2

        with grpc.insecure_channel(grpc_addr) as channel:
            stub = query_coord_pb2_grpc.QueryCoordStub(channel)
            assert stub.GetComponentStates(milvus_pb2.GetComponentStatesRequest(), timeout=10).state.state_code == 1
            assert len(stub.ListQueryNode(query_coord_pb2.ListQueryNodeRequest(), timeout=10).nodeInfos) == 2
        with urllib.request.urlopen(http_addr + "/health", timeout=10) as resp:
            assert resp.status == 200 and json.load(resp)["status"] == "ok"

        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 2  # the worker processes (and their nannies)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole process group gets SIGINT
        rest, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        assert "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest
        _, alive = psutil.wait_procs(children, timeout=15)
        assert alive == [], f"left behind: {alive}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _read_until(proc, marker: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    out = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        out.append(line)
        if marker in line:
            return "".join(out)
    pytest.fail("vecgrid serve did not come up:\n" + "".join(out))


def test_unknown_flag_is_one_line_and_exit_2(capsys):
    result = run_in_process(["serve", "--no-such-flag"], capsys)
    assert result.returncode == 2
    assert_one_line_error(result, "--no-such-flag")


def test_unknown_command_is_one_line(capsys):
    assert_one_line_error(run_in_process(["frobnicate"], capsys), "frobnicate")


def test_unreadable_config_file_is_one_line(tmp_path, capsys):
    assert_one_line_error(run_in_process(["serve", "--config", str(tmp_path / "missing.toml")], capsys),
                          "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("this is = = not toml")
    assert_one_line_error(run_in_process(["serve", "--config", str(bad)], capsys), "not valid TOML")
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("[querycoord]\nportt = 1\n")
    assert_one_line_error(run_in_process(["serve", "--config", str(unknown)], capsys), "querycoord.portt")


@pytest.mark.slow
def test_a_real_process_exits_2_with_one_line_for_bad_input(tmp_path):
    """What the in-process tests check, through ``python -m vecgrid.cli``: stderr and the exit status."""
    result = run_process(["serve", "--no-such-flag"])
    assert result.returncode == 2
    assert_one_line_error(result, "--no-such-flag")
    assert_one_line_error(run_process(["serve", "--config", str(tmp_path / "missing.toml")]), "missing.toml")


@pytest.mark.slow
def test_port_in_use_is_one_line(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_process(["serve", "--data-dir", str(tmp_path), "--coord-port", str(port),
                              "--http-port", "0", "--milvus-port", "0", "--dashboard-port", "0"])
    assert result.returncode == 2
    assert_one_line_error(result, f"127.0.0.1:{port}", "querycoord gRPC")


def _port_left_in_time_wait() -> int:
    """A loopback port whose last connection was closed by its server side first: that end (the port)
    stays in TIME_WAIT, as the ports of a `vecgrid serve` just stopped do.  The server listened with
    SO_REUSEADDR, as Tornado and grpc do (Linux lets a new bind reuse a TIME_WAIT port only when both
    sockets set it)."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        served, _ = listener.accept()
        served.close()
        client.close()
    deadline = time.monotonic() + 5
    while not any(c.laddr.port == port and c.status == psutil.CONN_TIME_WAIT
                  for c in psutil.net_connections(kind="tcp4")):
        assert time.monotonic() < deadline, f"port {port} never reached TIME_WAIT"
        time.sleep(0.01)
    return port


def test_a_port_in_time_wait_is_free_for_serve():
    from vecgrid.deploy import ensure_ports_free

    port = _port_left_in_time_wait()
    with socket.socket() as plain, pytest.raises(OSError):
        plain.bind(("127.0.0.1", port))  # what the probe did: refused for a minute after the last run
    ensure_ports_free("127.0.0.1", [(port, "querycoord gRPC")])
    with socket.socket() as server:  # and the servers, which set SO_REUSEADDR, can listen there
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen()


def test_a_listening_port_is_in_use():
    from vecgrid.deploy import ensure_ports_free
    from vecgrid.rpc.server import PortInUse

    for listen_on in ("127.0.0.1", "0.0.0.0"):
        with socket.socket() as busy:
            busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Tornado and grpc listen
            busy.bind((listen_on, 0))
            busy.listen()
            port = busy.getsockname()[1]
            with pytest.raises(PortInUse, match=f"REST: cannot listen on 127.0.0.1:{port}"):
                ensure_ports_free("127.0.0.1", [(0, "querycoord gRPC"), (port, "REST")])


def test_port_in_use_exits_2_before_anything_starts(tmp_path, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_in_process(["serve", "--data-dir", str(tmp_path), "--coord-port", "0",
                                 "--http-port", str(port), "--milvus-port", "0", "--dashboard-port", "0"], capsys)
    assert result.returncode == 2
    assert_one_line_error(result, f"127.0.0.1:{port}", "REST")


def test_coord_with_a_busy_port_exits_2_before_reaching_the_scheduler(tmp_path, capsys):
    """`vecgrid coord` checked no port before connecting to its scheduler: a busy REST port failed
    half-way through the start, exit 1 (and with no scheduler it never got that far)."""
    with socket.socket() as busy, socket.socket() as nothing:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        nothing.bind(("127.0.0.1", 0))  # bound, not listening: a scheduler address that refuses
        result = run_in_process(["coord", "--scheduler", f"tcp://127.0.0.1:{nothing.getsockname()[1]}",
                                 "--data-dir", str(tmp_path), "--coord-port", "0", "--http-port", str(port), "--milvus-port", "0"],
                                capsys)
    assert result.returncode == 2
    assert_one_line_error(result, f"127.0.0.1:{port}", "REST")


def test_bad_resources_flag():
    assert parse_resources("GPU=1,mem=2.5") == {"GPU": 1.0, "mem": 2.5}
    assert main(["worker", "--scheduler", "tcp://127.0.0.1:1", "--resources", "GPU"]) == 2


def test_worker_host_is_where_the_nanny_and_the_worker_listen():
    from vecgrid.cli import _nanny_kwargs, _parser

    def kwargs(*flags):
        args = _parser().parse_args(["worker", "--scheduler", "tcp://10.0.0.1:8786", "--name", "w1", *flags])
        return _nanny_kwargs(args)

    asked = kwargs("--host", "127.0.0.1", "--node-port", "21123", "--resources", "GPU=1")
    assert asked["host"] == "127.0.0.1" and asked["dashboard_address"] == "127.0.0.1:0"
    assert (asked["name"], asked["resources"], asked["env"]) == ("w1", {"GPU": 1.0},
                                                                 {"VECGRID_QUERYNODE_PORT": "21123"})
    default = kwargs()  # no --host: Dask's defaults, reachable from the scheduler's hosts
    assert "host" not in default and "dashboard_address" not in default


@pytest.mark.slow
def test_a_client_command_does_not_import_dask():
    """A client command runs no Dask: importing it only to apply its logging config cost about a second of
    CPU on every call (`vecgrid status` 2.0 s of CPU, now about 1.1)."""
    import sys

    code = ("import sys\nfrom vecgrid.cli import main\nmain(['status', '--coord', sys.argv[1]])\n"
            "print('distributed' in sys.modules)")
    with socket.socket() as refusing:   # bound, not listening: the call is refused at once
        refusing.bind(("127.0.0.1", 0))
        done = subprocess.run([sys.executable, "-c", code, f"127.0.0.1:{refusing.getsockname()[1]}"],
                              capture_output=True, text=True, timeout=60)
    assert "service unavailable" in done.stderr, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False", done
