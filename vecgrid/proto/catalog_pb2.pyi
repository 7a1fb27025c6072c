from vecgrid.proto import common_pb2 as _common_pb2
from vecgrid.proto import index_coord_pb2 as _index_coord_pb2
from vecgrid.proto import schema_pb2 as _schema_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DatabaseState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DatabaseUnknown: _ClassVar[DatabaseState]
    DatabaseCreated: _ClassVar[DatabaseState]
    DatabaseCreating: _ClassVar[DatabaseState]
    DatabaseDropping: _ClassVar[DatabaseState]
    DatabaseDropped: _ClassVar[DatabaseState]

class CollectionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CollectionCreated: _ClassVar[CollectionState]
    CollectionCreating: _ClassVar[CollectionState]
    CollectionDropping: _ClassVar[CollectionState]
    CollectionDropped: _ClassVar[CollectionState]

class PartitionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PartitionCreated: _ClassVar[PartitionState]
    PartitionCreating: _ClassVar[PartitionState]
    PartitionDropping: _ClassVar[PartitionState]
    PartitionDropped: _ClassVar[PartitionState]

class FileKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FileKindUnknown: _ClassVar[FileKind]
    InsertLog: _ClassVar[FileKind]
    StatsLog: _ClassVar[FileKind]
    DeltaLog: _ClassVar[FileKind]
    IndexFile: _ClassVar[FileKind]
DatabaseUnknown: DatabaseState
DatabaseCreated: DatabaseState
DatabaseCreating: DatabaseState
DatabaseDropping: DatabaseState
DatabaseDropped: DatabaseState
CollectionCreated: CollectionState
CollectionCreating: CollectionState
CollectionDropping: CollectionState
CollectionDropped: CollectionState
PartitionCreated: PartitionState
PartitionCreating: PartitionState
PartitionDropping: PartitionState
PartitionDropped: PartitionState
FileKindUnknown: FileKind
InsertLog: FileKind
StatsLog: FileKind
DeltaLog: FileKind
IndexFile: FileKind

class DatabaseInfo(_message.Message):
    __slots__ = ("tenant_id", "name", "id", "state", "created_time", "properties")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATED_TIME_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    name: str
    id: int
    state: DatabaseState
    created_time: int
    properties: _containers.RepeatedCompositeFieldContainer[_common_pb2.KeyValuePair]
    def __init__(self, tenant_id: _Optional[str] = ..., name: _Optional[str] = ..., id: _Optional[int] = ..., state: _Optional[_Union[DatabaseState, str]] = ..., created_time: _Optional[int] = ..., properties: _Optional[_Iterable[_Union[_common_pb2.KeyValuePair, _Mapping]]] = ...) -> None: ...

