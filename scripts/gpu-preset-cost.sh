#!/usr/bin/env bash
# What the ncu preset's metrics cost, group by group, on an NVIDIA GPU (written for the H200
# lane), and what cheaper compute-load metrics say next to the SM speed of light they stand in
# for.
#
#   scripts/gpu-preset-cost.sh POLYPROF_BINARY [OUTPUT_DIR]
#
# Needs on the GPU machine: ncu, nvcc, python3 with PyTorch and pytest. No Rust toolchain:
# POLYPROF_BINARY is a polyprof built for x86-64 Linux elsewhere. Run it from the repository
# root. Everything lands under OUTPUT_DIR (default $OUT, else ./gpu-preset-cost-out); summary.txt
# there is the short report.
#
#  1. replay passes per launch (`profiler__replayer_passes`) of each metric group alone, of the
#     whole minimal preset, and of `--set detailed`, on tests/fixtures/ncu-h200/kernels.cu;
#  2. per kernel of a PyTorch program (bf16/fp16/tf32/fp32 matmuls, softmax, an elementwise
#     add) and of the CUDA program: the SM speed of light next to the pipe and issue
#     utilizations that can replace it;
#  3. wall time, 3 interleaved runs each: `polyprof run` (minimal preset) vs `ncu --set
#     detailed --csv`, on the CUDA program and on the PyTorch pytest (target <= 0.5x);
#     PRESET_COST_NO_WALL=1 leaves it out.
set -uo pipefail
shopt -s nullglob

