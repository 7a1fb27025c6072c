"""Milvus-style ``system_info`` metrics documents.

Milvus answers ``GetMetrics({"metric_type": "system_info"})`` with a JSON document
describing the component (``base_component_infos`` with hardware and system info)
and, for a coordinator, the topology of the nodes it is connected to.  These
builders produce the same shape from live process data (psutil) so dashboards
and tools written for Milvus can read them.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
import sys
from typing import Any

import psutil

import vecgrid
from vecgrid import errors
from vecgrid.cluster.lifecycle import Lifecycle

SYSTEM_INFO = "system_info"
UNIMPLEMENTED_METRIC = "sorry, but this metric type is not implemented"


def parse_metric_type(request: str) -> str:
    """The ``metric_type`` of a GetMetrics request JSON; a plain error when malformed, as Milvus."""
    try:
        doc = json.loads(request)
        metric_type = doc["metric_type"]
    except (ValueError, TypeError, KeyError):
        raise errors.UnexpectedError(f"invalid metrics request: {request!r}") from None
    if metric_type != SYSTEM_INFO:
        raise errors.UnexpectedError(UNIMPLEMENTED_METRIC)
    return metric_type


def _iso(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).isoformat()


def hardware_info(address: str, data_dir: str | None = None) -> dict[str, Any]:
    vm = psutil.virtual_memory()
    disk = shutil.disk_usage(data_dir if data_dir and os.path.isdir(data_dir) else os.getcwd())
    return {
        "ip": address,
        "cpu_core_count": psutil.cpu_count() or 0,
        "cpu_core_usage": psutil.cpu_percent(interval=None),
        "memory": vm.total,
        "memory_usage": vm.total - vm.available,
        "disk": disk.total,
        "disk_usage": disk.used,
    }


def base_component_info(lifecycle: Lifecycle, address: str, deploy_mode: str,
                        data_dir: str | None = None) -> dict[str, Any]:
    return {
        "has_error": False,
        "error_reason": "",
        "name": lifecycle.component_name,
        "hardware_infos": hardware_info(address, data_dir),
        "system_info": {
            "system_version": f"vecgrid {vecgrid.__version__}",
            "deploy_mode": deploy_mode,
            "build_version": vecgrid.__version__,
            "build_time": "",
            "used_go_version": f"python {platform.python_version()}",  # Milvus's key, our runtime
            "started_time": _iso(lifecycle.created_at),
        },
        "created_time": _iso(lifecycle.created_at),
        "updated_time": _iso(lifecycle.updated_at),
        "type": lifecycle.role,
        "id": lifecycle.node_id,
        "pid": os.getpid(),
        "python": sys.version.split()[0],
        "state": lifecycle.state.name,
    }
