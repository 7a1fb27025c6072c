"""``python -m vecgrid.healthcheck``: the container health probes of ``docker/`` (the image's
``HEALTHCHECK`` and the compose file's), run by the image's own Python: the images have no curl.

    python -m vecgrid.healthcheck                  the coordinator's REST ``/health`` at
                                                   ``common.host:http.port`` (VECGRID_* variables)
    python -m vecgrid.healthcheck http URL         any HTTP endpoint answering 200 (the Dask
                                                   scheduler's ``/health`` on its dashboard port)
    python -m vecgrid.healthcheck grpc [HOST]:PORT the standard gRPC health service answers SERVING
                                                   (a query node; no HOST: this container's name)

Healthy: exit 0.  Otherwise exit 1 with one line on stderr saying why, which ``docker inspect`` shows.
The coordinator's ``/health`` answers 200 only while it serves (503 while starting or stopping).
With TLS on (``common.tls_cert``), the coordinator's URL is ``https``; every probe trusts
``common.tls_ca`` when it is set (``VECGRID_COMMON_TLS_CA``) and speaks TLS to gRPC then.
"""

from __future__ import annotations

import socket
import ssl
import sys
import urllib.error
import urllib.request
from typing import Sequence

TIMEOUT_S = 5.0
WILDCARDS = ("", "0.0.0.0", "::", "[::]")


def _settings():
    from vecgrid.config import Settings

    return Settings.load()


def coordinator_url() -> str:
    """Where this process's settings put the coordinator's REST ``/health``."""
    settings = _settings()
    host = settings.common.host
    host = "127.0.0.1" if host in WILDCARDS else host
    return f"{'https' if settings.common.tls_cert else 'http'}://{host}:{settings.http.port}/health"


def trusted_ca() -> str | None:
    """``common.tls_ca`` of this process's settings (``None``: plain text)."""
    return _settings().common.tls_ca or None


def check_http(url: str, timeout_s: float = TIMEOUT_S, ca: str | None = None) -> str | None:
    """None when ``url`` answers 200, else why not (``ca``: the CA an ``https`` URL's certificate is checked with)."""
    try:
        context = ssl.create_default_context(cafile=ca) if ca else None
        with urllib.request.urlopen(url, timeout=timeout_s, context=context) as reply:
            if reply.status == 200:
                return None
            return f"{url}: HTTP {reply.status}"
    except urllib.error.HTTPError as e:
        return f"{url}: HTTP {e.code} {e.read(200).decode(errors='replace').strip()}"
    except (urllib.error.URLError, OSError) as e:
        return f"{url}: {getattr(e, 'reason', e)}"


def check_grpc(address: str, timeout_s: float = TIMEOUT_S, ca: str | None = None) -> str | None:
    """None when the gRPC server at ``address`` reports SERVING for the whole server, else why not
    (over TLS trusting ``ca`` when given)."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return f"{address!r} is not [HOST]:PORT"
    address = f"{host or socket.gethostname()}:{port}"
    if ca:
        with open(ca, "rb") as f:
            channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=f.read()))
    else:
        channel = grpc.insecure_channel(address)
    with channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""),
                                                              timeout=timeout_s)
        except grpc.RpcError as e:
            return f"{address}: {e.code().name} {e.details() or ''}".strip()
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        return f"{address}: {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if not args:
            problem = check_http(coordinator_url(), ca=trusted_ca())
        elif args[0] == "http" and len(args) == 2:
            problem = check_http(args[1], ca=trusted_ca())
        elif args[0] == "grpc" and len(args) == 2:
            problem = check_grpc(args[1], ca=trusted_ca())
        else:
            print("usage: python -m vecgrid.healthcheck [http URL | grpc [HOST]:PORT]", file=sys.stderr)
            return 2
    except Exception as e:  # noqa: BLE001 - a probe that cannot run is unhealthy, and says why
        problem = f"{type(e).__name__}: {e}"
    if problem is not None:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
