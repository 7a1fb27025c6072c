"""Resource groups, as Milvus's ``meta.ResourceManager``.

A resource group (RG) is a named set of query nodes with a config: ``requests``
(nodes it wants) and ``limits`` (nodes it keeps), plus preferred ``transfer_from`` /
``transfer_to`` groups.  Every node belongs to exactly one RG.  ``__default_resource_group``
always exists (requests 0, limits 1,000,000) and takes whatever nobody else wants.

* A node that comes up is placed in the accepting RG missing most nodes, else the one
  with most room under its limit, else the default RG.
* :meth:`recover` (run by the resource observer every 10 s and after every change)
  moves nodes until requests and limits hold: an RG missing nodes takes one from, in
  priority order, an RG above its limit, an RG in its ``transfer_from`` above its
  requests, any other RG above its requests; an RG above its limit gives a node to an
  RG missing nodes, then its ``transfer_to``, then any RG with room, then the default.
* Groups are persisted (``query.ResourceGroup``) under ``querycoord-resource-group/``.

Validation and error codes follow behaviour sheet §2.  Node-label filters
(``node_filter``) are honoured: a filtered RG accepts only nodes carrying every listed
label; nodes publish no labels yet, so a filtered RG accepts none.
"""

from __future__ import annotations

import threading
from typing import Callable

from vecgrid import errors
from vecgrid.proto import common_pb2, query_coord_pb2, rg_pb2
from vecgrid.storage.kv import MetaStore

DEFAULT_RG = "__default_resource_group"
DEFAULT_RG_CAPACITY = 1_000_000
MAX_RESOURCE_GROUPS = 1024
_PREFIX = "querycoord-resource-group/"


def _limit(n: int) -> rg_pb2.ResourceGroupLimit:
    return rg_pb2.ResourceGroupLimit(node_num=n)


def default_config() -> rg_pb2.ResourceGroupConfig:
    return rg_pb2.ResourceGroupConfig(requests=_limit(0), limits=_limit(DEFAULT_RG_CAPACITY))


