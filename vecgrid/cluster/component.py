"""What the coordinator and every query node share as Milvus components.

Both answer GetComponentStates, GetTimeTickChannel, GetStatisticsChannel and
ShowConfigurations the same way, from their lifecycle and settings.
"""

from __future__ import annotations

from vecgrid.cluster.lifecycle import Lifecycle
from vecgrid.config import Settings


class Component:
    def __init__(self, settings: Settings, role: str) -> None:
        self.settings = settings
        self.role = role
        self.lifecycle = Lifecycle(role)
        self.address = ""  # gRPC host:port, known once the server is bound

    def time_tick_channel(self) -> str:
        return f"{self.settings.common.cluster_prefix}-queryTimeTick"

    def statistics_channel(self) -> str:
        # Both Milvus components answer an empty statistics channel in the 2.4 line.
        return ""

    def configurations(self, pattern: str) -> list[tuple[str, str]]:
        self.lifecycle.check_healthy()
        return self.settings.matching(self.role, pattern)
