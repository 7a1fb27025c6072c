"""The query nodes the coordinator knows, as Milvus's ``session.NodeManager``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

NORMAL = "Normal"
STOPPING = "Stopping"


@dataclass
class NodeInfo:
    node_id: int
    name: str        # Dask worker name: stable across worker restarts
    address: str     # the node's QueryNode gRPC host:port
    worker: str      # the Dask worker address that hosts it
    hostname: str = ""
    state: str = NORMAL
    labels: dict[str, str] = field(default_factory=dict)
    gpu_memory_mb: float = 0.0
    registered_at: float = field(default_factory=time.time)


Listener = Callable[[NodeInfo], None]


class NodeManager:
    """Node id → :class:`NodeInfo`, with listeners for nodes coming up and going down.

    Only the session layer (Dask membership) writes here; everything else reads.
    """

    def __init__(self) -> None:
        self._nodes: dict[int, NodeInfo] = {}
        self._on_up: list[Listener] = []
        self._on_down: list[Listener] = []

    def on_up(self, listener: Listener) -> None:
        self._on_up.append(listener)

    def on_down(self, listener: Listener) -> None:
        self._on_down.append(listener)

    def add(self, info: NodeInfo) -> None:
        """Register ``info``; a node that restarted (same id, new address) replaces the old entry."""
        old = self._nodes.get(info.node_id)
        if old is not None:
            self._remove(old)
        self._nodes[info.node_id] = info
        for listener in self._on_up:
            listener(info)

    def mark_stopping(self, node_id: int) -> None:
        if node_id in self._nodes:
            self._nodes[node_id].state = STOPPING

    def remove_worker(self, worker: str) -> NodeInfo | None:
        """Drop the node hosted by Dask worker ``worker`` (an address no longer in the cluster)."""
        info = self.by_worker(worker)
        if info is not None:
            self._remove(info)
        return info

    def _remove(self, info: NodeInfo) -> None:
        self._nodes.pop(info.node_id, None)
        for listener in self._on_down:
            listener(info)

    def get(self, node_id: int) -> NodeInfo | None:
        return self._nodes.get(node_id)

    def by_worker(self, worker: str) -> NodeInfo | None:
        return next((n for n in self._nodes.values() if n.worker == worker), None)

    def all(self) -> list[NodeInfo]:
        return sorted(self._nodes.values(), key=lambda n: n.node_id)

    def __len__(self) -> int:
        return len(self._nodes)
