"""The cluster plane of ``rest-api.md``: QueryCoord's operator RPCs as Feathers services.

``nodes``, ``resource-groups``, ``replicas``, ``segments``, ``channels``, ``balance``, ``checkers`` and
``configurations``.  Each method decodes its params and data, makes the one QueryCoord call the gRPC
servicer makes for the same RPC (:mod:`vecgrid.rpc.querycoord_servicer`), and encodes the answer as
JSON records with camelCase keys.  Bad input is a Feathers 400 raised before the coordinator is
called, so nothing changes; Milvus errors pass through to the app-wide hook.

The services hold no state of their own: every answer is read from the coordinator at call time, on
the coordinator's event loop (the loop that owns its state); catalog reads go through a thread.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from google.protobuf import json_format

from vecgrid import errors
from vecgrid.cluster.querycoord.coordinator import QueryCoord
from vecgrid.cluster.querycoord.reports import IN_GPU, IN_MEMORY, MB, NODE_NORMAL, NODE_SUSPENDED, NodeReport
from vecgrid.common import feathers_errors as fe
from vecgrid.http.feathers.application import Application
from vecgrid.http.milvus_errors import not_found
from vecgrid.http.feathers.query import QuerySchema, matches, select_fields, sort_records, split_query
from vecgrid.http.services import RestContext
from vecgrid.http.services.doc_schemas import NAME, POSITIVE, answer, obj
from vecgrid.proto import common_pb2, query_coord_pb2, rg_pb2

MAX_SAFE_INTEGER = 2 ** 53 - 1
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_INTEGER = re.compile(r"[+-]?\d+")
PARTIAL_IN_GPU = query_coord_pb2.PartitionState.Name(query_coord_pb2.PartialInGPU)


# --- encoding and decoding ------------------------------------------------------------------------

def int64(value: int) -> int | str:
    """An int64 as JSON: a number while JavaScript holds it exactly, else its decimal string."""
    return value if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else str(value)


def _int(value: Any) -> int | None:
    """An int64 given as a number or a decimal string; ``None`` for anything else (booleans, fractions,
    values out of int64's range)."""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        number = int(value)
    return number if number is not None and INT64_MIN <= number <= INT64_MAX else None


def _id(value: Any, what: str) -> int:
    """A path id as an int (ids in paths are strings)."""
    number = _int(value)
    if number is None:
        raise fe.BadRequest(f"{what} id must be an integer, got {value!r}")
    return number


class _Data:
    """A request body checked against the fields a method takes: unknown fields, missing required ones
    and wrong types are collected, then refused together (400, ``errors`` keyed by field)."""

    def __init__(self, data: Any, fields: dict[str, str], required: tuple[str, ...] = ()) -> None:
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise fe.BadRequest("data must be a JSON object")
        self.values: dict[str, Any] = {}
        problems: dict[str, str] = {}
        for name in data:
            if name not in fields:
                problems[name] = "unknown field"
        for name in required:
            if data.get(name) is None:
                problems[name] = "is required"
        for name, kind in fields.items():
            if data.get(name) is None or name in problems:
                continue
            value, problem = _convert(data[name], kind)
            if problem:
                problems[name] = problem
            else:
                self.values[name] = value
        if problems:
            raise fe.BadRequest("invalid data", errors=problems)

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)


def _convert(value: Any, kind: str) -> tuple[Any, str | None]:
    if kind == "integer":
        number = _int(value)
        return (number, None) if number is not None else (None, "must be an integer")
    if kind == "integers":
        numbers = [_int(v) for v in value] if isinstance(value, list) else [None]
        return (numbers, None) if None not in numbers else (None, "must be a list of integers")
    if kind == "boolean":
        return (value, None) if isinstance(value, bool) else (None, "must be a boolean")
    if kind == "string":
        return (value, None) if isinstance(value, str) and value else (None, "must be a non-empty string")
    if kind == "object":
        return (value, None) if isinstance(value, dict) else (None, "must be an object")
    if kind == "collection":  # a name or an id
        if isinstance(value, str) and value and _INTEGER.fullmatch(value) is None:
            return value, None
        number = _int(value)
        return (number, None) if number is not None else (None, "must be a collection name or id")
    raise ValueError(kind)


def _no_data(data: Any) -> None:
    if data not in (None, {}):
        raise fe.BadRequest("this method takes no data")


