"""DataCoord's index builder: every segment the write path sealed gets its index built on a worker.

Milvus's DataCoord ``indexBuilder`` finds Flushed segments with an index definition and no
``SegmentIndex`` and hands them to an IndexNode; here every ``check_interval_s`` (or when poked) a
round reads the catalog for segments that :func:`~vecgrid.cluster.index_builds.built_by_index_builder`
(flushed or compacted ones, not bulk-imported ones: those are indexed at load and saved by a node)
whose field's live index has no build, and submits one Dask task per segment and field:

* key ``build-index-<segment>-field-<field>-build-<build>`` (task prefix ``build-index``, visible in the
  dashboard's task stream like loads and moves); the handler is
  :func:`vecgrid.cluster.datanode.index_build.build_segment_index`;
* on a worker with ``GPU`` resources when the cluster has any (``resources={"GPU": 1}``), else on any
  worker — not pinned: a task lost with its worker (kill -9) is rescheduled by Dask on another one;
* ``retries``: a task that failed is run again by Dask; one that still fails, or passes
  ``datacoord.task_timeout_s``, is released and the segment is proposed again next round with a new
  build id (so a late attempt and its successor never write the same file);
* the returned file is recorded in the coordinator's catalog
  (:func:`~vecgrid.cluster.index_builds.record_saved_indexes`), which skips it when the segment was
  dropped or the index replaced meanwhile.  Nodes serving the segment exactly switch to the file
  through the QueryCoord's index checker (an Index-scope reload).

Who owns what: the round loop and every build run on the event loop that called :meth:`start`;
``_builds`` (segment and field -> the asyncio task awaiting its Dask task), ``_ended_during_scan`` and
``failures`` are read and written only there.  Catalog reads and writes run in worker threads (``asyncio.to_thread``).
Progress (Milvus's DescribeIndex / GetIndexBuildProgress ``indexed_rows``, ``total_rows``,
``pending_index_rows``) is the catalog's: :func:`index_progress` reads it for every index.

A failure is never dropped: it stays in ``failures`` (the last error per segment and field) until a
later build of it succeeds, and the build is proposed again every round.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace

from distributed import Client

from vecgrid import errors
from vecgrid.cluster.dask_futures import task_result
from vecgrid.cluster.datanode.index_build import IndexBuildRequest, build_segment_index
from vecgrid.cluster.index_builds import built_by_index_builder, record_saved_indexes
from vecgrid.cluster.periodic import Periodic
from vecgrid.config import Settings
from vecgrid.proto import common_pb2
from vecgrid.storage.catalog import Catalog, field_dim
from vecgrid.storage.layout import DataDir

log = logging.getLogger(__name__)

#: Dask retries of a failed build before the round that submitted it gives up (the next round submits again)
RETRIES = 2
#: builds awaited at once (Dask queues them on the workers; a bound keeps a backlog from flooding it)
MAX_IN_FLIGHT = 16


@dataclass(frozen=True)
class PendingBuild:
    """A segment and field without a build of the field's live index."""

    segment_id: int
    field_id: int
    index_id: int
    request: IndexBuildRequest   # build_id 0: allocated when submitted

    @property
    def key(self) -> tuple[int, int]:
        return self.segment_id, self.field_id


