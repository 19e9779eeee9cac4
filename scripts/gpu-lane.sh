#!/usr/bin/env bash
# Live verification of the ncu backend on an NVIDIA GPU (written for the H200 lane).
#
#   scripts/gpu-lane.sh POLYPROF_BINARY [OUTPUT_DIR]
#
# Needs on the GPU machine: ncu, nvcc, cuobjdump, python3 with PyTorch and pytest. No Rust
# toolchain: POLYPROF_BINARY is a polyprof built for x86-64 Linux elsewhere. Run it from the
# repository root (it reads tests/fixtures/ncu-h200). Everything lands under OUTPUT_DIR
# (default ./gpu-lane-out); summary.txt there is the short report.
#
# What it does:
#  1. compiles tests/fixtures/ncu-h200/kernels.cu (and nokernel.cu) with nvcc;
#  2. `polyprof run --profiler ncu --clock-control none` on the CUDA program and on the PyTorch
#     pytest (test_torch_ops.py); prints the normalized table (`polyprof parse`);
#  3. a plain `ncu --csv --page raw --metrics …` run of the same programs and a side-by-side
#     comparison of durations and DRAM bytes per kernel;
#  4. live edge cases: two processes (multiproc.py), no kernels, application exit code, a program
#     that hangs after its pytest-style summary (hang_after.py), the detailed preset;
#  5. wall time: `polyprof run --profiler ncu` (minimal preset) vs `ncu --set detailed --csv`
#     (what the Python pipeline runs), 3 runs each, median ratio (target <= 0.5x);
#  6. the static lane: cuobjdump + `polyprof occupancy` vs ncu's block limits.
set -uo pipefail
shopt -s nullglob

if [ $# -lt 1 ]; then
  echo "usage: $0 POLYPROF_BINARY [OUTPUT_DIR]" >&2
  exit 2
fi
polyprof="$(realpath "$1")"
out="$(realpath -m "${2:-./gpu-lane-out}")"
root="$(cd "$(dirname "$0")/.." && pwd)"
fixtures="$root/tests/fixtures/ncu-h200"
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
failures=0

say() { echo "$*" | tee -a "$summary"; }
fail() { failures=$((failures + 1)); say "FAIL: $*"; }
# Run a command, keep its output in a log, never stop the lane.
step() {
  local name="$1"; shift
  echo "+ $*" >"$out/$name.cmd"
  "$@" >"$out/$name.out" 2>"$out/$name.err"
  local rc=$?
  echo "$rc" >"$out/$name.rc"
  return $rc
}
# Wall time of one command in seconds (stdout/stderr discarded).
walltime() {
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.2f}')"
}
median() { python3 -c "import statistics,sys; print(f'{statistics.median(map(float, sys.argv[1:])):.2f}')" "$@"; }