def _apply_query(records: list[dict], query: dict, schema: QuerySchema, id_field: str) -> list[dict]:
    """The common query syntax over records built in memory: conditions, ``$sort``, ``$skip``,
    ``$limit`` and ``$select`` with the service's field types (unknown fields are a 400)."""
    filters, conditions = split_query(query, schema)
    found = sort_records([r for r in records if matches(r, conditions)], filters.sort)[filters.skip:]
    if filters.limit is not None:
        found = found[:filters.limit]
    return [select_fields(r, filters.select, id_field) for r in found]


def _pop_text(query: dict, name: str) -> str | None:
    value = query.pop(name, None)
    if value is not None and not isinstance(value, str):
        raise fe.BadRequest(f"query parameter {name} must be a single value", data={name: value})
    return value


def _query_int(query: dict, name: str) -> int | None:
    text = _pop_text(query, name)
    if text is None:
        return None
    number = _int(text)
    if number is None:
        raise fe.BadRequest("validation failed", data=[{"instancePath": f"/{name}", "keyword": "type",
                                                        "params": {"type": "integer"}, "message": "must be integer"}])
    return number


class _Service:
    def __init__(self, ctx: RestContext) -> None:
        self.ctx = ctx

    @property
    def coord(self) -> QueryCoord:
        return self.ctx.coord

    async def collection(self, value: str | int, db: str | None = None):
        """The catalog's collection named (or numbered) ``value``; CollectionNotFound (404) otherwise."""
        catalog = self.coord.catalog
        if isinstance(value, str) and _INTEGER.fullmatch(value.strip()) is None:
            return await asyncio.to_thread(catalog.describe_collection, db or "", value)
        return await asyncio.to_thread(catalog.get_collection, int(value))

    async def collections(self, query: dict) -> list:
        """The collection ``?collection=`` (``&db=``) names, else every loaded one."""
        name, db = _pop_text(query, "collection"), _pop_text(query, "db")
        if name is not None:
            return [await self.collection(name, db)]
        ids = [r.collection_id for r in self.coord.show_collections([])]
        catalog = self.coord.catalog
        return await asyncio.to_thread(lambda: [catalog.get_collection(cid) for cid in ids])


# --- nodes ----------------------------------------------------------------------------------------

def _node_record(report: NodeReport, detail: bool = False) -> dict[str, Any]:
    gpus = [d for d in report.devices if d.get("kind") == "GPU"]
    hardware = report.hardware
    record: dict[str, Any] = {
        "id": report.info.node_id,
        "name": report.info.name,
        "address": report.info.address,
        "hostname": report.info.hostname,
        "state": report.state,
        "device": "GPU" if gpus or report.info.gpu_memory_mb > 0 else "CPU",
        "resourceGroup": report.resource_group,
        "labels": dict(report.info.labels),
        "segmentCount": len(report.segments),
        "channelCount": len(report.channels),
        "memoryUsedBytes": hardware.get("memory_usage"),
        "memoryCapacityBytes": report.memory_capacity_bytes,
        "gpuMemoryUsedBytes": sum(d["used_bytes"] for d in gpus) if gpus else 0,
        "gpuMemoryCapacityBytes": sum(d["budget_bytes"] for d in gpus) if gpus else int(report.info.gpu_memory_mb * MB),
        "devices": [{"name": d["device"], "kind": d["kind"], "budgetBytes": d["budget_bytes"],
                     "usedBytes": d["used_bytes"], "freeBytes": d["free_bytes"], "totalBytes": d["total_bytes"],
                     "segmentCount": d["segments"]} for d in report.devices],
        "metricsError": report.metrics_error,
    }
    if detail:
        record["channels"] = list(report.channels)
        record["segments"] = [int64(s) for s in report.segments]
    return record


NODE_QUERY = QuerySchema({"id": "integer", "name": "string", "address": "string", "hostname": "string",
                          "state": "string", "device": "string", "resourceGroup": "string",
                          "segmentCount": "integer", "channelCount": "integer"})


