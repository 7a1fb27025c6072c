"""Keys vecgrid adds to Milvus messages, where Milvus's own fields have no room.

They travel in ``MsgBase.properties`` (a request's ``base``) or in key-value lists such as
``FieldIndexInfo.index_params``; a plain Milvus peer ignores them.
"""

from __future__ import annotations

from typing import Mapping

#: ``base.properties["vecgrid.node_address.<node id>"] = "host:port"``: peers a shard leader may call.
NODE_ADDRESS_KEY = "vecgrid.node_address."
#: ``base.properties["vecgrid.coord_address"]``: where a node on another host streams the WAL from.
COORD_ADDRESS_KEY = "vecgrid.coord_address"
#: ``base.properties["vecgrid.checksum.<relative path>"] = "<algo>:<hex>"`` for every file a load reads
#: (Milvus's Binlog has no checksum field).
CHECKSUM_PROPERTY_PREFIX = "vecgrid.checksum."
#: gRPC metadata key of Milvus's ``ServerID`` (gRPC lower-cases metadata keys): the node a call is for.
SERVER_ID_KEY = "serverid"
#: ``FieldIndexInfo.index_params`` key carrying ``GPU`` or ``CPU`` in GetDataDistribution.
PLACEMENT_PARAM = "vecgrid.placement"
#: the route of the vecgrid page on the Dask dashboard (served by vecgrid.dashboard, named by the banner
#: and /health)
DASHBOARD_PAGE = "/individual-vecgrid"


def checksums_from_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """``{relative path: "<algo>:<hex>"}`` from a request's ``base.properties``."""
    n = len(CHECKSUM_PROPERTY_PREFIX)
    return {k[n:]: v for k, v in properties.items() if k.startswith(CHECKSUM_PROPERTY_PREFIX)}


def checksum_properties(checksums: Mapping[str, str]) -> dict[str, str]:
    """The inverse of :func:`checksums_from_properties`."""
    return {f"{CHECKSUM_PROPERTY_PREFIX}{path}": value for path, value in checksums.items()}


def node_addresses(properties: Mapping[str, str]) -> dict[int, str]:
    """``{node id: "host:port"}`` from the ``vecgrid.node_address.<id>`` keys of ``properties``."""
    out = {}
    for key, value in properties.items():
        if key.startswith(NODE_ADDRESS_KEY) and value:
            try:
                out[int(key[len(NODE_ADDRESS_KEY):])] = value
            except ValueError:
                continue
    return out


def server_id_metadata(node_id: int) -> tuple[tuple[str, str], ...]:
    """The call metadata naming the node a request is meant for (a node refuses it otherwise)."""
    return ((SERVER_ID_KEY, str(node_id)),)
