#!/usr/bin/env bash
# The scored pass's time per call, read from polyprof's CUPTI tracer (src/profilers/ncu/trace.c:
# the GPU time of what ran between the harness's call marks, src/eval/timeline.rs), against
# plain ncu's gpu__time_duration of the same candidate's calls, side by side in one run, on a
# CUDA machine (nvcc, CUPTI, ncu, torch, triton).
#
#   scripts/bench-eval-timeline.sh OUTDIR
#
# For each honest candidate of scripts/eval-timeline/candidates/ (cuBLAS, Triton, inline CUDA):
#  - traced: the candidate's worker (python/polyprof/harness) under the tracer, 2 timing blocks
#    of 20 calls with the L2 flushed before each (the worker's timing, CUDA graphs below
#    0.1 ms), the median over blocks of each block's median call;
#  - ncu: the same worker under `ncu --metrics gpu__time_duration.sum --cache-control all
#    --clock-control none --profile-from-start off`, BENCH_NCU_CALLS (default 6) calls on fresh
#    inputs after one unprofiled call, the launches summed per call, the median call;
# then traced/ncu, and whether it is within 3 % (the goal for calls above 10 us).
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$1
mkdir -p "$OUT"
SRC=$ROOT/scripts/eval-timeline
HARNESS=$ROOT/python/polyprof/harness
NVCC=$(readlink -f "$(command -v nvcc)")
CUDA=$(dirname "$(dirname "$NVCC")")
INC=""; LIB=""
for d in include targets/x86_64-linux/include extras/CUPTI/include; do
  if [ -z "$INC" ] && [ -f "$CUDA/$d/cupti.h" ]; then INC="$CUDA/$d"; fi
done
for d in lib64 targets/x86_64-linux/lib extras/CUPTI/lib64; do
  if [ -z "$LIB" ] && [ -e "$CUDA/$d/libcupti.so" ]; then LIB="$CUDA/$d"; fi
done
TRACER=$OUT/libpolyprof_trace.so
nvcc -shared -Xcompiler -fPIC -O2 -I"$INC" -L"$LIB" -Xlinker -rpath="$LIB" -lcupti \
  -o "$TRACER" "$ROOT/src/profilers/ncu/trace.c"
CALLS=${BENCH_NCU_CALLS:-6}
printf '%-24s %10s %10s %12s %s\n' candidate traced_ms ncu_ms traced/ncu within_3%
for pair in honest_matmul_cublas:matmul honest_add_triton:add honest_relu_inline:relu; do
  name=${pair%%:*}
  problem=${pair#*:}
  python3 "$SRC/capture.py" --harness "$HARNESS" --tracer "$TRACER" --reference "$SRC/problems/$problem.py" \
    --candidate "$SRC/candidates/$name.py" --out "$OUT/$name" > "$OUT/$name.log" 2>&1
  python3 "$SRC/capture.py" --harness "$HARNESS" --reference "$SRC/problems/$problem.py" --trials $((CALLS + 1)) \
    --candidate "$SRC/candidates/$name.py" --out "$OUT/$name.ncu" --ncu "$(command -v ncu)" > "$OUT/$name.ncu.log" 2>&1
  python3 "$SRC/timeline_time.py" "$OUT/$name" "$OUT/$name.ncu" --row "$name"
done | tee "$OUT/summary.txt"
