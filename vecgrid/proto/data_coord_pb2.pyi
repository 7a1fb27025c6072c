from vecgrid.proto import common_pb2 as _common_pb2
from vecgrid.proto import msg_pb2 as _msg_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SegmentLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    Legacy: _ClassVar[SegmentLevel]
    L0: _ClassVar[SegmentLevel]
    L1: _ClassVar[SegmentLevel]
    L2: _ClassVar[SegmentLevel]
Legacy: SegmentLevel
L0: SegmentLevel
L1: SegmentLevel
L2: SegmentLevel

class VchannelInfo(_message.Message):
    __slots__ = ("collectionID", "channelName", "seek_position", "unflushedSegments", "flushedSegments", "dropped_segments", "unflushedSegmentIds", "flushedSegmentIds", "dropped_segmentIds", "indexed_segmentIds", "indexed_segments", "level_zero_segment_ids", "partition_stats_versions")
    class PartitionStatsVersionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: int
        def __init__(self, key: _Optional[int] = ..., value: _Optional[int] = ...) -> None: ...
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    CHANNELNAME_FIELD_NUMBER: _ClassVar[int]
    SEEK_POSITION_FIELD_NUMBER: _ClassVar[int]
    UNFLUSHEDSEGMENTS_FIELD_NUMBER: _ClassVar[int]
    FLUSHEDSEGMENTS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    UNFLUSHEDSEGMENTIDS_FIELD_NUMBER: _ClassVar[int]
    FLUSHEDSEGMENTIDS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_SEGMENTIDS_FIELD_NUMBER: _ClassVar[int]
    INDEXED_SEGMENTIDS_FIELD_NUMBER: _ClassVar[int]
    INDEXED_SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    LEVEL_ZERO_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATS_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    collectionID: int
    channelName: str
    seek_position: _msg_pb2.MsgPosition
    unflushedSegments: _containers.RepeatedCompositeFieldContainer[SegmentInfo]
    flushedSegments: _containers.RepeatedCompositeFieldContainer[SegmentInfo]
    dropped_segments: _containers.RepeatedCompositeFieldContainer[SegmentInfo]
    unflushedSegmentIds: _containers.RepeatedScalarFieldContainer[int]
    flushedSegmentIds: _containers.RepeatedScalarFieldContainer[int]
    dropped_segmentIds: _containers.RepeatedScalarFieldContainer[int]
    indexed_segmentIds: _containers.RepeatedScalarFieldContainer[int]
    indexed_segments: _containers.RepeatedCompositeFieldContainer[SegmentInfo]
    level_zero_segment_ids: _containers.RepeatedScalarFieldContainer[int]
    partition_stats_versions: _containers.ScalarMap[int, int]
    def __init__(self, collectionID: _Optional[int] = ..., channelName: _Optional[str] = ..., seek_position: _Optional[_Union[_msg_pb2.MsgPosition, _Mapping]] = ..., unflushedSegments: _Optional[_Iterable[_Union[SegmentInfo, _Mapping]]] = ..., flushedSegments: _Optional[_Iterable[_Union[SegmentInfo, _Mapping]]] = ..., dropped_segments: _Optional[_Iterable[_Union[SegmentInfo, _Mapping]]] = ..., unflushedSegmentIds: _Optional[_Iterable[int]] = ..., flushedSegmentIds: _Optional[_Iterable[int]] = ..., dropped_segmentIds: _Optional[_Iterable[int]] = ..., indexed_segmentIds: _Optional[_Iterable[int]] = ..., indexed_segments: _Optional[_Iterable[_Union[SegmentInfo, _Mapping]]] = ..., level_zero_segment_ids: _Optional[_Iterable[int]] = ..., partition_stats_versions: _Optional[_Mapping[int, int]] = ...) -> None: ...

