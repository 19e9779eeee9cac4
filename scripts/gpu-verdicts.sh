#!/usr/bin/env bash
# Live verification of the verdicts issue (tensor FLOPs, clock-true peaks, limiter, noise-aware
# diff, diffable exports) on an NVIDIA Hopper GPU (written for the H200 lane).
#
#   scripts/gpu-verdicts.sh POLYPROF_BINARY [OUTPUT_DIR]
#
# Needs on the GPU machine: ncu, nvcc, cuobjdump, python3 with PyTorch, Triton and pytest;
# llnl-hatchet for the `gf2 - gf1` check (skipped, and said so, when missing); proton-viewer
# (from the triton wheel, which also needs llnl-hatchet) for the Proton check. Where hatchet is
# not installed, carry wheels of llnl-hatchet, pydot, textX, Arpeggio, multiprocess, dill and
# caliper-reader (`pip download --no-deps`), then `pip install --no-index --no-deps --target DIR`
# and PYTHONPATH=DIR there. No Rust toolchain: POLYPROF_BINARY is a
# polyprof built for x86-64 Linux elsewhere. Everything lands under OUTPUT_DIR (default $OUT,
# else ./gpu-verdicts-out); summary.txt there is the short report, checks.txt one PASS/FAIL/SKIP
# line per check. Fits in one 10-minute command (each step has its own timeout).
#
# What it checks:
#  1. replay passes per launch and wall time: the default (minimal) preset vs `--set detailed`
#     (target: wall <= 0.5x), and the SM clock ncu's default `--clock-control base` locks;
#  2. a bf16 cuBLAS matmul and a Triton fp16 matmul under `polyprof run --profiler ncu`: tensor
#     TFLOP/s within 5 % of 2·N³ / GPU time, verdict compute-bound on the tensor pipe with the
#     right precision, and the clock the peak was scaled to; with clocks locked (ncu's default)
#     the verdict says so;
#  3. phantom FP16: the RNG fills' and an FP32 FMA loop's SASS FP16 counts against their
#     HFMA2.MMA instructions (cuobjdump -sass) and what polyprof counts after excluding them;
#  4. the same Triton pytest profiled twice: `polyprof diff` must exit 0;
#  5. the two runs' exports: hatchet `gf2 - gf1` of the Hatchet exports without NaN rows (frame
#     names carry no pid or run label), `proton-viewer -m time/ns,util` and
#     `proton-viewer -diff` on the Proton exports (`report -f proton`: device_id/device_type
#     and the device table `util` reads), `proton-viewer -l` listing each metric once, and
#     `polyprof parse -o` of the first run's ncu log giving a document `report` and `diff` read;
#  6. `--kernel NAME` with every short name polyprof printed (CUDA templates, PyTorch kernels)
#     finds exactly the launches of that name;
#  7. `--graph-profiling graph` (range replay): the preset ncu accepts there, on a CUDA graph of
#     a C++ program and on a PyTorch CUDA graph.
# GPU_VERDICTS_SECTIONS="1 4 5 6 7" runs only those sections (5 needs 4).
set -uo pipefail
shopt -s nullglob

if [ $# -lt 1 ]; then
  echo "usage: $0 POLYPROF_BINARY [OUTPUT_DIR]" >&2
  exit 2
fi
polyprof="$(realpath "$1")"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "${2:-${OUT:-./gpu-verdicts-out}}")"
mkdir -p "$out"
summary="$out/summary.txt"
checks="$out/checks.txt"
: >"$summary"
: >"$checks"
failures=0
started=$(date +%s)
sections=" ${GPU_VERDICTS_SECTIONS:-1 2 3 4 5 6 7} "
want() { [[ "$sections" == *" $1 "* ]]; }

