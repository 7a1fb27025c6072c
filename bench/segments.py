"""What sealed segments cost a search: one IVF index over every row against the same rows in S segments
that share its trained quantizer, searched by faiss segment by segment and by vecgrid's engine.

    .venv/bin/python bench/segments.py [--quick] [--rows N] [--segments S] [--nlist N] [--index IVF_SQ8]

``bench/scale.py`` compares a loaded collection with one faiss index of all its rows.  A collection is
sealed segments (``datacoord.segment_max_rows``: 10 of them at 10,000,000 rows), each with its own
inverted lists, so a search probes its ``nprobe`` lists in every segment: S short scans and S result
heaps where the one index makes one long scan and one heap.  This bench splits that gap in one process,
without the hop:

* ``faiss_one``: one index of every row (the floor's index): ``index.search``;
* ``faiss_segments``: the S segments' own faiss indexes (the same objects the engine searches): the
  queries assigned to lists once by the shared quantizer, ``search_preassigned`` on each segment, the
  S results merged by ``faiss.ResultHeap`` — what any system that keeps segments must do at least;
* ``engine``: ``vecgrid.gpu.loaded_segment.search_segments`` over the S segments as a query node loads
  them (built with one trained index, loaded as a node loads a build), keys and merge included.

``segments_vs_one`` (nq=1: p50 ms over; nq=100: QPS ratio) is what segmentation itself costs;
``engine_vs_segments`` what vecgrid's engine adds to it.  Sides are called in turn call by call
(``bench/_timing.py``); faiss may use every core on every side, the engine's fan-out included.

Data: ``bench/scale.py``'s clustered vectors (seeded, 128 dimensions); nprobe 16, k = 10.  Defaults
10,000,000 rows, 10 segments, nlist 4096, IVF_SQ8 (1.3 GB of codes, twice); ``--quick`` 1,000,000 rows,
nlist 1024.  The last line is one JSON object.  Run from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import side_figures  # noqa: E402
from scale import clustered_chunks  # noqa: E402

from vecgrid.gpu.build import build_index  # noqa: E402
from vecgrid.gpu.device import require_faiss  # noqa: E402
from vecgrid.gpu.loaded_segment import load_segment, search_segments  # noqa: E402

K, NPROBE = 10, 16


def build(rows: int, segments: int, index_type: str, nlist: int) -> tuple[list, object, np.ndarray, float]:
    """The S loaded segments (vecgrid's build, one trained index lent to the rest), the one index of
    every row (the segments' lists merged into a copy of the trained index), and queries near the data."""
    faiss = require_faiss()
    per = -(-rows // segments)
    data = np.empty((rows, 128), dtype=np.float32)
    for lo, x in clustered_chunks(rows):
        data[lo:lo + len(x)] = x
    queries = data[:1000] + np.random.default_rng(9).standard_normal((1000, 128), dtype=np.float32) * 0.1
    started = time.perf_counter()
    loaded, trained = [], None
    for s, lo in enumerate(range(0, rows, per)):
        built = build_index(data[lo:lo + per], index_type, "L2", {"nlist": nlist}, use_gpu=False, trained=trained)
        trained = trained if trained is not None else built.trained
        loaded.append(load_segment(built, np.arange(lo, lo + built.index.ntotal, dtype=np.int64), segment_id=s + 1,
                                   prefer_gpu=False))
    del data
    one = faiss.clone_index(trained)
    for seg in loaded:
        one.merge_from(faiss.clone_index(seg.index), one.ntotal)
    assert len({seg.quantizer_key for seg in loaded}) == 1, "the segments must share their quantizer"
    return loaded, one, queries, time.perf_counter() - started


def sides(loaded: list, one: object, queries: np.ndarray, nq: int) -> dict:
    faiss = require_faiss()
    params = faiss.SearchParametersIVF(nprobe=NPROBE)
    ivfs = [faiss.extract_index_ivf(seg.index) for seg in loaded]
    for ivf in ivfs:   # search_preassigned takes no params here: the engine passes its own to every call
        ivf.nprobe = NPROBE
    quantizer = ivfs[0].quantizer
    batches = [np.ascontiguousarray(queries[i * nq % 1000:][:nq]) for i in range(1000 // nq)]

    def faiss_one(xq: np.ndarray) -> np.ndarray:
        return one.search(xq, K, params=params)[1]

    def faiss_segments(xq: np.ndarray) -> np.ndarray:
        # one query on one thread: spread over its queries (parallel_mode 3, as the engine sets it), one
        # query leaves the other OpenMP threads waiting at every segment's barrier
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(min(threads, len(xq)))
        try:
            coarse_d, coarse_i = quantizer.search(xq, NPROBE)
            heap = faiss.ResultHeap(len(xq), K)
            for lo, ivf in zip(range(0, one.ntotal, loaded[0].num_rows), ivfs):
                d, i = ivf.search_preassigned(xq, K, coarse_i, coarse_d)
                heap.add_result(d, np.where(i >= 0, i + lo, -1))
            heap.finalize()
        finally:
            faiss.omp_set_num_threads(threads)
        return heap.I

    def engine(xq: np.ndarray) -> np.ndarray:
        return search_segments(loaded, xq, K, params={"nprobe": NPROBE}).dense()[1]

    # the three find the same rows (ties apart): the same lists probed, the same codes compared
    check = batches[0]
    same = [float(np.mean([len(set(a) & set(b)) / K for a, b in zip(fn(check), faiss_one(check))]))
            for fn in (faiss_segments, engine)]
    assert min(same) > 0.95, f"the sides disagree: {same}"

    def timed(fn):
        async def call(i: int) -> None:
            fn(batches[i % len(batches)])
        return call

    rounds = 40 if nq > 1 else 200
    return asyncio.run(side_figures({"faiss_one": timed(faiss_one), "faiss_segments": timed(faiss_segments),
                                     "engine": timed(engine)}, nq, rounds))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1,000,000 rows, nlist 1024")
    ap.add_argument("--rows", type=int, help="rows (default 10,000,000; --quick 1,000,000)")
    ap.add_argument("--segments", type=int, default=10, help="sealed segments (default 10)")
    ap.add_argument("--nlist", type=int, help="IVF lists (default 4096; --quick 1024)")
    ap.add_argument("--index", default="IVF_SQ8", choices=["IVF_FLAT", "IVF_SQ8"])
    args = ap.parse_args()
    rows = args.rows or (1_000_000 if args.quick else 10_000_000)
    nlist = args.nlist or (1024 if args.quick else 4096)
    require_faiss().omp_set_num_threads(os.cpu_count() or 1)
    loaded, one, queries, build_s = build(rows, args.segments, args.index, nlist)
    out: dict = {"index": args.index, "rows": rows, "segments": len(loaded), "nlist": nlist, "nprobe": NPROBE,
                 "k": K, "build_s": round(build_s, 1)}
    out.update(sides(loaded, one, queries, 1))
    out.update(sides(loaded, one, queries, 100))
    out["segments_p50_ms_over_one"] = round(out["faiss_segments_p50_ms_nq1"] - out["faiss_one_p50_ms_nq1"], 3)
    out["engine_p50_ms_over_segments"] = round(out["engine_p50_ms_nq1"] - out["faiss_segments_p50_ms_nq1"], 3)
    out["engine_p50_ms_over_one"] = round(out["engine_p50_ms_nq1"] - out["faiss_one_p50_ms_nq1"], 3)
    out["segments_qps_nq100_vs_one"] = round(out["faiss_segments_qps_nq100"] / out["faiss_one_qps_nq100"], 3)
    out["engine_qps_nq100_vs_segments"] = round(out["engine_qps_nq100"] / out["faiss_segments_qps_nq100"], 3)
    out["engine_qps_nq100_vs_one"] = round(out["engine_qps_nq100"] / out["faiss_one_qps_nq100"], 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
