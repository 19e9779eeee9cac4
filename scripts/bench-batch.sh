#!/usr/bin/env bash
# Batch overhead, side by side in one run: N `none` jobs of a 50 ms command (`sleep 0.05`)
#   1. the bare command N times back to back (what `sleep 0.05` itself costs here)
#   2. `polyprof batch --jobs 2` over them: wall time, its ratio to the ideal N x 50 ms / 2,
#      and the overhead per job (slot time per job minus the 50 ms)
#   3. the same N commands through plain `polyprof run`, back to back (one slot), and two at
#      a time (`xargs -P 2`), with the same per-job overhead figures
# Environment: N (default 200), BIN (default target/release/polyprof, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-200}
if [[ -z "${BIN:-}" ]]; then
  echo "building release binary..."
  cargo build --release --quiet
  BIN=$PWD/target/release/polyprof
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/polyprof-bench-batch.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

now_ns() { date +%s%N; }
ms_since() { echo $(( ($(now_ns) - $1) / 1000000 )); }
# per-job overhead in ms: wall ms x slots / N - 50
overhead() { awk -v w="$1" -v s="$2" -v n="$N" 'BEGIN {printf "%.1f", w * s / n - 50}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }

ideal_ms=$(( N * 50 / 2 ))
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), cores: $(nproc), jobs: $N x sleep 0.05"

for i in $(seq "$N"); do
  printf '{"id": "j%03d", "target": ["sleep", "0.05"]}\n' "$i"
done > "$WORK/jobs.jsonl"

echo
echo "== 1. bare command, back to back =="
t0=$(now_ns)
for i in $(seq "$N"); do sleep 0.05; done
bare_ms=$(ms_since "$t0")
echo "  wall ${bare_ms} ms; per job $(overhead "$bare_ms" 1) ms over 50 ms"

echo
echo "== 2. polyprof batch --jobs 2 =="
t0=$(now_ns)
"$BIN" batch "$WORK/jobs.jsonl" --jobs 2 --devices cpu -q --output-dir "$WORK/batch" > /dev/null
batch_ms=$(ms_since "$t0")
ok=$(grep -c '"state": "succeeded"' "$WORK/batch/batch.json" || true)
echo "  wall ${batch_ms} ms ($ok of $N succeeded); ideal ${ideal_ms} ms; ratio $(ratio "$batch_ms" "$ideal_ms")"
echo "  overhead per job: $(overhead "$batch_ms" 2) ms (slot time per job minus 50 ms)"

echo
echo "== 3. plain polyprof run =="
t0=$(now_ns)
for i in $(seq "$N"); do
  "$BIN" run -q --output-dir "$WORK/seq/$i" -- sleep 0.05 > /dev/null
done
seq_ms=$(ms_since "$t0")
echo "  back to back: wall ${seq_ms} ms; overhead per job $(overhead "$seq_ms" 1) ms"
t0=$(now_ns)
seq "$N" | xargs -P 2 -I{} "$BIN" run -q --output-dir "$WORK/par/{}" -- sleep 0.05 > /dev/null
par_ms=$(ms_since "$t0")
echo "  two at a time (xargs -P 2): wall ${par_ms} ms; ratio to ideal $(ratio "$par_ms" "$ideal_ms"); overhead per job $(overhead "$par_ms" 2) ms"

echo
echo "batch / (xargs -P 2 of polyprof run): $(ratio "$batch_ms" "$par_ms")"
