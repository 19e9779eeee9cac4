#!/usr/bin/env bash
# Container-target benchmarks against the local Docker engine, side by side in one run:
#   1. a container job (`polyprof run --container IMG -- CMD`) vs `docker run --rm IMG CMD`
#      with the same isolation flags (--init --network none), interleaved; ratio of medians
#   2. 20 container jobs at once: all complete, none leaked, total vs the same 20 in sequence
#   3. end marker -> return (the command exits 50 ms after the marker; and a hang after it)
#      and timeout -> return, as scripts/bench-runner.sh measures them for local processes
# Environment: RUNS (default 10), JOBS (default 20), BIN (default target/release/polyprof,
# built if missing), IMAGE (default polyprof-test-busybox:1, built by build-test-image.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-10}
JOBS=${JOBS:-20}
IMAGE=${IMAGE:-polyprof-test-busybox:1}
if [[ -z "${BIN:-}" ]]; then
  echo "building release binary..."
  cargo build --release --quiet
  BIN=$PWD/target/release/polyprof
fi
scripts/build-test-image.sh "$IMAGE" > /dev/null
WORK=$(mktemp -d "${TMPDIR:-/tmp}/polyprof-bench-container.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

now_ns() { date +%s%N; }
json_num() { grep -o "\"$1\": *[-0-9.e]*" "$2" | head -1 | sed 's/.*: *//'; }
stats() { sort -n | awk '{a[NR]=$1} END {printf "median %.1f  min %.1f  max %.1f", a[int((NR+1)/2)], a[1], a[NR]}'; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
ms_since() { echo $(( ($(now_ns) - $1) / 1000000 )); }
leftovers() { docker ps -aq --filter "label=polyprof.job" | wc -l; }

echo "engine: $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})'), load: $(cut -d' ' -f1-3 /proc/loadavg), cores: $(nproc)"
before=$(leftovers)

echo
echo "== 1. container job vs docker run --rm, \`echo hi\` =="
: > "$WORK/docker"; : > "$WORK/polyprof"
for i in $(seq "$RUNS"); do
  t0=$(now_ns); docker run --rm --init --network none "$IMAGE" echo hi > /dev/null; ms_since "$t0" >> "$WORK/docker"
  t0=$(now_ns); "$BIN" run -q --container "$IMAGE" --output-dir "$WORK/ovh.$i" -- echo hi > /dev/null; ms_since "$t0" >> "$WORK/polyprof"
done
d=$(median < "$WORK/docker"); p=$(median < "$WORK/polyprof")
echo "  docker run --rm:        $(stats < "$WORK/docker") ms"
echo "  polyprof --container:   $(stats < "$WORK/polyprof") ms"
echo "  ratio of medians (polyprof / docker run): $(ratio "$p" "$d")"

echo
echo "== 2. $JOBS container jobs at once vs in sequence (each: echo, sleep 0.2, write a file) =="
JOB_CMD=(sh -c 'echo start; sleep 0.2; echo done > done.txt')
t0=$(now_ns)
for i in $(seq "$JOBS"); do
  "$BIN" run -q --container "$IMAGE" --output-dir "$WORK/seq.$i" -- "${JOB_CMD[@]}" > /dev/null
done
seq_ms=$(ms_since "$t0")
t0=$(now_ns)
pids=()
for i in $(seq "$JOBS"); do
  "$BIN" run -q --container "$IMAGE" --output-dir "$WORK/par.$i" -- "${JOB_CMD[@]}" > /dev/null &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
par_ms=$(ms_since "$t0")
done_files=$(ls "$WORK"/par.*/done.txt 2>/dev/null | wc -l)
echo "  sequential: $seq_ms ms   concurrent: $par_ms ms   speed-up: $(ratio "$seq_ms" "$par_ms")x"
echo "  concurrent jobs failed: $failed of $JOBS; output files collected: $done_files of $JOBS"
echo "  polyprof containers left on the engine: $(( $(leftovers) - before ))"

echo
echo "== 3. marker -> return and timeout -> return =="
MARKER='=== 1 passed in 0.01s ==='
: > "$WORK/lat"; : > "$WORK/lat_in"; : > "$WORK/hang"; : > "$WORK/to"; : > "$WORK/to_in"
GRACE=1
for i in $(seq "$RUNS"); do
  "$BIN" run --json -q --container "$IMAGE" --end-marker pytest --output-dir "$WORK/lat.$i" -- \
    sh -c "echo '$MARKER'; sleep 0.05" > "$WORK/lat.json"
  awk -v m="$(json_num marker_s "$WORK/lat.json")" -v n="$(json_num end_s "$WORK/lat.json")" \
    'BEGIN {print (n - m - 0.05) * 1000}' >> "$WORK/lat"
  awk -v e="$(json_num exit_s "$WORK/lat.json")" -v n="$(json_num end_s "$WORK/lat.json")" \
    'BEGIN {print (n - e) * 1000}' >> "$WORK/lat_in"
  "$BIN" run --json -q --container "$IMAGE" --end-marker pytest --marker-grace $GRACE --kill-grace 2 \
    --output-dir "$WORK/hang.$i" -- sh -c "echo '$MARKER'; exec sleep 100" > "$WORK/hang.json" || true
  awk -v m="$(json_num marker_s "$WORK/hang.json")" -v e="$(json_num exit_s "$WORK/hang.json")" -v g=$GRACE \
    'BEGIN {print (e - m - g) * 1000}' >> "$WORK/hang"
  "$BIN" run --json -q --container "$IMAGE" --timeout 1 --kill-grace 2 --output-dir "$WORK/to.$i" -- \
    sleep 100 > "$WORK/to.json" || true
  awk -v e="$(json_num exit_s "$WORK/to.json")" 'BEGIN {print (e - 1) * 1000}' >> "$WORK/to"
  awk -v n="$(json_num end_s "$WORK/to.json")" 'BEGIN {print (n - 1) * 1000}' >> "$WORK/to_in"
done
echo "command exits 50 ms after the marker; ms from the marker (minus those 50 ms) to polyprof's return:"
echo "  $(stats < "$WORK/lat")"
echo "  of which container exit -> return (output closed, inspect, remove): $(stats < "$WORK/lat_in")"
echo "command hangs after the marker (sleep is PID 2 under init, SIGTERM ends it), grace ${GRACE} s; ms past the grace until the container stopped:"
echo "  $(stats < "$WORK/hang")"
echo "timeout 1 s on \`sleep 100\`; ms past the timeout until the container stopped / polyprof returned:"
echo "  stopped:  $(stats < "$WORK/to")"
echo "  returned: $(stats < "$WORK/to_in")"
echo
echo "polyprof containers left on the engine after all runs: $(( $(leftovers) - before ))"
