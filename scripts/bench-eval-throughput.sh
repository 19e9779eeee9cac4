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
# BUILDS=1 (default, MODE=cpu): then the build stage's overlap (docs/eval-harness.md, "The build
#   stage"): BUILD_COPIES (default 6) slow-to-build candidates (tests/programs/eval/
#   build_c_library.py: a C library built with `cc` at import, after BUILD_DELAY seconds, default
#   1) judged warm with `--build-jobs 0` (each built right before its own turn) and with
#   `--build-jobs BUILD_JOBS` (default: nproc; builds ahead while earlier candidates are judged),
#   alternating ROUNDS times; prints both walls and their ratio.
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

# The build stage's overlap (CPU): the same slow-to-build candidates, builds right before each
# turn against builds ahead of the turns.
if [[ $MODE == cpu && ${BUILDS:-1} == 1 ]]; then
  command -v cc >/dev/null || { echo "SKIPPED build overlap: no cc on PATH" >&2; exit 0; }
  BUILD_COPIES=${BUILD_COPIES:-6}
  BUILD_DELAY=${BUILD_DELAY:-1}
  BUILD_JOBS=${BUILD_JOBS:-$(nproc)}
  mkdir -p "$WORK/slow-builds"
  for copy in $(seq "$BUILD_COPIES"); do
    sed "s/^BUILD_DELAY_S = 0.0$/BUILD_DELAY_S = $BUILD_DELAY/" tests/programs/eval/build_c_library.py \
      > "$WORK/slow-builds/build_$copy.py"
  done
  grep -q "^BUILD_DELAY_S = $BUILD_DELAY$" "$WORK/slow-builds/build_1.py" || { echo "the build delay was not set" >&2; exit 2; }
  declare -A build_ms=([before]=0 [ahead]=0)
  for round in $(seq "$ROUNDS"); do
    order=(before ahead)
    (( round % 2 == 0 )) && order=(ahead before)
    for mode in "${order[@]}"; do
      jobs=0
      [[ $mode == ahead ]] && jobs=$BUILD_JOBS
      t0=$(now_ns)
      # shellcheck disable=SC2086
      "$BIN" eval --device cpu ${EVAL_ARGS} "${PYARGS[@]}" --json --build-jobs "$jobs" \
        --reference tests/programs/eval/reference.py --candidate "$WORK/slow-builds" \
        --output-dir "$WORK/builds.$mode.$round" > /dev/null || true
      build_ms[$mode]=$(( build_ms[$mode] + $(ms_since "$t0") ))
    done
  done
  passed=$(python3 - "$WORK" "$ROUNDS" <<'EOF'
import json, os, sys
work, rounds = sys.argv[1], int(sys.argv[2])
rows = [r for mode in ("before", "ahead") for n in range(1, rounds + 1)
        for r in json.load(open(os.path.join(work, f"builds.{mode}.{n}", "evals.json")))]
print(sum(r["passed"] for r in rows), len(rows))
EOF
)
  echo
  echo "build overlap: $BUILD_COPIES candidates building ${BUILD_DELAY}s + cc each, $ROUNDS rounds a side, warm"
  printf '%-28s %10s\n' side "wall s"
  printf '%-28s %10.1f\n' "builds before each turn" "$(awk -v ms="${build_ms[before]}" 'BEGIN {print ms / 1000}')"
  printf '%-28s %10.1f\n' "builds ahead (--build-jobs $BUILD_JOBS)" "$(awk -v ms="${build_ms[ahead]}" 'BEGIN {print ms / 1000}')"
  echo "throughput ahead / before: $(awk -v a="${build_ms[ahead]}" -v b="${build_ms[before]}" 'BEGIN {printf "%.2f", b / a}')x (passed: ${passed% *} of ${passed#* })"
fi
