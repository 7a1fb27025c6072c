"""Load / release / update-load-config jobs, as Milvus's ``job`` package.

A job validates first (bad input changes nothing), then changes meta, and undoes what
it did if a later step fails.  The RPC waits for the job, not for data to be loaded:
loading is the checkers' work, observed by the collection observer — except releases,
which wait until the distribution no longer shows the released data (as Milvus).
Jobs of one collection run one at a time (:class:`JobQueue`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Callable, Iterable

from vecgrid import errors
from vecgrid.cluster.querycoord.context import CheckerContext
from vecgrid.cluster.querycoord.meta.resource_manager import DEFAULT_RG, ResourceManager
from vecgrid.cluster.querycoord.task.executor import DaskExecutor
from vecgrid.config import Settings
from vecgrid.proto import common_pb2, query_coord_pb2

log = logging.getLogger(__name__)

COLLECTION_REPLICA_NUMBER = "collection.replica.number"
COLLECTION_RESOURCE_GROUPS = "collection.resource_groups"
DATABASE_REPLICA_NUMBER = "database.replica.number"
DATABASE_RESOURCE_GROUPS = "database.resource_groups"
RELEASE_POLL_S = 0.2


@dataclass
class _CollectionSlot:
    lock: asyncio.Lock
    users: int = 0   # jobs holding or waiting for the lock


class JobQueue:
    """One lock per collection: its jobs run in arrival order, other collections' in parallel.

    A collection's lock exists only while one of its jobs runs or waits, so the queue does not keep a
    lock for every collection ever loaded. Owned by the coordinator's event loop: only coroutines on
    it call :meth:`lock`, and nothing here awaits between reading and changing ``_slots``.
    """

    def __init__(self) -> None:
        self._slots: dict[int, _CollectionSlot] = {}

    @contextlib.asynccontextmanager
    async def lock(self, cid: int) -> AsyncIterator[None]:
        """Hold collection ``cid``'s lock for the block (``asyncio.Lock`` is FIFO: arrival order)."""
        slot = self._slots.setdefault(cid, _CollectionSlot(asyncio.Lock()))
        slot.users += 1
        try:
            async with slot.lock:
                yield
        finally:
            slot.users -= 1
            if not slot.users:
                del self._slots[cid]

    def busy(self) -> list[int]:
        """Collections with a job running or waiting."""
        return sorted(self._slots)


@dataclass
class LoadRequest:
    collection_id: int
    partition_ids: list[int] | None      # None: the whole collection
    replica_number: int
    resource_groups: list[str]
    load_fields: list[int]
    refresh: bool = False
    field_index: dict[int, int] | None = None   # field id -> index id, recorded with the load