class NodesService(_Service):
    """``nodes``: ListQueryNode with each node's device, memory and load; GetQueryNodeDistribution;
    SuspendNode / ResumeNode as ``patch {state}``."""

    RIGHTS = {"find": "read", "get": "read", "patch": "admin"}
    OPENAPI = {"tag": "Query nodes (ListQueryNode, distribution, Suspend/ResumeNode)", "multi": False, "docs": {
        "find": {"summary": "List the query nodes: device, memory, segments, channels, state"},
        "get": {"summary": "A query node with its distribution"},
        "patch": {"summary": "Suspend or resume a node", "data": obj({"state": {"enum": [NODE_SUSPENDED, NODE_NORMAL]}},
                                                                    ("state",)),
                  "example": {"state": NODE_SUSPENDED}},
    }}

    async def find(self, params: dict) -> list[dict]:
        query = dict(params.get("query") or {})
        split_query(query, NODE_QUERY)  # bad queries fail before the nodes are asked
        records = [_node_record(r) for r in await self.coord.node_reports()]
        return _apply_query(records, query, NODE_QUERY, "id")

    async def get(self, id: Any, params: dict) -> dict:  # noqa: A002 - Feathers' name
        (report,) = await self.coord.node_reports(_id(id, "node"))
        return _node_record(report, detail=True)

    async def patch(self, id: Any, data: Any, params: dict) -> dict:  # noqa: A002
        if id is None:
            raise fe.MethodNotAllowed("Can not patch multiple nodes")
        node_id = _id(id, "node")
        state = _Data(data, {"state": "string"}, required=("state",)).get("state")
        if state == NODE_SUSPENDED:
            self.coord.suspend_node(node_id)
        elif state == NODE_NORMAL:
            self.coord.resume_node(node_id)
        else:
            raise fe.BadRequest("invalid data", errors={"state": f'must be "{NODE_SUSPENDED}" or "{NODE_NORMAL}"'})
        return await self.get(node_id, params)


# --- resource groups ------------------------------------------------------------------------------

def _config_record(config: rg_pb2.ResourceGroupConfig) -> dict[str, Any]:
    return {
        "requests": {"nodeNum": config.requests.node_num},
        "limits": {"nodeNum": config.limits.node_num},
        "transferFrom": [t.resource_group for t in config.transfer_from],
        "transferTo": [t.resource_group for t in config.transfer_to],
        "nodeFilter": {"nodeLabels": {kv.key: kv.value for kv in config.node_filter.node_labels}},
    }


CONFIG_PARTS = ("requests", "limits", "transferFrom", "transferTo", "nodeFilter")


def _config(data: dict, base: rg_pb2.ResourceGroupConfig | None = None) -> rg_pb2.ResourceGroupConfig:
    """A config from its record form (the parts given replace those of ``base``); 400 on a misfit."""
    config = rg_pb2.ResourceGroupConfig()
    if base is not None:
        config.CopyFrom(base)
    problems = {}
    for part, value in data.items():
        if part not in CONFIG_PARTS:
            problems[f"config.{part}"] = "unknown field"
            continue
        try:
            if part in ("requests", "limits"):
                limit = getattr(config, part)
                limit.Clear()
                json_format.ParseDict(value, limit)
            elif part in ("transferFrom", "transferTo"):
                if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                    raise json_format.ParseError("must be a list of resource group names")
                field = config.transfer_from if part == "transferFrom" else config.transfer_to
                del field[:]
                field.extend(rg_pb2.ResourceGroupTransfer(resource_group=v) for v in value)
            else:
                labels = value.get("nodeLabels", {}) if isinstance(value, dict) else None
                if not isinstance(labels, dict) or set(value) - {"nodeLabels"} or \
                        not all(isinstance(v, str) for v in labels.values()):
                    raise json_format.ParseError('must be {"nodeLabels": {"key": "value", ...}}')
                config.node_filter.Clear()
                config.node_filter.node_labels.extend(common_pb2.KeyValuePair(key=k, value=v)
                                                      for k, v in sorted(labels.items()))
        except (json_format.ParseError, TypeError, AttributeError) as e:
            problems[f"config.{part}"] = str(e)
    if problems:
        raise fe.BadRequest("invalid data", errors=problems)
    return config


def _group_record(info: query_coord_pb2.ResourceGroupInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "numAvailableNode": info.num_available_node,
        "nodes": [{"id": n.node_id, "address": n.address, "hostname": n.hostname} for n in info.nodes],
        "numLoadedReplica": {str(k): v for k, v in info.num_loaded_replica.items()},
        "numOutgoingNode": {str(k): v for k, v in info.num_outgoing_node.items()},
        "numIncomingNode": {str(k): v for k, v in info.num_incoming_node.items()},
        "config": _config_record(info.config),
    }


GROUP_QUERY = QuerySchema({"name": "string", "numAvailableNode": "integer"})


