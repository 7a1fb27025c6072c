from vecgrid.proto import common_pb2 as _common_pb2
from vecgrid.proto import schema_pb2 as _schema_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InsertRequest(_message.Message):
    __slots__ = ("db_name", "collection_name", "partition_name", "rows")
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    db_name: str
    collection_name: str
    partition_name: str
    rows: bytes
    def __init__(self, db_name: _Optional[str] = ..., collection_name: _Optional[str] = ..., partition_name: _Optional[str] = ..., rows: _Optional[bytes] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("db_name", "collection_name", "partition_name", "ids", "filter")
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    db_name: str
    collection_name: str
    partition_name: str
    ids: _schema_pb2.IDs
    filter: str
    def __init__(self, db_name: _Optional[str] = ..., collection_name: _Optional[str] = ..., partition_name: _Optional[str] = ..., ids: _Optional[_Union[_schema_pb2.IDs, _Mapping]] = ..., filter: _Optional[str] = ...) -> None: ...

class MutationResult(_message.Message):
    __slots__ = ("status", "IDs", "succ_index", "err_index", "acknowledged", "insert_cnt", "delete_cnt", "upsert_cnt", "timestamp")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    SUCC_INDEX_FIELD_NUMBER: _ClassVar[int]
    ERR_INDEX_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGED_FIELD_NUMBER: _ClassVar[int]
    INSERT_CNT_FIELD_NUMBER: _ClassVar[int]
    DELETE_CNT_FIELD_NUMBER: _ClassVar[int]
    UPSERT_CNT_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    IDs: _schema_pb2.IDs
    succ_index: _containers.RepeatedScalarFieldContainer[int]
    err_index: _containers.RepeatedScalarFieldContainer[int]
    acknowledged: bool
    insert_cnt: int
    delete_cnt: int
    upsert_cnt: int
    timestamp: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., IDs: _Optional[_Union[_schema_pb2.IDs, _Mapping]] = ..., succ_index: _Optional[_Iterable[int]] = ..., err_index: _Optional[_Iterable[int]] = ..., acknowledged: _Optional[bool] = ..., insert_cnt: _Optional[int] = ..., delete_cnt: _Optional[int] = ..., upsert_cnt: _Optional[int] = ..., timestamp: _Optional[int] = ...) -> None: ...

class FlushRequest(_message.Message):
    __slots__ = ("db_name", "collection_name", "no_wait")
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_NAME_FIELD_NUMBER: _ClassVar[int]
    NO_WAIT_FIELD_NUMBER: _ClassVar[int]
    db_name: str
    collection_name: str
    no_wait: bool
    def __init__(self, db_name: _Optional[str] = ..., collection_name: _Optional[str] = ..., no_wait: _Optional[bool] = ...) -> None: ...

class FlushResponse(_message.Message):
    __slots__ = ("status", "collectionID", "segmentIDs", "flushID")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    SEGMENTIDS_FIELD_NUMBER: _ClassVar[int]
    FLUSHID_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    collectionID: int
    segmentIDs: _containers.RepeatedScalarFieldContainer[int]
    flushID: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., collectionID: _Optional[int] = ..., segmentIDs: _Optional[_Iterable[int]] = ..., flushID: _Optional[int] = ...) -> None: ...

class CompactRequest(_message.Message):
    __slots__ = ("db_name", "collection_name", "no_wait")
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_NAME_FIELD_NUMBER: _ClassVar[int]
    NO_WAIT_FIELD_NUMBER: _ClassVar[int]
    db_name: str
    collection_name: str
    no_wait: bool
    def __init__(self, db_name: _Optional[str] = ..., collection_name: _Optional[str] = ..., no_wait: _Optional[bool] = ...) -> None: ...

class CompactResponse(_message.Message):
    __slots__ = ("status", "collectionID", "compactionID")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    COMPACTIONID_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    collectionID: int
    compactionID: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., collectionID: _Optional[int] = ..., compactionID: _Optional[int] = ...) -> None: ...

class GetFlushStateRequest(_message.Message):
    __slots__ = ("flushID",)
    FLUSHID_FIELD_NUMBER: _ClassVar[int]
    flushID: int
    def __init__(self, flushID: _Optional[int] = ...) -> None: ...

class GetFlushStateResponse(_message.Message):
    __slots__ = ("status", "flushed", "flushID", "collectionID", "state", "progress", "channels", "channels_flushed", "segmentIDs", "fail_reason")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FLUSHED_FIELD_NUMBER: _ClassVar[int]
    FLUSHID_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FLUSHED_FIELD_NUMBER: _ClassVar[int]
    SEGMENTIDS_FIELD_NUMBER: _ClassVar[int]
    FAIL_REASON_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    flushed: bool
    flushID: int
    collectionID: int
    state: str
    progress: int
    channels: int
    channels_flushed: int
    segmentIDs: _containers.RepeatedScalarFieldContainer[int]
    fail_reason: str
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., flushed: _Optional[bool] = ..., flushID: _Optional[int] = ..., collectionID: _Optional[int] = ..., state: _Optional[str] = ..., progress: _Optional[int] = ..., channels: _Optional[int] = ..., channels_flushed: _Optional[int] = ..., segmentIDs: _Optional[_Iterable[int]] = ..., fail_reason: _Optional[str] = ...) -> None: ...

class GetCompactionStateRequest(_message.Message):
    __slots__ = ("compactionID",)
    COMPACTIONID_FIELD_NUMBER: _ClassVar[int]
    compactionID: int
    def __init__(self, compactionID: _Optional[int] = ...) -> None: ...

