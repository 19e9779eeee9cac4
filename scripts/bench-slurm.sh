#!/usr/bin/env bash
# 20 tiny jobs (`sleep 0.1`) through `polyprof batch --slurm` on the single-host cluster
# (scripts/slurm-local.sh: 2 CPUs, 2 fake GPUs, one task per GPU), one array task per job and
# `--slurm-mode shares --tasks 2` (one task per GPU running its share), against the same job
# file through the local pool with two slots (`--devices cpu --jobs 2`), measured side by side.
# Prints wall times and the ratio; each side runs ROUNDS times (default 3), the median is used.
#   scripts/bench-slurm.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
cargo build -q
bin="$PWD/target/debug/polyprof"
work="$(mktemp -d)"
export POLYPROF_SLURM_PORT="${POLYPROF_SLURM_PORT:-6837}"
cleanup() { scripts/slurm-local.sh down "$work/cluster" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
scripts/slurm-local.sh up "$work/cluster" >/dev/null
export SLURM_CONF="$work/cluster/etc/slurm.conf"
for i in $(seq -w 0 19); do
    echo "{\"id\": \"b$i\", \"target\": [\"sleep\", \"0.1\"]}"
done >"$work/jobs.jsonl"

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
slurm_t=() shares_t=() local_t=()
for r in $(seq 1 "$rounds"); do
    t0=$(now)
    "$bin" batch "$work/jobs.jsonl" --output-dir "$work/s$r" --slurm --gpus-per-task 1 --quiet >/dev/null
    t1=$(now)
    "$bin" batch "$work/jobs.jsonl" --output-dir "$work/h$r" --slurm --slurm-mode shares --tasks 2 \
        --gpus-per-task 1 --quiet >/dev/null
    th=$(now)
    "$bin" batch "$work/jobs.jsonl" --output-dir "$work/l$r" --devices cpu --jobs 2 --quiet >/dev/null
    t2=$(now)
    slurm_t+=("$(echo "$t1 - $t0" | bc)")
    shares_t+=("$(echo "$th - $t1" | bc)")
    local_t+=("$(echo "$t2 - $th" | bc)")
    for d in s h; do
        ok=$(grep -c '"state": "succeeded"' "$work/$d$r/batch.json" || true)
        [[ "$ok" == 20 ]] || { echo "bench-slurm: only $ok of 20 jobs succeeded ($d)" >&2; exit 1; }
    done
done
s=$(printf '%s\n' "${slurm_t[@]}" | median)
h=$(printf '%s\n' "${shares_t[@]}" | median)
l=$(printf '%s\n' "${local_t[@]}" | median)
ideal=$(echo "20 * 0.1 / 2" | bc -l)
printf 'slurm  (2 GPUs, 20 tasks): %s s  (rounds: %s)\n' "$s" "${slurm_t[*]}"
printf 'shares (2 GPUs, 2 tasks):  %s s  (rounds: %s)\n' "$h" "${shares_t[*]}"
printf 'local  (2 slots, 20 jobs): %s s  (rounds: %s)\n' "$l" "${local_t[*]}"
# Two tasks run at a time, so each job's share of the wall time over the ideal is (s - ideal) / 10.
printf 'ratio slurm/local: %.2fx; over the ideal %.1f s: slurm %.0f ms, local %.0f ms per job and slot\n' \
    "$(echo "$s / $l" | bc -l)" "$ideal" "$(echo "($s - $ideal) * 100" | bc -l)" "$(echo "($l - $ideal) * 100" | bc -l)"
printf 'ratio shares/local: %.2fx; over the ideal: shares %.0f ms per job and slot\n' \
    "$(echo "$h / $l" | bc -l)" "$(echo "($h - $ideal) * 100" | bc -l)"