class SegmentInfo(_message.Message):
    __slots__ = ("ID", "collectionID", "partitionID", "insert_channel", "num_of_rows", "state", "max_row_num", "last_expire_time", "start_position", "dml_position", "binlogs", "statslogs", "deltalogs", "createdByCompaction", "compactionFrom", "dropped_at", "is_importing", "is_fake", "compacted", "level", "storage_version", "partition_stats_version", "last_level", "last_partition_stats_version")
    ID_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONID_FIELD_NUMBER: _ClassVar[int]
    INSERT_CHANNEL_FIELD_NUMBER: _ClassVar[int]
    NUM_OF_ROWS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MAX_ROW_NUM_FIELD_NUMBER: _ClassVar[int]
    LAST_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    START_POSITION_FIELD_NUMBER: _ClassVar[int]
    DML_POSITION_FIELD_NUMBER: _ClassVar[int]
    BINLOGS_FIELD_NUMBER: _ClassVar[int]
    STATSLOGS_FIELD_NUMBER: _ClassVar[int]
    DELTALOGS_FIELD_NUMBER: _ClassVar[int]
    CREATEDBYCOMPACTION_FIELD_NUMBER: _ClassVar[int]
    COMPACTIONFROM_FIELD_NUMBER: _ClassVar[int]
    DROPPED_AT_FIELD_NUMBER: _ClassVar[int]
    IS_IMPORTING_FIELD_NUMBER: _ClassVar[int]
    IS_FAKE_FIELD_NUMBER: _ClassVar[int]
    COMPACTED_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    STORAGE_VERSION_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATS_VERSION_FIELD_NUMBER: _ClassVar[int]
    LAST_LEVEL_FIELD_NUMBER: _ClassVar[int]
    LAST_PARTITION_STATS_VERSION_FIELD_NUMBER: _ClassVar[int]
    ID: int
    collectionID: int
    partitionID: int
    insert_channel: str
    num_of_rows: int
    state: _common_pb2.SegmentState
    max_row_num: int
    last_expire_time: int
    start_position: _msg_pb2.MsgPosition
    dml_position: _msg_pb2.MsgPosition
    binlogs: _containers.RepeatedCompositeFieldContainer[FieldBinlog]
    statslogs: _containers.RepeatedCompositeFieldContainer[FieldBinlog]
    deltalogs: _containers.RepeatedCompositeFieldContainer[FieldBinlog]
    createdByCompaction: bool
    compactionFrom: _containers.RepeatedScalarFieldContainer[int]
    dropped_at: int
    is_importing: bool
    is_fake: bool
    compacted: bool
    level: SegmentLevel
    storage_version: int
    partition_stats_version: int
    last_level: SegmentLevel
    last_partition_stats_version: int
    def __init__(self, ID: _Optional[int] = ..., collectionID: _Optional[int] = ..., partitionID: _Optional[int] = ..., insert_channel: _Optional[str] = ..., num_of_rows: _Optional[int] = ..., state: _Optional[_Union[_common_pb2.SegmentState, str]] = ..., max_row_num: _Optional[int] = ..., last_expire_time: _Optional[int] = ..., start_position: _Optional[_Union[_msg_pb2.MsgPosition, _Mapping]] = ..., dml_position: _Optional[_Union[_msg_pb2.MsgPosition, _Mapping]] = ..., binlogs: _Optional[_Iterable[_Union[FieldBinlog, _Mapping]]] = ..., statslogs: _Optional[_Iterable[_Union[FieldBinlog, _Mapping]]] = ..., deltalogs: _Optional[_Iterable[_Union[FieldBinlog, _Mapping]]] = ..., createdByCompaction: _Optional[bool] = ..., compactionFrom: _Optional[_Iterable[int]] = ..., dropped_at: _Optional[int] = ..., is_importing: _Optional[bool] = ..., is_fake: _Optional[bool] = ..., compacted: _Optional[bool] = ..., level: _Optional[_Union[SegmentLevel, str]] = ..., storage_version: _Optional[int] = ..., partition_stats_version: _Optional[int] = ..., last_level: _Optional[_Union[SegmentLevel, str]] = ..., last_partition_stats_version: _Optional[int] = ...) -> None: ...

class FieldBinlog(_message.Message):
    __slots__ = ("fieldID", "binlogs")
    FIELDID_FIELD_NUMBER: _ClassVar[int]
    BINLOGS_FIELD_NUMBER: _ClassVar[int]
    fieldID: int
    binlogs: _containers.RepeatedCompositeFieldContainer[Binlog]
    def __init__(self, fieldID: _Optional[int] = ..., binlogs: _Optional[_Iterable[_Union[Binlog, _Mapping]]] = ...) -> None: ...

class Binlog(_message.Message):
    __slots__ = ("entries_num", "timestamp_from", "timestamp_to", "log_path", "log_size", "logID", "memory_size")
    ENTRIES_NUM_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FROM_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_TO_FIELD_NUMBER: _ClassVar[int]
    LOG_PATH_FIELD_NUMBER: _ClassVar[int]
    LOG_SIZE_FIELD_NUMBER: _ClassVar[int]
    LOGID_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SIZE_FIELD_NUMBER: _ClassVar[int]
    entries_num: int
    timestamp_from: int
    timestamp_to: int
    log_path: str
    log_size: int
    logID: int
    memory_size: int
    def __init__(self, entries_num: _Optional[int] = ..., timestamp_from: _Optional[int] = ..., timestamp_to: _Optional[int] = ..., log_path: _Optional[str] = ..., log_size: _Optional[int] = ..., logID: _Optional[int] = ..., memory_size: _Optional[int] = ...) -> None: ...