# shellcheck source=scripts/gpu-steps.sh
source "$root/scripts/gpu-steps.sh"
check() { # check NAME PASS|FAIL|SKIP DETAIL
  echo "$2 $1: $3" | tee -a "$checks" | tee -a "$summary"
  [ "$2" = FAIL ] && failures=$((failures + 1))
  return 0
}
elapsed() { echo $(( $(date +%s) - started )); }

say "== environment (t=$(elapsed)s)"
{ nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem --format=csv
  ncu --version | tail -1; nvcc --version | tail -1; "$polyprof" --version
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(0))'
  python3 -c 'import hatchet; print("hatchet", hatchet.__version__)' || echo "hatchet: not installed"
  command -v proton-viewer || echo "proton-viewer: not on PATH"; } 2>&1 | tee -a "$summary"

work="$out/work"
mkdir -p "$work"
cat >"$work/mm_cublas.py" <<'PY'
# bf16 cuBLAS matmul, N x N x N; prints the CUDA-event speed (outside any profiler's replay).
import sys, torch
n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
c = a @ b
torch.cuda.synchronize()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record(); c = a @ b; end.record(); torch.cuda.synchronize()
ms = start.elapsed_time(end)
print(f"cublas_bf16 n={n} events_ms={ms:.4f} tflops={2 * n**3 / ms / 1e9:.1f}")
PY
cat >"$work/mm_triton.py" <<'PY'
# fp16 Triton matmul (the tutorial's kernel, fixed tile config: no autotuning launches).
import sys, torch, triton, triton.language as tl

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    in_group = GROUP * num_pid_n
    first_m = (pid // in_group) * GROUP
    size_m = min(num_pid_m - first_m, GROUP)
    pid_m = first_m + ((pid % in_group) % size_m)
    pid_n = (pid % in_group) // size_m
    offs_m = (pid_m * BM + tl.arange(0, BM)) % M
    offs_n = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak
    b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + rows[:, None] * scm + cols[None, :] * scn, acc.to(tl.float16))

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

def matmul(a, b):
    (m, k), (_, n) = a.shape, b.shape
    c = torch.empty((m, n), device=a.device, dtype=torch.float16)
    grid = (triton.cdiv(m, 128) * triton.cdiv(n, 128),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BM=128, BN=128, BK=64, GROUP=8,
                        num_warps=8, num_stages=3)
    return c

def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    a = torch.randn(n, n, device="cuda", dtype=torch.float16); b = torch.randn_like(a)
    c = matmul(a, b)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(); c = matmul(a, b); end.record(); torch.cuda.synchronize()
    ms = start.elapsed_time(end)
    print(f"triton_fp16 n={n} events_ms={ms:.4f} tflops={2 * n**3 / ms / 1e9:.1f}")
PY
cat >"$work/test_triton_mm.py" <<'PY'
# A Triton pytest like a kernel-evaluation pipeline runs: matmuls checked against torch and
# fifty launches of a µs-scale elementwise kernel.
import torch
from mm_triton import add, matmul

def test_matmul_matches_torch():
    torch.manual_seed(0)
    for n in (1024, 2048):
        a = torch.randn(n, n, device="cuda", dtype=torch.float16); b = torch.randn_like(a)
        assert torch.allclose(matmul(a, b), a @ b, atol=1e-1, rtol=1e-2)

def test_many_small_adds():
    x = torch.ones(1 << 16, device="cuda"); y = torch.ones_like(x)
    for _ in range(50):
        x = add(x, y)
    assert float(x[0]) == 51.0
