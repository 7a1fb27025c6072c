"""Constants every layer shares, as Milvus's ``pkg/common``: the wire property keys vecgrid adds
to Milvus messages and the gRPC message limits.  Imports nothing from vecgrid."""
