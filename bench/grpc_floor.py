"""The floor of one gRPC hop: a minimal Python server answering ``QueryNode.Search`` from a faiss index.

    python bench/grpc_floor.py INDEX_FILE NPROBE

Serves on a free localhost port and prints it on one line.  Per call it does only what any
Python search server must: decode the request and its placeholder group, one ``index.search``,
encode ``SearchResultData`` into the reply — no plan, no snapshot, no merge.  It answers the
same request bytes a shard leader gets, so a client can time both with one stub.  faiss keeps its
default OpenMP threads (one per core), as the issue's floor did.
"""

from __future__ import annotations

import asyncio
import os
import sys

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vecgrid.gpu.build import read_index_file  # noqa: E402
from vecgrid.gpu import require_faiss  # noqa: E402
from vecgrid.gpu.results import encode_placeholder_group  # noqa: E402
from vecgrid.proto import common_pb2, internal_pb2, query_coord_pb2, schema_pb2  # noqa: E402


def search_request(queries: np.ndarray, k: int) -> query_coord_pb2.SearchRequest:
    """What this server reads of a Search: the placeholder group and k (a client's request to it)."""
    inner = internal_pb2.SearchRequest(placeholder_group=encode_placeholder_group(queries), nq=len(queries), topk=k)
    return query_coord_pb2.SearchRequest(req=inner)


def hit_lists(srd: schema_pb2.SearchResultData) -> list[tuple[list, list]]:
    """Every query's ids and distances as Python lists: the least a client reads of a reply."""
    ids, scores = list(srd.ids.int_id.data), list(srd.scores)
    out, first = [], 0
    for n in srd.topks:
        out.append((ids[first:first + n], scores[first:first + n]))
        first += n
    return out


async def client_search(stub, queries: np.ndarray, k: int) -> list[tuple[list, list]]:
    """A client's search of this server: the queries encoded, the hits read back (:func:`hit_lists`)."""
    reply = await stub.Search(search_request(queries, k), timeout=120)
    return hit_lists(schema_pb2.SearchResultData.FromString(reply.sliced_blob))


async def main(path: str, nprobe: int) -> None:
    faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold

    index, _ = read_index_file(path)
    params = faiss.SearchParametersIVF(nprobe=nprobe)
    dim = index.d

    async def search(req: query_coord_pb2.SearchRequest, context) -> internal_pb2.SearchResults:
        inner = req.req
        group = common_pb2.PlaceholderGroup.FromString(inner.placeholder_group)
        xq = np.frombuffer(b"".join(group.placeholders[0].values), dtype="<f4").reshape(-1, dim)
        k = inner.topk
        D, I = index.search(xq, k, params=params)
        srd = schema_pb2.SearchResultData(num_queries=len(xq), top_k=k, scores=D.ravel().tolist(),
                                          topks=[k] * len(xq))
        srd.ids.int_id.data.extend(I.ravel().tolist())
        return internal_pb2.SearchResults(status=common_pb2.Status(), metric_type="L2", num_queries=len(xq),
                                          top_k=k, sliced_blob=srd.SerializeToString(), sliced_num_count=1)

    handler = grpc.method_handlers_generic_handler(
        "milvus.proto.query.QueryNode",
        {
            "Search": grpc.unary_unary_rpc_method_handler(
                search,
                request_deserializer=query_coord_pb2.SearchRequest.FromString,
                response_serializer=internal_pb2.SearchResults.SerializeToString,
            )
        },
    )
    await serve(handler)


async def serve(handler: grpc.GenericRpcHandler) -> None:
    """Serve ``handler`` on a free localhost port, print the port on one line, run until killed."""
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(port, flush=True)
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