PY
cat >"$work/fma.cu" <<'CU'
// FP32 FMA loop: no FP16 math at all. 2 FMAs per iteration per thread.
#include <cstdio>
__global__ void fma_loop(float *out, float a, float b, int iters) {
  float x = threadIdx.x, y = blockIdx.x;
  for (int i = 0; i < iters; ++i) { x = fmaf(x, a, b); y = fmaf(y, b, a); }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x + y;
}
int main() {
  float *out;
  cudaMalloc(&out, 1056 * 256 * sizeof(float));
  fma_loop<<<1056, 256>>>(out, 0.999f, 0.001f, 4096);
  cudaError_t err = cudaDeviceSynchronize();
  printf("fma_loop: %s\n", cudaGetErrorString(err));
  return err != cudaSuccess;
}
CU
mkdir -p "$work/bin"
nvcc -O3 -arch=sm_90 -o "$work/bin/fma" "$work/fma.cu" >"$out/nvcc.log" 2>&1 || say "nvcc fma.cu failed (see nvcc.log)"
cuobjdump -sass "$work/bin/fma" >"$out/fma.sass" 2>&1
grep -oE "HFMA2(\.[A-Z0-9]+)*|FFMA|HMMA[.A-Z0-9]*" "$out/fma.sass" | sort | uniq -c >"$out/fma.sass.counts"

