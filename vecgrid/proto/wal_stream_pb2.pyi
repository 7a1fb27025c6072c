from vecgrid.proto import msg_pb2 as _msg_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReadRequest(_message.Message):
    __slots__ = ("channel", "start", "inclusive", "latest")
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    INCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    LATEST_FIELD_NUMBER: _ClassVar[int]
    channel: str
    start: _msg_pb2.MsgPosition
    inclusive: bool
    latest: bool
    def __init__(self, channel: _Optional[str] = ..., start: _Optional[_Union[_msg_pb2.MsgPosition, _Mapping]] = ..., inclusive: _Optional[bool] = ..., latest: _Optional[bool] = ...) -> None: ...

class Record(_message.Message):
    __slots__ = ("position", "kind", "payload")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    position: _msg_pb2.MsgPosition
    kind: int
    payload: bytes
    def __init__(self, position: _Optional[_Union[_msg_pb2.MsgPosition, _Mapping]] = ..., kind: _Optional[int] = ..., payload: _Optional[bytes] = ...) -> None: ...
