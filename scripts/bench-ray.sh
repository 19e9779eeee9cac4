#!/usr/bin/env bash
# JOBS short jobs (`sleep 0.1`, default 200) through `polyprof batch --ray` on the loopback
# cluster (scripts/ray-local.sh: two workers with two declared GPUs each, so four jobs at a
# time) against the same job file on the local pool with four CPU slots (`--devices cpu
# --jobs 4`), measured side by side. Prints wall times, per-job costs and the ratio; each side
# runs ROUNDS times (default 1), the median is used.
#   scripts/bench-ray.sh [JOBS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${1:-200}"
rounds="${2:-1}"
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
ray_t=() local_t=()
for r in $(seq 1 "$rounds"); do
    t0=$(now)
    "$bin" batch "$work/jobs.jsonl" --output-dir "$work/r$r" --ray "$address" --quiet >/dev/null
    t1=$(now)
    "$bin" batch "$work/jobs.jsonl" --output-dir "$work/l$r" --devices cpu --jobs 4 --quiet >/dev/null
    t2=$(now)
    ray_t+=("$(echo "$t1 - $t0" | bc)")
    local_t+=("$(echo "$t2 - $t1" | bc)")
    ok=$(grep -c '"state": "succeeded"' "$work/r$r/batch.json" || true)
    [[ "$ok" == "$jobs" ]] || { echo "bench-ray: only $ok of $jobs Ray jobs succeeded" >&2; exit 1; }
done
s=$(printf '%s\n' "${ray_t[@]}" | median)
l=$(printf '%s\n' "${local_t[@]}" | median)
ideal=$(echo "$jobs * 0.1 / 4" | bc -l)
printf 'ray    (4 GPUs, %s jobs): %.1f s  (rounds: %s)\n' "$jobs" "$s" "${ray_t[*]}"
printf 'local  (4 slots, %s jobs): %.1f s  (rounds: %s)\n' "$jobs" "$l" "${local_t[*]}"
# Four run at a time, so each job's share of the wall time over the ideal is (t - ideal) * 4 / jobs.
printf 'ratio ray/local: %.1fx; over the ideal %.1f s: ray %.0f ms, local %.0f ms per job and slot\n' \
    "$(echo "$s / $l" | bc -l)" "$ideal" "$(echo "($s - $ideal) * 4000 / $jobs" | bc -l)" \
    "$(echo "($l - $ideal) * 4000 / $jobs" | bc -l)"
