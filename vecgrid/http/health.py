"""``GET /health``: whether each part the coordinator depends on can serve, as Milvus's ``/healthz``.

Components, each ``{"name", "healthy", "state", "reason", ...}``:

- ``coordinator``: the QueryCoord's lifecycle (Healthy) and the other roles of its process (the
  DataCoord's problems, through the QueryCoord's health observer);
- ``querynode-<id>``, one per registered node: registered in state Normal and without a problem in
  the QueryCoord's cached CheckHealth round (``common.healthcheck_interval_s``; nothing new is asked);
- ``scheduler``: the coordinator's Dask client is running and the scheduler answers ``identity``; its
  ``dashboard_page`` is the vecgrid page of the scheduler's Dask dashboard (``<dashboard>/individual-vecgrid``,
  served where the scheduler runs with the ``vecgrid.dashboard`` preload), "" without a dashboard;
- ``metadata-store``: a read of the metadata store returns;
- ``wal``: the WAL's root exists and is writable.

The answer is 200 only when every component is healthy (503 otherwise), with ``status`` "ok" or
"unavailable"; ``vecgrid status`` prints the same components.  Every probe is bounded by
``common.healthcheck_timeout_s``; a probe that fails or times out makes its component unhealthy
with the reason.

State: none; every call reads the coordinator's state on the loop that serves the request.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from vecgrid.common.keys import DASHBOARD_PAGE

HEALTH_PROBE_KEY = "vecgrid/health/probe"


def dashboard_page(dashboard_link: str | None) -> str:
    """The vecgrid page of the Dask dashboard whose link (``Client.dashboard_link``, ``.../status``) is given."""
    if not dashboard_link:
        return ""
    base = dashboard_link.rstrip("/")
    return base.removesuffix("/status") + DASHBOARD_PAGE


def _dashboard_link(client: Any) -> str | None:
    """The Dask client's dashboard link; None when the scheduler has no dashboard (the link reads the
    scheduler's cached identity, which then lacks the service)."""
    try:
        return client.dashboard_link
    except (AttributeError, KeyError, TypeError):
        return None


def _component(name: str, healthy: bool, state: str, reason: str = "", **extra: Any) -> dict[str, Any]:
    return {"name": name, "healthy": healthy, "state": state, "reason": reason, **extra}


def _node_problems(coord: Any) -> tuple[dict[int, list[str]], list[tuple[str, str]]]:
    """The cached health round's problems: per query node, and of the other roles ``(role, message)``."""
    per_node: dict[int, list[str]] = {}
    roles: list[tuple[str, str]] = []
    for reason in list(coord.health.reasons):
        for msg in json.loads(reason).get("unhealthy_cluster_msgs", []):
            text = msg["reason"]["unhealthy_msg"]
            if msg["role"] == "querynode":
                per_node.setdefault(int(msg["node_id"]), []).append(text)
            else:
                roles.append((msg["role"], text))
    return per_node, roles


async def _probe(name: str, timeout_s: float, probe: Any, state: str = "Healthy") -> dict[str, Any]:
    try:
        async with asyncio.timeout(timeout_s):
            await probe()
    except TimeoutError:
        return _component(name, False, "Unreachable", f"no answer within {timeout_s:g} s")
    except Exception as e:  # noqa: BLE001 - the failure is the answer: this component cannot serve
        return _component(name, False, "Unreachable", f"{type(e).__name__}: {e}")
    return _component(name, True, state)


async def cluster_health(coord: Any) -> dict[str, Any]:
    """Every component's health (see the module docstring)."""
    timeout_s = coord.settings.common.healthcheck_timeout_s
    per_node, roles = _node_problems(coord)
    components = []
    state = coord.lifecycle.state.name
    reasons = [f"{role}: {text}" for role, text in roles]
    if not coord.lifecycle.healthy:
        reasons.insert(0, f"querycoord is {state}")
    components.append(_component("coordinator", not reasons, state, "; ".join(reasons),
                                 address=coord.address, node_id=coord.lifecycle.node_id))
    for node in sorted(coord.nodes.all(), key=lambda n: n.node_id):
        problems = list(per_node.get(node.node_id, []))
        if node.state != "Normal":
            problems.insert(0, f"node state is {node.state}")
        components.append(_component(f"querynode-{node.node_id}", not problems, node.state, "; ".join(problems),
                                     node_id=node.node_id, address=node.address, worker=node.worker))
    client = coord.client

    async def scheduler() -> None:
        if client.status != "running":
            raise RuntimeError(f"the coordinator's Dask client is {client.status}")
        await client.scheduler.identity()

    components.append(await _probe("scheduler", timeout_s, scheduler) | {
        "address": client.scheduler.address, "dashboard_page": dashboard_page(_dashboard_link(client))})
    components.append(await _probe("metadata-store", timeout_s,
                                   lambda: asyncio.to_thread(coord.store.get, HEALTH_PROBE_KEY)))
    wal_root = coord.appenders.wal.root

    async def wal() -> None:
        if not os.path.isdir(wal_root):
            raise FileNotFoundError(f"WAL root {wal_root} is missing")
        if not os.access(wal_root, os.W_OK):
            raise PermissionError(f"WAL root {wal_root} is not writable")

    components.append(await _probe("wal", timeout_s, wal) | {"root": wal_root})
    healthy = all(c["healthy"] for c in components)
    return {"status": "ok" if healthy else "unavailable", "querycoord": state,
            "query_nodes": len(coord.nodes), "components": components}