class ResourceGroupsService(_Service):
    """``resource-groups`` by name: List/Describe/Create/Update/DropResourceGroup(s), TransferNode and
    TransferReplica.  ``config`` is Milvus's ResourceGroupConfig with camelCase keys and node labels as
    an object; ``patch {config}`` replaces the parts it names."""

    _CONFIG = obj({"requests": obj({"nodeNum": {"type": "integer", "minimum": 0}}),
                   "limits": obj({"nodeNum": {"type": "integer", "minimum": 0}}),
                   "transferFrom": {"type": "array", "items": NAME}, "transferTo": {"type": "array", "items": NAME},
                   "nodeFilter": obj({"nodeLabels": {"type": "object", "additionalProperties": {"type": "string"}}})})
    _TRANSFER = {"source": NAME, "target": NAME}
    OPENAPI = {"tag": "Resource groups; custom transferNode and transferReplica", "multi": False, "docs": {
        "create": {"summary": "Create a resource group", "errors": [409],
                   "data": obj({"name": NAME, "config": _CONFIG}, ("name",)),
                   "example": {"name": "rg1", "config": {"requests": {"nodeNum": 0}, "limits": {"nodeNum": 1}}}},
        "patch": {"summary": "Change a group's config (the parts named replace the current ones)",
                  "data": obj({"config": _CONFIG}, ("config",))},
        "transferNode": {"summary": "Move numNode query nodes from one group to another", "errors": [404],
                         "data": obj({**_TRANSFER, "numNode": POSITIVE}, ("source", "target", "numNode")),
                         "example": {"source": "__default_resource_group", "target": "rg1", "numNode": 1}},
        "transferReplica": {"summary": "Move numReplica replicas of a collection from one group to another",
                            "errors": [404],
                            "data": obj({**_TRANSFER, "collection": {"type": ["string", "integer"],
                                                                     "description": "a name or an id"},
                                         "db": NAME, "numReplica": POSITIVE},
                                        ("source", "target", "collection", "numReplica")),
                            "example": {"source": "__default_resource_group", "target": "rg1",
                                        "collection": "demo", "numReplica": 1}},
    }}
    RIGHTS = {"find": "read", "get": "read", "create": "admin", "patch": "admin", "remove": "admin",
              "transferNode": "admin", "transferReplica": "admin"}

    def _describe(self, name: Any) -> dict[str, Any]:
        if not isinstance(name, str) or not name:
            raise fe.BadRequest("a resource group is named by a non-empty string")
        return _group_record(self.coord.describe_resource_group(name))

    async def find(self, params: dict) -> list[dict]:
        query = dict(params.get("query") or {})
        split_query(query, GROUP_QUERY)
        records = [self._describe(name) for name in self.coord.list_resource_groups()]
        return _apply_query(records, query, GROUP_QUERY, "name")

    async def get(self, id: Any, params: dict) -> dict:  # noqa: A002
        return self._describe(id)

    async def create(self, data: Any, params: dict) -> dict:
        body = _Data(data, {"name": "string", "config": "object"}, required=("name",))
        name = body.get("name")
        config = _config(body.get("config", {})) if body.get("config") else None
        if name in self.coord.list_resource_groups():
            raise fe.Conflict(f"resource group {name!r} already exists",
                              data={"milvusCode": errors.ResourceGroupAlreadyExist.code, "retriable": False})
        self.coord.create_resource_group(name, config)
        return self._describe(name)

    async def patch(self, id: Any, data: Any, params: dict) -> dict:  # noqa: A002
        if id is None:
            raise fe.MethodNotAllowed("Can not patch multiple resource groups")
        body = _Data(data, {"config": "object"}, required=("config",))
        current = self.coord.describe_resource_group(id).config
        self.coord.update_resource_groups({id: _config(body.get("config"), current)})
        return self._describe(id)

    async def remove(self, id: Any, params: dict) -> dict:  # noqa: A002
        if id is None:
            raise fe.MethodNotAllowed("Can not remove multiple resource groups")
        record = self._describe(id)  # 404 for a group that is not there (Milvus's drop would succeed)
        self.coord.drop_resource_group(id)
        return record

    async def transferNode(self, data: Any, params: dict) -> dict:  # noqa: N802 - the REST method's name
        body = _Data(data, {"source": "string", "target": "string", "numNode": "integer"},
                     required=("source", "target", "numNode"))
        source, target = body.get("source"), body.get("target")
        self.coord.transfer_node(source, target, body.get("numNode"))
        return {"source": self._describe(source), "target": self._describe(target)}

    async def transferReplica(self, data: Any, params: dict) -> dict:  # noqa: N802
        body = _Data(data, {"source": "string", "target": "string", "collection": "collection", "db": "string",
                            "numReplica": "integer"}, required=("source", "target", "collection", "numReplica"))
        collection = await self.collection(body.get("collection"), body.get("db"))
        source, target = body.get("source"), body.get("target")
        await self.coord.transfer_replica(source, target, collection.id, body.get("numReplica"))
        return {"source": self._describe(source), "target": self._describe(target)}


