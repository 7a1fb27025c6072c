from vecgrid.proto import catalog_pb2 as _catalog_pb2
from vecgrid.proto import common_pb2 as _common_pb2
from vecgrid.proto import index_coord_pb2 as _index_coord_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DescribeCollectionRequest(_message.Message):
    __slots__ = ("db_name", "collection_name", "collectionID")
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_NAME_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    db_name: str
    collection_name: str
    collectionID: int
    def __init__(self, db_name: _Optional[str] = ..., collection_name: _Optional[str] = ..., collectionID: _Optional[int] = ...) -> None: ...

class CollectionDescription(_message.Message):
    __slots__ = ("info", "partitions", "indexes")
    INFO_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    INDEXES_FIELD_NUMBER: _ClassVar[int]
    info: _catalog_pb2.CollectionInfo
    partitions: _containers.RepeatedCompositeFieldContainer[_catalog_pb2.PartitionInfo]
    indexes: _containers.RepeatedCompositeFieldContainer[_index_coord_pb2.IndexInfo]
    def __init__(self, info: _Optional[_Union[_catalog_pb2.CollectionInfo, _Mapping]] = ..., partitions: _Optional[_Iterable[_Union[_catalog_pb2.PartitionInfo, _Mapping]]] = ..., indexes: _Optional[_Iterable[_Union[_index_coord_pb2.IndexInfo, _Mapping]]] = ...) -> None: ...

class DescribeCollectionResponse(_message.Message):
    __slots__ = ("status", "collection")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    collection: CollectionDescription
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., collection: _Optional[_Union[CollectionDescription, _Mapping]] = ...) -> None: ...

class ListCollectionsRequest(_message.Message):
    __slots__ = ("db_name",)
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    db_name: str
    def __init__(self, db_name: _Optional[str] = ...) -> None: ...

class ListCollectionsResponse(_message.Message):
    __slots__ = ("status", "collections")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    collections: _containers.RepeatedCompositeFieldContainer[CollectionDescription]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., collections: _Optional[_Iterable[_Union[CollectionDescription, _Mapping]]] = ...) -> None: ...

class AllocTimestampRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AllocTimestampResponse(_message.Message):
    __slots__ = ("status", "timestamp")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    timestamp: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., timestamp: _Optional[int] = ...) -> None: ...
