#!/usr/bin/env bash
# JOBS short jobs (`sleep 0.1`, default 200) through `polyprof batch --ray` on the loopback
# cluster (scripts/ray-local.sh: two workers with two declared GPUs each, so four jobs at a
# time) against the same job file on the local pool with four CPU slots (`--devices cpu
# --jobs 4`), measured side by side. Prints wall times, per-job costs and the ratio; each side
# runs ROUNDS times (default 1, interleaved), the median is used.
#   scripts/bench-ray.sh [JOBS] [ROUNDS]      (JOBS=0: the evals alone)
# MODES (default `actors`) lists the --ray-mode values to measure: `MODES="actors jobs"` adds
# the one-Ray-job-per-job mode (seconds per job: about 8 minutes for 200 jobs here).
# Then EVALS short CPU evals (default 200; 0: none): the candidates of tests/programs/eval's
# numpy problem in turn (honest, slow, incorrect, raising, ...; 2 trials, 2 timing blocks)
# through the actors (warm evaluators in each actor) against the local pool with the same four
# slots (warm), side by side, with the ratio; and the local pool warm against `--cold-evals`
# (a trusted worker per eval), as evals per second. The workers' Python is $POLYPROF_TEST_PYTHON
# (default python3) and needs numpy.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${1:-200}"
evals="${EVALS:-200}"
python="${POLYPROF_TEST_PYTHON:-python3}"
rounds="${2:-1}"
modes="${MODES:-actors}"
cargo build -q
bin="${CARGO_TARGET_DIR:-$PWD/target}/debug/polyprof"
work="$(mktemp -d)"
export POLYPROF_RAY_PORT="${POLYPROF_RAY_PORT:-8390}"
cleanup() { scripts/ray-local.sh down "$work/cluster" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
address="$(scripts/ray-local.sh up "$work/cluster" | tail -n 1)"
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
if (( jobs > 0 )); then
for i in $(seq -w 0 $((jobs - 1))); do
    echo "{\"id\": \"b$i\", \"target\": [\"sleep\", \"0.1\"]}"
done >"$work/jobs.jsonl"

declare -A times
local_t=()
for r in $(seq 1 "$rounds"); do
    for mode in $modes; do
        t0=$(now)
        "$bin" batch "$work/jobs.jsonl" --output-dir "$work/$mode$r" --ray "$address" \
            --ray-mode "$mode" --quiet >/dev/null
        t1=$(now)
        times[$mode]+="$(echo "$t1 - $t0" | bc) "
        ok=$(grep -c '"state": "succeeded"' "$work/$mode$r/batch.json" || true)
        [[ "$ok" == "$jobs" ]] || { echo "bench-ray: only $ok of $jobs jobs succeeded ($mode)" >&2; exit 1; }
    done
    t1=$(now)
    "$bin" batch "$work/jobs.jsonl" --output-dir "$work/l$r" --devices cpu --jobs 4 --quiet >/dev/null
    t2=$(now)
    local_t+=("$(echo "$t2 - $t1" | bc)")
done
l=$(printf '%s\n' "${local_t[@]}" | median)
ideal=$(echo "$jobs * 0.1 / 4" | bc -l)
# Four run at a time, so each job's share of the wall time over the ideal is (t - ideal) * 4 / jobs.
per_job() { echo "($1 - $ideal) * 4000 / $jobs" | bc -l; }
for mode in $modes; do
    # shellcheck disable=SC2086
    s=$(printf '%s\n' ${times[$mode]} | median)
    printf 'ray %-6s (4 GPUs, %s jobs): %6.1f s  (rounds: %s); %.0f ms per job and slot over the ideal %.1f s; ratio ray/local %.2fx\n' \
        "$mode" "$jobs" "$s" "${times[$mode]% }" "$(per_job "$s")" "$ideal" "$(echo "$s / $l" | bc -l)"
done
printf 'local         (4 slots, %s jobs): %6.1f s  (rounds: %s); %.0f ms per job and slot over the ideal\n' \
    "$jobs" "$l" "${local_t[*]}" "$(per_job "$l")"
fi

if [[ "$evals" == 0 ]]; then
    exit 0
fi
if ! "$python" -c 'import numpy' 2>/dev/null; then
    echo "bench-ray: $python cannot import numpy; evals not measured (set POLYPROF_TEST_PYTHON)" >&2
    exit 1
fi
problem="$PWD/tests/programs/eval"
python_abs="$(command -v "$python")"
names=(honest slow wrong_shape raises inplace numpy_rewrite same_as_reference)
for i in $(seq -w 0 $((evals - 1))); do
    name="${names[$((10#$i % ${#names[@]}))]}"
    printf '{"id": "e%s", "timeout_s": 60, "eval": {"reference": "%s/reference.py", "candidate": "%s/%s.py", "device": "cpu", "trials": 2, "timing_blocks": 2, "repeat": 3, "python": "%s"}}\n' \
        "$i" "$problem" "$problem" "$name" "$python_abs"
done >"$work/evals.jsonl"
judged() {
    python3 -c 'import json, sys; print(sum(1 for e in json.load(open(sys.argv[1]))["jobs"].values() if e.get("eval")))' "$1/batch.json"
}
declare -A eval_t
for r in $(seq 1 "$rounds"); do
    for side in ray local cold; do
        out="$work/eval-$side$r"
        case "$side" in
            ray) args=(--ray "$address") ;;
            local) args=(--devices cpu --jobs 4) ;;
            cold) args=(--devices cpu --jobs 4 --cold-evals) ;;
        esac
        t0=$(now)
        # Some candidates fail by design: exit 1 is a judged batch.
        "$bin" batch "$work/evals.jsonl" --output-dir "$out" "${args[@]}" --quiet >/dev/null || true
        t1=$(now)
        eval_t[$side]+="$(echo "$t1 - $t0" | bc) "
        echo "bench-ray: evals $side round $r: $(echo "$t1 - $t0" | bc) s" >&2
        n=$(judged "$out")
        [[ "$n" == "$evals" ]] || { echo "bench-ray: only $n of $evals evals judged ($side)" >&2; exit 1; }
    done
done
# shellcheck disable=SC2086
{
    er=$(printf '%s\n' ${eval_t[ray]} | median)
    el=$(printf '%s\n' ${eval_t[local]} | median)
    ec=$(printf '%s\n' ${eval_t[cold]} | median)
}
printf 'evals ray actors (4 actors, warm, %s evals): %6.1f s (rounds: %s), %.2f evals/s; ratio ray/local %.2fx (goal <= 1.5x)\n' \
    "$evals" "$er" "${eval_t[ray]% }" "$(echo "$evals / $er" | bc -l)" "$(echo "$er / $el" | bc -l)"
printf 'evals local pool (4 slots, warm):            %6.1f s (rounds: %s), %.2f evals/s\n' \
    "$el" "${eval_t[local]% }" "$(echo "$evals / $el" | bc -l)"
printf 'evals local pool (4 slots, --cold-evals):    %6.1f s (rounds: %s), %.2f evals/s; warm/cold throughput %.2fx\n' \
    "$ec" "${eval_t[cold]% }" "$(echo "$evals / $ec" | bc -l)" "$(echo "$ec / $el" | bc -l)"
