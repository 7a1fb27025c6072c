"""gRPC edge of the catalog (``vecgrid.catalog.CatalogService``): decode, read, encode.

Proxies in other processes (``vecgrid search``) resolve collection names here and take
their strong-read timestamps from the coordinator's oracle.  The reads are
:mod:`vecgrid.cluster.proxy.catalog_access`'s; they touch SQLite, so they run in a thread.  Failures (collection not found: 100, database not found: 800, ...) come back
as a Milvus ``common.Status`` in the reply, as on the other services.
"""

from __future__ import annotations

import asyncio

from vecgrid.cluster.proxy.catalog_access import describe, describe_all
from vecgrid.proto import catalog_service_pb2 as pb, catalog_service_pb2_grpc
from vecgrid.rpc.service import milvus_servicer
from vecgrid.rpc.status import success
from vecgrid.storage.catalog import Catalog

SERVICE = pb.DESCRIPTOR.services_by_name["CatalogService"]


@milvus_servicer(SERVICE, catalog_service_pb2_grpc.CatalogServiceServicer)
class CatalogServicer:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    async def DescribeCollection(self, request, context):
        found = await asyncio.to_thread(describe, self.catalog, request.db_name, request.collection_name,
                                        request.collectionID)
        return pb.DescribeCollectionResponse(status=success(), collection=found)

    async def ListCollections(self, request, context):
        found = await asyncio.to_thread(describe_all, self.catalog, request.db_name)
        return pb.ListCollectionsResponse(status=success(), collections=found)

    async def AllocTimestamp(self, request, context):
        ts = await asyncio.to_thread(self.catalog.allocate_timestamp)  # may persist the oracle's window
        return pb.AllocTimestampResponse(status=success(), timestamp=ts)


def catalog_service(catalog: Catalog):
    """The ``(add_fn, servicer, name)`` triple :meth:`GrpcServer.start` takes."""
    return (catalog_service_pb2_grpc.add_CatalogServiceServicer_to_server, CatalogServicer(catalog),
            SERVICE.full_name)
