"""The floor of one HTTP hop: a bare Tornado JSON handler answering searches from a faiss index.

    python bench/http_floor.py INDEX_FILE NPROBE

Serves ``POST /search`` on a free localhost port and prints the port on one line.  Per request it
does only what any Python JSON search server must: decode ``{"vectors": [[...]], "limit": k}`` with
orjson, one ``index.search``, encode ``[[{"id", "distance"}, ...], ...]`` with orjson — no framework,
no hooks, no auth, no cluster.  faiss keeps its default OpenMP threads (one per core).
"""

from __future__ import annotations

import asyncio
import os
import sys

import numpy as np
import orjson
import tornado.web

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vecgrid.gpu.build import read_index_file  # noqa: E402
from vecgrid.gpu import require_faiss  # noqa: E402


async def main(path: str, nprobe: int) -> None:
    faiss = require_faiss()   # as vecgrid loads it: OpenBLAS kernels for this CPU, same BLAS threshold

    index, _ = read_index_file(path)
    params = faiss.SearchParametersIVF(nprobe=nprobe)

    class Search(tornado.web.RequestHandler):
        def post(self) -> None:
            body = orjson.loads(self.request.body)
            xq = np.asarray(body["vectors"], dtype=np.float32)
            D, I = index.search(xq, int(body["limit"]), params=params)
            hits = [[{"id": int(i), "distance": float(d)} for d, i in zip(drow, irow)] for drow, irow in zip(D, I)]
            self.set_header("Content-Type", "application/json")
            self.finish(orjson.dumps(hits))

    app = tornado.web.Application([(r"/search", Search)])
    server = app.listen(0, "127.0.0.1")
    port = next(iter(server._sockets.values())).getsockname()[1]
    print(port, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