# --- replicas -------------------------------------------------------------------------------------

REPLICA_QUERY = QuerySchema({"resourceGroup": "string"})


class ReplicasService(_Service):
    """``replicas``: GetReplicas (with shard nodes) of ``?collection=``, or of every loaded collection."""

    RIGHTS = {"find": "read"}

    async def find(self, params: dict) -> list[dict]:
        query = dict(params.get("query") or {})
        collections = await self.collections(query)
        split_query(query, REPLICA_QUERY)
        records = []
        for coll in collections:
            for r in self.coord.replica_infos(coll.id, True):
                records.append({
                    "id": int64(r.replicaID), "collection": coll.name, "collectionId": int64(coll.id),
                    "resourceGroup": r.resource_group_name, "nodes": list(r.node_ids),
                    "partitions": [int64(p) for p in r.partition_ids],
                    "outboundNodes": dict(r.num_outbound_node),
                    "shards": [{"channel": s.dm_channel_name, "leader": s.leaderID, "leaderAddress": s.leader_addr,
                                "nodes": list(s.node_ids)} for s in r.shard_replicas],
                })
        return _apply_query(records, query, REPLICA_QUERY, "id")


# --- segments -------------------------------------------------------------------------------------

def _segment_state(placements: dict[int, str]) -> str:
    on_gpu = sum(p == IN_GPU for p in placements.values())
    return IN_GPU if placements and on_gpu == len(placements) else PARTIAL_IN_GPU if on_gpu else IN_MEMORY


def _segment_record(info: query_coord_pb2.SegmentInfo, coll, placements: dict[int, str]) -> dict[str, Any]:
    partitions = {p.partitionID: p.partitionName for p in coll.partitions}
    return {
        "id": int64(info.segmentID),
        "collection": coll.name, "collectionId": int64(coll.id),
        "partition": partitions.get(info.partitionID), "partitionId": int64(info.partitionID),
        "channel": info.dmChannel,
        "numRows": info.num_rows,
        "level": common_pb2.SegmentLevel.Name(info.level),
        "segmentState": common_pb2.SegmentState.Name(info.segment_state),
        "nodes": list(info.node_ids),
        "replicas": [int64(r) for r in info.replica_ids],
        "state": _segment_state(placements),
        "placements": [{"node": n, "state": placements[n]} for n in sorted(placements)],
        "indexes": [{"fieldId": int64(i.fieldID), "indexName": i.index_name, "indexId": int64(i.indexID)}
                    for i in info.index_infos],
    }


SEGMENT_QUERY = QuerySchema({"channel": "string", "state": "string", "level": "string", "numRows": "integer"})


def _transfer_fields(item: str, kind: str) -> dict[str, str]:
    return {"source": "integer", "target": "integer", item: kind, "all": "boolean", "copy": "boolean",
            "toAllNodes": "boolean"}


_INTEGER_DOC = {"type": ["integer", "string"], "pattern": r"^-?[0-9]{1,18}$",
                "description": "an integer (or its decimal string)"}


def _transfer_docs(item: str, kind: dict[str, Any]) -> dict[str, Any]:
    """The schema properties of a transfer body (:func:`_transfer_fields`): ``item`` or ``all``,
    ``target`` unless ``toAllNodes``."""
    return {"source": _INTEGER_DOC, "target": _INTEGER_DOC, item: kind, "all": {"type": "boolean"},
            "copy": {"type": "boolean"}, "toAllNodes": {"type": "boolean"}}


def _transfer_target(body: _Data, item: str) -> tuple[int, bool, bool]:
    """(target, transfer_all, to_all_nodes) of a transfer body; 400 when it does not say what or where."""
    problems = {}
    every = body.get("all", False)
    if every == (body.get(item) is not None):
        problems[item] = f'give either "{item}" or "all": true'
    to_all = body.get("toAllNodes", False)
    if not to_all and body.get("target") is None:
        problems["target"] = 'is required unless "toAllNodes" is true'
    if problems:
        raise fe.BadRequest("invalid data", errors=problems)
    return body.get("target", 0), every, to_all


