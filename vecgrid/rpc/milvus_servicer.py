"""Milvus's public ``MilvusService`` (port 19530): the API pymilvus, the Milvus SDKs and their
integrations (LangChain's and LlamaIndex's Milvus stores, Attu) speak.

Each method decodes its request (:mod:`.milvus_codec`), makes the call the REST app makes for the same
thing — the coordinator's :class:`~vecgrid.cluster.querycoord.ddl.Ddl` for definitions, its
:class:`~vecgrid.cluster.querycoord.coordinator.QueryCoord` for loads, the catalog for descriptions,
the coordinator's :class:`~vecgrid.cluster.proxy.proxy.Proxy` for reads and writes — and encodes the
answer with Milvus's status codes.  Filters are Milvus expressions
(:func:`~vecgrid.cluster.proxy.milvus_expr.compile_expression`).

The service declares only these methods (``vecgrid/proto/milvus.proto``): any other answers gRPC
``UNIMPLEMENTED``, which pymilvus takes as "not supported" for optional calls.  A call works in the
database it names (``db_name``, else the ``dbname`` metadata pymilvus sends; ``default`` when none),
through the coordinator's proxy for that database (:meth:`~vecgrid.cluster.proxy.proxy.Proxy.in_database`).

State: ``_next_identifier``, owned by the server's event loop.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from vecgrid import __version__, errors
from vecgrid.cluster.proxy import milvus_api, rerank
from vecgrid.cluster.proxy.catalog_access import CollectionMeta
from vecgrid.cluster.proxy.milvus_expr import compile_expression
from vecgrid.cluster.proxy.proxy import Proxy
from vecgrid.cluster.querycoord.coordinator import QueryCoord
from vecgrid.cluster.querycoord.ddl import LOADED, LOADING, NOT_LOAD, IndexRequest, load_state
from vecgrid.cluster.querycoord.job.jobs import LoadRequest
from vecgrid.gpu.results import decode_placeholder_group
from vecgrid.proto import common_pb2, milvus_pb2, milvus_pb2_grpc, schema_pb2
from vecgrid.rpc import common
from vecgrid.rpc import milvus_codec as codec
from vecgrid.rpc.server import GrpcServer
from vecgrid.rpc.service import milvus_servicer
from vecgrid.rpc.status import success
from vecgrid.storage.catalog import CollectionInfo
from vecgrid.storage.catalog.schema_rules import DEFAULT_DB_NAME, kv_dict
from vecgrid.storage.tso import parse_ts

SERVICE = milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"]
_LOAD_STATES = {LOADED: common_pb2.LoadStateLoaded, LOADING: common_pb2.LoadStateLoading}
_INDEX_META_KEYS = ("index_type", "metric_type", "params")


def _db(request: Any, context: Any) -> str:
    """The request's database: its ``db_name``, else the ``dbname`` metadata; ``""`` for the default."""
    name = getattr(request, "db_name", "") or next(
        (v for k, v in (context.invocation_metadata() or ()) if k == "dbname"), "")
    return "" if name == DEFAULT_DB_NAME else name