say "== environment"
{ nvidia-smi -L; ncu --version | tail -1; nvcc --version | tail -1; "$polyprof" --version;
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'; } \
  2>&1 | tee -a "$summary"

say "== build"
mkdir -p "$out/bin"
nvcc -O3 -arch=sm_90 -lineinfo -o "$out/bin/app" "$fixtures/kernels.cu" || fail "nvcc kernels.cu"
nvcc -o "$out/bin/nokernel" "$fixtures/nokernel.cu" || fail "nvcc nokernel.cu"
cuobjdump --dump-resource-usage "$out/bin/app" >"$out/cuobjdump.txt" 2>&1 || fail "cuobjdump"

# polyprof run + normalized table of what it wrote.
profile() {
  local name="$1"; shift
  rm -rf "$out/$name"
  step "$name-run" "$polyprof" run --force --profiler ncu --clock-control none --output-dir "$out/$name" --json "$@"
  local rc=$?
  step "$name-parse" "$polyprof" parse --profiler ncu "$out/$name"/ncu.log
  "$polyprof" parse --profiler ncu --json "$out/$name"/*.log "$out/$name"/*.csv >"$out/$name.json" 2>/dev/null
  say "-- $name (polyprof run rc=$rc)"
  cat "$out/$name-parse.out" | tee -a "$summary"
  sed 's/^/   /' "$out/$name-parse.err" | tee -a "$summary"
}

# Side-by-side: polyprof's records vs a plain ncu raw-page run, kernel by kernel (in order).
compare() {
  local name="$1" reference="$2"
  python3 - "$out/$name.json" "$reference" <<'PY' | tee -a "$summary"
import csv, json, sys
ours = json.load(open(sys.argv[1]))["kernels"]
lines = [l for l in open(sys.argv[2], errors="replace") if l.startswith('"')]
rows = list(csv.reader(lines))
if len(rows) < 3:
    print("   reference run has no CSV rows"); sys.exit(0)
header, units, data = rows[0], rows[1], rows[2:]
col = {h: i for i, h in enumerate(header)}
def num(row, name):
    if name not in col: return None
    try: return float(row[col[name]].replace(",", ""))
    except ValueError: return None
print(f"   {'kernel':40} {'ncu ns':>12} {'polyprof ns':>12} {'ratio':>6} {'ncu DRAM B':>14} {'polyprof B':>14}")
for ref, k in zip(data, ours):
    ref_ns = num(ref, "gpu__time_duration.sum")
    ref_b = (num(ref, "dram__bytes_read.sum") or 0) + (num(ref, "dram__bytes_write.sum") or 0)
    ns = k.get("duration_ns"); b = (k.get("dram_bytes_read") or 0) + (k.get("dram_bytes_write") or 0)
    ratio = f"{ns / ref_ns:.2f}" if ns and ref_ns else "-"
    print(f"   {k['short_name'][:40]:40} {ref_ns or 0:12.0f} {ns or 0:12.0f} {ratio:>6} {ref_b:14.0f} {b:14.0f}")
print(f"   launches: ncu {len(data)}, polyprof {len(ours)} (separate runs: times differ by run-to-run noise)")
PY
}

reference_metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum

say "== CUDA program (kernels.cu)"
profile app -- "$out/bin/app" 1
ncu --clock-control none --csv --page raw --metrics "$reference_metrics" "$out/bin/app" 1 >"$out/ref-app.csv" 2>&1
compare app "$out/ref-app.csv"

say "== PyTorch pytest (test_torch_ops.py)"
cp "$fixtures/test_torch_ops.py" "$out/"
(cd "$out" && profile pytest -- python3 -m pytest -q -p no:cacheprovider test_torch_ops.py)
(cd "$out" && ncu --clock-control none --target-processes all --csv --page raw --metrics "$reference_metrics" \
  python3 -m pytest -q -p no:cacheprovider test_torch_ops.py >"$out/ref-pytest.csv" 2>&1)
compare pytest "$out/ref-pytest.csv"

say "== live edge cases"
cp "$fixtures/multiproc.py" "$fixtures/hang_after.py" "$out/"
(cd "$out" && profile multiproc -- python3 multiproc.py)
python3 -c "
import json,sys; k=json.load(open('$out/multiproc.json'))['kernels']
pids=sorted({x.get('process_id') for x in k}); print('   processes:', pids, 'launches:', len(k))
" | tee -a "$summary"
profile nokernels -- "$out/bin/nokernel"
grep -q no_kernels_profiled "$out/nokernels.json" || fail "no-kernels warning not reported"
profile exit3 -- sh -c 'exit 3'
grep -q application_error "$out/exit3.json" || fail "application exit code not reported"
# Prints `=== 1 passed in 0.50s ===` then sleeps 120 s: the pytest marker grace, then SIGTERM;
# ncu must still write the kernels it profiled.
start=$(date +%s)
(cd "$out" && profile hang -- python3 hang_after.py)
say "   hang_after.py stopped after $(( $(date +%s) - start )) s"
python3 -c "import json; print('   kernels salvaged:', len(json.load(open('$out/hang.json'))['kernels']))" | tee -a "$summary"
rm -rf "$out/detailed"
step detailed-run "$polyprof" run --force --profiler ncu --preset detailed --clock-control none --output-dir "$out/detailed" --json -- "$out/bin/app" 1
"$polyprof" parse --json "$out/detailed"/*.log "$out/detailed"/*.csv >"$out/detailed.json" 2>/dev/null
python3 -c "
import json; k=json.load(open('$out/detailed.json'))['kernels']
print('   detailed preset:', len(k), 'launches,', sum(len(x.get('rules', [])) for x in k), 'rule results,',
      max((len(x.get('metrics', {})) for x in k), default=0), 'metrics per launch at most')
" | tee -a "$summary"

say "== static lane: cuobjdump + occupancy vs ncu"
python3 - "$out/cuobjdump.txt" "$out/app.json" "$polyprof" <<'PY' | tee -a "$summary"
import json, re, subprocess, sys
dump = open(sys.argv[1]).read()
kernels = json.load(open(sys.argv[2]))["kernels"]
regs = dict(re.findall(r"Function (\S+):\n\s+REG:(\d+)", dump))
print(f"   cuobjdump functions: {len(regs)}")
for k in kernels:
    threads = k["block"][0] * k["block"][1] * k["block"][2]
    out = subprocess.run([sys.argv[3], "occupancy", "--cc", "9.0", "--regs", str(k["registers_per_thread"]),
                          "--shared", str(k["shared_mem_per_block"]), "--block", str(threads), "--json"],
                         capture_output=True, text=True)
    calc = json.loads(out.stdout)
    m = k["metrics"]
    ncu = [int(m[f"launch__occupancy_limit_{x}"]["value"]) for x in ("registers", "warps", "shared_mem")]
    ours = [calc["limit_registers"], calc["limit_warps"], calc["limit_shared_mem"]]
    print(f"   {k['short_name'][:30]:30} ncu {ncu} polyprof {ours} {'OK' if ncu == ours else 'MISMATCH'}")
PY

say "== wall time: polyprof run (minimal) vs ncu --set detailed --csv, 3 runs each"
for target in app pytest; do
  if [ "$target" = app ]; then cmd=("$out/bin/app" 1); else cmd=(python3 -m pytest -q -p no:cacheprovider test_torch_ops.py); fi
  ours=(); theirs=()
  for i in 1 2 3; do
    rm -rf "$out/bench-$target"
    ours+=("$(cd "$out" && walltime "$polyprof" run --force --profiler ncu --clock-control none --output-dir "$out/bench-$target" -- "${cmd[@]}")")
    theirs+=("$(cd "$out" && walltime ncu --set detailed --csv --clock-control none --log-file "$out/bench-detailed-$target.log" "${cmd[@]}")")
  done
  m_ours=$(median "${ours[@]}"); m_theirs=$(median "${theirs[@]}")
  say "   $target: polyprof minimal ${ours[*]} s (median $m_ours), ncu --set detailed ${theirs[*]} s (median $m_theirs), ratio $(python3 -c "print(f'{$m_ours/$m_theirs:.2f}')")x (target <= 0.5x)"
done

say "== done: $failures failure(s); details in $out"
exit $(( failures > 0 ))
