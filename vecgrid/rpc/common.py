"""Encoders for the RPCs both services share (component state, channels, configs, metrics, health)."""

from __future__ import annotations

from typing import Iterable

from vecgrid.cluster.lifecycle import Lifecycle
from vecgrid.proto import common_pb2, internal_pb2, milvus_pb2
from vecgrid.rpc.status import success, to_status


def component_states(lifecycle: Lifecycle, role: str) -> milvus_pb2.ComponentStates:
    info = milvus_pb2.ComponentInfo(nodeID=lifecycle.node_id, role=role, state_code=int(lifecycle.state))
    return milvus_pb2.ComponentStates(state=info, status=success())


def string_response(value: str) -> milvus_pb2.StringResponse:
    return milvus_pb2.StringResponse(status=success(), value=value)


def configurations(items: Iterable[tuple[str, str]]) -> internal_pb2.ShowConfigurationsResponse:
    return internal_pb2.ShowConfigurationsResponse(
        status=success(),
        configuations=[common_pb2.KeyValuePair(key=k, value=v) for k, v in items],
    )


def metrics(response: str, component_name: str) -> milvus_pb2.GetMetricsResponse:
    return milvus_pb2.GetMetricsResponse(status=success(), response=response, component_name=component_name)


def health(reasons: list[str], healthy: bool | None = None) -> milvus_pb2.CheckHealthResponse:
    """``healthy`` defaults to "no reasons"; Critical-only reasons list problems of a healthy cluster."""
    return milvus_pb2.CheckHealthResponse(status=success(), isHealthy=not reasons if healthy is None else healthy,
                                          reasons=reasons)


def unhealthy(err: Exception) -> milvus_pb2.CheckHealthResponse:
    """A component that cannot serve answers a failed Status *and* the reason, as Milvus does."""
    return milvus_pb2.CheckHealthResponse(status=to_status(err), isHealthy=False, reasons=[str(err)])
