"""The floor of Milvus's own API in Python: a minimal ``MilvusService`` answering pymilvus's searches
from a faiss index, one process, one hop.

    python bench/milvus_floor.py INDEX_FILE NPROBE

Serves on a free localhost port and prints it on one line.  It answers what pymilvus calls to search
a collection named ``bench`` (Connect, DescribeCollection, Search) and per search does only what any
Python server of this API must: decode the request and its placeholder group, one ``index.search``,
encode ``SearchResults``.  pymilvus against it is what a one-hop Python server costs, the yardstick of
vecgrid's coordinator plus its leader's hop (``bench/milvus_api.py``).
"""

from __future__ import annotations

import asyncio
import os
import sys

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from grpc_floor import serve  # noqa: E402  (bench/ is on sys.path: the script's own folder)
from vecgrid.gpu.build import read_index_file  # noqa: E402
from vecgrid.gpu import require_faiss  # noqa: E402
from vecgrid.proto import common_pb2, milvus_pb2, schema_pb2  # noqa: E402


async def main(path: str, nprobe: int) -> None:
    faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold

    index, _ = read_index_file(path)
    params = faiss.SearchParametersIVF(nprobe=nprobe)
    dim = index.d
    schema = schema_pb2.CollectionSchema(name="bench", fields=[
        schema_pb2.FieldSchema(fieldID=100, name="id", data_type=schema_pb2.Int64, is_primary_key=True),
        schema_pb2.FieldSchema(fieldID=101, name="vector", data_type=schema_pb2.FloatVector,
                               type_params=[common_pb2.KeyValuePair(key="dim", value=str(dim))])])

    async def connect(req, context):
        return milvus_pb2.ConnectResponse(status=common_pb2.Status(), identifier=1)

    async def describe(req, context):
        return milvus_pb2.DescribeCollectionResponse(status=common_pb2.Status(), schema=schema, collectionID=1,
                                                     collection_name="bench")

    async def search(req: milvus_pb2.SearchRequest, context) -> milvus_pb2.SearchResults:
        group = common_pb2.PlaceholderGroup.FromString(req.placeholder_group)
        xq = np.frombuffer(b"".join(group.placeholders[0].values), dtype="<f4").reshape(-1, dim)
        k = int(next(p.value for p in req.search_params if p.key == "topk"))
        D, I = index.search(xq, k, params=params)
        srd = schema_pb2.SearchResultData(num_queries=len(xq), top_k=k, scores=D.ravel().tolist(),
                                          topks=[k] * len(xq), primary_field_name="id")
        srd.ids.int_id.data.extend(I.ravel().tolist())
        return milvus_pb2.SearchResults(status=common_pb2.Status(), results=srd, collection_name="bench")

    methods = {"Connect": (connect, milvus_pb2.ConnectRequest, milvus_pb2.ConnectResponse),
               "DescribeCollection": (describe, milvus_pb2.DescribeCollectionRequest,
                                      milvus_pb2.DescribeCollectionResponse),
               "Search": (search, milvus_pb2.SearchRequest, milvus_pb2.SearchResults)}
    handler = grpc.method_handlers_generic_handler("milvus.proto.milvus.MilvusService", {
        name: grpc.unary_unary_rpc_method_handler(fn, request_deserializer=req.FromString,
                                                  response_serializer=reply.SerializeToString)
        for name, (fn, req, reply) in methods.items()})
    await serve(handler)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
