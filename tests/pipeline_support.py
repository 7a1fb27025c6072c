"""The channel-pipeline tests' collection: a pk, an 8-dim vector and an age column."""

from __future__ import annotations

from vecgrid.proto import common_pb2, schema_pb2

DIM = 8
COLL = 7
SCHEMA = schema_pb2.CollectionSchema(name="c", fields=[
    schema_pb2.FieldSchema(fieldID=100, name="pk", data_type=schema_pb2.Int64, is_primary_key=True),
    schema_pb2.FieldSchema(fieldID=101, name="v", data_type=schema_pb2.FloatVector,
                           type_params=[common_pb2.KeyValuePair(key="dim", value=str(DIM))]),
    schema_pb2.FieldSchema(fieldID=102, name="age", data_type=schema_pb2.Int64),
])
