"""Feathers database adapters: services that store records and answer the common query syntax."""

from vecgrid.http.adapters.base import AdapterService, Params
from vecgrid.http.adapters.memory import MemoryService

__all__ = ["AdapterService", "MemoryService", "Params"]
