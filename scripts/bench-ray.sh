#!/usr/bin/env bash
# JOBS short jobs (`sleep 0.1`, default 200) through `polyprof batch --ray` on the loopback
# cluster (scripts/ray-local.sh: two workers with two declared GPUs each, so four jobs at a
# time) against the same job file on the local pool with four CPU slots (`--devices cpu
# --jobs 4`), measured side by side. Prints wall times, per-job costs and the ratio; each side
# runs ROUNDS times (default 1, interleaved), the median is used.
#   scripts/bench-ray.sh [JOBS] [ROUNDS]
# MODES (default `actors`) lists the --ray-mode values to measure: `MODES="actors jobs"` adds
# the one-Ray-job-per-job mode (seconds per job: about 8 minutes for 200 jobs here).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${1:-200}"
rounds="${2:-1}"
modes="${MODES:-actors}"
cargo build -q
bin="${CARGO_TARGET_DIR:-$PWD/target}/debug/polyprof"
work="$(mktemp -d)"
export POLYPROF_RAY_PORT="${POLYPROF_RAY_PORT:-8390}"
cleanup() { scripts/ray-local.sh down "$work/cluster" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
address="$(scripts/ray-local.sh up "$work/cluster" | tail -n 1)"
for i in $(seq -w 0 $((jobs - 1))); do
    echo "{\"id\": \"b$i\", \"target\": [\"sleep\", \"0.1\"]}"
done >"$work/jobs.jsonl"

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
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
