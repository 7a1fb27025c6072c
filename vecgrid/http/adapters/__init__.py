"""Feathers database adapters: services that store records and answer the common query syntax."""

from vecgrid.http.adapters.memory import MemoryService, Params

__all__ = ["MemoryService", "Params"]