class GetCompactionStateResponse(_message.Message):
    __slots__ = ("status", "state", "executingPlanNo", "completedPlanNo", "failedPlanNo", "progress", "collectionID", "fail_reason")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EXECUTINGPLANNO_FIELD_NUMBER: _ClassVar[int]
    COMPLETEDPLANNO_FIELD_NUMBER: _ClassVar[int]
    FAILEDPLANNO_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    FAIL_REASON_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    state: str
    executingPlanNo: int
    completedPlanNo: int
    failedPlanNo: int
    progress: int
    collectionID: int
    fail_reason: str
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., state: _Optional[str] = ..., executingPlanNo: _Optional[int] = ..., completedPlanNo: _Optional[int] = ..., failedPlanNo: _Optional[int] = ..., progress: _Optional[int] = ..., collectionID: _Optional[int] = ..., fail_reason: _Optional[str] = ...) -> None: ...

class GetIndexBuildProgressRequest(_message.Message):
    __slots__ = ("db_name", "collection_name", "index_name")
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_NAME_FIELD_NUMBER: _ClassVar[int]
    INDEX_NAME_FIELD_NUMBER: _ClassVar[int]
    db_name: str
    collection_name: str
    index_name: str
    def __init__(self, db_name: _Optional[str] = ..., collection_name: _Optional[str] = ..., index_name: _Optional[str] = ...) -> None: ...

class IndexProgress(_message.Message):
    __slots__ = ("index_name", "field_name", "indexID", "state", "total_rows", "indexed_rows", "pending_index_rows", "progress", "fail_reason")
    INDEX_NAME_FIELD_NUMBER: _ClassVar[int]
    FIELD_NAME_FIELD_NUMBER: _ClassVar[int]
    INDEXID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    INDEXED_ROWS_FIELD_NUMBER: _ClassVar[int]
    PENDING_INDEX_ROWS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    FAIL_REASON_FIELD_NUMBER: _ClassVar[int]
    index_name: str
    field_name: str
    indexID: int
    state: _common_pb2.IndexState
    total_rows: int
    indexed_rows: int
    pending_index_rows: int
    progress: int
    fail_reason: str
    def __init__(self, index_name: _Optional[str] = ..., field_name: _Optional[str] = ..., indexID: _Optional[int] = ..., state: _Optional[_Union[_common_pb2.IndexState, str]] = ..., total_rows: _Optional[int] = ..., indexed_rows: _Optional[int] = ..., pending_index_rows: _Optional[int] = ..., progress: _Optional[int] = ..., fail_reason: _Optional[str] = ...) -> None: ...

class GetIndexBuildProgressResponse(_message.Message):
    __slots__ = ("status", "indexes")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    INDEXES_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    indexes: _containers.RepeatedCompositeFieldContainer[IndexProgress]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., indexes: _Optional[_Iterable[_Union[IndexProgress, _Mapping]]] = ...) -> None: ...

class CreateIndexRequest(_message.Message):
    __slots__ = ("db_name", "collection_name", "field_name", "index_type", "metric_type", "params", "index_name")
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_NAME_FIELD_NUMBER: _ClassVar[int]
    FIELD_NAME_FIELD_NUMBER: _ClassVar[int]
    INDEX_TYPE_FIELD_NUMBER: _ClassVar[int]
    METRIC_TYPE_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    INDEX_NAME_FIELD_NUMBER: _ClassVar[int]
    db_name: str
    collection_name: str
    field_name: str
    index_type: str
    metric_type: str
    params: str
    index_name: str
    def __init__(self, db_name: _Optional[str] = ..., collection_name: _Optional[str] = ..., field_name: _Optional[str] = ..., index_type: _Optional[str] = ..., metric_type: _Optional[str] = ..., params: _Optional[str] = ..., index_name: _Optional[str] = ...) -> None: ...

class CreateIndexResponse(_message.Message):
    __slots__ = ("status", "index")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    index: IndexProgress
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., index: _Optional[_Union[IndexProgress, _Mapping]] = ...) -> None: ...

class DropIndexRequest(_message.Message):
    __slots__ = ("db_name", "collection_name", "field_name", "index_name")
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_NAME_FIELD_NUMBER: _ClassVar[int]
    FIELD_NAME_FIELD_NUMBER: _ClassVar[int]
    INDEX_NAME_FIELD_NUMBER: _ClassVar[int]
    db_name: str
    collection_name: str
    field_name: str
    index_name: str
    def __init__(self, db_name: _Optional[str] = ..., collection_name: _Optional[str] = ..., field_name: _Optional[str] = ..., index_name: _Optional[str] = ...) -> None: ...

class DropIndexResponse(_message.Message):
    __slots__ = ("status", "index_name", "field_name")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    INDEX_NAME_FIELD_NUMBER: _ClassVar[int]
    FIELD_NAME_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    index_name: str
    field_name: str
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., index_name: _Optional[str] = ..., field_name: _Optional[str] = ...) -> None: ...

class GuaranteeTimestampsRequest(_message.Message):
    __slots__ = ("channels",)
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    channels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, channels: _Optional[_Iterable[str]] = ...) -> None: ...

class GuaranteeTimestampsResponse(_message.Message):
    __slots__ = ("status", "timestamps")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    timestamps: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., timestamps: _Optional[_Iterable[int]] = ...) -> None: ...
