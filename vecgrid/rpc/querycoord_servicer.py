"""gRPC edge of the coordinator: decode, call :class:`~vecgrid.cluster.querycoord.coordinator.QueryCoord`, encode."""

from __future__ import annotations

from vecgrid import errors
from vecgrid.cluster.querycoord.coordinator import QueryCoord
from vecgrid.cluster.querycoord.job.jobs import LoadRequest
from vecgrid.proto import milvus_pb2, query_coord_pb2, query_coord_pb2_grpc, schema_pb2
from vecgrid.rpc import common
from vecgrid.rpc.server import GrpcServer
from vecgrid.rpc.service import milvus_servicer
from vecgrid.rpc.status import success

SERVICE = query_coord_pb2.DESCRIPTOR.services_by_name["QueryCoord"]


@milvus_servicer(SERVICE, query_coord_pb2_grpc.QueryCoordServicer)
class QueryCoordServicer:
    """milvus.proto.query.QueryCoord over one :class:`QueryCoord`."""

    def __init__(self, coord: QueryCoord) -> None:
        self.coord = coord

    async def GetComponentStates(self, request, context):
        # Milvus's QueryCoord leaves ComponentInfo.role empty in the 2.4 line.
        return common.component_states(self.coord.lifecycle, role="")

    async def GetTimeTickChannel(self, request, context):
        return common.string_response(self.coord.time_tick_channel())

    async def GetStatisticsChannel(self, request, context):
        return common.string_response(self.coord.statistics_channel())

    async def ShowConfigurations(self, request, context):
        return common.configurations(self.coord.configurations(request.pattern))

    async def GetMetrics(self, request, context):
        return common.metrics(await self.coord.metrics(request.request), self.coord.lifecycle.component_name)

    async def CheckHealth(self, request, context):
        try:
            return common.health(*self.coord.health_reasons())
        except errors.MilvusError as err:
            return common.unhealthy(err)

    async def ListQueryNode(self, request, context):
        nodes = self.coord.list_query_nodes()
        return query_coord_pb2.ListQueryNodeResponse(
            status=success(),
            nodeInfos=[query_coord_pb2.NodeInfo(ID=n.node_id, address=n.address, state=n.state) for n in nodes],
        )

    async def GetQueryNodeDistribution(self, request, context):
        channels, segments = self.coord.query_node_distribution(request.nodeID)
        return query_coord_pb2.GetQueryNodeDistributionResponse(
            status=success(), ID=request.nodeID, channel_names=channels, sealed_segmentIDs=segments)

    async def SuspendNode(self, request, context):
        self.coord.suspend_node(request.nodeID)
        return success()

    async def ResumeNode(self, request, context):
        self.coord.resume_node(request.nodeID)
        return success()

    # --- loads -------------------------------------------------------------------------------

    async def LoadCollection(self, request, context):
        await self.coord.load(LoadRequest(request.collectionID, None, request.replica_number,
                                          list(request.resource_groups), list(request.load_fields),
                                          request.refresh, dict(request.field_indexID)))
        return success()

    async def LoadPartitions(self, request, context):
        await self.coord.load(LoadRequest(request.collectionID, list(request.partitionIDs), request.replica_number,
                                          list(request.resource_groups), list(request.load_fields),
                                          request.refresh, dict(request.field_indexID)))
        return success()

    async def ReleaseCollection(self, request, context):
        await self.coord.release_collection(request.collectionID)
        return success()

    async def ReleasePartitions(self, request, context):
        await self.coord.release_partitions(request.collectionID, list(request.partitionIDs))
        return success()

    async def SyncNewCreatedPartition(self, request, context):
        await self.coord.sync_new_created_partition(request.collectionID, request.partitionID)
        return success()

    async def UpdateLoadConfig(self, request, context):
        await self.coord.update_load_config(list(request.collectionIDs), request.replica_number,
                                            list(request.resource_groups))
        return success()

    # --- reports ------------------------------------------------------------------------------

    async def ShowCollections(self, request, context):
        rows = self.coord.show_collections(list(request.collectionIDs))
        return query_coord_pb2.ShowCollectionsResponse(
            status=success(), collectionIDs=[r.collection_id for r in rows],
            inMemory_percentages=[r.percentage for r in rows],
            query_service_available=[r.available for r in rows],
            refresh_progress=[r.refresh_progress for r in rows],
            load_fields=[schema_pb2.LongArray(data=r.load_fields) for r in rows])

    async def ShowPartitions(self, request, context):
        rows = self.coord.show_partitions(request.collectionID, list(request.partitionIDs))
        return query_coord_pb2.ShowPartitionsResponse(
            status=success(), partitionIDs=[r.partition_id for r in rows],
            inMemory_percentages=[r.percentage for r in rows], refresh_progress=[r.refresh_progress for r in rows])

    async def GetPartitionStates(self, request, context):
        return query_coord_pb2.GetPartitionStatesResponse(
            status=success(),
            partition_descriptions=self.coord.partition_states(request.collectionID, list(request.partitionIDs)))

    async def GetSegmentInfo(self, request, context):
        return query_coord_pb2.GetSegmentInfoResponse(
            status=success(), infos=self.coord.segment_infos(request.collectionID, list(request.segmentIDs)))

    async def GetShardLeaders(self, request, context):
        return query_coord_pb2.GetShardLeadersResponse(status=success(),
                                                       shards=self.coord.shard_leaders(request.collectionID))

    async def GetReplicas(self, request, context):
        return milvus_pb2.GetReplicasResponse(
            status=success(), replicas=self.coord.replica_infos(request.collectionID, request.with_shard_nodes))

    # --- checkers and balancing ---------------------------------------------------------------

    async def ListCheckers(self, request, context):
        return query_coord_pb2.ListCheckersResponse(status=success(),
                                                    checkerInfos=self.coord.list_checkers(list(request.checkerIDs)))

    async def ActivateChecker(self, request, context):
        self.coord.set_checker_active(request.checkerID, True)
        return success()

    async def DeactivateChecker(self, request, context):
        self.coord.set_checker_active(request.checkerID, False)
        return success()

    async def SuspendBalance(self, request, context):
        self.coord.suspend_balance()
        return success()

    async def ResumeBalance(self, request, context):
        self.coord.resume_balance()
        return success()

    async def CheckBalanceStatus(self, request, context):
        return query_coord_pb2.CheckBalanceStatusResponse(status=success(), is_active=self.coord.balance_active())

    async def TransferSegment(self, request, context):
        self.coord.transfer_segment(request)
        return success()

    async def TransferChannel(self, request, context):
        self.coord.transfer_channel(request)
        return success()

    async def LoadBalance(self, request, context):
        await self.coord.load_balance(request)
        return success()

    async def CheckQueryNodeDistribution(self, request, context):
        self.coord.check_query_node_distribution(request.source_nodeID, request.target_nodeID)
        return success()

    # --- resource groups ---------------------------------------------------------------------

    async def CreateResourceGroup(self, request, context):
        self.coord.create_resource_group(request.resource_group,
                                         request.config if request.HasField("config") else None)
        return success()

    async def UpdateResourceGroups(self, request, context):
        self.coord.update_resource_groups(dict(request.resource_groups))
        return success()

    async def DropResourceGroup(self, request, context):
        self.coord.drop_resource_group(request.resource_group)
        return success()

    async def TransferNode(self, request, context):
        self.coord.transfer_node(request.source_resource_group, request.target_resource_group, request.num_node)
        return success()

    async def TransferReplica(self, request, context):
        await self.coord.transfer_replica(request.source_resource_group, request.target_resource_group,
                                    request.collectionID, request.num_replica)
        return success()

    async def ListResourceGroups(self, request, context):
        return milvus_pb2.ListResourceGroupsResponse(status=success(),
                                                     resource_groups=self.coord.list_resource_groups())

    async def DescribeResourceGroup(self, request, context):
        return query_coord_pb2.DescribeResourceGroupResponse(
            status=success(), resource_group=self.coord.describe_resource_group(request.resource_group))


async def serve_querycoord(coord: QueryCoord, host: str, port: int, extra_services=(),
                           interceptors=(), tls=None) -> GrpcServer:
    """Start the QueryCoord gRPC server (plus ``extra_services``); sets ``coord.address``."""
    server = GrpcServer("querycoord gRPC")
    bound = await server.start(host, port, [(query_coord_pb2_grpc.add_QueryCoordServicer_to_server,
                                             QueryCoordServicer(coord), SERVICE.full_name), *extra_services],
                               interceptors, tls)
    coord.address = f"{host}:{bound}"
    coord.settings.querycoord.port = bound  # ShowConfigurations reports what the process really uses
    return server
