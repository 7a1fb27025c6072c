"""gRPC message limits shared by every server and client of vecgrid."""

# Milvus messages can be large (search results, load requests); gRPC's 4 MiB default is too small.
MAX_MESSAGE_BYTES = 512 * 1024 * 1024

#: Channel and server options that lift gRPC's default message limits to :data:`MAX_MESSAGE_BYTES`.
GRPC_MESSAGE_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]
