"""The QueryCoord component: wiring of the coordinator's parts, as Milvus's ``server.go``.

It builds and owns every part of the coordinator — the session layer (nodes from Dask
membership, gRPC clients to them), meta (collections, replicas, resource groups, targets), the
distribution, the checkers and the balancer, the task scheduler, jobs, observers, time ticks and
WAL retention — and hands them to each other through :class:`.context.CheckerContext`.  The gRPC
servicer calls one method here per RPC; nothing in this class encodes protobuf replies.
"""

from __future__ import annotations

import asyncio
import json
import logging

from distributed import Client

from vecgrid import errors
from vecgrid.cluster import sysinfo
from vecgrid.cluster.component import Component
from vecgrid.cluster.lifecycle import StateCode
from vecgrid.cluster.querycoord import reports
from vecgrid.cluster.querycoord.balance import balancer_named
from vecgrid.cluster.querycoord.checkers.balance_checker import BalanceChecker
from vecgrid.cluster.querycoord.checkers.base import CheckerController
from vecgrid.cluster.querycoord.checkers.channel_checker import ChannelChecker
from vecgrid.cluster.querycoord.checkers.index_checker import IndexChecker
from vecgrid.cluster.querycoord.checkers.leader_checker import LeaderChecker
from vecgrid.cluster.querycoord.checkers.segment_checker import SegmentChecker
from vecgrid.cluster.querycoord.context import CheckerContext
from vecgrid.cluster.querycoord.ddl import Ddl
from vecgrid.cluster.querycoord.dist.cluster_view import LiveClusterView
from vecgrid.cluster.querycoord.dist.dist_handler import DistController
from vecgrid.cluster.querycoord.dist.distribution import DistributionManager
from vecgrid.cluster.querycoord.job.jobs import Jobs, LoadRequest
from vecgrid.cluster.querycoord.manual_balance import ManualBalance
from vecgrid.cluster.querycoord.meta.collection_manager import CollectionManager
from vecgrid.cluster.querycoord.meta.failed_load_cache import FailedLoadCache
from vecgrid.cluster.querycoord.meta.replica_manager import ReplicaManager
from vecgrid.cluster.querycoord.meta.resource_manager import ResourceManager
from vecgrid.cluster.querycoord.meta.target_manager import TargetManager
from vecgrid.cluster.querycoord.monitor import LoadStats
from vecgrid.cluster.querycoord.observers.collection_observer import CollectionObserver
from vecgrid.cluster.querycoord.observers.health_observer import HealthObserver
from vecgrid.cluster.querycoord.observers.target_observer import TargetObserver
from vecgrid.cluster.querycoord.session.cluster import NodeClients
from vecgrid.cluster.querycoord.session.membership import DaskMembership
from vecgrid.cluster.querycoord.session.node_manager import NodeInfo, NodeManager
from vecgrid.cluster.querycoord.session.registry import NodeIdRegistry
from vecgrid.cluster.querycoord.task.executor import DaskExecutor
from vecgrid.cluster.querycoord.task.scheduler import TaskScheduler
from vecgrid.cluster.querycoord.task.task import NO_NODE, IndexSaveTask, SegmentTask, Task
from vecgrid.cluster.querycoord.timetick import TimeTicker
from vecgrid.cluster.querycoord.wal_retention import WalRetention
from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.cluster.streaming.row_count import row_count
from vecgrid.config import Settings
from vecgrid.proto import common_pb2, internal_pb2, milvus_pb2, query_coord_pb2, rg_pb2
from vecgrid.storage.kv import MetaStore
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import Wal

log = logging.getLogger(__name__)

ROLE = "querycoord"