if [ $# -lt 1 ]; then
  echo "usage: $0 POLYPROF_BINARY [OUTPUT_DIR]" >&2
  exit 2
fi
polyprof="$(realpath "$1")"
root="$(cd "$(dirname "$0")/.." && pwd)"
fixtures="$root/tests/fixtures/ncu-h200"
out="$(realpath -m "${2:-${OUT:-./gpu-preset-cost-out}}")"
mkdir -p "$out/bin"
summary="$out/summary.txt"
: >"$summary"
# shellcheck source=scripts/gpu-steps.sh
source "$root/scripts/gpu-steps.sh"

nvcc -O3 -arch=sm_90 -o "$out/bin/app" "$fixtures/kernels.cu" || say "nvcc kernels.cu failed"
cp "$fixtures/test_torch_ops.py" "$out/"
cp "$root/tests/fixtures/ncu-h200-pipes/mix.py" "$out/"

"$polyprof" wrap --profiler ncu --output-dir "$out/wrap" -- true >"$out/wrap.json" 2>"$out/wrap.err"
minimal=$(python3 -c "
import json
argv = json.load(open('$out/wrap.json'))['steps'][0]['command']['argv']
print(argv[argv.index('--metrics') + 1])")
sm_sol=sm__throughput.avg.pct_of_peak_sustained_elapsed
without_sol=$(echo "$minimal" | tr ',' '\n' | grep -vx "$sm_sol" | paste -sd,)
sass=$(echo "$minimal" | tr ',' '\n' | grep '^smsp__sass_' | paste -sd,)
tensor=$(echo "$minimal" | tr ',' '\n' | grep -E '^sm__(ops_path_tensor|inst_executed_pipe_tensor)' | paste -sd,)
base=$(echo "$minimal" | tr ',' '\n' | grep -vE "^(smsp__sass_|sm__ops_path_tensor|sm__inst_executed_pipe_tensor)" | grep -vx "$sm_sol" | paste -sd,)
pipes=sm__inst_executed.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed
pipes5=sm__inst_executed.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed
hfma2=sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum
tensor4=sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_src_fp8.sum
# The candidates that chose the preset's pipe loads (2026-12-01, when the preset still had the SM
# speed of light): the preset without it, plus 7 or 5 pipe loads (names listed once).
dedupe() { tr ',' '\n' | awk 'NF && !seen[$0]++' | paste -sd,; }
candidate_pipes=$(echo "$without_sol,$pipes" | dedupe)
candidate_pipes5=$(echo "$without_sol,$pipes5" | dedupe)
candidate_no_hfma2=$(echo "$candidate_pipes5" | tr ',' '\n' | grep -vx "$hfma2" | paste -sd,)
say "minimal preset: $(echo "$minimal" | tr ',' '\n' | grep -c .) metrics"

say "== 1. replay passes per launch, each group alone (CUDA program, 4 kernels)"
# PRESET_COST_GROUPS: which of the lists above (default: all).
for group in ${PRESET_COST_GROUPS:-minimal without_sol base sass tensor tensor4 hfma2 sm_sol pipes pipes5 candidate_pipes candidate_pipes5 candidate_no_hfma2}; do
  list="${!group}"
  step "passes-$group" 120 ncu --clock-control none --csv --page raw --metrics "$list,profiler__replayer_passes" "$out/bin/app" 1
  say "   $(printf '%-18s' "$group") $(passes_of "$out/passes-$group.out" | sed 's/^ *//')  rc=$(cat "$out/passes-$group.rc")"
done
step passes-detailed 120 ncu --clock-control none --set detailed --metrics profiler__replayer_passes --csv --page raw "$out/bin/app" 1
say "   $(printf '%-18s' "--set detailed") $(passes_of "$out/passes-detailed.out" | sed 's/^ *//')"

say "== 2. SM speed of light vs pipe and issue utilization, % of peak (elapsed)"
values() {
  python3 - "$1" <<'PY'
import csv, sys
rows = list(csv.reader(l for l in open(sys.argv[1], errors="replace") if l.startswith('"')))
if len(rows) < 3: print("   no rows"); sys.exit(0)
h = rows[0]
cols = [c for c in h if c.endswith(".avg.pct_of_peak_sustained_elapsed")]
short = lambda c: c.split(".")[0].replace("sm__", "").replace("_cycles_active", "").replace("inst_executed", "inst")
print("   " + f"{'kernel':34}" + "".join(f"{short(c)[:11]:>12}" for c in cols) + f"{'max(pipes)':>12}")
for r in rows[2:]:
    vals = [float(r[h.index(c)].replace(",", "")) if r[h.index(c)] not in ("", "n/a") else float("nan") for c in cols]
    pipes = [v for c, v in zip(cols, vals) if not c.startswith("sm__throughput")]
    print("   " + f"{r[h.index('Kernel Name')][:34]:34}" + "".join(f"{v:12.1f}" for v in vals) + f"{max(pipes):12.1f}")
PY
}
[ -n "${PRESET_COST_NO_VALUES:-}" ] || step values-mix 180 ncu --clock-control none --csv --page raw --metrics "$sm_sol,$pipes" python3 "$out/mix.py"
values "$out/values-mix.out" | tee -a "$summary"
[ -n "${PRESET_COST_NO_VALUES:-}" ] || step values-app 120 ncu --clock-control none --csv --page raw --metrics "$sm_sol,$pipes" "$out/bin/app" 1
values "$out/values-app.out" | tee -a "$summary"

if [ -z "${PRESET_COST_NO_WALL:-}" ]; then
# PRESET_COST_CANDIDATES: the variables above (metric lists) to time beside the default preset.
candidates=(${PRESET_COST_CANDIDATES:-})
say "== 3. wall time: polyprof run (default preset${candidates[*]:+; and --preset of ${candidates[*]}}) vs ncu --set detailed --csv, 3 interleaved runs each"
median() { python3 -c "import statistics,sys; print(f'{statistics.median(map(float, sys.argv[1:])):.2f}')" "$@"; }
for target in app pytest; do
  if [ "$target" = app ]; then cmd=("$out/bin/app" 1); else cmd=(python3 -m pytest -q -p no:cacheprovider test_torch_ops.py); fi
  declare -A times=()
  for i in 1 2 3; do
    for preset in default "${candidates[@]}"; do
      rm -rf "$out/bench-$target"
      flag=(); [ "$preset" = default ] || flag=(--preset "${!preset}")
      (cd "$out" && step "wall-$target-$preset-$i" 120 "$polyprof" run --force --profiler ncu --clock-control none "${flag[@]}" --output-dir "$out/bench-$target" -- "${cmd[@]}")
      times[$preset]+=" $(wall "wall-$target-$preset-$i")"
    done
    (cd "$out" && step "wall-$target-detailed-$i" 180 ncu --set detailed --csv --clock-control none --log-file "$out/bench-detailed-$target.log" "${cmd[@]}")
    times[detailed]+=" $(wall "wall-$target-detailed-$i")"
  done
  (cd "$out" && step "wall-$target-alone" 60 "${cmd[@]}")
  detailed=$(median ${times[detailed]})
  say "   $target: ncu --set detailed${times[detailed]} s (median $detailed); the program alone $(wall "wall-$target-alone") s"
  for preset in default "${candidates[@]}"; do
    m=$(median ${times[$preset]})
    say "   $target: $(printf '%-20s' "$preset")${times[$preset]} s (median $m), ratio $(python3 -c "print(f'{$m / $detailed:.2f}')")x (target <= 0.5x)"
  done
  unset times
done
fi
say "== done"
