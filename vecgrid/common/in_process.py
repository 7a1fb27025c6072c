"""gRPC servicers of this process that a caller in the same process reaches without gRPC.

The embedded cluster can run its query node inside the coordinator's process (``dask.in_process``).
Its QueryNode service still listens on its port for everyone else, but the proxy beside it calls the
servicer directly: no serialisation of the request and the hits, no loopback connection, no second
pass through gRPC's machinery — the hop that otherwise costs a search about a millisecond.

:class:`InProcessStub` keeps a gRPC stub's contract, so callers cannot tell the difference:
``stub.Method(request, timeout=, metadata=)`` returns an awaitable reply; the servicer sees the call's
metadata through its context; a code it sets, a deadline passed or an exception it raises reach the
caller as :class:`grpc.aio.AioRpcError`, as over the wire.  The server's interceptors (authentication)
are not run: the caller is this process.

State: the table is owned by the event loop that runs the node and the proxy (one loop in this
mode): written when a server starts or stops, read when a caller picks a stub.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

import grpc

log = logging.getLogger(__name__)

_servicers: dict[str, Any] = {}   # "host:port" -> servicer object


def register(address: str, servicer: Any) -> None:
    _servicers[address] = servicer


def unregister(address: str) -> None:
    _servicers.pop(address, None)


def stub_at(address: str) -> "InProcessStub | None":
    """A stub calling the servicer serving ``address`` in this process, or None (use gRPC)."""
    servicer = _servicers.get(address)
    return None if servicer is None else InProcessStub(address, servicer)


class _Context:
    """The part of ``grpc.aio.ServicerContext`` vecgrid's unary servicers use."""

    def __init__(self, metadata: Any) -> None:
        self._metadata = tuple(metadata or ())
        self.code: grpc.StatusCode | None = None
        self.details = ""

    def invocation_metadata(self) -> tuple:
        return self._metadata

    def set_code(self, code: grpc.StatusCode) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details

    def peer(self) -> str:
        return "in-process"


def _rpc_error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=details)


class InProcessStub:
    """A unary-method stub over a servicer of this process (see the module docstring)."""

    def __init__(self, address: str, servicer: Any) -> None:
        self.address = address
        self._servicer = servicer

    def __getattr__(self, method: str) -> Any:
        return functools.partial(self._call, method)

    async def _call(self, method: str, request: Any, timeout: float | None = None, metadata: Any = None,
                    **_: Any) -> Any:
        context = _Context(metadata)
        handler = getattr(self._servicer, method)
        try:
            async with asyncio.timeout(timeout):
                reply = await handler(request, context)
        except TimeoutError:
            raise _rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded") from None
        except grpc.aio.AioRpcError:
            raise
        except Exception as e:  # gRPC answers an exception in a handler with UNKNOWN; so does this
            log.exception("%s on %s (in process) failed", method, self.address)
            raise _rpc_error(grpc.StatusCode.UNKNOWN, f"Unexpected {type(e).__name__}: {e}") from None
        if context.code not in (None, grpc.StatusCode.OK):
            raise _rpc_error(context.code, context.details)
        return reply
