"""Turn a plain class into a Milvus-style gRPC servicer.

:func:`milvus_servicer` wraps every method of a gRPC service so that

* an exception becomes a reply carrying a failed ``common.Status`` (gRPC OK), as
  Milvus answers — never a bare gRPC error, never a crash;
* a method the class does not define yet answers ``service unimplemented``
  (code 10) with a reason naming the method, instead of gRPC UNIMPLEMENTED, so
  Milvus clients read a Status they understand.

Servicer classes therefore contain only decode → call → encode.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor

from vecgrid import errors
from vecgrid.rpc.status import to_status

STATUS_TYPE = "milvus.proto.common.Status"


def error_reply(method: MethodDescriptor, err: BaseException) -> Any:
    """The response message of ``method`` carrying ``err`` as its status."""
    status = to_status(err)
    if method.output_type.full_name == STATUS_TYPE:
        return status
    cls = message_factory.GetMessageClass(method.output_type)
    return cls(status=status)


def _wrap_unary(method: MethodDescriptor, fn: Callable) -> Callable:
    @functools.wraps(fn)
    async def handler(self, request, context):
        try:
            return await fn(self, request, context)
        except Exception as err:  # noqa: BLE001 - every failure becomes a Status
            return error_reply(method, err)
    return handler


def _wrap_stream(method: MethodDescriptor, fn: Callable) -> Callable:
    @functools.wraps(fn)
    async def handler(self, request, context):
        try:
            async for reply in fn(self, request, context):
                yield reply
        except Exception as err:  # noqa: BLE001
            yield error_reply(method, err)
    return handler


def _unimplemented(method: MethodDescriptor, service: str) -> Callable:
    reason = f"{service}.{method.name} is not implemented yet in vecgrid (see the README status table)"

    if method.server_streaming:
        async def stream(self, request, context):
            yield error_reply(method, errors.ServiceUnimplemented(reason))
        stream.__name__ = method.name
        stream.pending = True
        return stream

    async def unary(self, request, context):
        return error_reply(method, errors.ServiceUnimplemented(reason))
    unary.__name__ = method.name
    unary.pending = True
    return unary


def milvus_servicer(service: ServiceDescriptor, base: type) -> Callable[[type], type]:
    """Class decorator: make ``cls`` a ``base`` (the generated Servicer) with Milvus error handling."""

    def decorate(cls: type) -> type:
        namespace: dict[str, Any] = {}
        for method in service.methods:
            fn = cls.__dict__.get(method.name)
            if fn is None:
                namespace[method.name] = _unimplemented(method, service.name)
            elif method.server_streaming:
                if not inspect.isasyncgenfunction(fn):
                    raise TypeError(f"{cls.__name__}.{method.name} must be an async generator")
                namespace[method.name] = _wrap_stream(method, fn)
            else:
                if not inspect.iscoroutinefunction(fn):
                    raise TypeError(f"{cls.__name__}.{method.name} must be async")
                namespace[method.name] = _wrap_unary(method, fn)
        return type(cls.__name__, (cls, base), {**namespace, "__doc__": cls.__doc__,
                                                 "__module__": cls.__module__, "SERVICE": service})

    return decorate


def pending_methods(servicer_cls: type) -> list[str]:
    """Names of the service methods a servicer class still answers with 'unimplemented'."""
    return [m.name for m in servicer_cls.SERVICE.methods
            if getattr(getattr(servicer_cls, m.name), "pending", False)]
