"""vecgrid: a GPU-backed vector search cluster speaking Milvus's QueryCoord/QueryNode gRPC.

Importing the package is cheap and needs no faiss; the engine imports faiss lazily
through :func:`vecgrid.gpu.require_faiss`, which says which extra to install.
"""

__version__ = "0.1.0"

# The Milvus wire definitions our protos reproduce (see vecgrid/proto).
MILVUS_PROTO_PIN = "milvus 2.4 (4516e1db70, v2.4.23) / milvus-proto v2.4.22"