class SegmentsService(_Service):
    """``segments``: GetSegmentInfo with each copy's placement (InGPU / InMemory), filtered by
    ``?collection=&partition=&node=&state=``; TransferSegment as the custom ``transfer``."""

    RIGHTS = {"find": "read", "get": "read", "transfer": "admin"}
    OPENAPI = {"tag": "Segments (GetSegmentInfo); custom transfer (TransferSegment)", "docs": {
        "transfer": {"summary": "Move (or copy) a segment, or all, from a node to another (or to all)",
                     "errors": [404], "data": obj(_transfer_docs("segment", {"type": ["integer", "string"]}),
                                                  ("source",)),
                     "example": {"source": 1, "target": 2, "all": True}},
    }}

    async def find(self, params: dict) -> list[dict]:
        query = dict(params.get("query") or {})
        collections = await self.collections(query)
        node_id = _query_int(query, "node")
        partition = _pop_text(query, "partition")
        split_query(query, SEGMENT_QUERY)
        records = []
        for coll in collections:
            placements = self.coord.segment_placements(coll.id)
            for info in self.coord.segment_infos(coll.id, []):
                record = _segment_record(info, coll, placements.get(info.segmentID, {}))
                if node_id is not None and node_id not in info.node_ids:
                    continue
                if partition is not None and partition not in (record["partition"], str(info.partitionID)):
                    continue
                records.append(record)
        return _apply_query(records, query, SEGMENT_QUERY, "id")

    async def get(self, id: Any, params: dict) -> dict:  # noqa: A002
        segment_id = _id(id, "segment")
        try:
            (found,) = self.coord.segment_infos(0, [segment_id])
            coll = await self.collection(found.collectionID)
            (info,) = self.coord.segment_infos(coll.id, [segment_id])
        except errors.SegmentNotLoaded as e:  # the resource is the loaded segment: not there is a 404
            raise not_found(e) from None
        return _segment_record(info, coll, self.coord.segment_placements(coll.id).get(segment_id, {}))

    async def transfer(self, data: Any, params: dict) -> dict:
        body = _Data(data, _transfer_fields("segment", "integer"), required=("source",))
        target, every, to_all = _transfer_target(body, "segment")
        scheduled = self.coord.transfer_segment(query_coord_pb2.TransferSegmentRequest(
            source_nodeID=body.get("source"), target_nodeID=target, segmentID=body.get("segment", 0),
            transfer_all=every, to_all_nodes=to_all, copy_mode=body.get("copy", False)))
        return {"source": body.get("source"), "target": None if to_all else target, "scheduled": scheduled}


# --- channels -------------------------------------------------------------------------------------

CHANNEL_QUERY = QuerySchema({"name": "string"})


class ChannelsService(_Service):
    """``channels``: GetShardLeaders of ``?collection=`` (or of every loaded collection);
    TransferChannel as the custom ``transfer``."""

    RIGHTS = {"find": "read", "transfer": "admin"}
    OPENAPI = {"tag": "DML channels and their shard leaders; custom transfer (TransferChannel)", "docs": {
        "transfer": {"summary": "Move (or copy) a channel, or all, from a node to another (or to all)",
                     "errors": [404], "data": obj(_transfer_docs("channel", NAME), ("source",)),
                     "example": {"source": 1, "target": 2, "all": True}},
    }}

    async def find(self, params: dict) -> list[dict]:
        query = dict(params.get("query") or {})
        collections = await self.collections(query)
        split_query(query, CHANNEL_QUERY)
        records = []
        for coll in collections:
            for shard in self.coord.shard_leaders(coll.id):
                records.append({"name": shard.channel_name, "collection": coll.name, "collectionId": int64(coll.id),
                                "leaders": [{"node": n, "address": a}
                                            for n, a in zip(shard.node_ids, shard.node_addrs)]})
        return _apply_query(records, query, CHANNEL_QUERY, "name")

    async def transfer(self, data: Any, params: dict) -> dict:
        body = _Data(data, _transfer_fields("channel", "string"), required=("source",))
        target, every, to_all = _transfer_target(body, "channel")
        try:
            scheduled = self.coord.transfer_channel(query_coord_pb2.TransferChannelRequest(
                source_nodeID=body.get("source"), target_nodeID=target, channel_name=body.get("channel", ""),
                transfer_all=every, to_all_nodes=to_all, copy_mode=body.get("copy", False)))
        except errors.ChannelNotFound as e:   # the named channel is not on the source node: a 404 here
            raise not_found(e) from None
        return {"source": body.get("source"), "target": None if to_all else target, "scheduled": scheduled}


