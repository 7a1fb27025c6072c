"""Dask task entry points: run a QueryNode handler on the worker the task is pinned to.

The coordinator's task scheduler submits these with ``workers=[address]`` and
``allow_other_workers=False``; they are coroutine functions, so Dask runs them on the
worker's event loop, where the node's gRPC server runs too, and they call the very
handler the gRPC method calls::

    fut = client.submit(tasks.call, "load_segments", request, workers=[addr],
                        allow_other_workers=False, pure=False)
    status = await fut      # the handler's reply; a MilvusError if it failed

Requests and replies are protobuf messages (they pickle); ``save_index`` takes and returns
plain Python values (:mod:`vecgrid.cluster.querynode.index_saver`).
"""

from __future__ import annotations

from typing import Any

from vecgrid import errors

#: Handler names a task may call (the QueryNode RPCs that are not streams, and ``save_index``).
HANDLERS = frozenset({
    "watch_dm_channels", "unsub_dm_channel", "sync_distribution",
    "load_segments", "release_segments", "release_collection", "load_partitions", "release_partitions",
    "get_segment_info", "get_data_distribution", "get_statistics", "search", "search_segments", "query",
    "query_segments", "delete", "delete_batch", "save_index",
})


def _local_node() -> Any:
    from distributed import get_worker

    from vecgrid.cluster.querynode.session import local_node

    node = local_node(get_worker())
    if node is None:
        raise errors.NodeNotFound("this Dask worker runs no QueryNode (plugin not set up)")
    return node


async def call(method: str, request: Any, after: Any = None) -> Any:
    """Run ``QueryNode.<method>(request)`` on this worker's node and return its reply.

    ``after`` is the future of the step this one depends on: Dask runs this task only once
    that step succeeded (its value is not used)."""
    if method not in HANDLERS:
        raise errors.ParameterInvalid(f"{method!r} is not a QueryNode task handler")
    return await getattr(_local_node(), method)(request)


async def describe() -> dict[str, Any] | None:
    """This worker's node description plus what it holds (for diagnostics)."""
    node = _local_node()
    return {**node.describe(), "segments": [s.info() for s in node.segments.list()]}
