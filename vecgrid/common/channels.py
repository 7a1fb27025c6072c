"""Every gRPC channel the cluster's processes open: TLS when this process trusts a CA, and the
credentials it sends (:mod:`vecgrid.common.auth`).

``use_tls`` is called once when a process starts (the coordinator, a worker's QueryNode plugin, a CLI
command), before it opens channels; afterwards the CA is only read.
"""

from __future__ import annotations

from typing import Any, Sequence

import grpc

from vecgrid.common.auth import aio_interceptors, authorized_channel
from vecgrid.common.limits import GRPC_MESSAGE_OPTIONS

_ca: bytes | None = None  # PEM of the CA this process trusts when it calls; None: plain text


def use_tls(ca_pem: bytes | None) -> None:
    global _ca
    _ca = ca_pem


def tls_in_use() -> bool:
    return _ca is not None


def aio_channel(address: str, options: Sequence[tuple[str, Any]] = GRPC_MESSAGE_OPTIONS) -> grpc.aio.Channel:
    """A ``grpc.aio`` channel to ``address`` (TLS with this process's CA, when it has one)."""
    if _ca is None:
        return grpc.aio.insecure_channel(address, options=list(options), interceptors=aio_interceptors())
    return grpc.aio.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=_ca),
                                   options=list(options), interceptors=aio_interceptors())


def channel(address: str) -> grpc.Channel:
    """A blocking channel to ``address``, likewise."""
    if _ca is None:
        return authorized_channel(grpc.insecure_channel(address))
    return authorized_channel(grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=_ca)))