class CollectionInfo(_message.Message):
    __slots__ = ("ID", "schema", "create_time", "virtual_channel_names", "physical_channel_names", "shards_num", "start_positions", "consistency_level", "state", "properties", "db_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    VIRTUAL_CHANNEL_NAMES_FIELD_NUMBER: _ClassVar[int]
    PHYSICAL_CHANNEL_NAMES_FIELD_NUMBER: _ClassVar[int]
    SHARDS_NUM_FIELD_NUMBER: _ClassVar[int]
    START_POSITIONS_FIELD_NUMBER: _ClassVar[int]
    CONSISTENCY_LEVEL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    DB_ID_FIELD_NUMBER: _ClassVar[int]
    ID: int
    schema: _schema_pb2.CollectionSchema
    create_time: int
    virtual_channel_names: _containers.RepeatedScalarFieldContainer[str]
    physical_channel_names: _containers.RepeatedScalarFieldContainer[str]
    shards_num: int
    start_positions: _containers.RepeatedCompositeFieldContainer[_common_pb2.KeyDataPair]
    consistency_level: _common_pb2.ConsistencyLevel
    state: CollectionState
    properties: _containers.RepeatedCompositeFieldContainer[_common_pb2.KeyValuePair]
    db_id: int
    def __init__(self, ID: _Optional[int] = ..., schema: _Optional[_Union[_schema_pb2.CollectionSchema, _Mapping]] = ..., create_time: _Optional[int] = ..., virtual_channel_names: _Optional[_Iterable[str]] = ..., physical_channel_names: _Optional[_Iterable[str]] = ..., shards_num: _Optional[int] = ..., start_positions: _Optional[_Iterable[_Union[_common_pb2.KeyDataPair, _Mapping]]] = ..., consistency_level: _Optional[_Union[_common_pb2.ConsistencyLevel, str]] = ..., state: _Optional[_Union[CollectionState, str]] = ..., properties: _Optional[_Iterable[_Union[_common_pb2.KeyValuePair, _Mapping]]] = ..., db_id: _Optional[int] = ...) -> None: ...

class AliasInfo(_message.Message):
    __slots__ = ("alias_name", "collectionID", "created_time", "dbID")
    ALIAS_NAME_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    CREATED_TIME_FIELD_NUMBER: _ClassVar[int]
    DBID_FIELD_NUMBER: _ClassVar[int]
    alias_name: str
    collectionID: int
    created_time: int
    dbID: int
    def __init__(self, alias_name: _Optional[str] = ..., collectionID: _Optional[int] = ..., created_time: _Optional[int] = ..., dbID: _Optional[int] = ...) -> None: ...

class PartitionInfo(_message.Message):
    __slots__ = ("partitionID", "partitionName", "partition_created_timestamp", "collection_id", "state")
    PARTITIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    PARTITION_CREATED_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    partitionID: int
    partitionName: str
    partition_created_timestamp: int
    collection_id: int
    state: PartitionState
    def __init__(self, partitionID: _Optional[int] = ..., partitionName: _Optional[str] = ..., partition_created_timestamp: _Optional[int] = ..., collection_id: _Optional[int] = ..., state: _Optional[_Union[PartitionState, str]] = ...) -> None: ...

class FieldIndex(_message.Message):
    __slots__ = ("index_info", "deleted", "create_time")
    INDEX_INFO_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    index_info: _index_coord_pb2.IndexInfo
    deleted: bool
    create_time: int
    def __init__(self, index_info: _Optional[_Union[_index_coord_pb2.IndexInfo, _Mapping]] = ..., deleted: _Optional[bool] = ..., create_time: _Optional[int] = ...) -> None: ...

class SegmentFile(_message.Message):
    __slots__ = ("path", "size", "checksum_algorithm", "checksum", "kind", "fieldID", "indexID")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    CHECKSUM_ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    CHECKSUM_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    FIELDID_FIELD_NUMBER: _ClassVar[int]
    INDEXID_FIELD_NUMBER: _ClassVar[int]
    path: str
    size: int
    checksum_algorithm: str
    checksum: str
    kind: FileKind
    fieldID: int
    indexID: int
    def __init__(self, path: _Optional[str] = ..., size: _Optional[int] = ..., checksum_algorithm: _Optional[str] = ..., checksum: _Optional[str] = ..., kind: _Optional[_Union[FileKind, str]] = ..., fieldID: _Optional[int] = ..., indexID: _Optional[int] = ...) -> None: ...

class SegmentFileChecksums(_message.Message):
    __slots__ = ("collectionID", "partitionID", "segmentID", "files", "root")
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONID_FIELD_NUMBER: _ClassVar[int]
    SEGMENTID_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    collectionID: int
    partitionID: int
    segmentID: int
    files: _containers.RepeatedCompositeFieldContainer[SegmentFile]
    root: str
    def __init__(self, collectionID: _Optional[int] = ..., partitionID: _Optional[int] = ..., segmentID: _Optional[int] = ..., files: _Optional[_Iterable[_Union[SegmentFile, _Mapping]]] = ..., root: _Optional[str] = ...) -> None: ...

class SegmentIndex(_message.Message):
    __slots__ = ("collectionID", "partitionID", "segmentID", "num_rows", "indexID", "buildID", "nodeID", "index_version", "state", "fail_reason", "index_file_keys", "deleted", "create_time", "serialize_size", "write_handoff", "current_index_version", "index_store_version", "finished_time", "files")
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONID_FIELD_NUMBER: _ClassVar[int]
    SEGMENTID_FIELD_NUMBER: _ClassVar[int]
    NUM_ROWS_FIELD_NUMBER: _ClassVar[int]
    INDEXID_FIELD_NUMBER: _ClassVar[int]
    BUILDID_FIELD_NUMBER: _ClassVar[int]
    NODEID_FIELD_NUMBER: _ClassVar[int]
    INDEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    FAIL_REASON_FIELD_NUMBER: _ClassVar[int]
    INDEX_FILE_KEYS_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    SERIALIZE_SIZE_FIELD_NUMBER: _ClassVar[int]
    WRITE_HANDOFF_FIELD_NUMBER: _ClassVar[int]
    CURRENT_INDEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    INDEX_STORE_VERSION_FIELD_NUMBER: _ClassVar[int]
    FINISHED_TIME_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    collectionID: int
    partitionID: int
    segmentID: int
    num_rows: int
    indexID: int
    buildID: int
    nodeID: int
    index_version: int
    state: _common_pb2.IndexState
    fail_reason: str
    index_file_keys: _containers.RepeatedScalarFieldContainer[str]
    deleted: bool
    create_time: int
    serialize_size: int
    write_handoff: bool
    current_index_version: int
    index_store_version: int
    finished_time: int
    files: _containers.RepeatedCompositeFieldContainer[SegmentFile]
    def __init__(self, collectionID: _Optional[int] = ..., partitionID: _Optional[int] = ..., segmentID: _Optional[int] = ..., num_rows: _Optional[int] = ..., indexID: _Optional[int] = ..., buildID: _Optional[int] = ..., nodeID: _Optional[int] = ..., index_version: _Optional[int] = ..., state: _Optional[_Union[_common_pb2.IndexState, str]] = ..., fail_reason: _Optional[str] = ..., index_file_keys: _Optional[_Iterable[str]] = ..., deleted: _Optional[bool] = ..., create_time: _Optional[int] = ..., serialize_size: _Optional[int] = ..., write_handoff: _Optional[bool] = ..., current_index_version: _Optional[int] = ..., index_store_version: _Optional[int] = ..., finished_time: _Optional[int] = ..., files: _Optional[_Iterable[_Union[SegmentFile, _Mapping]]] = ...) -> None: ...
