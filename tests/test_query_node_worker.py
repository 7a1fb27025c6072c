"""The query node's Dask worker on its own (an in-process cluster, no processes)."""

from __future__ import annotations

import logging

from distributed import LocalCluster
from distributed.core import Status

from vecgrid.cluster.querynode.dask_worker import QueryNodeWorker


async def test_a_closing_worker_does_not_beat_to_a_scheduler_that_may_be_gone(caplog):
    """While a worker closes, its teardown (the query node's gRPC grace) runs with Dask's periodic
    callbacks still on, and the scheduler closing beside it made a beat fail: Dask logged that as an
    ERROR with a traceback ("Failed to communicate with scheduler during heartbeat"), which showed in
    `vecgrid serve`'s output after a Ctrl-C (CI, tests/test_cli.py)."""
    async with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, asynchronous=True,
                            dashboard_address=":0", worker_class=QueryNodeWorker) as cluster:
        [worker] = cluster.workers.values()
        worker.periodic_callbacks["heartbeat"].stop()   # the test beats by hand
        beats = []

        async def scheduler_gone(**kw):
            beats.append(kw)
            raise OSError("the scheduler is gone")
        worker.scheduler.heartbeat_worker = scheduler_gone
        try:
            worker.status = Status.closing
            with caplog.at_level(logging.ERROR, logger="distributed.worker"):
                await worker.heartbeat()
            assert beats == [] and "during heartbeat" not in caplog.text
            worker.status = Status.running   # a running worker beats, and Dask reports a failed beat
            with caplog.at_level(logging.ERROR, logger="distributed.worker"):
                await worker.heartbeat()
            assert len(beats) == 1 and "during heartbeat" in caplog.text
        finally:
            worker.status = Status.running
            del worker.scheduler.heartbeat_worker
