"""Checker 4, ``index_checker``: loaded segments serve the collection's live index, from a file.

* **Reload**: a segment whose reported index (``SegmentVersionInfo.index_info``) names another
  index id than the catalog's live index of that field — the index was dropped and created
  again — is reloaded with ``LoadSegments`` load_scope Index on the node holding it.
* **Switch**: a segment served with an interim FLAT index (reported ``enable_index=False``, no
  file: DataCoord's index builder had not built it when it was loaded) whose live index now has a
  build in the catalog is reloaded the same way, LOW priority, on every node serving it; the
  reload reads the built file and swaps the segment in with the deletes it received meanwhile,
  so searches stay exact until the swap and use the index after.  Milvus's index checker does
  the same for a segment missing an index that DataCoord reports built (``ActionTypeUpdate``).
* **Save**: a segment served with the live index *built at load* (the node reports it with no
  ``index_file_paths``: bulk-imported segments carry an index definition, no file) while the
  catalog has no build of that index for it gets ONE low-priority :class:`IndexSaveTask` — not
  one per replica — on a node serving it; the node writes the file and the coordinator records
  it, so every later load (restart, release + load, balance, node loss, another replica) reads
  the file instead of building (Milvus: IndexNode builds, DataCoord records a SegmentIndex).
  Only for fully loaded collections, so saving never competes with a load in progress, and at
  most one save per node at a time.  A failed save is simply proposed again next round.
"""

from __future__ import annotations

from vecgrid.cluster.querycoord.checkers.base import Checker
from vecgrid.cluster.querycoord.meta.target_manager import Scope
from vecgrid.cluster.querycoord.task.task import IndexSaveTask, Priority, SegmentTask, Task
from vecgrid.proto import query_coord_pb2

NAME = "index_checker"


def built_at_load(seg: query_coord_pb2.SegmentVersionInfo, field_id: int, index_id: int) -> bool:
    """The node serves ``index_id`` on the field from an index it built, not from a file."""
    return field_id in seg.index_info and seg.index_info[field_id].indexID == index_id \
        and seg.index_info[field_id].enable_index and not seg.index_info[field_id].index_file_paths


def served_interim(seg: query_coord_pb2.SegmentVersionInfo, field_id: int, index_id: int) -> bool:
    """The node serves the field exactly (interim FLAT) while ``index_id`` is not built."""
    return field_id in seg.index_info and seg.index_info[field_id].indexID == index_id \
        and not seg.index_info[field_id].enable_index and not seg.index_info[field_id].index_file_paths


class IndexChecker(Checker):
    id = 4
    name = NAME

    def collection_tasks(self, cid: int) -> list[Task]:
        live = {i.fieldID: i.indexID for i in self.ctx.catalog.describe_index(cid)}
        return self._reload_tasks(cid, live) + self._switch_tasks(cid, live) + self._save_tasks(cid, live)

    def _reload_tasks(self, cid: int, live: dict[int, int]) -> list[Task]:
        ctx = self.ctx
        tasks: list[Task] = []
        wanted = ctx.targets.segments(cid, Scope.CURRENT_OR_NEXT)
        for node_id, seg in ctx.dist.segments(cid):
            replica = ctx.replicas.by_node(cid, node_id)
            if replica is None or seg.ID not in wanted:
                continue
            stale = [fid for fid, index_id in live.items()
                     if fid in seg.index_info and seg.index_info[fid].indexID not in (0, index_id)]
            if stale:
                tasks.append(SegmentTask(cid, replica.ID, wanted[seg.ID], target=node_id, origin=NAME,
                                         priority=Priority.LOW, load_scope=query_coord_pb2.Index))
        return tasks

    def _switch_tasks(self, cid: int, live: dict[int, int]) -> list[Task]:
        ctx = self.ctx
        interim = [(node_id, seg) for node_id, seg in ctx.dist.segments(cid)
                   if any(served_interim(seg, fid, index_id) for fid, index_id in live.items())]
        if not interim:
            return []
        built = {(b.segmentID, b.indexID) for b in ctx.catalog.list_segment_indexes(cid)}
        wanted = ctx.targets.segments(cid, Scope.CURRENT_OR_NEXT)
        tasks: list[Task] = []
        for node_id, seg in interim:
            replica = ctx.replicas.by_node(cid, node_id)
            if replica is None or seg.ID not in wanted:
                continue
            if any(served_interim(seg, fid, index_id) and (seg.ID, index_id) in built
                   for fid, index_id in live.items()):
                tasks.append(SegmentTask(cid, replica.ID, wanted[seg.ID], target=node_id, origin=NAME,
                                         priority=Priority.LOW, load_scope=query_coord_pb2.Index))
        return tasks

    def _save_tasks(self, cid: int, live: dict[int, int]) -> list[Task]:
        ctx = self.ctx
        if not live or not ctx.collections.is_loaded(cid) or ctx.collections.is_loading(cid):
            return []
        saving = [t for t in ctx.scheduler.tasks() if isinstance(t, IndexSaveTask)]
        busy = {t.node for t in saving}
        planned = {t.segment_id for t in saving}
        saved = {(b.segmentID, b.indexID) for b in ctx.catalog.list_segment_indexes(cid)}
        wanted = ctx.targets.segments(cid, Scope.CURRENT)
        tasks: list[Task] = []
        for node_id, seg in ctx.dist.segments(cid):
            if seg.ID in planned or seg.ID not in wanted or node_id in busy or not ctx.online(node_id):
                continue
            fields = {fid: index_id for fid, index_id in live.items()
                      if (seg.ID, index_id) not in saved and built_at_load(seg, fid, index_id)}
            if fields:
                tasks.append(IndexSaveTask(cid, seg.ID, node_id, fields, origin=NAME))
                busy.add(node_id)
                planned.add(seg.ID)
        return tasks
