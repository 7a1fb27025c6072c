from vecgrid.proto import common_pb2 as _common_pb2
from vecgrid.proto import schema_pb2 as _schema_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetTimeTickChannelRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStatisticsChannelRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ShowConfigurationsRequest(_message.Message):
    __slots__ = ("base", "pattern")
    BASE_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    base: _common_pb2.MsgBase
    pattern: str
    def __init__(self, base: _Optional[_Union[_common_pb2.MsgBase, _Mapping]] = ..., pattern: _Optional[str] = ...) -> None: ...

class ShowConfigurationsResponse(_message.Message):
    __slots__ = ("status", "configuations")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CONFIGUATIONS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    configuations: _containers.RepeatedCompositeFieldContainer[_common_pb2.KeyValuePair]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., configuations: _Optional[_Iterable[_Union[_common_pb2.KeyValuePair, _Mapping]]] = ...) -> None: ...

class GetStatisticsRequest(_message.Message):
    __slots__ = ("base", "dbID", "collectionID", "partitionIDs", "travel_timestamp", "guarantee_timestamp", "timeout_timestamp")
    BASE_FIELD_NUMBER: _ClassVar[int]
    DBID_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONIDS_FIELD_NUMBER: _ClassVar[int]
    TRAVEL_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    GUARANTEE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    base: _common_pb2.MsgBase
    dbID: int
    collectionID: int
    partitionIDs: _containers.RepeatedScalarFieldContainer[int]
    travel_timestamp: int
    guarantee_timestamp: int
    timeout_timestamp: int
    def __init__(self, base: _Optional[_Union[_common_pb2.MsgBase, _Mapping]] = ..., dbID: _Optional[int] = ..., collectionID: _Optional[int] = ..., partitionIDs: _Optional[_Iterable[int]] = ..., travel_timestamp: _Optional[int] = ..., guarantee_timestamp: _Optional[int] = ..., timeout_timestamp: _Optional[int] = ...) -> None: ...

class GetStatisticsResponse(_message.Message):
    __slots__ = ("base", "status", "stats")
    BASE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    base: _common_pb2.MsgBase
    status: _common_pb2.Status
    stats: _containers.RepeatedCompositeFieldContainer[_common_pb2.KeyValuePair]
    def __init__(self, base: _Optional[_Union[_common_pb2.MsgBase, _Mapping]] = ..., status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., stats: _Optional[_Iterable[_Union[_common_pb2.KeyValuePair, _Mapping]]] = ...) -> None: ...

class CostAggregation(_message.Message):
    __slots__ = ("responseTime", "serviceTime", "totalNQ", "totalRelatedDataSize")
    RESPONSETIME_FIELD_NUMBER: _ClassVar[int]
    SERVICETIME_FIELD_NUMBER: _ClassVar[int]
    TOTALNQ_FIELD_NUMBER: _ClassVar[int]
    TOTALRELATEDDATASIZE_FIELD_NUMBER: _ClassVar[int]
    responseTime: int
    serviceTime: int
    totalNQ: int
    totalRelatedDataSize: int
    def __init__(self, responseTime: _Optional[int] = ..., serviceTime: _Optional[int] = ..., totalNQ: _Optional[int] = ..., totalRelatedDataSize: _Optional[int] = ...) -> None: ...

