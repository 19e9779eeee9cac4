#!/usr/bin/env bash
# Verdict throughput, warm against cold, side by side in one run (docs/eval-harness.md, "The
# warm evaluator"): the same directory of candidates judged
#   1. warm: `polyprof eval --reference R --candidate DIR` (one trusted worker, reference blocks
#      reused after their drift probe), and
#   2. cold: the same with `--cold` (a trusted worker per candidate, the reference re-timed),
# each timed end to end, then verdicts per hour, seconds per verdict, the warm/cold throughput
# ratio, how many candidates reused the reference's blocks, and whether every candidate got the
# same verdict (status, passed, findings, failure) both ways. Runs alternate warm and cold
# ROUNDS times (default 2) so neither always runs on a quieter machine.
#
# MODE=cpu (default): the numpy problem of tests/programs/eval with COPIES (default 3) copies of
#   each of its candidates (honest, numpy rewrite, slow, incorrect, raising, crashing, hostile:
#   10 files a copy), `--device cpu`, small trials (EVAL_ARGS, default
#   `--trials 3 --blocks 5 --repeat 20 --warmup 2 --timeout 10`). Python: PY (default the
#   test venv target/tmp/test-venv/bin/python, else python3; it needs numpy).
# MODE=gpu (for the H200 lane; not runnable without a GPU): KB=KERNELBENCH_DIR (a KernelBench
#   checkout: src/kernelbench and KernelBench/level1, level2); scripts/bench_eval_throughput_gpu.py
#   writes ten kinds of candidates per problem (honest, slow, incorrect, raising, hostile, failing
#   to compile) for N_PROBLEMS problems and judges them warm, cold (`--cold`) and with
#   KernelBench's own eval_kernel_against_ref, side by side (its docstring has the settings).
#   OUT=DIR keeps its summary, results and logs.
# BIN: the polyprof executable (default target/release/polyprof, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${MODE:-cpu}
ROUNDS=${ROUNDS:-2}
if [[ -z "${BIN:-}" ]]; then
  echo "building release binary..."
  cargo build --release --quiet --bin polyprof --bin polyprof-supervise
  BIN=$PWD/target/release/polyprof
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/polyprof-bench-throughput.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

now_ns() { date +%s%N; }
ms_since() { echo $(( ($(now_ns) - $1) / 1000000 )); }

# problem NAME REFERENCE CANDIDATES DEVICE: judge the folder warm and cold ROUNDS times each.
declare -A wall_ms=([warm]=0 [cold]=0)
verdicts=0
same=0
differ=()
reused=0
judge() {
  local name=$1 reference=$2 candidates=$3 device=$4
  local n
  n=$(find "$candidates" -maxdepth 1 -name '*.py' | wc -l)
  for round in $(seq "$ROUNDS"); do
    local order=(warm cold)
    (( round % 2 == 0 )) && order=(cold warm)
    for mode in "${order[@]}"; do
      local out="$WORK/$name/$mode.$round" flag=()
      [[ $mode == cold ]] && flag=(--cold)
      local t0
      t0=$(now_ns)
      # shellcheck disable=SC2086
      "$BIN" eval --device "$device" ${EVAL_ARGS} "${PYARGS[@]}" "${flag[@]}" --json \
        --reference "$reference" --candidate "$candidates" --output-dir "$out" > /dev/null || true
      wall_ms[$mode]=$(( wall_ms[$mode] + $(ms_since "$t0") ))
    done
    verdicts=$(( verdicts + n ))
    # The same verdict both ways, candidate by candidate.
    local cmp
    cmp=$(python3 - "$WORK/$name/warm.$round" "$WORK/$name/cold.$round" <<'EOF'
import json, os, sys
def rows(d):
    return {os.path.basename(r["candidate"]): (r["status"], r["passed"], sorted(set(r["findings"])), r.get("failure"))
            for r in json.load(open(os.path.join(d, "evals.json")))}
warm, cold = rows(sys.argv[1]), rows(sys.argv[2])
reused = 0
for name in warm:
    stem = name[:-3]
    try:
        e = json.load(open(os.path.join(sys.argv[1], stem, "evidence.json")))
        reused += bool((e.get("reference_timing") or {}).get("reused_blocks"))
    except OSError:
        pass
differ = [f"{n}: warm {warm[n]} cold {cold.get(n)}" for n in sorted(warm) if warm[n] != cold.get(n)]
print(len(warm) - len(differ), reused)
for d in differ:
    print(d)
EOF
)
    same=$(( same + $(head -1 <<<"$cmp" | cut -d' ' -f1) ))
    reused=$(( reused + $(head -1 <<<"$cmp" | cut -d' ' -f2) ))
    while IFS= read -r line; do [[ -n $line ]] && differ+=("$name round $round: $line"); done < <(tail -n +2 <<<"$cmp")
  done
}

if [[ $MODE == cpu ]]; then
  PY=${PY:-$( [[ -x target/tmp/test-venv/bin/python ]] && echo "$PWD/target/tmp/test-venv/bin/python" || echo python3 )}
  "$PY" -c 'import numpy' 2>/dev/null || { echo "SKIPPED bench-eval-throughput (cpu): $PY cannot import numpy" >&2; exit 0; }
  PYARGS=(--python "$PY")
  EVAL_ARGS=${EVAL_ARGS:---trials 3 --blocks 5 --repeat 20 --warmup 2 --timeout 10}
  COPIES=${COPIES:-3}
  mkdir -p "$WORK/candidates"
  for copy in $(seq "$COPIES"); do
    for c in honest numpy_rewrite same_as_reference slow wrong_shape raises segfaults inplace \
             hostile_count_calls hostile_warm; do
      cp "tests/programs/eval/$c.py" "$WORK/candidates/${c}_$copy.py"
    done
  done
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg), cores: $(nproc), mode cpu, $(ls "$WORK/candidates" | wc -l) candidates x $ROUNDS rounds a side, $EVAL_ARGS"
  judge numpy tests/programs/eval/reference.py "$WORK/candidates" cpu
elif [[ $MODE == gpu ]]; then
  [[ -d "${KB:-}" ]] || { echo "MODE=gpu needs KB=KERNELBENCH_DIR (src/kernelbench, KernelBench/level1 and level2)" >&2; exit 2; }
  exec python3 scripts/bench_eval_throughput_gpu.py "$BIN" "$KB" "${OUT:-$WORK/gpu}"
else
  echo "MODE must be cpu or gpu" >&2
  exit 2
fi

per_hour() { awk -v n="$verdicts" -v ms="$1" 'BEGIN {printf "%.0f", n * 3600000 / ms}'; }
per_verdict() { awk -v n="$verdicts" -v ms="$1" 'BEGIN {printf "%.3f", ms / 1000 / n}'; }
echo
printf '%-6s %10s %12s %14s\n' side "wall s" "verdicts/h" "s per verdict"
for mode in warm cold; do
  printf '%-6s %10.1f %12s %14s\n' "$mode" "$(awk -v ms="${wall_ms[$mode]}" 'BEGIN {print ms / 1000}')" \
    "$(per_hour "${wall_ms[$mode]}")" "$(per_verdict "${wall_ms[$mode]}")"
done
echo "throughput warm / cold: $(awk -v w="${wall_ms[warm]}" -v c="${wall_ms[cold]}" 'BEGIN {printf "%.2f", c / w}')x ($verdicts verdicts a side)"
echo "reference blocks reused (warm): $reused of $verdicts candidates (the rest: untimed, or the drift probe asked for a re-measure)"
echo "same verdict warm and cold: $same of $verdicts"
for d in "${differ[@]}"; do echo "  differs: $d"; done
