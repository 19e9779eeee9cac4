#!/usr/bin/env bash
# Live checks of the user-reported defects that need a GPU (written for the H200 lane).
#
#   scripts/gpu-defects.sh POLYPROF_BINARY [OUTPUT_DIR] [TRIES]
#
# Needs ncu (through the CUDA toolkit's launcher script, as users call it), nvcc and python3 with
# PyTorch; run from the repository root. summary.txt in OUTPUT_DIR is the short report.
#  1. A timeout after ncu profiled 4 launches: `run --timeout 8` of `sh -c "./loop; exec sleep 600"`
#     through the launcher `ncu` (a script that starts the real binary), TRIES times; every try
#     must keep all 4 kernels. Then the same as a `batch` job that hangs past its timeout_s.
#  2. A cuBLAS FP8 matmul (tests/fixtures/ncu-h200-fp8/fp8.py): its tensor FLOP/s and % of the
#     clock-scaled peak, never above 100 % without a diagnostic.
#  3. Kernels templated on a function, an operator and an unsigned long (kf<&sq>, kcmp<&operator<>,
#     kul<3>): each short name polyprof prints, given back to `--kernel`, records exactly one
#     launch of that kernel.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 POLYPROF_BINARY [OUTPUT_DIR] [TRIES]" >&2; exit 2; }
polyprof="$(realpath "$1")"
out="$(realpath -m "${2:-./gpu-defects-out}")"
tries="${3:-3}"
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
source "$root/scripts/gpu-steps.sh"
failures=0
fail() { failures=$((failures + 1)); say "FAIL: $*"; }

ncu_launcher="$(command -v ncu)"
say "== ncu is $ncu_launcher -> $(readlink -f "$ncu_launcher") ($(file -b "$(readlink -f "$ncu_launcher")" | cut -d, -f1))"
cat >"$out/loop.cu" <<'CU'
#include <cstdio>
__global__ void spin(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) for (int k = 0; k < 2000; ++k) x[i] = x[i] * 0.999f + 1.0f;
}
int main() {
  const int n = 1 << 22;
  float *x;
  cudaMalloc(&x, n * sizeof(float));
  for (int launch = 0; launch < 4; ++launch) spin<<<(n + 255) / 256, 256>>>(x, n);
  cudaDeviceSynchronize();
  printf("4 launches done\n");
  return 0;
}
CU
nvcc -O3 -arch=sm_90 -o "$out/loop" "$out/loop.cu" || fail "nvcc loop.cu"

kernels_of() {  # kernels in a run directory, by polyprof's own report
  "$polyprof" report "$1" --format json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d.get("kernels", [])))' 2>/dev/null || echo 0
}

say "== 1. timeout through the ncu launcher, $tries tries"
for try in $(seq 1 "$tries"); do
  dir="$out/timeout.$try"
  step "timeout.$try" 120 "$polyprof" run --profiler ncu --timeout 8 --ncu-binary "$ncu_launcher" \
    --output-dir "$dir" -- sh -c "$out/loop; exec sleep 600"
  rc=$(cat "$out/timeout.$try.rc")
  kept=$(kernels_of "$dir")
  say "   try $try: exit $rc, wall $(wall "timeout.$try") s, kernels kept $kept of 4"
  [ "$kept" = 4 ] || fail "timeout try $try kept $kept of 4 kernels"
done

cat >"$out/jobs.jsonl" <<JOBS
{"id": "hangs-after-4", "target": ["sh", "-c", "$out/loop; exec sleep 600"], "profiler": "ncu", "timeout_s": 8}
JOBS
step batch 180 "$polyprof" batch "$out/jobs.jsonl" --output-dir "$out/b" --json
python3 - "$out/batch.out" >"$out/batch.summary" <<'PY'
import json, sys
try:
    jobs = json.load(open(sys.argv[1]))["jobs"]
except Exception as e:
    print(f"   batch: no index ({e})"); sys.exit(1)
for job_id, e in jobs.items():
    print(f"   batch {job_id}: state {e.get('state')} kernels {e.get('kernels')}")
sys.exit(0 if all(e.get("kernels") == 4 for e in jobs.values()) else 1)
PY
batch_ok=$?
cat "$out/batch.summary" | tee -a "$summary"
[ "$batch_ok" = 0 ] || fail "the hung batch job did not keep 4 kernels"

say "== 2. cuBLAS FP8 matmul"
step fp8 300 "$polyprof" run --profiler ncu --output-dir "$out/fp8" -- python3 "$root/tests/fixtures/ncu-h200-fp8/fp8.py"
say "   run exit $(cat "$out/fp8.rc"), wall $(wall fp8) s"
"$polyprof" report "$out/fp8" --wide >"$out/fp8.report.txt" 2>&1
"$polyprof" report "$out/fp8" --format json >"$out/fp8.report.json" 2>&1
grep -i -E "nvjet|diagnostic|peak|above" "$out/fp8.report.txt" | cut -c1-200 | tee -a "$summary"
cp "$out/fp8/ncu.log" "$out/fp8.ncu.log" 2>/dev/null

say "== 3. --kernel by the short names polyprof prints"
cat >"$out/fnptr.cu" <<'CU'
struct P { int a; };
__device__ float sq(float x) { return x * x; }
__device__ bool operator<(P a, P b) { return a.a < b.a; }
template <float (*F)(float)> __global__ void kf(float *p) { p[threadIdx.x] = F(p[threadIdx.x]); }
template <bool (*C)(P, P)> __global__ void kcmp(P *p) { p[0].a = C(p[0], p[1]); }
template <unsigned long N> __global__ void kul(float *p) { p[0] = N; }
int main() {
  float *f; P *q;
  cudaMalloc(&f, 128); cudaMalloc(&q, 64);
  kf<&sq><<<1, 32>>>(f); kcmp<&operator< ><<<1, 1>>>(q); kul<3><<<1, 1>>>(f);
  cudaDeviceSynchronize();
  return 0;
}
CU
nvcc -O2 -arch=sm_90 -o "$out/fnptr" "$out/fnptr.cu" || fail "nvcc fnptr.cu"
step names-all 120 "$polyprof" run --profiler ncu --output-dir "$out/names-all" -- "$out/fnptr"
short_names() {  # one short name a line, as the run's report gives them
  "$polyprof" report "$1" --format json 2>/dev/null |
    python3 -c 'import json,sys; [print(k["short_name"]) for k in json.load(sys.stdin)["kernels"]]'
}
short_names "$out/names-all" >"$out/names-all.txt"
say "   all: $(tr '\n' ' ' <"$out/names-all.txt")"
[ "$(wc -l <"$out/names-all.txt")" = 3 ] || fail "expected 3 kernels in the unfiltered run"
i=0
while IFS= read -r name; do
  i=$((i + 1))
  step "names-$i" 120 "$polyprof" run --profiler ncu --kernel "$name" --output-dir "$out/names-$i" -- "$out/fnptr"
  got=$(short_names "$out/names-$i" | tr '\n' '|')
  say "   --kernel '$name': ${got:-nothing}"
  [ "$got" = "$name|" ] || fail "--kernel '$name' recorded '${got}' instead of one launch of it"
done <"$out/names-all.txt"

say "== done: $failures failure(s)"
exit $((failures > 0))
