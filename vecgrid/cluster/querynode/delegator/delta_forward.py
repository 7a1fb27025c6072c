"""Delete forwarding of a shard leader (Milvus's delegator ``delta_forward``).

Deletes read from the channel are applied to the growing segments by the pipeline and forwarded
to the leader (:meth:`~vecgrid.cluster.querynode.delegator.delegator.ShardDelegator.forward_delete`;
the pipeline thread waits until every node whose sealed segments may hold the keys applied them, so
**tsafe never passes a delete that is not visible everywhere**), which hands them to its
:class:`DeltaForwarder`.  As Milvus's default ``FilterByBF`` policy, only the sealed segments whose pk
statistics (:mod:`~vecgrid.cluster.querynode.pk_stats`: a bloom filter + key range built when the
leader records the segment) may hold a key get it, with one ``DeleteBatch`` per node; segments known
only from SyncDistribution (no statistics) get every delete.  A peer answering UNIMPLEMENTED gets
per-segment ``Delete`` calls instead.  Deletes are also kept in a buffer (trimmed at each
UpdateVersion checkpoint) and replayed onto segments the delegator loads later.

A DeleteBatch is not done until its reply says every segment applied it: an error, a timeout,
``failed_ids`` and ``missing_ids`` are retried with backoff (:class:`DeleteRetry`), and the
view is read again before each attempt — a segment answered missing has moved (the delete
goes to its new node) or left the view (nothing to do: a later copy gets the buffer).  When the
budget runs out the forwarder tells the leader, which becomes **unserviceable** (as Milvus marks
such segments offline; see :mod:`~vecgrid.cluster.querynode.delegator.delegator`).

**L0 segments** (a flushed channel's deletes, loaded on the leader) are applied here too, as
Milvus 2.4's delegator does (``loadStreamDelete`` with ``GetLevel0Deletions``): the forwarder
keeps the deletes of every L0 segment in the view, sends them to each sealed segment the leader
adopts on another node, and sends a newly adopted L0 segment's deletes to the sealed segments
already in the view.  A node applies the L0 segments it holds itself to its own segments, so the
node holding an L0 segment is skipped.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from vecgrid import errors
from vecgrid.cluster.querynode.collections import Collection
from vecgrid.cluster.querynode.delegator.distribution import ShardDistribution
from vecgrid.cluster.querynode.loader import SegmentLoader
from vecgrid.cluster.querynode.pk_stats import PkStats
from vecgrid.cluster.querynode.segments import ALL_PARTITIONS
from vecgrid.cluster.querynode.worker import Workers
from vecgrid.proto import data_coord_pb2, query_coord_pb2, schema_pb2

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeleteRetry:
    """How long a leader keeps trying to apply a delete on the nodes of its view (the node builds it
    from ``querynode.delete_retry_deadline_s`` and ``querynode.delete_call_timeout_s``)."""

    deadline_s: float = 30.0        # after this the channel is marked unserviceable
    call_timeout_s: float = 10.0    # one DeleteBatch attempt
    first_backoff_s: float = 0.05
    max_backoff_s: float = 2.0


@dataclass(frozen=True)
class L0Deletes:
    """The deletes of an L0 segment of the view; ``node_id`` holds it and applies them itself."""

    node_id: int
    partition_id: int
    pks: np.ndarray
    timestamps: np.ndarray


class DeltaForwarder:
    """Brings the channel's deletes to the sealed segments of one leader's view: ``pk_stats`` (sealed
    segment → pk bloom filter, routes deletes), the replay buffer of channel deletes with its
    sequence numbers, and the deletes of the view's L0 segments.  It reads where segments are from
    the leader's :class:`~vecgrid.cluster.querynode.delegator.distribution.ShardDistribution` and
    calls ``on_lost`` when a delete the view needs could not be applied (the leader stops serving).

    Owner: the node's event loop, as the distribution's.  The pipeline thread never touches it: the
    delegator hands each channel delete to the loop (:meth:`channel_delete` runs there)."""

    def __init__(self, collection_id: int, channel: str, *, workers: Workers, loader: SegmentLoader,
                 distribution: ShardDistribution, on_lost: Callable[[Exception], None],
                 retry: DeleteRetry = DeleteRetry()) -> None:
        self.collection_id = collection_id
        self.channel = channel
        self.workers = workers
        self.loader = loader
        self.distribution = distribution
        self._on_lost = on_lost
        self.retry = retry
        self.pk_stats: dict[int, PkStats] = {}  # sealed segment -> pk bloom filter, routes deletes
        # (sequence number, pks, timestamps): replayed onto later loads
        self._deletes: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._delete_seq = itertools.count(1)
        self._l0: dict[int, L0Deletes] = {}   # L0 segments of the view: applied to every sealed segment

    # --- what the leader asks ----------------------------------------------------------------------

    async def channel_delete(self, pks: np.ndarray, timestamps: np.ndarray) -> None:
        """Keep a delete read from the channel for the segments loaded later, then apply it to the
        view's; one that cannot be applied makes the channel unserviceable (and fails the pipeline,
        which waits for this)."""
        self._deletes.append((next(self._delete_seq), pks, timestamps))
        try:
            await self._deliver(self._delete_request(pks, timestamps),
                                self._may_hold(self.distribution.sealed, pks),
                                self.distribution.node_of, f"deletes at ts {int(np.max(timestamps))}")
        except Exception as e:
            self._on_lost(e)
            raise

    async def admit(self, coll: Collection, node_id: int, infos: Sequence[query_coord_pb2.SegmentLoadInfo]) -> None:
        """Prepare sealed segments just loaded on ``node_id`` to join the view: their pk statistics,
        the L0 deletes among them sent to the view, then the deletes seen since and the view's L0
        deletes sent to them.  The leader adds them to the view right after, without an await."""
        await self._record_pk_stats(coll, infos)
        l0 = [i for i in infos if i.level == data_coord_pb2.L0]
        if l0:
            await self._add_l0(node_id, l0)
        await self._catch_up(node_id, infos)

    def forget(self, segment_id: int) -> None:
        """A segment left the view: its pk statistics and L0 deletes go."""
        self.pk_stats.pop(segment_id, None)
        self._l0.pop(segment_id, None)

    def trim(self, checkpoint: int) -> None:
        """Drop the buffered deletes at or before ``checkpoint`` (UpdateVersion: loads start after it)."""
        self._deletes = [(n, p, t) for n, p, t in self._deletes if len(t) and int(t.max()) > checkpoint]

    def clear(self) -> None:
        """Forget everything (a failed leader frees its buffers)."""
        self.pk_stats, self._l0, self._deletes = {}, {}, []

    def buffer_size(self) -> tuple[int, int]:
        """Keys and bytes (keys and timestamps) in the delete replay buffer (GetMetrics' quota metrics)."""
        deletes = list(self._deletes)
        return sum(len(t) for _, _, t in deletes), sum(p.nbytes + t.nbytes for _, p, t in deletes)

    # --- routing -----------------------------------------------------------------------------------

    async def _record_pk_stats(self, coll: Collection, infos: Sequence[query_coord_pb2.SegmentLoadInfo]) -> None:
        """Build the pk statistics that route deletes (L0 segments hold deletes, not rows)."""
        rows = [i for i in infos if i.level != data_coord_pb2.L0]

        def build():
            out = {}
            for info in rows:
                keys = self.loader.read_primary_keys(coll, info)
                if keys is not None:
                    out[info.segmentID] = PkStats(keys)
            return out
        self.pk_stats.update(await asyncio.to_thread(build))

    def _may_hold(self, segments: Iterable[int], pks: np.ndarray) -> set[int]:
        """Of ``segments``, those whose pk statistics may hold one of ``pks`` (all where none are known)."""
        return {sid for sid in segments if sid not in self.pk_stats or self.pk_stats[sid].might_contain(pks).any()}

    def _delete_request(self, pks: np.ndarray, timestamps: np.ndarray) -> query_coord_pb2.DeleteBatchRequest:
        """A DeleteBatch of ``pks`` without segments or target (filled per node)."""
        ids = schema_pb2.IDs()
        if pks.dtype.kind in "UOS":
            ids.str_id.data.extend([str(v) for v in pks.tolist()])
        else:
            ids.int_id.data.extend(np.asarray(pks, np.int64).tolist())
        ts = np.asarray(timestamps, np.uint64).tolist()
        if len(ts) == 1 and len(pks) > 1:
            ts = ts * len(pks)
        return query_coord_pb2.DeleteBatchRequest(
            collection_id=self.collection_id,
            partition_id=-1,
            vchannel_name=self.channel,
            primary_keys=ids,
            timestamps=ts,
            scope=query_coord_pb2.Historical,
        )

    # --- delivery ----------------------------------------------------------------------------------

    async def _deliver(self, template: query_coord_pb2.DeleteBatchRequest, segments: set[int],
                       locate: Callable[[int], int | None], what: str, *, missing_is_final: bool = False) -> None:
        """Apply ``template``'s deletes to ``segments``, each on the node ``locate`` names at the time
        (None: nothing to do for it any more), one DeleteBatch per node, until every segment applied
        them.  An error, a timeout, ``failed_ids`` and ``missing_ids`` are retried with backoff for
        :attr:`retry`'s budget, ``locate`` asked again each time (a segment answered missing
        has moved or left the view: the view says where it is now); then this raises.  With
        ``missing_is_final`` (segments about to join the view, on the node that just loaded them),
        a missing segment raises at once."""
        policy = self.retry
        loop = asyncio.get_running_loop()
        deadline = loop.time() + policy.deadline_s
        backoff = policy.first_backoff_s
        pending = set(segments)
        attempt = 0
        while True:
            groups: dict[int, list[int]] = {}
            for sid in sorted(pending):
                node_id = locate(sid)
                if node_id is None:
                    pending.discard(sid)
                else:
                    groups.setdefault(node_id, []).append(sid)
            if not groups:
                return
            attempt += 1
            outcomes = await asyncio.gather(*(self._delete_on(template, node_id, sids, policy.call_timeout_s)
                                              for node_id, sids in groups.items()))
            problems = []
            for node_id, (applied, missing, problem) in zip(groups, outcomes):
                pending -= applied
                if problem is not None:
                    problems.append(problem)
                if missing and missing_is_final:
                    raise errors.SegmentNotLoaded(f"{what}: node {node_id} does not hold segments {sorted(missing)}",
                                                  segment=min(missing))
            if not pending:
                return
            if loop.time() + backoff > deadline:
                raise errors.ServiceUnavailable(f"{what} not applied after {attempt} attempt(s) in "
                                                f"{policy.deadline_s:g} s: " + "; ".join(problems))
            log.warning("%s of channel %s, attempt %d: %s; retrying", what, self.channel, attempt, "; ".join(problems))
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, policy.max_backoff_s)

    async def _delete_on(self, template: query_coord_pb2.DeleteBatchRequest, node_id: int, segments: list[int],
                         timeout_s: float) -> tuple[set[int], set[int], str | None]:
        """One DeleteBatch attempt on ``node_id``: ``(applied, missing, what went wrong)``."""
        req = query_coord_pb2.DeleteBatchRequest()
        req.CopyFrom(template)
        req.segment_ids[:] = segments
        req.base.targetID = node_id
        try:
            async with asyncio.timeout(timeout_s):
                reply = await self.workers.get(node_id).delete_batch(req)
        except TimeoutError:
            return set(), set(), f"node {node_id} did not answer within {timeout_s:g} s (segments {segments})"
        except errors.MilvusError as e:
            return set(), set(), f"node {node_id} failed (segments {segments}): {e}"
        failed, missing = set(reply.failed_ids), set(reply.missing_ids)
        problems = ([f"failed on segments {sorted(failed)}"] if failed else []) + \
            ([f"does not hold segments {sorted(missing)}"] if missing else [])
        problem = f"node {node_id} " + " and ".join(problems) if problems else None
        return set(segments) - failed - missing, missing, problem

    # --- L0 deletes and catch-up -------------------------------------------------------------------

    async def _add_l0(self, node_id: int, infos: Sequence[query_coord_pb2.SegmentLoadInfo]) -> None:
        """Keep the deletes of L0 segments just loaded on ``node_id`` and send them to the sealed
        segments already in the view on other nodes.  Without this, the segments a Dask task loaded
        on a worker (not through this leader) never see the deletes of a flush (Milvus 2.4: the
        delegator applies its L0 deletions to every sealed segment of the channel)."""
        def read() -> list[tuple[query_coord_pb2.SegmentLoadInfo, tuple[np.ndarray, np.ndarray] | None]]:
            return [(i, self.loader.read_deltalogs(i, {}).arrays()) for i in infos]
        found = await asyncio.to_thread(read)
        for info, arrays in found:
            pks, ts = arrays if arrays is not None else (np.empty(0, np.int64), np.empty(0, np.uint64))
            entry = self._l0[info.segmentID] = L0Deletes(node_id, info.partitionID, pks, ts)
            targets = self._l0_targets(entry)   # taken right after the entry is kept: no await between
            if not targets or not len(pks):
                continue

            def locate(sid: int, holder: int = entry.node_id) -> int | None:
                where = self.distribution.node_of(sid)
                return None if where == holder else where   # a node applies the L0 segments it holds
            try:
                await self._deliver(self._delete_request(pks, ts), self._may_hold(targets, pks), locate,
                                    f"the deletes of L0 segment {info.segmentID}")
            except Exception as e:
                self._on_lost(e)   # segments of the view lack them
                raise

    def _l0_targets(self, entry: L0Deletes) -> set[int]:
        """The sealed segments of the view on other nodes than ``entry``'s that its deletes reach."""
        return {sid for sid in self.distribution.elsewhere(entry.node_id, entry.partition_id) if sid not in self._l0}

    async def _catch_up(self, node_id: int, infos: Sequence[query_coord_pb2.SegmentLoadInfo]) -> None:
        """Send segments about to join the view (just loaded on ``node_id``) the channel's buffered
        deletes and the view's L0 deletes, until none arrived meanwhile: a delete forwarded, or an L0
        segment adopted, during these awaits went to a view without them."""
        rows = [i for i in infos if i.level != data_coord_pb2.L0]
        joining = [i.segmentID for i in infos]

        def on_node(_: int) -> int:
            return node_id
        sent_seq, sent_l0 = 0, set()
        while True:
            deletes = [(n, p, t) for n, p, t in list(self._deletes) if n > sent_seq]
            l0 = [(sid, e) for sid, e in list(self._l0.items()) if sid not in sent_l0]
            if not deletes and not l0:
                return
            for n, pks, ts in deletes:
                sent_seq = max(sent_seq, n)
                await self._deliver(self._delete_request(pks, ts), self._may_hold(joining, pks), on_node,
                                    f"buffered deletes at ts {int(np.max(ts))}", missing_is_final=True)
            for sid, entry in l0:
                sent_l0.add(sid)
                if entry.node_id == node_id or not len(entry.pks):
                    continue  # a node applies the L0 segments it holds to its own segments itself
                sids = [i.segmentID for i in rows if entry.partition_id in (ALL_PARTITIONS, i.partitionID)]
                if sids:
                    await self._deliver(self._delete_request(entry.pks, entry.timestamps),
                                        self._may_hold(sids, entry.pks), on_node,
                                        f"the deletes of L0 segment {sid}", missing_is_final=True)
