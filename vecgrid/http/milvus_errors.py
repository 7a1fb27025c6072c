"""Milvus errors as Feathers errors: the mapping of ``rest-api.md`` ("Conventions: Errors").

One app-wide ``error`` hook (:func:`milvus_error_hook`) applies it to whatever a service lets
through, so services raise the role's :class:`~vecgrid.errors.MilvusError` unchanged.  The Milvus
code rides along in ``data`` (``{"milvusCode": 101, "retriable": false}``) for clients that want it.
"""

from __future__ import annotations

from typing import Any

from vecgrid import errors
from vecgrid.common import feathers_errors as fe

# Milvus code -> Feathers class; codes not listed are GeneralError (500).
_BY_MILVUS_CODE: dict[int, type[fe.FeathersError]] = {
    errors.CollectionNotFound.code: fe.NotFound,
    errors.PartitionNotFound.code: fe.NotFound,
    errors.IndexNotFound.code: fe.NotFound,
    errors.DatabaseNotFound.code: fe.NotFound,
    errors.ResourceGroupNotFound.code: fe.NotFound,
    errors.ReplicaNotFound.code: fe.NotFound,
    errors.SegmentNotFound.code: fe.NotFound,
    errors.NodeNotFound.code: fe.NotFound,
    errors.FieldNotFound.code: fe.BadRequest,
    errors.CollectionNotLoaded.code: fe.Conflict,
    errors.PartitionNotLoaded.code: fe.Conflict,
    errors.CollectionNotFullyLoaded.code: fe.Conflict,
    errors.ResourceGroupAlreadyExist.code: fe.Conflict,
    errors.ParameterInvalid.code: fe.BadRequest,
    errors.ParameterMissing.code: fe.BadRequest,
    errors.ParameterTooLarge.code: fe.BadRequest,
    errors.CollectionIllegalSchema.code: fe.BadRequest,
    errors.IndexNotSupported.code: fe.BadRequest,
    errors.MetricNotFound.code: fe.BadRequest,
    errors.ResourceGroupIllegalConfig.code: fe.BadRequest,
    errors.ResourceGroupReachLimit.code: fe.BadRequest,
    errors.ResourceGroupNodeNotEnough.code: fe.BadRequest,
    errors.OperationNotSupported.code: fe.BadRequest,
    errors.RateLimitExceeded.code: fe.TooManyRequests,
    errors.ServiceQuotaExceeded.code: fe.TooManyRequests,
    errors.MemoryLimitExceeded.code: fe.TooManyRequests,
    errors.ServiceNotReady.code: fe.Unavailable,
    errors.ServiceUnavailable.code: fe.Unavailable,
    errors.ChannelNotAvailable.code: fe.Unavailable,
    errors.NodeNotAvailable.code: fe.Unavailable,
    errors.NodeOffline.code: fe.Unavailable,
    errors.CollectionOnRecovering.code: fe.Unavailable,
    # a channel moving to another (or a restarted) node under a read or a delete: routed again, it is found;
    # "not found" would tell a client that a live row is gone
    errors.ChannelNotFound.code: fe.Unavailable,
    # segments moving between nodes under a read (balance, handoff): the next try finds them
    errors.SegmentNotLoaded.code: fe.Unavailable,
    errors.SegmentLack.code: fe.Unavailable,
    errors.Timeout.code: fe.Timeout,
    errors.ServiceUnimplemented.code: fe.NotImplemented,
}

# Extra words for the errors a user can act on.
_HINTS: dict[int, str] = {
    errors.CollectionNotLoaded.code: "load it first (POST /collections with X-Service-Method: load)",
    errors.PartitionNotLoaded.code: "load it first (X-Service-Method: load)",
}


def feathers_error(error: errors.MilvusError) -> fe.FeathersError:
    """The Feathers error a REST client gets for ``error``."""
    cls = _BY_MILVUS_CODE.get(error.code, fe.GeneralError)
    message = error.message
    hint = _HINTS.get(error.code)
    if hint:
        message = f"{message}; {hint}"
    # a 503 is a state that passes (RFC 9110 15.6.4): retriable whatever Milvus's own flag says
    retriable = error.retriable or cls is fe.Unavailable
    data: dict[str, Any] = {"milvusCode": error.code, "retriable": retriable}
    return cls(message, data=data)


def not_found(error: errors.MilvusError) -> fe.NotFound:
    """``error`` as a 404, for a service whose resource *is* the thing that moved or went (a loaded segment,
    a channel on its source node): there, not being there is the answer, not a state that passes."""
    return fe.NotFound(error.message, data={"milvusCode": error.code, "retriable": False})


def milvus_error_hook(ctx: Any) -> None:
    """App-wide ``error`` hook: a MilvusError leaves as its Feathers error (others pass as they are)."""
    if isinstance(ctx.error, errors.MilvusError):
        ctx.error = feathers_error(ctx.error)
