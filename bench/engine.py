"""Search-engine benchmark: vecgrid's engine against faiss called directly, same data, same run.

Data: the seeded clustered set of ``vecgrid.gpu.datasets.SyntheticDataset`` (100,000 × 128,
L2), k = 10, ``faiss.omp_set_num_threads(--threads)`` for both sides.  Measurements alternate
engine and faiss call by call so that load from other processes hits both alike; medians are
reported.

* ``qps_ratio_nq100``: engine QPS / faiss QPS for batches of 100 queries on FLAT, the median of
  the per-pair ratios of back-to-back calls (the engine
  path is ``search_segments`` — search, top-k merge with pk tie-break — plus encoding the
  ``SearchResultData``; faiss is ``index.search``).  Target >= 0.9.
* ``p50_ratio_nq1``: engine p50 latency / faiss p50 latency for single queries, FLAT.  Target <= 1.1.
* ``flat_memory_ratio``: resident memory added by loading a FLAT segment (index + primary keys),
  measured in a fresh process, / raw vector bytes (n × d × 4).  Target <= 1.2.
* filtered search at 1 %, 10 % and 50 % selectivity (``pct < p`` on an Int64 column, evaluated
  by the engine from a ``plan.Expr`` each call; faiss gets a precomputed ``IDSelectorBitmap``):
  QPS of both and recall@10 against the exact filtered neighbours, for IVF_FLAT (default
  nprobe) and HNSW (default ef).  ``filtered_recall`` is the engine's lowest over the three
  selectivities and both indexes.
* The same QPS / p50 ratios for IVF_FLAT and HNSW (extra keys).
* ``gpu``: whether a GPU engine is present.  ``--gpu`` runs only the GPU part (see
  :func:`gpu_bench`): FLAT and IVF_FLAT at 1,000,000 × 128 on the GPU engine, nq=1 p50, nq=1000
  QPS and recall@10, against PyTorch's ``cdist`` + ``topk`` on the same device and the CPU engine.

The last line printed is one JSON object with these figures.  ``--quick`` finishes in under two
minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vecgrid.gpu import build, device, require_faiss  # noqa: E402
from vecgrid.gpu import exprs  # noqa: E402
from vecgrid.gpu.datasets import SyntheticDataset, scalar_columns  # noqa: E402
from vecgrid.gpu.evaluation import knn_ground_truth, recall_at_k  # noqa: E402
from vecgrid.gpu.results import to_search_result_data  # noqa: E402
from vecgrid.gpu.loaded_segment import default_nprobe, load_segment, search_segments  # noqa: E402
from vecgrid.proto import schema_pb2  # noqa: E402

K = 10

MEMORY_PROBE = r"""
import gc, json, sys
import numpy as np
from vecgrid.gpu import device, require_faiss
from vecgrid.gpu.loaded_segment import load_segment
require_faiss()  # the library itself is not the segment's memory
path, n = sys.argv[1], int(sys.argv[2])
mgr = device.DeviceManager(use_gpu=False)
pks = np.arange(n, dtype=np.int64)
gc.collect(); device.trim_host_heap()
rss0 = device.process_rss()
seg = load_segment(path, pks, manager=mgr)
rss1 = device.process_rss()
print(json.dumps({"rss_delta": rss1 - rss0, "index_bytes": seg.index_bytes, "accounted": mgr.host.used_bytes}))
"""


def engine_call(seg, xq, k, **kw):
    topk = search_segments([seg], xq, k, **kw)
    return to_search_result_data(topk)


def alternate(fa, fb, reps):
    """Call fa and fb ``reps`` times each, in ABBA order (so drift and order favour neither);
    per-call seconds of both, pair by pair."""
    ta, tb = [], []
    fa()
    fb()  # warm-up

    def timed(f, out):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)

    for i in range(reps):
        if i % 2 == 0:
            timed(fa, ta)
            timed(fb, tb)
        else:
            timed(fb, tb)
            timed(fa, ta)
    return ta, tb


def paired_ratio(ta, tb):
    """Median over pairs of tb/ta: the speed of a relative to b, robust to load that varies over time."""
    return statistics.median(b / a for a, b in zip(ta, tb))


def throughput(seg, index, xq, params, reps, faiss_params=None, engine_params=None):
    batches = [xq[i * 100:(i + 1) * 100] for i in range(max(1, len(xq) // 100))]
    it = {"i": 0}

    def eng():
        engine_call(seg, batches[it["i"] % len(batches)], K, params=engine_params)

    def raw():
        index.search(batches[it["i"] % len(batches)], K, params=faiss_params)
        it["i"] += 1

    te, tf = alternate(eng, raw, reps)
    return 100 / statistics.median(te), 100 / statistics.median(tf), paired_ratio(te, tf)


def latency(seg, index, xq, reps, faiss_params=None, engine_params=None):
    """p50 of single-query calls, engine and faiss.  Every call searches a query neither side
    searched in the last ``len(xq) / 2`` calls: a query searched twice in a row runs 2-3x faster
    the second time (the graph / lists it walks are still in cache), and reusing the other side's
    query gave the engine one more cold call than faiss per run, which moved its median from the
    warm mode to the cold one (the same faiss call in both slots read 1.04-1.09x)."""
    it = {"eng": 0, "raw": len(xq) // 2}  # each side its own walk through the queries

    def next_query(side):
        i = it[side]
        it[side] = i + 1
        return xq[i % len(xq)][None, :]

    def eng():
        engine_call(seg, next_query("eng"), K, params=engine_params)

    def raw():
        index.search(next_query("raw"), K, params=faiss_params)

    te, tf = alternate(eng, raw, reps)
    return statistics.median(te) * 1e3, statistics.median(tf) * 1e3


def memory_ratio(xb, workdir):
    n, d = xb.shape
    path = os.path.join(workdir, "flat.idx")
    with open(path, "wb") as f:
        f.write(build.build_index_file(xb, "FLAT", "L2", use_gpu=False))
    out = subprocess.run([sys.executable, "-c", MEMORY_PROBE, path, str(n)], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    m = json.loads(out.strip().splitlines()[-1])
    raw = n * d * 4
    return m["rss_delta"] / raw, m["accounted"] / raw


def filtered(seg, index, ds, cols, faiss, kind, nprobe_or_ef, reps):
    """{sel: (engine_qps, faiss_qps, engine_recall, faiss_recall)} at 1, 10, 50 %."""
    out = {}
    xq = ds.xq[:100]
    for pct in (1, 10, 50):
        expr = exprs.compare(exprs.column(109, schema_pb2.Int64), "<", pct)
        mask = cols[109] < pct
        bits = np.packbits(mask, bitorder="little")
        sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bits))
        if kind == "ivf":
            fp = faiss.SearchParametersIVF(nprobe=nprobe_or_ef, sel=sel)
        else:
            fp = faiss.SearchParametersHNSW(efSearch=nprobe_or_ef, sel=sel)
        Dref, Iref = knn_ground_truth(xq, ds.xb, K, "L2", mask=mask)
        res = search_segments([seg], xq, K, expr=expr)
        _, Ie = res.dense()
        _, If = index.search(xq, K, params=fp)
        te, tf = alternate(lambda: engine_call(seg, xq, K, expr=expr),
                           lambda: index.search(xq, K, params=fp), reps)
        out[pct] = (100 / statistics.median(te), 100 / statistics.median(tf),
                    recall_at_k(Ie.astype(np.int64), Iref), recall_at_k(If, Iref))
        del bits
    return out


def _p50_ms(fn, queries, reps):
    times = []
    for i in range(reps):
        q = queries[i % len(queries)][None, :]
        t = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t)
    return statistics.median(times[min(5, reps // 4):]) * 1e3  # the first calls compile and warm


def _qps(fn, xq, reps):
    fn(xq)  # warm-up (kernel compilation, memory pool)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn(xq)
        times.append(time.perf_counter() - t)
    return len(xq) / statistics.median(times)


def torch_anchor(xb, xq, k, reps):
    """PyTorch brute force on the same GPU: ``torch.cdist`` + ``topk``.  ``None`` without torch/CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    dev = torch.device("cuda")
    base = torch.from_numpy(xb).to(dev)

    def search(q):
        d = torch.cdist(torch.from_numpy(q).to(dev), base)
        vals, idx = torch.topk(d, k, dim=1, largest=False)
        return idx.cpu().numpy()

    ids = search(xq)
    torch.cuda.synchronize()
    out = {"qps_nq1000": _qps(search, xq, reps), "p50_ms_nq1": _p50_ms(search, xq, 50 + 5), "ids": ids,
           "device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    base = None  # the closure's copy of the base goes with it: the memory back to the engine
    torch.cuda.empty_cache()
    return out


def gpu_bench(args) -> dict:
    """``--gpu``: the GPU engine at ``--gpu-nb`` × 128 (default 1,000,000), FLAT and IVF_FLAT (nlist
    1024): nq=1 p50 and nq=1000 QPS through ``search_segments`` (what a QueryNode calls), recall@10
    against exact neighbours, against PyTorch's ``cdist`` + ``topk`` on the same device in the same run
    and the CPU engine (faiss on the host) on the same index file."""
    nb, nq = args.gpu_nb, 1000
    reps = 5 if args.quick else 20
    ds = SyntheticDataset(d=128, nb=nb, nq=nq, seed=4321)
    pks = np.arange(nb, dtype=np.int64)
    mgr = device.DeviceManager(0.8)
    result: dict[str, object] = {"gpu_engine": mgr.engine, "gpu_nb": nb, "gpu_nq": nq}
    if not mgr.gpus:
        print("--gpu: no GPU engine in this process (no faiss-gpu, no cupy device)", flush=True)
        result["gpu"] = False
        return result
    result["gpu"] = True
    anchor = torch_anchor(ds.xb, ds.xq, K, reps)
    if anchor is not None:
        Iref = anchor.pop("ids")
        result.update({f"torch_{k}": (round(v, 4) if isinstance(v, float) else v) for k, v in anchor.items()})
        print(f"PyTorch cdist+topk on {anchor['device']}: nq=1000 {anchor['qps_nq1000']:,.0f} QPS, "
              f"nq=1 p50 {anchor['p50_ms_nq1']:.3f} ms", flush=True)
    else:
        _, Iref = knn_ground_truth(ds.xq, ds.xb, K, "L2")
    for itype, params, sweep in (("FLAT", {}, [None]), ("IVF_FLAT", {"nlist": 1024}, [8, 16, 32, 64])):
        t = time.perf_counter()
        data = build.build_index_file(ds.xb, itype, "L2", params, manager=mgr)
        build_s = time.perf_counter() - t
        t = time.perf_counter()
        g = load_segment(data, pks, manager=mgr)
        load_s = time.perf_counter() - t
        c = load_segment(data, pks, manager=mgr, prefer_gpu=False)
        del data
        name = itype.lower()
        result[f"{name}_placement"] = g.placement
        result[f"{name}_engine"] = g.info["engine"]
        result[f"{name}_build_s"], result[f"{name}_gpu_load_s"] = round(build_s, 1), round(load_s, 2)
        for nprobe in sweep:
            sp = {"nprobe": nprobe} if nprobe else None
            tag = f"{name}_nprobe{nprobe}" if nprobe else name

            def run_gpu(q, sp=sp):
                return search_segments([g], q, K, params=sp)

            def run_cpu(q, sp=sp):
                return search_segments([c], q, K, params=sp)

            ids = run_gpu(ds.xq).dense()[1].astype(np.int64)
            recall = recall_at_k(ids, Iref)
            qps = _qps(run_gpu, ds.xq, reps)
            p50 = _p50_ms(run_gpu, ds.xq, 200 + 5)
            cpu_qps = _qps(run_cpu, ds.xq, 1 if itype == "FLAT" else 3)
            cpu_p50 = _p50_ms(run_cpu, ds.xq, 20 + 5)
            cpu_ids = run_cpu(ds.xq[:100]).dense()[1].astype(np.int64)
            result.update({f"{tag}_gpu_qps_nq1000": round(qps, 1), f"{tag}_gpu_p50_ms_nq1": round(p50, 4),
                           f"{tag}_recall_at_10": round(recall, 4), f"{tag}_cpu_qps_nq1000": round(cpu_qps, 1),
                           f"{tag}_cpu_p50_ms_nq1": round(cpu_p50, 4),
                           f"{tag}_gpu_cpu_same_ids": round(recall_at_k(ids[:100], cpu_ids), 4)})
            if anchor is not None:
                result[f"{tag}_qps_over_torch"] = round(qps / anchor["qps_nq1000"], 3)
            print(f"{nb:,} x 128 {itype}{f' nprobe={nprobe}' if nprobe else ''} ({g.placement}, "
                  f"{g.info['engine']}): nq=1000 {qps:,.0f} QPS, nq=1 p50 {p50:.3f} ms, recall@10 {recall:.4f} | "
                  f"CPU engine {cpu_qps:,.0f} QPS, p50 {cpu_p50:.3f} ms", flush=True)
        g.release()
        c.release()
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (under 2 minutes on 2 cores)")
    ap.add_argument("--nb", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--gpu", action="store_true",
                    help="only the GPU engine at --gpu-nb x 128 against PyTorch on the same device and the CPU engine")
    ap.add_argument("--gpu-nb", type=int, default=1_000_000)
    args = ap.parse_args()
    if args.gpu:
        t0 = time.perf_counter()
        result = gpu_bench(args)
        result["seconds"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(result))
        return 0
    faiss = require_faiss()
    faiss.omp_set_num_threads(args.threads)
    reps_q = 16 if args.quick else 60
    reps_1 = 151 if args.quick else 1001
    reps_f = 5 if args.quick else 20
    t_start = time.perf_counter()

    ds = SyntheticDataset(d=128, nb=args.nb, nq=1000, seed=1234)
    cols = scalar_columns(args.nb, seed=7)
    pks = np.arange(args.nb, dtype=np.int64)
    mgr = device.DeviceManager(0.8, use_gpu=False)  # host vs faiss-cpu: same hardware
    gpu = device.gpu_count() > 0
    print(f"data {args.nb:,} x 128 clustered, k={K}, {args.threads} faiss threads, "
          f"faiss {faiss.__version__}, GPU: {gpu}", flush=True)
    result: dict[str, object] = {}

    # FLAT -----------------------------------------------------------------------------------
    seg = load_segment(build.build_index_file(ds.xb, "FLAT", "L2", use_gpu=False), pks, columns=cols, manager=mgr)
    raw_flat = faiss.IndexFlatL2(128)
    raw_flat.add(ds.xb)
    eq, fq, qr = throughput(seg, raw_flat, ds.xq, None, reps_q)
    el, fl = latency(seg, raw_flat, ds.xq, reps_1)
    print(f"FLAT nq=100: engine {eq:,.0f} QPS, faiss {fq:,.0f} QPS (paired ratio {qr:.3f}); "
          f"nq=1 p50: engine {el:.3f} ms, faiss {fl:.3f} ms (ratio {el / fl:.3f})", flush=True)
    result.update(qps_ratio_nq100=round(qr, 3), p50_ratio_nq1=round(el / fl, 3),
                  flat_qps_nq100=round(eq, 1), faiss_flat_qps_nq100=round(fq, 1),
                  flat_p50_ms_nq1=round(el, 4), faiss_flat_p50_ms_nq1=round(fl, 4))
    seg.release()
    del raw_flat

    with tempfile.TemporaryDirectory(prefix="vecgrid-bench-engine-") as tmp:
        rss_ratio, accounted_ratio = memory_ratio(ds.xb, tmp)
    print(f"FLAT loaded memory: {rss_ratio:.3f} x raw vector bytes (RSS), {accounted_ratio:.3f} x accounted",
          flush=True)
    result.update(flat_memory_ratio=round(rss_ratio, 3), flat_memory_accounted_ratio=round(accounted_ratio, 3))

    # IVF_FLAT and HNSW ---------------------------------------------------------------------------
    recalls = []
    for itype, kind in (("IVF_FLAT", "ivf"), ("HNSW", "hnsw")):
        built = build.build_index(ds.xb, itype, "L2", use_gpu=False)
        raw = built.index  # the very same faiss index, called directly
        seg = load_segment(built.to_bytes(), pks, columns=cols, manager=mgr)
        if kind == "ivf":
            knob = default_nprobe(128)
            fparams = faiss.SearchParametersIVF(nprobe=knob)
        else:
            knob = max(64, K)
            fparams = faiss.SearchParametersHNSW(efSearch=knob)
        eq, fq, qr = throughput(seg, raw, ds.xq, None, reps_q, faiss_params=fparams)
        el, fl = latency(seg, raw, ds.xq, reps_1, faiss_params=fparams)
        name = itype.lower()
        print(f"{itype} nq=100: engine {eq:,.0f} QPS, faiss {fq:,.0f} QPS (paired ratio {qr:.3f}); "
              f"nq=1 p50: engine {el:.3f} ms, faiss {fl:.3f} ms (ratio {el / fl:.3f})", flush=True)
        result.update({f"{name}_qps_ratio_nq100": round(qr, 3), f"{name}_p50_ratio_nq1": round(el / fl, 3)})
        f = filtered(seg, raw, ds, cols, faiss, kind, knob, reps_f)
        for pct, (e_qps, f_qps, e_rec, f_rec) in f.items():
            print(f"  filtered {pct:>2}%: engine {e_qps:,.0f} QPS recall {e_rec:.4f} | "
                  f"faiss+IDSelector {f_qps:,.0f} QPS recall {f_rec:.4f}", flush=True)
            result[f"{name}_filtered_{pct}pct_qps"] = round(e_qps, 1)
            result[f"{name}_filtered_{pct}pct_recall"] = round(e_rec, 4)
            result[f"faiss_{name}_filtered_{pct}pct_qps"] = round(f_qps, 1)
            result[f"faiss_{name}_filtered_{pct}pct_recall"] = round(f_rec, 4)
            recalls.append(e_rec)
        seg.release()
        del raw, built
    result["filtered_recall"] = round(min(recalls), 4)

    result["gpu"] = gpu  # the GPU figures: --gpu
    result["seconds"] = round(time.perf_counter() - t_start, 1)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
