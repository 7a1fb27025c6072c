"""Milvus error codes as Python exceptions.

Every layer raises :class:`MilvusError` (or a subclass built by :func:`_kind`);
the gRPC edge turns it into a ``common.Status`` and the REST edge into a Feathers
error.  Keeping the codes here, in a module that imports nothing else from
vecgrid, lets ``storage``, ``gpu`` and ``cluster`` raise the error a Milvus client
expects without depending on the wire layer.

Codes, stems and retriability follow Milvus's ``merr`` catalogue (2.4 line); the
legacy ``common.ErrorCode`` each maps to follows Milvus's conversion for old
clients.  Messages are built the way Milvus formats them: ``stem[key=value]``
optionally followed by ``: detail``.
"""

from __future__ import annotations

# Legacy common.ErrorCode values used by the mapping below.
_LEGACY_SUCCESS = 0
_LEGACY_UNEXPECTED = 1
_LEGACY_COLLECTION_NOT_EXISTS = 4
_LEGACY_ILLEGAL_ARGUMENT = 5
_LEGACY_META_FAILED = 15
_LEGACY_INDEX_NOT_EXIST = 25
_LEGACY_NO_REPLICA_AVAILABLE = 46
_LEGACY_SEGMENT_NOT_FOUND = 47
_LEGACY_RATE_LIMIT = 49
_LEGACY_FORCE_DENY = 48
_LEGACY_NODE_ID_NOT_MATCH = 50
_LEGACY_INSUFFICIENT_MEMORY = 52
_LEGACY_DISK_QUOTA = 54
_LEGACY_TIME_TICK_LONG_DELAY = 55
_LEGACY_NOT_READY_SERVE = 56


class MilvusError(Exception):
    """An error with a Milvus status code.

    ``code`` is the new-style Milvus code (``Status.code``), ``stem`` the fixed text
    Milvus uses for that code, ``legacy_code`` the deprecated ``Status.error_code``.
    """

    code: int = 65535
    stem: str = "unexpected error"
    retriable: bool = False
    legacy_code: int = _LEGACY_UNEXPECTED

    def __init__(self, detail: str = "", /, **fields: object) -> None:
        self.detail = detail
        self.fields = fields
        super().__init__(self.message)

    @property
    def message(self) -> str:
        text = self.stem
        if self.fields:
            text += "".join(f"[{k}={v}]" for k, v in self.fields.items())
        if self.detail:
            text += f": {self.detail}"
        return text

    context = ""
    remote_reason = ""

    def wrap(self, context: str) -> "MilvusError":
        """Prefix the message with what the server was doing, as Milvus's errors.Wrap does."""
        self.context = context
        return self

    def __str__(self) -> str:
        if self.remote_reason:
            return self.remote_reason
        return f"{self.context}: {self.message}" if self.context else self.message


_BY_CODE: dict[int, type[MilvusError]] = {}


def _kind(name: str, code: int, stem: str, retriable: bool = False,
          legacy: int = _LEGACY_UNEXPECTED) -> type[MilvusError]:
    cls = type(name, (MilvusError,), {
        "code": code, "stem": stem, "retriable": retriable, "legacy_code": legacy,
        "__doc__": f"Milvus code {code}: {stem}.",
    })
    _BY_CODE[code] = cls
    return cls


ServiceNotReady = _kind("ServiceNotReady", 1, "service not ready", True, _LEGACY_NOT_READY_SERVE)
ServiceUnavailable = _kind("ServiceUnavailable", 2, "service unavailable", True)
MemoryLimitExceeded = _kind("MemoryLimitExceeded", 3, "memory limit exceeded", False, _LEGACY_INSUFFICIENT_MEMORY)
ServiceInternal = _kind("ServiceInternal", 5, "service internal error")
DiskLimitExceeded = _kind("DiskLimitExceeded", 7, "disk limit exceeded", False, _LEGACY_DISK_QUOTA)
RateLimitExceeded = _kind("RateLimitExceeded", 8, "rate limit exceeded", True, _LEGACY_RATE_LIMIT)
ServiceQuotaExceeded = _kind("ServiceQuotaExceeded", 9, "quota exceeded", False, _LEGACY_FORCE_DENY)
ServiceUnimplemented = _kind("ServiceUnimplemented", 10, "service unimplemented")
TimeTickLongDelay = _kind("TimeTickLongDelay", 11, "time tick long delay", False, _LEGACY_TIME_TICK_LONG_DELAY)
ResourceInsufficient = _kind("ResourceInsufficient", 12, "service resource insufficient", True)