def index_progress(catalog: Catalog, collection_ids: list[int] | None = None) -> list[dict]:
    """Every live index of the collections (all when None) with its rows: ``total_rows`` (the Flushed
    segments'), ``indexed_rows`` (those with a build of it), ``pending_index_rows``, ``progress`` (%) and
    ``state`` (Finished or InProgress).  Blocking: catalog reads.  A collection dropped meanwhile is left out."""
    out = []
    colls = catalog.all_collections() if collection_ids is None else []
    for cid in collection_ids or ():
        try:
            colls.append(catalog.get_collection(cid))
        except errors.CollectionNotFound:
            continue
    for coll in colls:
        try:
            infos = catalog.describe_index(coll.id)
        except errors.CollectionNotFound:
            continue
        for info in infos:
            out.append({"collection_id": coll.id, "collection": coll.name, "index_name": info.index_name,
                        "index_id": info.indexID, "field": coll.field_by_id(info.fieldID).name,
                        "field_id": info.fieldID, "state": common_pb2.IndexState.Name(info.state),
                        "total_rows": info.total_rows, "indexed_rows": info.indexed_rows,
                        "pending_index_rows": info.pending_index_rows,
                        "progress": info.indexed_rows * 100 // info.total_rows if info.total_rows else 100})
    return out


def task_key(segment_id: int, field_id: int, build_id: int) -> str:
    """The Dask key of a build (its prefix, ``build-index``, names it on the dashboard)."""
    return f"build-index-{segment_id}-field-{field_id}-build-{build_id}"


class IndexBuilder(Periodic):
    """See the module doc.  ``root``: the segment storage root the workers write to (default: the
    deployment's, ``common.data_dir``)."""

    name = "index builder"

    def __init__(self, catalog: Catalog, client: Client, settings: Settings, *, root: str | None = None,
                 retries: int = RETRIES, max_in_flight: int = MAX_IN_FLIGHT) -> None:
        super().__init__(settings.datacoord.check_interval_s)
        self.catalog, self.client = catalog, client
        self.root = root if root is not None else DataDir.of(settings).segment_root
        self.task_timeout_s = settings.datacoord.task_timeout_s
        self.retries = retries
        self.max_in_flight = max_in_flight
        self._builds: dict[tuple[int, int], asyncio.Task] = {}
        self._ended_during_scan: set[tuple[int, int]] = set()   # builds that ended since the round began
        self.failures: dict[tuple[int, int], str] = {}
        self.recorded = 0   # builds recorded since start (diagnostics)

    # --- the loop -----------------------------------------------------------------------------

    async def stop(self) -> None:
        """Stop the rounds and the builds awaited (their Dask tasks are released)."""
        await super().stop()
        builds = list(self._builds.values())
        for build in builds:
            build.cancel()
        await asyncio.gather(*builds, return_exceptions=True)

    @property
    def in_flight(self) -> set[tuple[int, int]]:
        """(segment, field) of the builds submitted and not ended."""
        return set(self._builds)

    @property
    def builds_in_flight(self) -> int:
        return len(self._builds)

    async def round(self) -> None:
        self._ended_during_scan = set()
        found, refused = await asyncio.to_thread(self.pending)
        # a build that ended while the catalog was read may be recorded already: next round decides
        busy = set(self._builds) | self._ended_during_scan
        wanted = {p.key for p in found} | set(refused) | busy
        self.failures = {key: why for key, why in self.failures.items() if key in wanted}  # dropped meanwhile
        for key, why in refused.items():
            if key not in self.failures:
                log.error("index of segment %d field %d cannot be built: %s", *key, why)
            self.failures[key] = why
        pending = [p for p in found if p.key not in busy]
        room = self.max_in_flight - len(self._builds)
        if not pending or room <= 0:
            return
        gpu = await self.cluster_has_gpu()
        for build in pending[:room]:
            task = asyncio.ensure_future(self._build(build, gpu))
            self._builds[build.key] = task
            task.add_done_callback(lambda t, key=build.key: self._ended(key, t))

    def _ended(self, key: tuple[int, int], task: asyncio.Task) -> None:
        if self._builds.get(key) is task:
            del self._builds[key]
        self._ended_during_scan.add(key)
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            self.failures.pop(key, None)
            return
        self.failures[key] = f"{type(error).__name__}: {error}"
        log.warning("index build of segment %d field %d failed (proposed again next round): %s", *key, error)

    # --- what to build --------------------------------------------------------------------------

    def pending(self) -> tuple[list[PendingBuild], dict[tuple[int, int], str]]:
        """Every segment and field the builder owns that lacks a build of the live index, oldest segment
        first, and those it cannot build (segment and field -> why).  Blocking: catalog reads."""
        out: list[PendingBuild] = []
        refused: dict[tuple[int, int], str] = {}
        for coll in self.catalog.all_collections():
            live = self.catalog.describe_index(coll.id)
            if not live:
                continue
            built = {(b.segmentID, b.indexID) for b in self.catalog.list_segment_indexes(coll.id)}
            for seg in self.catalog.list_segments(coll.id, states=[common_pb2.Flushed]):
                if not built_by_index_builder(seg):
                    continue
                missing = [index for index in live if (seg.ID, index.indexID) not in built]
                if not missing:
                    continue
                try:
                    record = self.catalog.segment_files_record(seg.ID)
                except errors.SegmentNotFound:
                    continue  # purged since listed
                except errors.MilvusError as e:  # files in another layout than one data.parquet
                    refused.update({(seg.ID, index.fieldID): str(e) for index in missing})
                    continue
                for index in missing:
                    f = coll.field_by_id(index.fieldID)
                    request = IndexBuildRequest(
                        root=self.root, collection_id=coll.id, partition_id=seg.partitionID, segment_id=seg.ID,
                        num_rows=seg.num_of_rows, data=record.data, field_id=f.fieldID, field_name=f.name,
                        dim=field_dim(f), index_id=index.indexID, build_id=0,
                        index_params={kv.key: kv.value for kv in index.index_params})
                    out.append(PendingBuild(seg.ID, f.fieldID, index.indexID, request))
        return sorted(out, key=lambda p: p.key), refused

    async def cluster_has_gpu(self) -> bool:
        """Whether any worker offers ``GPU`` resources (then builds run only there)."""
        identity = await self.client.scheduler.identity(n_workers=-1)
        return any((w.get("resources") or {}).get("GPU", 0) > 0 for w in identity.get("workers", {}).values())

    # --- one build ------------------------------------------------------------------------------

    async def _build(self, build: PendingBuild, gpu: bool) -> None:
        build_id = await asyncio.to_thread(self.catalog.allocate_ids, 1)
        request = replace(build.request, build_id=build_id)
        fut = self.client.submit(build_segment_index, request, key=task_key(build.segment_id, build.field_id, build_id),
                                 pure=False, retries=self.retries, resources={"GPU": 1} if gpu else None)
        try:
            async with asyncio.timeout(self.task_timeout_s):
                info = await task_result(fut)
        except TimeoutError:
            raise errors.ServiceUnavailable(f"index build {fut.key} passed its deadline of {self.task_timeout_s} s",
                                            segment=build.segment_id) from None
        finally:
            fut.release()
        recorded = await asyncio.to_thread(record_saved_indexes, self.catalog, build.segment_id,
                                           {build.field_id: build.index_id}, {build.field_id: info})
        self.recorded += recorded
