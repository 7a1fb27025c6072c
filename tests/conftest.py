"""Shared fixtures: an in-process embedded cluster (LocalCluster + coordinator) on free ports."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing.process
import os
import platform
import subprocess
import time
from pathlib import Path

import dask
import grpc
import pytest
import pytest_asyncio

from vecgrid.config import Settings
from vecgrid.deploy import EmbeddedCluster

REPO = Path(__file__).resolve().parent.parent

# Stored passwords at Argon2's lowest cost in the settings the suite makes and in every process it
# starts: at the default (0.28 s of CPU a login on two cores) logins took a tenth of make test-fast.
# tests/test_rest_accounts.py checks the default itself.
CHEAP_PASSWORDS = {"http.password_time_cost": 1, "http.password_memory_kib": 64, "http.password_parallelism": 1}
os.environ.update({f"VECGRID_{key.replace('.', '_').upper()}": str(value) for key, value in CHEAP_PASSWORDS.items()})


# Dask's own periodic work, at intervals no test needs: its statistical profiler of each server's loop
# (every 10 ms), the loop's tick check (20 ms), the nannies' memory monitor (100 ms) and the system
# monitor (500 ms) took 55 % of an idle test cluster's CPU (312 against 142 ms a second: fast_settings,
# two workers, 2026-11-30), and the suite is bound by CPU on two cores with clusters idling in several
# of its workers at once.  In the environment for every process the suite starts (workers, `vecgrid
# serve`, `dask scheduler`), and in this process's config, already read.  The product keeps Dask's own.
QUIET_DASK = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s",
              "distributed.worker.memory.monitor-interval": "1s", "distributed.admin.system-monitor.interval": "2s"}
os.environ.update({"DASK_" + key.upper().replace(".", "__").replace("-", "_"): str(value)
                   for key, value in QUIET_DASK.items()})
dask.config.set(QUIET_DASK)


def cheap_passwords(settings: Settings) -> Settings:
    for key, value in CHEAP_PASSWORDS.items():
        settings.set(key, value, source="tests")
    return settings


@pytest.fixture
def store(tmp_path):
    """A fresh SQLite metadata store."""
    from vecgrid.storage.kv import SQLiteMetaStore

    s = SQLiteMetaStore(tmp_path / "meta.db")
    yield s
    s.close()


def embedded_settings(data_dir: Path, workers: int = 2) -> Settings:
    return Settings.load(env={}, overrides={
        "common.data_dir": str(data_dir),
        "common.healthcheck_interval_s": 1.0,
        "querycoord.port": 0,
        "querycoord.grace_s": 0.5,
        "querynode.grace_s": 0.5,
        "http.port": 0, "proxy.port": 0,
        "dask.dashboard_port": 0,
        "dask.workers": workers,
        "dask.threads_per_worker": 1,
        # compaction tests turn it on: elsewhere a merge of the small imported segments would move them
        "datacoord.auto_compaction": False,
        **CHEAP_PASSWORDS,
    })


def secured_settings(data_dir: Path, admin_email: str, admin_password: str) -> Settings:
    """:func:`embedded_settings` with auth on (REST and gRPC) and a first admin."""
    settings = embedded_settings(data_dir)
    settings.http.auth = "on"
    settings.http.admin_email, settings.http.admin_password = admin_email, admin_password
    return settings


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def embedded(tmp_path_factory):
    cluster = EmbeddedCluster(embedded_settings(tmp_path_factory.mktemp("data")))
    await asyncio.wait_for(cluster.start(), 120)
    yield cluster
    await asyncio.wait_for(cluster.stop(), 60)


async def poll_until(predicate, timeout: float, interval: float = 0.1, what: str = "condition"):
    """Await ``predicate()`` (sync or async) until truthy; returns its value or fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(interval)


def aio_channel(address: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(address)


# --- the fast lane starts no process ---------------------------------------------------------------
# `make test-fast` runs `-m "not slow"`; a test that starts a process (a subprocess, a Dask worker or
# nanny) must carry the marker, or the inner loop slowly becomes the full suite again. Enforced here
# rather than trusted: the test fails naming the marker it lacks.

class UnmarkedProcessStart(RuntimeError):
    pass


# Dask's version report asks platform.processor(), which runs `uname -p` once and caches the answer:
# asked here, before any test, it is no process start of the test that first builds a Dask worker.
platform.processor()


@contextlib.contextmanager
def _processes_refused(item):
    """Yields the refusals made, so a test that swallowed the exception still fails."""
    refusals: list[str] = []
    if item.get_closest_marker("slow") is not None:
        yield refusals
        return

    def refuse(*args, **kwargs):
        refusals.append(f"{item.nodeid} starts a process: mark it @pytest.mark.slow")
        raise UnmarkedProcessStart(refusals[-1])

    patch = pytest.MonkeyPatch()
    patch.setattr(subprocess.Popen, "_execute_child", refuse)
    patch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    try:
        yield refusals
    finally:
        patch.undo()


def _fail_refused(outcome, refusals: list[str]) -> None:
    if refusals and outcome.exception is None:
        outcome.force_exception(UnmarkedProcessStart(refusals[0]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with _processes_refused(item) as refusals:
        outcome = yield
    _fail_refused(outcome, refusals)


# --- hang diagnostics -------------------------------------------------------------------------------
# faulthandler (pyproject's faulthandler_timeout) shows threads only; a hung async test is an await
# that never completes while every thread idles, so this prints each asyncio task's whole await chain.

ASYNC_DUMP_AFTER_S = 100.0


def await_chain(task) -> list[str]:
    lines, awaitable, depth = [], task.get_coro(), 0
    while awaitable is not None and depth < 64:
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None) \
            or getattr(awaitable, "ag_frame", None)
        if frame is not None:
            lines.append(f"    {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        else:
            lines.append(f"    <{type(awaitable).__name__}> {awaitable!r:.200}")
        awaitable = getattr(awaitable, "cr_await", None) or getattr(awaitable, "gi_yieldfrom", None) \
            or getattr(awaitable, "ag_await", None)
        depth += 1
    return lines


def _dump_async_tasks(nodeid: str) -> None:
    import sys
    out = [f"+++ asyncio tasks of {nodeid} after {ASYNC_DUMP_AFTER_S:.0f} s +++"]
    for task in list(asyncio.tasks._all_tasks):
        if task.done():
            continue
        out.append(f"task {task.get_name()}:")
        try:
            out += await_chain(task)
        except Exception as e:  # noqa: BLE001 - a diagnostic must not raise in its timer thread
            out.append(f"    (cannot walk: {e})")
    print("\n".join(out), file=sys.stderr, flush=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    import threading
    timer = threading.Timer(ASYNC_DUMP_AFTER_S, _dump_async_tasks, args=(item.nodeid,))
    timer.daemon = True
    timer.start()
    try:
        with _processes_refused(item) as refusals:
            outcome = yield
        _fail_refused(outcome, refusals)
    finally:
        timer.cancel()