# The preset's metric list, from polyprof's own plan.
"$polyprof" wrap --profiler ncu --output-dir "$work/wrap" -- true >"$out/wrap.json" 2>"$out/wrap.err"
preset=$(python3 -c "
import json, sys
argv = json.load(open('$out/wrap.json'))['steps'][0]['command']['argv']
print(argv[argv.index('--metrics') + 1] if '--metrics' in argv else '')")
say "minimal preset: $(echo "$preset" | tr ',' '\n' | grep -c .) metrics"


cd "$work"
if want 1; then
say "== 1. replay passes and wall time: minimal preset vs --set detailed (t=$(elapsed)s)"
step passes-minimal 120 ncu --clock-control none --csv --page raw --metrics "$preset,profiler__replayer_passes" python3 mm_cublas.py 4096
say "-- minimal preset (rc=$(cat "$out/passes-minimal.rc"))"; passes_of "$out/passes-minimal.out" | tee -a "$summary"
step passes-detailed 180 ncu --set detailed --metrics profiler__replayer_passes,sm__cycles_elapsed.avg.per_second --csv --page raw python3 mm_cublas.py 4096
say "-- --set detailed, ncu's default --clock-control base (rc=$(cat "$out/passes-detailed.rc")): its SM clock is the locked base clock"
passes_of "$out/passes-detailed.out" | tee -a "$summary"
ours=(); theirs=()
for i in 1 2 3; do
  # Keep the whole script inside one 10-minute command: the third pair only when time allows.
  if [ "$i" = 3 ] && [ "$(elapsed)" -gt 220 ]; then say "   (third pair skipped at t=$(elapsed)s)"; break; fi
  rm -rf "$work/bench"
  step "bench-minimal-$i" 120 "$polyprof" run --profiler ncu --clock-control none --output-dir "$work/bench" -- python3 mm_cublas.py 4096
  ours+=("$(wall "bench-minimal-$i")")
  step "bench-detailed-$i" 180 ncu --set detailed --csv --clock-control none --log-file "$work/bench-detailed.log" python3 mm_cublas.py 4096
  theirs+=("$(wall "bench-detailed-$i")")
done
# The floor: the program alone and plain ncu with the same metrics (what polyprof adds).
step bench-python 60 python3 mm_cublas.py 4096
step bench-plain-ncu 120 ncu --csv --page raw --clock-control none --metrics "$preset" --log-file "$work/bench-plain.log" python3 mm_cublas.py 4096
say "   the program alone $(wall bench-python) s; plain ncu with the preset's metrics $(wall bench-plain-ncu) s"
ratio=$(python3 -c "
import statistics as s, sys
half = (len(sys.argv) - 1) // 2
a = [float(x) for x in sys.argv[1:1 + half]]; b = [float(x) for x in sys.argv[1 + half:]]
print(f'{s.median(a) / s.median(b):.2f}')" "${ours[@]}" "${theirs[@]}")
say "   matmul program: polyprof minimal ${ours[*]} s, ncu --set detailed ${theirs[*]} s, median ratio ${ratio}x"
if python3 -c "import sys; sys.exit(0 if float('$ratio') <= 0.5 else 1)" 2>/dev/null; then
  check wall-ratio-matmul PASS "${ratio}x <= 0.5x"
else
  check wall-ratio-matmul FAIL "${ratio}x > 0.5x (or not measured)"
fi
fi

if want 2; then
say "== 2. tensor FLOPs and verdicts: cuBLAS bf16 and Triton fp16 matmuls (t=$(elapsed)s)"
python3 mm_cublas.py 4096 2>&1 | tee -a "$summary"
python3 mm_triton.py 4096 2>&1 | tee -a "$summary"
for prog in cublas triton; do
  rm -rf "$work/mm-$prog"
  step "mm-$prog-run" 180 "$polyprof" run --profiler ncu --clock-control none --output-dir "$work/mm-$prog" -- python3 "mm_$prog.py" 4096
  "$polyprof" report "$work/mm-$prog" -f json -o "$out/mm-$prog.report.json" 2>"$out/mm-$prog.report.err"
  "$polyprof" report "$work/mm-$prog" >"$out/mm-$prog.table.txt" 2>&1
  python3 - "$out/mm-$prog.report.json" "$prog" 4096 <<'PY' | tee -a "$summary" "$out/mm-$prog.check"
import json, sys
path, prog, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    kernels = json.load(open(path))["kernels"]
except (OSError, ValueError, KeyError) as e:
    print(f"FAIL tensor-{prog}: no report ({e})"); sys.exit(0)
expected_flops = 2 * n ** 3
want = "tensor_bf16" if prog == "cublas" else "tensor_fp16"
# The matmul: the launch with the most tensor FLOPs.
def tensor(k): return sum(v for f, v in k.get("flops", {}).items() if f.startswith("tensor_") and f != "tensor_int8")
mm = [k for k in kernels if tensor(k) > 0]
for k in kernels:
    r = k.get("roofline", {})
    print(f"   {k['short_name'][:60]:60} {k.get('duration_ns', 0):>10.0f} ns  flops {k.get('flops', {})}  "
          f"-> {r.get('bound')} / {r.get('limiter')} / {r.get('precision')} at {r.get('sm_clock_ghz')} GHz, "
          f"{r.get('pct_peak_compute', 0) or 0:.1f} % of peak, inputs {r.get('inputs')}")
if not mm:
    print(f"FAIL tensor-{prog}: no launch with tensor FLOPs"); sys.exit(0)
for k in mm:
    r = k["roofline"]
    truth = expected_flops / k["duration_ns"] / 1e3  # TFLOP/s by FLOP count / GPU time
    ours = (r.get("gflops_per_s") or 0) / 1e3
    close = abs(ours - truth) <= 0.05 * truth
    verdict = r.get("bound") == "compute" and r.get("limiter") == "tensor_pipe" and r.get("precision") == want
    status = "PASS" if close and verdict else "FAIL"
    print(f"{status} tensor-{prog}: {k['short_name'][:50]} polyprof {ours:.1f} TFLOP/s vs 2N^3/GPU time "
          f"{truth:.1f} ({100 * (ours - truth) / truth:+.2f} %); verdict {r.get('bound')}, "
          f"{r.get('limiter')} ({r.get('precision')}), {r.get('pct_peak_compute', 0) or 0:.1f} % of peak "
          f"at {r.get('sm_clock_ghz')} GHz; SM load (sm_throughput_pct) {k.get('sm_throughput_pct')} %")
PY
  grep -E "^(PASS|FAIL)" "$out/mm-$prog.check" >>"$checks"
  failures=$((failures + $(grep -c "^FAIL" "$out/mm-$prog.check")))
done

say "-- the bf16 matmul with ncu's default --clock-control base: clock_state must be locked_base"
rm -rf "$work/mm-base"
step mm-base-run 180 "$polyprof" run --profiler ncu --output-dir "$work/mm-base" -- python3 mm_cublas.py 4096
"$polyprof" report "$work/mm-base" -f json -o "$out/mm-base.report.json" 2>/dev/null
python3 - "$out/mm-base.report.json" <<'PY' | tee -a "$summary" "$out/mm-base.check"
import json, sys
try: kernels = json.load(open(sys.argv[1]))["kernels"]
except (OSError, ValueError, KeyError) as e: print(f"FAIL clocks-locked: no report ({e})"); sys.exit(0)
mm = [k for k in kernels if k.get("flops", {}).get("tensor_bf16")]
for k in mm:
    r = k["roofline"]
    ok = r.get("clock_state") == "locked_base"
    print(f"{'PASS' if ok else 'FAIL'} clocks-locked: {k['short_name'][:40]} clock_state {r.get('clock_state')}, "
          f"SM clock {r.get('sm_clock_ghz')} GHz, {r.get('pct_peak_compute', 0) or 0:.1f} % of clock-scaled peak")
if not mm: print("FAIL clocks-locked: no bf16 tensor launch")
PY
grep -E "^(PASS|FAIL)" "$out/mm-base.check" >>"$checks"
failures=$((failures + $(grep -c "^FAIL" "$out/mm-base.check")))
fi

if want 3; then
say "== 3. phantom FP16 (HFMA2.MMA) (t=$(elapsed)s)"
say "   fma_loop SASS instruction counts (cuobjdump -sass):"
sed 's/^/     /' "$out/fma.sass.counts" | tee -a "$summary"
rm -rf "$work/fma"
step fma-run 120 "$polyprof" run --profiler ncu --clock-control none --output-dir "$work/fma" -- "$work/bin/fma"
"$polyprof" report "$work/fma" -f json -o "$out/fma.report.json" 2>/dev/null
python3 - "$out/fma.report.json" "$out/mm-cublas.report.json" <<'PY' | tee -a "$summary" "$out/fma.check"
import json, sys
expected_fp32 = 1056 * 256 * (4096 * 2 * 2 + 1)  # 2 FMAs per iteration, then one add
seen_fma = False
for path in sys.argv[1:]:
    try: kernels = json.load(open(path))["kernels"]
    except (OSError, ValueError, KeyError): continue
    for k in kernels:
        f = k.get("flops", {})
        if "fp16" in f or "fp16_hfma2_mma" in f or k["short_name"].startswith("fma_loop"):
            raw, moves = f.get("fp16", 0), f.get("fp16_hfma2_mma", 0)
            counted = max(raw - moves, 0)
            print(f"   {k['short_name'][:60]:60} SASS fp16 FLOPs {raw:.0f}, HFMA2.MMA bound {moves:.0f}, "
                  f"counted {counted:.0f}, fp32 {f.get('fp32', 0):.0f}")
    for k in kernels:
        if k["short_name"].startswith("fma_loop"):
            seen_fma = True
            fp32 = k.get("flops", {}).get("fp32", 0)
            ok = abs(fp32 - expected_fp32) <= 0.01 * expected_fp32
            print(f"{'PASS' if ok else 'FAIL'} fma-fp32: {fp32:.0f} FP32 FLOPs counted, {expected_fp32} by construction")
if not seen_fma:
    print("FAIL fma-fp32: no fma_loop launch profiled")
PY
grep -E "^(PASS|FAIL)" "$out/fma.check" >>"$checks"
failures=$((failures + $(grep -c "^FAIL" "$out/fma.check")))
fi

if want 4; then
say "== 4. the same Triton pytest twice, then polyprof diff (t=$(elapsed)s)"
for r in 1 2; do
  rm -rf "$work/pytest-$r"
  step "pytest-$r" 200 "$polyprof" run --profiler ncu --clock-control none --output-dir "$work/pytest-$r" -- python3 -m pytest -q -p no:cacheprovider test_triton_mm.py
  say "   run $r: rc $(cat "$out/pytest-$r.rc"), wall $(wall "pytest-$r") s"
done
step pytest-diff 60 "$polyprof" diff "$work/pytest-1" "$work/pytest-2"
diff_rc=$(cat "$out/pytest-diff.rc")
head -c 6000 "$out/pytest-diff.out" | tee -a "$summary"
"$polyprof" diff --json "$work/pytest-1" "$work/pytest-2" >"$out/pytest-diff.json" 2>/dev/null
launches=$(python3 -c "
import json, sys
counts = []
for path in sys.argv[1:]:
    try: counts.append(len(json.load(open(path))['kernels']))
    except (OSError, ValueError, KeyError): counts.append(0)
print(min(counts))" "$work/pytest-1/run.json" "$work/pytest-2/run.json")
if [ "$(cat "$out/pytest-1.rc")" != 0 ] || [ "$(cat "$out/pytest-2.rc")" != 0 ] || [ "$launches" = 0 ]; then
  check pytest-diff-clean FAIL "the pytest runs did not both succeed with kernels (rc $(cat "$out/pytest-1.rc")/$(cat "$out/pytest-2.rc"), fewest launches $launches)"
elif [ "$diff_rc" = 0 ]; then
  check pytest-diff-clean PASS "exit 0 over $launches+ launches"
else
  check pytest-diff-clean FAIL "exit $diff_rc"
fi
if [ "$(elapsed)" -gt 420 ] || [ -n "${GPU_VERDICTS_SECTIONS:-}" ]; then
  say "   (ncu --set detailed on the pytest skipped at t=$(elapsed)s to stay inside 10 minutes)"
else
step pytest-detailed 150 ncu --set detailed --csv --clock-control none --target-processes all --log-file "$work/pytest-detailed.log" python3 -m pytest -q -p no:cacheprovider test_triton_mm.py
say "   pytest wall: polyprof minimal $(wall pytest-1) / $(wall pytest-2) s, ncu --set detailed $(wall pytest-detailed) s (rc $(cat "$out/pytest-detailed.rc"))"
fi
fi

if want 5; then
say "== 5. exports: hatchet gf2 - gf1, proton-viewer, parse -o (t=$(elapsed)s)"
for r in 1 2; do
  "$polyprof" report "$work/pytest-$r" -f hatchet -o "$out/pytest-$r.hatchet.json" 2>"$out/pytest-$r.hatchet.err"
  "$polyprof" report "$work/pytest-$r" -f proton -o "$out/pytest-$r.proton.json" 2>"$out/pytest-$r.proton.err"
done
if python3 -c 'import hatchet' 2>/dev/null; then
  python3 "$root/scripts/check-hatchet.py" "$out/pytest-2.hatchet.json" --minus "$out/pytest-1.hatchet.json" \
    >"$out/hatchet.check.out" 2>&1
  rc=$?
  grep "check-hatchet" "$out/hatchet.check.out" | tee -a "$summary"
  if [ "$rc" = 0 ]; then check hatchet-diff PASS "gf2 - gf1: $(grep -o '[0-9]* with NaN' "$out/hatchet.check.out")";
  else check hatchet-diff FAIL "check-hatchet rc $rc (see hatchet.check.out)"; fi
else
  check hatchet-diff SKIP "llnl-hatchet is not installed"
fi
if command -v proton-viewer >/dev/null; then
  step proton-viewer 60 proton-viewer -m time/ns,util "$out/pytest-1.proton.json"
  rc=$(cat "$out/proton-viewer.rc")
  head -40 "$out/proton-viewer.out" | tee -a "$summary"
  tail -5 "$out/proton-viewer.err" | tee -a "$summary"
  # No header: each line is `TIME UTIL NAME`; kernels have a number as UTIL, inner frames nan.
  util_rows=$(grep -cE '^[^0-9-]*-?[0-9.]+ [0-9.]+ ' "$out/proton-viewer.out")
  if [ "$rc" = 0 ] && [ "$util_rows" -gt 0 ]; then check proton-viewer PASS "rc 0, util shown for $util_rows frames";
  else check proton-viewer FAIL "rc $rc"; fi
  step proton-diff 60 proton-viewer -m time/ns -diff "$out/pytest-1.proton.json" "$out/pytest-2.proton.json"
  rc=$(cat "$out/proton-diff.rc")
  head -20 "$out/proton-diff.out" | tee -a "$summary"
  if [ "$rc" = 0 ]; then check proton-diff PASS "rc 0"; else check proton-diff FAIL "rc $rc ($(tail -1 "$out/proton-diff.err"))"; fi
  step proton-list 30 proton-viewer -l "$out/pytest-1.proton.json"
  dupes=$(grep '^- ' "$out/proton-list.out" | sort | uniq -d | tr '\n' ' ')
  if [ -z "$dupes" ]; then check proton-list PASS "each metric listed once"; else check proton-list FAIL "listed twice: $dupes"; fi
else
  check proton-viewer SKIP "proton-viewer not on PATH"
fi
# The first pytest run's own ncu output, parsed again into a run document report and diff read.
logs=("$work"/pytest-1/*.log "$work"/pytest-1/*.csv "$work"/pytest-1/*.stdout)
if [ ${#logs[@]} -gt 0 ]; then
  "$polyprof" parse "${logs[@]}" -o "$out/pytest-1.parsed.json" >"$out/parse-o.out" 2>"$out/parse-o.err"
  p_rc=$?
  "$polyprof" report "$out/pytest-1.parsed.json" -f json -o "$out/pytest-1.parsed.report.json" 2>>"$out/parse-o.err"
  r_rc=$?
  "$polyprof" diff "$work/pytest-1" "$out/pytest-1.parsed.json" >"$out/parse-o.diff" 2>>"$out/parse-o.err"
  d_rc=$?
  if [ "$r_rc" = 0 ] && [ "$d_rc" = 0 ]; then check parse-o PASS "parse rc $p_rc, report rc 0, diff vs the run rc 0";
  else check parse-o FAIL "parse rc $p_rc, report rc $r_rc, diff rc $d_rc"; head -30 "$out/parse-o.diff" "$out/parse-o.err" | tee -a "$summary"; fi
else
  check parse-o SKIP "no ncu log in $work/pytest-1"
fi

fi

if want 6; then
say "== 6. --kernel with the short names polyprof prints (t=$(elapsed)s)"
nvcc -O3 -arch=sm_90 -o "$work/bin/app" "$root/tests/fixtures/ncu-h200/kernels.cu" >>"$out/nvcc.log" 2>&1
# Every short name of an unfiltered run, then one filtered run per name: exactly its launches.
names_of() { python3 -c "
import json, sys
from collections import Counter
k = json.load(open(sys.argv[1]))['kernels']
for name, n in sorted(Counter(x['short_name'] for x in k).items()): print(f'{n}\t{name}')" "$1" 2>/dev/null; }
kernel_check() { # kernel_check LABEL ARGV...
  local label="$1"; shift
  rm -rf "$work/kernel-$label"
  step "kernel-$label" 120 "$polyprof" run --profiler ncu --clock-control none --output-dir "$work/kernel-$label" --json -- "$@"
  names_of "$out/kernel-$label.out" >"$out/kernel-$label.names"
  local i=0 ok=0 total=0 found
  while IFS=$'\t' read -r count name; do
    i=$((i + 1)); total=$((total + 1))
    rm -rf "$work/kernel-$label-$i"
    step "kernel-$label-$i" 120 "$polyprof" run --profiler ncu --clock-control none --kernel "$name" --output-dir "$work/kernel-$label-$i" --json -- "$@"
    found=$(names_of "$out/kernel-$label-$i.out" | tr '\t\n' '  ')
    if [ "$found" = "$count $name " ]; then ok=$((ok + 1)); fi
    say "   --kernel '${name:0:90}': expected $count, found: ${found:0:120}"
    [ "$(elapsed)" -gt 470 ] && { say "   (rest skipped at t=$(elapsed)s)"; break; }
  done <"$out/kernel-$label.names"
  if [ "$total" -gt 0 ] && [ "$ok" = "$total" ]; then check "kernel-filter-$label" PASS "$ok of $total short names find exactly their launches";
  else check "kernel-filter-$label" FAIL "$ok of $total short names find exactly their launches"; fi
}
kernel_check cuda "$work/bin/app" 1
if [ "$(elapsed)" -lt 420 ]; then kernel_check torch python3 mm_cublas.py 1024; fi
fi

if want 7; then
say "== 7. graph-level profiling (--graph-profiling graph, range replay) (t=$(elapsed)s)"
cat >"$work/graph.cu" <<'CU'
// vector_add and matmul_tiled<32> captured in one CUDA graph and launched once.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
template <int TILE>
__global__ void matmul_tiled(const float* A, const float* B, float* C, int N) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int r = blockIdx.y * TILE + threadIdx.y, c = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < N; t += TILE) {
    As[threadIdx.y][threadIdx.x] = A[r * N + t + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * N + c];
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[r * N + c] = acc;
}
int main() {
  const int n = 1 << 22, N = 1024;
  float *a, *b, *c;
  cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMalloc(&c, n * 4);
  cudaMemset(a, 0, n * 4); cudaMemset(b, 0, n * 4);
  cudaStream_t s; cudaStreamCreate(&s);
  cudaGraph_t g; cudaGraphExec_t e;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  vector_add<<<n / 256, 256, 0, s>>>(a, b, c, n);
  matmul_tiled<32><<<dim3(N / 32, N / 32), dim3(32, 32), 0, s>>>(a, b, c, N);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&e, g, 0);
  cudaGraphLaunch(e, s);
  cudaError_t err = cudaStreamSynchronize(s);
  printf("graph: %s\n", cudaGetErrorString(err));
  return err != cudaSuccess;
}
CU
cat >"$work/graph_mm.py" <<'PY'
# A bf16 matmul captured in a CUDA graph and replayed once.
import torch
a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    c = a @ b
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    c = a @ b
g.replay()
torch.cuda.synchronize()
print("graph replayed")
PY
nvcc -O3 -arch=sm_90 -o "$work/bin/graph" "$work/graph.cu" >>"$out/nvcc.log" 2>&1
for prog in cuda torch; do
  if [ "$prog" = cuda ]; then target=("$work/bin/graph"); else target=(python3 graph_mm.py); fi
  rm -rf "$work/graph-$prog"
  step "graph-$prog" 120 "$polyprof" run --profiler ncu --clock-control none --graph-profiling graph --output-dir "$work/graph-$prog" --json -- "${target[@]}"
  rc=$(cat "$out/graph-$prog.rc")
  summary_line=$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
k = d.get('kernels', [])
print(len(k), 'results;', '; '.join(f\"{x['short_name'][:50]} {x.get('duration_ns', 0):.0f} ns flops {x.get('flops', {})}\" for x in k[:4]), '| errors:', d.get('errors'))" "$out/graph-$prog.out" 2>&1 | head -c 600)
  say "   $prog: rc $rc, $summary_line"
  grep -h "==ERROR==" "$work/graph-$prog"/*.log 2>/dev/null | sort | uniq -c | head -4 | sed 's/^/     /' | tee -a "$summary"
  if [ "$rc" = 0 ] && [[ "$summary_line" != "0 results"* ]]; then check "graph-profiling-$prog" PASS "rc 0, ${summary_line%%;*}";
  else check "graph-profiling-$prog" FAIL "rc $rc, ${summary_line:0:200}"; fi
done
fi

say "== done in $(elapsed) s: $failures failure(s); checks in $checks"
cat "$checks"
exit $(( failures > 0 ))
