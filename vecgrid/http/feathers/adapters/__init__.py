"""Feathers database adapters: services that store records and answer the common query syntax."""

from vecgrid.http.feathers.adapters.base import AdapterService, Params
from vecgrid.http.feathers.adapters.memory import MemoryService
from vecgrid.http.feathers.adapters.meta_store import MetaStoreService

__all__ = ["AdapterService", "MemoryService", "MetaStoreService", "Params"]