class SubSearchRequest(_message.Message):
    __slots__ = ("dsl", "placeholder_group", "dsl_type", "serialized_expr_plan", "nq", "partitionIDs", "topk", "offset", "metricType")
    DSL_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDER_GROUP_FIELD_NUMBER: _ClassVar[int]
    DSL_TYPE_FIELD_NUMBER: _ClassVar[int]
    SERIALIZED_EXPR_PLAN_FIELD_NUMBER: _ClassVar[int]
    NQ_FIELD_NUMBER: _ClassVar[int]
    PARTITIONIDS_FIELD_NUMBER: _ClassVar[int]
    TOPK_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    METRICTYPE_FIELD_NUMBER: _ClassVar[int]
    dsl: str
    placeholder_group: bytes
    dsl_type: _common_pb2.DslType
    serialized_expr_plan: bytes
    nq: int
    partitionIDs: _containers.RepeatedScalarFieldContainer[int]
    topk: int
    offset: int
    metricType: str
    def __init__(self, dsl: _Optional[str] = ..., placeholder_group: _Optional[bytes] = ..., dsl_type: _Optional[_Union[_common_pb2.DslType, str]] = ..., serialized_expr_plan: _Optional[bytes] = ..., nq: _Optional[int] = ..., partitionIDs: _Optional[_Iterable[int]] = ..., topk: _Optional[int] = ..., offset: _Optional[int] = ..., metricType: _Optional[str] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("base", "reqID", "dbID", "collectionID", "partitionIDs", "dsl", "placeholder_group", "dsl_type", "serialized_expr_plan", "output_fields_id", "mvcc_timestamp", "guarantee_timestamp", "timeout_timestamp", "nq", "topk", "metricType", "ignoreGrowing", "username", "sub_reqs", "is_advanced", "offset", "consistency_level", "is_topk_reduce", "is_recall_evaluation")
    BASE_FIELD_NUMBER: _ClassVar[int]
    REQID_FIELD_NUMBER: _ClassVar[int]
    DBID_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONIDS_FIELD_NUMBER: _ClassVar[int]
    DSL_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDER_GROUP_FIELD_NUMBER: _ClassVar[int]
    DSL_TYPE_FIELD_NUMBER: _ClassVar[int]
    SERIALIZED_EXPR_PLAN_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELDS_ID_FIELD_NUMBER: _ClassVar[int]
    MVCC_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    GUARANTEE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    NQ_FIELD_NUMBER: _ClassVar[int]
    TOPK_FIELD_NUMBER: _ClassVar[int]
    METRICTYPE_FIELD_NUMBER: _ClassVar[int]
    IGNOREGROWING_FIELD_NUMBER: _ClassVar[int]
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    SUB_REQS_FIELD_NUMBER: _ClassVar[int]
    IS_ADVANCED_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    CONSISTENCY_LEVEL_FIELD_NUMBER: _ClassVar[int]
    IS_TOPK_REDUCE_FIELD_NUMBER: _ClassVar[int]
    IS_RECALL_EVALUATION_FIELD_NUMBER: _ClassVar[int]
    base: _common_pb2.MsgBase
    reqID: int
    dbID: int
    collectionID: int
    partitionIDs: _containers.RepeatedScalarFieldContainer[int]
    dsl: str
    placeholder_group: bytes
    dsl_type: _common_pb2.DslType
    serialized_expr_plan: bytes
    output_fields_id: _containers.RepeatedScalarFieldContainer[int]
    mvcc_timestamp: int
    guarantee_timestamp: int
    timeout_timestamp: int
    nq: int
    topk: int
    metricType: str
    ignoreGrowing: bool
    username: str
    sub_reqs: _containers.RepeatedCompositeFieldContainer[SubSearchRequest]
    is_advanced: bool
    offset: int
    consistency_level: _common_pb2.ConsistencyLevel
    is_topk_reduce: bool
    is_recall_evaluation: bool
    def __init__(self, base: _Optional[_Union[_common_pb2.MsgBase, _Mapping]] = ..., reqID: _Optional[int] = ..., dbID: _Optional[int] = ..., collectionID: _Optional[int] = ..., partitionIDs: _Optional[_Iterable[int]] = ..., dsl: _Optional[str] = ..., placeholder_group: _Optional[bytes] = ..., dsl_type: _Optional[_Union[_common_pb2.DslType, str]] = ..., serialized_expr_plan: _Optional[bytes] = ..., output_fields_id: _Optional[_Iterable[int]] = ..., mvcc_timestamp: _Optional[int] = ..., guarantee_timestamp: _Optional[int] = ..., timeout_timestamp: _Optional[int] = ..., nq: _Optional[int] = ..., topk: _Optional[int] = ..., metricType: _Optional[str] = ..., ignoreGrowing: _Optional[bool] = ..., username: _Optional[str] = ..., sub_reqs: _Optional[_Iterable[_Union[SubSearchRequest, _Mapping]]] = ..., is_advanced: _Optional[bool] = ..., offset: _Optional[int] = ..., consistency_level: _Optional[_Union[_common_pb2.ConsistencyLevel, str]] = ..., is_topk_reduce: _Optional[bool] = ..., is_recall_evaluation: _Optional[bool] = ...) -> None: ...

class SubSearchResults(_message.Message):
    __slots__ = ("metric_type", "num_queries", "top_k", "sliced_blob", "sliced_num_count", "sliced_offset", "req_index")
    METRIC_TYPE_FIELD_NUMBER: _ClassVar[int]
    NUM_QUERIES_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    SLICED_BLOB_FIELD_NUMBER: _ClassVar[int]
    SLICED_NUM_COUNT_FIELD_NUMBER: _ClassVar[int]
    SLICED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    REQ_INDEX_FIELD_NUMBER: _ClassVar[int]
    metric_type: str
    num_queries: int
    top_k: int
    sliced_blob: bytes
    sliced_num_count: int
    sliced_offset: int
    req_index: int
    def __init__(self, metric_type: _Optional[str] = ..., num_queries: _Optional[int] = ..., top_k: _Optional[int] = ..., sliced_blob: _Optional[bytes] = ..., sliced_num_count: _Optional[int] = ..., sliced_offset: _Optional[int] = ..., req_index: _Optional[int] = ...) -> None: ...

class SearchResults(_message.Message):
    __slots__ = ("base", "status", "reqID", "metric_type", "num_queries", "top_k", "sealed_segmentIDs_searched", "channelIDs_searched", "global_sealed_segmentIDs", "sliced_blob", "sliced_num_count", "sliced_offset", "costAggregation", "channels_mvcc", "sub_results", "is_advanced", "all_search_count", "is_topk_reduce", "is_recall_evaluation")
    class ChannelsMvccEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    BASE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REQID_FIELD_NUMBER: _ClassVar[int]
    METRIC_TYPE_FIELD_NUMBER: _ClassVar[int]
    NUM_QUERIES_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    SEALED_SEGMENTIDS_SEARCHED_FIELD_NUMBER: _ClassVar[int]
    CHANNELIDS_SEARCHED_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_SEALED_SEGMENTIDS_FIELD_NUMBER: _ClassVar[int]
    SLICED_BLOB_FIELD_NUMBER: _ClassVar[int]
    SLICED_NUM_COUNT_FIELD_NUMBER: _ClassVar[int]
    SLICED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    COSTAGGREGATION_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_MVCC_FIELD_NUMBER: _ClassVar[int]
    SUB_RESULTS_FIELD_NUMBER: _ClassVar[int]
    IS_ADVANCED_FIELD_NUMBER: _ClassVar[int]
    ALL_SEARCH_COUNT_FIELD_NUMBER: _ClassVar[int]
    IS_TOPK_REDUCE_FIELD_NUMBER: _ClassVar[int]
    IS_RECALL_EVALUATION_FIELD_NUMBER: _ClassVar[int]
    base: _common_pb2.MsgBase
    status: _common_pb2.Status
    reqID: int
    metric_type: str
    num_queries: int
    top_k: int
    sealed_segmentIDs_searched: _containers.RepeatedScalarFieldContainer[int]
    channelIDs_searched: _containers.RepeatedScalarFieldContainer[str]
    global_sealed_segmentIDs: _containers.RepeatedScalarFieldContainer[int]
    sliced_blob: bytes
    sliced_num_count: int
    sliced_offset: int
    costAggregation: CostAggregation
    channels_mvcc: _containers.ScalarMap[str, int]
    sub_results: _containers.RepeatedCompositeFieldContainer[SubSearchResults]
    is_advanced: bool
    all_search_count: int
    is_topk_reduce: bool
    is_recall_evaluation: bool
    def __init__(self, base: _Optional[_Union[_common_pb2.MsgBase, _Mapping]] = ..., status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., reqID: _Optional[int] = ..., metric_type: _Optional[str] = ..., num_queries: _Optional[int] = ..., top_k: _Optional[int] = ..., sealed_segmentIDs_searched: _Optional[_Iterable[int]] = ..., channelIDs_searched: _Optional[_Iterable[str]] = ..., global_sealed_segmentIDs: _Optional[_Iterable[int]] = ..., sliced_blob: _Optional[bytes] = ..., sliced_num_count: _Optional[int] = ..., sliced_offset: _Optional[int] = ..., costAggregation: _Optional[_Union[CostAggregation, _Mapping]] = ..., channels_mvcc: _Optional[_Mapping[str, int]] = ..., sub_results: _Optional[_Iterable[_Union[SubSearchResults, _Mapping]]] = ..., is_advanced: _Optional[bool] = ..., all_search_count: _Optional[int] = ..., is_topk_reduce: _Optional[bool] = ..., is_recall_evaluation: _Optional[bool] = ...) -> None: ...

class RetrieveRequest(_message.Message):
    __slots__ = ("base", "reqID", "dbID", "collectionID", "partitionIDs", "serialized_expr_plan", "output_fields_id", "mvcc_timestamp", "guarantee_timestamp", "timeout_timestamp", "limit", "ignoreGrowing", "is_count", "iteration_extension_reduce_rate", "username", "reduce_stop_for_best")
    BASE_FIELD_NUMBER: _ClassVar[int]
    REQID_FIELD_NUMBER: _ClassVar[int]
    DBID_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONIDS_FIELD_NUMBER: _ClassVar[int]
    SERIALIZED_EXPR_PLAN_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELDS_ID_FIELD_NUMBER: _ClassVar[int]
    MVCC_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    GUARANTEE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    IGNOREGROWING_FIELD_NUMBER: _ClassVar[int]
    IS_COUNT_FIELD_NUMBER: _ClassVar[int]
    ITERATION_EXTENSION_REDUCE_RATE_FIELD_NUMBER: _ClassVar[int]
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    REDUCE_STOP_FOR_BEST_FIELD_NUMBER: _ClassVar[int]
    base: _common_pb2.MsgBase
    reqID: int
    dbID: int
    collectionID: int
    partitionIDs: _containers.RepeatedScalarFieldContainer[int]
    serialized_expr_plan: bytes
    output_fields_id: _containers.RepeatedScalarFieldContainer[int]
    mvcc_timestamp: int
    guarantee_timestamp: int
    timeout_timestamp: int
    limit: int
    ignoreGrowing: bool
    is_count: bool
    iteration_extension_reduce_rate: int
    username: str
    reduce_stop_for_best: bool
    def __init__(self, base: _Optional[_Union[_common_pb2.MsgBase, _Mapping]] = ..., reqID: _Optional[int] = ..., dbID: _Optional[int] = ..., collectionID: _Optional[int] = ..., partitionIDs: _Optional[_Iterable[int]] = ..., serialized_expr_plan: _Optional[bytes] = ..., output_fields_id: _Optional[_Iterable[int]] = ..., mvcc_timestamp: _Optional[int] = ..., guarantee_timestamp: _Optional[int] = ..., timeout_timestamp: _Optional[int] = ..., limit: _Optional[int] = ..., ignoreGrowing: _Optional[bool] = ..., is_count: _Optional[bool] = ..., iteration_extension_reduce_rate: _Optional[int] = ..., username: _Optional[str] = ..., reduce_stop_for_best: _Optional[bool] = ...) -> None: ...

class RetrieveResults(_message.Message):
    __slots__ = ("base", "status", "reqID", "ids", "fields_data", "sealed_segmentIDs_retrieved", "channelIDs_retrieved", "global_sealed_segmentIDs", "costAggregation", "all_retrieve_count", "has_more_result")
    BASE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REQID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    FIELDS_DATA_FIELD_NUMBER: _ClassVar[int]
    SEALED_SEGMENTIDS_RETRIEVED_FIELD_NUMBER: _ClassVar[int]
    CHANNELIDS_RETRIEVED_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_SEALED_SEGMENTIDS_FIELD_NUMBER: _ClassVar[int]
    COSTAGGREGATION_FIELD_NUMBER: _ClassVar[int]
    ALL_RETRIEVE_COUNT_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_RESULT_FIELD_NUMBER: _ClassVar[int]
    base: _common_pb2.MsgBase
    status: _common_pb2.Status
    reqID: int
    ids: _schema_pb2.IDs
    fields_data: _containers.RepeatedCompositeFieldContainer[_schema_pb2.FieldData]
    sealed_segmentIDs_retrieved: _containers.RepeatedScalarFieldContainer[int]
    channelIDs_retrieved: _containers.RepeatedScalarFieldContainer[str]
    global_sealed_segmentIDs: _containers.RepeatedScalarFieldContainer[int]
    costAggregation: CostAggregation
    all_retrieve_count: int
    has_more_result: bool
    def __init__(self, base: _Optional[_Union[_common_pb2.MsgBase, _Mapping]] = ..., status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., reqID: _Optional[int] = ..., ids: _Optional[_Union[_schema_pb2.IDs, _Mapping]] = ..., fields_data: _Optional[_Iterable[_Union[_schema_pb2.FieldData, _Mapping]]] = ..., sealed_segmentIDs_retrieved: _Optional[_Iterable[int]] = ..., channelIDs_retrieved: _Optional[_Iterable[str]] = ..., global_sealed_segmentIDs: _Optional[_Iterable[int]] = ..., costAggregation: _Optional[_Union[CostAggregation, _Mapping]] = ..., all_retrieve_count: _Optional[int] = ..., has_more_result: _Optional[bool] = ...) -> None: ...
