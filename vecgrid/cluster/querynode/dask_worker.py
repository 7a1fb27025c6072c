"""The Dask worker a query node runs in: a ``distributed.Worker`` whose QueryNode outlives its scheduler.

A stock worker closes when its connection to the scheduler breaks (distributed removed worker
reconnection), and its query node — with every segment it holds — would go with it, although no
search needs the scheduler: searches reach the node over gRPC.  :class:`QueryNodeWorker` keeps a
worker that runs a query node alive instead: it forgets its Dask tasks (the scheduler that comes
back knows none of them, exactly as for a worker it has never seen), waits until the scheduler
answers, and registers with it again, under the same address, with the same node.  A scheduler
that tells the worker to close, a worker without a node, and a worker that is closing anyway close
as Dask's own do.  ``death_timeout`` (Dask's "seconds to wait for a scheduler before closing")
bounds the wait when it is set.

The registering coordinator's plugin is idempotent at the scheduler, but a restarted scheduler
knows no plugin and sends it to every worker again; :meth:`QueryNodeWorker.plugin_add` keeps the
node that runs (Dask would tear it down and set up an empty one).

All of it runs on the worker's event loop, which owns the worker's state.
"""

from __future__ import annotations

import asyncio
import logging
from time import monotonic, time

from distributed import Nanny, Worker
from distributed.batched import BatchedSend
from distributed.comm import connect
from distributed.core import Status
from distributed.worker_state_machine import FreeKeysEvent

from vecgrid.cluster.querynode.session import PLUGIN_NAME, TOPIC, describe_querynode, local_node

log = logging.getLogger(__name__)

#: How often a worker that lost its scheduler tries to reach it.
REJOIN_POLL_S = 1.0


class QueryNodeWorker(Worker):
    """The worker :class:`QueryNodeNanny` runs (``vecgrid worker`` and the embedded cluster)."""

    async def handle_scheduler(self, comm) -> None:
        try:
            await self.handle_stream(comm)
        finally:
            if self._serves_without_scheduler():
                self._ongoing_background_tasks.call_soon(self._rejoin)
            else:
                await self.close(reason="worker-handle-scheduler-connection-broken")

    async def heartbeat(self) -> None:
        """Dask's beat, but none once this worker is closing.  Its teardown (the query node's gRPC grace
        period) runs with the periodic callbacks still on, and the scheduler may be closing beside it:
        Dask logs a failed beat as an ERROR with a traceback, which is no failure of a worker going away
        (the scheduler hears of the close on the worker's stream)."""
        if self.status in (Status.running, Status.paused, Status.closing_gracefully):
            await super().heartbeat()

    def _serves_without_scheduler(self) -> bool:
        return self.status in (Status.running, Status.paused) and local_node(self) is not None

    async def _rejoin(self) -> None:
        scheduler = self.scheduler.address
        log.warning("lost the scheduler %s: the query node keeps serving; rejoining once it answers", scheduler)
        try:
            self.periodic_callbacks["heartbeat"].stop()    # nothing to beat to; register starts them again
            self.periodic_callbacks["keep-alive"].stop()
            self.handle_stimulus(FreeKeysEvent(keys=list(self.state.tasks), stimulus_id=f"scheduler-lost-{time()}"))
            if not await self._scheduler_answers_again(scheduler):
                await self.close(reason="worker-scheduler-gone")
                return
            self.batched_stream = BatchedSend(interval="2ms", loop=self.loop)  # the old one is closed
            # The metrics since the last heartbeat name the lost scheduler's spans, which the new one has
            # never seen; registering collects them into the spans extension, as if nothing had run since.
            self.digests_total_since_heartbeat.clear()
            spans = self.extensions.get("spans")
            if spans is not None:
                spans.heartbeat()  # hands over (here: drops) what it collected
            await self._register_with_scheduler()
        except Exception:
            if self.status in (Status.closing, Status.closed, Status.closing_gracefully):
                return
            log.exception("could not rejoin the scheduler %s: closing", scheduler)
            await self.close(reason="worker-rejoin-failed")
            return
        log.warning("rejoined the scheduler %s", scheduler)
        info = describe_querynode(self)
        if info is not None:  # the coordinator learns at once that the node is there (its reconcile would too)
            self.log_event(TOPIC, {"action": "up", **info})

    async def _scheduler_answers_again(self, scheduler: str) -> bool:
        """Wait until the scheduler accepts a connection and the forgotten tasks are gone (a task that
        was running finishes first); False once ``death_timeout`` passed or the worker is closing."""
        deadline = None if self.death_timeout is None else monotonic() + self.death_timeout
        next_report = monotonic() + 10
        while True:
            if self.status not in (Status.running, Status.paused):
                return False
            if deadline is not None and monotonic() > deadline:
                log.error("the scheduler %s did not come back within %.0f s: closing", scheduler, self.death_timeout)
                return False
            if self.state.tasks and monotonic() > next_report:
                states = sorted({ts.state for ts in self.state.tasks.values()})
                log.warning("rejoining waits for %d Dask task(s) to end (%s)", len(self.state.tasks), ", ".join(states))
                next_report = monotonic() + 10
            if not self.state.tasks:
                try:
                    comm = await connect(scheduler, timeout=REJOIN_POLL_S, **self.connection_args)
                except (OSError, asyncio.TimeoutError):
                    pass
                else:
                    comm.abort()
                    return True
            await asyncio.sleep(REJOIN_POLL_S)

    async def plugin_add(self, plugin, name=None, catch_errors=True):
        if name == PLUGIN_NAME and local_node(self) is not None:
            # a restarted scheduler sends the plugin again: the running node and its segments stay
            return {"status": "OK"}
        return await super().plugin_add(plugin, name=name, catch_errors=catch_errors)


class QueryNodeNanny(Nanny):
    """A nanny whose worker is a :class:`QueryNodeWorker`."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("worker_class", QueryNodeWorker)
        super().__init__(*args, **kwargs)
