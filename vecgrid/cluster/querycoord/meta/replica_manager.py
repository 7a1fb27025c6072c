"""Replicas, as Milvus's ``meta.ReplicaManager``.

A replica is a set of query nodes of one resource group that together serve every
channel and segment of a collection once.  The replicas of one collection have
disjoint node sets; replicas of different collections share nodes.  Nodes are
read-write (``nodes``: get new channels and segments) or read-only (``ro_nodes``: left
the replica's resource group, went down or were suspended; drained by the balance
checker and dropped from the replica once they hold nothing of the collection).

Channel-exclusive mode (Milvus ``meta/replica.go``, with ``queryCoord.balancer`` =
``ChannelLevelScoreBalancer``): a replica spawned under that balancer records one
``channel_node_infos`` entry per DML channel of its collection.  While it has at least
``channelExclusiveNodeFactor`` × channels read-write nodes, those nodes are split among the
channels (``split_channel_nodes``) and every change of its nodes re-splits them with as few
moves as possible; below the threshold, or under another balancer, the entries stay but hold
no nodes.  The checkers place a channel's delegator and segments on ``channel_rw_nodes``.

Persisted as ``query.Replica`` under ``querycoord-replica/<collection>/<replica>``.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterable, Mapping, Sequence

from vecgrid import errors
from vecgrid.proto import query_coord_pb2
from vecgrid.storage.kv import MetaStore

_PREFIX = "querycoord-replica/"

# Milvus ``queryCoord.channelExclusiveNodeFactor``: read-write nodes per channel a replica
# needs before its channels get nodes of their own.
CHANNEL_EXCLUSIVE_NODE_FACTOR = 4


def _key(replica: query_coord_pb2.Replica) -> str:
    return f"{_PREFIX}{replica.collectionID}/{replica.ID}"


def _copy(replica: query_coord_pb2.Replica) -> query_coord_pb2.Replica:
    out = query_coord_pb2.Replica()
    out.CopyFrom(replica)
    return out


def _set_nodes(replica: query_coord_pb2.Replica, rw: Iterable[int], ro: Iterable[int]) -> None:
    del replica.nodes[:]
    replica.nodes.extend(sorted(set(rw)))
    del replica.ro_nodes[:]
    replica.ro_nodes.extend(sorted(set(ro) - set(rw)))


def channel_nodes(replica: query_coord_pb2.Replica) -> dict[str, list[int]]:
    """The replica's channel-exclusive split: channel → its read-write nodes (lists may be empty)."""
    return {name: list(info.rw_nodes) for name, info in sorted(replica.channel_node_infos.items())}


def channel_rw_nodes(replica: query_coord_pb2.Replica, channel: str) -> list[int]:
    """Where the channel's delegator and segments may go: its own nodes in channel-exclusive mode,
    else every read-write node of the replica (Milvus ``GetChannelRWNodes`` with the checkers'
    fallback)."""
    info = replica.channel_node_infos.get(channel)
    return list(info.rw_nodes) if info is not None and info.rw_nodes else list(replica.nodes)


def split_channel_nodes(current: Mapping[str, Sequence[int]], rw_nodes: Iterable[int], *,
                        enabled: bool, factor: int) -> dict[str, list[int]]:
    """The channel split for a replica with ``rw_nodes``, starting from ``current`` with as few moves
    as possible (Milvus ``mutableReplica.tryBalanceNodeForChannel``).

    Not ``enabled``, or fewer than ``factor`` × channels read-write nodes: every channel gets
    none.  Otherwise nodes that left are dropped; each channel is due ``rw // channels`` nodes,
    and the ``rw % channels`` left over go one each to the channels holding most nodes now (ties
    by name); a channel above its due keeps its first nodes, and one below takes free nodes in
    ascending id order."""
    rw = sorted(set(rw_nodes))
    names = sorted(current)
    if not names:
        return {}
    if not enabled or len(rw) < len(names) * factor:
        return {name: [] for name in names}
    alive, taken = set(rw), set()
    kept: dict[str, list[int]] = {}
    for name in names:   # drop nodes that left, and a node listed under two channels from the second
        kept[name] = [n for n in dict.fromkeys(current[name]) if n in alive and n not in taken]
        taken.update(kept[name])
    base, extra = divmod(len(rw), len(names))
    by_size = sorted(names, key=lambda name: (-len(kept[name]), name))
    due = {name: base + (i < extra) for i, name in enumerate(by_size)}
    for name in names:
        kept[name] = kept[name][:due[name]]
    placed = {n for nodes in kept.values() for n in nodes}
    free = [n for n in rw if n not in placed]
    for name in names:
        need = due[name] - len(kept[name])
        kept[name] += free[:need]
        free = free[need:]
    return kept


