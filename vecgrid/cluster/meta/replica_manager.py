"""Replicas, as Milvus's ``meta.ReplicaManager``.

A replica is a set of query nodes of one resource group that together serve every
channel and segment of a collection once.  The replicas of one collection have
disjoint node sets; replicas of different collections share nodes.  Nodes are
read-write (``nodes``: get new channels and segments) or read-only (``ro_nodes``: left
the replica's resource group, went down or were suspended; drained by the balance
checker and dropped from the replica once they hold nothing of the collection).

Persisted as ``query.Replica`` under ``querycoord-replica/<collection>/<replica>``.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterable

from vecgrid import errors
from vecgrid.rpc.proto import query_coord_pb2 as Q
from vecgrid.storage.kv import MetaStore

_PREFIX = "querycoord-replica/"


def _key(replica: Q.Replica) -> str:
    return f"{_PREFIX}{replica.collectionID}/{replica.ID}"


def _copy(replica: Q.Replica) -> Q.Replica:
    out = Q.Replica()
    out.CopyFrom(replica)
    return out


def _set_nodes(replica: Q.Replica, rw: Iterable[int], ro: Iterable[int]) -> None:
    del replica.nodes[:]
    replica.nodes.extend(sorted(set(rw)))
    del replica.ro_nodes[:]
    replica.ro_nodes.extend(sorted(set(ro) - set(rw)))


class ReplicaManager:
    def __init__(self, store: MetaStore) -> None:
        self._store = store
        self._lock = threading.RLock()
        self._replicas: dict[int, Q.Replica] = {}
        for _, raw in store.scan(_PREFIX):
            replica = Q.Replica.FromString(raw)
            self._replicas[replica.ID] = replica

    # --- reads ----------------------------------------------------------------------------

    def get(self, replica_id: int) -> Q.Replica | None:
        return self._replicas.get(replica_id)

    def of_collection(self, cid: int) -> list[Q.Replica]:
        return sorted((r for r in self._replicas.values() if r.collectionID == cid), key=lambda r: r.ID)

    def in_group(self, rg: str, cid: int | None = None) -> list[Q.Replica]:
        return [r for r in sorted(self._replicas.values(), key=lambda r: r.ID)
                if r.resource_group == rg and (cid is None or r.collectionID == cid)]

    def by_node(self, cid: int, node_id: int) -> Q.Replica | None:
        """The replica of the collection that has the node (read-write or read-only)."""
        return next((r for r in self.of_collection(cid) if node_id in r.nodes or node_id in r.ro_nodes), None)

    # --- writes ---------------------------------------------------------------------------

    def _save(self, *replicas: Q.Replica, drop: Iterable[Q.Replica] = ()) -> None:
        with self._store.txn() as txn:
            for r in replicas:
                txn.put(_key(r), r.SerializeToString())
            for r in drop:
                txn.delete(_key(r))
        for r in replicas:
            self._replicas[r.ID] = r
        for r in drop:
            self._replicas.pop(r.ID, None)

    def spawn(self, cid: int, groups: dict[str, int], new_id: Callable[[], int],
              rg_nodes: Callable[[str], list[int]]) -> list[Q.Replica]:
        """Create ``groups[rg]`` replicas in each group and give them nodes.

        Refused with 304 when a group has fewer nodes than the replicas placed there."""
        with self._lock:
            for rg, count in groups.items():
                if len(rg_nodes(rg)) < count:
                    raise errors.ResourceGroupNodeNotEnough(
                        f"resource group {rg} has {len(rg_nodes(rg))} nodes, {count} replicas requested", rg=rg)
            created = [Q.Replica(ID=new_id(), collectionID=cid, resource_group=rg)
                       for rg, count in sorted(groups.items()) for _ in range(count)]
            self._save(*created)
            self.recover(cid, rg_nodes)
            return self.of_collection(cid)

    def remove(self, replicas: Iterable[Q.Replica]) -> None:
        with self._lock:
            self._save(drop=list(replicas))

    def remove_collection(self, cid: int) -> None:
        self.remove(self.of_collection(cid))

    def move(self, replica: Q.Replica, rg: str) -> None:
        """TransferReplica: the replica now lives in ``rg``; its old nodes turn read-only."""
        with self._lock:
            moved = _copy(replica)
            moved.resource_group = rg
            _set_nodes(moved, [], [*replica.nodes, *replica.ro_nodes])
            self._save(moved)

    def recover(self, cid: int, rg_nodes: Callable[[str], list[int]]) -> bool:
        """Give each replica of ``cid`` its share of its group's nodes; returns whether anything changed.

        Nodes no longer in the group become read-only (they still serve until drained); spare
        nodes of the group go to the replica with fewest read-write nodes; a replica left with
        none takes one from the largest."""
        with self._lock:
            changed: list[Q.Replica] = []
            by_group: dict[str, list[Q.Replica]] = {}
            for r in self.of_collection(cid):
                by_group.setdefault(r.resource_group, []).append(r)
            for rg, replicas in by_group.items():
                available = set(rg_nodes(rg))
                rw = {r.ID: [n for n in r.nodes if n in available] for r in replicas}
                ro = {r.ID: [*r.ro_nodes, *(n for n in r.nodes if n not in available)] for r in replicas}
                taken = {n for nodes in rw.values() for n in nodes}
                for node in sorted(available - taken):
                    smallest = min(replicas, key=lambda r: (len(rw[r.ID]), r.ID))
                    rw[smallest.ID].append(node)
                for r in replicas:
                    if not rw[r.ID]:
                        donor = max(replicas, key=lambda d: (len(rw[d.ID]), -d.ID))
                        if len(rw[donor.ID]) > 1:
                            rw[r.ID].append(rw[donor.ID].pop())
                for r in replicas:
                    ro[r.ID] = [n for n in ro[r.ID] if n not in rw[r.ID]]
                    if sorted(rw[r.ID]) != list(r.nodes) or sorted(set(ro[r.ID])) != list(r.ro_nodes):
                        updated = _copy(r)
                        _set_nodes(updated, rw[r.ID], ro[r.ID])
                        changed.append(updated)
            if changed:
                self._save(*changed)
            return bool(changed)

    def drop_ro_node(self, replica_id: int, node_id: int) -> None:
        """A read-only node that holds nothing more of the collection leaves the replica."""
        with self._lock:
            replica = self._replicas.get(replica_id)
            if replica is None or node_id not in replica.ro_nodes:
                return
            updated = _copy(replica)
            _set_nodes(updated, replica.nodes, [n for n in replica.ro_nodes if n != node_id])
            self._save(updated)