class ResourceManager:
    """RG configs and node membership; every method validates first and writes nothing on error."""

    def __init__(self, store: MetaStore, node_labels: Callable[[int], dict[str, str]] | None = None) -> None:
        self._store = store
        self._labels = node_labels or (lambda node_id: {})
        self._lock = threading.RLock()
        self._groups: dict[str, query_coord_pb2.ResourceGroup] = {}
        for _, raw in store.scan(_PREFIX):
            group = query_coord_pb2.ResourceGroup.FromString(raw)
            self._groups[group.name] = group
        if DEFAULT_RG not in self._groups:
            self._save(query_coord_pb2.ResourceGroup(name=DEFAULT_RG, capacity=DEFAULT_RG_CAPACITY,
                                                     config=default_config()))
        # Replica counts per RG, supplied by the replica manager once loads exist.
        self.replicas_in: Callable[[str], int] = lambda name: 0

    # --- persistence -------------------------------------------------------------------------

    def _save(self, *groups: query_coord_pb2.ResourceGroup, drop: str | None = None) -> None:
        with self._store.txn() as txn:
            for group in groups:
                txn.put(_PREFIX + group.name, group.SerializeToString())
            if drop is not None:
                txn.delete(_PREFIX + drop)
        for group in groups:
            self._groups[group.name] = group
        if drop is not None:
            self._groups.pop(drop, None)

    # --- validation --------------------------------------------------------------------------

    def _check_config(self, name: str, config: rg_pb2.ResourceGroupConfig, known: set[str]) -> None:
        if not config.HasField("requests") or not config.HasField("limits"):
            raise errors.ResourceGroupIllegalConfig("requests and limits are both required", rg=name)
        if config.requests.node_num < 0 or config.limits.node_num < 0:
            raise errors.ResourceGroupIllegalConfig("node numbers must not be negative", rg=name)
        if config.limits.node_num < config.requests.node_num:
            raise errors.ResourceGroupIllegalConfig("limits.node_num must be >= requests.node_num", rg=name)
        for kind in ("transfer_from", "transfer_to"):
            for entry in getattr(config, kind):
                if entry.resource_group == name:
                    raise errors.ResourceGroupIllegalConfig(f"{kind} must not name the group itself", rg=name)
                if entry.resource_group not in known:
                    raise errors.ResourceGroupIllegalConfig(
                        f"{kind} names unknown resource group {entry.resource_group!r}", rg=name)

    def _get(self, name: str) -> query_coord_pb2.ResourceGroup:
        group = self._groups.get(name)
        if group is None:
            raise errors.ResourceGroupNotFound(rg=name)
        return group

    # --- operations ----------------------------------------------------------------------------

    def create(self, name: str, config: rg_pb2.ResourceGroupConfig | None) -> None:
        with self._lock:
            if not name:
                raise errors.ParameterMissing("resource group name couldn't be empty")
            if config is None or config.ByteSize() == 0:
                config = rg_pb2.ResourceGroupConfig(requests=_limit(0), limits=_limit(0))
            existing = self._groups.get(name)
            if existing is not None:
                if existing.config == config:
                    return  # idempotent
                raise errors.ResourceGroupAlreadyExist(rg=name)
            if len(self._groups) >= MAX_RESOURCE_GROUPS:
                raise errors.ResourceGroupReachLimit(limit=MAX_RESOURCE_GROUPS)
            self._check_config(name, config, set(self._groups) | {name})
            self._save(query_coord_pb2.ResourceGroup(name=name, capacity=config.requests.node_num, config=config))
            self.recover()

    def update(self, configs: dict[str, rg_pb2.ResourceGroupConfig]) -> None:
        with self._lock:
            for name in configs:
                self._get(name)
            for name, config in configs.items():
                self._check_config(name, config, set(self._groups))
            updated = []
            for name, config in configs.items():
                group = query_coord_pb2.ResourceGroup()
                group.CopyFrom(self._groups[name])
                group.config.CopyFrom(config)
                group.capacity = DEFAULT_RG_CAPACITY if name == DEFAULT_RG else config.requests.node_num
                updated.append(group)
            self._save(*updated)
            self.recover()

    def drop(self, name: str) -> None:
        with self._lock:
            group = self._groups.get(name)
            if group is None:
                return  # dropping a missing RG succeeds
            if name == DEFAULT_RG:
                raise errors.ParameterInvalid("cannot drop the default resource group", rg=name)
            if group.config.limits.node_num != 0:
                raise errors.ParameterInvalid("set limits.node_num to 0 before dropping the resource group", rg=name)
            for other in self._groups.values():
                refs = [t.resource_group for t in (*other.config.transfer_from, *other.config.transfer_to)]
                if other.name != name and name in refs:
                    raise errors.ParameterInvalid(
                        f"resource group is referenced by the transfer config of {other.name!r}", rg=name)
            if self.replicas_in(name):
                raise errors.ParameterInvalid(
                    f"some replicas still loaded in resource group[{name}], release it first", rg=name)
            default = query_coord_pb2.ResourceGroup()
            default.CopyFrom(self._groups[DEFAULT_RG])
            default.nodes.extend(group.nodes)  # remaining nodes move out first
            self._save(default, drop=name)
            self.recover()

    def transfer_node(self, source: str, target: str, num: int) -> None:
        """Milvus's deprecated TransferNode: a config change, after which recovery moves the nodes."""
        with self._lock:
            if source == target:
                raise errors.ParameterInvalid("source and target resource groups are the same", rg=source)
            if num <= 0:
                raise errors.ParameterInvalid(f"num_node must be positive, got {num}")
            src, dst = self._get(source), self._get(target)
            if len(src.nodes) < num:
                raise errors.ResourceGroupNodeNotEnough(
                    f"resource group {source} has {len(src.nodes)} nodes, {num} requested", rg=source)
            src_cfg, dst_cfg = rg_pb2.ResourceGroupConfig(), rg_pb2.ResourceGroupConfig()
            src_cfg.CopyFrom(src.config)
            dst_cfg.CopyFrom(dst.config)
            src_cfg.requests.node_num = max(0, src_cfg.requests.node_num - num)
            if source != DEFAULT_RG:
                src_cfg.limits.node_num = max(0, src_cfg.limits.node_num - num)
            dst_cfg.requests.node_num += num
            dst_cfg.limits.node_num = max(dst_cfg.limits.node_num, dst_cfg.requests.node_num)
            self.update({source: src_cfg, target: dst_cfg})

    # --- nodes -------------------------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(self._groups)

    def group(self, name: str) -> query_coord_pb2.ResourceGroup:
        return self._get(name)

    def group_of(self, node_id: int) -> str | None:
        return next((g.name for g in self._groups.values() if node_id in g.nodes), None)

    def accepts(self, group: query_coord_pb2.ResourceGroup, node_id: int) -> bool:
        wanted = group.config.node_filter.node_labels
        if group.name == DEFAULT_RG or not wanted:
            return True
        labels = self._labels(node_id)
        return all(labels.get(kv.key) == kv.value for kv in wanted)

    def _with_nodes(self, group: query_coord_pb2.ResourceGroup, nodes: list[int]) -> query_coord_pb2.ResourceGroup:
        out = query_coord_pb2.ResourceGroup()
        out.CopyFrom(group)
        del out.nodes[:]
        out.nodes.extend(sorted(nodes))
        return out

    def _move(self, node_id: int, source: str | None, target: str) -> None:
        changed = []
        if source is not None:
            src = self._groups[source]
            changed.append(self._with_nodes(src, [n for n in src.nodes if n != node_id]))
        dst = self._groups[target]
        changed.append(self._with_nodes(dst, [*dst.nodes, node_id]))
        self._save(*changed)

    def assign_node(self, node_id: int) -> str:
        """Place a node that came up (or was resumed); returns its RG."""
        with self._lock:
            current = self.group_of(node_id)
            if current is not None:
                return current
            candidates = [g for g in self._groups.values() if g.name != DEFAULT_RG and self.accepts(g, node_id)]
            missing = [(g.config.requests.node_num - len(g.nodes), g.name) for g in candidates
                       if g.config.requests.node_num > len(g.nodes)]
            room = [(g.config.limits.node_num - len(g.nodes), g.name) for g in candidates
                    if g.config.limits.node_num > len(g.nodes)]
            target = max(missing)[1] if missing else max(room)[1] if room else DEFAULT_RG
            self._move(node_id, None, target)
            return target

    def unassign_node(self, node_id: int) -> None:
        """A node that went down (or was suspended) leaves its RG."""
        with self._lock:
            current = self.group_of(node_id)
            if current is not None:
                group = self._groups[current]
                self._save(self._with_nodes(group, [n for n in group.nodes if n != node_id]))

    def recover(self) -> int:
        """Move nodes until every RG's requests and limits hold (as far as nodes allow); returns moves."""
        moves = 0
        with self._lock:
            for _ in range(10_000):
                move = self._next_move()
                if move is None:
                    break
                self._move(*move)
                moves += 1
        return moves

    def _surplus(self, g: query_coord_pb2.ResourceGroup) -> int:
        return len(g.nodes) - g.config.limits.node_num

    def _spare(self, g: query_coord_pb2.ResourceGroup) -> int:
        return len(g.nodes) - g.config.requests.node_num

    def _next_move(self) -> tuple[int, str, str] | None:
        groups = sorted(self._groups.values(), key=lambda g: g.name)
        for needy in groups:
            if self._spare(needy) >= 0:
                continue
            preferred = {t.resource_group for t in needy.config.transfer_from}

            def priority(donor: query_coord_pb2.ResourceGroup) -> int:
                if self._surplus(donor) > 0:
                    return 1_000_000 * self._surplus(donor)
                if donor.name in preferred:
                    return 100_000 * self._spare(donor)
                return self._spare(donor)

            donors = [d for d in groups if d.name != needy.name and self._spare(d) > 0
                      and any(self.accepts(needy, n) for n in d.nodes)]
            if donors:
                donor = max(donors, key=priority)
                node = next(n for n in sorted(donor.nodes) if self.accepts(needy, n))
                return node, donor.name, needy.name
        for full in groups:
            if self._surplus(full) <= 0:
                continue
            preferred = [t.resource_group for t in full.config.transfer_to]
            takers = ([g for g in groups if self._spare(g) < 0]
                      + [self._groups[n] for n in preferred if n in self._groups
                         and self._groups[n].config.limits.node_num > len(self._groups[n].nodes)]
                      + [g for g in groups if g.name != DEFAULT_RG and g.config.limits.node_num > len(g.nodes)]
                      + [self._groups[DEFAULT_RG]])
            for taker in takers:
                if taker.name == full.name:
                    continue
                node = next((n for n in sorted(full.nodes) if self.accepts(taker, n)), None)
                if node is not None:
                    return node, full.name, taker.name
        return None

    # --- reports -----------------------------------------------------------------------------

    def describe(self, name: str, online: Callable[[int], common_pb2.NodeInfo | None]) -> query_coord_pb2.ResourceGroupInfo:
        with self._lock:
            group = self._get(name)
            nodes = [info for info in (online(n) for n in group.nodes) if info is not None]
            return query_coord_pb2.ResourceGroupInfo(
                name=group.name,
                capacity=DEFAULT_RG_CAPACITY if name == DEFAULT_RG else group.config.requests.node_num,
                num_available_node=len(nodes),
                config=group.config,
                nodes=nodes,
            )
