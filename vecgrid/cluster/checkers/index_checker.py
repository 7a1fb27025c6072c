"""Checker 4, ``index_checker``: loaded segments serve the collection's live index.

A segment whose reported index (``SegmentVersionInfo.index_info``) names another index
id than the catalog's live index of that field — the index was dropped and created
again — is reloaded with ``LoadSegments`` load_scope Index on the node holding it.
"""

from __future__ import annotations

from vecgrid.cluster.checkers.base import Checker
from vecgrid.cluster.meta.target_manager import Scope
from vecgrid.cluster.task.task import Priority, SegmentTask, Task
from vecgrid.rpc.proto import query_coord_pb2 as Q

NAME = "index_checker"


class IndexChecker(Checker):
    id = 4
    name = NAME

    def collection_tasks(self, cid: int) -> list[Task]:
        ctx = self.ctx
        tasks: list[Task] = []
        live = {i.fieldID: i.indexID for i in ctx.catalog.describe_index(cid)}
        wanted = ctx.targets.segments(cid, Scope.CURRENT_OR_NEXT)
        for node_id, seg in ctx.dist.segments(cid):
            replica = ctx.replicas.by_node(cid, node_id)
            if replica is None or seg.ID not in wanted:
                continue
            stale = [fid for fid, index_id in live.items()
                     if fid in seg.index_info and seg.index_info[fid].indexID not in (0, index_id)]
            if stale:
                tasks.append(SegmentTask(cid, replica.ID, wanted[seg.ID], target=node_id, origin=NAME,
                                         priority=Priority.LOW, load_scope=Q.Index))
        return tasks
