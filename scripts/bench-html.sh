#!/usr/bin/env bash
# HTML report benchmark: file size and load time in headless Chromium for
#   1. the bundled real H200 capture (tests/fixtures/runs/h200-baseline)
#   2. a 10,000-launch run: the capture's raw-page CSV rows repeated (ncu_parse_bench gen, as
#      scripts/bench-ncu-parse.sh makes it), parsed by `polyprof parse`
#   3. a diff of two real runs: the two raw-page captures of tests/fixtures/ncu-h200 parsed
#   4. a batch of 20 CPU jobs (3 of them failing) and its page
#   5. the real FP8 capture (tests/fixtures/ncu-h200-fp8): one roofline chart per precision
#   6. DISTINCT (default 100000) launches of as many distinct kernel names (the capture's
#      records renamed): the page is linear in distinct names (issue 43); its render time and
#      size, and polyprof's own time to write it, are printed
# Load time: the page's own figure (data-render-ms on <body>: performance.now() once the
# script has drawn everything and forced a layout) and the wall time of `chromium --dump-dom`
# (browser start included), each the median of REPEATS (default 3) loads.
# The diff shows only B's points: raw_page.stdout (A) was captured without the FLOP counters.
# Targets (issue 26): under 2 s to render, under 5 MB.
# Environment: PROFILE (release, default, or debug), REPEATS, LAUNCHES (10000), DISTINCT (100000).
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${PROFILE:-release}"
repeats="${REPEATS:-3}"
launches="${LAUNCHES:-10000}"
distinct="${DISTINCT:-100000}"
flag=$([[ "$profile" == release ]] && echo --release || true)
cargo build --quiet $flag --bin polyprof --example ncu_parse_bench
target="${CARGO_TARGET_DIR:-target}/$profile"
bin="$target/polyprof"
chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n "$chromium" ]] || { echo "bench-html: chromium is needed (apt-get install chromium)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# `render_ms wall_ms` of one load.
load() {
  local t0 t1 dom
  t0=$(date +%s%N)
  dom=$("$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$work/profile" --dump-dom "file://$1" 2>/dev/null)
  t1=$(date +%s%N)
  local render
  render=$(grep -o 'data-render-ms="[0-9.]*"' <<<"$dom" | head -1 | grep -o '[0-9.]*' || echo nan)
  echo "$render $(( (t1 - t0) / 1000000 ))"
}

report() {
  local label=$1 page=$2 loads render wall points charts
  loads=$(for _ in $(seq "$repeats"); do load "$page"; done)
  render=$(sort -n -k1,1 <<<"$loads" | sed -n "$(((repeats + 1) / 2))p" | cut -d' ' -f1)
  wall=$(sort -n -k2,2 <<<"$loads" | sed -n "$(((repeats + 1) / 2))p" | cut -d' ' -f2)
  points=$(grep -o '<circle class="point"' "$page" | wc -l || true)
  charts=$(grep -o 'class="roofline-chart"' "$page" | wc -l || true)
  printf '%-34s %10s bytes  render %8s ms  chromium wall %6s ms  %s charts, %s points\n' \
    "$label" "$(stat -c %s "$page")" "$render" "$wall" "$charts" "$points"
}

echo "chromium: $("$chromium" --version 2>/dev/null | head -1); cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg)"

"$bin" report tests/fixtures/runs/h200-baseline --format html -o "$work/h200.html" 2>/dev/null
report "H200 capture (4 launches)" "$work/h200.html"

"$target/examples/ncu_parse_bench" gen tests/fixtures/ncu-h200/raw_page_selected_metrics.stdout \
  "$work/large.csv" "$launches" >/dev/null
"$bin" parse --profiler ncu "$work/large.csv" --run-dir "$work/large" >/dev/null 2>&1
"$bin" report "$work/large" --format html -o "$work/large.html" 2>/dev/null
report "$launches launches" "$work/large.html"

"$bin" parse --profiler ncu tests/fixtures/ncu-h200/raw_page.stdout --run-dir "$work/a" >/dev/null 2>&1
"$bin" parse --profiler ncu tests/fixtures/ncu-h200/raw_page_selected_metrics.stdout \
  --run-dir "$work/b" >/dev/null 2>&1
"$bin" diff "$work/a" "$work/b" --format html -o "$work/diff.html" 2>/dev/null || true
report "diff of two real H200 runs" "$work/diff.html"

for i in $(seq 20); do
  script=$([[ $((i % 7)) == 0 ]] && echo "exit 3" || echo "true")
  printf '{"id": "j%02d", "target": ["sh", "-c", "%s"]}\n' "$i" "$script"
done >"$work/jobs.jsonl"
"$bin" batch "$work/jobs.jsonl" --devices cpu --jobs 2 -q --output-dir "$work/batch" >/dev/null || true
"$bin" report "$work/batch" --format html -o "$work/batch/index.html" 2>/dev/null
report "batch of 20 jobs" "$work/batch/index.html"

"$bin" parse --profiler ncu tests/fixtures/ncu-h200-fp8/fp8_clock_none.csv --run-dir "$work/fp8" \
  >/dev/null 2>&1
"$bin" report "$work/fp8" --format html -o "$work/fp8.html" 2>/dev/null
report "FP8 capture (5 launches)" "$work/fp8.html"

mkdir -p "$work/distinct"
python3 - "$distinct" "$work/distinct/run.json" <<'PY'
import json, sys
n, out = int(sys.argv[1]), sys.argv[2]
doc = json.load(open("tests/fixtures/runs/h200-baseline/run.json"))
kernels = doc["kernels"]
many = []
for i in range(n):
    k = dict(kernels[i % len(kernels)])
    k["launch_id"] = i
    k["short_name"] = f"kernel_{i}"
    k["name"] = f"kernel_{i}(float *, int)"
    many.append(k)
doc["kernels"] = many
json.dump(doc, open(out, "w"))
PY
t0=$(date +%s%N)
"$bin" report "$work/distinct" --format html -o "$work/distinct.html" 2>/dev/null
t1=$(date +%s%N)
"$bin" report "$work/distinct" --format svg -o "$work/distinct.svg" 2>/dev/null
t2=$(date +%s%N)
echo "$distinct distinct names: polyprof wrote the page in $(( (t1 - t0) / 1000000 )) ms, the SVG ($(stat -c %s "$work/distinct.svg") bytes) in $(( (t2 - t1) / 1000000 )) ms"
report "$distinct distinct kernel names" "$work/distinct.html"
