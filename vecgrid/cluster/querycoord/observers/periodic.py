"""Moved to :mod:`vecgrid.cluster.periodic` (DataCoord's loops use it too); kept for the imports here."""

from vecgrid.cluster.periodic import Periodic

__all__ = ["Periodic"]