CollectionNotFound = _kind("CollectionNotFound", 100, "collection not found", False, _LEGACY_COLLECTION_NOT_EXISTS)
CollectionNotLoaded = _kind("CollectionNotLoaded", 101, "collection not loaded")
CollectionNotFullyLoaded = _kind("CollectionNotFullyLoaded", 103, "collection not fully loaded", True)
CollectionIllegalSchema = _kind("CollectionIllegalSchema", 105, "illegal collection schema")
CollectionOnRecovering = _kind("CollectionOnRecovering", 106, "collection on recovering", True)

PartitionNotFound = _kind("PartitionNotFound", 200, "partition not found")
PartitionNotLoaded = _kind("PartitionNotLoaded", 201, "partition not loaded")

ResourceGroupNotFound = _kind("ResourceGroupNotFound", 300, "resource group not found")
ResourceGroupAlreadyExist = _kind("ResourceGroupAlreadyExist", 301,
                                  "resource group already exist, but create with different config")
ResourceGroupReachLimit = _kind("ResourceGroupReachLimit", 302, "resource group num reach limit")
ResourceGroupIllegalConfig = _kind("ResourceGroupIllegalConfig", 303, "resource group illegal config")
ResourceGroupNodeNotEnough = _kind("ResourceGroupNodeNotEnough", 304, "resource group node not enough")

ReplicaNotFound = _kind("ReplicaNotFound", 400, "replica not found")

ChannelNotFound = _kind("ChannelNotFound", 500, "channel not found")
ChannelLack = _kind("ChannelLack", 501, "channel lacks", False, _LEGACY_META_FAILED)
ChannelNotAvailable = _kind("ChannelNotAvailable", 503, "channel not available", False, _LEGACY_NO_REPLICA_AVAILABLE)

SegmentNotFound = _kind("SegmentNotFound", 600, "segment not found", False, _LEGACY_SEGMENT_NOT_FOUND)
SegmentNotLoaded = _kind("SegmentNotLoaded", 601, "segment not loaded")
SegmentLack = _kind("SegmentLack", 602, "segment lacks")
SegmentLoadFailed = _kind("SegmentLoadFailed", 604, "segment load failed")

IndexNotFound = _kind("IndexNotFound", 700, "index not found", False, _LEGACY_INDEX_NOT_EXIST)
IndexNotSupported = _kind("IndexNotSupported", 701, "index type not supported")

DatabaseNotFound = _kind("DatabaseNotFound", 800, "database not found")

NodeNotFound = _kind("NodeNotFound", 901, "node not found")
NodeOffline = _kind("NodeOffline", 902, "node offline")
NodeNotMatch = _kind("NodeNotMatch", 904, "node not match", False, _LEGACY_NODE_ID_NOT_MATCH)
NodeNotAvailable = _kind("NodeNotAvailable", 905, "node not available", False, _LEGACY_NO_REPLICA_AVAILABLE)

IoKeyNotFound = _kind("IoKeyNotFound", 1000, "key not found")
IoFailed = _kind("IoFailed", 1001, "IO failed")
IoUnexpectedEOF = _kind("IoUnexpectedEOF", 1002, "unexpected EOF", True)

ParameterInvalid = _kind("ParameterInvalid", 1100, "invalid parameter", False, _LEGACY_ILLEGAL_ARGUMENT)
ParameterMissing = _kind("ParameterMissing", 1101, "missing parameter")
ParameterTooLarge = _kind("ParameterTooLarge", 1102, "parameter too large")

MetricNotFound = _kind("MetricNotFound", 1200, "metric not found")

FieldNotFound = _kind("FieldNotFound", 1700, "field not found")

OperationNotSupported = _kind("OperationNotSupported", 3000, "unsupported operation")

Canceled = _kind("Canceled", 10000, "context canceled")
Timeout = _kind("Timeout", 10001, "context deadline exceeded")


class UnexpectedError(MilvusError):
    """A plain error without a Milvus code (Milvus answers 65535 for these)."""

    stem = ""

    @property
    def message(self) -> str:
        return self.detail


def error_for_code(code: int) -> type[MilvusError]:
    """The exception class for a Milvus code (``UnexpectedError`` when unknown)."""
    return _BY_CODE.get(code, UnexpectedError)


def from_remote(code: int, reason: str) -> MilvusError:
    """The error a peer reported in a Status, keeping its text verbatim."""
    exc = error_for_code(code)()
    exc.remote_reason = reason
    return exc


SUCCESS_LEGACY_CODE = _LEGACY_SUCCESS


def raise_for_status(status) -> None:
    """Raise the MilvusError a failed ``common.Status`` stands for (client side; duck-typed so that
    this module needs no protobuf)."""
    if status.code == 0 and status.error_code == 0:
        return
    raise from_remote(status.code or 65535, status.reason)