@milvus_servicer(SERVICE, milvus_pb2_grpc.MilvusServiceServicer)
class MilvusServicer:
    """milvus.proto.milvus.MilvusService over the coordinator's QueryCoord and proxy."""

    def __init__(self, coord: QueryCoord, proxy: Proxy) -> None:
        self.coord = coord
        self.proxy = proxy
        self.catalog = coord.catalog
        self._next_identifier = int(time.time() * 1000)

    async def _collection(self, request: Any, context: Any, name: str | None = None) -> CollectionInfo:
        db = _db(request, context)
        name = request.collection_name if name is None else name
        if not name:
            raise errors.ParameterInvalid("collection name should not be empty")
        return await asyncio.to_thread(self.catalog.describe_collection, db, name)

    # --- connection and server ----------------------------------------------------------------

    async def Connect(self, request, context):
        db = _db(request, context)
        if db:   # Milvus refuses a connection to a database that does not exist
            await asyncio.to_thread(self.catalog.describe_database, db)
        self._next_identifier += 1
        info = common_pb2.ServerInfo(build_tags=milvus_api.API_VERSION, deploy_mode=self.coord.deploy_mode,
                                     reserved={"server": "vecgrid", "vecgrid_version": __version__})
        return milvus_pb2.ConnectResponse(status=success(), server_info=info, identifier=self._next_identifier)

    async def GetVersion(self, request, context):
        return milvus_pb2.GetVersionResponse(status=success(), version=milvus_api.API_VERSION)

    async def CheckHealth(self, request, context):
        try:
            return common.health(*self.coord.health_reasons())
        except errors.MilvusError as err:
            return common.unhealthy(err)

    async def ListDatabases(self, request, context):
        dbs = await asyncio.to_thread(self.catalog.list_databases)
        return milvus_pb2.ListDatabasesResponse(status=success(), db_names=[d.name for d in dbs],
                                                created_timestamp=[d.created_time for d in dbs])

    async def CreateDatabase(self, request, context):
        await self.coord.ddl.create_database(request.db_name, kv_dict(request.properties) or None)
        return success()

    async def DropDatabase(self, request, context):
        await self.coord.ddl.drop_database(request.db_name)
        self.proxy.invalidate_collections()
        return success()

    async def AllocTimestamp(self, request, context):
        ts = await asyncio.to_thread(self.catalog.allocate_timestamp)
        return milvus_pb2.AllocTimestampResponse(status=success(), timestamp=ts)

    # --- collections --------------------------------------------------------------------------

    async def CreateCollection(self, request, context):
        db = _db(request, context)
        schema = schema_pb2.CollectionSchema()
        try:
            schema.ParseFromString(request.schema)
        except Exception:  # noqa: BLE001 - protobuf's DecodeError: the client's bytes
            raise errors.ParameterInvalid("the collection schema is not a serialized CollectionSchema") from None
        if schema.name and schema.name != request.collection_name:
            raise errors.ParameterInvalid(f"collection name [{request.collection_name}] does not match the "
                                          f"schema's name [{schema.name}]")
        await self.coord.ddl.create_collection(
            db, request.collection_name, schema, shards_num=request.shards_num or 1,
            properties=kv_dict(request.properties) or None, consistency_level=request.consistency_level)
        self.proxy.invalidate_collections()
        return success()

    async def DescribeCollection(self, request, context):
        if request.collectionID and not request.collection_name:
            coll = await asyncio.to_thread(self.catalog.get_collection, request.collectionID)
        else:
            coll = await self._collection(request, context)
        # as Milvus's proxy: the dynamic field is the schema's flag, not a field the client sees (pymilvus
        # would ask every inserted row for a "$meta" key)
        schema = schema_pb2.CollectionSchema()
        schema.CopyFrom(coll.schema)
        del schema.fields[:]
        schema.fields.extend(f for f in coll.schema.fields if not f.is_dynamic)
        return milvus_pb2.DescribeCollectionResponse(
            status=success(), schema=schema, collectionID=coll.id, collection_name=coll.name,
            virtual_channel_names=list(coll.vchannels), physical_channel_names=list(coll.pchannels),
            created_timestamp=coll.create_time, created_utc_timestamp=parse_ts(coll.create_time)[0],
            shards_num=coll.shards_num, consistency_level=coll.consistency_level,
            properties=codec.pairs(coll.properties), db_name=coll.db_name, db_id=coll.db_id,
            num_partitions=len(coll.partitions),
            aliases=await asyncio.to_thread(self.catalog.aliases_of, coll.id))

    async def HasCollection(self, request, context):
        db = _db(request, context)
        found = await asyncio.to_thread(self.catalog.has_collection, db, request.collection_name)
        return milvus_pb2.BoolResponse(status=success(), value=found)

    async def ShowCollections(self, request, context):
        db = _db(request, context)
        colls = await asyncio.to_thread(self.catalog.list_collections, db)
        if request.collection_names:
            by_name = {c.name: c for c in colls}
            missing = [n for n in request.collection_names if n not in by_name]
            if missing:
                raise errors.CollectionNotFound(f"collection not found[collection={missing[0]}]")
            colls = [by_name[n] for n in request.collection_names]
        percents = [load_state(self.coord, c.id).percent for c in colls]
        if request.type == milvus_pb2.InMemory:
            colls, percents = [c for c, p in zip(colls, percents) if p >= 100], [p for p in percents if p >= 100]
        return milvus_pb2.ShowCollectionsResponse(
            status=success(), collection_names=[c.name for c in colls], collection_ids=[c.id for c in colls],
            created_timestamps=[c.create_time for c in colls],
            created_utc_timestamps=[parse_ts(c.create_time)[0] for c in colls],
            inMemory_percentages=percents, query_service_available=[p >= 100 for p in percents])

    async def DropCollection(self, request, context):
        db = _db(request, context)
        try:
            await self.coord.ddl.drop_collection(db, request.collection_name)
        except errors.CollectionNotFound:
            pass   # Milvus drops what is not there without an error
        self.proxy.invalidate_collections()
        return success()

    async def RenameCollection(self, request, context):
        db = _db(request, context)
        if request.newDBName and request.newDBName != db:
            raise errors.ParameterInvalid("vecgrid renames a collection within its database")
        await self.coord.ddl.rename_collection(db, request.oldName, request.newName)
        self.proxy.invalidate_collections()
        return success()

    async def AlterCollection(self, request, context):
        db = _db(request, context)
        await self.coord.ddl.alter_collection(db, request.collection_name, properties=kv_dict(request.properties))
        self.proxy.invalidate_collections()
        return success()

    async def GetCollectionStatistics(self, request, context):
        coll = await self._collection(request, context)
        rows = await asyncio.to_thread(self.coord.row_count, coll.id)
        return milvus_pb2.GetCollectionStatisticsResponse(status=success(), stats=codec.pairs({"row_count": str(rows)}))

    # --- aliases ------------------------------------------------------------------------------

    async def CreateAlias(self, request, context):
        await self.coord.ddl.create_alias(_db(request, context), request.alias, request.collection_name)
        self.proxy.invalidate_collections()
        return success()

    async def AlterAlias(self, request, context):
        await self.coord.ddl.alter_alias(_db(request, context), request.alias, request.collection_name)
        self.proxy.invalidate_collections()
        return success()

    async def DropAlias(self, request, context):
        await self.coord.ddl.drop_alias(_db(request, context), request.alias)
        self.proxy.invalidate_collections()
        return success()

    async def DescribeAlias(self, request, context):
        db = _db(request, context)
        collection = await asyncio.to_thread(self.catalog.describe_alias, db, request.alias)
        return milvus_pb2.DescribeAliasResponse(status=success(), db_name=db, alias=request.alias,
                                                collection=collection)

    async def ListAliases(self, request, context):
        db = _db(request, context)
        aliases = await asyncio.to_thread(self.catalog.list_aliases, db, request.collection_name)
        return milvus_pb2.ListAliasesResponse(status=success(), db_name=db, collection_name=request.collection_name,
                                              aliases=[alias for alias, _ in aliases])

    # --- loads --------------------------------------------------------------------------------

    async def LoadCollection(self, request, context):
        coll = await self._collection(request, context)
        fields = [coll.field(name).fieldID for name in request.load_fields]
        await self.coord.load(LoadRequest(coll.id, None, request.replica_number, list(request.resource_groups),
                                          fields, request.refresh))
        return success()

    async def ReleaseCollection(self, request, context):
        coll = await self._collection(request, context)
        await self.coord.release_collection(coll.id)
        self.proxy.invalidate(coll.id)
        return success()

    async def GetLoadState(self, request, context):
        try:
            coll = await self._collection(request, context)
        except errors.CollectionNotFound:
            return milvus_pb2.GetLoadStateResponse(status=success(), state=common_pb2.LoadStateNotExist)
        pids = [coll.partition(p).partitionID for p in request.partition_names] or None
        state = load_state(self.coord, coll.id, pids)
        return milvus_pb2.GetLoadStateResponse(status=success(),
                                               state=_LOAD_STATES.get(state.state, common_pb2.LoadStateNotLoad))

    async def GetLoadingProgress(self, request, context):
        coll = await self._collection(request, context)
        pids = [coll.partition(p).partitionID for p in request.partition_names] or None
        state = load_state(self.coord, coll.id, pids)
        if state.state not in _LOAD_STATES:
            if state.error is not None:
                raise state.error
            raise errors.CollectionNotLoaded(f"collection not loaded[collection={coll.name}]")
        return milvus_pb2.GetLoadingProgressResponse(status=success(), progress=state.percent,
                                                     refresh_progress=state.percent)

    # --- partitions ---------------------------------------------------------------------------

    async def CreatePartition(self, request, context):
        coll = await self._collection(request, context)
        await self.coord.ddl.create_partition(coll.id, request.partition_name)
        self.proxy.invalidate_collections()
        return success()

    async def DropPartition(self, request, context):
        coll = await self._collection(request, context)
        await self.coord.ddl.drop_partition(coll.id, request.partition_name)
        self.proxy.invalidate_collections()
        return success()

    async def HasPartition(self, request, context):
        coll = await self._collection(request, context)
        return milvus_pb2.BoolResponse(status=success(), value=request.partition_name in coll.partition_names)

    async def ShowPartitions(self, request, context):
        coll = await self._collection(request, context)
        parts = list(coll.partitions)
        if request.partition_names:
            parts = [coll.partition(name) for name in request.partition_names]
        loaded = load_state(self.coord, coll.id).state != NOT_LOAD
        states = {s.partitionID: s.inMemory_percentage
                  for s in (self.coord.partition_states(coll.id, []) if loaded else [])}
        return milvus_pb2.ShowPartitionsResponse(
            status=success(), partition_names=[p.partitionName for p in parts],
            partitionIDs=[p.partitionID for p in parts],
            created_timestamps=[p.partition_created_timestamp for p in parts],
            created_utc_timestamps=[parse_ts(p.partition_created_timestamp)[0] for p in parts],
            inMemory_percentages=[states.get(p.partitionID, 0) for p in parts])

    async def LoadPartitions(self, request, context):
        coll = await self._collection(request, context)
        if not request.partition_names:
            raise errors.ParameterInvalid("partition names should not be empty")
        pids = [coll.partition(p).partitionID for p in request.partition_names]
        fields = [coll.field(name).fieldID for name in request.load_fields]
        await self.coord.load(LoadRequest(coll.id, pids, request.replica_number, list(request.resource_groups),
                                          fields, request.refresh))
        return success()

    async def ReleasePartitions(self, request, context):
        coll = await self._collection(request, context)
        pids = [coll.partition(p).partitionID for p in request.partition_names]
        await self.coord.release_partitions(coll.id, pids)
        self.proxy.invalidate(coll.id)
        return success()

    async def GetPartitionStatistics(self, request, context):
        coll = await self._collection(request, context)
        pid = coll.partition(request.partition_name).partitionID
        rows = await asyncio.to_thread(self.coord.row_count, coll.id, pid)
        return milvus_pb2.GetPartitionStatisticsResponse(status=success(),
                                                         stats=codec.pairs({"row_count": str(rows)}))

    # --- indexes ------------------------------------------------------------------------------

    async def CreateIndex(self, request, context):
        db = _db(request, context)
        params = kv_dict(request.extra_params)
        index_params: dict[str, Any] = {}
        if params.get("params"):
            try:
                index_params = json.loads(params["params"])
            except ValueError:
                raise errors.ParameterInvalid(f"index params {params['params']!r} are not JSON") from None
        # the flat form (older SDKs, Attu): every key but the three above is an index parameter
        index_params.update({k: v for k, v in params.items() if k not in _INDEX_META_KEYS})
        req = IndexRequest(request.field_name, params.get("index_type") or "AUTOINDEX",
                           params.get("metric_type") or None, index_params, request.index_name)
        await self.coord.ddl.create_index(db, request.collection_name, req)
        self.proxy.invalidate_collections()
        return success()

    async def _indexes(self, request, context) -> tuple[CollectionInfo, list[Any]]:
        coll = await self._collection(request, context)
        infos = await asyncio.to_thread(self.catalog.describe_index, coll.id)
        chosen = [i for i in infos
                  if request.index_name in ("", i.index_name)
                  and getattr(request, "field_name", "") in ("", coll.field_by_id(i.fieldID).name)]
        if not chosen:
            raise errors.IndexNotFound(f"index not found[collection={coll.name}]", collection=coll.name)
        return coll, chosen

    async def DescribeIndex(self, request, context):
        coll, infos = await self._indexes(request, context)
        return milvus_pb2.DescribeIndexResponse(status=success(), index_descriptions=[
            milvus_pb2.IndexDescription(
                index_name=i.index_name, indexID=i.indexID, field_name=coll.field_by_id(i.fieldID).name,
                params=list(i.index_params), indexed_rows=i.indexed_rows, total_rows=i.total_rows,
                pending_index_rows=i.pending_index_rows, state=i.state,
                index_state_fail_reason=i.index_state_fail_reason)
            for i in infos])

    async def GetIndexState(self, request, context):
        _, infos = await self._indexes(request, context)
        return milvus_pb2.GetIndexStateResponse(status=success(), state=infos[0].state,
                                                fail_reason=infos[0].index_state_fail_reason)

    async def GetIndexBuildProgress(self, request, context):
        _, infos = await self._indexes(request, context)
        return milvus_pb2.GetIndexBuildProgressResponse(status=success(), indexed_rows=infos[0].indexed_rows,
                                                        total_rows=infos[0].total_rows)

    async def DropIndex(self, request, context):
        db = _db(request, context)
        await self.coord.ddl.drop_named_index(db, request.collection_name, request.field_name, request.index_name)
        self.proxy.invalidate_collections()
        return success()

    # --- writes -------------------------------------------------------------------------------

    async def Insert(self, request, context):
        return await self._write(request, context, upsert=False)

    async def Upsert(self, request, context):
        return await self._write(request, context, upsert=True)

    async def _write(self, request, context, *, upsert: bool) -> milvus_pb2.MutationResult:
        coll = await self._meta(request, context)
        columns = codec.insert_columns(request.fields_data, request.num_rows)
        proxy = self._proxy(request, context)
        write = proxy.upsert if upsert else proxy.insert
        result = await write(coll.name, columns, request.partition_name or None)
        return milvus_pb2.MutationResult(
            status=success(), IDs=codec.ids_message(result.ids, coll.pk_field),
            succ_index=result.succ_index or range(len(result.ids)), err_index=result.err_index,
            insert_cnt=result.insert_cnt, upsert_cnt=result.upsert_cnt, delete_cnt=result.delete_cnt,
            timestamp=result.timestamp)

    async def Delete(self, request, context):
        coll = await self._meta(request, context)
        if not request.expr.strip():
            raise errors.ParameterInvalid("delete needs an expression; use 'id in [...]' to name rows")
        expr = compile_expression(request.expr, coll.schema,
                                  params=codec.template_values(request.expr_template_values))
        keys = milvus_api.primary_keys_of(expr)
        proxy = self._proxy(request, context)
        if keys is not None:
            result = await proxy.delete(coll.name, ids=keys, partition=request.partition_name or None)
        else:
            result = await proxy.delete(coll.name, filter=expr, partition=request.partition_name or None)
        # Milvus 2.4 answers a delete with its count, no keys (pymilvus returns keys as the pre-2.3.2 answer)
        return milvus_pb2.MutationResult(status=success(), delete_cnt=result.delete_cnt, timestamp=result.timestamp)

    async def Flush(self, request, context):
        db = _db(request, context)
        out = milvus_pb2.FlushResponse(status=success(), db_name=db or DEFAULT_DB_NAME)
        proxy = self.proxy.in_database(db)
        for name in request.collection_names:
            segments = await proxy.flush(name)
            out.coll_segIDs[name].data.extend(segments)
            out.flush_coll_segIDs[name].data.extend(segments)
            out.coll_seal_times[name] = int(time.time())
            out.coll_flush_ts[name] = await asyncio.to_thread(self.catalog.allocate_timestamp)
        return out

    async def GetFlushState(self, request, context):
        flushed = await asyncio.to_thread(self.catalog.segments_flushed, list(request.segmentIDs))
        return milvus_pb2.GetFlushStateResponse(status=success(), flushed=flushed)

    async def ManualCompaction(self, request, context):
        if request.collection_name:
            coll = await self._collection(request, context)
        else:
            coll = await asyncio.to_thread(self.catalog.get_collection, request.collectionID)
        job = await self.proxy.writes.start_compaction(_db(request, context), coll.name)
        return milvus_pb2.ManualCompactionResponse(status=success(), compactionID=job["compaction_id"],
                                                   compactionPlanCount=job["executing_plans"] + job["completed_plans"]
                                                   + job["failed_plans"])

    async def GetCompactionState(self, request, context):
        job = await self.proxy.writes.compaction_state(request.compactionID)
        state = common_pb2.Executing if job["state"] == "Executing" else common_pb2.Completed
        return milvus_pb2.GetCompactionStateResponse(
            status=success(), state=state, executingPlanNo=job["executing_plans"],
            completedPlanNo=job["completed_plans"], failedPlanNo=job["failed_plans"])

    # --- reads --------------------------------------------------------------------------------

    def _proxy(self, request: Any, context: Any) -> Proxy:
        """The proxy of the request's database."""
        return self.proxy.in_database(_db(request, context))

    async def _meta(self, request: Any, context: Any) -> CollectionMeta:
        """The proxy's kept description of the request's collection (a read or write needs no catalog read)."""
        if not request.collection_name:
            raise errors.ParameterInvalid("collection name should not be empty")
        return await self._proxy(request, context).describe(request.collection_name)

    def _search_options(self, meta: CollectionMeta, request: Any, level: milvus_api.ReadLevel,
                        names: list[str], partition_names: list[str]) -> tuple[Any, dict[str, Any], codec.SearchArgs]:
        """One ``SearchRequest``'s (alone, or one of a hybrid search's) vectors, proxy options and params."""
        args = codec.search_args(request.search_params)
        field = meta.vector_field(args.anns_field)
        vectors = decode_placeholder_group(request.placeholder_group, meta.dim(field))
        expr = compile_expression(request.dsl, meta.schema, params=codec.template_values(request.expr_template_values))
        options = dict(limit=args.limit, offset=args.offset, filter=expr, output_fields=names, anns_field=field.name,
                       search_params=args.params, partition_names=partition_names, round_decimal=args.round_decimal,
                       consistency=level.consistency, guarantee_timestamp=level.guarantee_timestamp)
        if args.group_by is not None:
            options.update(group_by=args.group_by, group_size=args.group_size)
        return vectors, options, args

    def _read_level(self, request: Any, meta: CollectionMeta) -> milvus_api.ReadLevel:
        return milvus_api.read_level(request.consistency_level, request.use_default_consistency,
                                     request.guarantee_timestamp, meta.consistency_level)

    async def Search(self, request, context):
        meta = await self._meta(request, context)
        names = milvus_api.output_names(meta.schema, request.output_fields)
        vectors, options, args = self._search_options(meta, request, self._read_level(request, meta), names,
                                                      list(request.partition_names))
        if milvus_api.passes_through(meta.schema, options, names):
            results = await self.proxy.search_result(meta, vectors, **options)
            results.output_fields[:] = names
            results.primary_field_name = meta.pk_field.name
        else:
            hits = await self.proxy.search(meta, vectors, **options)
            results = codec.search_result_data(hits, meta.schema, names, args.limit)
        return milvus_pb2.SearchResults(status=success(), collection_name=meta.name, results=results)

    async def HybridSearch(self, request, context):
        meta = await self._meta(request, context)
        if not request.requests:
            raise errors.ParameterInvalid("hybrid search needs at least one search request")
        rank = codec.rank_args(request.rank_params)
        score = rerank.ranker(rank.strategy, rank.params, len(request.requests))
        level = self._read_level(request, meta)
        names = milvus_api.output_names(meta.schema, request.output_fields)
        searches = [self._search_options(meta, sub, level, names,
                                         list(request.partition_names) or list(sub.partition_names))
                    for sub in request.requests]
        hits = await asyncio.gather(*(self.proxy.search(meta, vectors, **options) for vectors, options, _ in searches))
        metrics = [meta.metric(meta.vector_field(options["anns_field"])) for _, options, _ in searches]
        fused = rerank.fuse(hits, metrics, score, rank.limit, rank.offset)
        if rank.round_decimal >= 0:
            for query in fused:
                for hit in query:
                    hit["distance"] = round(hit["distance"], rank.round_decimal)
        return milvus_pb2.SearchResults(status=success(), collection_name=meta.name,
                                        results=codec.search_result_data(fused, meta.schema, names, rank.limit))

    async def Query(self, request, context):
        coll = await self._meta(request, context)
        args = codec.query_args(request.query_params)
        expr = compile_expression(request.expr, coll.schema,
                                  params=codec.template_values(request.expr_template_values))
        level = self._read_level(request, coll)
        asked = list(request.output_fields)
        reads = dict(filter=expr, partition_names=list(request.partition_names), consistency=level.consistency,
                     guarantee_timestamp=level.guarantee_timestamp)
        if codec.COUNT_STAR in (n.strip().lower() for n in asked):
            if len(asked) > 1:
                raise errors.ParameterInvalid("count(*) cannot be queried with other output fields")
            count = await self.proxy.count(coll, **reads)
            return milvus_pb2.QueryResults(status=success(), collection_name=coll.name,
                                           fields_data=[codec.count_result(count)], output_fields=[codec.COUNT_STAR])
        if expr is None and args.limit is None:
            raise errors.ParameterInvalid("empty expression should be used with limit")
        names = milvus_api.output_names(coll.schema, asked)
        rows = await self.proxy.query(coll, output_fields=names, limit=args.limit, offset=args.offset, **reads)
        pk = coll.pk_field.name
        shown = names if pk in names else [pk, *names]
        return milvus_pb2.QueryResults(status=success(), collection_name=coll.name, primary_field_name=pk,
                                       fields_data=codec.rows_to_fields(rows, coll.schema, shown),
                                       output_fields=shown)


def _only_vector_field(coll: CollectionInfo) -> schema_pb2.FieldSchema:
    vectors = coll.vector_fields
    if len(vectors) != 1:
        raise errors.ParameterInvalid(f"collection {coll.name!r} has {len(vectors)} vector fields; "
                                      "name the one to search (anns_field)")
    return vectors[0]


async def serve_milvus(coord: QueryCoord, proxy: Proxy, host: str, port: int,
                       interceptors=(), tls=None) -> GrpcServer:
    """Start the MilvusService server on ``host:port`` (0: a free port); its ``port`` is the bound one."""
    server = GrpcServer("milvus gRPC")
    await server.start(host, port, [(milvus_pb2_grpc.add_MilvusServiceServicer_to_server,
                                     MilvusServicer(coord, proxy), SERVICE.full_name)],
                       interceptors, tls)
    return server