# --- balance --------------------------------------------------------------------------------------

BALANCE_STATUS = "status"


class BalanceService(_Service):
    """``balance``: ``get('status')`` = CheckBalanceStatus; ``create`` = LoadBalance (answers when the
    moves are done); custom ``suspend`` / ``resume`` (Suspend/ResumeBalance) and ``check``
    (CheckQueryNodeDistribution: whether ``target`` holds everything ``source`` serves)."""

    RIGHTS = {"get": "read", "create": "admin", "suspend": "admin", "resume": "admin", "check": "read"}
    _STATUS = answer({"id": {"const": BALANCE_STATUS}, "active": {"type": "boolean"}}, ("id", "active"))
    _NO_DATA = {"type": "object", "maxProperties": 0, "description": "no data (or none at all)"}
    OPENAPI = {"tag": "Balance: status, LoadBalance, Suspend/ResumeBalance, CheckQueryNodeDistribution",
               "multi": False, "docs": {
        "get": {"summary": "The balance status (id `status`)", "result": _STATUS},
        "create": {"summary": "LoadBalance: move a collection's segments off a node (answers when done)",
                   "data": obj({"collection": {"type": ["string", "integer"]}, "db": NAME, "source": _INTEGER_DOC,
                                "targets": {"type": "array", "items": _INTEGER_DOC},
                                "segments": {"type": "array", "items": _INTEGER_DOC}}, ("collection", "source")),
                   "example": {"collection": "demo", "source": 1}},
        "suspend": {"summary": "Suspend automatic balancing", "data": _NO_DATA, "example": {}, "result": _STATUS},
        "resume": {"summary": "Resume automatic balancing", "data": _NO_DATA, "example": {}, "result": _STATUS},
        "check": {"summary": "Whether target holds everything source serves",
                  "data": obj({"source": _INTEGER_DOC, "target": _INTEGER_DOC}, ("source", "target")),
                  "example": {"source": 1, "target": 2},
                  "result": answer({"source": {"type": "integer"}, "target": {"type": "integer"},
                                    "consistent": {"type": "boolean"}, "reason": {"type": ["string", "null"]}},
                                   ("source", "target", "consistent"))},
    }}

    def _status(self) -> dict[str, Any]:
        return {"id": BALANCE_STATUS, "active": self.coord.balance_active()}

    async def get(self, id: Any, params: dict) -> dict:  # noqa: A002
        if id != BALANCE_STATUS:
            raise fe.NotFound(f"No record found for id '{id}' (the balance service has only '{BALANCE_STATUS}')")
        return self._status()

    async def create(self, data: Any, params: dict) -> dict:
        body = _Data(data, {"collection": "collection", "db": "string", "source": "integer", "targets": "integers",
                            "segments": "integers"}, required=("collection", "source"))
        coll = await self.collection(body.get("collection"), body.get("db"))
        targets, segments = body.get("targets", []), body.get("segments", [])
        await self.coord.load_balance(query_coord_pb2.LoadBalanceRequest(
            collectionID=coll.id, source_nodeIDs=[body.get("source")], dst_nodeIDs=targets,
            sealed_segmentIDs=segments))
        return {"collection": coll.name, "collectionId": int64(coll.id), "source": body.get("source"),
                "targets": targets, "segments": [int64(s) for s in segments]}

    async def suspend(self, data: Any, params: dict) -> dict:
        _no_data(data)
        self.coord.suspend_balance()
        return self._status()

    async def resume(self, data: Any, params: dict) -> dict:
        _no_data(data)
        self.coord.resume_balance()
        return self._status()

    async def check(self, data: Any, params: dict) -> dict:
        body = _Data(data, {"source": "integer", "target": "integer"}, required=("source", "target"))
        source, target = body.get("source"), body.get("target")
        try:
            self.coord.check_query_node_distribution(source, target)
        except (errors.ChannelLack, errors.SegmentLack) as e:  # the answer "no", not a failure
            return {"source": source, "target": target, "consistent": False, "reason": e.message}
        return {"source": source, "target": target, "consistent": True, "reason": None}


