"""Component state codes, as Milvus's ``common.StateCode``.

A component (the coordinator or a query node) moves Initializing → Healthy →
Stopping; Abnormal marks a component that failed after starting.  Handlers that
must refuse work outside Healthy call :meth:`Lifecycle.check_healthy`, which raises
the error Milvus answers (code 1, ``service not ready[<role>=<id>]: <state>``).
"""

from __future__ import annotations

import enum
import time

from vecgrid import errors


class StateCode(enum.IntEnum):
    Initializing = 0
    Healthy = 1
    Abnormal = 2
    StandBy = 3
    Stopping = 4


class Lifecycle:
    """The state of one component plus the times a metrics report needs."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.node_id = -1  # Milvus reports -1 until the session is registered
        self.state = StateCode.Initializing
        self.created_at = time.time()
        self.updated_at = self.created_at

    def set(self, state: StateCode) -> None:
        self.state = state
        self.updated_at = time.time()

    @property
    def healthy(self) -> bool:
        return self.state == StateCode.Healthy

    def check_healthy(self) -> None:
        if not self.healthy:
            raise errors.ServiceNotReady(self.state.name, **{self.role: self.node_id})

    @property
    def component_name(self) -> str:
        """``querycoord1`` / ``querynode7``: what Milvus puts in GetMetricsResponse.component_name."""
        return f"{self.role}{self.node_id}"
