"""``common.Status`` from Python exceptions.

Milvus replies to every RPC with gRPC OK and puts the outcome in a Status; this is
the one place that turns an exception into that Status.
"""

from __future__ import annotations

import logging

from vecgrid import errors
from vecgrid.proto import common_pb2

log = logging.getLogger(__name__)


def success() -> common_pb2.Status:
    return common_pb2.Status(error_code=errors.SUCCESS_LEGACY_CODE, code=0)


def to_status(err: BaseException) -> common_pb2.Status:
    """A failed Status for ``err``; anything that is not a MilvusError is logged as a bug."""
    if not isinstance(err, errors.MilvusError):
        log.exception("unexpected error while serving an RPC", exc_info=err)
        err = errors.UnexpectedError(f"{type(err).__name__}: {err}")
    text = str(err)
    return common_pb2.Status(
        error_code=err.legacy_code,
        code=err.code,
        reason=text,
        detail=text,
        retriable=err.retriable,
    )