class ReplicaManager:
    """The replicas; ``channel_exclusive`` (set when ``queryCoord.balancer`` is the ChannelLevelScore
    balancer, whose class says so) and ``channel_exclusive_node_factor``
    (``queryCoord.channelExclusiveNodeFactor``) rule channel-exclusive mode."""

    def __init__(self, store: MetaStore, *, channel_exclusive: bool = False,
                 channel_exclusive_node_factor: int = CHANNEL_EXCLUSIVE_NODE_FACTOR) -> None:
        self.channel_exclusive = channel_exclusive
        self.channel_exclusive_node_factor = channel_exclusive_node_factor
        self._store = store
        self._lock = threading.RLock()
        self._replicas: dict[int, query_coord_pb2.Replica] = {}
        for _, raw in store.scan(_PREFIX):
            replica = query_coord_pb2.Replica.FromString(raw)
            self._replicas[replica.ID] = replica

    # --- reads ----------------------------------------------------------------------------

    def get(self, replica_id: int) -> query_coord_pb2.Replica | None:
        return self._replicas.get(replica_id)

    def of_collection(self, cid: int) -> list[query_coord_pb2.Replica]:
        return sorted((r for r in self._replicas.values() if r.collectionID == cid), key=lambda r: r.ID)

    def in_group(self, rg: str, cid: int | None = None) -> list[query_coord_pb2.Replica]:
        return [r for r in sorted(self._replicas.values(), key=lambda r: r.ID)
                if r.resource_group == rg and (cid is None or r.collectionID == cid)]

    def by_node(self, cid: int, node_id: int) -> query_coord_pb2.Replica | None:
        """The replica of the collection that has the node (read-write or read-only)."""
        return next((r for r in self.of_collection(cid) if node_id in r.nodes or node_id in r.ro_nodes), None)

    # --- writes ---------------------------------------------------------------------------

    def _save(self, *replicas: query_coord_pb2.Replica, drop: Iterable[query_coord_pb2.Replica] = ()) -> None:
        with self._store.txn() as txn:
            for r in replicas:
                txn.put(_key(r), r.SerializeToString())
            for r in drop:
                txn.delete(_key(r))
        for r in replicas:
            self._replicas[r.ID] = r
        for r in drop:
            self._replicas.pop(r.ID, None)

    def _place(self, replica: query_coord_pb2.Replica, rw: Iterable[int], ro: Iterable[int]) -> None:
        """Set the replica's nodes and re-split them among its channels."""
        _set_nodes(replica, rw, ro)
        split = split_channel_nodes(channel_nodes(replica), replica.nodes, enabled=self.channel_exclusive,
                                    factor=self.channel_exclusive_node_factor)
        for name, nodes in split.items():
            del replica.channel_node_infos[name].rw_nodes[:]
            replica.channel_node_infos[name].rw_nodes.extend(nodes)

    def spawn(self, cid: int, groups: dict[str, int], new_id: Callable[[], int],
              rg_nodes: Callable[[str], list[int]], channels: Iterable[str] = ()) -> list[query_coord_pb2.Replica]:
        """Create ``groups[rg]`` replicas in each group and give them nodes; under the
        ChannelLevelScore balancer each gets an entry per DML channel in ``channels``.

        Refused with 304 when a group has fewer nodes than the replicas placed there."""
        with self._lock:
            for rg, count in groups.items():
                if len(rg_nodes(rg)) < count:
                    raise errors.ResourceGroupNodeNotEnough(
                        f"resource group {rg} has {len(rg_nodes(rg))} nodes, {count} replicas requested", rg=rg)
            created = [query_coord_pb2.Replica(ID=new_id(), collectionID=cid, resource_group=rg)
                       for rg, count in sorted(groups.items()) for _ in range(count)]
            if self.channel_exclusive:
                for replica in created:
                    for name in channels:
                        replica.channel_node_infos.get_or_create(name)
            self._save(*created)
            self.recover(cid, rg_nodes)
            return self.of_collection(cid)

    def remove(self, replicas: Iterable[query_coord_pb2.Replica]) -> None:
        with self._lock:
            self._save(drop=list(replicas))

    def remove_collection(self, cid: int) -> None:
        self.remove(self.of_collection(cid))

    def move(self, replica: query_coord_pb2.Replica, rg: str) -> None:
        """TransferReplica: the replica now lives in ``rg``; its old nodes turn read-only."""
        with self._lock:
            moved = _copy(replica)
            moved.resource_group = rg
            self._place(moved, [], [*replica.nodes, *replica.ro_nodes])
            self._save(moved)

    def recover(self, cid: int, rg_nodes: Callable[[str], list[int]]) -> bool:
        """Give each replica of ``cid`` its share of its group's nodes; returns whether anything changed.

        Nodes no longer in the group become read-only (they still serve until drained); spare
        nodes of the group go to the replica with fewest read-write nodes; a replica left with
        none takes one from the largest.  Each replica's channel split follows its nodes."""
        with self._lock:
            changed: list[query_coord_pb2.Replica] = []
            by_group: dict[str, list[query_coord_pb2.Replica]] = {}
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
                    updated = _copy(r)
                    self._place(updated, rw[r.ID], ro[r.ID])
                    if updated != r:
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
            self._place(updated, replica.nodes, [n for n in replica.ro_nodes if n != node_id])
            self._save(updated)