class QueryCoord(Component):
    def __init__(self, settings: Settings, client: Client, store: MetaStore,
                 deploy_mode: str = "CLUSTER") -> None:
        super().__init__(settings, ROLE)
        self.client = client
        self.store = store
        self.deploy_mode = deploy_mode
        self.nodes = NodeManager()
        self.registry = NodeIdRegistry(store)
        self.node_clients = NodeClients(self.nodes)
        self.membership = DaskMembership(client, self.nodes, self.registry)
        self.health = HealthObserver(self.nodes, self.node_clients,
                                     settings.common.healthcheck_interval_s,
                                     settings.common.healthcheck_timeout_s, self._unqueryable)
        self.dist = DistributionManager()
        self.dist_controller = DistController(self.nodes, self.node_clients, self.dist,
                                              settings.querycoord.dist_pull_interval_s,
                                              settings.querycoord.dist_request_timeout_s)
        self.resources = ResourceManager(store, node_labels=lambda node_id: dict(
            getattr(self.nodes.get(node_id), "labels", {}) or {}))
        self.suspended: set[int] = set()
        q = settings.querycoord
        self.catalog = DataDir(settings.common.data_dir).open_catalog(
            store, cluster_prefix=settings.common.cluster_prefix)
        self.collections = CollectionManager(store)
        balancer_class = balancer_named(q.balancer)
        self.replicas = ReplicaManager(store, channel_exclusive=balancer_class.channel_exclusive,
                                       channel_exclusive_node_factor=q.channel_exclusive_node_factor)
        self.targets = TargetManager(store, self.catalog)
        self.resources.replicas_in = lambda rg: len(self.replicas.in_group(rg))
        self.executor = DaskExecutor(client, self.nodes, self.catalog, self.collections, self.replicas,
                                     self.targets, self.dist, lambda: self.address, self.dist_controller.pull)
        self.scheduler = TaskScheduler(self.executor, self._refresh_dist, q.segment_task_timeout_s,
                                       q.channel_task_timeout_s)
        view = LiveClusterView(self.nodes, self.dist, self.targets, self.scheduler, self.catalog,
                               lambda n: getattr(self.nodes.get(n), "gpu_memory_mb", 0.0))
        self.ctx = CheckerContext(self.nodes, self.collections, self.replicas, self.targets, self.dist,
                                  self.scheduler, self.catalog, balancer_class.from_settings(view, settings),
                                  q.auto_balance)
        self.checkers = CheckerController([
            ChannelChecker(self.ctx, q.check_channel_interval_s),
            SegmentChecker(self.ctx, q.check_segment_interval_s),
            BalanceChecker(self.ctx, q.check_balance_interval_s),
            IndexChecker(self.ctx, q.check_index_interval_s),
            LeaderChecker(self.ctx, q.check_leader_interval_s),
        ])
        self.target_observer = TargetObserver(self.ctx, self.executor, q.collection_observer_interval_s,
                                              q.next_target_interval_s, self._refresh_dist)
        self.failed_loads = FailedLoadCache()
        self.load_stats = LoadStats()  # querycoord_load_req_count / _load_latency (see .monitor)
        self.scheduler.on_done(self._record_failed_load)
        self.scheduler.on_done(self._next_index_save)
        self.jobs = Jobs(self.ctx, self.resources, self.executor, settings, self._poke, self._pull_target)
        self.collection_observer = CollectionObserver(self.ctx, q.collection_observer_interval_s,
                                                      q.load_timeout_s, self._cancel_load,
                                                      self.jobs.release_timed_out_partitions)
        self.manual = ManualBalance(self.ctx, q.segment_task_timeout_s)
        self.ddl = Ddl(self)   # definitions that also touch loads: create/drop collection, partition, index
        wal = Wal(DataDir(settings.common.data_dir).wal_root)
        self.appenders = ChannelAppenders(wal, self.catalog.allocate_timestamp, self.catalog.allocate_segment_id)
        self.ticker = TimeTicker(self.appenders, self.catalog, self.collections, q.time_tick_interval_s)
        self.wal_retention = WalRetention(wal, self.catalog, self.collections, self.targets,
                                          q.checkpoint_interval_s, self._pull_target)
        self._reconciling = True
        self.nodes.on_up(self._node_up)
        self.nodes.on_down(self._node_down)

    def _node_up(self, info: NodeInfo) -> None:
        if info.node_id not in self.suspended:
            self.resources.assign_node(info.node_id)
            self.resources.recover()
        self._recover_replicas()

    def _node_down(self, info: NodeInfo) -> None:
        self.resources.unassign_node(info.node_id)
        self.resources.recover()
        self.scheduler.cancel_node(info.node_id)
        self._recover_replicas()

    def _recover_replicas(self) -> None:
        """Replicas follow their resource groups' membership; the checkers then move the data."""
        if self._reconciling:
            return  # start-up: nodes are still registering one by one
        for cid in self.collections.ids():
            self.replicas.recover(cid, self.jobs.rg_nodes)
        self._poke()

    def _poke(self) -> None:
        """Run checkers and observers now instead of at their next tick (after any change)."""
        self.checkers.poke()
        self.target_observer.poke()
        self.collection_observer.poke()

    def _pull_target(self, cid: int) -> None:
        self.targets.pull_next(cid, self.collections.partition_ids(cid))
        self.target_observer.poke()

    async def _refresh_dist(self, node_ids: set[int], poke: bool = True) -> None:
        """Pull the nodes' distribution now; then run checkers and observers unless ``poke`` is False
        (after a failed task: its retry waits for the checkers' period)."""
        await asyncio.gather(*(self.dist_controller.pull(n) for n in node_ids if self.nodes.get(n) is not None),
                             return_exceptions=True)
        if poke:
            self._poke()

    def _record_failed_load(self, task: Task, error: BaseException | None) -> None:
        """Failed segment loads are what ShowCollections reports for a load that never finished."""
        if error is not None and not isinstance(error, asyncio.CancelledError) and \
                isinstance(task, SegmentTask) and task.target != NO_NODE:
            self.failed_loads.put(task.collection_id, error)

    def _next_index_save(self, task: Task, error: BaseException | None) -> None:
        """A saved index frees its node for the next save: only the index checker runs again (a save
        changes no distribution; a failed one waits for the checker's next round)."""
        if error is None and isinstance(task, IndexSaveTask):
            self.checkers.poke(IndexChecker.id)

    def _cancel_load(self, cid: int, reason: str) -> None:
        log.warning("collection %d: %s; load cancelled", cid, reason)
        self.failed_loads.put(cid, errors.CollectionNotLoaded(reason, collection=cid))
        self.jobs.forget(cid)

    async def start(self) -> None:
        self.lifecycle.node_id = self.registry.id_for(ROLE, ROLE)
        await self.membership.start()
        # Nodes recorded in resource groups before a restart that did not come back are gone.
        online = {n.node_id for n in self.nodes.all()}
        for name in self.resources.names():
            for node_id in list(self.resources.group(name).nodes):
                if node_id not in online:
                    self.resources.unassign_node(node_id)
        self.resources.recover()
        self.dist_controller.start()
        # Checkers must see what the nodes already hold before they act, or a restarted coordinator
        # would load everything again (and replicas would drop nodes that just had not registered).
        await self._refresh_dist({n.node_id for n in self.nodes.all()})
        self._reconciling = False
        self._recover_replicas()
        self.ticker.source_id = self.lifecycle.node_id
        self.ticker.start()
        self.wal_retention.start()
        self.checkers.start()
        self.target_observer.start()
        self.collection_observer.start()
        await self.health.start()
        self.lifecycle.set(StateCode.Healthy)
        log.info("querycoord %d healthy with %d query nodes", self.lifecycle.node_id, len(self.nodes))

    async def stop(self) -> None:
        self.lifecycle.set(StateCode.Stopping)
        await self.health.stop()
        await self.collection_observer.stop()
        await self.wal_retention.stop()
        await self.ticker.stop()
        await asyncio.to_thread(self.appenders.close)
        await self.target_observer.stop()
        await self.checkers.stop()
        await self.scheduler.stop()
        await self.dist_controller.stop()
        await self.membership.stop()
        await self.node_clients.close()

    # --- component RPCs ----------------------------------------------------------------

    async def metrics(self, request: str) -> str:
        """GetMetrics: Milvus's QueryCoord topology document, itself plus every node's own report."""
        self.lifecycle.check_healthy()
        sysinfo.parse_metric_type(request)
        nodes = self.nodes.all()
        reports = await asyncio.gather(*(self._node_metrics(n) for n in nodes))
        doc = {
            "cluster": {
                "self": {
                    "base_component_infos": sysinfo.base_component_info(
                        self.lifecycle, self.address, self.deploy_mode, self.settings.common.data_dir),
                    "system_configurations": {"search_channel_prefix": "", "search_result_channel_prefix": ""},
                },
                "connected_nodes": [r for r in reports if r is not None],
            },
            "connections": {
                "name": self.lifecycle.component_name,
                "connected_components": [
                    {"target_name": f"querynode{n.node_id}", "target_type": "querynode",
                     "connected_identifier": n.node_id}
                    for n in nodes
                ],
            },
        }
        return json.dumps(doc)

    async def _node_metrics(self, node: NodeInfo) -> dict | None:
        try:
            reply = await self.node_clients.stub(node.node_id).GetMetrics(
                milvus_pb2.GetMetricsRequest(request=json.dumps({"metric_type": sysinfo.SYSTEM_INFO})),
                timeout=self.settings.common.healthcheck_timeout_s,
                metadata=self.node_clients.metadata(node.node_id))
        except Exception as e:  # noqa: BLE001 - a node that cannot answer is reported with has_error
            return _unreachable(node, str(e))
        if reply.status.code != 0:
            return _unreachable(node, reply.status.reason)
        return json.loads(reply.response)

    async def node_configurations(self, pattern: str) -> list[tuple[int, list[tuple[str, str]]]]:
        """ShowConfigurations of every query node, asked at once: (node id, items) per node.  A node
        that cannot answer fails the call (NodeNotAvailable naming it): a partial answer would look
        like a node without those settings."""
        self.lifecycle.check_healthy()
        nodes = self.nodes.all()
        replies = await asyncio.gather(*(self._node_configurations(n, pattern) for n in nodes))
        return list(zip([n.node_id for n in nodes], replies))

    async def _node_configurations(self, node: NodeInfo, pattern: str) -> list[tuple[str, str]]:
        try:
            reply = await self.node_clients.stub(node.node_id).ShowConfigurations(
                internal_pb2.ShowConfigurationsRequest(pattern=pattern),
                timeout=self.settings.common.healthcheck_timeout_s,
                metadata=self.node_clients.metadata(node.node_id))
        except Exception as e:  # noqa: BLE001 - surfaced as the node's unavailability
            raise errors.NodeNotAvailable(f"ShowConfigurations failed: {e}", node=node.node_id) from e
        if reply.status.code != 0:
            raise errors.NodeNotAvailable(f"ShowConfigurations failed: {reply.status.reason}", node=node.node_id)
        return [(kv.key, kv.value) for kv in reply.configuations]

    def health_reasons(self) -> tuple[list[str], bool]:
        """CheckHealth: the cached reasons and whether the cluster counts as healthy."""
        self.lifecycle.check_healthy()
        return list(self.health.reasons), self.health.healthy

    def _unqueryable(self) -> list[tuple[int, int, str]]:
        out = []
        for cid in self.collections.ids():
            if not self.collections.is_loaded(cid):
                continue
            try:
                reports.shard_leaders(self.ctx, cid)
            except errors.MilvusError as e:
                out.append((self.catalog.get_collection(cid).db_id, cid, str(e)))
        return out

    # --- operator RPCs -----------------------------------------------------------------

    def list_query_nodes(self) -> list[NodeInfo]:
        self.lifecycle.check_healthy()
        return self.nodes.all()

    def _node(self, node_id: int) -> NodeInfo:
        info = self.nodes.get(node_id)
        if info is None:
            raise errors.NodeNotFound(node=node_id)
        return info

    def query_node_distribution(self, node_id: int) -> tuple[list[str], list[int]]:
        """GetQueryNodeDistribution: the node's channels and sealed segments, as last polled."""
        self.lifecycle.check_healthy()
        self._node(node_id)
        dist = self.dist.node(node_id)
        if dist is None:
            return [], []
        return [c.channel for c in dist.channels], [s.ID for s in dist.segments]

    async def node_reports(self, node_id: int | None = None) -> list[reports.NodeReport]:
        """Each query node (or the one ``node_id``) as an operator's table shows it: ListQueryNode's
        fields, GetQueryNodeDistribution's channels and segments, whether it is suspended, its resource
        group, and the memory its own GetMetrics report gives (asked of every node at once)."""
        self.lifecycle.check_healthy()
        nodes = [self._node(node_id)] if node_id is not None else self.nodes.all()
        docs = await asyncio.gather(*(self._node_metrics(n) for n in nodes))
        out = []
        for info, doc in zip(nodes, docs):
            if node_id is None and self.nodes.get(info.node_id) is not info:
                continue  # left (or restarted) while the reports were asked for
            channels, segments = self.query_node_distribution(info.node_id)
            dist = self.dist.node(info.node_id)
            out.append(reports.node_report(info, info.node_id in self.suspended, self.resources.group_of(info.node_id),
                                           channels, segments, dist.mem_capacity_mb if dist else 0.0, doc))
        return out

    def suspend_node(self, node_id: int) -> None:
        """Take the node out of its resource group (it gets drained); it stays unassigned until resumed."""
        self.lifecycle.check_healthy()
        self._node(node_id)
        self.suspended.add(node_id)
        self.resources.unassign_node(node_id)
        self.resources.recover()
        self._recover_replicas()

    def resume_node(self, node_id: int) -> None:
        self.lifecycle.check_healthy()
        self._node(node_id)
        self.suspended.discard(node_id)
        self.resources.assign_node(node_id)
        self.resources.recover()
        self._recover_replicas()

    # --- loads (jobs) ------------------------------------------------------------------------

    async def load(self, req: LoadRequest) -> None:
        """LoadCollection / LoadPartitions; the schema always comes from the catalog."""
        self.lifecycle.check_healthy()
        self.failed_loads.remove(req.collection_id)
        try:
            await self.jobs.load(req)
        except BaseException:
            self.load_stats.requested(req.collection_id, ok=False)
            raise
        self.load_stats.requested(req.collection_id, ok=True)

    async def release_collection(self, collection_id: int) -> None:
        self.lifecycle.check_healthy()
        await self.jobs.release_collection(collection_id, self.settings.querycoord.channel_task_timeout_s)
        self.failed_loads.remove(collection_id)

    async def release_partitions(self, collection_id: int, partition_ids: list[int]) -> None:
        self.lifecycle.check_healthy()
        await self.jobs.release_partitions(collection_id, partition_ids,
                                           self.settings.querycoord.channel_task_timeout_s)

    async def sync_new_created_partition(self, collection_id: int, partition_id: int) -> None:
        self.lifecycle.check_healthy()
        await self.jobs.sync_new_partition(collection_id, partition_id)

    async def update_load_config(self, collection_ids: list[int], replica_number: int, rgs: list[str]) -> None:
        self.lifecycle.check_healthy()
        await self.jobs.update_load_config(collection_ids, replica_number, rgs)

    # --- reports ------------------------------------------------------------------------------

    def show_collections(self, collection_ids: list[int]) -> list[reports.CollectionReport]:
        self.lifecycle.check_healthy()
        return reports.show_collections(self.ctx, collection_ids, self.jobs.refresh_versions, self.failed_loads)

    def show_partitions(self, collection_id: int, partition_ids: list[int]) -> list[reports.PartitionReport]:
        self.lifecycle.check_healthy()
        return reports.show_partitions(self.ctx, collection_id, partition_ids, self.jobs.refresh_versions,
                                       self.failed_loads)

    def row_count(self, collection_id: int, partition_id: int | None = None) -> int:
        """Flushed plus unflushed rows, loaded or not (:mod:`vecgrid.cluster.streaming.row_count`); blocking."""
        return row_count(self.catalog, self.appenders, collection_id, partition_id)

    def partition_states(self, collection_id: int, partition_ids: list[int]) -> list[query_coord_pb2.PartitionStates]:
        self.lifecycle.check_healthy()
        return reports.partition_states(self.ctx, collection_id, partition_ids)

    def segment_infos(self, collection_id: int, segment_ids: list[int]) -> list[query_coord_pb2.SegmentInfo]:
        self.lifecycle.check_healthy()
        return reports.segment_infos(self.ctx, collection_id, segment_ids)

    def segment_placements(self, collection_id: int) -> dict[int, dict[int, str]]:
        """Segment id -> node -> where that copy is served from (``InGPU`` / ``InMemory``)."""
        self.lifecycle.check_healthy()
        return reports.segment_placements(self.ctx, collection_id)

    def shard_leaders(self, collection_id: int) -> list[query_coord_pb2.ShardLeadersList]:
        self.lifecycle.check_healthy()
        return reports.shard_leaders(self.ctx, collection_id)

    def index_placement(self, collection_id: int, field_id: int) -> dict[str, int]:
        """Loaded segment copies of a vector field per placement (GPU / CPU)."""
        self.lifecycle.check_healthy()
        return reports.index_placement(self.ctx, collection_id, field_id)

    def replica_infos(self, collection_id: int, with_shard_nodes: bool) -> list[milvus_pb2.ReplicaInfo]:
        self.lifecycle.check_healthy()
        return reports.replicas(self.ctx, collection_id, with_shard_nodes, self.resources.group_of)

    # --- checkers and balancing ---------------------------------------------------------------

    def list_checkers(self, checker_ids: list[int]) -> list[query_coord_pb2.CheckerInfo]:
        self.lifecycle.check_healthy()
        known = self.checkers.checkers
        out = []
        for cid in checker_ids or sorted(known):
            checker = known.get(cid)
            out.append(query_coord_pb2.CheckerInfo(id=cid, desc=checker.name, activated=checker.active, found=True)
                       if checker is not None else query_coord_pb2.CheckerInfo(id=cid, found=False))
        return out

    def set_checker_active(self, checker_id: int, active: bool) -> None:
        self.lifecycle.check_healthy()
        self.checkers.set_active(checker_id, active)

    def suspend_balance(self) -> None:
        """SuspendBalance: automatic balancing stops (Milvus switches its balance checker off)."""
        self.set_checker_active(BalanceChecker.id, False)

    def resume_balance(self) -> None:
        self.set_checker_active(BalanceChecker.id, True)

    def balance_active(self) -> bool:
        self.lifecycle.check_healthy()
        return self.checkers.get(BalanceChecker.id).active

    def transfer_segment(self, req: query_coord_pb2.TransferSegmentRequest) -> int:
        """TransferSegment; returns how many moves were scheduled (0: nothing left to move)."""
        self.lifecycle.check_healthy()
        return len(self.manual.transfer_segment(req))

    def transfer_channel(self, req: query_coord_pb2.TransferChannelRequest) -> int:
        """TransferChannel; returns how many moves were scheduled (0: nothing left to move)."""
        self.lifecycle.check_healthy()
        return len(self.manual.transfer_channel(req))

    async def load_balance(self, req: query_coord_pb2.LoadBalanceRequest) -> None:
        self.lifecycle.check_healthy()
        await self.manual.load_balance(req)

    def check_query_node_distribution(self, source: int, target: int) -> None:
        self.lifecycle.check_healthy()
        self.manual.check_distribution(source, target)

    # --- resource groups ---------------------------------------------------------------------

    def create_resource_group(self, name: str, config: rg_pb2.ResourceGroupConfig | None) -> None:
        self.lifecycle.check_healthy()
        self.resources.create(name, config)
        self._recover_replicas()

    def update_resource_groups(self, configs: dict[str, rg_pb2.ResourceGroupConfig]) -> None:
        self.lifecycle.check_healthy()
        self.resources.update(configs)
        self._recover_replicas()

    def drop_resource_group(self, name: str) -> None:
        self.lifecycle.check_healthy()
        self.resources.drop(name)
        self._recover_replicas()

    def transfer_node(self, source: str, target: str, num: int) -> None:
        self.lifecycle.check_healthy()
        self.resources.transfer_node(source, target, num)
        self._recover_replicas()

    async def transfer_replica(self, source: str, target: str, collection_id: int, num: int) -> None:
        """TransferReplica: move ``num`` replicas of a collection to another group (validated first)."""
        self.lifecycle.check_healthy()
        self.resources.group(source)
        self.resources.group(target)
        if source == target:
            raise errors.ParameterInvalid("source and target resource groups are the same", rg=source)
        if num <= 0:
            raise errors.ParameterInvalid(f"num_replica must be positive, got {num}")
        if self.collections.get(collection_id) is None:
            raise errors.ParameterInvalid("Collection not loaded", collection=collection_id)
        replicas = self.replicas.in_group(source, collection_id)
        if len(replicas) < num:
            raise errors.ParameterInvalid(
                f"only {len(replicas)} replicas of the collection in {source}, {num} requested",
                collection=collection_id)
        await self.jobs.transfer_replica(source, target, collection_id, num)

    def list_resource_groups(self) -> list[str]:
        self.lifecycle.check_healthy()
        return self.resources.names()

    def describe_resource_group(self, name: str) -> query_coord_pb2.ResourceGroupInfo:
        self.lifecycle.check_healthy()

        def online(node_id: int) -> common_pb2.NodeInfo | None:
            info = self.nodes.get(node_id)
            return None if info is None else common_pb2.NodeInfo(node_id=info.node_id, address=info.address,
                                                                  hostname=info.hostname)
        described = self.resources.describe(name, online)
        loaded = [r for cid in self.collections.ids() for r in self.replicas.of_collection(cid)]
        reports.replica_usage(described, loaded, self.resources.group_of)
        return described


def _unreachable(node: NodeInfo, reason: str) -> dict:
    return {"base_component_infos": {"has_error": True, "error_reason": reason, "type": "querynode",
                                     "name": f"querynode{node.node_id}", "id": node.node_id}}