class Jobs:
    def __init__(self, ctx: CheckerContext, resources: ResourceManager, executor: DaskExecutor,
                 settings: Settings, poke: Callable[[], None], pull_target: Callable[[int], None]) -> None:
        self.ctx, self.resources, self.executor, self.settings = ctx, resources, executor, settings
        self.poke, self.pull_target = poke, pull_target
        self.queue = JobQueue()
        self.refresh_versions: dict[int, int] = {}   # collection -> target version a refresh waits for

    # --- helpers ----------------------------------------------------------------------------

    def rg_nodes(self, rg: str) -> list[int]:
        return [n for n in self.resources.group(rg).nodes if self.ctx.online(n)]

    def _defaults(self, cid: int, replica_number: int, rgs: list[str]) -> tuple[int, list[str]]:
        """Behaviour sheet §4 step 3: request, else collection, else database, else cluster settings."""
        if replica_number > 0 or rgs:
            return max(replica_number, 1), rgs or [DEFAULT_RG]
        coll = self.ctx.catalog.get_collection(cid)
        db_props = {kv.key: kv.value for kv in self.ctx.catalog.describe_database(coll.db_name).properties}
        for props, number_key, groups_key in ((coll.properties, COLLECTION_REPLICA_NUMBER, COLLECTION_RESOURCE_GROUPS),
                                              (db_props, DATABASE_REPLICA_NUMBER, DATABASE_RESOURCE_GROUPS)):
            if number_key in props or groups_key in props:
                number = int(props.get(number_key, "0") or 0)
                groups = [g for g in props.get(groups_key, "").split(",") if g]
                return max(number, 1), groups or [DEFAULT_RG]
        return max(self.settings.querycoord.cluster_level_load_replica_number, 1), [DEFAULT_RG]

    def _layout(self, replica_number: int, rgs: list[str]) -> dict[str, int]:
        if len(rgs) not in (1, replica_number):
            raise errors.UnexpectedError("resource group num can only be 0, 1 or same as replica number")
        for rg in rgs:
            self.resources.group(rg)   # 300 when unknown
        if len(rgs) == 1:
            return {rgs[0]: replica_number}
        layout: dict[str, int] = {}
        for rg in rgs:
            layout[rg] = layout.get(rg, 0) + 1
        return layout

    def _current_layout(self, cid: int) -> dict[str, int]:
        layout: dict[str, int] = {}
        for r in self.ctx.replicas.of_collection(cid):
            layout[r.resource_group] = layout.get(r.resource_group, 0) + 1
        return layout

    def _new_id(self) -> int:
        return self.ctx.catalog.allocate_ids(1)

    def _load_fields(self, cid: int, requested: Iterable[int]) -> list[int]:
        fields = sorted(set(requested))
        if fields:
            return fields
        return sorted(f.fieldID for f in self.ctx.catalog.get_collection(cid).fields if f.fieldID >= 100)

    async def _on_nodes(self, cid: int, method: str, request, key: str) -> None:
        """Call a node handler on every node of every replica of ``cid`` (best effort for nodes gone)."""
        nodes = sorted({n for r in self.ctx.replicas.of_collection(cid) for n in (*r.nodes, *r.ro_nodes)
                        if self.ctx.online(n)})
        await asyncio.gather(*(self.executor.call(method, request, n, f"{key}-node-{n}") for n in nodes))

    # --- load -------------------------------------------------------------------------------

    async def load(self, req: LoadRequest) -> None:
        """LoadCollection (``partition_ids`` None) or LoadPartitions."""
        async with self.queue.lock(req.collection_id):
            await self._load(req)

    async def _load(self, req: LoadRequest) -> None:
        """Behaviour sheet §4: validate, then the refresh, first-load or add-partitions path."""
        ctx, cid = self.ctx, req.collection_id
        coll = ctx.catalog.get_collection(cid)
        if req.refresh:
            self._refresh(cid)
            return
        replica_number, rgs = self._defaults(cid, req.replica_number, list(req.resource_groups))
        load_fields = self._load_fields(cid, req.load_fields)
        whole = req.partition_ids is None
        if not whole:
            unknown = sorted(set(req.partition_ids) - set(coll.partition_ids))
            if unknown:
                raise errors.PartitionNotFound(f"partitions {unknown} do not exist", collection=cid)
        wanted = list(coll.partition_ids) if whole else sorted(set(req.partition_ids))
        existing = ctx.collections.get(cid)
        if existing is None:
            self._load_new(req, coll.vchannels, wanted, replica_number, rgs, load_fields)
        else:
            await self._load_more(existing, whole, wanted, replica_number, rgs, load_fields)

    def _refresh(self, cid: int) -> None:
        """LoadCollection/LoadPartitions with ``refresh``: pull a new target for what is loaded."""
        ctx = self.ctx
        existing = ctx.collections.get(cid)
        if existing is None or existing.status != query_coord_pb2.Loaded:
            raise errors.CollectionNotLoaded("refresh needs a loaded collection", collection=cid)
        target = ctx.targets.pull_next(cid, ctx.collections.partition_ids(cid))
        self.refresh_versions[cid] = target.version if target is not None else 0
        self.poke()

    def _load_new(self, req: LoadRequest, vchannels: Iterable[str], partition_ids: list[int], replica_number: int,
                  rgs: list[str], load_fields: list[int]) -> None:
        """The first load of a collection (Milvus ``LoadCollectionJob`` / ``LoadPartitionJob`` on an
        unloaded one): spawn its replicas, record it Loading; undone whole if a step fails."""
        ctx, cid = self.ctx, req.collection_id
        layout = self._layout(replica_number, rgs)
        spawned = []
        try:
            spawned = ctx.replicas.spawn(cid, layout, self._new_id, self.rg_nodes, vchannels)
            info = query_coord_pb2.CollectionLoadInfo(
                collectionID=cid,
                replica_number=replica_number,
                load_type=(
                    query_coord_pb2.LoadPartition if req.partition_ids is not None else query_coord_pb2.LoadCollection
                ),
                load_fields=load_fields,
                field_indexID=req.field_index or {},
                status=query_coord_pb2.Loading,
            )
            ctx.collections.put(info, self._loading(cid, partition_ids))
            self.pull_target(cid)
        except BaseException:
            ctx.collections.remove(cid)
            ctx.replicas.remove(spawned)
            ctx.targets.remove(cid)
            raise
        self.poke()

    async def _load_more(
        self,
        existing: query_coord_pb2.CollectionLoadInfo,
        whole: bool,
        wanted: list[int],
        replica_number: int,
        rgs: list[str],
        load_fields: list[int],
    ) -> None:
        """A load of a loaded collection: the same load again succeeds; a new replica layout (whole
        collection only) updates the config; partitions not loaded yet are added."""
        ctx, cid = self.ctx, existing.collectionID
        if sorted(existing.load_fields) != load_fields:
            raise errors.ParameterInvalid("can't change the load field list for loaded collection", collection=cid)
        if existing.replica_number != replica_number or \
                self._current_layout(cid) != self._layout(replica_number, rgs):
            if not whole:
                raise errors.ParameterInvalid("can't change the replica number for loaded partitions",
                                              collection=cid)
            await self._update_config(cid, replica_number, rgs)
            return
        new = [pid for pid in wanted if ctx.collections.partition(cid, pid) is None]
        if not new:
            return   # loading the same thing again succeeds
        try:
            await self._on_nodes(
                cid,
                "load_partitions",
                query_coord_pb2.LoadPartitionsRequest(collectionID=cid, partitionIDs=new),
                "load-partitions",
            )
            # A loaded collection stays Loaded (and searchable) while partitions added to it load, as in
            # Milvus: GetShardLeaders answers 103 only for a collection that is not Loaded yet.
            ctx.collections.put(existing, self._loading(cid, new))
            self.pull_target(cid)
        except BaseException:
            ctx.collections.remove_partitions(cid, new)
            raise
        self.poke()

    @staticmethod
    def _loading(cid: int, partition_ids: list[int]) -> list[query_coord_pb2.PartitionLoadInfo]:
        return [
            query_coord_pb2.PartitionLoadInfo(collectionID=cid, partitionID=pid, status=query_coord_pb2.Loading)
            for pid in partition_ids
        ]

    # --- update load config / transfer replica ------------------------------------------------

    async def update_load_config(self, cids: list[int], replica_number: int, rgs: list[str]) -> None:
        failures = []
        for cid in cids:
            async with self.queue.lock(cid):
                info = self.ctx.collections.get(cid)
                if info is None:
                    log.info("UpdateLoadConfig: collection %d is not loaded, skipped", cid)
                    continue
                try:
                    await self._update_config(cid, replica_number or info.replica_number,
                                              list(rgs) or sorted(self._current_layout(cid)))
                except errors.MilvusError as e:
                    failures.append(e)
        if len(failures) == 1:
            raise failures[0]
        if failures:
            raise errors.ServiceInternal("; ".join(str(e) for e in failures))

    async def _update_config(self, cid: int, replica_number: int, rgs: list[str]) -> None:
        ctx = self.ctx
        layout = self._layout(replica_number, rgs)
        current = self._current_layout(cid)
        if layout == current and ctx.collections.get(cid).replica_number == replica_number:
            return
        for rg, count in layout.items():
            if len(self.rg_nodes(rg)) < count:
                raise errors.ResourceGroupNodeNotEnough(
                    f"resource group {rg} has {len(self.rg_nodes(rg))} nodes, {count} replicas requested", rg=rg)
        extra = []
        for rg, have in current.items():
            surplus = have - layout.get(rg, 0)
            if surplus > 0:
                extra += ctx.replicas.in_group(rg, cid)[-surplus:]
        ctx.replicas.remove(extra)
        missing = {rg: count - current.get(rg, 0) for rg, count in layout.items() if count > current.get(rg, 0)}
        if missing:
            ctx.replicas.spawn(cid, missing, self._new_id, self.rg_nodes, ctx.catalog.get_collection(cid).vchannels)
        info = query_coord_pb2.CollectionLoadInfo()
        info.CopyFrom(ctx.collections.get(cid))
        info.replica_number = replica_number
        ctx.collections.update(info)
        self.pull_target(cid)
        self.poke()

    async def transfer_replica(self, source: str, target: str, cid: int, num: int) -> None:
        async with self.queue.lock(cid):
            ctx = self.ctx
            moving = ctx.replicas.in_group(source, cid)[:num]
            staying = len(ctx.replicas.in_group(target, cid))
            if len(self.rg_nodes(target)) < staying + num:
                raise errors.ResourceGroupNodeNotEnough(
                    f"resource group {target} has {len(self.rg_nodes(target))} nodes, "
                    f"{staying + num} replicas would live there", rg=target)
            for replica in moving:
                ctx.replicas.move(replica, target)
            ctx.replicas.recover(cid, self.rg_nodes)
            self.poke()

    # --- partitions created after the load ---------------------------------------------------

    async def sync_new_partition(self, cid: int, pid: int) -> None:
        async with self.queue.lock(cid):
            info = self.ctx.collections.get(cid)
            if (
                info is None
                or info.load_type != query_coord_pb2.LoadCollection
                or self.ctx.collections.partition(cid, pid)
            ):
                return
            await self._on_nodes(
                cid,
                "load_partitions",
                query_coord_pb2.LoadPartitionsRequest(collectionID=cid, partitionIDs=[pid]),
                "load-partitions",
            )
            self.ctx.collections.put(info, [query_coord_pb2.PartitionLoadInfo(collectionID=cid, partitionID=pid,
                                                                status=query_coord_pb2.Loaded)])
            self.pull_target(cid)
            self.poke()

    # --- release ----------------------------------------------------------------------------

    async def _release_partitions_on_nodes(self, cid: int, pids: list[int]) -> None:
        await self._on_nodes(
            cid,
            "release_partitions",
            query_coord_pb2.ReleasePartitionsRequest(collectionID=cid, partitionIDs=pids),
            "release-partitions",
        )

    async def release_timed_out_partitions(self, cid: int, pids: list[int]) -> None:
        """The nodes drop partitions whose load timed out (the collection observer removed their meta), unless
        a load added them again meanwhile; nothing when the whole collection went (the nodes drop it)."""
        async with self.queue.lock(cid):
            if self.ctx.collections.get(cid) is None:
                return
            gone = [pid for pid in pids if self.ctx.collections.partition(cid, pid) is None]
            if gone:
                await self._release_partitions_on_nodes(cid, gone)

    async def release_collection(self, cid: int, timeout_s: float) -> None:
        async with self.queue.lock(cid):
            if self.ctx.collections.get(cid) is None:
                return
            self.forget(cid)
            await self._release_on_nodes(cid)
            await self._wait_released(lambda: self.ctx.dist.segments(cid) or self.ctx.dist.channels(cid), timeout_s,
                                      f"collection {cid}")

    def forget(self, cid: int) -> None:
        ctx = self.ctx
        ctx.scheduler.cancel_collection(cid)
        ctx.collections.remove(cid)
        ctx.replicas.remove_collection(cid)
        ctx.targets.remove(cid)
        self.refresh_versions.pop(cid, None)

    async def _release_on_nodes(self, cid: int) -> None:
        """Tell every node holding something of ``cid`` to drop it (the checkers would, a round later)."""
        ctx = self.ctx
        calls = []
        for node_id, ch in ctx.dist.channels(cid):
            calls.append(self.executor.call("unsub_dm_channel", query_coord_pb2.UnsubDmChannelRequest(
                nodeID=node_id, collectionID=cid, channel_name=ch.channel),
                node_id, f"unsub-channel-{ch.channel}-node-{node_id}"))
        holders = {n for n, _ in ctx.dist.segments(cid)} | {n for n, _ in ctx.dist.channels(cid)}
        for node_id in sorted(holders):
            calls.append(self.executor.call("release_collection", query_coord_pb2.ReleaseCollectionRequest(
                base=common_pb2.MsgBase(targetID=node_id), collectionID=cid, nodeID=node_id),
                node_id, f"release-collection-{cid}-node-{node_id}"))
        results = await asyncio.gather(*calls, return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                log.warning("releasing collection %d on a node failed (the checkers retry): %s", cid, r)

    async def _wait_released(self, remaining: Callable[[], object], timeout_s: float, what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while remaining():
            if loop.time() > deadline:
                raise errors.Timeout(f"{what} still held by query nodes after {timeout_s:.0f} s")
            self.poke()
            await asyncio.sleep(RELEASE_POLL_S)

    async def release_partitions(self, cid: int, pids: list[int], timeout_s: float) -> None:
        if not pids:
            raise errors.ParameterInvalid("partition list is empty", collection=cid)
        async with self.queue.lock(cid):
            ctx = self.ctx
            if ctx.collections.get(cid) is None:
                return
            loaded = set(ctx.collections.partition_ids(cid))
            gone = sorted(set(pids) & loaded)
            if not gone:
                return
            if set(gone) == loaded:
                self.forget(cid)
                await self._release_on_nodes(cid)
                await self._wait_released(lambda: ctx.dist.segments(cid) or ctx.dist.channels(cid), timeout_s,
                                          f"collection {cid}")
                return
            ctx.collections.remove_partitions(cid, gone)
            ctx.targets.remove_partitions(cid, gone)
            await self._release_partitions_on_nodes(cid, gone)
            self.pull_target(cid)
            self.poke()
            await self._wait_released(
                lambda: [s for _, s in ctx.dist.segments(cid) if s.partition in gone], timeout_s,
                f"partitions {gone} of collection {cid}")
