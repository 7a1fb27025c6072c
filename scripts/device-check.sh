#!/usr/bin/env bash
# The GPU path on a GPU, in one call of at most ~9 minutes: the GPU tests, a small GPU cluster that
# must report InGPU, and the GPU engine benchmark at 1,000,000 x 128.  Figures and logs go to $OUT
# (a temporary folder when unset); the last line printed is one JSON summary.
#
# Made for a machine with CUDA, Python 3.12 and cupy but without faiss or network (the lent device):
# the wheels vecgrid needs beyond what such a machine has are carried in .whl/ (ignored by git):
#
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64 -d .whl \
#     faiss-cpu==1.15.1 dask==2026.8.0 distributed==2026.8.0 tornado==6.6.1 grpcio==1.85.1 \
#     grpcio-health-checking==1.85.1 grpcio-reflection==1.85.1 protobuf==7.36.2 qs-codec==1.6.3 \
#     PyJWT==2.15.1 argon2-cffi==25.1.0 argon2-cffi-bindings==26.2.0 cffi==2.1.1 pycparser==3.12 \
#     orjson==3.13.0 tblib==3.2.2 zict==3.0.0 partd==1.4.2 locket==1.0.0
#
# (29 MB; with the working tree under 40 MB.)  Then, from the repository root: scripts/device-check.sh
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
TMP=$(mktemp -d)  # what goes into the summary only ($OUT brings back at most 8 files)
PY=${PYTHON:-python3}
if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/vecgrid-site \
        .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/vecgrid-site:$PWD
else
    export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$TMP/gpu.txt" 2>&1
"$PY" - > "$TMP/versions.json" <<'EOF'
import json, cupy, faiss, numpy
from vecgrid.gpu import device
print(json.dumps({"cupy": cupy.__version__, "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
                  "faiss": faiss.__version__, "numpy": numpy.__version__, "engine": device.gpu_engine(),
                  "gpus": device.gpu_count()}))
EOF

SECONDS=0
timeout 120 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_cupy.py tests/test_gpu_cuda.py \
    > "$OUT/pytest_gpu.log" 2>&1
tests_rc=$?
timeout 40 "$PY" -m pytest -q -p no:cacheprovider tests/test_cupy_engine.py > "$OUT/pytest_engine.log" 2>&1
engine_tests_rc=$?
tests_s=$SECONDS

SECONDS=0
timeout 240 "$PY" bench/engine.py --gpu --quick > "$OUT/bench_engine_gpu.log" 2>&1
bench_rc=$?
tail -n 1 "$OUT/bench_engine_gpu.log" > "$TMP/bench_engine_gpu.json"
bench_s=$SECONDS

SECONDS=0
timeout 150 "$PY" scripts/device_cluster_check.py > "$OUT/cluster_check.log" 2>&1
cluster_rc=$?
tail -n 1 "$OUT/cluster_check.log" > "$TMP/cluster_check.json"
cluster_s=$SECONDS

tail -n 3 "$OUT/pytest_gpu.log" "$OUT/pytest_engine.log"
grep -E "QPS|p50" "$OUT/bench_engine_gpu.log"
json_or_null() { if [ -s "$1" ] && "$PY" -c "import json,sys; json.load(open(sys.argv[1]))" "$1" 2>/dev/null; then cat "$1"; else echo null; fi; }
echo "{\"gpu\": \"$(head -n 1 "$TMP/gpu.txt")\", \"tests_rc\": $tests_rc, \"engine_tests_rc\": $engine_tests_rc," \
     "\"tests_s\": $tests_s, \"bench_rc\": $bench_rc, \"bench_s\": $bench_s, \"cluster_rc\": $cluster_rc," \
     "\"cluster_s\": $cluster_s, \"versions\": $(json_or_null "$TMP/versions.json")," \
     "\"bench\": $(json_or_null "$TMP/bench_engine_gpu.json"), \"cluster\": $(json_or_null "$TMP/cluster_check.json")}" \
    | tee "$OUT/summary.json"