# --- checkers -------------------------------------------------------------------------------------

CHECKER_QUERY = QuerySchema({"id": "integer", "name": "string", "activated": "boolean"})


def _checker_record(info: query_coord_pb2.CheckerInfo) -> dict[str, Any]:
    return {"id": info.id, "name": info.desc, "activated": info.activated}


class CheckersService(_Service):
    """``checkers``: ListCheckers; ``patch(id, {activated})`` = Activate/DeactivateChecker."""

    RIGHTS = {"find": "read", "patch": "admin"}
    OPENAPI = {"tag": "QueryCoord's checkers (ListCheckers, Activate/DeactivateChecker)", "multi": False, "docs": {
        "patch": {"summary": "Activate or deactivate a checker",
                  "data": obj({"activated": {"type": "boolean"}}, ("activated",)), "example": {"activated": True},
                  "result": answer({"id": {"type": "integer"}, "name": {"type": "string"},
                                    "activated": {"type": "boolean"}}, ("id", "name", "activated"))},
    }}

    async def find(self, params: dict) -> list[dict]:
        query = dict(params.get("query") or {})
        split_query(query, CHECKER_QUERY)
        records = [_checker_record(c) for c in self.coord.list_checkers([])]
        return _apply_query(records, query, CHECKER_QUERY, "id")

    async def patch(self, id: Any, data: Any, params: dict) -> dict:  # noqa: A002
        if id is None:
            raise fe.MethodNotAllowed("Can not patch multiple checkers")
        checker_id = _id(id, "checker")
        activated = _Data(data, {"activated": "boolean"}, required=("activated",)).get("activated")
        (info,) = self.coord.list_checkers([checker_id])
        if not info.found:
            raise fe.NotFound(f"No checker with id {checker_id}")
        self.coord.set_checker_active(checker_id, activated)
        (info,) = self.coord.list_checkers([checker_id])
        return _checker_record(info)


# --- configurations -------------------------------------------------------------------------------

CONFIG_QUERY = QuerySchema({"component": "string", "nodeId": "integer", "key": "string", "value": "string"})


class ConfigurationsService(_Service):
    """``configurations``: ShowConfigurations of the coordinator's process (querycoord, datacoord and
    its REST server's ``http`` section) and of every query node, ``?pattern=`` as Milvus's (a
    case-insensitive substring of the key); secret values are redacted by the settings themselves."""

    RIGHTS = {"find": "read"}

    async def find(self, params: dict) -> list[dict]:
        query = dict(params.get("query") or {})
        pattern = _pop_text(query, "pattern") or ""
        split_query(query, CONFIG_QUERY)
        coord_id = self.coord.lifecycle.node_id
        records = [{"component": "querycoord", "nodeId": coord_id, "key": k, "value": v}
                   for k, v in self.coord.configurations(pattern)]
        if self.ctx.datacoord is not None:
            records += [{"component": "datacoord", "nodeId": coord_id, "key": k, "value": v}
                        for k, v in self.ctx.datacoord.configurations(pattern)]
        if self.ctx.settings is not None:
            records += [{"component": "http", "nodeId": coord_id, "key": k, "value": v}
                        for k, v in self.ctx.settings.matching("http", pattern) if k.startswith("http.")]
        for node_id, items in await self.coord.node_configurations(pattern):
            records += [{"component": "querynode", "nodeId": node_id, "key": k, "value": v} for k, v in items]
        return _apply_query(records, query, CONFIG_QUERY, "key")


def mount(api: Application, ctx: RestContext) -> None:
    api.use("nodes", NodesService(ctx), {"methods": ["find", "get", "patch"]})
    api.use("resource-groups", ResourceGroupsService(ctx),
            {"methods": ["find", "get", "create", "patch", "remove", "transferNode", "transferReplica"]})
    api.use("replicas", ReplicasService(ctx), {"methods": ["find"]})
    api.use("segments", SegmentsService(ctx), {"methods": ["find", "get", "transfer"]})
    api.use("channels", ChannelsService(ctx), {"methods": ["find", "transfer"]})
    api.use("balance", BalanceService(ctx), {"methods": ["get", "create", "suspend", "resume", "check"]})
    api.use("checkers", CheckersService(ctx), {"methods": ["find", "patch"]})
    api.use("configurations", ConfigurationsService(ctx), {"methods": ["find"]})
